//! Nothing outlives a host (`docs/protocol.md` §8: a host "dies together with every process it started"):
//! the host is PID 1 of its own PID namespace, so a child that left its process group with
//! `setsid()` still dies with it; and its number of tasks is bounded by its `pids` cgroup.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use agent_runner_plugin_host::{spawn, Tier};
use common::*;
use tokio::io::{AsyncBufReadExt, BufReader};

const FULL: Tier = Tier::LandlockSeccomp;

/// Pids of live (non-zombie) processes whose argv contains `marker`.
fn with_marker(marker: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if !zombie && cmdline.split(|b| *b == 0).any(|a| a == marker.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// Waits (generously) until no process carries `marker`.
async fn wait_none(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !with_marker(marker).is_empty() {
        assert!(
            Instant::now() < deadline,
            "still alive: {:?}",
            with_marker(marker)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn host_is_pid_1_of_its_own_namespace_and_proc_self_still_resolves() {
    let (st, out, err, _) = run_target(&["pid-view"], Tier::Unconfined).await;
    assert!(st.success(), "{st:?} {out} {err}");
    // Inside: pid 1, no visible parent. /proc is the supervisor's mount, so /proc/self
    // (and /dev/fd/N for script hosts) names the host by its outer pid.
    let line = out.lines().find(|l| l.starts_with("pid ")).unwrap();
    let f: Vec<&str> = line.split(' ').collect();
    assert_eq!((f[1], f[3]), ("1", "0"), "{line}");
    let outer: i32 = f[5].parse().unwrap();
    assert!(outer > 1, "{line}");
}

#[tokio::test]
async fn an_orphaned_grandchild_dies_with_the_host() {
    let d = dirs();
    let marker = format!("ar-lifetime-{}", std::process::id());
    let spec = spec_for(&target(), &d, &["orphan-sleeper", &marker], FULL);
    let mut child = spawn(&spec).unwrap();
    let group = child.id().unwrap();
    let pid = host_pid(group) as i32;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let nspid = status.lines().find(|l| l.starts_with("NSpid:")).unwrap();
    assert_eq!(nspid.split_whitespace().last(), Some("1"), "{nspid}");

    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(20), async {
        while lines.next_line().await.unwrap().as_deref() != Some("ready") {}
    })
    .await
    .unwrap();
    let procs = with_marker(&marker);
    assert_eq!(procs.len(), 2, "{procs:?}");
    // Only the host itself is killed, not its group: the kernel takes the rest of its PID
    // namespace with it.
    // SAFETY: kill takes integers.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let st = child.wait().await.unwrap();
    assert_eq!(st.signal(), Some(libc::SIGKILL));
    wait_none(&marker).await;
}

#[tokio::test]
async fn a_fork_bomb_is_bounded_by_pids_max() {
    let d = dirs();
    let mut spec = spec_for(&target(), &d, &["fork-until-refused"], FULL);
    spec.pids_max = 16;
    let (st, out, err) = run_spec(&spec).await;
    assert!(st.success(), "{st:?} {out} {err}");
    let line = out.lines().find(|l| l.starts_with("forks ")).unwrap();
    assert_eq!(
        line, "forks 15 errno 11",
        "the host itself plus 15 children; EAGAIN"
    );
}

/// Every other test of this file again, with the test binary running as an unprivileged
/// user (user + PID namespaces, `RLIMIT_NPROC` instead of root's PID namespace and `pids`
/// cgroup).
#[test]
fn all_of_the_above_as_an_unprivileged_user() {
    agent_runner_e2e::rerun_as_unprivileged_user("all_of_the_above_as_an_unprivileged_user");
}
