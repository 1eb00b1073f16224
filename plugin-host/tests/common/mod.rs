//! Shared helpers for the plugin-host integration tests (real processes, real kernel).
#![allow(dead_code)]

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use agent_runner_plugin_host::{open_and_hash, spawn, LaunchSpec, Tier};

/// SIGSYS: what a seccomp KILL_PROCESS looks like to the parent.
pub const SIGSYS: i32 = 31;
/// EACCES.
pub const EACCES: i32 = 13;

/// Makes the built `plugin-host` the launcher of this test process.
pub fn use_launcher() {
    agent_runner_plugin_host::Launcher::use_path(agent_runner_e2e::plugin_host_bin());
}

/// The test helper program (src/bin/ar-test-probe-target.rs).
pub fn target() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ar-test-probe-target"))
}

/// The four directories of a host, in a fresh temporary root.
pub struct Dirs {
    pub root: tempfile::TempDir,
    pub work: PathBuf,
    pub log: PathBuf,
    pub state: PathBuf,
    pub tmp: PathBuf,
}

pub fn dirs() -> Dirs {
    use_launcher();
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    let log = root.path().join("log");
    std::fs::create_dir(&work).unwrap();
    std::fs::create_dir(&log).unwrap();
    // state and tmp are created by spawn().
    let state = root.path().join("state");
    let tmp = root.path().join("tmp");
    Dirs {
        work,
        log,
        state,
        tmp,
        root,
    }
}

pub fn spec_for(exe: &Path, d: &Dirs, args: &[&str], tier: Tier) -> LaunchSpec {
    use_launcher();
    let mut s = LaunchSpec::new(
        "test-host",
        open_and_hash(exe).unwrap(),
        &d.work,
        &d.log,
        &d.state,
        &d.tmp,
    );
    s.args = args.iter().map(OsString::from).collect();
    s.confine = tier;
    s
}

/// Runs a host to completion (stdin closed at once) and returns status, stdout, stderr.
pub async fn run_spec(spec: &LaunchSpec) -> (ExitStatus, String, String) {
    let mut child = spawn(spec).unwrap();
    drop(child.stdin.take());
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("host did not finish within 30 s")
        .unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the probe target with `args` at `tier` in fresh directories.
pub async fn run_target(args: &[&str], tier: Tier) -> (ExitStatus, String, String, Dirs) {
    let d = dirs();
    let spec = spec_for(&target(), &d, args, tier);
    let (st, out, err) = run_spec(&spec).await;
    (st, out, err, d)
}

/// Asserts the host started (its marker line was printed) and was then killed by seccomp.
pub fn assert_killed_by_seccomp(action: &str, st: ExitStatus, out: &str, err: &str) {
    assert!(
        out.contains(&format!("start {action}")),
        "{action}: host did not start: stdout={out:?} stderr={err:?}"
    );
    assert_eq!(
        st.signal(),
        Some(SIGSYS),
        "{action}: expected SIGSYS kill, got {st:?}; stdout={out:?} stderr={err:?}"
    );
}

/// The pid of the host itself for the spawned child `pid`: `pid`, or when the launch went
/// through a user namespace (an unprivileged supervisor), the reaper's only child, PID 1
/// of the new PID namespace (see `agent_runner_plugin_host::common::user_namespace`).
pub fn host_pid(pid: u32) -> u32 {
    let is_init = |p: u32| {
        std::fs::read_to_string(format!("/proc/{p}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("NSpid:"))
                    .map(|ids| ids.split_whitespace().last() == Some("1"))
            })
            .unwrap_or(false)
    };
    // The reaper forks the host after it starts: right after the spawn it may have no child
    // yet, so wait (a loaded machine has taken several milliseconds) rather than guess.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if is_init(pid) {
            return pid;
        }
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        let children: Vec<u32> = children
            .split_whitespace()
            .filter_map(|c| c.parse().ok())
            .collect();
        if let [only] = children.as_slice() {
            if is_init(*only) {
                return *only;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{pid} is neither a PID namespace's init nor the reaper of one"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// The signal a host killed after a named seccomp denial ends with, as its parent sees it.
/// As root the host is its PID namespace's init, which ignores the listener's SIGSYS, so
/// SIGKILL ends it. Unprivileged, the parent sees the reaper, which dies of the SIGSYS sent
/// to the host's process group (see `agent_runner_plugin_host::common::user_namespace`).
pub fn denial_signal() -> i32 {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        libc::SIGKILL
    } else {
        SIGSYS
    }
}
