//! The unit `install` writes, run by a real systemd: its restart rules against the exit-code
//! contract (docs/operations.md, "Leaving it unattended").
//!
//! systemd is not PID 1 on the test machines (containers), so each test starts a systemd
//! *user manager* (`/lib/systemd/systemd --user`) of its own, in a private mount namespace
//! (`unshare -m`) where a tmpfs over `/run` holds `/run/systemd/system` (sd_booted(3): the
//! manager refuses to start without it) and the manager's runtime dir. `install` runs inside
//! that namespace too, so it sees systemd running and does what it does on a real machine:
//! `systemctl --user daemon-reload` and `enable --now`. systemd's own `systemctl show` reports
//! what the manager did (`NRestarts`, `Result`, `ExecMainStatus`); the tests count the
//! starts themselves. `RestartSec=1` in a test drop-in shortens the 10 s wait between
//! restarts; every other rule (`Restart=`, `RestartPreventExitStatus=`, the start limit)
//! is the template's.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use agent_runner_e2e::{agent_runner_bin, Project};

/// The exits `serve` ends with when it must stay stopped (docs/operations.md).
const STAY_STOPPED: [&str; 7] = ["2", "70", "75", "77", "78", "79", "80"];

/// Runs `steps` (shell) in a private mount namespace next to a fresh systemd user manager
/// whose `HOME` is the project's; returns the script's stdout. Panics with the manager's
/// log when the script fails.
fn with_user_manager(p: &Project, steps: &str) -> String {
    for tool in ["unshare", "systemctl"] {
        assert!(
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .status()
                .unwrap()
                .success(),
            "{tool} is missing: run tests/setup.sh"
        );
    }
    assert!(
        Path::new("/lib/systemd/systemd").exists(),
        "/lib/systemd/systemd is missing (Debian package systemd): run tests/setup.sh"
    );
    let log = p.tmp_dir().join("manager.log");
    let script = format!(
        "set -e\n\
         mount -t tmpfs tmpfs /run\n\
         mkdir -p /run/systemd/system /run/user-manager\n\
         export XDG_RUNTIME_DIR=/run/user-manager HOME='{home}'\n\
         unset XDG_CONFIG_HOME\n\
         /lib/systemd/systemd --user --log-target=console --log-level=info >'{log}' 2>&1 &\n\
         manager=$!\n\
         trap 'kill $manager; wait $manager' EXIT\n\
         for i in $(seq 100); do [ -S /run/user-manager/systemd/private ] && break; sleep 0.1; done\n\
         {steps}\n",
        home = p.home().display(),
        log = log.display(),
    );
    // One manager at a time: managers of one user in one cgroup would share their units'
    // cgroups (`agent-runner@project.service` in each), so one's stop would end another's.
    let out = Command::new("flock")
        .arg(std::env::temp_dir().join("ar-e2e-systemd-user-manager.lock"))
        .args(["timeout", "120"])
        .args(["unshare", "-m", "sh", "-c", &script])
        .current_dir(p.dir())
        .output()
        .expect("unshare");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}\nstdout:\n{stdout}\nstderr:\n{}\nmanager:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    stdout
}

/// `systemctl --user show` output of one unit, as a map (lines `unit.Key=Value`).
fn shown(stdout: &str, unit: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{unit}.")))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn show(unit: &str) -> String {
    format!(
        "systemctl --user show -p NRestarts,Result,ExecMainStatus,ActiveState,StartLimitBurst,StartLimitIntervalUSec {unit} | sed 's/^/{unit}./'\n"
    )
}

/// Installs the unit for the project (so the template is the one under test).
fn write_template(p: &Project) {
    let mut cmd = p.command(&["install"]);
    cmd.env_remove("XDG_CONFIG_HOME");
    p.run_with(cmd).assert_code(0);
}

/// Issue 27, item 1: a real `serve` that stops itself on purpose (a crash loop: exit 75)
/// under the installed unit stays stopped: systemd does not start it again, so the agent
/// runs exactly the crash loop's 5 rounds. Before, the unit restarted it 10 s later, for
/// ever. `install` itself enables and starts the instance here (systemd is running).
#[test]
fn deliberate_stop_of_a_real_serve_is_not_restarted() {
    let p = Project::new();
    let runs = p.tmp_dir().join("agent-runs");
    let agent = p.script(
        "failing-agent.sh",
        &format!("#!/bin/sh\necho run >> '{}'\nexit 1\n", runs.display()),
    );
    p.write_config(&agent_runner_e2e::ConfigBuilder::new(&agent));
    let drop_in = p
        .home()
        .join(".config/systemd/user/agent-runner@project.service.d/test.conf");
    std::fs::create_dir_all(drop_in.parent().unwrap()).unwrap();
    std::fs::write(&drop_in, "[Service]\nRestartSec=1\n").unwrap();
    let unit = "agent-runner@project.service";
    let stdout = with_user_manager(
        &p,
        &format!(
            "'{bin}' --config '{config}' install\n\
             for i in $(seq 300); do systemctl --user is-failed -q {unit} && break; sleep 0.1; done\n\
             sleep 4\n\
             {show}",
            bin = agent_runner_bin().display(),
            config = p.config_path().display(),
            show = show(unit),
        ),
    );
    assert!(stdout.contains("enabled and started"), "{stdout}");
    let state = shown(&stdout, unit);
    assert_eq!(state["ExecMainStatus"], "75", "{stdout}");
    assert_eq!(state["ActiveState"], "failed", "{stdout}");
    assert_eq!(
        state["NRestarts"], "0",
        "restarted after a crash loop: {stdout}"
    );
    let rounds = std::fs::read_to_string(&runs).unwrap().lines().count();
    assert_eq!(rounds, 5, "the crash loop's rounds only, no second serve");
    assert_eq!(p.events_of("crash_loop").len(), 1);
}

/// Issue 27, item 1: every exit of the contract, run by the manager under the template's
/// rules (an instance whose drop-in replaces `ExecStart` by `exit N`): 0 ends the service
/// (not a failure); 2, 70, 75, 77, 78, 79 and 80 leave it failed and never restart it; 1, 71 (a
/// memory loop), 76 (an environmental failure), 143 (`serve --job` drained) and a SIGKILL
/// (an OOM kill) restart it until the start limit (5 starts in 10 minutes) stops it.
#[test]
fn unit_restart_rules_follow_the_exit_code_contract() {
    let p = Project::new();
    p.write_config(&p.config());
    write_template(&p);
    let unit_dir = p.home().join(".config/systemd/user");
    let cases: Vec<(&str, &str)> = [
        "0", "1", "2", "70", "71", "75", "76", "77", "78", "79", "80", "143",
    ]
    .iter()
    .map(|code| (*code, "exit"))
    .chain([("kill9", "kill -9 $$$$;")])
    .collect();
    let mut steps = String::from("systemctl --user daemon-reload\n");
    for (name, how) in &cases {
        let starts = p.tmp_dir().join(format!("starts-{name}"));
        let run = if *how == "exit" {
            format!("exit {name}")
        } else {
            (*how).to_owned()
        };
        let dir = unit_dir.join(format!("agent-runner@exit{name}.service.d"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("test.conf"),
            format!(
                "[Service]\nRestartSec=1\nExecStart=\nExecStart=/bin/sh -c \"echo start >> {}; {run}\"\n",
                starts.display()
            ),
        )
        .unwrap();
    }
    steps.push_str("systemctl --user daemon-reload\n");
    for (name, _) in &cases {
        steps.push_str(&format!(
            "systemctl --user start agent-runner@exit{name}.service || true\n"
        ));
    }
    // Five starts 1 s apart, then the start limit; the others have long settled.
    steps.push_str("sleep 9\n");
    for (name, _) in &cases {
        steps.push_str(&show(&format!("agent-runner@exit{name}.service")));
    }
    let stdout = with_user_manager(&p, &steps);
    for (name, _) in &cases {
        let unit = format!("agent-runner@exit{name}.service");
        let state = shown(&stdout, &unit);
        let starts = std::fs::read_to_string(p.tmp_dir().join(format!("starts-{name}")))
            .unwrap_or_default()
            .lines()
            .count();
        assert_eq!(state["StartLimitBurst"], "5", "{unit}: {stdout}");
        assert_eq!(state["StartLimitIntervalUSec"], "10min", "{unit}: {stdout}");
        match *name {
            "0" => {
                assert_eq!(starts, 1, "{unit}: {stdout}");
                assert_eq!(state["Result"], "success", "{unit}: {stdout}");
                assert_eq!(state["ActiveState"], "inactive", "{unit}: {stdout}");
            }
            code if STAY_STOPPED.contains(&code) => {
                assert_eq!(starts, 1, "{unit} restarted: {stdout}");
                assert_eq!(state["NRestarts"], "0", "{unit}: {stdout}");
                assert_eq!(state["ExecMainStatus"], code, "{unit}: {stdout}");
                assert_eq!(state["ActiveState"], "failed", "{unit}: {stdout}");
            }
            _ => {
                assert_eq!(starts, 5, "{unit}: the start limit: {stdout}");
                // The sixth start is refused: systemd 252 counts it in NRestarts.
                assert_eq!(state["NRestarts"], "5", "{unit}: {stdout}");
                assert_eq!(state["ActiveState"], "failed", "{unit}: {stdout}");
            }
        }
    }
}

/// The value of `key=` in the script's output (the last such line).
fn value_of<'a>(stdout: &'a str, key: &str) -> &'a str {
    stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {stdout}"))
}

/// Issue 28, item 6: `upgrade` under the installed user unit (docs/operations.md,
/// "upgrade"). The unit runs a copy of the real binary in the test's own `bin/`; a new
/// build (the real binary with bytes appended) is swapped in and the unit restarted on it:
/// a new main pid, running the installed path, the new bytes in place and the old kept as
/// `.previous`. Then a build whose `serve` fails at once: the unit's new `serve` never comes
/// up, the old bytes go back and the unit runs them again (exit 1,
/// `service_upgrade_rolled_back`).
#[test]
fn upgrade_restarts_the_installed_unit_and_rolls_back_under_it() {
    let p = Project::new();
    p.write_config(
        &agent_runner_e2e::ConfigBuilder::new(p.agent_path())
            .agent_env("DEMO_AGENT_SLEEP", "1")
            .round_budget_s(60),
    );
    let bin = p.tmp_dir().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let installed = bin.join("agent-runner");
    std::fs::copy(agent_runner_bin(), &installed).unwrap();
    // Each build's launcher beside it: the installed one's, and the new ones' in <tmp>.
    for dir in [bin.as_path(), p.tmp_dir()] {
        std::fs::copy(agent_runner_e2e::plugin_host_bin(), dir.join("plugin-host")).unwrap();
    }
    let old_sha = agent_runner_e2e::sha256_hex(&installed);
    let new = p.tmp_dir().join("agent-runner-new");
    let mut bytes = std::fs::read(agent_runner_bin()).unwrap();
    bytes.extend_from_slice(b"\nupgrade under systemd: build 2\n");
    std::fs::write(&new, bytes).unwrap();
    std::fs::set_permissions(&new, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let broken = p.script(
        "dies-at-serve",
        &format!(
            "#!/bin/sh\ncase \" $* \" in *\" serve \"*) exit 1;; esac\nexec '{}' \"$@\"\n",
            agent_runner_bin().display()
        ),
    );
    let unit = "agent-runner@project.service";
    let ar = format!(
        "'{}' --config '{}'",
        installed.display(),
        p.config_path().display()
    );
    let main_pid = format!("systemctl --user show -p MainPID --value {unit}");
    let stdout = with_user_manager(
        &p,
        &format!(
            "{ar} install\n\
             for i in $(seq 300); do {ar} status >/dev/null && break; sleep 0.1; done\n\
             echo before=$({main_pid})\n\
             rc=0; {ar} upgrade --binary '{new}' --json >'{tmp}/up1.json' || rc=$?\n\
             echo up1=$rc\n\
             pid=$({main_pid}); echo after1=$pid; echo exe1=$(readlink /proc/$pid/exe)\n\
             echo sha1=$(sha256sum '{installed}' | cut -d' ' -f1)\n\
             echo previous1=$(sha256sum '{installed}.previous' | cut -d' ' -f1)\n\
             rc=0; {ar} upgrade --binary '{broken}' --timeout 15 --json >'{tmp}/up2.json' || rc=$?\n\
             echo up2=$rc\n\
             pid=$({main_pid}); echo after2=$pid; echo exe2=$(readlink /proc/$pid/exe)\n\
             echo sha2=$(sha256sum '{installed}' | cut -d' ' -f1)\n\
             echo active=$(systemctl --user is-active {unit})\n\
             systemctl --user stop {unit}\n",
            new = new.display(),
            broken = broken.display(),
            installed = installed.display(),
            tmp = p.tmp_dir().display(),
        ),
    );
    let read = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(p.tmp_dir().join(name)).unwrap_or_default();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}: {text}\n{stdout}"))
    };
    let before = value_of(&stdout, "before");
    assert_ne!(before, "0", "{stdout}");
    // The upgrade: a new main pid running the installed path, the new bytes in place.
    let up1 = read("up1.json");
    assert_eq!(value_of(&stdout, "up1"), "0", "{up1}\n{stdout}");
    assert_eq!(up1["service"], "systemd-user", "{up1}");
    assert_eq!(up1["outcome"], "upgraded", "{up1}");
    let after1 = value_of(&stdout, "after1");
    assert_ne!(after1, before, "{stdout}");
    assert_eq!(up1["pid"].to_string(), after1, "{up1}");
    assert_eq!(value_of(&stdout, "exe1"), installed.display().to_string());
    assert_eq!(
        value_of(&stdout, "sha1"),
        agent_runner_e2e::sha256_hex(&new)
    );
    assert_eq!(value_of(&stdout, "previous1"), old_sha);
    // The broken build: rolled back, the unit runs the restored bytes.
    let up2 = read("up2.json");
    assert_eq!(value_of(&stdout, "up2"), "1", "{up2}\n{stdout}");
    assert_eq!(up2["outcome"], "rolled_back", "{up2}");
    let after2 = value_of(&stdout, "after2");
    assert_ne!(after2, after1, "{stdout}");
    assert_eq!(up2["pid"].to_string(), after2, "{up2}");
    assert_eq!(value_of(&stdout, "exe2"), installed.display().to_string());
    assert_eq!(value_of(&stdout, "active"), "active", "{stdout}");
    assert_eq!(
        value_of(&stdout, "sha2"),
        agent_runner_e2e::sha256_hex(&new),
        "the rollback restores the bytes that ran before this upgrade (build 2)"
    );
    assert_eq!(
        p.events_of("service_upgraded").len(),
        1,
        "{}",
        p.events_text()
    );
    assert_eq!(
        p.events_of("service_upgrade_rolled_back").len(),
        1,
        "{}",
        p.events_text()
    );
}

/// Issue 38, item 2: the file a script (and the reference system's own install test) looks
/// for, `~/.config/systemd/user/agent-runner@<project>.service`, is there after `install`:
/// a link to the template, which the manager loads as the instance with its drop-in, and
/// `uninstall` removes it (docs/reference-system.md, "Deviations", 1).
#[test]
fn the_instance_file_is_a_link_the_manager_loads_with_its_drop_in() {
    let p = Project::new();
    let agent = p.script("agent.sh", "#!/bin/sh\nsleep 30\n");
    p.write_config(&agent_runner_e2e::ConfigBuilder::new(&agent));
    let unit = "agent-runner@project.service";
    let link = p.home().join(".config/systemd/user").join(unit);
    let stdout = with_user_manager(
        &p,
        &format!(
            "'{bin}' --config '{config}' install\n\
             systemctl --user show -p LoadState,ActiveState,DropInPaths {unit} | sed 's/^/{unit}./'\n\
             '{bin}' --config '{config}' uninstall\n\
             test ! -e '{link}' && echo link-removed\n",
            bin = agent_runner_bin().display(),
            config = p.config_path().display(),
            link = link.display(),
        ),
    );
    let state = shown(&stdout, unit);
    assert_eq!(state["LoadState"], "loaded", "{stdout}");
    assert_eq!(state["ActiveState"], "active", "{stdout}");
    assert!(state["DropInPaths"].contains("project.conf"), "{stdout}");
    assert!(
        stdout.contains("linked ") && stdout.contains("link-removed"),
        "{stdout}"
    );
}
