//! Issue 17, case 12: the `claude` preset as root. A stand-in `claude` on PATH behaves as
//! the real CLI does under uid 0 (it refuses `--dangerously-skip-permissions` and exits 1
//! at once). `doctor` names the problem and the fix; `round` prints the end of the round
//! log; `round_end` carries a short, redacted tail (docs/operations.md, "Agent
//! preconditions").

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

    let round = p.run_env(&["round"], &[("PATH", &path)]);
    round.assert_code(1);
    assert!(
        round
            .stderr
            .contains("cannot be used with root/sudo privileges"),
        "round said nothing useful: {round}"
    );
    assert!(!round.stderr.contains("0123456789abcdef"), "{round}");
    let events: Vec<Value> = std::fs::read_dir(p.home().join(".agent-runner/project/logs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|f| f.to_string_lossy().ends_with(".jsonl"))
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    let end = events
        .iter()
        .find(|e| e["event"] == "round_end")
        .unwrap_or_else(|| panic!("{events:?}"));
    let tail = end["log_tail"].as_str().unwrap();
    assert!(tail.contains("root/sudo privileges"), "{end}");
    assert!(!tail.contains("0123456789abcdef"), "not redacted: {end}");

    // The fix doctor names works.
    let config = std::fs::read_to_string(p.config_path()).unwrap();
    p.write_config_text(&config.replace("[agent.env]\n", "[agent.env]\nIS_SANDBOX = \"1\"\n"));
    let doctor = p.run_env(&["doctor", "--json"], &[("PATH", &path)]);
    assert!(
        !doctor.stdout.contains("cannot be used") && !doctor.stdout.contains("refuses"),
        "{doctor}"
    );
    p.run_env(&["round"], &[("PATH", &path)]).assert_code(0);
}
