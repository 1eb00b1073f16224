//! The round runtime: what `serve` and `round` do, from boot to the end of a round.
//!
//! - [`serve`]: boot (config → sandbox gate → lock → hosts) and rounds back to back.
//! - [`round`]: one round: admission, prompt, spawn gate, agent, dirty tree, events.
//! - [`host_health`]: disk, memory and pressure before and during a round.
//! - [`agent`]: the agent process in its own process group, under its budget.
//! - [`spawn_gate`] and [`dirty`]: the two hook families as the round sees them, with their
//!   built-ins.
//! - [`git`]: the only place that runs git.
//! - [`prompt`], [`round_context`]: what the agent is told.
//! - [`events`]: the operator's record, one JSON line per event (writer side).
//! - [`state`]: the project lock, the round counter and the orphan stash record.
//! - [`stop`]: signals and control requests → the stop level.
//! - [`retention`]: round log pruning.

pub mod agent;
pub mod backoff;
pub mod dirty;
pub mod events;
pub mod git;
pub mod grace;
pub mod host_health;
pub mod post_round;
pub mod processes;
pub mod prompt;
pub mod retention;
pub mod round;
pub mod round_context;
pub mod schedule;
pub mod serve;
pub mod spawn_gate;
pub mod state;
pub mod stop;
pub mod substrate;
pub mod transient;
