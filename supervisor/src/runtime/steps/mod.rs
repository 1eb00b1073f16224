//! The steps of a round around the agent: the hook families as the round sees them, each
//! converting its hosts' answers into the runtime's own type at the edge (with their
//! built-ins), and the goal checks.
//!
//! - [`pre_round`]: pre-round hooks and context enrichers, one concurrent batch.
//! - [`spawn_gate`]: spawn hooks before every agent spawn → proceed, defer or skip.
//! - [`post_round`]: post-round hooks after the agent (the built-in detectors too) →
//!   a `Decision`.
//! - [`dirty`]: the dirty tree after a clean round, handlers by priority, the built-in one
//!   at 1000.
//! - [`detect_hooks`]: detectors polled after each round under `serve`.
//! - [`serve_startup`]: the hooks `serve` calls once at boot.
//! - [`goal`]: `[goal]` checks after each round and the treadmill advisory.

pub mod detect_hooks;
pub(crate) mod dirty;
pub(crate) mod goal;
pub mod post_round;
pub mod pre_round;
pub(crate) mod serve_startup;
pub mod spawn_gate;
