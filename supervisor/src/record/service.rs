//! `<state_dir>/service.json`: what a running `serve` is doing, for `peek`, `watch` and
//! `status` (format documented in `docs/operations.md`, "service.json").
//!
//! `serve` rewrites it atomically ([`crate::record::state::write_json_atomic`]) at its own events
//! only — boot, round start and end, defer, stopping, exit — never on a timer, so the cost
//! is one small file write per round. Readers must treat it as a hint: a `serve` killed
//! with SIGKILL leaves its last state behind, so they check whether `pid` is alive (the
//! project lock's holder) before believing `state`.

use agent_runner_protocol::SandboxInfo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::config::Config;
use crate::record::events::timestamp;
use crate::record::state::write_json_atomic;

/// Name of the file in the state dir.
pub(crate) const SERVICE_FILE: &str = "service.json";

/// The version of the document's shape; fields are only ever added within a version.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// Upper bounds (seconds) of the hook call duration histogram's buckets, `+Inf` implied:
/// from a fast compiled host (a few ms) to the longest call timeouts.
pub(crate) const CALL_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Durations of the hook calls of one family this supervisor run, in Prometheus'
/// histogram shape: `buckets[i]` counts calls of at most [`CALL_BUCKETS`]`[i]` seconds
/// (cumulative), `count` every call (the `+Inf` bucket), `sum_s` their total in seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallHistogram {
    /// Cumulative counts per bound of [`CALL_BUCKETS`].
    pub buckets: [u64; CALL_BUCKETS.len()],
    /// Calls observed.
    pub count: u64,
    /// Their total duration, seconds.
    pub sum_s: f64,
}

impl CallHistogram {
    /// Counts one call that took `elapsed` (answered or failed).
    pub fn observe(&mut self, elapsed: Duration) {
        let s = elapsed.as_secs_f64();
        for (n, bound) in self.buckets.iter_mut().zip(CALL_BUCKETS) {
            if s <= bound {
                *n += 1;
            }
        }
        self.count += 1;
        self.sum_s += s;
    }
}

/// The hosts as `service.json` shows them: implemented by the host manager
/// ([`crate::hosts::HostManager`]), which stands above the record.
pub(crate) trait ServiceHosts {
    /// Each host as `service.json` shows it.
    fn service_hosts(&self) -> Vec<ServiceHost>;
    /// Durations of this run's hook calls, by family (wire spelling).
    fn hook_call_durations(&self) -> BTreeMap<String, CallHistogram>;
}

/// What `serve` is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ServiceState {
    /// A round is being attempted (spawn hooks asked, or the agent running).
    Running,
    /// A spawn hook deferred the round; waiting to ask again.
    Deferred,
    /// Between rounds (restart delay, or after a skip).
    Idle,
    /// Waiting out a back-off after a diagnosed transient failure (`back_off` says until
    /// when and why).
    #[serde(rename = "backing_off")]
    BackingOff,
    /// Outside the hours `[schedule]` allows; waiting for them.
    Paused,
    /// A stop was asked for; finishing up.
    Stopping,
    /// `serve` has exited (written last, on a clean exit).
    Stopped,
}

impl ServiceState {
    /// The spelling in the file.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ServiceState::Running => "running",
            ServiceState::Deferred => "deferred",
            ServiceState::Idle => "idle",
            ServiceState::BackingOff => "backing_off",
            ServiceState::Paused => "paused",
            ServiceState::Stopping => "stopping",
            ServiceState::Stopped => "stopped",
        }
    }
}

/// The round being attempted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct CurrentRound {
    /// The number the round has (or will get when the spawn hooks let it start).
    pub round_num: u64,
    /// Its phase (`null` without `[phases]`).
    pub phase: Option<String>,
    /// When the attempt began (UTC, `YYYY-MM-DDTHH:MM:SS.mmmZ`).
    pub started_at: String,
}

/// A back-off under way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct BackOffDoc {
    /// When it ends (UTC, [`timestamp`] form).
    pub until: String,
    /// The diagnosis: `usage_limit`, `rate_limit`, `overloaded`, `network`, …
    pub kind: String,
    /// The agent's executable (basename).
    pub agent: String,
    /// The first round of the episode.
    pub since_round: u64,
    /// The phase of the diagnosed round (`""` without `[phases]`).
    pub phase: String,
}

impl BackOffDoc {
    /// What `status` and `peek` print: `backing off until <until> (<kind>)`.
    pub(crate) fn describe(&self) -> String {
        format!("backing off until {} ({})", self.until, self.kind)
    }
}

/// One host as of the last write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ServiceHost {
    /// The host's name.
    pub name: String,
    /// `running`, `backoff` or `disabled`.
    pub state: String,
    /// Its pid while running.
    pub pid: Option<u32>,
    /// The hooks it registered.
    pub hooks: Vec<String>,
    /// Hook calls sent this run.
    pub calls: u64,
    /// Failed calls and starts this run.
    pub failures: u64,
    /// `<error_type>: <message>` of the last failure.
    pub last_error: Option<String>,
    /// Median latency of recent calls, milliseconds.
    pub call_latency_p50_ms: Option<f64>,
    /// Its hooks by family (wire spelling → hook names).
    #[serde(default)]
    pub families: BTreeMap<String, Vec<String>>,
    /// The event kinds it declared, as recorded: `<host>.<kind>`.
    #[serde(default)]
    pub event_kinds: Vec<String>,
    /// The paths it owns (relative to `work_dir`).
    #[serde(default)]
    pub owned_paths: Vec<String>,
}

/// The whole document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ServiceDoc {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The `serve` process.
    pub pid: u32,
    /// When it booted (UTC).
    pub started_at: String,
    /// The absolute config path it runs.
    pub config: PathBuf,
    /// What it is doing.
    pub state: ServiceState,
    /// The round being attempted, if any.
    pub current_round: Option<CurrentRound>,
    /// While `state` is `backing_off`: until when and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub back_off: Option<BackOffDoc>,
    /// Its hosts.
    pub hosts: Vec<ServiceHost>,
    /// Durations of this run's hook calls, by family (wire spelling): fixed buckets,
    /// bounded whatever the run's length (`/metrics`, docs/metrics.md).
    #[serde(default)]
    pub hook_call_durations: BTreeMap<String, CallHistogram>,
    /// The sandbox gate of this boot: `requested`, `achieved_tier`, `landlock_abi`,
    /// `seccomp`.
    pub sandbox: SandboxInfo,
    /// When this version of the file was written (UTC).
    pub updated_at: String,
}

/// Reads `<state_dir>/service.json`; `None` when it is missing or unreadable (a reader
/// never fails on it).
pub(crate) fn read(state_dir: &Path) -> Option<ServiceDoc> {
    crate::record::state::read_json(&state_dir.join(SERVICE_FILE))
        .ok()
        .flatten()
}

/// The writer `serve` holds.
pub(crate) struct ServiceFile {
    path: PathBuf,
    doc: ServiceDoc,
}

impl ServiceFile {
    /// A document for a `serve` of `config` booted under `sandbox` (the gate's
    /// [`crate::hosts::sandbox::SandboxGate::info`]); nothing written yet.
    pub(crate) fn new(config: &Config, sandbox: SandboxInfo) -> Self {
        let now = timestamp(SystemTime::now());
        let info = sandbox;
        ServiceFile {
            path: config.runtime.state_dir.join(SERVICE_FILE),
            doc: ServiceDoc {
                schema_version: SCHEMA_VERSION,
                pid: std::process::id(),
                started_at: now.clone(),
                config: config.path.clone(),
                state: ServiceState::Idle,
                current_round: None,
                back_off: None,
                hosts: Vec::new(),
                hook_call_durations: BTreeMap::new(),
                sandbox: info,
                updated_at: now,
            },
        }
    }

    /// Records `state` and `current_round` with the hosts' current counters and writes
    /// the file. A failed write is logged, never raised (the loop must go on).
    pub(crate) fn update(
        &mut self,
        state: ServiceState,
        current_round: Option<CurrentRound>,
        hosts: &impl ServiceHosts,
    ) {
        self.doc.state = state;
        self.doc.current_round = current_round;
        if state != ServiceState::BackingOff {
            self.doc.back_off = None;
        }
        self.doc.hosts = hosts.service_hosts();
        self.doc.hook_call_durations = hosts.hook_call_durations();
        self.doc.updated_at = timestamp(SystemTime::now());
        if let Err(err) = write_json_atomic(&self.path, &self.doc) {
            tracing::warn!(path = %self.path.display(), "cannot write service status: {err}");
        }
    }

    /// Records a back-off under way (state `backing_off`) and writes the file.
    pub(crate) fn backing_off(&mut self, back_off: BackOffDoc, hosts: &impl ServiceHosts) {
        self.doc.back_off = Some(back_off);
        self.update(ServiceState::BackingOff, None, hosts);
    }

    /// A [`CurrentRound`] starting now.
    pub(crate) fn round_starting(round_num: u64, phase: Option<String>) -> CurrentRound {
        CurrentRound {
            round_num,
            phase,
            started_at: timestamp(SystemTime::now()),
        }
    }
}

/// The pid of the live supervisor (`serve` or `round`) of the project whose state dir is
/// `state_dir`: the pid recorded in its lock file, if that process exists and runs
/// agent-runner. Read-only: the lock is read, never taken (taking it, even shared, could
/// make a starting `serve` fail).
pub(crate) fn live_supervisor(state_dir: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(state_dir.join(crate::record::state::LOCK_FILE)).ok()?;
    let pid: u32 = text.trim().parse().ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    String::from_utf8_lossy(argv0)
        .contains("agent-runner")
        .then_some(pid)
}
