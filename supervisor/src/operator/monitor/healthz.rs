//! `GET /healthz` of the live page: whether `serve` is alive and not wedged, for a kubelet's
//! liveness and readiness probes and load balancers (docs/operations.md "Running a fleet").
//!
//! - **down**: no supervisor answers on the control socket and none holds the project lock.
//! - **wedged**: a supervisor holds the lock but its control socket does not answer within
//!   2 s; or it answers but its loop is overdue: the round under way started more than its
//!   phase's budget plus [`WEDGED_GRACE`] ago (the budget ends the agent, and what follows
//!   a round, hooks and git, is bounded by their timeouts), or a back-off ended more than
//!   [`WEDGED_GRACE`] ago and `service.json` still says `backing_off`. Waits whose length
//!   the supervisor does not publish (restart delay, a deferral, the schedule, the rate
//!   ceiling) are never called wedged while the socket answers.
//! - **ok**: otherwise.
//!
//! Read-only: the socket's `status` request and `service.json`, as `status` and `peek` read
//! them.

use serde::Serialize;
use std::time::{Duration, SystemTime};

use crate::config::Config;
use crate::operator::control::{self, StatusDoc};
use crate::operator::monitor::metrics::epoch_seconds;
use crate::record::service::{self, ServiceDoc, ServiceState};

/// How far past a deadline the supervisor may be before it is called wedged.
pub(crate) const WEDGED_GRACE: Duration = Duration::from_secs(300);

/// The answer of `GET /healthz` (HTTP 200 when `status` is `ok`, else 503).
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct Health {
    /// `ok`, `wedged` or `down`.
    pub status: &'static str,
    /// Why, in words.
    pub reason: String,
    /// The supervisor's pid (as it sees itself), when one was found.
    pub pid: Option<u32>,
    /// `service.json`'s `state` (`running`, `idle`, …), when the supervisor answered.
    pub state: Option<&'static str>,
    /// The round under way or last handed out.
    pub round: Option<u64>,
}

impl Health {
    /// Whether probes should pass.
    pub(crate) fn ok(&self) -> bool {
        self.status == "ok"
    }
}

/// Looks at the supervisor of `config`'s project now.
pub(crate) async fn check(config: &Config) -> Health {
    let state_dir = &config.runtime.state_dir;
    match control::request::<StatusDoc>(state_dir, "status").await {
        Some(status) => judge(
            config,
            &status,
            service::read(state_dir).as_ref(),
            SystemTime::now(),
        ),
        None => match service::live_supervisor(state_dir) {
            Some(pid) => Health {
                status: "wedged",
                reason: format!(
                    "pid {pid} holds the project lock but its control socket does not answer"
                ),
                pid: Some(pid),
                state: None,
                round: None,
            },
            None => Health {
                status: "down",
                reason: "no supervisor answers on the control socket or holds the project lock"
                    .into(),
                pid: None,
                state: None,
                round: None,
            },
        },
    }
}

/// The verdict on a supervisor that answered `status`, from its `service.json` (ignored
/// when another pid wrote it) at `now`.
fn judge(
    config: &Config,
    status: &StatusDoc,
    service: Option<&ServiceDoc>,
    now: SystemTime,
) -> Health {
    let service = service.filter(|s| Some(s.pid) == status.pid);
    let mut health = Health {
        status: "ok",
        reason: "the supervisor answers and nothing it publishes is overdue".into(),
        pid: status.pid,
        state: service.map(|s| s.state.as_str()),
        round: status.current_round,
    };
    let Some(service) = service else {
        return health;
    };
    let now_s = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let grace = WEDGED_GRACE.as_secs_f64();
    let overdue = match (&service.state, &service.current_round, &service.back_off) {
        (ServiceState::Running, Some(round), _) => {
            let budget = config
                .profile(round.phase.as_deref())
                .round_budget
                .as_secs_f64();
            epoch_seconds(&round.started_at).and_then(|started| {
                let running = now_s - started;
                (running > budget + grace).then(|| {
                    format!(
                        "round {} has run {running:.0} s, past its budget of {budget:.0} s and {grace:.0} s of grace",
                        round.round_num
                    )
                })
            })
        }
        (ServiceState::BackingOff, _, Some(back_off)) => {
            epoch_seconds(&back_off.until).and_then(|until| {
                (now_s > until + grace).then(|| {
                    format!(
                        "still backing off {:.0} s after the back-off's end ({})",
                        now_s - until,
                        back_off.until
                    )
                })
            })
        }
        _ => None,
    };
    if let Some(reason) = overdue {
        health.status = "wedged";
        health.reason = reason;
    }
    health
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::events::timestamp;
    use crate::record::service::{BackOffDoc, CurrentRound};

    /// A project with a 100 s round budget (the directory lives as long as the config).
    fn config() -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("prompts")).unwrap();
        std::fs::write(dir.path().join("prompts/main.md"), "work\n").unwrap();
        let path = dir.path().join("agent-runner.toml");
        std::fs::write(
            &path,
            "schema_version = 1\n[agent]\ncommand = [\"true\"]\n[runtime]\nround_budget_s = 100\n",
        )
        .unwrap();
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir.path())
            .status()
            .unwrap();
        let config = crate::config::load(&path).expect("config");
        (dir, config)
    }

    fn status(pid: u32) -> StatusDoc {
        serde_json::from_value(serde_json::json!({
            "running": true, "pid": pid, "current_round": 4, "source": "socket"
        }))
        .unwrap()
    }

    fn service(pid: u32, state: ServiceState, started: SystemTime) -> ServiceDoc {
        let mut doc: ServiceDoc = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "pid": pid, "started_at": timestamp(started),
            "config": "/x/agent-runner.toml", "state": "idle", "current_round": null,
            "hosts": [], "hook_call_durations": {},
            "sandbox": {"requested": "off", "achieved_tier": "unconfined", "landlock_abi": null, "seccomp": false},
            "updated_at": timestamp(started)
        }))
        .unwrap();
        doc.state = state;
        doc
    }

    #[test]
    fn a_round_is_wedged_only_past_its_budget_and_the_grace() {
        let (_dir, c) = config();
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut doc = service(7, ServiceState::Running, start);
        doc.current_round = Some(CurrentRound {
            round_num: 4,
            phase: None,
            started_at: timestamp(start),
        });
        let within = start + Duration::from_secs(100 + 299);
        assert_eq!(judge(&c, &status(7), Some(&doc), within).status, "ok");
        let past = start + Duration::from_secs(100 + 301);
        let h = judge(&c, &status(7), Some(&doc), past);
        assert_eq!(h.status, "wedged");
        assert!(h.reason.contains("round 4 has run 401 s"), "{}", h.reason);
        // A service.json another pid wrote says nothing of this supervisor.
        assert_eq!(judge(&c, &status(8), Some(&doc), past).status, "ok");
    }

    #[test]
    fn a_back_off_is_wedged_only_past_its_end_and_the_grace() {
        let (_dir, c) = config();
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut doc = service(7, ServiceState::BackingOff, start);
        doc.back_off = Some(BackOffDoc {
            until: timestamp(start + Duration::from_secs(3600)),
            kind: "rate_limit".into(),
            agent: "claude".into(),
            since_round: 3,
            phase: String::new(),
        });
        let long_wait = start + Duration::from_secs(3600);
        assert_eq!(judge(&c, &status(7), Some(&doc), long_wait).status, "ok");
        let past = start + Duration::from_secs(3600 + 301);
        assert_eq!(judge(&c, &status(7), Some(&doc), past).status, "wedged");
    }

    #[test]
    fn waits_of_unpublished_length_are_never_wedged() {
        let (_dir, c) = config();
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let much_later = start + Duration::from_secs(86_400 * 3);
        for state in [
            ServiceState::Idle,
            ServiceState::Deferred,
            ServiceState::Paused,
        ] {
            let doc = service(7, state, start);
            assert_eq!(judge(&c, &status(7), Some(&doc), much_later).status, "ok");
        }
    }
}
