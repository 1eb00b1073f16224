//! Cost of a third-party hook through a real, fully confined host (Landlock + seccomp):
//! - cold start: resolve + hash + pin check + confined launch + `initialize`, under
//!   `sandbox = "require"` (Landlock + seccomp with its listener) and, for comparison, under
//!   `sandbox = "off"` (no Landlock, no seccomp; the environment allowlist, limits, PID
//!   namespace and pids cgroup still apply): the difference is the cost of the two layers;
//! - warm call: one `spawn_hook/before_spawn` round trip, p50 / p99 (confined).
//!
//! Run with `bash bench/host_call.sh` (builds the example host first). The host is
//! `target/release/spawn-pause-file`, or the path in `AR_BENCH_HOST`.

use agent_runner::config;
use agent_runner::events::EventLog;
use agent_runner::hosts::HostManager;
use agent_runner::sandbox::SandboxGate;
use agent_runner_plugin_host::probe::probe;
use agent_runner_protocol::{methods, Family};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const COLD_STARTS: usize = 50;
const WARM_CALLS: usize = 5000;

fn host_binary() -> PathBuf {
    std::env::var_os("AR_BENCH_HOST")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/spawn-pause-file")
        })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Writes a project config in `dir` with one pinned host and `sandbox = <mode>`; loads it.
fn project_config(dir: &std::path::Path, host: &std::path::Path, mode: &str) -> config::Config {
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::write(dir.join("prompts/main.md"), "bench").unwrap();
    let sha = agent_runner_plugin_host::pin::open_and_hash(host)
        .unwrap()
        .sha256;
    let config_path = dir.join("agent-runner.toml");
    std::fs::write(
        &config_path,
        format!(
            "schema_version = 1\n[agent]\ncommand = [\"true\"]\n[runtime]\nlog_dir = \"./logs\"\n\
             [plugins]\nsandbox = \"{mode}\"\n[plugins.pin]\npause = \"{sha}\"\n\
             [plugins.hosts.pause]\ncommand = [{host:?}]\nprovides = [\"spawn_hook\"]\n"
        ),
    )
    .unwrap();
    config::load(&config_path).expect("config")
}

/// `COLD_STARTS` boots of the host manager (launch + `initialize`) and shutdowns, sorted.
fn cold_starts(
    rt: &tokio::runtime::Runtime,
    config: &config::Config,
    gate: &SandboxGate,
    events: &EventLog,
) -> Vec<Duration> {
    let mut cold = Vec::with_capacity(COLD_STARTS);
    for _ in 0..COLD_STARTS {
        let started = Instant::now();
        let manager = rt.block_on(HostManager::boot(config, gate, events));
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
    let host = host_binary();
    assert!(host.is_file(), "{} not found: run `cargo build --release -p example-spawn-pause-file` (bench/host_call.sh does)", host.display());
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let off = project_config(dir.path(), &host, "off");
    let off_gate = SandboxGate::evaluate(off.plugins.sandbox, probe()).expect("off");
    let off_events = EventLog::new(&off.runtime.log_dir);
    let cold_off = cold_starts(&rt, &off, &off_gate, &off_events);

    let config = project_config(dir.path(), &host, "require");
    let gate = SandboxGate::evaluate(config.plugins.sandbox, probe()).expect("landlock+seccomp");
    let events = EventLog::new(&config.runtime.log_dir);
    let cold = cold_starts(&rt, &config, &gate, &events);

    let mut manager = rt.block_on(HostManager::boot(&config, &gate, &events));
    let hook = manager.hooks(Family::SpawnHook).remove(0);
    let params = json!({"hook": "pause_file", "spawn": {"argv": ["agent", "prompt"], "env_names": ["HOME", "PATH"]},
        "ctx": {"work_dir": config.runtime.work_dir, "log_dir": config.runtime.log_dir, "project": "bench",
                "round_num": 1, "phase": null, "agent_name": null, "agent_binary": "agent", "agent_log_path": null,
                "dry_run": false, "vcs": null}});
    let mut warm = Vec::with_capacity(WARM_CALLS);
    for _ in 0..WARM_CALLS {
        let started = Instant::now();
        let answer = rt.block_on(manager.call(&hook, methods::BEFORE_SPAWN, params.clone()));
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
