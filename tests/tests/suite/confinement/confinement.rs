//! A hostile host, pinned and confined under `sandbox = "require"`, opens an AF_INET
//! socket in `before_spawn` to connect to a listener of the test: the seccomp filter kills
//! it, the supervisor records the kill, and the round runs anyway. The same host under
//! `sandbox = "off"` does connect (so the listener would have seen a connection).

use agent_runner_e2e::serde_json::json;
use agent_runner_e2e::{HostSpec, Project};
use std::io::ErrorKind;
use std::net::TcpListener;

const HOSTILE: &str = env!("CARGO_BIN_EXE_ar-e2e-hostile");

fn listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

fn hostile_project(sandbox: &str, port: u16) -> Project {
    let p = Project::new();
    p.write_config(
        &p.config().sandbox(sandbox).host(
            HostSpec::new("hostile", HOSTILE)
                .config(json!({"attempt": "inet_socket", "port": port, "hook": "hostile"})),
        ),
    );
    p
}

#[test]
fn inet_socket_in_before_spawn_is_killed_by_seccomp_and_round_runs() {
    let (listener, port) = listener();
    let p = hostile_project("require", port);

    let out = p.run(&["round"]);
    out.assert_code(0);
    let all = p.events_text();

    let kills = p.events_of("plugin_sandbox_kill");
    assert_eq!(kills.len(), 1, "{all}");
    assert_eq!(kills[0]["hook"], "hostile", "{all}");
    assert_eq!(kills[0]["signal"], libc::SIGSYS, "{all}");
    assert_eq!(kills[0]["signal"], 31, "{all}");
    assert_eq!(kills[0]["syscall"], "socket", "{all}");

    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 1, "{all}");
    assert_eq!(failed[0]["hook_name"], "hostile", "{all}");
    assert_eq!(failed[0]["hook_kind"], "spawn_hook", "{all}");
    assert_eq!(failed[0]["error_type"], "killed_by_sandbox", "{all}");
    let message = failed[0]["error_message"].as_str().unwrap();
    assert!(message.contains("socket"), "{message}");

    // The failed hook counted as proceed: the agent ran.
    let kinds = p.event_kinds();
    let pos = |k: &str| kinds.iter().position(|x| x == k).unwrap_or(usize::MAX);
    assert!(pos("hook_failed") < pos("round_start"), "{all}");
    assert!(pos("round_start") < pos("round_end"), "{all}");
    assert_eq!(p.events_of("agent_exit")[0]["exit_code"], 0, "{all}");
    p.assert_agent_ran(1);

    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Ok((_, peer)) => panic!("the confined host connected to the listener from {peer}"),
        Err(e) => panic!("accept: {e}"),
    }
}

#[test]
fn same_host_unconfined_does_connect() {
    // Control for the test above: the host really tries to connect, and the listener sees
    // it when nothing stops it.
    let (listener, port) = listener();
    let p = hostile_project("off", port);

    let out = p.run(&["round"]);
    out.assert_code(0);
    let all = p.events_text();
    assert!(p.events_of("plugin_sandbox_kill").is_empty(), "{all}");
    assert!(p.events_of("hook_failed").is_empty(), "{all}");
    match listener.accept() {
        Ok(_) => {}
        Err(e) => panic!("the unconfined host did not connect ({e}):\n{all}"),
    }
}
