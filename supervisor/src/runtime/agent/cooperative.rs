//! Cooperative stop (docs/configuration.md, `[agent] sigterm_grace_s`; docs/agent-clis.md,
//! "Stopping an agent"): the signal an agent's CLI finishes its turn on, by the CLI
//! ([`crate::config::AgentConfig::cli`], the agent's identity), and the grace it gets before
//! SIGKILL. Every way the supervisor ends a round's agent uses it alike: the budget, an
//! immediate stop (`kill`, a second SIGTERM), result grace and in-round host pressure.
//!
//! The table follows the reference system's presets (claude drains its turn on SIGINT,
//! which its interactive mode binds to "interrupt"; SIGTERM abandons it; gemini and pi
//! clean up on SIGTERM). An agent not in it gets SIGTERM and [`DEFAULT_GRACE`].

use nix::sys::signal::Signal;
use std::time::Duration;

use crate::config::AgentConfig;

/// The grace of an agent whose CLI has no cooperative stop (the reference system's 5 s).
pub(crate) const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// CLIs that finish their turn on a signal, and which (by the CLI's name).
pub(crate) const COOPERATIVE: &[(&str, Signal)] = &[
    ("claude", Signal::SIGINT),
    ("gemini", Signal::SIGTERM),
    ("pi", Signal::SIGTERM),
];

/// How an agent is asked to stop: `signal` to its process group, SIGKILL `grace` later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StopSignal {
    /// Sent first.
    pub signal: Signal,
    /// Then SIGKILL after this long.
    pub grace: Duration,
    /// Whether the CLI is known to finish its turn on `signal`.
    pub cooperative: bool,
}

/// How `agent` is stopped: its CLI's cooperative signal and `[agent] sigterm_grace_s`, or
/// SIGTERM and [`DEFAULT_GRACE`].
pub(crate) fn stop_signal(agent: &AgentConfig) -> StopSignal {
    match COOPERATIVE
        .iter()
        .find(|(name, _)| Some(*name) == agent.cli.name)
    {
        Some((_, signal)) => StopSignal {
            signal: *signal,
            grace: agent.sigterm_grace,
            cooperative: true,
        },
        None => StopSignal {
            signal: Signal::SIGTERM,
            grace: DEFAULT_GRACE,
            cooperative: false,
        },
    }
}
