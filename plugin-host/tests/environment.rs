//! The host's environment is only the `docs/protocol.md` §8 allowlist. (A separate test binary because
//! it changes this process's environment.)

mod common;

use agent_runner_plugin_host::Tier;
use common::*;

#[tokio::test]
async fn host_sees_only_the_allowlist() {
    // Edition 2021: set_var is safe; this file holds a single test, so no concurrent readers.
    std::env::set_var("SECRET_API_TOKEN", "hunter2");
    std::env::set_var("LC_TESTVAR", "C");
    let (st, out, err, d) = run_target(&["env"], Tier::LandlockSeccomp).await;
    assert!(st.success(), "{st:?} {out} {err}");
    assert!(!out.contains("hunter2") && !out.contains("SECRET"), "{out}");
    let mut names = Vec::new();
    for line in out.lines().skip(1) {
        let (k, v) = line.split_once('=').unwrap();
        names.push(k.to_owned());
        match k {
            "TMPDIR" => assert_eq!(v, d.tmp.display().to_string()),
            "AGENT_RUNNER_HOST" => assert_eq!(v, "test-host"),
            "AGENT_RUNNER_PROTOCOL" => assert_eq!(v, "1"),
            "LC_TESTVAR" => assert_eq!(v, "C"),
            "PATH" | "HOME" | "LANG" | "TZ" => {
                assert_eq!(Some(v.to_owned()), std::env::var(k).ok())
            }
            k if k.starts_with("LC_") => {}
            other => panic!("unexpected variable {other} in the host environment"),
        }
    }
    for must in [
        "TMPDIR",
        "AGENT_RUNNER_HOST",
        "AGENT_RUNNER_PROTOCOL",
        "LC_TESTVAR",
        "PATH",
    ] {
        assert!(names.iter().any(|n| n == must), "{must} missing: {names:?}");
    }
}

/// Every other test of this file again, with the test binary running as an unprivileged
/// user (user + PID namespaces, `RLIMIT_NPROC` instead of root's PID namespace and `pids`
/// cgroup).
#[test]
fn all_of_the_above_as_an_unprivileged_user() {
    agent_runner_e2e::rerun_as_unprivileged_user("all_of_the_above_as_an_unprivileged_user");
}
