//! `install` / `uninstall`: the generated systemd unit (restart policy, exit 78 not
//! restarted, the control group killed, absolute binary and config paths), `--dry-run`
//! writing nothing, and on this machine (no systemd running) a written unit with a clear
//! message instead of a failure. Shell completions and the man page.

use agent_runner_e2e::{agent_runner_bin, Project};

const TEMPLATE: &str = "agent-runner@.service";
const DROP_IN: &str = "agent-runner@project.service.d/project.conf";

fn run(p: &Project, args: &[&str]) -> agent_runner_e2e::RunOutput {
    let mut cmd = p.command(args);
    cmd.env_remove("XDG_CONFIG_HOME");
    p.run_with(cmd)
}

fn assert_unit_text(p: &Project, text: &str) {
    let bin = agent_runner_bin().canonicalize().unwrap();
    for line in [
        "[Service]".to_owned(),
        "Restart=on-failure".to_owned(),
        "RestartPreventExitStatus=78".to_owned(),
        "KillMode=control-group".to_owned(),
        format!(
            "ExecStart=\"{}\" --config ${{AGENT_RUNNER_CONFIG}} serve",
            bin.display()
        ),
        format!(
            "Environment=\"AGENT_RUNNER_CONFIG={}\"",
            p.config_path().display()
        ),
        format!("WorkingDirectory=\"{}\"", p.dir().display()),
        "TimeoutStopSec=".to_owned(),
        "[Install]".to_owned(),
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&line)),
            "missing {line:?} in:\n{text}"
        );
    }
}

#[test]
fn user_unit_dry_run_install_and_uninstall_without_systemd() {
    let p = Project::new();
    p.write_config(&p.config().round_budget_s(600));
    let unit_dir = p.tmp_dir().join("home/.config/systemd/user");
    let unit_path = unit_dir.join(DROP_IN);

    let out = run(&p, &["install", "--dry-run"]);
    out.assert_code(0);
    assert_unit_text(&p, &out.stdout);
    assert!(
        out.stdout.contains("TimeoutStopSec=660"),
        "round budget + 60 s: {out}"
    );
    assert!(out.stdout.contains("WantedBy=default.target"), "{out}");
    assert!(
        out.stdout.contains(&unit_path.display().to_string()),
        "{out}"
    );
    assert!(!unit_path.exists(), "--dry-run wrote the unit");

    let out = run(&p, &["install"]);
    out.assert_code(0);
    assert!(
        !std::path::Path::new("/run/systemd/system").exists(),
        "this test expects no systemd"
    );
    assert!(out.stdout.contains("systemd is not running"), "{out}");
    let text = std::fs::read_to_string(unit_dir.join(TEMPLATE)).expect("template written")
        + &std::fs::read_to_string(&unit_path).expect("drop-in written");
    assert_unit_text(&p, &text);
    assert!(out.stdout.contains("agent-runner@project.service"), "{out}");

    // Another project with the same name cannot silently take over the instance.
    let other = Project::new();
    other.write_config(&other.config());
    let mut cmd = other.command(&["install"]);
    cmd.env("XDG_CONFIG_HOME", p.tmp_dir().join("home/.config"));
    let refused = other.run_with(cmd);
    refused.assert_code(1);
    assert!(
        refused.stderr.contains("project.conf already exists"),
        "{refused}"
    );
    assert!(std::fs::read_to_string(&unit_path)
        .unwrap()
        .contains(&p.config_path().display().to_string()));

    let out = run(&p, &["install"]);
    out.assert_code(1);
    assert!(out.stderr.contains("--force"), "{out}");
    run(&p, &["install", "--force"]).assert_code(0);

    let peek = run(&p, &["peek", "--select", "service.mode"]);
    assert_eq!(peek.stdout.trim(), "systemd_user", "{peek}");
    let peek = run(&p, &["peek", "--select", "service.unit_file"]);
    assert_eq!(peek.stdout.trim(), unit_path.display().to_string());

    let out = run(&p, &["uninstall"]);
    out.assert_code(0);
    assert!(out.stdout.contains("removed"), "{out}");
    assert!(!unit_path.exists());
    assert!(
        unit_dir.join(TEMPLATE).exists(),
        "the shared template stays"
    );
    let out = run(&p, &["uninstall"]);
    out.assert_code(0);
    assert!(out.stdout.contains("nothing to do"), "{out}");
}

#[test]
fn system_unit_dry_run() {
    let p = Project::new();
    p.write_config(&p.config());
    let out = run(&p, &["install", "--system", "--dry-run"]);
    out.assert_code(0);
    assert_unit_text(&p, &out.stdout);
    assert!(
        out.stdout
            .contains(&format!("# /etc/systemd/system/{DROP_IN}")),
        "{out}"
    );
    assert!(out.stdout.contains("WantedBy=multi-user.target"), "{out}");
    assert!(!std::path::Path::new("/etc/systemd/system")
        .join(DROP_IN)
        .exists());
}

#[test]
fn completions_and_man_page() {
    let p = Project::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = p.run(&["completions", shell]);
        out.assert_code(0);
        assert!(out.stdout.contains("agent-runner"), "{shell}: {out}");
        assert!(
            out.stdout.contains("peek") && out.stdout.contains("install"),
            "{shell}"
        );
    }
    p.run(&["completions", "tcsh"]).assert_code(2);
    let out = p.run(&["man"]);
    out.assert_code(0);
    assert!(
        out.stdout.starts_with(".ie") || out.stdout.contains(".TH"),
        "{out}"
    );
    assert!(out.stdout.contains("agent\\-runner"), "{out}");
    assert!(out.stdout.contains("peek"), "{out}");
}
