//! Cost of a third-party hook through a real, fully confined host (Landlock + seccomp):
//! - cold start: resolve + hash + pin check + confined launch + `initialize`;
//! - warm call: one `spawn_hook/before_spawn` round trip, p50 / p99.
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

fn main() {
    let host = host_binary();
    assert!(host.is_file(), "{} not found: run `cargo build --release -p example-spawn-pause-file` (bench/host_call.sh does)", host.display());
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("prompts")).unwrap();
    std::fs::write(dir.path().join("prompts/main.md"), "bench").unwrap();
    let sha = agent_runner_plugin_host::pin::open_and_hash(&host)
        .unwrap()
        .sha256;
    let config_path = dir.path().join("agent-runner.toml");
    std::fs::write(
        &config_path,
        format!(
            "schema_version = 1\n[agent]\ncommand = [\"true\"]\n[runtime]\nlog_dir = \"./logs\"\n\
             [plugins]\nsandbox = \"require\"\n[plugins.pin]\npause = \"{sha}\"\n\
             [plugins.hosts.pause]\ncommand = [{host:?}]\nprovides = [\"spawn_hook\"]\n"
        ),
    )
    .unwrap();
    let config = config::load(&config_path).expect("config");
    let gate = SandboxGate::evaluate(config.plugins.sandbox, probe()).expect("landlock+seccomp");
    let events = EventLog::new(&config.runtime.log_dir);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let mut cold = Vec::with_capacity(COLD_STARTS);
    for _ in 0..COLD_STARTS {
        let started = Instant::now();
        let manager = rt.block_on(HostManager::boot(&config, &gate, &events));
        cold.push(started.elapsed());
        assert_eq!(
            manager.hooks(Family::SpawnHook).len(),
            1,
            "host did not start"
        );
        rt.block_on(manager.shutdown());
    }

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

    cold.sort();
    warm.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("host: {} (landlock+seccomp)", host.display());
    println!(
        "cold start (resolve+hash+pin+confine+initialize), n={COLD_STARTS}: p50 {:.0} us, p99 {:.0} us",
        us(percentile(&cold, 0.5)),
        us(percentile(&cold, 0.99))
    );
    println!(
        "warm before_spawn call, n={WARM_CALLS}: p50 {:.1} us, p99 {:.1} us",
        us(percentile(&warm, 0.5)),
        us(percentile(&warm, 0.99))
    );
}
