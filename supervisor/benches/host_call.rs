//! Cost of a third-party hook through a real, fully confined host (Landlock + seccomp):
//! - cold start: resolve + hash + pin check + confined launch + `initialize`, under
//!   `sandbox = "require"` (Landlock + seccomp with its listener) and, for comparison, under
//!   `sandbox = "off"` (no Landlock, no seccomp; the environment allowlist, limits, PID
//!   namespace and pids cgroup still apply): the difference is the cost of the two layers;
//! - warm call: one `spawn_hook/before_spawn` round trip, p50 / p99 (confined).
//!
//! Run with `bash bench/host_call.sh` (builds the example host first). The host is
//! `target/release/spawn-pause-file`, or the path in `AR_BENCH_HOST` (setup: `common/`).
//! Criterion measures the same calls in `hooks.rs`; this harness adds the p99.

mod common;

use agent_runner::hosts::builtin::DetectorHost;
use agent_runner::hosts::HostManager;
use agent_runner_protocol::Family;
use common::Project;
use std::time::{Duration, Instant};

const COLD_STARTS: usize = 50;
const WARM_CALLS: usize = 5000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// `COLD_STARTS` boots of the host manager (launch + `initialize`) and shutdowns, sorted.
fn cold_starts(rt: &tokio::runtime::Runtime, project: &Project) -> Vec<Duration> {
    let mut cold = Vec::with_capacity(COLD_STARTS);
    for _ in 0..COLD_STARTS {
        let started = Instant::now();
        let manager = rt.block_on(HostManager::boot(
            &project.config,
            &project.gate,
            &project.events,
            &DetectorHost::Off,
        ));
        cold.push(started.elapsed());
        assert_eq!(
            manager.hooks(Family::SpawnHook).len(),
            1,
            "host did not start"
        );
        rt.block_on(manager.shutdown());
    }
    cold.sort();
    cold
}

fn main() {
    let host = common::host_binary();
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = common::runtime();

    let off = common::project(dir.path(), &host, "off", 1);
    let cold_off = cold_starts(&rt, &off);

    let confined = common::project(dir.path(), &host, "require", 1);
    let cold = cold_starts(&rt, &confined);

    let mut manager = rt.block_on(HostManager::boot(
        &confined.config,
        &confined.gate,
        &confined.events,
        &DetectorHost::Off,
    ));
    let hook = manager.hooks(Family::SpawnHook).remove(0);
    let params = common::before_spawn_params(&confined.config, &hook.name);
    let mut warm = Vec::with_capacity(WARM_CALLS);
    for _ in 0..WARM_CALLS {
        let started = Instant::now();
        let answer = rt.block_on(manager.call(&hook, params.clone()));
        warm.push(started.elapsed());
        assert!(matches!(answer, Ok(Some(_))), "call failed: {answer:?}");
    }
    rt.block_on(manager.shutdown());

    warm.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("host: {}", host.display());
    println!(
        "cold start (resolve+hash+pin+confine+initialize), landlock+seccomp, n={COLD_STARTS}: p50 {:.0} us, p99 {:.0} us",
        us(percentile(&cold, 0.5)),
        us(percentile(&cold, 0.99))
    );
    println!(
        "cold start, sandbox = \"off\" (unconfined tier), n={COLD_STARTS}: p50 {:.0} us, p99 {:.0} us",
        us(percentile(&cold_off, 0.5)),
        us(percentile(&cold_off, 0.99))
    );
    println!(
        "cost of Landlock + seccomp at cold start (p50 difference): {:.0} us",
        us(percentile(&cold, 0.5)) - us(percentile(&cold_off, 0.5))
    );
    println!(
        "warm before_spawn call, n={WARM_CALLS}: p50 {:.1} us, p99 {:.1} us",
        us(percentile(&warm, 0.5)),
        us(percentile(&warm, 0.99))
    );
}
