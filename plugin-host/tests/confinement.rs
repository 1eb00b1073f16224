//! Real confinement on the real kernel: the host programs run under Landlock + seccomp and
//! the tests check what they can and cannot do. Nothing here is skipped: on a machine
//! without Landlock or seccomp these tests fail.

mod common;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use agent_runner_plugin_host::{kill_group, probe, spawn, LaunchError, Tier};
use common::*;
use tokio::io::{AsyncBufReadExt, BufReader};

const FULL: Tier = Tier::LandlockSeccomp;

#[test]
fn probe_reports_landlock_and_seccomp_here() {
    let caps = probe();
    assert_eq!(caps.tier(), Tier::LandlockSeccomp, "{caps:?}");
    assert!(caps.landlock_abi.unwrap() >= 6, "{caps:?}");
    assert!(caps.seccomp);
    assert_eq!(caps.unconfined_reason, None);
}

#[tokio::test]
async fn unconfined_baseline_runs_and_reports_cwd() {
    let (st, out, err, d) = run_target(&["cwd"], FULL).await;
    assert!(st.success(), "{st:?} {out} {err}");
    assert!(out.contains(&d.work.display().to_string()), "{out}");
    let (st, out, _, _) = run_target(&["ok"], Tier::Unconfined).await;
    assert!(st.success() && out.contains("\nok"), "{out}");
}

#[tokio::test]
async fn tcp_connect_is_killed_and_never_reaches_the_listener() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let (st, out, err, d) = run_target(&["tcp-connect", &port], FULL).await;
    assert_killed_by_seccomp("tcp-connect", st, &out, &err);
    assert!(!out.contains("tcp-connect-"), "{out}");
    let e = listener.accept().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock, "listener saw a connection");
    // RLIMIT_CORE=0: the SIGSYS kill left no core file in work_dir.
    assert_eq!(std::fs::read_dir(&d.work).unwrap().count(), 0);
}

#[tokio::test]
async fn tiers_select_layers() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();

    // Landlock only: socket() is allowed, connect() is denied by the TCP rule (ABI >= 4).
    let (st, out, err, _) = run_target(&["tcp-connect", &port], Tier::Landlock).await;
    assert!(st.success(), "{st:?} {out} {err}");
    assert!(out.contains(&format!("tcp-connect-err {EACCES}")), "{out}");
    assert_eq!(listener.accept().unwrap_err().kind(), ErrorKind::WouldBlock);

    // seccomp only: killed.
    let (st, out, err, _) = run_target(&["tcp-connect", &port], Tier::Seccomp).await;
    assert_killed_by_seccomp("tcp-connect", st, &out, &err);

    // Unconfined: the connection goes through.
    let (st, out, err, _) = run_target(&["tcp-connect", &port], Tier::Unconfined).await;
    assert!(
        st.success() && out.contains("tcp-connect-ok"),
        "{out} {err}"
    );
    listener.set_nonblocking(false).unwrap();
    listener.accept().unwrap();

    // seccomp only: the filesystem is not restricted.
    let (_, out, _, _) = run_target(&["read", "/etc/passwd"], Tier::Seccomp).await;
    assert!(out.contains("read-ok"), "{out}");
}

#[tokio::test]
async fn other_socket_families_are_killed_unix_is_allowed() {
    for action in ["udp", "netlink"] {
        let (st, out, err, _) = run_target(&[action], FULL).await;
        assert_killed_by_seccomp(action, st, &out, &err);
    }
    let (st, out, err, _) = run_target(&["unix-pair"], FULL).await;
    assert!(
        st.success() && out.contains("unix-pair-ok"),
        "{st:?} {out} {err}"
    );
}

#[tokio::test]
async fn denied_syscalls_kill_the_host() {
    for action in ["ptrace", "io_uring", "bpf", "x32-socket"] {
        let (st, out, err, _) = run_target(&[action], FULL).await;
        assert_killed_by_seccomp(action, st, &out, &err);
    }
    // personality: the query is allowed, a change kills.
    let (st, out, err, _) = run_target(&["personality"], FULL).await;
    assert!(out.contains("personality-query"), "{out}");
    assert!(!out.contains("personality-set"), "{out}");
    assert_killed_by_seccomp("personality", st, &out, &err);
}

#[tokio::test]
async fn filesystem_rules() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "secret").unwrap();

    let d = dirs();
    let inside = d.work.join("readme.txt");
    std::fs::write(&inside, "hello").unwrap();
    let logf = d.log.join("events.jsonl");
    std::fs::write(&logf, "{}").unwrap();

    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["read".into(), secret.display().to_string()],
            format!("read-err {EACCES}"),
        ),
        (
            vec!["read".into(), "/etc/passwd".into()],
            format!("read-err {EACCES}"),
        ),
        (
            vec!["read".into(), inside.display().to_string()],
            "read-ok".into(),
        ),
        (
            vec!["read".into(), logf.display().to_string()],
            "read-ok".into(),
        ),
        (
            vec!["write".into(), d.work.join("new").display().to_string()],
            format!("write-err {EACCES}"),
        ),
        (
            vec!["write".into(), inside.display().to_string()],
            format!("write-err {EACCES}"),
        ),
        (
            vec!["write".into(), logf.display().to_string()],
            format!("write-err {EACCES}"),
        ),
        (
            vec!["write".into(), d.state.join("s").display().to_string()],
            "write-ok".into(),
        ),
        (
            vec!["write".into(), d.tmp.join("t").display().to_string()],
            "write-ok".into(),
        ),
        (
            vec!["mkdir".into(), d.state.join("sub").display().to_string()],
            "mkdir-ok".into(),
        ),
        (
            vec!["mkdir".into(), d.work.join("sub").display().to_string()],
            format!("mkdir-err {EACCES}"),
        ),
        (vec!["exec-sh".into()], format!("exec-sh-err {EACCES}")),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let spec = spec_for(&target(), &d, &args, FULL);
        let (st, out, err) = run_spec(&spec).await;
        assert!(st.success(), "{args:?}: {st:?} {out} {err}");
        assert!(
            out.contains(&want),
            "{args:?}: want {want:?}, got {out:?} {err:?}"
        );
    }
    assert_eq!(std::fs::read(d.state.join("s")).unwrap(), b"x");
    assert!(d.state.join("sub").is_dir());
    assert!(!d.work.join("new").exists());
    assert_eq!(std::fs::read(&inside).unwrap(), b"hello");
}

#[tokio::test]
async fn signals_outside_the_host_are_denied() {
    let me = std::process::id().to_string();
    let (st, out, err, _) = run_target(&["signal", &me], FULL).await;
    assert!(st.success(), "{st:?} {out} {err}");
    // The host's own PID namespace makes outside pids unaddressable (ESRCH); Landlock's
    // signal scope (EPERM) is the second layer for a host launched without one.
    assert!(out.contains(&format!("signal -1 {}", libc::ESRCH)), "{out}");
}

#[tokio::test]
async fn every_thread_is_confined_and_limits_apply() {
    let d = dirs();
    let spec = spec_for(&target(), &d, &["threads"], FULL);
    let mut child = spawn(&spec).unwrap();
    let pid = child.id().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(l) = lines.next_line().await.unwrap() {
            if l == "ready" {
                return true;
            }
        }
        false
    })
    .await
    .unwrap();
    assert!(ready);

    let group = pid;
    let pid = host_pid(pid);
    let mut tasks = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let status = std::fs::read_to_string(t.unwrap().path().join("status")).unwrap();
        assert!(status.contains("NoNewPrivs:\t1"), "{status}");
        assert!(status.contains("Seccomp:\t2"), "{status}");
        // No capability in any set, root or not (docs/security.md "Capabilities").
        for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
            assert!(
                status.contains(&format!("{set}:\t0000000000000000")),
                "{set}: {status}"
            );
        }
        tasks += 1;
    }
    assert_eq!(tasks, 4, "main thread + 3 spawned");

    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let row = |name: &str| {
        limits
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing: {limits}"))
            .split_whitespace()
            .rev()
            .skip(1)
            .take(2)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("Max core file size"), ["0", "0"]);
    assert_eq!(row("Max open files"), ["256", "256"]);
    assert_eq!(row("Max address space"), ["1073741824", "1073741824"]);

    // Its own IPC and UTS namespaces: no System V object or host name is shared.
    for ns in ["ipc", "uts"] {
        let theirs = std::fs::read_link(format!("/proc/{pid}/ns/{ns}")).unwrap();
        let ours = std::fs::read_link(format!("/proc/self/ns/{ns}")).unwrap();
        assert_ne!(theirs, ours, "{ns}");
    }

    // Its own process group.
    // SAFETY: getpgid reads another process's group id.
    assert_eq!(unsafe { libc::getpgid(pid as i32) }, group as i32);

    kill_group(group).unwrap();
    let st = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st.signal(), Some(libc::SIGKILL));
    // An exited group is not an error.
    kill_group(group).unwrap();
}

#[tokio::test]
async fn replaced_file_runs_the_original_bytes() {
    let d = dirs();
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host");
    let original = std::fs::read(target()).unwrap();
    std::fs::write(&host, &original).unwrap();
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).unwrap();

    let spec = spec_for(&host, &d, &["ok"], FULL);
    assert_eq!(
        spec.exe.sha256,
        agent_runner_plugin_host::Sha256Pin::of_bytes(&original)
    );
    assert!(spec.exe.interpreter.is_none());

    // Swap the path for a different program (atomic rename, like an attacker or an update).
    let evil = dir.path().join("evil");
    std::fs::write(&evil, "#!/bin/sh\necho replaced\n").unwrap();
    std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&evil, &host).unwrap();

    // Full confinement: the Landlock rule for the host file is added through the verified
    // descriptor, so it names the original inode, not the file now at the path.
    let (st, out, err) = run_spec(&spec).await;
    assert!(st.success(), "{st:?} {out} {err}");
    assert!(
        out.contains("start ok") && !out.contains("replaced"),
        "{out}"
    );
}

#[tokio::test]
async fn replaced_script_runs_the_original_bytes() {
    // A `#!` host: the interpreter reads the verified descriptor as /dev/fd/N (which
    // resolves through /proc/self although the host is in its own PID namespace), never
    // the path, so a script swapped in after the hash does not run.
    let d = dirs();
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host.sh");
    let original = "#!/bin/sh\necho original-script \"$0\"\n";
    std::fs::write(&host, original).unwrap();
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = spec_for(&host, &d, &[], FULL);
    assert_eq!(
        spec.exe.sha256,
        agent_runner_plugin_host::Sha256Pin::of_bytes(original.as_bytes())
    );
    assert!(spec.exe.interpreter.is_some());

    let evil = dir.path().join("evil.sh");
    std::fs::write(&evil, "#!/bin/sh\necho replaced\n").unwrap();
    std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&evil, &host).unwrap();

    let (st, out, err) = run_spec(&spec).await;
    assert!(st.success(), "{st:?} {out} {err}");
    assert!(out.starts_with("original-script /dev/fd/"), "{out} {err}");
    assert!(!out.contains("replaced"), "{out}");
}

#[tokio::test]
async fn in_place_modification_is_refused() {
    let d = dirs();
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host");
    std::fs::copy(target(), &host).unwrap();
    let spec = spec_for(&host, &d, &["ok"], FULL);
    std::thread::sleep(Duration::from_millis(20));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&host)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"\x7fELF"))
        .unwrap();
    match spawn(&spec) {
        Err(LaunchError::Modified { host, .. }) => assert_eq!(host, "test-host"),
        other => panic!("expected Modified, got {other:?}"),
    }
}

#[tokio::test]
async fn shell_script_host_runs_under_full_confinement() {
    let d = dirs();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("host.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"sh-host $AGENT_RUNNER_HOST $1\"\ncat /etc/passwd >/dev/null 2>&1 || echo no-passwd\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = spec_for(&script, &d, &["arg1"], FULL);
    let interp = spec.exe.interpreter.clone().expect("a #! script");
    assert_eq!(
        interp.path,
        std::path::Path::new("/bin/sh").canonicalize().unwrap()
    );
    assert!(interp.args.is_empty());
    let (st, out, err) = run_spec(&spec).await;
    assert!(st.success(), "{st:?} {out} {err}");
    // `cat` cannot even be executed (no execute right), so the fallback prints.
    assert_eq!(out, "sh-host test-host arg1\nno-passwd\n", "stderr: {err}");
}

#[tokio::test]
async fn python_env_script_host_starts_under_full_confinement() {
    let d = dirs();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("host.py");
    std::fs::write(
        &script,
        "#!/usr/bin/env python3\nimport os, sys, json\n\
         print('py-host', os.environ['AGENT_RUNNER_HOST'], sys.argv[1:], json.dumps([1]))\n\
         try:\n    open('/etc/passwd').read()\n    print('passwd-readable')\n\
         except PermissionError:\n    print('passwd-denied')\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = spec_for(&script, &d, &["x"], FULL);
    let interp = spec.exe.interpreter.clone().expect("a #! script");
    // As root, python3 on PATH is a pyenv shim (a bash script) and the real interpreter is
    // resolved; the unprivileged user's PATH reaches the system python3.
    let expected = if agent_runner_e2e::unprivileged::is_rerun() {
        "/usr/bin/"
    } else {
        "/root/.pyenv/versions/"
    };
    assert!(
        interp.path.starts_with(expected),
        "{}",
        interp.path.display()
    );
    let (st, out, err) = run_spec(&spec).await;
    assert!(st.success(), "{st:?} {out} {err}");
    assert_eq!(
        out, "py-host test-host ['x'] [1]\npasswd-denied\n",
        "stderr: {err}"
    );
}

#[test]
fn policy_writes_only_state_and_tmp_and_executes_only_host_interpreter_loader() {
    use agent_runner_plugin_host::common::landlock::FsAccess;
    use agent_runner_plugin_host::host::policy::{fs_grants, SECCOMP_ALLOW};
    let d = dirs();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("host.py");
    std::fs::write(&script, "#!/usr/bin/env python3\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = agent_runner_plugin_host::open_and_hash(&script).unwrap();
    let grants = fs_grants(&exe, &d.work, &d.log, &d.state, &d.tmp, &[]);
    let interp = exe.interpreter.as_ref().unwrap();
    for g in &grants {
        assert!(!g.why.is_empty());
        match g.access {
            FsAccess::ReadWrite => assert!(g.path == d.state || g.path == d.tmp, "{g:?}"),
            FsAccess::Device => assert_eq!(g.path, std::path::Path::new("/dev/null")),
            FsAccess::ReadExecute => assert!(
                g.path == exe.path
                    || g.path == interp.path
                    || g.path.file_name().unwrap() == "ld-linux-x86-64.so.2",
                "{g:?}"
            ),
            FsAccess::ReadOnly => {}
            FsAccess::ReadExecuteTree | FsAccess::ReadWriteExecute => {
                panic!("a host never gets the agent's kinds of grant: {g:?}")
            }
        }
    }
    // The interpreter's private prefix (pyenv, as root) or its stdlib (the system python3
    // the unprivileged user's PATH reaches) is readable, not all of /usr or /root.
    let prefix = interp.path.parent().unwrap().parent().unwrap();
    assert!(grants.iter().any(|g| g.path == prefix
        || (prefix == std::path::Path::new("/usr") && g.path.starts_with("/usr/lib/python3"))));
    assert!(
        !grants
            .iter()
            .any(|g| g.path == std::path::Path::new("/usr")
                || g.path == std::path::Path::new("/root"))
    );
    assert!(!SECCOMP_ALLOW.iter().any(|a| a.nr == libc::SYS_clone3));
}

/// Every other test of this file again, with the test binary running as an unprivileged
/// user (user + PID namespaces, `RLIMIT_NPROC` instead of root's PID namespace and `pids`
/// cgroup).
#[test]
fn all_of_the_above_as_an_unprivileged_user() {
    agent_runner_e2e::rerun_as_unprivileged_user("all_of_the_above_as_an_unprivileged_user");
}

/// A listening pathname socket in a fresh directory outside every grant, open to all
/// (0777), as a system bus or container daemon socket would be.
fn open_unix_listener() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::os::unix::net::UnixListener,
) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let path = dir.path().join("bus.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    listener.set_nonblocking(true).unwrap();
    (dir, path, listener)
}

#[tokio::test]
async fn unix_sockets_exist_only_as_stream_pairs() {
    let (_dir, path, listener) = open_unix_listener();
    let path = path.to_str().unwrap();
    // socket(AF_UNIX) fails with EACCES (glibc's nscd lookups fall back on it).
    let (st, out, err, _) = run_target(&["unix-socket", path], FULL).await;
    assert!(st.success(), "{st:?} {out} {err}");
    assert!(out.contains(&format!("unix-socket-err {EACCES}")), "{out}");
    // A stream pair works (tokio, asyncio, libuv); a datagram pair, or pointing a pair's
    // end at an address, is killed.
    let (st, out, err, _) = run_target(&["unix-pair"], FULL).await;
    assert!(
        st.success() && out.contains("unix-pair-ok"),
        "{st:?} {out} {err}"
    );
    let (st, out, err, _) = run_target(&["unix-dgram-pair"], FULL).await;
    assert_killed_by_seccomp("unix-dgram-pair", st, &out, &err);
    let (st, out, err, _) = run_target(&["unix-pair-connect", path], FULL).await;
    assert_killed_by_seccomp("unix-pair-connect", st, &out, &err);
    let (st, out, err, d) = run_target(&["unix-pair-bind", "state/own.sock"], FULL).await;
    assert_killed_by_seccomp("unix-pair-bind", st, &out, &err);
    assert!(!d.state.join("own.sock").exists());
    // Nothing ever reached the listener.
    let e = listener.accept().unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::WouldBlock,
        "the listener saw a connection"
    );
}

#[tokio::test]
async fn writes_are_bounded_per_file_and_tmpdir_in_total() {
    let d = dirs();
    let mib = 1 << 20;
    // Per file: RLIMIT_FSIZE, EFBIG (SIGXFSZ is ignored), the file stops at the limit.
    let big = d.root.path().join("state/big");
    let mut spec = spec_for(
        &target(),
        &d,
        &["write-size", big.to_str().unwrap(), &(3 * mib).to_string()],
        FULL,
    );
    spec.file_max_mb = 1;
    let (st, out, err) = run_spec(&spec).await;
    assert!(st.success(), "{st:?} {out} {err}");
    assert!(out.contains("write-size-err 27"), "EFBIG: {out}");
    assert_eq!(std::fs::metadata(&big).unwrap().len(), mib as u64);
    // TMPDIR in total: a private tmpfs of tmp_max_mb; ENOSPC once it is full.
    let mut spec = spec_for(
        &target(),
        &d,
        &[
            "write-many",
            d.tmp.to_str().unwrap(),
            &(mib / 2).to_string(),
            "64",
        ],
        FULL,
    );
    spec.tmp_max_mb = 2;
    let (st, out, err) = run_spec(&spec).await;
    assert!(st.success(), "{st:?} {out} {err}");
    assert!(out.contains("write-many-err 28"), "ENOSPC: {out}");
    let files: usize = out
        .lines()
        .find_map(|l| l.strip_prefix("files "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(files, 4, "2 MiB hold four half-MiB files: {out}");
    // The tmpfs lived in the host's own mount namespace: nothing reached the disk.
    assert_eq!(std::fs::read_dir(&d.tmp).unwrap().count(), 0);
}

/// The same script host, started twice from one verification, in each interpreter that
/// may read its script through the inherited descriptor (Perl does; the others reopen
/// `/dev/fd/N`): each run prints what only the verified bytes say.
#[tokio::test]
async fn script_hosts_run_their_verified_bytes_in_every_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let scripts = [
        ("perl", "#!/usr/bin/perl\nprint \"ran perl\\n\";\n"),
        ("bash", "#!/bin/bash\necho ran bash\n"),
        ("sh", "#!/bin/sh\necho ran sh\n"),
        ("python3", "#!/usr/bin/env python3\nprint('ran python3')\n"),
        // asyncio's event loop makes its wake-up channel with socketpair(AF_UNIX).
        (
            "python3-asyncio",
            "#!/usr/bin/env python3\nimport asyncio\nasync def main():\n    await asyncio.sleep(0)\n    print('ran python3-asyncio')\nasyncio.run(main())\n",
        ),
        ("node", "#!/usr/bin/env node\nconsole.log('ran node')\n"),
    ];
    for (name, text) in scripts {
        let d = dirs();
        let script = dir.path().join(format!("host-{name}"));
        std::fs::write(&script, text).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Node's start-up reads system files outside this policy (the runtime grants are
        // separate work); the offset under test does not depend on Landlock.
        let tier = if name == "node" { Tier::Seccomp } else { FULL };
        let spec = spec_for(&script, &d, &[], tier);
        for run in 0..2 {
            let (st, out, err) = run_spec(&spec).await;
            assert!(st.success(), "{name} run {run}: {st:?} {out} {err}");
            assert_eq!(out, format!("ran {name}\n"), "{name} run {run}: {err}");
        }
    }
}
