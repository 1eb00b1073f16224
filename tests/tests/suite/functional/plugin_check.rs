//! `agent-runner plugin check` and `plugin new` on real, confined hosts: the example hosts
//! (Rust and Python) and fresh scaffolds pass every rule; deliberately faulty hosts
//! (`tests/fixtures/faulty_host.py`) fail, naming the rule they break.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{
    agent_runner_bin, bin_dir, check_rule, pause_host_bin, pin_of, workspace_root, HostSpec,
    Project,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn faulty_host() -> PathBuf {
    workspace_root().join("tests/fixtures/faulty_host.py")
}

/// Runs `agent-runner <args>` in `cwd`.
fn agent_runner(cwd: &Path, args: &[&str]) -> Output {
    Command::new(agent_runner_bin())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run agent-runner")
}

/// `plugin check --json [extra…] -- command…`: the exit code and the report.
fn check(extra: &[&str], command: &[&str]) -> (i32, Value) {
    check_with(Command::new(agent_runner_bin()), extra, command)
}

/// [`check`] run by `cmd` (the `agent-runner` binary, perhaps as another user).
fn check_with(mut cmd: Command, extra: &[&str], command: &[&str]) -> (i32, Value) {
    let mut args = vec!["plugin", "check", "--json"];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(command);
    let out = cmd
        .args(&args)
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .expect("run agent-runner");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stdout: {} stderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), report)
}

/// The rules of `report` with status `status`.
fn rules_with(report: &Value, status: &str) -> Vec<String> {
    report["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == status)
        .map(|r| r["rule"].as_str().unwrap().to_owned())
        .collect()
}

fn assert_all_pass(code: i32, report: &Value) {
    assert_eq!(
        rules_with(report, "fail"),
        Vec::<String>::new(),
        "{report:#}"
    );
    assert_eq!(rules_with(report, "pass").len(), 11, "{report:#}");
    assert_eq!(report["passed"], true);
    assert_eq!(report["tier"], "landlock+seccomp", "{report:#}");
    assert_eq!(code, 0, "{report:#}");
}

/// Builds the Python example host into `dir` and returns the `.pyz`.
fn python_example(dir: &Path) -> PathBuf {
    let out = dir.join("python-pause-file.pyz");
    let status = Command::new("bash")
        .arg(workspace_root().join("examples/python-pause-file/build.sh"))
        .arg(&out)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    out
}

#[test]
fn rust_example_hosts_pass() {
    let (code, report) = check(&[], &[pause_host_bin().to_str().unwrap()]);
    assert_all_pass(code, &report);
    let dirty = agent_runner_e2e::dirty_commit_host_bin();
    let (code, report) = check(&["--provides", "dirty_handler"], &[dirty.to_str().unwrap()]);
    assert_all_pass(code, &report);
}

#[test]
fn python_example_host_passes_pinned_under_require() {
    let p = Project::new();
    let pyz = python_example(p.tmp_dir());
    let (code, report) = check(&[], &[pyz.to_str().unwrap()]);
    assert_all_pass(code, &report);
    // As serve would run it: by name, from the config, pinned, sandbox = "require".
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(HostSpec::new("pause", &pyz)),
    );
    let out = p.run(&["plugin", "check", "pause"]);
    assert_eq!(out.code(), 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("pin verified"), "{}", out.stdout);
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.starts_with("pass  "))
            .count(),
        11,
        "{}",
        out.stdout
    );
}

#[test]
fn configured_host_unpinned_under_require_fails_launch() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(HostSpec::new("pause", pause_host_bin()).pin(agent_runner_e2e::Pin::Unpinned)),
    );
    let out = p.run(&["plugin", "check", "--json", "pause"]);
    assert_eq!(out.code(), 1, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(rules_with(&report, "fail"), ["launch"], "{report:#}");
    assert_eq!(rules_with(&report, "skip").len(), 10, "{report:#}");
    let detail = report["rules"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("[plugins.pin]"), "{detail}");
    // A name that is not configured is a config error.
    assert_eq!(p.run(&["plugin", "check", "nope"]).code(), 78);
}

#[test]
fn faulty_hosts_fail_the_rule_they_break() {
    let host = faulty_host();
    let host = host.to_str().unwrap();
    let (code, report) = check(&[], &[host, "good"]);
    assert_all_pass(code, &report);
    for (mode, provides, rule, says) in [
        (
            "talks_early",
            None,
            "silent_before_initialize",
            "before answering initialize",
        ),
        (
            "prints_stdout",
            None,
            "stdout_protocol_only",
            "checking whether to proceed",
        ),
        ("wrong_shape", None, "hook_calls", "`verdict`"),
        ("ignores_eof", None, "exit_on_eof", "end-of-file"),
        ("leaves_child", None, "no_process_left", "still running"),
        (
            "extra_family",
            Some("spawn_hook"),
            "families_in_provides",
            "dirty_handler hook \"extra\" outside `provides`",
        ),
        ("v2_only", None, "initialize", "version"),
        (
            "socket",
            None,
            "hook_calls",
            "killed by the sandbox: it called socket()",
        ),
    ] {
        let extra: Vec<&str> = provides.map(|p| vec!["--provides", p]).unwrap_or_default();
        let (code, report) = check(&extra, &[host, mode]);
        assert_eq!(code, 1, "{mode}: {report:#}");
        assert_eq!(rules_with(&report, "fail"), [rule], "{mode}: {report:#}");
        let detail = check_rule(&report, rule)["detail"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(detail.contains(says), "{mode}: {detail}");
    }
}

/// As an unprivileged operator the host runs under a reaper, in its own user and PID
/// namespaces: the host itself is not "a process left", a child it leaves behind is.
#[test]
fn no_process_left_as_unprivileged_user() {
    let user = agent_runner_e2e::unprivileged_user();
    let host = faulty_host();
    let host = host.to_str().unwrap();
    let (code, report) = check_with(user.command(agent_runner_bin()), &[], &[host, "good"]);
    assert_all_pass(code, &report);
    let (code, report) = check_with(
        user.command(agent_runner_bin()),
        &[],
        &[host, "leaves_child"],
    );
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        rules_with(&report, "fail"),
        ["no_process_left"],
        "{report:#}"
    );
}

#[test]
fn python_scaffolds_pass_as_generated() {
    let dir = tempfile::tempdir().unwrap();
    for (name, family) in [
        ("py-spawn", "spawn_hook"),
        ("py-dirty", "dirty_handler"),
        ("py-pre-round", "pre_round"),
        ("py-enricher", "context_enricher"),
        ("py-startup", "serve_startup"),
        ("py-detector", "detector"),
        ("py-post", "post_round"),
        ("py-watch", "output_watch"),
    ] {
        let out = agent_runner(
            dir.path(),
            &[
                "plugin", "new", "--lang", "python", "--family", family, "--dir", ".", name,
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pyz = dir.path().join(name).join(format!("{name}.pyz"));
        // The pin is printed in the form a config accepts, by `plugin new` and build.sh.
        let pin_line = format!("{name} = \"{}\"", pin_of(&pyz));
        let told = String::from_utf8_lossy(&out.stdout);
        assert!(told.contains(&pin_line), "{told}");
        let rebuilt = Command::new("bash")
            .arg(dir.path().join(name).join("build.sh"))
            .output()
            .unwrap();
        let told = String::from_utf8_lossy(&rebuilt.stdout);
        assert!(told.lines().any(|l| l == pin_line), "{told}");
        let (code, report) = check(&["--provides", family], &[pyz.to_str().unwrap()]);
        assert_all_pass(code, &report);
    }
    // The name is refused when it is not a valid hook name; an existing dir is never reused.
    let out = agent_runner(
        dir.path(),
        &["plugin", "new", "--lang", "python", "Bad Name"],
    );
    assert_eq!(out.status.code(), Some(2));
    let out = agent_runner(
        dir.path(),
        &["plugin", "new", "--lang", "python", "py-spawn"],
    );
    assert_eq!(out.status.code(), Some(1));
}

/// The Rust scaffold builds outside any checkout of this repository: it depends only on
/// crates.io and on the SDK and protocol crates it carries under `vendor/`
/// (docs/protocol.md §10).
#[test]
fn rust_scaffold_builds_and_passes() {
    let dir = tempfile::tempdir().unwrap();
    let out = agent_runner(
        dir.path(),
        &["plugin", "new", "--lang", "rust", "ar-scaffold-probe"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let project = dir.path().join("ar-scaffold-probe");
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("path = \"vendor/agent-runner-sdk\""),
        "{manifest}"
    );
    let root = workspace_root();
    for entry in walk(&project) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(
            !text.contains(root.to_str().unwrap()),
            "{} refers to this checkout",
            entry.display()
        );
    }
    // The workspace's lock file and target dir: the same crates.io versions, already
    // downloaded and built (so the build works offline and fast). The lock file names no
    // path of this checkout.
    std::fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let target = bin_dir().parent().unwrap().to_owned();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let build = Command::new(cargo)
        .args(["build", "--offline", "--quiet"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let exe = target.join("debug/ar-scaffold-probe");
    let (code, report) = check(&[], &[exe.to_str().unwrap()]);
    assert_all_pass(code, &report);
}

/// A Rust scaffold of each family, built against this checkout's SDK (`--sdk-path`),
/// passes `plugin check` for its family.
#[test]
fn rust_scaffolds_of_every_family_build_and_pass() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = workspace_root().join("sdk");
    let target = bin_dir().parent().unwrap().to_owned();
    for family in [
        "spawn_hook",
        "dirty_handler",
        "pre_round",
        "context_enricher",
        "serve_startup",
        "detector",
        "post_round",
        "output_watch",
    ] {
        let name = format!("ar-scaffold-{}", family.replace('_', "-"));
        let out = agent_runner(
            dir.path(),
            &[
                "plugin",
                "new",
                "--lang",
                "rust",
                "--family",
                family,
                "--sdk-path",
                sdk.to_str().unwrap(),
                &name,
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let project = dir.path().join(&name);
        // The workspace's lock file and target dir: the same dependency versions, already built.
        std::fs::copy(
            workspace_root().join("Cargo.lock"),
            project.join("Cargo.lock"),
        )
        .unwrap();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let build = Command::new(cargo)
            .args(["build", "--offline", "--quiet"])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(&project)
            .output()
            .unwrap();
        assert!(
            build.status.success(),
            "{family}: {}",
            String::from_utf8_lossy(&build.stderr)
        );
        let exe = target.join("debug").join(&name);
        let (code, report) = check(&["--provides", family], &[exe.to_str().unwrap()]);
        assert_all_pass(code, &report);
    }
}

/// Every file under `dir`, recursively.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_host_that_dies_at_initialize_is_told_whether_its_stderr_says_why() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body, says) in [
        (
            "silent.sh",
            "#!/bin/sh\nread -r line\nexit 3\n",
            "exited with status 3; it wrote nothing on stderr",
        ),
        (
            "talks.sh",
            "#!/bin/sh\nread -r line\necho 'boom: config missing' >&2\nexit 3\n",
            "exited with status 3; its stderr (below) may say why",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let (code, report) = check(&[], &[path.to_str().unwrap()]);
        assert_eq!(code, 1, "{name}: {report:#}");
        let detail = check_rule(&report, "initialize")["detail"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(detail.contains(says), "{name}: {detail}");
    }
}

/// Issue 27, item 10: a newcomer's first steps. `plugin new` run in a directory that is not
/// the config's prints paths that hold from the config's directory (absolute), and
/// `plugin check NAME` before the host is in the config exits 78 naming the form that
/// checks a host by its path.
#[test]
fn plugin_new_then_check_from_another_directory() {
    let p = Project::new();
    p.write_config(&p.config());
    let elsewhere = tempfile::tempdir().unwrap();
    let out = agent_runner(
        elsewhere.path(),
        &[
            "plugin", "new", "--lang", "python", "--family", "detector", "--dir", ".", "fresh",
        ],
    );
    let told = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{told}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The host is not in the config yet: 78, and the way to check it by path.
    let early = p.run(&["plugin", "check", "fresh"]);
    assert_eq!(early.code(), 78, "{early}");
    assert!(
        early
            .stderr
            .contains("plugin check --provides FAMILY -- PATH"),
        "{early}"
    );
    // The printed `command = ["…"]` line, pasted into the config as it is, names the
    // executable `plugin new` built.
    let command = told
        .lines()
        .find_map(|l| l.trim().strip_prefix("command = [\""))
        .and_then(|rest| rest.strip_suffix("\"]"))
        .unwrap_or_else(|| panic!("no command line in {told}"));
    let built = elsewhere.path().join("fresh/fresh.pyz");
    assert!(Path::new(command).is_absolute(), "{told}");
    assert_eq!(
        std::fs::canonicalize(command).unwrap(),
        std::fs::canonicalize(&built).unwrap()
    );
    let checked = format!("agent-runner plugin check -- {command}");
    assert!(told.contains(&checked), "{told}");
    p.write_config(
        &p.config().host(
            HostSpec::new("fresh", command)
                .provides(&["detector"])
                .pin(agent_runner_e2e::Pin::OfFile(built)),
        ),
    );
    let out = p.run(&["plugin", "check", "fresh"]);
    out.assert_code(0);
}
