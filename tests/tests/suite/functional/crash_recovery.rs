//! Crash recovery: `serve` SIGKILLed mid-round (the agent working) and mid-hook-call (a host
//! hanging in `before_spawn`). Afterwards no host or agent process survives, the project
//! lock is free again for the next `serve` (an `flock` the kernel released), no event line
//! is torn, and the next round's number continues the count.

use agent_runner_e2e::serde_json::json;
use agent_runner_e2e::{wait_until, HostSpec, Project, Running};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

const HOSTILE: &str = env!("CARGO_BIN_EXE_ar-e2e-hostile");

/// SIGKILLs `serve` and waits for it to be gone, then for every process it started (agent,
/// hosts, their children: everything running in the project dir) to be gone too.
fn kill_serve(p: &Project, serve: Running) {
    serve.signal(libc::SIGKILL);
    let out = serve.wait(Duration::from_secs(20));
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{out}");
    wait_until(
        "no process left in the project",
        Duration::from_secs(10),
        || p.processes().is_empty().then_some(()),
    );
}

/// The round numbers of the `round_start` events, in order.
fn started_rounds(p: &Project) -> Vec<u64> {
    p.events_of("round_start")
        .iter()
        .map(|e| e["round_num"].as_u64().expect("round_num"))
        .collect()
}

/// After a crash: the next `serve --max-rounds 1` takes the lock, and its round is the
/// next number after `last`.
fn recovers(p: &Project, last: u64) {
    let out = p.run(&["serve", "--max-rounds", "1"]);
    out.assert_code(0);
    let rounds = started_rounds(p);
    assert_eq!(rounds.last(), Some(&(last + 1)), "{}", p.events_text());
    assert_eq!(
        p.events_of("round_end").last().expect("round_end")["round_num"],
        last + 1
    );
    p.assert_agent_ran(last + 1);
    p.assert_events_whole();
    assert!(p.processes().is_empty(), "{:?}", p.processes());
}

#[test]
fn sigkill_mid_round_kills_the_agent_and_serve_recovers() {
    let p = Project::new();
    p.write_config(&p.config().agent_env("DEMO_AGENT_SLEEP", "300"));
    let serve = p.spawn(&["serve"]);
    p.wait_for_event("round_start");
    // The agent (bash) and its `sleep` run in the project dir.
    wait_until("the agent working", Duration::from_secs(30), || {
        (p.processes().len() >= 2).then_some(())
    });
    kill_serve(&p, serve);
    p.assert_events_whole();
    assert_eq!(started_rounds(&p), [1]);
    assert!(p.events_of("round_end").is_empty());

    p.write_config(&p.config());
    recovers(&p, 1);
}

#[test]
fn sigkill_mid_hook_call_kills_the_host_and_serve_recovers() {
    let p = Project::new();
    p.write_config(&p.config());
    p.run(&["round"]).assert_code(0);

    p.write_config(
        &p.config().sandbox("require").host(
            HostSpec::new("sleepy", HOSTILE)
                .timeout_s(600)
                .config(json!({"attempt": "hang", "hook": "sleepy"})),
        ),
    );
    let serve = p.spawn(&["serve"]);
    let host = wait_until("the hanging host", Duration::from_secs(30), || {
        p.host_pids(&[Path::new(HOSTILE)]).first().copied()
    });
    // The call is sent right after `initialize`: wait until the host sleeps in it.
    wait_until("the hook call in flight", Duration::from_secs(30), || {
        agent_runner_e2e::sleeping(host).then_some(())
    });
    assert!(p.host_pids(&[Path::new(HOSTILE)]).contains(&host));
    assert_eq!(started_rounds(&p), [1], "the gate let a round start");
    kill_serve(&p, serve);
    p.assert_events_whole();

    p.write_config(&p.config());
    recovers(&p, 1);
}
