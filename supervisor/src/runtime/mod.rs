//! The round runtime: what `serve` and `round` do, from boot to the end of a round.
//!
//! - [`serve`]: boot (config → sandbox gate → lock → hosts) and rounds back to back;
//!   [`tree_lock`]: the work tree's own lock and record, by its identity.
//! - [`round`]: one round: admission, prompt, spawn gate, agent, dirty tree, events.
//! - [`host_health`]: disk, memory and pressure before and during a round;
//!   [`round_cgroup`]: each round in its own cgroup when the supervisor's is delegated;
//!   [`memory_brake`]: the soft brake on the supervisor's cgroup under in-round pressure.
//! - [`agent`]: the agent process in its own process group, under its budget;
//!   [`agent_preconditions`]: what the agent CLI needs from this machine (serve and doctor);
//!   [`cooperative`]: the signal and grace that end it; [`sessions`]: the agent session a
//!   phase's rounds resume under `serve`; [`agent_environment`]: what of the supervisor's
//!   environment a confined agent inherits.
//! - [`pre_round`] (pre-round hooks and context enrichers), [`spawn_gate`], [`dirty`] and
//!   [`detect_hooks`]: the hook families as the round sees them, with their built-ins;
//!   [`serve_startup`]: the hooks `serve` calls once at boot.
//! - [`git`]: the only place that runs git; [`git_operation`]: a rebase, merge… under way
//!   (the tree is then left untouched); [`git_config_keys`]: the config keys that run a
//!   program, reviewed; [`git_config_watch`]: those a round added to the repository's
//!   config, reverted; [`exec_surface`]: the tracked files that run in CI or an editor,
//!   told when a round changes them; [`stash_journal`]: the stashes made, kept in the
//!   state dir, so one the agent's git drops is reported; [`attribution`]: whose dirt is it (the round's,
//!   the operator's, the supervisor's own files and the paths hosts own).
//! - [`path_name`]: file names as lossless text (non-UTF-8 names in git's quoted form).
//! - [`prompt`], [`round_context`]: what the agent is told.
//! - [`config_follow`]: the config re-read before every round and on SIGHUP;
//!   [`config_digest`]: `round_start.config_digest`, the reference system's label.
//! - What it writes, and the stop level it obeys, stand a floor below in
//!   [`crate::record`]; `[schedule]` and where the state dir lies in [`crate::config`].
//! - [`post_round`]: the post-round family as the round sees it (verdicts → a decision);
//!   [`transient`] and [`backoff`]: what serve does with it (back-off episodes, login
//!   stops); [`agent_done`]: the agent's own "done" (`.agent-done`);
//!   [`schedule_gate`]: what `[schedule]` says of the next round; [`usage_watch`]: the
//!   round's spend while it runs, against `[budget]`; [`grace`]: result grace;
//!   [`round_progress`]: the in-round heartbeat; [`substrate`]: the git head and fingerprint; [`processes`]: who is whose child.
//! - [`round_trace`]: each round as an OpenTelemetry trace, exported in the background.
//! - [`goal`]: `[goal]` checks after each round and the treadmill advisory; [`bounds`]:
//!   `max_duration_s` and `max_rounds_per_hour`.

pub(crate) mod agent;
pub(crate) mod agent_done;
pub(crate) mod agent_endpoint;
pub(crate) mod agent_environment;
pub(crate) mod agent_home_prune;
pub(crate) mod agent_preconditions;
pub(crate) mod agent_sandbox;
pub(crate) mod attribution;
pub(crate) mod backoff;
pub(crate) mod bounds;
pub(crate) mod cli_reports;
pub(crate) mod config_digest;
pub(crate) mod config_follow;
pub(crate) mod cooperative;
pub mod detect_hooks;
pub(crate) mod dirty;
pub(crate) mod egress_address;
pub(crate) mod egress_http;
pub(crate) mod egress_proxy;
pub(crate) mod egress_refusals;
pub(crate) mod egress_routes;
pub(crate) mod exec_surface;
pub(crate) mod git;
pub(crate) mod git_config_keys;
pub(crate) mod git_config_watch;
pub(crate) mod git_operation;
pub(crate) mod git_place;
pub(crate) mod goal;
pub(crate) mod grace;
pub(crate) mod host_health;
pub(crate) mod key_broker;
pub(crate) mod log_views;
pub(crate) mod memory_brake;
pub(crate) mod notify;
pub(crate) mod notify_http;
pub(crate) mod notify_text;
pub(crate) mod own_sandbox;
pub(crate) mod path_name;
pub mod post_round;
pub mod pre_round;
pub(crate) mod processes;
pub(crate) mod prompt;
pub(crate) mod round;
pub(crate) mod round_cgroup;
pub(crate) mod round_context;
pub(crate) mod round_progress;
pub(crate) mod round_trace;
pub(crate) mod sandbox_denials;
pub(crate) mod schedule_gate;
pub(crate) mod serve;
pub(crate) mod serve_startup;
pub mod session_usage;
pub mod sessions;
pub(crate) mod shims;
pub mod spawn_gate;
pub(crate) mod stash_journal;
pub(crate) mod substrate;
pub(crate) mod transient;
pub(crate) mod tree_lock;
pub(crate) mod upstream_proxy;
pub(crate) mod usage_watch;
