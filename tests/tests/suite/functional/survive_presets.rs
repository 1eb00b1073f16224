//! Issue 17, case 12: the `claude` preset as root. A stand-in `claude` on PATH behaves as
//! the real CLI does under uid 0 (it refuses `--dangerously-skip-permissions` and exits 1
//! at once). `doctor` names the problem and the fix; `round` and `serve` refuse to start
//! with the same finding (exit 78) instead of failing every round (docs/operations.md,
//! "Agent preconditions").

use agent_runner_e2e::Project;
use serde_json::Value;

fn fake_claude(p: &Project) -> String {
    let claude = p.script(
        "bin/claude",
        "#!/bin/sh\n\
         for a in \"$@\"; do\n\
           if [ \"$a\" = --dangerously-skip-permissions ] && [ \"$(id -u)\" = 0 ] && [ \"$IS_SANDBOX\" != 1 ]; then\n\
             echo 'session token=sk-ant-0123456789abcdef' >&2\n\
             echo '--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons' >&2\n\
             exit 1\n\
           fi\n\
         done\n\
         echo 'claude: worked'\n",
    );
    let bin = claude.parent().unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn claude_as_root_is_named_by_doctor_and_round() {
    // SAFETY: geteuid(2) takes no arguments, cannot fail and touches no memory of ours.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "this machine runs the tests as root");
    let p = Project::without_prompt();
    let path = fake_claude(&p);
    p.run_env(&["init", "--preset", "claude"], &[("PATH", &path)])
        .assert_code(0);

    let doctor = p.run_env(&["doctor", "--json"], &[("PATH", &path)]);
    doctor.assert_code(1);
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "agent_preconditions" && c["ok"] == false)
        .unwrap_or_else(|| panic!("{doctor}"));
    assert!(
        check["reason"].as_str().unwrap().contains("root"),
        "{check}"
    );
    assert!(
        check["how_to_fix"].as_str().unwrap().contains("IS_SANDBOX"),
        "{check}"
    );

    // `round` and `serve` refuse to start with the same finding and fix (exit 78) rather
    // than fail every round (issue 25).
    for args in [&["round"][..], &["serve", "--max-rounds", "3"][..]] {
        let out = p.run_env(args, &[("PATH", &path)]);
        out.assert_code(78);
        assert!(
            out.stderr
                .contains("claude refuses --dangerously-skip-permissions when run as root")
                && out.stderr.contains("IS_SANDBOX = \"1\" in [agent.env]"),
            "{args:?}: {out}"
        );
    }
    assert!(
        !p.home().join(".agent-runner/project/logs/rounds").exists(),
        "a round ran"
    );

    // The fix doctor names works.
    let config = std::fs::read_to_string(p.config_path()).unwrap();
    p.write_config_text(&config.replace("[agent.env]\n", "[agent.env]\nIS_SANDBOX = \"1\"\n"));
    let doctor = p.run_env(&["doctor", "--json"], &[("PATH", &path)]);
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "agent_preconditions")
        .unwrap_or_else(|| panic!("{doctor}"));
    assert_eq!(check["ok"], true, "{doctor}");
    p.run_env(&["round"], &[("PATH", &path)]).assert_code(0);
}
