//! What `serve` publishes for `status` ([`Snapshot`], over the control socket of
//! [`crate::operator::control`]): its pid, boot time, state, round and hosts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::record::events::timestamp;

/// The hosts as `status` shows them: implemented by the host manager
/// ([`crate::hosts::HostManager`]), which stands above the record.
pub(crate) trait StatusHosts {
    /// Each host's name, state and pid.
    fn status_hosts(&self) -> Vec<StatusHost>;
}

/// What `serve` publishes for `status`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    /// The supervisor's pid.
    pub pid: u32,
    /// When it booted (UTC, RFC 3339).
    pub started_at: String,
    /// Seconds since the Unix epoch at boot.
    pub started_unix_s: u64,
    /// `starting`, `round` (an attempt is under way), `waiting` (between rounds) or
    /// `stopping`.
    pub state: String,
    /// The round running now, or the last one handed out.
    pub current_round: Option<u64>,
    /// The hosts.
    pub hosts: Vec<StatusHost>,
}

/// One host in `status`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct StatusHost {
    /// Its name.
    pub name: String,
    /// `running`, `backoff` or `disabled`.
    pub state: String,
    /// Its pid while running.
    pub pid: Option<u32>,
}

impl Snapshot {
    /// The snapshot of a supervisor booting now.
    pub(crate) fn booting() -> Self {
        let now = SystemTime::now();
        Snapshot {
            pid: std::process::id(),
            started_at: timestamp(now),
            started_unix_s: unix_s(now),
            state: "starting".into(),
            current_round: None,
            hosts: Vec::new(),
        }
    }

    /// Updates the state, round and hosts.
    pub(crate) fn update(
        &mut self,
        state: &str,
        current_round: Option<u64>,
        hosts: &impl StatusHosts,
    ) {
        self.state = state.to_owned();
        if current_round.is_some() {
            self.current_round = current_round;
        }
        self.hosts = hosts.status_hosts();
    }
}

/// Seconds since the Unix epoch at `at` (0 before it).
pub(crate) fn unix_s(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
