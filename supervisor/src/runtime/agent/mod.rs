//! The agent process of a round and its confinement: how it is started, watched, stopped
//! and confined, what it is told, and what of its session and spend the supervisor keeps.
//!
//! - [`process`]: the agent in its own process group, under its budget, its output into
//!   the round log; [`cooperative`]: the signal and grace that end it; [`grace`]: result
//!   grace and a CLI's stall words; [`round_progress`]: the in-round heartbeat.
//! - [`sandbox`]: the `[agent.sandbox] mode` gate and each round's confinement of the
//!   agent; [`own_sandbox`]: a CLI's own sandbox replaced by ours; [`shims`]: a version
//!   manager's trees, granted; [`environment`]: what of the supervisor's environment a
//!   confined agent inherits; [`sandbox_denials`]: what the sandbox refused in a round;
//!   [`endpoint`]: where the CLI will connect, and whether its sandbox would refuse it.
//! - [`prompt`] and [`round_context`]: what the agent is told.
//! - [`sessions`]: the session a phase's rounds resume under `serve`; [`session_usage`]:
//!   a resumed session's running totals turned into each round's own; [`home_prune`]: the
//!   shadow CLI home pruned after each round.
//! - [`usage_watch`]: the round's spend while it runs, against `[budget]`;
//!   [`cli_reports`]: a CLI's own error reports kept beside the round log.
//! - [`preconditions`]: what the agent CLI needs from this machine (serve and doctor).

pub(crate) mod cli_reports;
pub(crate) mod cooperative;
pub(crate) mod endpoint;
pub(crate) mod environment;
pub(crate) mod grace;
pub(crate) mod home_prune;
pub(crate) mod own_sandbox;
pub(crate) mod preconditions;
pub(crate) mod process;
pub(crate) mod prompt;
pub(crate) mod round_context;
pub(crate) mod round_progress;
pub(crate) mod sandbox;
pub(crate) mod sandbox_denials;
pub mod session_usage;
pub mod sessions;
pub(crate) mod shims;
pub(crate) mod usage_watch;
