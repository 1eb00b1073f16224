//! Cold start per runtime: resolve + hash + pin check + confined launch (Landlock +
//! seccomp, `sandbox = "require"`) + `initialize`, p50 / p99, for the runtime matrix's
//! hosts (`tests/runtimes/`: bash, sh, Python, Node, Perl, Ruby; Rust:
//! `target/release/ar-e2e-runtime`), plus the Python SDK's own form of a host: the example
//! `python-pause-file` as `sdk/python/build_pyz.py` builds it (a zipapp with bytecode,
//! `#!/usr/bin/env -S python3 -I -S`). Goals (issue 11): ≤ 5 ms for Rust, ≤ 30 ms for
//! Python. A runtime missing on this machine is reported, not measured. Each script row
//! names the interpreter its `#!` line resolved to on this PATH.
//!
//! Run with `bash bench/cold_start.sh` (builds the Rust host and the zipapp first).

use agent_runner::config;
use agent_runner::hosts::builtin::DetectorHost;
use agent_runner::hosts::sandbox::SandboxGate;
use agent_runner::hosts::HostManager;
use agent_runner::record::events::EventLog;
use agent_runner_plugin_host::common::probe::probe;
use agent_runner_protocol::Family;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const COLD_STARTS: usize = 30;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// A project in `dir` whose one host `rt` runs `host`, pinned, under `require`.
fn project(dir: &Path, host: &Path) -> (config::Config, SandboxGate, EventLog) {
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::write(dir.join("prompts/main.md"), "bench").unwrap();
    let sha = agent_runner_plugin_host::host::pin::open_and_hash(host)
        .unwrap()
        .sha256;
    let text = format!(
        "schema_version = 1\n[agent]\ncommand = [\"true\"]\n[runtime]\nlog_dir = \"./logs\"\n\
         [plugins]\nsandbox = \"require\"\n[plugins.pin]\nrt = \"{sha}\"\n\
         [plugins.hosts.rt]\ncommand = [{host:?}]\nprovides = [\"spawn_hook\", \"dirty_handler\"]\n"
    );
    let path = dir.join("agent-runner.toml");
    std::fs::write(&path, text).unwrap();
    let config = config::load(&path).expect("config");
    let gate = SandboxGate::evaluate(config.plugins.sandbox, probe()).expect("require");
    let events = EventLog::new(&config.runtime.log_dir);
    (config, gate, events)
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let rows: Vec<(&str, PathBuf)> = vec![
        ("rust", root.join("target/release/ar-e2e-runtime")),
        ("sh", root.join("tests/runtimes/host.sh")),
        ("bash", root.join("tests/runtimes/host.bash")),
        ("python", root.join("tests/runtimes/host.py")),
        ("pyz-sdk", root.join("target/release/python-pause-file.pyz")),
        ("node", root.join("tests/runtimes/host.js")),
        ("perl", root.join("tests/runtimes/host.pl")),
        ("ruby", root.join("tests/runtimes/host.rb")),
    ];
    // Single-threaded, as the supervisor runs.
    // The built launcher: a bench executable does not sit beside it.
    agent_runner_plugin_host::Launcher::use_path(env!("CARGO_BIN_EXE_plugin-host"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("cold start (resolve+hash+pin+confine+initialize), landlock+seccomp, n={COLD_STARTS}");
    for (name, host) in rows {
        let dir = tempfile::tempdir().expect("tempdir");
        let Ok(canonical) = host.canonicalize() else {
            println!("  {name:<7} not measured: {} missing", host.display());
            continue;
        };
        let interpreter = match agent_runner_plugin_host::host::pin::open_and_hash(&canonical) {
            Ok(verified) => verified.interpreter.map(|i| i.path.display().to_string()),
            Err(_) => {
                println!("  {name:<7} not measured: its interpreter is not installed");
                continue;
            }
        };
        let (config, gate, events) = project(dir.path(), &canonical);
        let mut cold = Vec::with_capacity(COLD_STARTS);
        let mut failed = false;
        for _ in 0..COLD_STARTS {
            let started = Instant::now();
            let manager = rt.block_on(HostManager::boot(
                &config,
                &gate,
                &events,
                &DetectorHost::Off,
            ));
            cold.push(started.elapsed());
            failed |= manager.hooks(Family::SpawnHook).len() != 1;
            rt.block_on(manager.shutdown());
        }
        if failed {
            println!("  {name:<7} did not start (see the events in a round)");
            continue;
        }
        cold.sort();
        println!(
            "  {name:<7} p50 {:7.2} ms   p99 {:7.2} ms   {}",
            ms(percentile(&cold, 0.5)),
            ms(percentile(&cold, 0.99)),
            interpreter.unwrap_or_default()
        );
    }
}
