//! Setup shared by the hook benchmarks (`host_call.rs`, `hooks.rs`): a project directory
//! whose config pins N copies of the example host `spawn-pause-file`, confined or not, and
//! the `before_spawn` request a round sends.
//!
//! The host is `target/release/spawn-pause-file` (build it with
//! `cargo build --release -p example-spawn-pause-file`), or the path in `AR_BENCH_HOST`.

use agent_runner::config::{self, Config};
use agent_runner::hosts::sandbox::SandboxGate;
use agent_runner::record::events::EventLog;
use agent_runner_plugin_host::common::probe::probe;
use agent_runner_protocol::{BeforeSpawnParams, Context, HookName, SpawnView};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The host executable under test; panics with the build command when it is missing.
pub fn host_binary() -> PathBuf {
    let host = std::env::var_os("AR_BENCH_HOST")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/spawn-pause-file")
        });
    assert!(
        host.is_file(),
        "{} not found: run `cargo build --release -p example-spawn-pause-file`",
        host.display()
    );
    host
}

/// A loaded project: its config, the sandbox gate it asks for, its event log.
pub struct Project {
    /// The loaded `agent-runner.toml`.
    pub config: Config,
    /// The evaluated `[plugins] sandbox` mode on this machine.
    pub gate: SandboxGate,
    /// The project's event log (under `./logs`).
    pub events: EventLog,
}

/// Writes `agent-runner.toml` in `dir` with `hosts` copies of `host`, all pinned, named
/// `pause0`, `pause1`, … with hook names `pause_file_0`, … (hook names are unique across
/// hosts), under `sandbox = <mode>` ("require" = Landlock + seccomp), and loads it. No
/// pause file exists, so every hook answers proceed. Panics when the machine cannot
/// provide `mode`.
pub fn project(dir: &Path, host: &Path, mode: &str, hosts: usize) -> Project {
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::write(dir.join("prompts/main.md"), "bench").unwrap();
    let sha = agent_runner_plugin_host::host::pin::open_and_hash(host)
        .unwrap()
        .sha256;
    let mut text = format!(
        "schema_version = 1\n[agent]\ncommand = [\"true\"]\n[runtime]\nlog_dir = \"./logs\"\n\
         [plugins]\nsandbox = \"{mode}\"\n[plugins.pin]\n"
    );
    for i in 0..hosts {
        text.push_str(&format!("pause{i} = \"{sha}\"\n"));
    }
    for i in 0..hosts {
        text.push_str(&format!(
            "[plugins.hosts.pause{i}]\ncommand = [{host:?}]\nprovides = [\"spawn_hook\"]\n\
             config = {{ hook = \"pause_file_{i}\" }}\n"
        ));
    }
    let path = dir.join("agent-runner.toml");
    std::fs::write(&path, text).unwrap();
    let config = config::load(&path).expect("config");
    let gate = SandboxGate::evaluate(config.plugins.sandbox, probe()).expect("sandbox mode");
    let events = EventLog::new(&config.runtime.log_dir);
    Project {
        config,
        gate,
        events,
    }
}

/// A single-threaded runtime, as the supervisor runs; the built `plugin-host` is this
/// process's launcher (a bench executable does not sit beside it).
pub fn runtime() -> tokio::runtime::Runtime {
    agent_runner_plugin_host::Launcher::use_path(env!("CARGO_BIN_EXE_plugin-host"));
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The round context a spawn hook is asked about (round 1, no phase).
pub fn context(config: &Config) -> Context {
    Context {
        work_dir: config.runtime.work_dir.display().to_string(),
        log_dir: config.runtime.log_dir.display().to_string(),
        project: config.project.clone(),
        round_num: 1,
        phase: None,
        agent_name: None,
        agent_binary: Some("true".into()),
        agent_log_path: None,
        dry_run: false,
        vcs: None,
    }
}

/// What is about to run: a short argv and a few environment names.
pub fn spawn_view() -> SpawnView {
    SpawnView {
        argv: vec!["true".into(), "bench".into()],
        env_names: vec!["HOME".into(), "PATH".into()],
    }
}

/// The `before_spawn` params for `hook`, as JSON.
pub fn before_spawn_params(config: &Config, hook: &HookName) -> Value {
    serde_json::to_value(BeforeSpawnParams {
        hook: hook.clone(),
        ctx: context(config),
        spawn: spawn_view(),
    })
    .expect("params serialize")
}
