//! Every preset `init --preset` writes loads and passes `doctor` when its CLI is on PATH
//! (a fake executable of that name).

use agent_runner_e2e::Project;
use std::os::unix::fs::PermissionsExt;

#[test]
fn every_preset_passes_doctor_with_its_cli_on_path() {
    for preset in [
        "claude",
        "aider",
        "gemini",
        "codewhale",
        "kimi",
        "pi",
        "codex",
    ] {
        let p = Project::without_prompt();
        let bin = p.tmp_dir().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let exe = bin.join(preset);
        std::fs::write(&exe, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.run(&["init", "--preset", preset, "--no-commit"])
            .assert_code(0);
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        // Tests run as root, where claude refuses its bypass flag unless the environment
        // declares a sandbox (tests/tests/suite/functional/survive_presets.rs covers the refusal).
        let out = p.run_env(
            &["doctor", "--json"],
            &[("PATH", &path), ("IS_SANDBOX", "1")],
        );
        out.assert_code(0);
        let report: agent_runner_e2e::serde_json::Value =
            agent_runner_e2e::serde_json::from_str(&out.stdout).expect("doctor --json");
        for check in report["checks"].as_array().unwrap() {
            assert_eq!(check["ok"], true, "{preset}: {check}");
        }
        // The one preset never run against its real CLI says so (docs/agent-clis.md).
        let unverified = report["warnings"].as_array().unwrap().iter().any(|w| {
            w["name"] == "agent_version"
                && w["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains(&format!("the {preset} preset is unverified")))
        });
        assert_eq!(unverified, preset == "codewhale", "{preset}: {report}");
        // Without the CLI on PATH doctor says so.
        let out = p.run_env(&["doctor", "--json"], &[("PATH", "/usr/bin:/bin")]);
        assert_ne!(
            out.code(),
            0,
            "{preset}: doctor passed without its CLI: {out}"
        );
    }
}
