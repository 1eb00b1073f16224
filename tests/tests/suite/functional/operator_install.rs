//! `install` / `uninstall`: the generated systemd unit (restart policy, exits 2, 75, 77, 78 not
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
        "RestartPreventExitStatus=2 70 75 77 78 79 80".to_owned(),
        "StartLimitIntervalSec=600".to_owned(),
        "StartLimitBurst=5".to_owned(),
        "KillMode=control-group".to_owned(),
        "Delegate=yes".to_owned(),
        format!(
            "ExecStart=\"{}\" --config ${{AGENT_RUNNER_CONFIG}} serve",
            bin.display()
        ),
        format!(
            "Environment=\"AGENT_RUNNER_CONFIG={}\"",
            p.config_path().display()
        ),
        format!("WorkingDirectory={}", p.dir().display()),
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
    // The instance's file where the reference system's scripts look: a link to the template.
    let instance = unit_dir.join("agent-runner@project.service");
    assert_eq!(
        std::fs::read_link(&instance).expect("instance link"),
        std::path::Path::new(TEMPLATE)
    );

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

    // Issue 27, item 10: without systemd the installed unit manages nothing, and peek
    // says so (mode `none`: no supervisor runs), still naming the unit file.
    let peek = run(&p, &["peek", "--select", "service.mode"]);
    assert_eq!(peek.stdout.trim(), "none", "{peek}");
    let peek = run(&p, &["peek", "--select", "service.unit_file"]);
    assert_eq!(peek.stdout.trim(), unit_path.display().to_string());
    let peek = run(&p, &["peek"]);
    peek.assert_code(0);
    assert!(
        peek.stdout.contains("systemd is not running here"),
        "{peek}"
    );
    assert!(!peek.stdout.contains("systemd_user"), "{peek}");

    let out = run(&p, &["uninstall"]);
    out.assert_code(0);
    assert!(out.stdout.contains("removed"), "{out}");
    assert!(!unit_path.exists());
    assert!(
        instance.symlink_metadata().is_err(),
        "the instance link stays"
    );
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
    // The agent's sandbox keys, where a refused round leads (issue 41).
    for key in [
        "mode",
        "connect_ports",
        "allow_hosts",
        "read_paths",
        "write_paths",
    ] {
        assert!(
            out.stdout.contains(&format!("[agent.sandbox] {key} (")),
            "{key}: {out}"
        );
    }
}

/// Issue 17, case 10: what `install` writes (the template and the instance's drop-in)
/// passes the system's `systemd-analyze verify`, for a project path with spaces and `%`
/// too (a quoted `WorkingDirectory=` is "not absolute" to systemd). The instance is
/// verified by name with the unit dir as the search path, so its drop-in is loaded.
#[test]
fn installed_unit_passes_systemd_analyze_verify() {
    let p = Project::new();
    p.write_config(&p.config());
    let odd = p.dir().join("my project 100%");
    std::fs::create_dir_all(odd.join("prompts")).unwrap();
    std::fs::write(odd.join("prompts/main.md"), "Work.\n").unwrap();
    std::fs::write(odd.join("agent-runner.toml"), p.config().render()).unwrap();
    let unit_dir = p.home().join(".config/systemd/user");
    for config in [p.config_path(), odd.join("agent-runner.toml")] {
        let mut cmd = std::process::Command::new(agent_runner_bin());
        cmd.arg("--config")
            .arg(&config)
            .arg("install")
            .current_dir(config.parent().unwrap())
            .env("HOME", p.home())
            .env_remove("XDG_CONFIG_HOME");
        let out = p.run_with(cmd);
        out.assert_code(0);
        let working_dir = format!(
            "WorkingDirectory={}\n",
            config
                .parent()
                .unwrap()
                .display()
                .to_string()
                .replace('%', "%%")
        );
        let drop_in = std::fs::read_dir(&unit_dir)
            .unwrap()
            .map(|e| e.unwrap().path().join("project.conf"))
            .find(|d| std::fs::read_to_string(d).is_ok_and(|t| t.contains(&working_dir)))
            .unwrap_or_else(|| panic!("no drop-in with {working_dir:?}: {out}"));
        let instance = drop_in
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .strip_suffix(".d")
            .unwrap()
            .to_owned();
        let mut search = unit_dir.clone().into_os_string();
        search.push(":"); // then systemd's own paths
        let verify = std::process::Command::new("systemd-analyze")
            .arg("verify")
            .arg(&instance)
            .env("SYSTEMD_UNIT_PATH", &search)
            .env("SYSTEMD_LOG_LEVEL", "warning")
            .output()
            .expect("systemd-analyze (installed by .ci/run)");
        let said = String::from_utf8_lossy(&verify.stderr);
        assert!(
            verify.status.success() && !said.contains("agent-runner@"),
            "{instance}: {said}\n{}",
            std::fs::read_to_string(&drop_in).unwrap()
        );
    }
    // The restart rules the verified unit carries follow the exit contract
    // (docs/operations.md, "Leaving it unattended"): the give-ups that need a person stay
    // stopped; a memory loop (71) and an environmental failure (76) restart, bounded by
    // the start limit.
    let template = std::fs::read_to_string(unit_dir.join("agent-runner@.service")).unwrap();
    let values = |key: &str| -> Vec<String> {
        template
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{key}=")))
            .flat_map(|v| v.split_whitespace().map(str::to_owned))
            .collect()
    };
    let mut stay = values("RestartPreventExitStatus");
    stay.sort();
    assert_eq!(
        stay,
        ["2", "70", "75", "77", "78", "79", "80"],
        "{template}"
    );
    assert_eq!(values("Restart"), ["on-failure"], "{template}");
    assert_eq!(values("StartLimitIntervalSec"), ["600"], "{template}");
    assert_eq!(values("StartLimitBurst"), ["5"], "{template}");
}

#[test]
fn install_monitor_adds_the_monitor_sidekick_and_uninstall_removes_it() {
    // The reference system's `install --monitor`: a second unit running `monitor` for the
    // project, after its serve unit.
    let p = Project::new();
    p.write_config(&p.config());
    let unit_dir = p.tmp_dir().join("home/.config/systemd/user");
    let sidekick = unit_dir.join("agent-runner-monitor@project.service.d/project.conf");

    let out = run(&p, &["install", "--monitor"]);
    out.assert_code(0);
    assert!(
        out.stdout.contains("agent-runner-monitor@project.service"),
        "{out}"
    );
    let template = std::fs::read_to_string(unit_dir.join("agent-runner-monitor@.service"))
        .expect("monitor template written");
    let binary = agent_runner_bin()
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    assert!(
        template.contains(&format!(
            "ExecStart=\"{binary}\" --config ${{AGENT_RUNNER_CONFIG}} monitor\n"
        )),
        "{template}"
    );
    assert!(
        template.contains("After=agent-runner@%i.service"),
        "{template}"
    );
    let drop_in = std::fs::read_to_string(&sidekick).expect("monitor drop-in written");
    assert!(
        drop_in.contains(&p.config_path().display().to_string()),
        "{drop_in}"
    );
    assert!(unit_dir.join(DROP_IN).exists(), "the serve unit too");
    // systemd itself accepts the sidekick with its drop-in.
    let mut search = unit_dir.clone().into_os_string();
    search.push(":");
    let verify = std::process::Command::new("systemd-analyze")
        .args(["verify", "agent-runner-monitor@project.service"])
        .env("SYSTEMD_UNIT_PATH", &search)
        .env("SYSTEMD_LOG_LEVEL", "warning")
        .output()
        .expect("systemd-analyze (installed by .ci/run)");
    let said = String::from_utf8_lossy(&verify.stderr);
    assert!(
        verify.status.success() && !said.contains("agent-runner-monitor@"),
        "{said}\n{template}"
    );

    let out = run(&p, &["uninstall"]);
    out.assert_code(0);
    assert!(!sidekick.exists(), "monitor drop-in left: {out}");
    assert!(!unit_dir.join(DROP_IN).exists(), "{out}");
}
