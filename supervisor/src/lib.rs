//! agent-runner: a restart-on-exit supervisor for autonomous coding-agent CLIs.
//!
//! The binary is a thin layer over [`cli`]. Code map (see `ARCHITECTURE.md`):
//! - [`config`]: `agent-runner.toml`, loaded once and validated strictly (exit 78).
//! - [`round`]: one round: admission, prompt, spawn gate, agent, dirty tree, events.
//! - [`serve`]: rounds back to back until stopped.
//! - [`agent`]: the agent process in its own process group, under its budget.
//! - [`hosts`]: third-party plugin hosts: pins, confined launch, JSON-RPC, failures.
//! - [`spawn_gate`] and [`dirty`]: the two hook families and their built-ins.
//! - [`git`]: the only place that runs git.
//! - [`events`]: the operator's record, one JSON line per event.
//! - [`state`]: the project lock, the round counter and the orphan stash record.
//! - [`round_context`], [`retention`]: the context the agent sees; round log pruning.
//! - [`doctor`], [`init`], [`control`]: operator verbs (`status`/`stop`/`kill`/`start`
//!   over the control socket).
//! - [`plugin_check`], [`plugin_new`]: host author verbs (`plugin check`, `plugin new`).
//! - [`service`]: `service.json`, what a running `serve` is doing.
//! - [`install`]: the systemd unit.
//! - [`peek`] (with [`peek_render`], [`round_history`], [`system_metrics`]), [`watch`],
//!   [`event_query`] (over [`event_read`]): the read-only operator surface.

pub mod agent;
pub mod cli;
pub mod config;
pub mod control;
pub mod dirty;
pub mod doctor;
pub mod event_query;
pub mod event_read;
pub mod events;
pub mod exit;
pub mod git;
pub mod hosts;
pub mod init;
pub mod install;
pub mod peek;
pub mod peek_render;
pub mod plugin_check;
pub mod plugin_new;
pub mod prompt;
pub mod retention;
pub mod round;
pub mod round_context;
pub mod round_history;
pub mod sandbox;
pub mod serve;
pub mod service;
pub mod spawn_gate;
pub mod state;
pub mod stop;
pub mod system_metrics;
pub mod watch;
