//! A hostile agent under `[agent.sandbox] mode = "require"` against the seccomp observer's
//! listener thread, which lives in the supervisor (docs/security.md "Denials told, not
//! silent"): every read-only open of the agent is notified to it, and what it predicts
//! Landlock refuses is queued until the round ends. The agent floods it with refused reads
//! of a credential store, each named by a different path of nearly `PATH_MAX` bytes (runs
//! of `/` and `./` that all lead to `~/.npmrc`): the supervisor's memory must stay bounded
//! (the queue is capped in bytes, not only in count), and the reads are still told.
//!
//! The same agent's second flood: a loop of a call the agent's seccomp program refuses
//! (`unshare(CLONE_NEWUSER)`, answered `EPERM` by the listener, each queued as a denial
//! until the round ends) for `DENY_SECONDS`: the queue of denials is capped too.
//!
//! Control: each flood reaches the listener (the agent saw every open, every call,
//! refused, far more of them than any cap, and the round's `agent_sandbox_denied` events
//! tell them), so a queue without the caps holds them all: before the caps this test
//! measured the supervisor's peak resident set at 339 MiB for the reads and 361 to
//! 397 MiB for 20 s of refused calls (growing for as long as the agent loops), as root
//! and as `ar-e2e`; the assertions below then failed.

use agent_runner_e2e::{Operator, Project};

/// How many refused opens the agent makes, each with its own path.
const OPENS: usize = 40_000;

/// The agent: opens `~/.npmrc` by `OPENS` distinct paths of ~3,900 bytes, and prints how
/// many were refused.
const AGENT: &str = r#"#!/bin/bash
exec /usr/bin/python3 -c '
import os, sys
home = os.environ["HOME"].rstrip("/")
n = int(os.environ["OPENS"])
refused = 0
opened = 0
for i in range(n):
    a, c = i % 1800, i // 1800
    path = "/" * (1 + a) + home[1:] + "/" + "./" * c
    path += "/" * (3900 - len(path)) + ".npmrc"
    try:
        os.close(os.open(path, os.O_RDONLY))
        opened += 1
    except PermissionError:
        refused += 1
print("refused", refused)
print("opened", opened)
'
"#;

/// How long the second agent loops on a refused call.
const DENY_SECONDS: u64 = 20;

/// The agent: `unshare(CLONE_NEWUSER)` in a loop for `DENY_SECONDS`, printing how many
/// calls were refused with `EPERM`.
const DENY_AGENT: &str = r#"#!/bin/bash
exec /usr/bin/python3 -c '
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
end = time.monotonic() + float(os.environ["DENY_SECONDS"])
refused = other = 0
while time.monotonic() < end:
    for _ in range(1000):
        if libc.syscall(272, 0x10000000) < 0 and ctypes.get_errno() == 1:
            refused += 1
        else:
            other += 1
print("refused", refused)
print("other", other)
'
"#;

/// Runs `agent-runner round` in `p` to completion; its output, and the supervisor's peak
/// resident set in MiB (`VmHWM` of its `/proc` status, read until it exits).
fn round_with_peak(p: &Project) -> (agent_runner_e2e::RunOutput, u64) {
    let mut running = p.spawn(&["round"]);
    let status = format!("/proc/{}/status", running.pid());
    let mut peak_kib = 0u64;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while !running.has_exited() && std::time::Instant::now() < deadline {
        if let Ok(text) = std::fs::read_to_string(&status) {
            if let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            {
                peak_kib = peak_kib.max(kib);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = running.wait(std::time::Duration::from_secs(30));
    (out, peak_kib / 1024)
}

fn flood(operator: Operator) {
    let p = Project::new_as(operator);
    std::fs::write(
        p.home().join(".npmrc"),
        "//registry.npmjs.org/:_authToken=npm_x\n",
    )
    .unwrap();
    let agent = p.script("agent/observer-flood.sh", AGENT);
    let text = agent_runner_e2e::ConfigBuilder::new(&agent)
        .round_budget_s(240)
        .agent_env("OPENS", &OPENS.to_string())
        .render()
        .replacen(
            "[runtime]\n",
            "[agent.sandbox]\nmode = \"require\"\n[runtime]\n",
            1,
        );
    p.write_config_text(&text);
    let (out, peak_mib) = round_with_peak(&p);
    let events = p.events_text();
    assert_eq!(out.code(), 0, "{out}");
    let log = std::fs::read_to_string(&p.round_logs()[0]).unwrap();
    // Control: every open reached the kernel and was refused (Landlock), so each was
    // notified to the listener first.
    assert!(log.contains(&format!("refused {OPENS}")), "{log}\n{events}");
    let reads: Vec<serde_json::Value> = p
        .events_of("agent_sandbox_denied")
        .into_iter()
        .filter(|e| e["layer"] == "landlock" && e["access"] == "read")
        .collect();
    assert!(
        reads
            .iter()
            .any(|e| e["target"].as_str().unwrap().ends_with("/.npmrc")),
        "{events}"
    );
    // The supervisor held no more than a few MiB of the agent's paths.
    eprintln!("peak RSS of the supervisor: {peak_mib} MiB");
    assert!(peak_mib < 100, "peak {peak_mib} MiB\n{events}");
}

fn deny_flood(operator: Operator) {
    let p = Project::new_as(operator);
    let agent = p.script("agent/deny-flood.sh", DENY_AGENT);
    let text = agent_runner_e2e::ConfigBuilder::new(&agent)
        .round_budget_s(240)
        .agent_env("DENY_SECONDS", &DENY_SECONDS.to_string())
        .render()
        .replacen(
            "[runtime]\n",
            "[agent.sandbox]\nmode = \"require\"\n[runtime]\n",
            1,
        );
    p.write_config_text(&text);
    let (out, peak_mib) = round_with_peak(&p);
    let events = p.events_text();
    assert_eq!(out.code(), 0, "{out}");
    let log = std::fs::read_to_string(&p.round_logs()[0]).unwrap();
    let refused: u64 = log
        .lines()
        .find_map(|l| l.strip_prefix("refused "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{log}"));
    eprintln!("{refused} refused calls; peak RSS of the supervisor: {peak_mib} MiB");
    // Control: the flood reached the listener: far more refused calls than any cap, and
    // the denial is told.
    assert!(refused > 200_000, "{log}");
    assert!(log.contains("other 0"), "{log}");
    let told: Vec<serde_json::Value> = p
        .events_of("agent_sandbox_denied")
        .into_iter()
        .filter(|e| e["layer"] == "seccomp")
        .collect();
    assert!(
        told.iter()
            .any(|e| e["target"].as_str().unwrap().contains("unshare")),
        "{events}"
    );
    assert!(peak_mib < 100, "peak {peak_mib} MiB\n{events}");
}

#[test]
fn a_loop_of_refused_calls_leaves_the_supervisor_s_memory_bounded_as_root() {
    deny_flood(Operator::Root);
}

#[test]
fn a_loop_of_refused_calls_leaves_the_supervisor_s_memory_bounded_as_unprivileged_user() {
    deny_flood(Operator::Unprivileged);
}

#[test]
fn a_flood_of_refused_reads_by_long_paths_leaves_the_supervisor_s_memory_bounded_as_root() {
    flood(Operator::Root);
}

#[test]
fn a_flood_of_refused_reads_by_long_paths_leaves_the_supervisor_s_memory_bounded_as_unprivileged_user(
) {
    flood(Operator::Unprivileged);
}
