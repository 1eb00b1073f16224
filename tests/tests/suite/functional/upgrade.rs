//! `upgrade --binary PATH [--no-restart]` on a real detached `serve` (docs/operations.md,
//! "upgrade"). Each test installs a copy of the real binary in its own `bin/` directory and
//! runs that copy (the binary `upgrade` replaces is the one running it). A "new" working
//! binary is the real one with bytes appended (an ELF runs the same with trailing bytes,
//! but its bytes and sha256 differ); broken ones are real scripts that exec the real
//! binary except for the step they fail. A build is a pair: each binary has the
//! `plugin-host` launcher of its build beside it, and `upgrade` swaps both or neither.

use agent_runner_e2e::{
    agent_runner_bin, plugin_host_bin, sha256_hex, unprivileged_user, wait_until, ConfigBuilder,
    Operator, Project, RunOutput,
};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A copy of the real `plugin-host` in `dir`: the launcher of the build beside it.
fn launcher_in(dir: &Path) {
    std::fs::copy(plugin_host_bin(), dir.join("plugin-host")).unwrap();
}

/// `<tmp>/bin/agent-runner`: a copy of the real binary, the "installed" one, with its
/// launcher; builds written as scripts in `<tmp>` get one beside them too.
fn install_copy(p: &Project) -> PathBuf {
    let bin = p.tmp_dir().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let installed = bin.join("agent-runner");
    std::fs::copy(agent_runner_bin(), &installed).unwrap();
    launcher_in(&bin);
    launcher_in(p.tmp_dir());
    installed
}

/// `<tmp>/new/agent-runner`: the real binary with `marker` appended (runs the same, other
/// bytes), and its launcher.
fn padded_copy(p: &Project, marker: &str) -> PathBuf {
    let dir = p.tmp_dir().join("new");
    std::fs::create_dir_all(&dir).unwrap();
    launcher_in(&dir);
    let path = dir.join("agent-runner");
    let mut bytes = std::fs::read(agent_runner_bin()).unwrap();
    bytes.extend_from_slice(marker.as_bytes());
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A script at `<tmp>/<name>` that exits 1 when its arguments hold `fail_on`, else execs the
/// real binary.
fn broken(p: &Project, name: &str, fail_on: &str) -> PathBuf {
    p.script(
        name,
        &format!(
            "#!/bin/sh\ncase \" $* \" in *\" {fail_on} \"*) echo \"broken build: no {fail_on}\" >&2; exit 1;; esac\nexec '{}' \"$@\"\n",
            agent_runner_bin().display()
        ),
    )
}

/// Runs `<installed> --config <project config> ARGS…` as the project's operator would.
fn run_installed(p: &Project, installed: &Path, args: &[&str]) -> RunOutput {
    let mut cmd = Command::new(installed);
    cmd.arg("--config")
        .arg(p.config_path())
        .args(args)
        .current_dir(p.dir())
        .env("HOME", p.home())
        .env_remove("XDG_STATE_HOME")
        .env_remove("AGENT_RUNNER_LOG");
    p.run_with(cmd)
}

/// The pid `status --json` reports, when a supervisor runs.
fn serve_pid(p: &Project) -> Option<u32> {
    let out = p.run(&["status", "--json"]);
    let doc: Value = serde_json::from_str(&out.stdout).ok()?;
    doc["pid"].as_u64().map(|p| p as u32)
}

/// What `/proc/<pid>/exe` names.
fn exe_of(pid: u32) -> String {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .unwrap()
        .display()
        .to_string()
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// A project whose serve runs short rounds, started from `installed`; returns its pid.
fn start_serve(p: &Project, installed: &Path) -> u32 {
    p.write_config(
        &ConfigBuilder::new(p.agent_path())
            .agent_env("DEMO_AGENT_SLEEP", "1")
            .round_budget_s(60),
    );
    run_installed(p, installed, &["start"]).assert_code(0);
    let pid = serve_pid(p).expect("serve runs");
    assert_eq!(exe_of(pid), installed.display().to_string());
    pid
}

fn stop_serve(p: &Project) {
    p.run(&["kill"]).assert_code(0);
    wait_until("serve ends", Duration::from_secs(30), || {
        serve_pid(p).is_none().then_some(())
    });
}

fn report(out: &RunOutput) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn upgrade_swaps_the_binary_and_restarts_serve_on_it() {
    let p = Project::new();
    let installed = install_copy(&p);
    let old_sha = sha256_hex(&installed);
    let new = padded_copy(&p, "\nupgrade e2e: build 2\n");
    let first = start_serve(&p, &installed);
    let out = run_installed(
        &p,
        &installed,
        &["upgrade", "--binary", new.to_str().unwrap(), "--json"],
    );
    out.assert_code(0);
    let doc = report(&out);
    assert_eq!(doc["outcome"], "upgraded", "{out}");
    assert_eq!(doc["service"], "serve");
    let second = serve_pid(&p).expect("serve runs after the upgrade");
    assert_ne!(first, second, "a new serve: {out}");
    assert_eq!(doc["pid"], second);
    // The new bytes are installed, the old kept beside them, nothing else left behind.
    assert_eq!(sha256_hex(&installed), sha256_hex(&new));
    let previous = installed.with_file_name("agent-runner.previous");
    assert_eq!(sha256_hex(&previous), old_sha);
    assert_eq!(doc["previous"], previous.display().to_string());
    assert_eq!(
        names_in(installed.parent().unwrap()),
        [
            "agent-runner",
            "agent-runner.previous",
            "plugin-host",
            "plugin-host.previous"
        ]
    );
    // The new serve runs the new file (the installed path), the old one is gone.
    assert_eq!(exe_of(second), installed.display().to_string());
    assert!(!Path::new(&format!("/proc/{first}")).exists());
    let events = p.events_of("service_upgraded");
    assert_eq!(events.len(), 1, "{}", p.events_text());
    assert_eq!(events[0]["pid"], second);
    assert_eq!(events[0]["to_version"], doc["to_version"]);
    assert!(events[0]["duration_s"].as_f64().unwrap() > 0.0);
    // The new serve goes on running rounds.
    let before = p.events_of("round_end").len();
    wait_until("a round of the new serve", Duration::from_secs(60), || {
        (p.events_of("round_end").len() > before).then_some(())
    });
    stop_serve(&p);
}

#[test]
fn a_new_binary_that_dies_at_serve_start_is_rolled_back() {
    let p = Project::new();
    let installed = install_copy(&p);
    let old_sha = sha256_hex(&installed);
    let dies = broken(&p, "dies-at-serve", "serve");
    let first = start_serve(&p, &installed);
    let out = run_installed(
        &p,
        &installed,
        &["upgrade", "--binary", dies.to_str().unwrap(), "--json"],
    );
    out.assert_code(1);
    let doc = report(&out);
    assert_eq!(doc["outcome"], "rolled_back", "{out}");
    assert!(
        doc["reason"]
            .as_str()
            .unwrap()
            .contains("broken build: no serve"),
        "{out}"
    );
    // The old bytes are back and a serve runs them again.
    assert_eq!(sha256_hex(&installed), old_sha);
    let again = serve_pid(&p).expect("serve runs again after the rollback");
    assert_ne!(again, first);
    assert_eq!(doc["pid"], again);
    assert_eq!(exe_of(again), installed.display().to_string());
    let rolled = p.events_of("service_upgrade_rolled_back");
    assert_eq!(rolled.len(), 1, "{}", p.events_text());
    assert_eq!(rolled[0]["pid"], again);
    assert!(rolled[0]["failure_reason"]
        .as_str()
        .unwrap()
        .contains("exited during start-up"));
    assert!(p.events_of("service_upgraded").is_empty());
    stop_serve(&p);
}

#[test]
fn upgrade_refuses_before_the_swap_and_changes_nothing() {
    let p = Project::new();
    let installed = install_copy(&p);
    let bin = installed.parent().unwrap().to_owned();
    let old_sha = sha256_hex(&installed);
    let first = start_serve(&p, &installed);
    let no_doctor = broken(&p, "no-doctor", "doctor");
    let no_version = broken(&p, "no-version", "--version");
    let not_exec = p.tmp_dir().join("not-exec");
    std::fs::copy(agent_runner_bin(), &not_exec).unwrap();
    std::fs::set_permissions(&not_exec, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = p.tmp_dir().join("link-to-installed");
    std::os::unix::fs::symlink(&installed, &link).unwrap();
    let identical = p.tmp_dir().join("identical");
    std::fs::copy(&installed, &identical).unwrap();
    let cases: [(&Path, &str); 6] = [
        (
            &no_doctor,
            "doctor: exit status: 1 (broken build: no doctor)",
        ),
        (&no_version, "--version: exit status: 1"),
        (&not_exec, "is not executable"),
        (&link, "is the installed binary itself"),
        (&identical, "has the same bytes"),
        (Path::new("/nonexistent/agent-runner"), "cannot open"),
    ];
    for (binary, why) in cases {
        let out = run_installed(
            &p,
            &installed,
            &["upgrade", "--binary", binary.to_str().unwrap(), "--json"],
        );
        out.assert_code(3);
        let doc = report(&out);
        assert_eq!(doc["outcome"], "refused");
        assert!(
            doc["reason"].as_str().unwrap().contains(why),
            "{why}: {out}"
        );
        assert_eq!(sha256_hex(&installed), old_sha);
        assert_eq!(
            names_in(&bin),
            ["agent-runner", "plugin-host"],
            "nothing left behind"
        );
        assert_eq!(serve_pid(&p), Some(first), "serve untouched");
    }
    // Another upgrade holds the directory's lock: flock(1) takes it, then its command
    // says so.
    let locked = p.tmp_dir().join("flock-holds-the-lock");
    let mut holder = Command::new("flock")
        .args(["-n", bin.to_str().unwrap(), "sh", "-c"])
        .arg("touch \"$0\" && exec sleep 60")
        .arg(&locked)
        .spawn()
        .expect("flock(1) is missing: run tests/setup.sh");
    wait_until("flock(1) to hold the lock", Duration::from_secs(10), || {
        locked.exists().then_some(())
    });
    let new = padded_copy(&p, "\nbuild 2\n");
    let out = run_installed(
        &p,
        &installed,
        &["upgrade", "--binary", new.to_str().unwrap()],
    );
    let _ = holder.kill();
    let _ = holder.wait();
    out.assert_code(3);
    assert!(out.stdout.contains("another upgrade"), "{out}");
    assert_eq!(sha256_hex(&installed), old_sha);
    // A serve running another binary than the one asked to upgrade.
    let other = p.tmp_dir().join("other/agent-runner");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::copy(agent_runner_bin(), &other).unwrap();
    launcher_in(other.parent().unwrap());
    let out = run_installed(&p, &other, &["upgrade", "--binary", new.to_str().unwrap()]);
    out.assert_code(3);
    assert!(
        out.stdout
            .contains(&format!("runs {}", installed.display())),
        "{out}"
    );
    let none = [
        "service_upgraded",
        "package_upgraded",
        "service_upgrade_rolled_back",
    ];
    assert!(
        none.iter().all(|k| p.events_of(k).is_empty()),
        "{}",
        p.events_text()
    );
    stop_serve(&p);
}

#[test]
fn no_restart_swaps_only_and_the_running_serve_keeps_the_old_binary() {
    let p = Project::new();
    let installed = install_copy(&p);
    let old_sha = sha256_hex(&installed);
    let new = padded_copy(&p, "\nbuild 3\n");
    let first = start_serve(&p, &installed);
    let out = run_installed(
        &p,
        &installed,
        &[
            "upgrade",
            "--binary",
            new.to_str().unwrap(),
            "--no-restart",
            "--json",
        ],
    );
    out.assert_code(0);
    assert_eq!(report(&out)["outcome"], "swapped", "{out}");
    assert_eq!(sha256_hex(&installed), sha256_hex(&new));
    assert_eq!(
        sha256_hex(&installed.with_file_name("agent-runner.previous")),
        old_sha
    );
    assert_eq!(serve_pid(&p), Some(first), "not restarted");
    // It still runs the old inode, now unlinked from the installed path.
    assert_eq!(exe_of(first), format!("{} (deleted)", installed.display()));
    let events = p.events_of("package_upgraded");
    assert_eq!(events.len(), 1, "{}", p.events_text());
    assert_eq!(events[0]["restart_deferred"], true);
    stop_serve(&p);
}

/// A full disk mid-copy: the installed binary's directory is a tmpfs (in a private mount
/// namespace) with room for the installed binary and not for a second, larger one. The
/// staged copy fails with ENOSPC; the upgrade is refused (exit 3), the partial copy is
/// removed and the installed bytes are untouched.
#[test]
fn a_full_disk_mid_copy_refuses_and_leaves_the_installed_binary_whole() {
    let p = Project::new();
    p.write_config(&ConfigBuilder::new(p.agent_path()));
    let real = agent_runner_bin();
    let size = std::fs::metadata(&real).unwrap().len();
    let new = padded_copy(&p, &"x".repeat(1 << 20));
    let bin = p.tmp_dir().join("small-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let installed = bin.join("agent-runner");
    let launcher = plugin_host_bin();
    let launcher_size = std::fs::metadata(&launcher).unwrap().len();
    // Room for the installed pair and half of the new binary.
    let room = size + launcher_size + size / 2;
    let script = format!(
        "set -e\n\
         mount -t tmpfs -o size={room} tmpfs '{bin}'\n\
         cp '{real}' '{installed}'\n\
         cp '{launcher}' '{bin}/plugin-host'\n\
         echo before=$(sha256sum '{installed}' | cut -d' ' -f1)\n\
         rc=0; '{installed}' --config '{config}' upgrade --binary '{new}' --json >'{tmp}/up.json' || rc=$?\n\
         echo rc=$rc\n\
         echo after=$(sha256sum '{installed}' | cut -d' ' -f1)\n\
         echo names=$(ls -A '{bin}' | tr '\\n' ' ')\n",
        bin = bin.display(),
        real = real.display(),
        launcher = launcher.display(),
        installed = installed.display(),
        config = p.config_path().display(),
        new = new.display(),
        tmp = p.tmp_dir().display(),
    );
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .current_dir(p.dir())
        .env("HOME", p.home())
        .output()
        .expect("unshare (util-linux) is missing: run tests/setup.sh");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key}= in {stdout}"))
            .trim()
            .to_owned()
    };
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(p.tmp_dir().join("up.json")).unwrap())
            .unwrap();
    assert_eq!(value("rc"), "3", "{doc}");
    assert_eq!(doc["outcome"], "refused");
    assert!(
        doc["reason"]
            .as_str()
            .unwrap()
            .contains("No space left on device"),
        "{doc}"
    );
    assert_eq!(value("after"), value("before"));
    assert_eq!(
        value("names"),
        "agent-runner plugin-host",
        "the partial copy is removed"
    );
}

/// The installed binary's directory is not writable by the operator (root's, mode 0755;
/// `upgrade` run as the unprivileged test user): refused before anything is written
/// (exit 3, the directory and the cause named), the installed file untouched.
#[test]
fn an_unwritable_directory_is_refused_before_anything_is_written() {
    let p = Project::new_as(Operator::Unprivileged);
    p.write_config(&ConfigBuilder::new(p.agent_path()));
    let new = padded_copy(&p, "\nbuild 4\n");
    let dir = tempfile::Builder::new()
        .prefix("ar-e2e-upgrade-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let installed = dir.path().join("agent-runner");
    std::fs::copy(agent_runner_bin(), &installed).unwrap();
    launcher_in(dir.path());
    let old_sha = sha256_hex(&installed);
    let mut cmd = unprivileged_user().command(&installed);
    cmd.arg("--config")
        .arg(p.config_path())
        .args(["upgrade", "--binary", new.to_str().unwrap(), "--json"])
        .current_dir(p.dir());
    let out = p.run_with(cmd);
    out.assert_code(3);
    let reason = report(&out)["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.contains(&format!("cannot write in {}", dir.path().display()))
            && reason.contains("Permission denied"),
        "{out}"
    );
    assert_eq!(sha256_hex(&installed), old_sha);
    assert_eq!(names_in(dir.path()), ["agent-runner", "plugin-host"]);
}

/// A hostile neighbour swaps the symbolic link `--binary` names while the new build is
/// being checked (here, deterministically: the checked build re-points the link itself when
/// its `--version` runs). What is checked is the staged copy, and the staged copy is what
/// is installed: the link's new target never is. `.previous` is the old inode (its mode and
/// owner), and the installed file keeps the installed mode, not the source's.
#[test]
fn a_link_swapped_during_the_checks_installs_the_checked_bytes() {
    let p = Project::new();
    p.write_config(&ConfigBuilder::new(p.agent_path()));
    let installed = install_copy(&p);
    std::fs::set_permissions(&installed, std::fs::Permissions::from_mode(0o750)).unwrap();
    let old_sha = sha256_hex(&installed);
    let old_meta = std::fs::metadata(&installed).unwrap();
    let link = p.tmp_dir().join("new-build");
    let evil = p.script(
        "evil-build",
        &format!(
            "#!/bin/sh\n# not the checked build\nexec '{}' \"$@\"\n",
            agent_runner_bin().display()
        ),
    );
    let good = p.script(
        "good-build",
        &format!(
            "#!/bin/sh\ncase \" $* \" in *\" --version \"*) ln -sfn '{}' '{}';; esac\nexec '{}' \"$@\"\n",
            evil.display(),
            link.display(),
            agent_runner_bin().display()
        ),
    );
    std::os::unix::fs::symlink(&good, &link).unwrap();
    let good_sha = sha256_hex(&good);
    let out = run_installed(
        &p,
        &installed,
        &[
            "upgrade",
            "--binary",
            link.to_str().unwrap(),
            "--no-restart",
            "--json",
        ],
    );
    out.assert_code(0);
    assert_eq!(report(&out)["outcome"], "swapped", "{out}");
    // The link was swapped during the checks...
    assert_eq!(std::fs::read_link(&link).unwrap(), evil);
    // ...and the checked bytes are installed, not the link's new target.
    assert_eq!(sha256_hex(&installed), good_sha);
    assert_ne!(sha256_hex(&installed), sha256_hex(&evil));
    let meta = std::fs::metadata(&installed).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o750);
    let previous = installed.with_file_name("agent-runner.previous");
    let prev_meta = std::fs::metadata(&previous).unwrap();
    assert_eq!(sha256_hex(&previous), old_sha);
    use std::os::unix::fs::MetadataExt;
    assert_eq!(prev_meta.ino(), old_meta.ino(), "the old inode, not a copy");
    assert_eq!(prev_meta.permissions().mode() & 0o7777, 0o750);
    assert_eq!(
        (prev_meta.uid(), prev_meta.gid()),
        (old_meta.uid(), old_meta.gid())
    );
}

/// A new build that passes `--version` and `doctor`, answers `status`, and dies 2 s into
/// `serve`: the 3 s settle (docs/operations.md, "upgrade") catches it and the old binary is
/// put back and runs again.
#[test]
fn a_new_binary_whose_serve_dies_after_two_seconds_is_rolled_back() {
    let p = Project::new();
    let installed = install_copy(&p);
    let old_sha = sha256_hex(&installed);
    let dies = p.script(
        "dies-after-2s",
        &format!(
            "#!/bin/sh\ncase \" $* \" in *\" serve \"*) exec timeout -s KILL 2 '{0}' \"$@\";; esac\nexec '{0}' \"$@\"\n",
            agent_runner_bin().display()
        ),
    );
    let first = start_serve(&p, &installed);
    let out = run_installed(
        &p,
        &installed,
        &["upgrade", "--binary", dies.to_str().unwrap(), "--json"],
    );
    out.assert_code(1);
    let doc = report(&out);
    assert_eq!(doc["outcome"], "rolled_back", "{out}");
    assert!(
        doc["reason"].as_str().unwrap().contains("during start-up"),
        "{out}"
    );
    assert_eq!(sha256_hex(&installed), old_sha);
    let again = serve_pid(&p).expect("serve runs again after the rollback");
    assert_ne!(again, first);
    assert_eq!(exe_of(again), installed.display().to_string());
    // Still up well past the 2 s the failed build lived.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(serve_pid(&p), Some(again));
    assert_eq!(p.events_of("service_upgrade_rolled_back").len(), 1);
    assert!(p.events_of("service_upgraded").is_empty());
    stop_serve(&p);
}
