//! Boot (config → sandbox gate → lock → hosts) and the loop: rounds back to back with
//! `restart_delay_s` between them, until `max_rounds`, `--once`, or a stop signal. The
//! first SIGTERM/SIGINT lets the running round finish within its budget and starts no new
//! one; a second terminates the agent. Every wait (restart delay, defer, skip idle) ends
//! at once on a stop.

use agent_runner_plugin_host::probe::probe;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::config::{self, Config};
use crate::events::EventLog;
use crate::exit::CliError;
use crate::git::Repo;
use crate::hosts::HostManager;
use crate::round::{Attempt, Runner};
use crate::sandbox::SandboxGate;
use crate::service::{ServiceFile, ServiceState};
use crate::spawn_gate::Verdict;
use crate::state::{self, ProjectLock};
use crate::stop::{sleep_unless, StopLevel, StopWatch};

/// The shortest wait before spawn hooks are asked again after a defer, so a `defer_s = 0`
/// answer cannot spin (the reference system re-asks ~4×/s).
pub const MIN_REASK: Duration = Duration::from_secs(1);

/// A booted supervisor: the lock held, hosts running.
pub struct Booted {
    /// Runs the rounds.
    pub runner: Runner,
    /// The sandbox gate of this boot (reported in `service.json`).
    pub gate: SandboxGate,
    _lock: ProjectLock,
}

/// Loads the config and evaluates the sandbox gate (shared with `doctor`).
///
/// Errors: exit 78 for a bad config or a `require` the kernel cannot meet.
pub fn load_and_gate(config_path: &Path) -> Result<(Config, SandboxGate), CliError> {
    let config = config::load(config_path)?;
    let gate = SandboxGate::evaluate(config.plugins.sandbox, probe()).map_err(CliError::config)?;
    Ok((config, gate))
}

/// Everything before the first round: config, gate, lock, git check, hosts.
///
/// Errors: 78 for config and gate problems, 1 when another supervisor holds the lock.
pub async fn boot(config_path: &Path) -> Result<Booted, CliError> {
    let config = config::load(config_path)?;
    let events = EventLog::new(&config.runtime.log_dir);
    let caps = probe();
    let gate = match SandboxGate::evaluate(config.plugins.sandbox, caps.clone()) {
        Ok(gate) => gate,
        Err(message) => {
            events.emit(
                "plugin_sandbox_degraded",
                json!({"requested": config.plugins.sandbox.as_str(), "achieved_tier": caps.tier().as_str(),
                       "reason": message, "refused_boot": true}),
            );
            return Err(CliError::config(message));
        }
    };
    if let Some(shortfall) = gate.shortfall() {
        tracing::warn!(
            "sandbox = \"prefer\": hosts run at tier `{}` ({shortfall})",
            gate.applied.as_str()
        );
        events.emit(
            "plugin_sandbox_degraded",
            json!({"requested": gate.requested.as_str(), "achieved_tier": gate.applied.as_str(), "reason": shortfall}),
        );
    }
    let lock = ProjectLock::acquire(&config.runtime.log_dir)
        .map_err(|e| CliError::failure(e.to_string()))?;
    if !Repo::new(&config.runtime.work_dir, &config.runtime.log_dir)
        .is_repo()
        .await
    {
        return Err(CliError::config(format!(
            "config error in {}: key `runtime.work_dir`: {} is not inside a git working tree; run `git init` there",
            config.path.display(),
            config.runtime.work_dir.display()
        )));
    }
    let hosts = HostManager::boot(&config, &gate, &events).await;
    Ok(Booted {
        runner: Runner::new(config, events, hosts),
        gate,
        _lock: lock,
    })
}

/// How `serve` was asked to run.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServeOptions {
    /// Stop after this many completed rounds (overrides `[runtime] max_rounds`).
    pub max_rounds: Option<u64>,
    /// Stop after one completed round.
    pub once: bool,
}

/// Runs rounds until stopped; returns the number of completed rounds. Keeps
/// `service.json` up to date at each step (boot, round start and end, defer, stopping,
/// exit).
pub async fn serve(booted: &mut Booted, options: ServeOptions, stop: &mut StopWatch) -> u64 {
    let mut service = ServiceFile::new(&booted.runner.config, &booted.gate);
    let runner = &mut booted.runner;
    service.update(ServiceState::Idle, None, &runner.hosts);
    let max_rounds = if options.once {
        Some(1)
    } else {
        options.max_rounds.or(runner.config.runtime.max_rounds)
    };
    let restart_delay = runner.config.runtime.restart_delay;
    let mut completed = 0u64;
    loop {
        if *stop.borrow() >= StopLevel::Graceful {
            service.update(ServiceState::Stopping, None, &runner.hosts);
            runner.events.emit(
                "serve_stopping",
                json!({"reason": "signal", "rounds_completed": completed}),
            );
            break;
        }
        if let Some(max) = max_rounds.filter(|max| completed >= *max) {
            runner.events.emit(
                "max_rounds_reached",
                json!({"rounds_completed": completed, "max_rounds": max}),
            );
            break;
        }
        let next = state::peek_next_round(&runner.config.runtime.log_dir).unwrap_or(0);
        service.update(
            ServiceState::Running,
            Some(ServiceFile::round_starting(next, None)),
            &runner.hosts,
        );
        let attempt = runner.attempt(stop).await;
        let after = match &attempt {
            Ok(Attempt::NotStarted(Verdict::Defer { .. })) => ServiceState::Deferred,
            _ => ServiceState::Idle,
        };
        service.update(after, None, &runner.hosts);
        let wait = match attempt {
            Ok(Attempt::Ran { .. }) => {
                completed += 1;
                if max_rounds.is_some_and(|max| completed >= max) {
                    continue;
                }
                restart_delay
            }
            Ok(Attempt::NotStarted(Verdict::Defer {
                hook,
                defer_s,
                reason,
            })) => {
                runner.events.emit(
                    "round_deferred",
                    json!({"severity": "info", "signal": hook.as_str(), "message": reason, "defer_s": defer_s}),
                );
                let started = Instant::now();
                sleep_unless(
                    stop,
                    StopLevel::Graceful,
                    Duration::from_secs(defer_s).max(MIN_REASK),
                )
                .await;
                runner.events.emit(
                    "round_resumed",
                    json!({"deferred_for_s": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0}),
                );
                continue;
            }
            Ok(Attempt::NotStarted(Verdict::Skip { .. })) => restart_delay,
            Ok(Attempt::NotStarted(Verdict::Proceed)) => {
                unreachable!("proceed always runs the agent")
            }
            Err(err) => {
                eprintln!("agent-runner: {err}");
                runner
                    .events
                    .emit("round_error", json!({"error": err.message}));
                restart_delay
            }
        };
        sleep_unless(stop, StopLevel::Graceful, wait).await;
    }
    service.update(ServiceState::Stopped, None, &runner.hosts);
    completed
}

/// Shuts the hosts down and releases the lock.
pub async fn shutdown(booted: Booted) {
    booted.runner.hosts.shutdown().await;
}
