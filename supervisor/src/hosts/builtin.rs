//! The built-in detector host (docs/detectors.md): the supervisor's own executable, started
//! with [`HOST_ARG`] and launched exactly like a third-party host — resolved, hashed from
//! the descriptor that is executed, confined at the gate's tier (Landlock + seccomp under
//! `require`), spoken to over JSON-RPC — so agent output is only ever parsed inside a
//! confined process.
//!
//! Its pin is the supervisor itself: the executable is hashed at boot, and a file changed
//! on disk after that is refused at launch like any host (`unchanged_since_hash`).
//! `[plugins] disable` turns off single detectors by name, or all of them by the host's
//! name [`HOST_NAME`].

use agent_runner_plugin_host::host::launch::LaunchSpec;
use agent_runner_plugin_host::host::pin::open_and_hash;
use agent_runner_protocol::Family;
use serde_json::{json, Value};
use std::time::Duration;

use crate::config::{Config, HostConfig};
use crate::detectors::host::{HOST_ARG, HOST_NAME};
use crate::hosts::sandbox::SandboxGate;
use crate::record::events::{Event, EventLog};

/// Which executable serves as the built-in detector host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DetectorHost {
    /// The running supervisor's own executable (`serve`, `round`).
    OwnExecutable,
    /// This `agent-runner` executable: for programs embedding the library (benchmarks),
    /// whose own executable has no host mode.
    Executable(std::path::PathBuf),
    /// No built-in detectors (benchmarks of third-party hosts alone).
    Off,
}

/// The detectors `config` leaves enabled, in [`crate::detectors::DIALECTS`] order.
fn enabled_detectors(config: &Config) -> Vec<&'static str> {
    let disable = &config.plugins.disable;
    if disable.iter().any(|d| d == HOST_NAME) {
        return Vec::new();
    }
    crate::detectors::names()
        .filter(|n| !disable.iter().any(|d| d == n))
        .collect()
}

/// The enabled detectors that can apply to `config`'s rounds: those whose CLI is the
/// agent's ([`crate::config::AgentConfig::cli`]) in the base config or in a phase's
/// override (a detector answers only about rounds of its own CLI, docs/detectors.md).
/// Empty for any other agent, so no built-in host is started for it and its rounds pay
/// nothing for one.
pub(crate) fn applicable_detectors(config: &Config) -> Vec<&'static str> {
    let agents: Vec<&str> = std::iter::once(&config.agent)
        .chain(
            config
                .phases
                .overrides
                .values()
                .filter_map(|o| o.agent.as_ref()),
        )
        .filter_map(|agent| agent.cli.name)
        .collect();
    let enabled = enabled_detectors(config);
    crate::detectors::DIALECTS
        .iter()
        .filter(|d| enabled.contains(&d.detector) && agents.contains(&d.binary))
        .map(|d| d.detector)
        .collect()
}

/// The built-in output watches of [`applicable_detectors`]: those whose CLI reports each
/// model call in its stream (docs/detectors.md, "While the round runs").
pub(crate) fn applicable_watches(config: &Config) -> Vec<String> {
    let detectors = applicable_detectors(config);
    crate::detectors::DIALECTS
        .iter()
        .filter(|d| d.calls.is_some() && detectors.contains(&d.detector))
        .map(crate::detectors::watch::watch_name)
        .collect()
}

/// The host's config table (the applicable detectors, the auth patterns, the local zone),
/// or `None` when no detector applies ([`applicable_detectors`]) or `which` is
/// [`DetectorHost::Off`]. A
/// re-read config that gives another table restarts the host
/// ([`crate::hosts::HostManager::reconcile`]).
pub(crate) fn host_table(
    config: &Config,
    which: &DetectorHost,
) -> Option<serde_json::Map<String, Value>> {
    let detectors = applicable_detectors(config);
    if detectors.is_empty() || *which == DetectorHost::Off {
        return None;
    }
    let zone = jiff::tz::TimeZone::system()
        .iana_name()
        .unwrap_or("UTC")
        .to_owned();
    let Value::Object(table) = json!({
        "detectors": detectors,
        "auth_fail_patterns": config.monitor.auth_fail_patterns,
        "local_time_zone": zone,
    }) else {
        unreachable!("json! of an object literal is an object")
    };
    Some(table)
}

/// The built-in host's table and launch from `which` executable, or `None` when every
/// detector is disabled, `which` is [`DetectorHost::Off`], or the executable cannot be
/// opened (recorded as `plugin_refused`).
pub(crate) fn admit(
    config: &Config,
    gate: &SandboxGate,
    events: &EventLog,
    which: &DetectorHost,
) -> Option<(HostConfig, LaunchSpec)> {
    let Some(table) = host_table(config, which) else {
        tracing::info!("built-in detectors off ([plugins] disable, or not wanted here)");
        return None;
    };
    let path = match which {
        DetectorHost::Off => return None,
        DetectorHost::OwnExecutable => std::env::current_exe(),
        DetectorHost::Executable(path) => Ok(path.clone()),
    };
    let exe = match path
        .map_err(|e| e.to_string())
        .and_then(|path| open_and_hash(&path).map_err(|e| e.to_string()))
    {
        Ok(exe) => exe,
        Err(message) => {
            let reason = format!("cannot open the supervisor's own executable: {message}");
            tracing::error!(host = HOST_NAME, "{reason}");
            events.emit(Event::PluginRefused {
                name: HOST_NAME.to_owned(),
                reason,
            });
            return None;
        }
    };
    let cfg = HostConfig {
        name: HOST_NAME.to_owned(),
        command: vec![exe.path.display().to_string(), HOST_ARG.to_owned()],
        provides: [Family::PostRound, Family::OutputWatch].into(),
        timeout: None,
        init_timeout: Duration::from_secs(agent_runner_protocol::limits::DEFAULT_INIT_TIMEOUT_S),
        memory_max_mb: crate::config::DEFAULT_HOST_MEMORY_MB,
        writes: Default::default(),
        read_paths: Vec::new(),
        config: table,
    };
    let spec = super::launch::launch_spec(
        &cfg,
        exe,
        &config.runtime.work_dir,
        &config.runtime.log_dir,
        gate,
    );
    Some((cfg, spec))
}
