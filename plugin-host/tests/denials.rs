//! Named seccomp denials (`spawn_with_listener`) on the real kernel: the supervisor learns
//! which system call stopped a host, the call never runs, the host dies, and the host never
//! holds its own listener. Nothing here is skipped.

mod common;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use agent_runner_plugin_host::common::notify::{DENIAL_SIGNAL, KILL_GRACE};
use agent_runner_plugin_host::{spawn_with_listener, DenialListener, Denied, Tier};
use common::*;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;

const FULL: Tier = Tier::LandlockSeccomp;
const T: Duration = Duration::from_secs(20);

/// Starts the probe target with a listener (stdin left open).
fn start(args: &[&str], tier: Tier) -> (Child, Option<DenialListener>, Dirs) {
    let d = dirs();
    let spec = spec_for(&target(), &d, args, tier);
    let (child, listener) = spawn_with_listener(&spec).unwrap();
    (child, listener, d)
}

/// Waits for the first denial and then for the host's end; returns both and its stdout.
async fn denial_and_exit(
    mut child: Child,
    mut listener: DenialListener,
) -> (Denied, ExitStatus, String) {
    let denied = tokio::time::timeout(T, listener.next_denial())
        .await
        .expect("no denial reported")
        .unwrap();
    let mut out = String::new();
    let mut stdout = child.stdout.take().unwrap();
    let st = tokio::time::timeout(T, async {
        stdout.read_to_string(&mut out).await.unwrap();
        child.wait().await.unwrap()
    })
    .await
    .expect("host not killed after the denial");
    // Once the host is reaped nobody uses the filter: the listener thread ends.
    let end = tokio::time::timeout(T, listener.next_denial())
        .await
        .expect("listener did not end after the host was reaped");
    assert_eq!(end.unwrap_err().kind(), ErrorKind::UnexpectedEof);
    (denied, st, out)
}

#[tokio::test]
async fn tcp_connect_is_named_socket_and_never_connects() {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let port = tcp.local_addr().unwrap().port().to_string();
    let (mut child, listener, d) = start(&["gated-tcp-connect", &port], FULL);
    let pid = child.id().unwrap();
    // The host waits on stdin: it is alive while its pid is read.
    let host = host_pid(pid);
    child.stdin.take().unwrap().write_all(b"go").await.unwrap();
    let listener = listener.expect("seccomp applied, so a listener");
    assert_eq!(listener.pgid(), pid);
    let (denied, st, out) = denial_and_exit(child, listener).await;
    assert_eq!(denied.name, "socket");
    assert_eq!(denied.nr, libc::SYS_socket);
    assert_eq!(denied.pid, host);
    assert_eq!(denied.args[0], libc::AF_INET as u64);
    // The host is its PID namespace's init, which ignores SIGSYS from outside: the
    // listener kills it with SIGKILL; the denial report is what names the kill.
    assert_eq!(st.signal(), Some(denial_signal()), "{st:?} {out}");
    assert_eq!(DENIAL_SIGNAL, SIGSYS);
    assert!(out.contains("start tcp-connect"), "{out}");
    assert!(!out.contains("tcp-connect-"), "the call returned: {out}");
    assert_eq!(
        tcp.accept().unwrap_err().kind(),
        ErrorKind::WouldBlock,
        "listener saw a connection"
    );
    // RLIMIT_CORE=0: the SIGSYS left no core file.
    assert_eq!(std::fs::read_dir(&d.work).unwrap().count(), 0);
}

#[tokio::test]
async fn denied_calls_are_named() {
    for (action, name, nr) in [
        ("ptrace", "ptrace", libc::SYS_ptrace),
        ("io_uring", "io_uring_setup", libc::SYS_io_uring_setup),
        ("bpf", "bpf", libc::SYS_bpf),
        ("udp", "socket", libc::SYS_socket),
        ("personality", "personality", libc::SYS_personality),
    ] {
        let (child, listener, _d) = start(&[action], FULL);
        let (denied, st, out) = denial_and_exit(child, listener.unwrap()).await;
        assert_eq!((denied.name, denied.nr), (name, nr), "{action}: {out}");
        assert_eq!(st.signal(), Some(denial_signal()), "{action}: {st:?} {out}");
        assert!(out.contains(&format!("start {action}")), "{action}: {out}");
        // The denied call never returned to the host.
        assert!(!out.contains(&format!("{action} ")), "{action}: {out}");
    }
}

#[tokio::test]
async fn x32_guard_still_kills_without_a_name() {
    let (mut child, listener, _d) = start(&["x32-socket"], FULL);
    let mut listener = listener.unwrap();
    let st = tokio::time::timeout(T, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st.signal(), Some(SIGSYS));
    assert_eq!(listener.try_denial(), None);
    let end = tokio::time::timeout(T, listener.next_denial())
        .await
        .unwrap();
    assert_eq!(end.unwrap_err().kind(), ErrorKind::UnexpectedEof);
}

#[tokio::test]
async fn a_host_ignoring_sigsys_is_still_killed_and_never_connects() {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let port = tcp.local_addr().unwrap().port().to_string();
    let (mut child, listener, _d) = start(&["sigsys-ignored-tcp-connect", &port], FULL);
    let mut listener = listener.unwrap();
    // Poll only the child: the denial must already be queued when its exit is seen.
    let st = tokio::time::timeout(T, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st.signal(), Some(denial_signal()), "{st:?}");
    let denied = listener
        .try_denial()
        .expect("denial queued before the kill");
    assert_eq!(denied.name, "socket");
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    assert!(!out.contains("tcp-connect-"), "{out}");
    assert_eq!(tcp.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
    assert!(KILL_GRACE < Duration::from_secs(1));
}

#[tokio::test]
async fn a_child_leaving_the_group_is_named_and_killed_too() {
    let (mut child, listener, _d) = start(&["setsid-child-socket"], FULL);
    let host = child.id().unwrap();
    let mut listener = listener.unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut grandchild = 0u32;
    let mut out = Vec::new();
    let st = tokio::time::timeout(T, async {
        while let Some(l) = lines.next_line().await.unwrap() {
            if let Some(p) = l.strip_prefix("forked ") {
                grandchild = p.parse().unwrap();
            }
            out.push(l);
        }
        child.wait().await.unwrap()
    })
    .await
    .unwrap();
    let denied = listener.try_denial().expect("denial reported");
    // setsid() itself is denied (docs/security.md): the child never leaves the group.
    assert_eq!(denied.name, "setsid");
    // The host prints the child's pid in its own namespace (2: the host is 1); the
    // notification carries the child's pid in ours.
    // The host may be killed before it prints the fork line (the grandchild's denial can
    // come first); when it did print it, the pid is the namespace's second.
    assert!(grandchild == 2 || grandchild == 0, "{out:?}");
    assert_ne!(denied.pid, host, "{out:?}");
    assert!(
        !out.iter().any(|l| l.starts_with("child-survived")),
        "{out:?}"
    );
    assert!(st.signal().is_some(), "{st:?} {out:?}");
}

#[tokio::test]
async fn dropping_the_listener_still_kills_on_denial() {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let port = tcp.local_addr().unwrap().port().to_string();
    let (mut child, listener, _d) = start(&["tcp-connect", &port], FULL);
    drop(listener);
    let st = tokio::time::timeout(T, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st.signal(), Some(denial_signal()), "{st:?}");
    assert_eq!(tcp.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
}

fn fd_links(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .map(|e| {
            std::fs::read_link(e.unwrap().path())
                .map(|l| l.display().to_string())
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test]
async fn the_host_does_not_hold_its_listener() {
    let (mut child, listener, _d) = start(&["threads"], FULL);
    let listener = listener.unwrap();
    let pid = child.id().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(T, async {
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
    let pid = host_pid(pid);
    let links = fd_links(pid);
    assert!(links.len() >= 3, "{links:?}");
    assert!(
        !links.iter().any(|l| l.contains("seccomp notify")),
        "host holds a listener: {links:?}"
    );
    // The filter is in force on every thread.
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let status = std::fs::read_to_string(t.unwrap().path().join("status")).unwrap();
        assert!(status.contains("Seccomp:\t2"), "{status}");
    }
    // ... and the supervisor does hold one.
    assert!(fd_links(std::process::id())
        .iter()
        .any(|l| l == "anon_inode:seccomp notify"));
    // A normal end: no denial.
    drop(child.stdin.take());
    let st = tokio::time::timeout(T, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(st.success(), "{st:?}");
    let mut listener = listener;
    assert_eq!(listener.try_denial(), None);
}

#[tokio::test]
async fn normal_hosts_work_and_meet_no_notification() {
    // Allowed calls, including those that meet a conditional deny rule (socketpair(AF_UNIX),
    // personality query), run normally: the filter allows them without a user notification
    // (any notification would have killed the host). Their cost is measured through real
    // confined hosts by bench/host_call.sh, not here.
    for action in ["ok", "unix-pair", "cwd"] {
        let (mut child, listener, _d) = start(&[action], FULL);
        drop(child.stdin.take());
        let out = tokio::time::timeout(T, child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{action}: {:?} {text}", out.status);
        assert!(!text.contains("-err"), "{action}: {text}");
        assert_eq!(listener.unwrap().try_denial(), None);
    }
}

#[tokio::test]
async fn no_listener_without_seccomp() {
    for tier in [Tier::Landlock, Tier::Unconfined] {
        let (mut child, listener, _d) = start(&["ok"], tier);
        assert!(listener.is_none(), "{tier}");
        drop(child.stdin.take());
        let st = tokio::time::timeout(T, child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(st.success());
    }
    // Seccomp only: a listener.
    let (mut child, listener, _d) = start(&["bpf"], Tier::Seccomp);
    let st = tokio::time::timeout(T, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st.signal(), Some(denial_signal()));
    assert_eq!(listener.unwrap().try_denial().unwrap().name, "bpf");
}

/// Every other test of this file again, with the test binary running as an unprivileged
/// user (user + PID namespaces, `RLIMIT_NPROC` instead of root's PID namespace and `pids`
/// cgroup).
#[test]
fn all_of_the_above_as_an_unprivileged_user() {
    agent_runner_e2e::rerun_as_unprivileged_user("all_of_the_above_as_an_unprivileged_user");
}

/// `DenialListener::start_answering` (the agent's mode, docs/security.md "Denials told,
/// not silent"): a notified call fails with the errno given, the caller goes on, and every
/// call is reported by name. The filter is a thread of this test's own (seccomp filters are
/// per thread), so nothing else in the process is affected.
#[tokio::test]
async fn answering_listener_fails_the_call_and_the_caller_goes_on() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let (fd_tx, fd_rx) = std::sync::mpsc::channel::<i32>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let caller = std::thread::spawn(move || {
        // ld nr; jeq mount → USER_NOTIF; else ALLOW.
        let prog = [
            libc::sock_filter {
                code: 0x20,
                jt: 0,
                jf: 0,
                k: 0,
            },
            libc::sock_filter {
                code: 0x15,
                jt: 0,
                jf: 1,
                k: libc::SYS_mount as u32,
            },
            libc::sock_filter {
                code: 0x06,
                jt: 0,
                jf: 0,
                k: 0x7fc0_0000,
            },
            libc::sock_filter {
                code: 0x06,
                jt: 0,
                jf: 0,
                k: 0x7fff_0000,
            },
        ];
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr() as *mut _,
        };
        // SAFETY: prctl and seccomp read the live program; they affect this thread only.
        let listener = unsafe {
            assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                &fprog as *const libc::sock_fprog,
            )
        };
        assert!(listener >= 0, "{}", std::io::Error::last_os_error());
        fd_tx.send(listener as i32).unwrap();
        go_rx.recv().unwrap();
        let mut results = Vec::new();
        for _ in 0..2 {
            // SAFETY: mount with null arguments; the filter stops it before the kernel looks.
            let r =
                unsafe { libc::syscall(libc::SYS_mount, 0usize, 0usize, 0usize, 0usize, 0usize) };
            results.push((r, std::io::Error::last_os_error().raw_os_error()));
        }
        results
    });
    let fd = fd_rx.recv().unwrap();
    // SAFETY: the listener descriptor the thread made; nobody else owns it.
    let listener = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut denials =
        DenialListener::start_answering(listener, 0, libc::EPERM, &[], Box::new(|_| true)).unwrap();
    go_tx.send(()).unwrap();
    for _ in 0..2 {
        let d = tokio::time::timeout(T, denials.next_denial())
            .await
            .expect("no denial reported")
            .unwrap();
        assert_eq!((d.name, d.nr), ("mount", libc::SYS_mount));
    }
    let results = caller.join().unwrap();
    assert_eq!(results, [(-1, Some(libc::EPERM)), (-1, Some(libc::EPERM))]);
}

/// The agent's own program (`agent_seccomp_program`) on the real kernel, installed in a
/// thread of this test with its listener serviced as the supervisor does
/// (`AgentConfinement::denial_listener`): `socket(AF_UNIX)` and `clone(CLONE_NEWUSER)` fail
/// with `EPERM` and are reported with their argument, `socketpair` works, `clone3` fails
/// with `ENOSYS` unreported, a TCP and a UDP `connect` run and are observed with their
/// address and kind. With both switches on (the control) the same `socket` and `clone3`
/// calls are not refused.
#[tokio::test]
async fn the_agent_program_refuses_unix_sockets_and_namespaces_and_observes_connects() {
    use agent_runner_plugin_host::agent::policy::{
        agent_seccomp_program, denial_target, AgentSeccompSwitches, AGENT_DENY_ERRNO,
        AGENT_SECCOMP_OBSERVE,
    };
    use agent_runner_plugin_host::Observed;
    use std::os::fd::{FromRawFd, OwnedFd};

    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    // Each call's raw result and errno, made under the program of `switches`.
    type Results = Vec<(&'static str, i64, Option<i32>)>;
    let run = |switches: AgentSeccompSwitches| {
        let (fd_tx, fd_rx) = std::sync::mpsc::channel::<i32>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let caller = std::thread::spawn(move || -> Results {
            let program = agent_seccomp_program(switches).unwrap();
            let insns = program.instructions();
            let fprog = libc::sock_fprog {
                len: insns.len() as u16,
                filter: insns.as_ptr() as *mut _,
            };
            // SAFETY: prctl and seccomp read the live program; they affect this thread only.
            let listener = unsafe {
                assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                    &fprog as *const libc::sock_fprog,
                )
            };
            assert!(listener >= 0, "{}", std::io::Error::last_os_error());
            fd_tx.send(listener as i32).unwrap();
            go_rx.recv().unwrap();
            let errno = || std::io::Error::last_os_error().raw_os_error();
            let mut results = Vec::new();
            // SAFETY: socket takes integers; the descriptor is closed below.
            let unix = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
            results.push(("socket(AF_UNIX)", i64::from(unix), errno()));
            let mut pair = [-1; 2];
            // SAFETY: socketpair writes two descriptors into the live array.
            let r =
                unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, pair.as_mut_ptr()) };
            results.push(("socketpair", i64::from(r), errno()));
            // clone3 with a too-small size: where it is let through the kernel answers
            // EINVAL, and nothing is created either way.
            // SAFETY: clone3 with a null argument and size 0 creates nothing.
            let r = unsafe { libc::syscall(libc::SYS_clone3, 0usize, 0usize) };
            results.push(("clone3", r, errno()));
            // clone(CLONE_NEWUSER) with an invalid exit signal's companion flag (CLONE_THREAD
            // without CLONE_SIGHAND): the kernel would refuse it with EINVAL, the filter
            // first with EPERM; nothing is created either way.
            let flags = (libc::CLONE_NEWUSER | libc::CLONE_THREAD) as u64;
            // SAFETY: an invalid clone creates nothing.
            let r =
                unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
            results.push(("clone(CLONE_NEWUSER)", r, errno()));
            let tcp_conn = std::net::TcpStream::connect(("127.0.0.1", port));
            results.push(("tcp connect", i64::from(tcp_conn.is_ok()), None));
            let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let udp_conn = udp.connect(("127.0.0.1", 9));
            results.push(("udp connect", i64::from(udp_conn.is_ok()), None));
            for fd in [unix, pair[0], pair[1]] {
                if fd >= 0 {
                    // SAFETY: descriptors this thread made above.
                    unsafe { libc::close(fd) };
                }
            }
            results
        });
        let fd = fd_rx.recv().unwrap();
        // SAFETY: the listener descriptor the thread made; nobody else owns it.
        let listener = unsafe { OwnedFd::from_raw_fd(fd) };
        let denials = DenialListener::start_answering(
            listener,
            0,
            AGENT_DENY_ERRNO,
            AGENT_SECCOMP_OBSERVE,
            Box::new(|_| true),
        )
        .unwrap();
        go_tx.send(()).unwrap();
        (caller.join().unwrap(), denials)
    };

    let (results, mut denials) = run(AgentSeccompSwitches::default());
    let eperm = Some(libc::EPERM);
    assert_eq!(results[0].1, -1, "{results:?}");
    assert_eq!(results[0].2, eperm, "{results:?}");
    assert_eq!(results[1].1, 0, "socketpair: {results:?}");
    assert_eq!((results[2].1, results[2].2), (-1, Some(libc::ENOSYS)));
    assert_eq!((results[3].1, results[3].2), (-1, eperm));
    assert_eq!(results[4].1, 1, "the TCP connect ran: {results:?}");
    assert_eq!(results[5].1, 1, "the UDP connect ran: {results:?}");
    let mut targets = Vec::new();
    while let Some(d) = denials.try_denial() {
        targets.push(denial_target(d.nr, &d.args));
    }
    assert_eq!(targets, ["socket(AF_UNIX)", "clone(CLONE_NEWUSER)"]);
    let mut observed = Vec::new();
    while let Some(Observed::Connect { address, tcp, .. }) = denials.try_observed() {
        observed.push((address.to_string(), tcp));
    }
    assert_eq!(
        observed,
        [
            (format!("127.0.0.1:{port}"), true),
            ("127.0.0.1:9".to_owned(), false)
        ]
    );

    // The control: both switches on.
    let (results, mut denials) = run(AgentSeccompSwitches {
        unix_sockets: true,
        user_namespaces: true,
    });
    assert!(results[0].1 >= 0, "socket(AF_UNIX): {results:?}");
    assert_eq!(results[2].2, Some(libc::EINVAL), "clone3: {results:?}");
    assert_eq!(results[3].2, Some(libc::EINVAL), "clone: {results:?}");
    assert_eq!(denials.try_denial(), None);
}
