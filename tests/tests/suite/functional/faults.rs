//! Fault injection: hosts that fail on purpose (`ar-e2e-faulty`), pinned and confined under
//! `require`. For each fault the call fails with the right `error_type` (a `hook_failed`
//! event), the round completes (`round_end`, exit 0), the next call gets a fresh host (a
//! different pid), nothing the host started survives `serve`, and the supervisor does not
//! accumulate descriptors, threads or zombie children across faulty rounds.

use agent_runner_e2e::serde_json::{json, Value};
use agent_runner_e2e::{wait_until, HostSpec, Project, EVENT_TIMEOUT};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::Duration;

const FAULTY: &str = env!("CARGO_BIN_EXE_ar-e2e-faulty");

/// The launch ids of every launch of host `name`, in launch order (the host appends one,
/// `<pid>-<start ns>`, to `<log_dir>/plugins/<name>/pids`).
fn launches(p: &Project, name: &str) -> Vec<String> {
    fs::read_to_string(p.log_dir().join("plugins").join(name).join("pids"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Runs `serve --max-rounds 2` with `host` as the only host and asserts both rounds
/// completed. Returns the project and the `hook_failed` events.
fn serve_two_rounds(host: HostSpec) -> (Project, Vec<Value>) {
    let p = Project::new();
    p.write_config(&p.config().sandbox("require").host(host));
    let out = p.run(&["serve", "--max-rounds", "2"]);
    out.assert_code(0);
    let all = p.events_text();
    let ends: Vec<u64> = p
        .events_of("round_end")
        .iter()
        .map(|e| e["round_num"].as_u64().expect("round_num"))
        .collect();
    assert_eq!(ends, [1, 2], "{all}");
    p.assert_agent_ran(1);
    p.assert_agent_ran(2);
    let left = p.host_pids(&[Path::new(FAULTY)]);
    assert!(left.is_empty(), "hosts left running: {left:?}\n{all}");
    let failed = p.events_of("hook_failed");
    (p, failed)
}

/// One faulty host failing every call with `fault`: both calls fail with `error_type`,
/// each in a host of its own. Returns the project and the failures.
fn every_call_fails(fault: &str, timeout_s: u64, error_type: &str) -> (Project, Vec<Value>) {
    let (p, failed) = serve_two_rounds(
        HostSpec::new("faulty", FAULTY)
            .timeout_s(timeout_s)
            .config(json!({ "fault": fault })),
    );
    let all = p.events_text();
    assert_eq!(failed.len(), 2, "{all}");
    for event in &failed {
        assert_eq!(event["hook_name"], "faulty", "{all}");
        assert_eq!(event["hook_kind"], "spawn_hook", "{all}");
        assert_eq!(event["error_type"], error_type, "{all}");
    }
    let pids = launches(&p, "faulty");
    assert_eq!(pids.len(), 2, "one launch per call: {pids:?}\n{all}");
    assert_ne!(pids[0], pids[1], "the second call reused the failed host");
    (p, failed)
}

#[test]
fn one_mebibyte_line_is_a_protocol_violation() {
    let (_p, failed) = every_call_fails("huge_line", 10, "protocol_violation");
    let message = failed[0]["error_message"].as_str().unwrap();
    assert!(message.contains("line longer than"), "{message}");
}

#[test]
fn slow_drip_times_out() {
    let (_p, failed) = every_call_fails("drip", 2, "timeout");
    let message = failed[0]["error_message"].as_str().unwrap();
    assert!(message.contains("within 2 s"), "{message}");
}

#[test]
fn closed_stdout_with_the_process_alive_is_a_protocol_violation() {
    let (_p, failed) = every_call_fails("close_stdout", 10, "protocol_violation");
    let message = failed[0]["error_message"].as_str().unwrap();
    assert!(message.contains("closed its stdout"), "{message}");
}

#[test]
fn zombie_making_host_crashes_and_its_zombies_are_not_ours() {
    let (_p, failed) = every_call_fails("zombies", 10, "crashed");
    let message = failed[0]["error_message"].as_str().unwrap();
    assert!(message.contains("status 1"), "{message}");
}

#[test]
fn host_ignoring_sigterm_and_eof_times_out_and_is_killed() {
    // The hung host ignores SIGTERM and stdin EOF: only the group SIGKILL ends it, and
    // serve_two_rounds checks that none is left.
    every_call_fails("ignore_sigterm", 1, "timeout");
}

#[test]
fn exit_during_initialize_at_boot_disables_the_host() {
    let (p, failed) = serve_two_rounds(
        HostSpec::new("faulty", FAULTY).config(json!({"exit_in_initialize_from_launch": 1})),
    );
    let all = p.events_text();
    assert_eq!(failed.len(), 1, "{all}");
    assert_eq!(failed[0]["hook_kind"], "initialize", "{all}");
    assert_eq!(failed[0]["error_type"], "crashed", "{all}");
    let message = failed[0]["error_message"].as_str().unwrap();
    assert!(message.contains("status 3"), "{message}");
    // Refused at boot: never started again for a call.
    assert_eq!(launches(&p, "faulty").len(), 1, "{all}");
}

#[test]
fn exit_during_initialize_of_a_restart_fails_that_call() {
    // Launch 1 crashes in its call; the restart for round 2 exits during `initialize`.
    let (p, failed) = serve_two_rounds(
        HostSpec::new("faulty", FAULTY)
            .config(json!({"fault": "crash", "exit_in_initialize_from_launch": 2})),
    );
    let all = p.events_text();
    assert_eq!(failed.len(), 2, "{all}");
    for event in &failed {
        assert_eq!(event["hook_kind"], "spawn_hook", "{all}");
        assert_eq!(event["error_type"], "crashed", "{all}");
    }
    let message = failed[1]["error_message"].as_str().unwrap();
    assert!(message.contains("status 3"), "{message}");
    let pids = launches(&p, "faulty");
    assert_eq!(pids.len(), 2, "{all}");
    assert_ne!(pids[0], pids[1]);
}

/// What the supervisor holds at one moment.
#[derive(Debug, Clone, Copy)]
struct Sample {
    fds: usize,
    threads: usize,
    zombie_children: usize,
}

fn sample(pid: u32) -> Sample {
    let fds = fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("supervisor fd dir")
        .count();
    let status = fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let threads = status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("Threads line");
    Sample {
        fds,
        threads,
        zombie_children: zombie_children(pid),
    }
}

/// Processes in state `Z` whose parent is `parent`.
fn zombie_children(parent: u32) -> usize {
    let Ok(entries) = fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
            state == Some("Z") && ppid == Some(parent)
        })
        .count()
}

/// Waits for the `round_end` of round `round` and samples the supervisor right after
/// (during the restart delay, when every host is in the same state each even round).
fn sample_after_round(p: &Project, pid: u32, round: u64) -> Sample {
    wait_until(&format!("round_end {round}"), EVENT_TIMEOUT, || {
        p.events_of("round_end")
            .iter()
            .any(|e| e["round_num"] == round)
            .then_some(())
    });
    sample(pid)
}

#[test]
fn supervisor_does_not_grow_across_faulty_rounds() {
    const ROUNDS: u64 = 6;
    let faults = [
        ("huge", "huge_line", 10),
        ("drip", "drip", 2),
        ("closed", "close_stdout", 10),
        ("zombies", "zombies", 10),
        ("stubborn", "ignore_sigterm", 1),
    ];
    let p = Project::new();
    let mut config = p.config().sandbox("require").restart_delay_s(2);
    for (name, fault, timeout_s) in faults {
        // Odd calls fail, even ones succeed: never two failures in a row, so no backoff
        // and no disabling; after every even round each host is alive and healthy.
        config = config.host(
            HostSpec::new(name, FAULTY)
                .timeout_s(timeout_s)
                .config(json!({"fault": fault, "fail_every": 2, "hook": name})),
        );
    }
    p.write_config(&config);
    let serve = p.spawn(&["serve", "--max-rounds", &ROUNDS.to_string()]);
    let pid = serve.pid();
    let early = sample_after_round(&p, pid, 2);
    let late = sample_after_round(&p, pid, ROUNDS);
    let out = serve.wait(Duration::from_secs(120));
    out.assert_code(0);

    let all = p.events_text();
    assert_eq!(p.events_of("round_end").len() as u64, ROUNDS, "{all}");
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len() as u64, 5 * ROUNDS / 2, "{all}");
    assert!(p.events_of("plugin_disabled").is_empty(), "{all}");
    for (name, _, _) in faults {
        let pids: BTreeSet<String> = launches(&p, name).into_iter().collect();
        assert_eq!(pids.len() as u64, ROUNDS / 2 + 1, "{name}: {pids:?}");
    }
    assert!(
        late.fds <= early.fds + 2,
        "descriptors grew: {early:?} -> {late:?}"
    );
    assert!(
        // Blocking-pool threads come and go; a leak would add one per failed call (10).
        late.threads <= early.threads + 4,
        "threads grew: {early:?} -> {late:?}"
    );
    // A zombie caught between a child's exit and its reaping is not a leak; a leaked one
    // stays. So the late sample's zombies must be gone within moments.
    if late.zombie_children > 0 {
        wait_until(
            &format!("supervisor's zombie children reaped ({late:?})"),
            Duration::from_secs(3),
            || (zombie_children(pid) == 0).then_some(()),
        );
    }
    assert_eq!(early.zombie_children, 0, "{early:?}");
    let left = p.host_pids(&[Path::new(FAULTY)]);
    assert!(left.is_empty(), "hosts left running: {left:?}");
}
