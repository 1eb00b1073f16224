//! Third-party plugin hosts: pin check, confined launch, `initialize`, hook calls,
//! failures and restarts, shutdown (`docs/design-notes.md`, "Host lifecycle";
//! `docs/protocol.md` §2–§6).
//!
//! The manager owns every host of one supervisor run. A host that crashes, hangs, breaks
//! the protocol or is killed by the sandbox is killed with its process group, recorded as
//! `hook_failed`, and started again for a later call after a backoff; after
//! [`MAX_CONSECUTIVE_FAILURES`] failures in a row it is disabled for the rest of the run.

pub mod builtin;
mod call_failure;
mod call_record;
mod calls;
pub(crate) use call_record::CallRecord;
pub(crate) mod cause;
pub(crate) mod declarations;
mod failures;
mod host;
mod launch;
mod lifecycle;
pub(crate) mod pins;
mod reconcile;
mod report;
pub mod sandbox;
mod stats;
mod transport;
mod write_watch;

pub(crate) use pins::{check_pin, PinStatus};
use stats::CallHistogram;
pub(crate) use stats::CallStats;

use agent_runner_plugin_host::host::launch::LaunchSpec;
use agent_runner_protocol::{Family, HookName, InitializeParams};
use serde_json::Value;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::HostConfig;
use crate::record::events::EventLog;
pub use call_failure::{CallFailure, ErrorType};
pub(crate) use declarations::{declaration_problems, BUILTIN_DIRTY_HANDLER};
use host::RunningHost;
pub(crate) use host::{read_stderr_lines, StderrTail, EXIT_GRACE};
pub(crate) use launch::{host_initialize_params, initialize_params, launch_spec, state_dir};

/// Consecutive failed calls after which a host is disabled for the rest of the run.
pub(crate) const MAX_CONSECUTIVE_FAILURES: u32 = 5;
/// Longest wait before a failed host is started again.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// What a host declared in `initialize` besides its hooks (`docs/protocol.md` §3).
#[derive(Clone, Debug, Default)]
pub struct Declared {
    /// Event kinds it may emit, without the `<host>.` prefix.
    pub event_kinds: Vec<String>,
    /// Paths relative to `work_dir` it owns.
    pub owned_paths: Vec<String>,
}

/// A registered hook: which host serves it.
#[derive(Clone, Debug)]
pub struct HookRef {
    /// Index of the serving host in the manager.
    host: usize,
    /// The hook's name.
    pub name: HookName,
    /// Its family.
    pub family: Family,
    /// Dirty handlers: lower runs first.
    pub priority: i64,
}

/// What a host is doing right now (peek/doctor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostState {
    /// Running and initialized.
    Running,
    /// Down after a failure; started again for a later call.
    Backoff,
    /// Disabled for the rest of the run.
    Disabled,
}

impl HostState {
    /// The `service.json` / `peek` spelling: `running`, `backoff`, `disabled`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HostState::Running => "running",
            HostState::Backoff => "backoff",
            HostState::Disabled => "disabled",
        }
    }
}

/// One host as status displays show it ([`HostManager::status`]).
#[derive(Clone, Debug)]
pub struct HostStatus {
    /// The host's name (`[plugins.hosts.<name>]`).
    pub name: String,
    /// What it is doing now.
    pub state: HostState,
    /// Its pid while running.
    pub pid: Option<u32>,
    /// Names of the hooks it registered.
    pub hooks: Vec<String>,
    /// Its call counters over this run.
    pub stats: CallStats,
    /// The family of each of its hooks, as `(family, hook)`.
    pub hook_families: Vec<(Family, String)>,
    /// What it declared besides hooks.
    pub declared: Declared,
}

struct ManagedHost {
    cfg: HostConfig,
    /// The built-in detector host ([`builtin`]): its hooks carry reserved names.
    builtin: bool,
    /// Its `[plugins.pin]` entry when it was admitted.
    pin: Option<agent_runner_plugin_host::host::pin::Sha256Pin>,
    spec: LaunchSpec,
    /// What `initialize` declared besides hooks (docs/protocol.md §3).
    declared: Declared,
    running: Option<RunningHost>,
    consecutive_failures: u32,
    next_start: Instant,
    disabled: bool,
    stats: CallStats,
    /// Set by the host's [`write_watch::WriteWatch`] when its state directory went over
    /// `state_max_mb`.
    write_breach: Arc<AtomicBool>,
}

/// What [`HostManager::reconcile`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reconciled {
    /// Hosts admitted anew (new, or their entry or pin changed), whether or not they
    /// passed their checks.
    pub started: Vec<String>,
    /// Hosts shut down for good (removed from the config or disabled).
    pub stopped: Vec<String>,
}

/// Every host of one supervisor run.
pub struct HostManager {
    hosts: Vec<ManagedHost>,
    hooks: Vec<HookRef>,
    events: EventLog,
    init: InitializeParams,
    /// Which executable runs the built-in detector host (kept for [`Self::reconcile`]).
    detectors: builtin::DetectorHost,
    /// Hook call durations by family, this run (`service.json`, `/metrics`).
    call_durations: std::collections::BTreeMap<Family, CallHistogram>,
    /// Each call answered or failed since the last [`Self::take_calls`], while a round's
    /// trace wants them ([`Self::trace_calls`]); `None`: not kept.
    call_log: Option<Vec<CallRecord>>,
}

impl HostManager {
    /// Whether `hook` is served by the built-in detector host ([`builtin`]), whose stops
    /// `[monitor] auto_stop_on`'s default covers ([`crate::config::MonitorConfig::stops_on`]).
    pub(crate) fn is_builtin(&self, hook: &HookRef) -> bool {
        self.hosts.get(hook.host).is_some_and(|h| h.builtin)
    }

    /// Whether the host serving `hook` is running now (a call would not start it).
    pub(crate) fn is_running(&self, hook: &HookRef) -> bool {
        self.hosts
            .get(hook.host)
            .is_some_and(|h| h.running.is_some() && !h.disabled)
    }

    /// The name of the host serving `hook` (its `[plugins.hosts.<name>]` key).
    pub(crate) fn host_name(&self, hook: &HookRef) -> &str {
        &self.hosts[hook.host].cfg.name
    }

    /// The config table of the host serving `hook` (what `initialize` sent it).
    pub(crate) fn host_config(&self, hook: &HookRef) -> &serde_json::Map<String, Value> {
        &self.hosts[hook.host].cfg.config
    }

    /// The paths (relative to `work_dir`) owned by registered hosts, sorted, without
    /// duplicates (docs/protocol.md §5.8).
    pub(crate) fn owned_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self
            .hosts
            .iter()
            .flat_map(|h| h.declared.owned_paths.iter())
            .map(|p| p.trim_end_matches('/').to_owned())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    /// Each host's name, state and pid (for status displays).
    pub(crate) fn states(&self) -> Vec<(String, HostState, Option<u32>)> {
        self.hosts
            .iter()
            .map(|h| {
                let state = if h.disabled {
                    HostState::Disabled
                } else if h.running.is_some() {
                    HostState::Running
                } else {
                    HostState::Backoff
                };
                (
                    h.cfg.name.clone(),
                    state,
                    h.running.as_ref().map(RunningHost::pid),
                )
            })
            .collect()
    }

    /// The durations of this run's hook calls, per family (for `service.json`).
    pub fn call_durations(&self) -> &std::collections::BTreeMap<Family, CallHistogram> {
        &self.call_durations
    }

    /// Each host's state, pid, registered hook names and call counters (for
    /// `service.json` and `peek`).
    pub fn status(&self) -> Vec<HostStatus> {
        self.states()
            .into_iter()
            .zip(&self.hosts)
            .enumerate()
            .map(|(index, ((name, state, pid), host))| HostStatus {
                name,
                state,
                pid,
                hooks: self
                    .hooks
                    .iter()
                    .filter(|h| h.host == index)
                    .map(|h| h.name.as_str().to_owned())
                    .collect(),
                stats: host.stats.clone(),
                hook_families: self
                    .hooks
                    .iter()
                    .filter(|h| h.host == index)
                    .map(|h| (h.family, h.name.as_str().to_owned()))
                    .collect(),
                declared: host.declared.clone(),
            })
            .collect()
    }
}
