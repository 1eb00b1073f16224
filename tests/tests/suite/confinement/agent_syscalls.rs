//! The agent's seccomp program on a real `agent-runner round` under `[agent.sandbox] mode =
//! "require"` (issue 37 item 5, issue 41 item 1; docs/security.md "UNIX sockets and new
//! namespaces", "Denials told, not silent"), root and the unprivileged user `ar-e2e`:
//!
//! - a UNIX socket to a pathname socket outside every grant (a listener of this test) is
//!   refused at `socket(AF_UNIX)` and recorded; `socketpair` works; with
//!   `unix_sockets = true` (the control) the listener receives the agent's bytes;
//! - `unshare -U`, a raw `clone(CLONE_NEWUSER)` and `clone3` are refused (`clone3` with
//!   `ENOSYS`, unrecorded; the others recorded), threads still start; with
//!   `user_namespaces = true` (the control) each makes its namespace, though not its id
//!   maps (files under `/proc` Landlock does not let it write);
//! - headless Chromium needs `unix_sockets` (its process singleton) and runs under ours
//!   with its own sandbox off; its own sandbox cannot be built, with the switch or without;
//! - a TCP connect to `127.0.0.1:<port>` where this test listens, the port not in
//!   `connect_ports`, is refused by Landlock and told as `agent_egress_refused` (layer
//!   `landlock`, the address and port) in the event and `round`'s summary; a UDP connect
//!   to the same port and a TCP connect to a listed port work and record nothing.

use agent_runner_e2e::{Operator, Project};
use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The agent: each attempt prints `<name> <outcome>` to its round log.
const AGENT: &str = r#"#!/bin/bash
py() { /usr/bin/python3 -c "$@"; }
printf 'unix_connect %s\n' "$(py '
import os, socket
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["UNIX_PATH"])
    s.sendall(b"agent-bytes")
    s.close()
    print("succeeded")
except OSError as e:
    print("denied", e.errno)
')"
printf 'socketpair %s\n' "$(py '
import socket
a, b = socket.socketpair()
a.sendall(b"x")
print("ok" if b.recv(1) == b"x" else "broken")
')"
printf 'unshare %s\n' "$(unshare -U true >/dev/null 2>&1 && echo succeeded || echo denied)"
printf 'unshare_map %s\n' "$(unshare -r true 2>&1 | grep -o 'uid_map: Permission denied' || echo succeeded)"
printf 'clone_newuser %s\n' "$(py '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
pid = libc.syscall(56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
if pid == 0:
    os._exit(0)
if pid < 0:
    print("denied", ctypes.get_errno())
else:
    os.waitpid(pid, 0)
    print("succeeded")
')"
printf 'clone3_newuser %s\n' "$(py '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
# struct clone_args: flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls
args = (ctypes.c_uint64 * 8)(0x10000000, 0, 0, 0, 17, 0, 0, 0)
pid = libc.syscall(435, ctypes.byref(args), ctypes.sizeof(args))
if pid == 0:
    os._exit(0)
if pid < 0:
    print("denied", ctypes.get_errno())
else:
    os.waitpid(pid, 0)
    print("succeeded")
')"
printf 'threads %s\n' "$(py '
import threading
out = []
ts = [threading.Thread(target=out.append, args=(i,)) for i in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print("ok" if sorted(out) == [0, 1, 2, 3] else "broken")
')"
printf 'tcp_closed %s\n' "$(py '
import os, socket
try:
    socket.create_connection(("127.0.0.1", int(os.environ["CLOSED"])), timeout=5).close()
    print("succeeded")
except OSError as e:
    print("denied", e.errno)
')"
printf 'udp_closed %s\n' "$(py '
import os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("127.0.0.1", int(os.environ["CLOSED"])))
s.send(b"u")
print("sent")
')"
printf 'tcp_open %s\n' "$(py '
import os, socket
try:
    socket.create_connection(("127.0.0.1", int(os.environ["OPEN"])), timeout=5).close()
    print("succeeded")
except OSError as e:
    print("denied", e.errno)
')"
printf 'write_bashrc %s\n' "$( (echo evil >> "$HOME/.bashrc") 2>/dev/null && echo succeeded || echo denied)"
printf 'mkdir_home %s\n' "$(mkdir "$HOME/planted" 2>/dev/null && echo succeeded || echo denied)"
printf 'write_tree %s\n' "$(echo work > notes.md && echo succeeded || echo denied)"
printf 'read_npmrc %s\n' "$(cat "$HOME/.npmrc" >/dev/null 2>&1 && echo succeeded || echo denied)"
ln -s "$HOME/.npmrc" npmrc-link
printf 'read_link %s\n' "$(cat npmrc-link >/dev/null 2>&1 && echo succeeded || echo denied)"
printf 'read_bashrc %s\n' "$(cat "$HOME/.bashrc" >/dev/null 2>&1 && echo succeeded || echo denied)"
exit 0
"#;

/// Serves `listener` (a UNIX or TCP listener) in a thread, counting the connections it
/// accepts (`accept` takes the next one).
fn count_connections<L: Send + 'static, S: Read + 'static>(
    listener: L,
    accept: fn(&L) -> std::io::Result<S>,
) -> Arc<AtomicUsize> {
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        while let Ok(mut conn) = accept(&listener) {
            count.fetch_add(1, Ordering::SeqCst);
            let mut sink = Vec::new();
            let _ = conn.read_to_end(&mut sink);
        }
    });
    accepted
}

/// What one round of [`AGENT`] saw and what the test's listeners got.
struct Seen {
    p: Project,
    results: std::collections::BTreeMap<String, String>,
    unix_accepted: Arc<AtomicUsize>,
    tcp_closed_accepted: Arc<AtomicUsize>,
    closed: u16,
    stderr: String,
}

/// Runs one round of [`AGENT`] as `operator` with `switches` (lines of `[agent.sandbox]`).
fn round(operator: Operator, switches: &str) -> Seen {
    let p = Project::new_as(operator);
    // A pathname socket outside every grant, which the operator's user may write (as an
    // ssh agent's or a docker group member's socket is).
    let sockets = tempfile::Builder::new()
        .prefix("ar-e2e-sock-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(sockets.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let unix_path = sockets.path().join("operator.sock");
    let unix = UnixListener::bind(&unix_path).unwrap();
    std::fs::set_permissions(&unix_path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let unix_accepted = count_connections(unix, |l| l.accept().map(|(s, _)| s));
    let closed = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    let tcp_closed_accepted = count_connections(closed, |l| l.accept().map(|(s, _)| s));
    let _udp = UdpSocket::bind(("127.0.0.1", closed_port)).unwrap();
    let open = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let open_port = open.local_addr().unwrap().port();
    let _open_accepted = count_connections(open, |l| l.accept().map(|(s, _)| s));
    std::fs::write(p.home().join(".bashrc"), "# the operator's\n").unwrap();
    std::fs::write(
        p.home().join(".npmrc"),
        "//registry.npmjs.org/:_authToken=npm_x\n",
    )
    .unwrap();
    let agent = p.script("agent/syscalls-agent.sh", AGENT);
    let text = agent_runner_e2e::ConfigBuilder::new(&agent)
        .round_budget_s(60)
        .agent_env("UNIX_PATH", unix_path.to_str().unwrap())
        .agent_env("CLOSED", &closed_port.to_string())
        .agent_env("OPEN", &open_port.to_string())
        .render()
        .replacen(
            "[runtime]\n",
            &format!(
                "[agent.sandbox]\nmode = \"require\"\nconnect_ports = [{open_port}]\n{switches}\n[runtime]\n"
            ),
            1,
        );
    p.write_config_text(&text);
    let out = p.run(&["round"]);
    let events = p.events_text();
    assert_eq!(out.code(), 0, "{out}\n{events}");
    let log = std::fs::read_to_string(&p.round_logs()[0]).unwrap();
    let results = log
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    drop(sockets);
    Seen {
        p,
        results,
        unix_accepted,
        tcp_closed_accepted,
        closed: closed_port,
        stderr: out.stderr,
    }
}

impl Seen {
    fn result(&self, name: &str) -> &str {
        self.results
            .get(name)
            .unwrap_or_else(|| panic!("no {name} line: {:?}", self.results))
    }

    /// The targets of the round's seccomp `agent_sandbox_denied` events.
    fn seccomp_denied(&self) -> Vec<String> {
        self.p
            .events_of("agent_sandbox_denied")
            .iter()
            .filter(|e| e["layer"] == "seccomp")
            .map(|e| e["target"].as_str().unwrap().to_owned())
            .collect()
    }
}

fn refused_by_default(operator: Operator) {
    let seen = round(operator, "");
    let events = seen.p.events_text();
    let eperm = format!("denied {}", libc::EPERM);
    // No UNIX socket: the operator's socket got nothing; socketpair works.
    assert_eq!(seen.result("unix_connect"), eperm, "{events}");
    assert_eq!(seen.unix_accepted.load(Ordering::SeqCst), 0);
    assert_eq!(seen.result("socketpair"), "ok");
    // No namespace of the agent's own making; clone3 is ENOSYS (glibc falls back to
    // clone); threads start.
    assert_eq!(seen.result("unshare"), "denied");
    assert_eq!(seen.result("clone_newuser"), eperm);
    assert_eq!(
        seen.result("clone3_newuser"),
        format!("denied {}", libc::ENOSYS)
    );
    assert_eq!(seen.result("threads"), "ok");
    let denied = seen.seccomp_denied();
    for target in ["socket(AF_UNIX)", "unshare", "clone(CLONE_NEWUSER)"] {
        assert!(
            denied.iter().any(|t| t == target),
            "{target} not recorded: {denied:?}\n{events}"
        );
    }
    // Landlock refuses the TCP connect to the port not listed, and it is told with the
    // address and port; the UDP connect to it and the listed port are not refused.
    assert_eq!(
        seen.result("tcp_closed"),
        format!("denied {}", libc::EACCES),
        "{events}"
    );
    assert_eq!(seen.tcp_closed_accepted.load(Ordering::SeqCst), 0);
    assert_eq!(seen.result("udp_closed"), "sent");
    assert_eq!(seen.result("tcp_open"), "succeeded", "{events}");
    let refused = seen.p.events_of("agent_egress_refused");
    assert_eq!(refused.len(), 1, "{events}");
    let r = &refused[0];
    assert_eq!(r["layer"], "landlock", "{r}");
    assert_eq!(r["address"], "127.0.0.1", "{r}");
    assert_eq!(r["port"], seen.closed, "{r}");
    assert_eq!(r["key"], "agent.sandbox.connect_ports", "{r}");
    assert_eq!(r["count"], 1, "{r}");
    let sentence = format!(
        "egress to 127.0.0.1:{0} refused by the agent sandbox: add {0} to [agent.sandbox] connect_ports",
        seen.closed
    );
    assert_eq!(r["message"], sentence.as_str(), "{r}");
    assert!(
        seen.stderr.contains(&format!("round 1: {sentence}")),
        "{}",
        seen.stderr
    );
    // Landlock's refusals of writes outside every grant are recorded with the path and
    // the call; the write in the tree is not.
    assert_eq!(seen.result("write_bashrc"), "denied");
    assert_eq!(seen.result("mkdir_home"), "denied");
    assert_eq!(seen.result("write_tree"), "succeeded");
    let home = seen.p.home().canonicalize().unwrap();
    let landlock: Vec<(String, String)> = seen
        .p
        .events_of("agent_sandbox_denied")
        .iter()
        .filter(|e| e["layer"] == "landlock")
        .map(|e| {
            (
                e["target"].as_str().unwrap().to_owned(),
                e["access"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let bashrc = home.join(".bashrc").display().to_string();
    assert!(
        landlock.contains(&(bashrc, "openat".to_owned())),
        "{landlock:?}\n{events}"
    );
    let planted = home.join("planted").display().to_string();
    assert!(
        landlock
            .iter()
            .any(|(t, a)| *t == planted && a.starts_with("mkdir")),
        "{landlock:?}\n{events}"
    );
    assert!(
        !landlock.iter().any(|(t, _)| t.ends_with("notes.md")),
        "{landlock:?}"
    );
    // Reads of a credential store are refused and told, by the path the agent named (a
    // link of its own to the store included); a read Landlock allows is not told.
    assert_eq!(seen.result("read_npmrc"), "denied", "{events}");
    assert_eq!(seen.result("read_link"), "denied", "{events}");
    assert_eq!(seen.result("read_bashrc"), "succeeded", "{events}");
    let npmrc = home.join(".npmrc").display().to_string();
    assert!(
        landlock.contains(&(npmrc, "read".to_owned())),
        "{landlock:?}\n{events}"
    );
    assert!(
        landlock
            .iter()
            .any(|(t, a)| t.ends_with("/npmrc-link") && a == "read"),
        "{landlock:?}\n{events}"
    );
    assert!(
        !landlock
            .iter()
            .any(|(t, a)| t.ends_with(".bashrc") && a == "read"),
        "{landlock:?}"
    );
}

fn opened_by_the_switches(operator: Operator) {
    let seen = round(operator, "unix_sockets = true\nuser_namespaces = true\n");
    let events = seen.p.events_text();
    assert_eq!(seen.result("unix_connect"), "succeeded", "{events}");
    agent_runner_e2e::wait_until(
        "the operator's socket to accept the agent",
        std::time::Duration::from_secs(5),
        || (seen.unix_accepted.load(Ordering::SeqCst) == 1).then_some(()),
    );
    assert_eq!(seen.result("socketpair"), "ok");
    assert_eq!(seen.result("unshare"), "succeeded", "{events}");
    // A namespace's id maps are files under /proc, which Landlock does not let the agent
    // write: `unshare -r` (map the caller to root) is refused even with the switch.
    assert_eq!(seen.result("unshare_map"), "uid_map: Permission denied");
    assert_eq!(seen.result("clone_newuser"), "succeeded", "{events}");
    assert_eq!(seen.result("clone3_newuser"), "succeeded", "{events}");
    assert_eq!(seen.result("threads"), "ok");
    let denied = seen.seccomp_denied();
    assert!(
        !denied
            .iter()
            .any(|t| t.starts_with("socket") || t.starts_with("clone") || t == "unshare"),
        "{denied:?}"
    );
}

#[test]
fn unix_sockets_and_new_namespaces_are_refused_and_connects_told_as_root() {
    refused_by_default(Operator::Root);
}

#[test]
fn unix_sockets_and_new_namespaces_are_refused_and_connects_told_as_unprivileged_user() {
    refused_by_default(Operator::Unprivileged);
}

#[test]
fn the_switches_open_unix_sockets_and_new_namespaces_as_root() {
    opened_by_the_switches(Operator::Root);
}

#[test]
fn the_switches_open_unix_sockets_and_new_namespaces_as_unprivileged_user() {
    opened_by_the_switches(Operator::Unprivileged);
}

/// Headless Chromium as an unprivileged operator's agent (Chromium refuses its own sandbox
/// as root). Its process singleton listens on a UNIX socket in its profile: without
/// `unix_sockets` it stops at `socket()` (refused and recorded). Its own sandbox needs a
/// user namespace whose id maps it writes under `/proc`, which Landlock refuses whatever
/// `user_namespaces` says: "No usable sandbox" with the switch and without it (where its
/// `clone` is refused and recorded). Ours stands in: with `unix_sockets` and
/// `--no-sandbox` it renders the page.
#[test]
fn headless_chromium_runs_under_ours_with_unix_sockets_and_its_own_sandbox_off() {
    const CHROMIUM_AGENT: &str = r#"#!/bin/bash
# In the tree: the agent's own TMPDIR is too deep a path for the singleton's socket.
mkdir -p t && export TMPDIR=$PWD/t
render() { timeout 60 chromium --headless --disable-gpu "$@" --user-data-dir="$TMPDIR/profile" --dump-dom 'data:text/html,<p>chromium-rendered</p>' 2>&1; }
verdict() { if grep -q '<p>chromium-rendered</p>' <<<"$1"; then echo rendered; elif grep -q 'No usable sandbox' <<<"$1"; then echo no_usable_sandbox; elif grep -q 'socket() failed' <<<"$1"; then echo socket_refused; else echo failed; tail -4 <<<"$1" >&2; fi; }
echo "own_sandbox $(verdict "$(render)")"
echo "no_sandbox $(verdict "$(render --no-sandbox)")"
exit 0
"#;
    // (switches, its own sandbox, with --no-sandbox, clone refused, socket refused)
    let cases = [
        ("", "no_usable_sandbox", "socket_refused", true, true),
        (
            "unix_sockets = true\n",
            "no_usable_sandbox",
            "rendered",
            true,
            false,
        ),
        (
            "unix_sockets = true\nuser_namespaces = true\n",
            "no_usable_sandbox",
            "rendered",
            false,
            false,
        ),
    ];
    for (switches, own, no_sandbox, clone_refused, socket_refused) in cases {
        let p = Project::new_as(Operator::Unprivileged);
        let agent = p.script("agent/chromium-agent.sh", CHROMIUM_AGENT);
        let text = agent_runner_e2e::ConfigBuilder::new(&agent)
            .round_budget_s(120)
            .render()
            .replacen(
                "[runtime]\n",
                &format!("[agent.sandbox]\nmode = \"require\"\n{switches}\n[runtime]\n"),
                1,
            );
        p.write_config_text(&text);
        p.run(&["round"]).assert_code(0);
        let log = std::fs::read_to_string(&p.round_logs()[0]).unwrap();
        let events = p.events_text();
        assert!(
            log.contains(&format!("own_sandbox {own}\n"))
                && log.contains(&format!("no_sandbox {no_sandbox}\n")),
            "{switches:?}: {log}\n{events}"
        );
        let refused = |prefix: &str| {
            p.events_of("agent_sandbox_denied")
                .iter()
                .any(|e| e["target"].as_str().is_some_and(|t| t.starts_with(prefix)))
        };
        assert_eq!(refused("clone("), clone_refused, "{switches:?}: {events}");
        assert_eq!(refused("socket("), socket_refused, "{switches:?}: {events}");
    }
}

/// Reads a credential file and the system's TLS roots (public, granted) and says how each
/// went.
const READER: &str = r#"#!/bin/sh
printf 'read_aws %s\n' "$(cat "$HOME/.aws/credentials" >/dev/null 2>&1 && echo succeeded || echo denied)"
printf 'read_certs %s\n' "$(cat /etc/ssl/certs/ca-certificates.crt >/dev/null 2>&1 && echo succeeded || echo denied)"
"#;

/// The observer's walk of the credential stores (docs/security.md, "Denials told, not
/// silent") stops at its cap of 20 000 entries: with a `~/.aws` of 20 010 files, `round`
/// records `agent_scan_truncated` (`withheld_files`) once and `doctor` warns
/// (`agent_observer`); the agent's reads of the store are still refused. A read of the
/// public `/etc/ssl/certs` (inside the withheld `/etc/ssl`, given back by a grant) succeeds
/// and is not recorded as refused. The control: a `~/.aws` of 10 files — no event, no
/// warning, the refused read of `~/.aws/credentials` recorded. Root and `ar-e2e`.
fn the_observers_walk_cap_is_told(operator: Operator) {
    for (files, cut) in [(20_010, true), (10, false)] {
        let p = Project::new_as(operator);
        let aws = p.home().join(".aws");
        std::fs::create_dir_all(aws.join("cli/cache")).unwrap();
        std::fs::write(
            aws.join("credentials"),
            "[default]\naws_secret_access_key=x\n",
        )
        .unwrap();
        for i in 0..files {
            std::fs::write(aws.join("cli/cache").join(format!("{i}.json")), "{}").unwrap();
        }
        let agent = p.script("agent/reader.sh", READER);
        let text = agent_runner_e2e::ConfigBuilder::new(&agent)
            .round_budget_s(60)
            .render()
            .replacen(
                "[runtime]\n",
                "[agent.sandbox]\nmode = \"require\"\n\n[runtime]\n",
                1,
            );
        p.write_config_text(&text);
        let out = p.run(&["round"]);
        let events = p.events_text();
        assert_eq!(out.code(), 0, "{out}\n{events}");
        let log = std::fs::read_to_string(&p.round_logs()[0]).unwrap();
        assert!(
            log.contains("read_aws denied"),
            "{operator:?} {files}: {log}"
        );
        assert!(
            log.contains("read_certs succeeded"),
            "{operator:?} {files}: {log}"
        );
        let truncated = p.events_of("agent_scan_truncated");
        let denied = p.events_of("agent_sandbox_denied");
        assert!(
            denied.iter().all(|d| !d["target"]
                .as_str()
                .is_some_and(|t| t.starts_with("/etc/ssl/certs"))),
            "{operator:?} {files}: a granted read told as refused: {events}"
        );
        let doctor = p.run(&["doctor", "--json"]);
        let report: agent_runner_e2e::serde_json::Value =
            agent_runner_e2e::serde_json::from_str(&doctor.stdout).unwrap();
        let warned = report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["name"] == "agent_observer");
        if cut {
            assert_eq!(truncated.len(), 1, "{operator:?}: {events}");
            assert_eq!(truncated[0]["scan"], "withheld_files", "{events}");
            assert_eq!(truncated[0]["limit"], 20_000, "{events}");
            assert!(warned, "{operator:?}: {doctor}");
        } else {
            assert!(truncated.is_empty(), "{operator:?}: {events}");
            assert!(!warned, "{operator:?}: {doctor}");
            assert!(
                denied.iter().any(|d| d["target"]
                    .as_str()
                    .is_some_and(|t| t.ends_with("/.aws/credentials"))
                    && d["access"] == "read"),
                "{operator:?}: {events}"
            );
        }
    }
}

#[test]
fn the_observers_walk_cap_is_told_as_root() {
    the_observers_walk_cap_is_told(Operator::Root);
}

#[test]
fn the_observers_walk_cap_is_told_as_unprivileged_user() {
    the_observers_walk_cap_is_told(Operator::Unprivileged);
}
