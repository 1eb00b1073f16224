//! Soak: `serve` for many short rounds with two confined hosts (the pause-file spawn hook,
//! no pause file, and the dirty-commit handler). The supervisor's resident memory and
//! descriptor count stay flat, no process is left behind, every `round_start` has its
//! `round_end`, and every event line is whole JSON.
//!
//! The round count comes from `AR_SOAK_ROUNDS` (default 40, about a minute here:
//! `restart_delay_s` cannot go below 1 s). The long run:
//!
//! ```text
//! AR_SOAK_ROUNDS=1000 cargo test -p agent-runner-e2e --test all soak:: -- --nocapture
//! ```
//!
//! takes about 20 minutes.

use agent_runner_e2e::{
    dirty_commit_host_bin, pause_host_bin, wait_until, HostSpec, Project, EVENT_TIMEOUT,
};
use std::fs;
use std::time::Duration;

/// Rounds when `AR_SOAK_ROUNDS` is not set.
const DEFAULT_ROUNDS: u64 = 40;

/// The supervisor's resident set (kB) and open descriptors.
#[derive(Debug, Clone, Copy)]
struct Footprint {
    rss_kb: u64,
    fds: usize,
}

fn footprint(pid: u32) -> Footprint {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let rss_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS line");
    let fds = fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fd dir")
        .count();
    Footprint { rss_kb, fds }
}

/// Waits for the `round_end` of `round`, then measures the supervisor (in the restart
/// delay that follows).
fn footprint_after(p: &Project, pid: u32, round: u64) -> Footprint {
    // A generous bound: rounds take a little over `restart_delay_s` (1 s) each.
    let deadline = EVENT_TIMEOUT + Duration::from_secs(5 * round);
    wait_until(&format!("round_end {round}"), deadline, || {
        p.events_of("round_end")
            .iter()
            .any(|e| e["round_num"] == round)
            .then_some(())
    });
    footprint(pid)
}

#[test]
fn serve_stays_flat_over_many_rounds() {
    let rounds: u64 = std::env::var("AR_SOAK_ROUNDS")
        .ok()
        .map(|v| v.parse().expect("AR_SOAK_ROUNDS is a number"))
        .unwrap_or(DEFAULT_ROUNDS);
    assert!(rounds >= 8, "AR_SOAK_ROUNDS must be at least 8");
    // Both samples after an odd round: the demo agent leaves the tree dirty in odd rounds,
    // so both follow the same work (a dirty-handler call and a commit).
    let late_round = rounds - 1 - rounds % 2;

    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("require")
            .restart_delay_s(1)
            .spawn_override_allow(&["pause_file"])
            .host(HostSpec::new("pause", pause_host_bin()))
            .host(HostSpec::new("wip", dirty_commit_host_bin()).provides(&["dirty_handler"])),
    );
    let serve = p.spawn(&["serve", "--max-rounds", &rounds.to_string()]);
    let pid = serve.pid();
    let early = footprint_after(&p, pid, 5);
    let late = footprint_after(&p, pid, late_round);
    let out = serve.wait(Duration::from_secs(30 + 5 * rounds));
    out.assert_code(0);
    eprintln!("soak: {rounds} rounds; after round 5 {early:?}, after round {late_round} {late:?}");

    p.assert_events_whole();
    let all = p.events();
    let numbers = |kind: &str| -> Vec<u64> {
        all.iter()
            .filter(|e| e["event"] == kind)
            .map(|e| e["round_num"].as_u64().expect("round_num"))
            .collect()
    };
    let expected: Vec<u64> = (1..=rounds).collect();
    assert_eq!(numbers("round_start"), expected);
    assert_eq!(numbers("round_end"), expected);
    let failures: Vec<_> = all.iter().filter(|e| e["event"] == "hook_failed").collect();
    assert!(failures.is_empty(), "{failures:?}");
    // The dirty handler committed every odd round.
    let wip = p
        .log_subjects()
        .iter()
        .filter(|s| !s.starts_with("demo-agent:"))
        .count();
    assert!(wip as u64 > rounds / 2, "{:?}", p.log_subjects());

    assert!(
        late.fds <= early.fds + 2,
        "descriptors grew: {early:?} -> {late:?}"
    );
    assert!(
        late.rss_kb <= early.rss_kb + (early.rss_kb / 4).max(4096),
        "resident memory grew: {early:?} -> {late:?}"
    );
    assert!(p.processes().is_empty(), "left behind: {:?}", p.processes());
}
