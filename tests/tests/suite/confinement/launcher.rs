//! The `plugin-host` launcher (docs/security.md "The launcher"): every host, the agent and
//! goal checks start through it; a supervisor without it, or with another build's, refuses
//! to start anything (exit 78), and `doctor` says why.

use agent_runner_e2e::serde_json::{json, Value};
use agent_runner_e2e::{agent_runner_bin, pause_host_bin, plugin_host_bin, HostSpec, Pin, Project};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `<tmp>/<dir>/agent-runner`: a copy of the real binary, with `launcher` (if any) beside
/// it as `plugin-host`.
fn installed_copy(p: &Project, dir: &str, launcher: Option<&Path>) -> PathBuf {
    let bin = p.tmp_dir().join(dir);
    std::fs::create_dir_all(&bin).unwrap();
    let installed = bin.join("agent-runner");
    std::fs::copy(agent_runner_bin(), &installed).unwrap();
    if let Some(launcher) = launcher {
        std::fs::copy(launcher, bin.join("plugin-host")).unwrap();
    }
    installed
}

fn run_copy(p: &Project, installed: &Path, args: &[&str]) -> agent_runner_e2e::RunOutput {
    let mut cmd = Command::new(installed);
    cmd.arg("--config")
        .arg(p.config_path())
        .args(args)
        .current_dir(p.dir())
        .env("HOME", p.home())
        .env_remove("XDG_STATE_HOME");
    p.run_with(cmd)
}

fn launcher_check(p: &Project, installed: &Path) -> Value {
    let out = run_copy(p, installed, &["doctor", "--json"]);
    let doc: Value = agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    agent_runner_e2e::doctor_check(&doc, "launcher")
}

#[test]
fn a_missing_launcher_refuses_round_and_serve_and_fails_doctor() {
    let p = Project::new();
    p.write_config(&p.config());
    // The control: the same copy with its launcher beside it runs a round.
    let paired = installed_copy(&p, "paired", Some(&plugin_host_bin()));
    run_copy(&p, &paired, &["round"]).assert_code(0);
    assert_eq!(launcher_check(&p, &paired)["ok"], true);

    let alone = installed_copy(&p, "alone", None);
    for verb in [&["round"][..], &["serve", "--max-rounds", "1"][..]] {
        let out = run_copy(&p, &alone, verb);
        out.assert_code(78);
        assert!(
            out.stderr.contains("plugin-host is missing"),
            "{verb:?}: {out}"
        );
    }
    let check = launcher_check(&p, &alone);
    assert_eq!(check["ok"], false, "{check}");
    assert!(
        check["reason"].as_str().unwrap().contains("is missing"),
        "{check}"
    );
    // Nothing ran: the agent of the control round is the only one.
    assert_eq!(p.events_of("agent_spawn").len(), 1);
}

#[test]
fn a_launcher_of_another_build_is_refused() {
    let p = Project::new();
    p.write_config(&p.config());
    // The real launcher with its build identity patched: what another build would answer.
    let real = plugin_host_bin();
    let ours = String::from_utf8(
        Command::new(&real)
            .arg("--build-id")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let ours = ours.trim().as_bytes();
    let mut bytes = std::fs::read(&real).unwrap();
    let mut patched = 0;
    let mut i = 0;
    while i + ours.len() <= bytes.len() {
        if &bytes[i..i + ours.len()] == ours {
            bytes[i..i + ours.len()].copy_from_slice(b"0000000000000000");
            patched += 1;
        }
        i += 1;
    }
    assert!(patched > 0, "the build id is in the launcher's bytes");
    let foreign = p.tmp_dir().join("foreign-launcher");
    std::fs::write(&foreign, bytes).unwrap();
    std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o755)).unwrap();
    let installed = installed_copy(&p, "foreign", Some(&foreign));
    let out = run_copy(&p, &installed, &["round"]);
    out.assert_code(78);
    assert!(
        out.stderr
            .contains("is build 0000000000000000, not this supervisor's"),
        "{out}"
    );
    let check = launcher_check(&p, &installed);
    assert_eq!(check["ok"], false, "{check}");
    assert!(p.events_of("agent_spawn").is_empty());
}

#[test]
fn doctor_shows_the_launcher_s_path_and_sha256() {
    let p = Project::new();
    p.write_config(&p.config());
    let installed = installed_copy(&p, "bin", Some(&plugin_host_bin()));
    let check = launcher_check(&p, &installed);
    assert_eq!(check["ok"], true, "{check}");
    let reason = check["reason"].as_str().unwrap();
    let path = installed.with_file_name("plugin-host");
    assert!(reason.contains(&path.display().to_string()), "{reason}");
    assert!(
        reason.contains(&agent_runner_e2e::sha256_hex(&path)),
        "{reason}"
    );
}

/// Under `strace -f`: the launcher is executed before the pinned host (by its verified
/// descriptor, `execveat`) and before the confined agent (by its path).
#[test]
fn the_launcher_runs_before_the_host_and_before_the_agent() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(
                HostSpec::new("pause", pause_host_bin())
                    .config(json!({"defer_s": 30, "reason": "held by the pause file"}))
                    .pin(Pin::OfFile(pause_host_bin())),
            )
            .extra("[agent.sandbox]\nmode = \"prefer\"\n"),
    );
    let trace = p.tmp_dir().join("strace.out");
    let mut cmd = Command::new("strace");
    cmd.args([
        "-f",
        "-qq",
        "-s",
        "512",
        "-e",
        "trace=execve,execveat",
        "-o",
    ])
    .arg(&trace)
    .arg(agent_runner_bin())
    .arg("--config")
    .arg(p.config_path())
    .arg("round")
    .current_dir(p.dir())
    .env("HOME", p.home())
    .env_remove("XDG_STATE_HOME");
    p.run_with(cmd).assert_code(0);
    let lines: Vec<String> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("= -1"))
        .map(str::to_owned)
        .collect();
    let first = |what: &str, pred: &dyn Fn(&str) -> bool| {
        lines
            .iter()
            .position(|l| pred(l))
            .unwrap_or_else(|| panic!("no {what} in the trace:\n{}", lines.join("\n")))
    };
    let launcher = first("launcher", &|l| {
        l.contains("[\"plugin-host\", \"--plan-fd\"")
    });
    let host = first("host exec", &|l| {
        l.contains("execveat(") && l.contains("spawn-pause-file")
    });
    let agent = first("agent exec", &|l| {
        l.contains("execve(") && l.contains(&p.agent_path().display().to_string())
    });
    assert!(launcher < host && launcher < agent, "{}", lines.join("\n"));
    // One launcher for each: the host and the agent (the detector host too).
    let launches = lines
        .iter()
        .filter(|l| l.contains("[\"plugin-host\", \"--plan-fd\""))
        .count();
    assert!(launches >= 2, "{}", lines.join("\n"));
}

#[test]
fn the_launcher_says_what_it_is_and_refuses_to_run_without_a_plan() {
    let out = Command::new(plugin_host_bin())
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("plugin-host "));
    let out = Command::new(plugin_host_bin()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let mode = std::fs::metadata(plugin_host_bin())
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(mode & 0o111, 0);
}

/// `installed`'s successful `execve` calls during one `round` under `strace -f`, and the
/// round's output.
fn traced_copy_round(p: &Project, installed: &Path) -> (Vec<String>, agent_runner_e2e::RunOutput) {
    let trace = p.tmp_dir().join("launcher.strace");
    let mut cmd = Command::new("strace");
    cmd.args([
        "-f",
        "-qq",
        "-z",
        "-e",
        "signal=none",
        "-e",
        "trace=execve",
        "-o",
    ])
    .arg(&trace)
    .arg(installed)
    .arg("--config")
    .arg(p.config_path())
    .arg("round")
    .current_dir(p.dir())
    .env("HOME", p.home())
    .env_remove("XDG_STATE_HOME");
    let out = p.run_with(cmd);
    let lines = std::fs::read_to_string(&trace)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    (lines, out)
}

fn asked_for_its_build(execs: &[String]) -> usize {
    execs
        .iter()
        .filter(|l| l.contains("[\"plugin-host\", \"--build-id\"]"))
        .count()
}

/// The launcher's build is read from its section (plugin-host/src/common/build_note.rs):
/// the real launcher is never run to ask. The control: the same launcher with its section
/// renamed (what a launcher built without one looks like) is asked, once, and the round
/// runs all the same.
#[test]
fn the_launcher_s_build_is_read_from_its_file_and_asked_only_when_the_file_does_not_say() {
    let p = Project::new();
    p.write_config(&p.config());
    let paired = installed_copy(&p, "paired", Some(&plugin_host_bin()));
    let (execs, out) = traced_copy_round(&p, &paired);
    out.assert_code(0);
    assert_eq!(asked_for_its_build(&execs), 0, "{execs:#?}");

    let name = b".agent_runner.build_id\0";
    let mut bytes = std::fs::read(plugin_host_bin()).unwrap();
    let mut renamed = 0;
    for i in 0..bytes.len().saturating_sub(name.len()) {
        if &bytes[i..i + name.len()] == name {
            bytes[i..i + name.len()].copy_from_slice(b".agent_runner.build_xx\0");
            renamed += 1;
        }
    }
    assert!(renamed > 0, "the section's name is in the launcher's bytes");
    let unnamed = p.tmp_dir().join("unnamed-launcher");
    std::fs::write(&unnamed, bytes).unwrap();
    std::fs::set_permissions(&unnamed, std::fs::Permissions::from_mode(0o755)).unwrap();
    let installed = installed_copy(&p, "unnamed", Some(&unnamed));
    let (execs, out) = traced_copy_round(&p, &installed);
    out.assert_code(0);
    assert_eq!(asked_for_its_build(&execs), 1, "{execs:#?}");
}

/// Fail closed: a launcher whose section says this build but which cannot be executed (no
/// execute permission) is refused at boot, as when it was asked by running it.
#[test]
fn a_launcher_that_cannot_be_executed_is_refused_whatever_its_section_says() {
    let p = Project::new();
    p.write_config(&p.config());
    let installed = installed_copy(&p, "noexec", Some(&plugin_host_bin()));
    let launcher = installed.with_file_name("plugin-host");
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = run_copy(&p, &installed, &["round"]);
    out.assert_code(78);
    assert!(out.stderr.contains("cannot be run"), "{out}");
    assert!(p.events_of("agent_spawn").is_empty());
    // The control: the same file, executable again, runs a round.
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    run_copy(&p, &installed, &["round"]).assert_code(0);
}
