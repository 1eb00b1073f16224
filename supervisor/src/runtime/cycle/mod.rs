//! The loop: `serve`'s boot and its rounds back to back, one round from start to end, and
//! what decides whether and when the next round starts.
//!
//! - [`serve`]: boot (config → sandbox gate → lock → hosts) and the loop;
//!   [`tree_lock`]: the work tree's own lock and record, by its identity.
//! - [`round`]: one round: admission, prompt, spawn gate, agent, dirty tree, events;
//!   [`substrate`]: the git head and fingerprint before and after it; [`config_digest`]:
//!   `round_start.config_digest`, the reference system's label.
//! - [`config_follow`]: the config re-read before every round and on SIGHUP;
//!   [`config_path`]: the config's path as the agent could have changed it (and the
//!   agent's run window, [`config_path::AgentRan`]).
//! - [`transient`] and [`backoff`]: what serve does with the post-round decision (back-off
//!   episodes, login stops) and the wait; [`schedule_gate`]: what `[schedule]` says of the
//!   next round; [`bounds`]: `max_duration_s` and `max_rounds_per_hour`;
//!   [`agent_done`]: the agent's own "done" (`.agent-done`).
//! - [`log_views`]: the files in `log_dir` that scripts written against the reference
//!   system read (`status.json`, `serve.pid`, the lock holder).

pub(crate) mod agent_done;
pub(crate) mod backoff;
pub(crate) mod bounds;
pub(crate) mod config_digest;
pub(crate) mod config_follow;
pub(crate) mod config_path;
pub(crate) mod log_views;
pub(crate) mod round;
pub(crate) mod schedule_gate;
pub(crate) mod serve;
pub(crate) mod substrate;
pub(crate) mod transient;
pub(crate) mod tree_lock;
