//! agent-runner: a restart-on-exit supervisor for autonomous coding-agent CLIs.
//!
//! The binary is a thin layer over [`cli`]. The code is folded by audience (see
//! `ARCHITECTURE.md`):
//! - [`config`]: `agent-runner.toml`, loaded and validated strictly (exit 78).
//! - [`runtime`]: what `serve` and `round` do: rounds, the agent, spawn gate, dirty tree,
//!   git.
//! - [`record`]: what `serve` writes and every view reads: events and their readers, the
//!   summary, state, retention, `service.json`, what `status` is told, the stop level.
//! - [`tree_file`]: the one way a file in the agent's reach is opened (never blocking,
//!   bounded).
//! - [`hosts`]: third-party plugin hosts: sandbox gate, pins, confined launch, JSON-RPC,
//!   failures.
//! - [`operator`]: the operator's other verbs: peek, watch, events, doctor, control, service,
//!   init, install.
//! - [`author`]: the host author's verbs: `plugin check`, `plugin new`.
//! - [`exit`]: exit codes and the CLI's error type.
//! - [`detectors`]: the built-in post-round error detectors; they run only inside the
//!   confined built-in detector host, never in the supervisor process.

#![warn(unreachable_pub)]

pub(crate) mod author;
pub(crate) mod budget;
pub mod cli;
pub mod config;
pub mod detectors;
pub(crate) mod exit;
pub(crate) mod held_dir;
pub mod hosts;
pub mod operator;
#[cfg(test)]
mod pod_failure_policy;
pub mod record;
pub mod runtime;
pub(crate) mod tree_file;
