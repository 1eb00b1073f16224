//! The hostile-host suite (issue 4, `docs/protocol.md` §8): real hosts — `ar-e2e-attempts` (Rust,
//! SDK) and `tests/hosts/attempts.py` (Python, by hand) — pinned and run under
//! `sandbox = "require"`, each trying one forbidden thing in a `before_spawn` call of a real
//! `agent-runner round`. Every test asserts the denial (the errno the host reports back in its
//! hook error, or the `plugin_sandbox_kill` event naming the system call), the `hook_failed`
//! event, that the round still completed (exit 0, `round_end`, the agent ran) and that the
//! supervisor was unaffected. Nothing here skips. Every case runs twice, with the
//! supervisor run by root and by an unprivileged user (`as_root_and_unprivileged!`).

use agent_runner_e2e::serde_json::{json, Value};
use agent_runner_e2e::{workspace_root, HostSpec, Operator, Project, RunOutput, RUN_TIMEOUT};
use std::cell::Cell;
use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

const RUST_HOST: &str = env!("CARGO_BIN_EXE_ar-e2e-attempts");

thread_local! {
    /// Who runs the supervisor in the current test (each test runs on its own thread).
    static OPERATOR: Cell<Operator> = const { Cell::new(Operator::Root) };
}

/// Runs `test` with the supervisor run by `operator`.
fn with_operator(operator: Operator, test: fn()) {
    OPERATOR.set(operator);
    test();
}

/// Every case of the suite runs twice: `<case>::as_root` and
/// `<case>::as_unprivileged_user` (the supervisor binary itself runs as the test user).
macro_rules! as_root_and_unprivileged {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                use super::*;

                #[test]
                fn as_root() {
                    with_operator(Operator::Root, super::$name);
                }

                #[test]
                fn as_unprivileged_user() {
                    with_operator(Operator::Unprivileged, super::$name);
                }
            }
        )*
    };
}

/// The two languages of the suite.
#[derive(Clone, Copy, Debug)]
enum Lang {
    Rust,
    Python,
}

fn host_exe(lang: Lang) -> PathBuf {
    match lang {
        Lang::Rust => PathBuf::from(RUST_HOST),
        Lang::Python => workspace_root().join("tests/hosts/attempts.py"),
    }
}

/// A project whose only host `hostile` (language `lang`) makes `attempt` with the config
/// `config(&project)` returns, under `sandbox = "require"`. `host_keys` are extra lines of
/// its host table.
fn project_with(
    lang: Lang,
    attempt: &str,
    host_keys: &str,
    config: impl FnOnce(&Project) -> Value,
) -> Project {
    let p = Project::new_as(OPERATOR.get());
    let mut table = json!({ "attempt": attempt });
    for (k, v) in config(&p).as_object().expect("object") {
        table[k] = v.clone();
    }
    let text = p
        .config()
        .sandbox("require")
        .agent_env("AGENT_RUNNER_SECRET_X", SECRET)
        .host(HostSpec::new("hostile", host_exe(lang)).config(table))
        .render()
        .replace(
            "[plugins.hosts.hostile]\n",
            &format!("[plugins.hosts.hostile]\n{host_keys}"),
        );
    p.write_config_text(&text);
    p
}

/// [`project_with`] a fixed config table.
fn project(lang: Lang, attempt: &str, config: Value, host_keys: &str) -> Project {
    project_with(lang, attempt, host_keys, |_| config)
}

/// A value that must never reach a host.
const SECRET: &str = "s3cr3t-hostile-suite-7f1c";

/// Runs one round with the secret in the supervisor's environment.
fn round(p: &Project) -> RunOutput {
    p.run_env(&["round"], &[("AGENT_RUNNER_SECRET_X", SECRET)])
}

/// The round completed as if the hook had proceeded: exit 0, round_end, the agent ran,
/// exactly one hook_failed for our hook, and no host process is left.
fn assert_round_completed(p: &Project, out: &RunOutput) -> Value {
    let all = p.events_text();
    out.assert_code(0);
    assert_eq!(p.events_of("round_end").len(), 1, "{all}");
    assert_eq!(p.events_of("agent_exit")[0]["exit_code"], 0, "{all}");
    p.assert_agent_ran(1);
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 1, "{all}");
    assert_eq!(failed[0]["hook_name"], "attempt", "{all}");
    assert_eq!(failed[0]["hook_kind"], "spawn_hook", "{all}");
    failed[0].clone()
}

/// The host reported `denied errno=<one of errnos>` for `attempt`.
fn assert_denied(p: &Project, out: &RunOutput, attempt: &str, errnos: &[i32]) {
    let failed = assert_round_completed(p, out);
    let all = p.events_text();
    assert_eq!(failed["error_type"], "rpc_error", "{all}");
    let msg = failed["error_message"].as_str().unwrap_or_default();
    let prefix = format!("outcome {attempt}: denied errno=");
    let at = msg
        .find(&prefix)
        .unwrap_or_else(|| panic!("not denied: {msg}\n{all}"));
    let errno: i32 = msg[at + prefix.len()..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no errno in {msg}"));
    assert!(
        errnos.contains(&errno),
        "errno {errno} not in {errnos:?}: {msg}"
    );
    assert!(p.events_of("plugin_sandbox_kill").is_empty(), "{all}");
}

/// The sandbox killed the host with SIGSYS; `syscall` is the name the event carries
/// (`None` for the architecture/x32 guard, which kills without a notification).
fn assert_killed(p: &Project, out: &RunOutput, syscall: Option<&str>) {
    let failed = assert_round_completed(p, out);
    let all = p.events_text();
    assert_eq!(failed["error_type"], "killed_by_sandbox", "{all}");
    let kills = p.events_of("plugin_sandbox_kill");
    assert_eq!(kills.len(), 1, "{all}");
    assert_eq!(kills[0]["hook"], "attempt", "{all}");
    assert_eq!(kills[0]["host"], "hostile", "{all}");
    assert_eq!(kills[0]["signal"], 31, "{all}");
    match syscall {
        Some(name) => assert_eq!(kills[0]["syscall"], name, "{all}"),
        None => assert!(kills[0]["syscall"].is_null(), "{all}"),
    }
}

fn no_connection(listener: &TcpListener) {
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Ok((_, peer)) => panic!("the confined host connected from {peer}"),
        Err(e) => panic!("accept: {e}"),
    }
}

fn tcp_connect(lang: Lang) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let p = project(lang, "tcp_connect", json!({ "port": port }), "");
    let out = round(&p);
    assert_killed(&p, &out, Some("socket"));
    no_connection(&listener);
}

fn rust_tcp_connect_is_killed_and_never_reaches_the_listener() {
    tcp_connect(Lang::Rust);
}

fn python_tcp_connect_is_killed_and_never_reaches_the_listener() {
    tcp_connect(Lang::Python);
}

fn rust_udp_send_is_killed_and_never_arrives() {
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver.set_nonblocking(true).unwrap();
    let port = receiver.local_addr().unwrap().port();
    let p = project(Lang::Rust, "udp_send", json!({ "port": port }), "");
    let out = round(&p);
    assert_killed(&p, &out, Some("socket"));
    let mut buf = [0u8; 8];
    assert_eq!(
        receiver.recv(&mut buf).map_err(|e| e.kind()).unwrap_err(),
        ErrorKind::WouldBlock
    );
}

fn rust_netlink_socket_is_killed() {
    let p = project(Lang::Rust, "netlink_socket", json!({}), "");
    let out = round(&p);
    assert_killed(&p, &out, Some("socket"));
}

fn rust_packet_socket_is_killed() {
    let p = project(Lang::Rust, "packet_socket", json!({}), "");
    let out = round(&p);
    assert_killed(&p, &out, Some("socket"));
}

fn read_home(lang: Lang) {
    // The supervisor's HOME (`<tmp>/home`, passed on to the host) holds a credential file.
    let p = project_with(lang, "read", "", |p| {
        let file = p.tmp_dir().join("home/.netrc");
        std::fs::write(&file, "machine example.invalid password hunter2\n").unwrap();
        json!({ "path": file })
    });
    let out = round(&p);
    assert_denied(&p, &out, "read", &[libc::EACCES]);
}

fn rust_reading_home_files_is_denied() {
    read_home(Lang::Rust);
}

fn python_reading_home_files_is_denied() {
    read_home(Lang::Python);
}

fn rust_reading_etc_shadow_is_denied() {
    assert!(Path::new("/etc/shadow").exists());
    let p = project(Lang::Rust, "read", json!({ "path": "/etc/shadow" }), "");
    let out = round(&p);
    assert_denied(&p, &out, "read", &[libc::EACCES]);
}

/// Runs `round` in the background, tells the host the supervisor's pid through a file in
/// `log_dir` (which the host may read), and waits for the round to end.
fn round_with_pid_file(p: &Project) -> (RunOutput, u32) {
    // log_dir exists before the supervisor starts (and is handed to its user with the
    // rest of the project).
    std::fs::create_dir_all(p.log_dir()).unwrap();
    let mut cmd = p.command(&["round"]);
    cmd.env("AGENT_RUNNER_SECRET_X", SECRET);
    let running = p.spawn_with(cmd);
    let pid = running.pid();
    let tmp = p.log_dir().join(".supervisor.pid.tmp");
    std::fs::write(&tmp, pid.to_string()).unwrap();
    std::fs::rename(&tmp, pid_file(p)).unwrap();
    (running.wait(RUN_TIMEOUT), pid)
}

fn pid_file(p: &Project) -> PathBuf {
    p.log_dir().join("supervisor.pid")
}

fn pid_project(attempt: &str) -> Project {
    project_with(
        Lang::Rust,
        attempt,
        "",
        |p| json!({ "pid_file": pid_file(p) }),
    )
}

fn rust_reading_the_supervisors_environ_is_denied() {
    let p = pid_project("read_pid_environ");
    let (out, _) = round_with_pid_file(&p);
    assert_denied(&p, &out, "read_pid_environ", &[libc::EACCES]);
}

fn rust_killing_the_supervisor_is_denied() {
    let p = pid_project("kill_pid");
    let (out, _) = round_with_pid_file(&p);
    // ESRCH: the supervisor's pid does not exist in the host's PID namespace; EPERM:
    // Landlock's signal scope (without a PID namespace).
    assert_denied(&p, &out, "kill_pid", &[libc::ESRCH, libc::EPERM]);
}

fn rust_pidfd_signal_to_the_supervisor_is_denied() {
    let p = pid_project("pidfd_kill_pid");
    let (out, _) = round_with_pid_file(&p);
    // As kill: the supervisor's pid does not exist in the host's PID namespace (ESRCH), or
    // Landlock's signal scope refuses it (EPERM).
    assert_denied(&p, &out, "pidfd_kill_pid", &[libc::ESRCH, libc::EPERM]);
}

fn rust_ptrace_attach_to_the_supervisor_is_killed() {
    let p = pid_project("ptrace_attach");
    let (out, _) = round_with_pid_file(&p);
    assert_killed(&p, &out, Some("ptrace"));
}

fn write_work_tree(lang: Lang) {
    let p = project_with(
        lang,
        "write",
        "",
        |p| json!({ "path": p.dir().join("planted.txt") }),
    );
    let out = round(&p);
    assert_denied(&p, &out, "write", &[libc::EACCES]);
    assert!(!p.dir().join("planted.txt").exists());
}

fn rust_writing_the_work_tree_is_denied() {
    write_work_tree(Lang::Rust);
}

fn python_writing_the_work_tree_is_denied() {
    write_work_tree(Lang::Python);
}

/// Configures a `write` attempt at `rel` (relative to the project) and runs it.
fn write_project_file(rel: &str) -> (Project, Option<Vec<u8>>) {
    let p = project_with(
        Lang::Rust,
        "write",
        "",
        |p| json!({ "path": p.dir().join(rel) }),
    );
    let target = p.dir().join(rel);
    let before = std::fs::read(&target).ok();
    let out = round(&p);
    assert_denied(&p, &out, "write", &[libc::EACCES]);
    assert_eq!(std::fs::read(&target).ok(), before, "{rel} changed");
    (p, before)
}

fn rust_writing_git_hooks_is_denied() {
    let (p, before) = write_project_file(".git/hooks/pre-commit");
    assert!(before.is_none());
    assert!(!p.dir().join(".git/hooks/pre-commit").exists());
}

fn rust_writing_the_config_file_is_denied() {
    let (_, before) = write_project_file("agent-runner.toml");
    assert!(before.is_some());
}

fn rust_writing_log_dir_control_files_is_denied() {
    // The host tries every file in the state dir: the events file, the lock and state files
    // the supervisor holds while the round runs (docs/operations.md, "State dir"); it may
    // not even list the directory.
    let p = project_with(
        Lang::Rust,
        "write_log_dir",
        "",
        |p| json!({ "path": p.state_dir() }),
    );
    let out = round(&p);
    // `denied errno=13 files=<n>`: n ≥ 1 files tried, none opened for writing.
    assert_denied(&p, &out, "write_log_dir", &[libc::EACCES]);
}

fn exec_sh(lang: Lang) {
    let p = project(lang, "exec_sh", json!({}), "");
    let out = round(&p);
    assert_denied(&p, &out, "exec_sh", &[libc::EACCES]);
}

fn rust_exec_of_bin_sh_is_denied() {
    exec_sh(Lang::Rust);
}

fn python_exec_of_bin_sh_is_denied() {
    exec_sh(Lang::Python);
}

fn rust_io_uring_setup_is_killed() {
    let p = project(Lang::Rust, "io_uring_setup", json!({}), "");
    let out = round(&p);
    assert_killed(&p, &out, Some("io_uring_setup"));
}

fn rust_bpf_is_killed() {
    let p = project(Lang::Rust, "bpf", json!({}), "");
    let out = round(&p);
    assert_killed(&p, &out, Some("bpf"));
}

fn rust_perf_keyrings_mounts_namespaces_and_process_memory_are_killed() {
    for call in [
        "perf_event_open",
        "add_key",
        "mount",
        "unshare",
        "process_vm_readv",
        "userfaultfd",
    ] {
        let p = project(Lang::Rust, call, json!({}), "");
        let out = round(&p);
        assert_killed(&p, &out, Some(call));
    }
}

fn rust_x32_socket_call_is_killed() {
    let p = project(Lang::Rust, "x32_socket", json!({}), "");
    let out = round(&p);
    assert_killed(&p, &out, None);
}

fn rust_memory_hog_is_bounded_by_memory_max_mb() {
    // 256 MiB of address space; the host asks for 512 MiB.
    let p = project(
        Lang::Rust,
        "memory_hog",
        json!({ "bytes": 512u64 << 20 }),
        "memory_max_mb = 256\n",
    );
    let out = round(&p);
    assert_denied(&p, &out, "memory_hog", &[libc::ENOMEM]);
}

fn secret_env(lang: Lang) {
    let p = project(lang, "secret_env", json!({ "needle": SECRET }), "");
    let out = round(&p);
    let failed = assert_round_completed(&p, &out);
    let all = p.events_text();
    // Not in the host's environment nor in the spawn view, which does name the variable.
    assert!(
        failed["error_message"]
            .as_str()
            .unwrap_or_default()
            .ends_with("outcome secret_env: not-found named=true"),
        "{all}"
    );
    assert!(
        !all.contains(SECRET),
        "a secret value reached the events: {all}"
    );
}

fn rust_secret_values_reach_neither_environment_nor_spawn_view() {
    secret_env(Lang::Rust);
}

fn python_secret_values_reach_neither_environment_nor_spawn_view() {
    secret_env(Lang::Python);
}

/// Live processes running the Rust host in `p`'s work tree.
fn leftovers(p: &Project) -> Vec<u32> {
    p.host_pids(&[Path::new(RUST_HOST)])
}

fn wait_gone(p: &Project, what: &str) {
    agent_runner_e2e::wait_until(what, Duration::from_secs(20), || {
        leftovers(p).is_empty().then_some(())
    });
}

fn rust_orphaned_child_dies_with_the_stopped_host() {
    let p = project(Lang::Rust, "orphan_sleeper", json!({}), "");
    let out = round(&p);
    out.assert_code(0);
    let all = p.events_text();
    assert!(p.events_of("hook_failed").is_empty(), "{all}");
    assert_eq!(p.events_of("round_end").len(), 1, "{all}");
    wait_gone(&p, "the host's orphaned child to die with the host");
}

fn rust_host_dies_with_a_sigkilled_supervisor_and_the_next_round_runs() {
    let p = project(Lang::Rust, "orphan_sleeper", json!({}), "");
    let running = p.spawn(&["serve"]);
    // The host and its orphaned grandchild are both up once the hook has answered.
    agent_runner_e2e::wait_until("host and its orphan", Duration::from_secs(60), || {
        (leftovers(&p).len() >= 2).then_some(())
    });
    running.signal(libc::SIGKILL);
    let out = running.wait(RUN_TIMEOUT);
    assert_eq!(out.status.code(), None, "{out}");
    wait_gone(&p, "the host and its orphan to die with the supervisor");
    // Nothing holds the project lock: the next supervisor runs its round.
    let next = round(&p);
    next.assert_code(0);
    assert!(!next.stderr.contains("already supervises"), "{next}");
}

fn rust_grandchild_holding_stdout_does_not_stall_the_call() {
    // The host leaves a setsid() child holding its stdout and exits mid-call. The call
    // must end as a crash when the host dies, not wait for its (long) timeout.
    let p = project(
        Lang::Rust,
        "stdout_holder_exit",
        json!({}),
        "timeout_s = 100\n",
    );
    let out = round(&p);
    let failed = assert_round_completed(&p, &out);
    assert_eq!(failed["error_type"], "crashed", "{}", p.events_text());
    wait_gone(&p, "the stdout holder to die with the host");
}

fn rust_fork_bomb_is_bounded_and_dies_with_the_host() {
    let p = project(Lang::Rust, "fork_bomb", json!({ "max": 4096 }), "");
    let out = round(&p);
    assert_denied(&p, &out, "fork_bomb", &[libc::EAGAIN]);
    wait_gone(&p, "the fork bomb's children to die with the host");
}

fn python_host_script_is_pinned_and_its_interpreter_reported_not_pinned() {
    let p = project(Lang::Python, "read", json!({}), "");
    let out = p.run(&["doctor", "--json"]);
    out.assert_code(0);
    let report: Value = agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    let host = &report["hosts"][0];
    assert_eq!(host["pin_status"], "verified", "{report}");
    assert_eq!(
        host["sha256"],
        agent_runner_e2e::pin_of(&host_exe(Lang::Python)),
        "the pin covers the script's own bytes: {report}"
    );
    let interp = host["interpreter"].as_str().expect("an interpreter");
    assert!(interp.contains("python3"), "{report}");
    assert_eq!(host["interpreter_pin"], "not pinned", "{report}");
    let human = p.run(&["doctor"]);
    human.assert_code(0);
    assert!(
        human
            .stdout
            .contains(&format!("interpreter {interp} (not pinned)")),
        "{human}"
    );
}

as_root_and_unprivileged!(
    rust_tcp_connect_is_killed_and_never_reaches_the_listener,
    python_tcp_connect_is_killed_and_never_reaches_the_listener,
    rust_udp_send_is_killed_and_never_arrives,
    rust_netlink_socket_is_killed,
    rust_packet_socket_is_killed,
    rust_reading_home_files_is_denied,
    python_reading_home_files_is_denied,
    rust_reading_etc_shadow_is_denied,
    rust_reading_the_supervisors_environ_is_denied,
    rust_killing_the_supervisor_is_denied,
    rust_ptrace_attach_to_the_supervisor_is_killed,
    rust_writing_the_work_tree_is_denied,
    python_writing_the_work_tree_is_denied,
    rust_writing_git_hooks_is_denied,
    rust_writing_the_config_file_is_denied,
    rust_writing_log_dir_control_files_is_denied,
    rust_exec_of_bin_sh_is_denied,
    python_exec_of_bin_sh_is_denied,
    rust_io_uring_setup_is_killed,
    rust_bpf_is_killed,
    rust_perf_keyrings_mounts_namespaces_and_process_memory_are_killed,
    rust_x32_socket_call_is_killed,
    rust_memory_hog_is_bounded_by_memory_max_mb,
    rust_secret_values_reach_neither_environment_nor_spawn_view,
    python_secret_values_reach_neither_environment_nor_spawn_view,
    rust_orphaned_child_dies_with_the_stopped_host,
    rust_host_dies_with_a_sigkilled_supervisor_and_the_next_round_runs,
    rust_grandchild_holding_stdout_does_not_stall_the_call,
    rust_fork_bomb_is_bounded_and_dies_with_the_host,
    python_host_script_is_pinned_and_its_interpreter_reported_not_pinned,
);

/// A listening pathname socket in a fresh directory outside every grant, open to all
/// (mode 0777), like a system bus or a container daemon's socket.
fn pathname_listener() -> (tempfile::TempDir, PathBuf, UnixListener) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let path = dir.path().join("daemon.sock");
    let listener = UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    listener.set_nonblocking(true).unwrap();
    (dir, path, listener)
}

fn no_unix_connection(listener: &UnixListener) {
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Ok(_) => panic!("the confined host connected to the UNIX socket"),
        Err(e) => panic!("accept: {e}"),
    }
}

fn rust_unix_pathname_connect_is_denied() {
    let (_dir, path, listener) = pathname_listener();
    let p = project(Lang::Rust, "unix_connect", json!({ "path": path }), "");
    let out = round(&p);
    assert_denied(&p, &out, "unix_connect", &[libc::EACCES]);
    no_unix_connection(&listener);
}

fn rust_unix_abstract_connect_is_denied() {
    use std::os::linux::net::SocketAddrExt;
    let name = format!(
        "ar-e2e-abstract-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    );
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    listener.set_nonblocking(true).unwrap();
    let p = project(
        Lang::Rust,
        "unix_connect",
        json!({ "path": format!("@{name}") }),
        "",
    );
    let out = round(&p);
    assert_denied(&p, &out, "unix_connect", &[libc::EACCES]);
    no_unix_connection(&listener);
}

fn rust_socketpair_connect_and_bind_are_killed() {
    let (_dir, path, listener) = pathname_listener();
    let p = project(Lang::Rust, "unix_pair_connect", json!({ "path": path }), "");
    let out = round(&p);
    assert_killed(&p, &out, Some("connect"));
    no_unix_connection(&listener);
    let p = project_with(
        Lang::Rust,
        "unix_pair_bind",
        "",
        |p| json!({ "path": p.log_dir().join("plugins/hostile/own.sock") }),
    );
    let out = round(&p);
    assert_killed(&p, &out, Some("bind"));
    assert!(!p.log_dir().join("plugins/hostile/own.sock").exists());
}

fn rust_connecting_to_the_supervisors_control_socket_is_denied() {
    // serve listens on <state_dir>/control.sock while the host tries it every round.
    let p = project_with(
        Lang::Rust,
        "unix_connect",
        "",
        |p| json!({ "path": p.state_dir().join("control.sock") }),
    );
    std::fs::create_dir_all(p.log_dir()).unwrap();
    let running = p.spawn(&["serve"]);
    let failed = p.wait_for_event("hook_failed");
    assert!(
        failed["error_message"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!(
                "outcome unix_connect: denied errno={}",
                libc::EACCES
            )),
        "{failed}"
    );
    assert!(p.state_dir().join("control.sock").exists());
    // The supervisor's socket still answers its operator, and serve stops cleanly.
    let status = p.run(&["status", "--json"]);
    status.assert_code(0);
    assert!(
        status.stdout.contains("\"source\":\"socket\"")
            || status.stdout.contains("\"source\": \"socket\""),
        "{status}"
    );
    p.run(&["stop"]).assert_code(0);
    running.wait(RUN_TIMEOUT).assert_code(0);
    assert!(
        p.events_of("plugin_sandbox_kill").is_empty(),
        "{}",
        p.events_text()
    );
}

fn unconfined_host_is_refused_by_the_control_socket() {
    // Without seccomp (sandbox = "off") the host can make a UNIX socket: the supervisor's
    // peer check must refuse it (the host is in its own PID namespace).
    let p = Project::new_as(OPERATOR.get());
    let text = p
        .config()
        .sandbox("off")
        .host(HostSpec::new("hostile", host_exe(Lang::Rust)).config(
            json!({ "attempt": "unix_request", "path": p.state_dir().join("control.sock") }),
        ))
        .render();
    p.write_config_text(&text);
    std::fs::create_dir_all(p.log_dir()).unwrap();
    let running = p.spawn(&["serve"]);
    let failed = p.wait_for_event("hook_failed");
    let msg = failed["error_message"].as_str().unwrap_or_default();
    assert!(msg.contains("allowed reply="), "{msg}");
    assert!(
        msg.contains("refused:"),
        "the supervisor answered a host: {msg}"
    );
    // The refused `kill` did nothing: serve still runs and stops only when asked.
    p.run(&["status", "--json"]).assert_code(0);
    p.run(&["stop"]).assert_code(0);
    let out = running.wait(RUN_TIMEOUT);
    out.assert_code(0);
}

fn rust_one_file_past_file_max_mb_fails_with_efbig() {
    let p = project_with(
        Lang::Rust,
        "write_big",
        "file_max_mb = 1\n",
        |p| json!({ "path": p.log_dir().join("plugins/hostile/big"), "bytes": 3u64 << 20 }),
    );
    let out = round(&p);
    assert_denied(&p, &out, "write_big", &[libc::EFBIG]);
    let size = std::fs::metadata(p.log_dir().join("plugins/hostile/big"))
        .unwrap()
        .len();
    assert_eq!(size, 1 << 20, "the file stopped at the limit");
}

fn rust_many_files_past_state_max_mb_kill_and_disable_the_host() {
    let p = project_with(
        Lang::Rust,
        "write_many",
        "state_max_mb = 2\n",
        |p| json!({ "path": p.log_dir().join("plugins/hostile"), "bytes": 256u64 << 10, "count": 4000 }),
    );
    let out = round(&p);
    let failed = assert_round_completed(&p, &out);
    let all = p.events_text();
    assert_eq!(failed["error_type"], "crashed", "{all}");
    let limit = p.events_of("plugin_write_limit");
    assert_eq!(limit.len(), 1, "{all}");
    assert_eq!(limit[0]["host"], "hostile", "{all}");
    assert_eq!(limit[0]["limit_bytes"], 2u64 << 20, "{all}");
    let used = limit[0]["used_bytes"].as_u64().unwrap();
    assert!(used > 2 << 20, "{all}");
    let disabled = p.events_of("plugin_disabled");
    assert_eq!(disabled.len(), 1, "{all}");
    assert!(
        disabled[0]["reason"]
            .as_str()
            .unwrap()
            .contains("state_max_mb"),
        "{all}"
    );
    // Bounded overshoot: one measurement interval of writing (see docs/security.md).
    let on_disk = agent_runner_plugin_host::common::write_limits::disk_usage(
        &p.log_dir().join("plugins/hostile"),
    );
    assert!(
        on_disk <= (2 << 20) + (4 << 20),
        "{on_disk} bytes in the state dir"
    );
    // The records are intact: the events file is whole and the round was recorded.
    p.assert_events_whole();
}

fn rust_tmpdir_past_tmp_max_mb_fails_with_enospc() {
    let p = project(
        Lang::Rust,
        "write_tmp",
        json!({ "bytes": 512u64 << 10, "count": 64 }),
        "tmp_max_mb = 2\n",
    );
    let out = round(&p);
    assert_denied(&p, &out, "write_tmp", &[libc::ENOSPC]);
    // TMPDIR was private to the host: nothing reached the log dir's filesystem.
    let tmp = p.log_dir().join("plugins/.tmp/hostile");
    assert_eq!(
        agent_runner_plugin_host::common::write_limits::disk_usage(&tmp),
        0
    );
}

as_root_and_unprivileged!(
    rust_unix_pathname_connect_is_denied,
    rust_unix_abstract_connect_is_denied,
    rust_socketpair_connect_and_bind_are_killed,
    rust_connecting_to_the_supervisors_control_socket_is_denied,
    unconfined_host_is_refused_by_the_control_socket,
    rust_one_file_past_file_max_mb_fails_with_efbig,
    rust_many_files_past_state_max_mb_kill_and_disable_the_host,
    rust_tmpdir_past_tmp_max_mb_fails_with_enospc,
);

// Issue 24: what Landlock does not cover. Every call below is made by a real confined host
// in a real round, with arguments that would do harm if it ran (docs/security.md "What
// Landlock does not cover"); each must be killed before it runs and named in
// `plugin_sandbox_kill`.

/// Runs one round whose host makes the system call `name` on `path(&project)` and asserts
/// it was killed, the event naming `syscall`.
fn call_killed(
    name: &str,
    syscall: &str,
    host_keys: &str,
    path: impl FnOnce(&Project) -> PathBuf,
) -> Project {
    let p = project_with(
        Lang::Rust,
        "call",
        host_keys,
        |p| json!({ "name": name, "path": path(p) }),
    );
    let out = round(&p);
    assert_killed(&p, &out, Some(syscall));
    p
}

/// The operator's SSH key: `<home>/.ssh/id_rsa`, mode 0600 in a 0700 directory.
fn ssh_key(p: &Project) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = p.home().join(".ssh");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let key = dir.join("id_rsa");
    std::fs::write(&key, "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    key
}

/// Mode and mtime of `path`.
fn mode_and_mtime(path: &Path) -> (u32, std::time::SystemTime) {
    use std::os::unix::fs::PermissionsExt;
    let m = std::fs::metadata(path).unwrap();
    (m.permissions().mode(), m.modified().unwrap())
}

fn rust_file_metadata_calls_are_killed() {
    for name in [
        "chmod",
        "fchmod",
        "fchmodat",
        "fchmodat2",
        "chown",
        "fchown",
        "lchown",
        "fchownat",
        "utime",
        "utimes",
        "utimensat",
        "futimesat",
        "setxattr",
        "lsetxattr",
        "fsetxattr",
        "setxattrat",
        "removexattr",
        "lremovexattr",
        "fremovexattr",
        "removexattrat",
        "file_setattr",
    ] {
        let mut before = None;
        let p = call_killed(name, name, "", |p| {
            let key = ssh_key(p);
            before = Some(mode_and_mtime(&key));
            key
        });
        let key = p.home().join(".ssh/id_rsa");
        assert_eq!(Some(mode_and_mtime(&key)), before, "{name} changed the key");
        assert_eq!(before.unwrap().0, 0o100600);
        let dir = mode_and_mtime(&p.home().join(".ssh")).0;
        assert_eq!(dir, 0o40700, "{name} changed ~/.ssh");
    }
}

fn rust_fallocate_past_the_size_limit_is_killed_or_bounded() {
    let file = |p: &Project| p.log_dir().join("plugins/hostile/big");
    for name in ["fallocate_keep_size", "fallocate_punch_hole"] {
        let p = call_killed(name, "fallocate", "file_max_mb = 1\n", file);
        if let Ok(m) = std::fs::metadata(file(&p)) {
            use std::os::unix::fs::MetadataExt;
            assert!(m.blocks() * 512 <= 1 << 20, "{name}: {} blocks", m.blocks());
        }
    }
    // Plain fallocate is bounded by RLIMIT_FSIZE like a write.
    let p = project_with(
        Lang::Rust,
        "call",
        "file_max_mb = 1\n",
        |p| json!({ "name": "fallocate_plain", "path": file(p) }),
    );
    let out = round(&p);
    assert_denied(&p, &out, "call", &[libc::EFBIG]);
}

fn rust_leaving_the_group_or_clearing_the_death_signal_is_killed() {
    for (name, syscall) in [
        ("setsid", "setsid"),
        ("setpgid", "setpgid"),
        ("pdeathsig_clear", "prctl"),
    ] {
        call_killed(name, syscall, "", |p| p.dir().to_owned());
    }
}

fn rust_installing_its_own_seccomp_filter_is_killed() {
    for (name, syscall) in [("prctl_seccomp", "prctl"), ("seccomp", "seccomp")] {
        call_killed(name, syscall, "", |p| p.dir().to_owned());
    }
}

fn rust_privileged_calls_are_killed() {
    for (name, syscall) in [
        ("fanotify_init", "fanotify_init"),
        ("vhangup", "vhangup"),
        ("settimeofday", "settimeofday"),
        ("clock_settime", "clock_settime"),
        ("adjtimex", "adjtimex"),
        ("clock_adjtime", "clock_adjtime"),
        ("sethostname", "sethostname"),
        ("setdomainname", "setdomainname"),
        ("sched_fifo", "sched_setscheduler"),
        ("sched_setattr", "sched_setattr"),
        ("syslog", "syslog"),
        ("open_by_handle_at", "open_by_handle_at"),
        ("memfd_create", "memfd_create"),
    ] {
        call_killed(name, syscall, "", |p| p.dir().to_owned());
    }
}

fn rust_inotify_on_home_sysv_ipc_and_flock_are_killed() {
    // The watch is never reached: the inotify instance is already outside the allow-list.
    call_killed("inotify_add_watch", "inotify_init1", "", |p| {
        ssh_key(p).parent().unwrap().to_owned()
    });
    for name in ["shmget", "shmat", "msgget", "semget"] {
        call_killed(name, name, "", |p| p.dir().to_owned());
    }
    // A file the host can open read-only, as it could the project lock where the state
    // dir is log_dir.
    call_killed("flock", "flock", "", |p| {
        let f = p.log_dir().join("agent-runner.lock");
        std::fs::create_dir_all(p.log_dir()).unwrap();
        std::fs::write(&f, "1\n").unwrap();
        f
    });
}

/// A private ext4 image loop-mounted at `<log_dir>/img` (readable by the host), unmounted
/// when dropped. Filesystem-wide attacks run only against it, never the real disk.
struct LoopImage {
    mount: PathBuf,
}

impl LoopImage {
    fn new(p: &Project) -> Self {
        let image = p.tmp_dir().join("fs.img");
        let mount = p.log_dir().join("img");
        std::fs::create_dir_all(&mount).unwrap();
        std::fs::File::create(&image)
            .unwrap()
            .set_len(16 << 20)
            .unwrap();
        let run = |program: &str, args: &[&std::ffi::OsStr]| {
            let out = std::process::Command::new(program)
                .args(args)
                .output()
                .unwrap_or_else(|e| {
                    panic!("{program}: {e}; run tests/setup.sh (e2fsprogs, mount)")
                });
            assert!(out.status.success(), "{program}: {out:?}");
        };
        run(
            "mkfs.ext4",
            &["-q".as_ref(), "-F".as_ref(), image.as_os_str()],
        );
        run(
            "mount",
            &[
                "-o".as_ref(),
                "loop".as_ref(),
                image.as_os_str(),
                mount.as_os_str(),
            ],
        );
        std::fs::write(mount.join("file"), "x").unwrap();
        LoopImage { mount }
    }

    /// The image still takes writes (not frozen, not shut down): a write in a child
    /// process that must finish within 10 s.
    fn assert_writable(&self, after: &str) {
        let target = self.mount.join(format!("after-{after}"));
        let out = std::process::Command::new("timeout")
            .args(["10", "sh", "-c", "echo x > \"$1\" && sync -f \"$1\"", "sh"])
            .arg(&target)
            .output()
            .unwrap();
        assert!(out.status.success(), "after {after}: {out:?}");
    }
}

impl Drop for LoopImage {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(&self.mount)
            .status();
    }
}

fn rust_filesystem_ioctls_are_killed_on_a_loop_image() {
    for (name, on) in [
        ("FIFREEZE", "."),
        ("FITHAW", "."),
        ("EXT4_IOC_SHUTDOWN", "."),
        ("FS_IOC_SETFLAGS", "file"),
    ] {
        let p = project_with(
            Lang::Rust,
            "call",
            "",
            |p| json!({ "name": name, "path": p.log_dir().join("img").join(on) }),
        );
        let image = LoopImage::new(&p);
        let out = round(&p);
        assert_killed(&p, &out, Some("ioctl"));
        image.assert_writable(name);
        std::fs::write(image.mount.join("file"), "still writable").unwrap();
    }
}

as_root_and_unprivileged!(
    rust_file_metadata_calls_are_killed,
    rust_fallocate_past_the_size_limit_is_killed_or_bounded,
    rust_leaving_the_group_or_clearing_the_death_signal_is_killed,
    rust_installing_its_own_seccomp_filter_is_killed,
    rust_privileged_calls_are_killed,
    rust_inotify_on_home_sysv_ipc_and_flock_are_killed,
    rust_filesystem_ioctls_are_killed_on_a_loop_image,
);

fn rust_many_empty_files_count_against_state_max_mb() {
    // Empty files take no block: each counts for ENTRY_CHARGE_BYTES, so 1 MiB holds 256.
    let p = project_with(
        Lang::Rust,
        "write_many",
        "state_max_mb = 1\n",
        |p| json!({ "path": p.log_dir().join("plugins/hostile"), "bytes": 0, "count": 100_000 }),
    );
    let out = round(&p);
    let failed = assert_round_completed(&p, &out);
    let all = p.events_text();
    assert_eq!(failed["error_type"], "crashed", "{all}");
    let limit = p.events_of("plugin_write_limit");
    assert_eq!(limit.len(), 1, "{all}");
    assert!(limit[0]["used_bytes"].as_u64().unwrap() > 1 << 20, "{all}");
    assert_eq!(p.events_of("plugin_disabled").len(), 1, "{all}");
    let files = std::fs::read_dir(p.log_dir().join("plugins/hostile"))
        .unwrap()
        .count() as u64;
    let charge = agent_runner_plugin_host::common::write_limits::ENTRY_CHARGE_BYTES;
    assert!(files > (1 << 20) / charge, "{files} files");
    assert!(
        files < 2 * (1 << 20) / charge,
        "{files} files: the bound overshot"
    );
}

/// A project with `tests/hosts/loud.py` (spawn hook `noisy`, post-round hook
/// `long_wait`, `timeout_s = 3`); `allow` goes to `[plugins] spawn_override_allow`.
fn loud_project(allow: &[&str]) -> Project {
    let p = Project::new_as(OPERATOR.get());
    p.write_config(
        &p.config()
            .sandbox("require")
            .spawn_override_allow(allow)
            .host(
                HostSpec::new("loud", workspace_root().join("tests/hosts/loud.py"))
                    .provides(&["spawn_hook", "post_round"])
                    .timeout_s(3),
            ),
    );
    p
}

fn python_back_off_past_the_call_timeout_is_capped_unless_allowed() {
    let p = loud_project(&[]);
    round(&p).assert_code(0);
    let all = p.events_text();
    let ignored = p.events_of("plugin_post_round_override_ignored");
    assert_eq!(ignored.len(), 1, "{all}");
    assert_eq!(ignored[0]["action"], "back_off", "{all}");
    assert_eq!(ignored[0]["hook"], "long_wait", "{all}");
    assert!(
        ignored[0]["reason"]
            .as_str()
            .unwrap()
            .contains("capped to 3 s"),
        "{all}"
    );
    let decision = p.events_of("plugin_post_round_decision");
    assert_eq!(decision.len(), 1, "{all}");
    assert_eq!(decision[0]["back_off_s"], 3, "{all}");
    assert!(decision[0]["until"].is_null(), "{all}");

    // Listed by the operator: the reset time is the hook's to give.
    let p = loud_project(&["noisy", "long_wait"]);
    round(&p).assert_code(0);
    let all = p.events_text();
    assert!(
        p.events_of("plugin_post_round_override_ignored").is_empty(),
        "{all}"
    );
    let decision = p.events_of("plugin_post_round_decision");
    assert_eq!(decision[0]["until"], "2099-01-01T00:00:00.000Z", "{all}");
}

fn python_escape_sequences_reach_neither_peek_nor_narrate() {
    let p = loud_project(&[]);
    // narrate follows the record from its end: started first, it tells the round.
    std::fs::create_dir_all(p.log_dir()).unwrap();
    let narrate = p.spawn(&["monitor", "--mode", "narrate"]);
    round(&p).assert_code(0);
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 1, "{}", p.events_text());
    let peek = p.run(&["peek", "--events", "20"]);
    peek.assert_code(0);
    assert!(peek.stdout.contains("boom"), "{peek}");
    let said = agent_runner_e2e::wait_until("narrate", Duration::from_secs(30), || {
        let text = narrate.stdout_so_far();
        text.contains("boom").then_some(text)
    });
    narrate.signal(libc::SIGTERM);
    let _ = narrate.wait(RUN_TIMEOUT);
    for (what, text) in [("peek", &peek.stdout), ("narrate", &said)] {
        assert!(
            !text
                .chars()
                .any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{202e}'),
            "{what} printed a control character: {text:?}"
        );
        assert!(text.contains("boom\u{fffd}[2J"), "{what}: {text:?}");
    }
}

as_root_and_unprivileged!(
    rust_many_empty_files_count_against_state_max_mb,
    python_back_off_past_the_call_timeout_is_capped_unless_allowed,
    python_escape_sequences_reach_neither_peek_nor_narrate,
);

// Issue 24, the allow-list: a call nobody put on a deny-list is refused just the same,
// killed before it runs and named in `plugin_sandbox_kill` (docs/security.md "The
// allow-list").

fn rust_calls_outside_the_allow_list_are_killed_and_named() {
    for name in [
        "kcmp",
        "keyctl",
        "personality",
        "pidfd_getfd",
        "mlock",
        "sched_setaffinity",
        "ioprio_set",
        "setuid",
        "mq_open",
    ] {
        call_killed(name, name, "", |p| p.dir().to_owned());
    }
    // The queue was never made (where the mqueue filesystem is mounted to tell).
    assert!(!Path::new("/dev/mqueue/ar-hostile").exists());
}

/// Runs one round whose host makes the system call `name` on `path(&project)` and asserts
/// it returned one of `errnos` (the host went on and reported it).
fn call_denied(name: &str, errnos: &[i32], path: impl FnOnce(&Project) -> String) -> Project {
    let p = project_with(
        Lang::Rust,
        "call",
        "",
        |p| json!({ "name": name, "path": path(p) }),
    );
    let out = round(&p);
    assert_denied(&p, &out, "call", errnos);
    p
}

fn rust_new_namespaces_are_refused() {
    for (name, syscall) in [
        ("clone_newuser", "clone"),
        ("clone_newnet", "clone"),
        ("unshare_newns", "unshare"),
    ] {
        call_killed(name, syscall, "", |p| p.dir().to_owned());
    }
    // clone3's flags are in memory: it fails with ENOSYS, and libc falls back to clone.
    call_denied("clone3_newuser", &[libc::ENOSYS], |p| {
        p.dir().display().to_string()
    });
}

// The second attacker (docs/security.md "Attacked again"): attacks written from the
// updated docs alone. These held before the allow-list and still hold.

fn rust_kill_of_every_process_reaches_nothing_outside_the_host() {
    // kill(-1, SIGKILL): the host's PID namespace holds nothing but the host itself.
    call_denied("kill_all", &[libc::ESRCH], |p| {
        p.dir().display().to_string()
    });
}

fn rust_raising_its_own_file_size_limit_is_refused() {
    call_denied("raise_fsize", &[libc::EPERM], |p| {
        p.dir().display().to_string()
    });
}

fn rust_hard_links_and_symlinks_give_no_new_access() {
    // A writable name in the state dir for the read-only project lock in log_dir.
    let state = |p: &Project| p.log_dir().join("plugins/hostile");
    let p = call_denied("hardlink", &[libc::EXDEV, libc::EACCES], |p| {
        let lock = p.log_dir().join("agent-runner.lock");
        std::fs::create_dir_all(p.log_dir()).unwrap();
        std::fs::write(&lock, "1\n").unwrap();
        format!("{}|{}", lock.display(), state(p).join("lock").display())
    });
    assert!(!state(&p).join("lock").exists());
    // A symlink in TMPDIR to the SSH key opens nothing: Landlock checks the target.
    call_denied("symlink_and_open", &[libc::EACCES], |p| {
        ssh_key(p).display().to_string()
    });
}

fn rust_writing_dev_shm_is_denied() {
    let path = format!("/dev/shm/ar-hostile-{}", std::process::id());
    let p = project(Lang::Rust, "write", json!({ "path": path }), "");
    let out = round(&p);
    assert_denied(&p, &out, "write", &[libc::EACCES]);
    assert!(!Path::new(&path).exists());
}

as_root_and_unprivileged!(
    rust_calls_outside_the_allow_list_are_killed_and_named,
    rust_new_namespaces_are_refused,
    rust_pidfd_signal_to_the_supervisor_is_denied,
    rust_kill_of_every_process_reaches_nothing_outside_the_host,
    rust_raising_its_own_file_size_limit_is_refused,
    rust_hard_links_and_symlinks_give_no_new_access,
    rust_writing_dev_shm_is_denied,
);
