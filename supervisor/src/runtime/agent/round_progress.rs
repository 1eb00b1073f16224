//! The in-round heartbeat (`[monitor] round_progress_interval_s`, the reference system's
//! `round_progress`): while a round's agent runs, every interval one event says how big its
//! round log is, how long ago it last grew and how long the agent has run — so an
//! operator can tell an agent at work from a stuck one. It runs beside the agent's wait
//! ([`crate::runtime::agent::process::run`]) and ends with it: none after the agent's exit.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use crate::record::events::{Event, EventLog};

/// The heartbeat of one round.
#[derive(Debug)]
pub(crate) struct Heartbeat {
    /// Time between beats (`round_progress_interval_s`, > 0).
    pub every: Duration,
    /// The round log the agent's output goes to.
    pub log_path: PathBuf,
    /// Where `round_progress` goes.
    pub events: EventLog,
    /// The round.
    pub round_num: u64,
}

impl Heartbeat {
    /// Records `round_progress` every [`Heartbeat::every`] after `started` (the agent's
    /// spawn); never returns: the agent's wait drops it when the agent is done.
    pub(crate) async fn beat(&self, started: Instant) -> std::convert::Infallible {
        let mut ticks = tokio::time::interval_at((started + self.every).into(), self.every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let (size, modified) = match std::fs::metadata(&self.log_path) {
                Ok(m) => (m.len(), m.modified().ok()),
                Err(_) => (0, None),
            };
            let last_write = modified
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .unwrap_or_default();
            self.events.emit(Event::RoundProgress {
                round_num: self.round_num,
                log_size_kb: round_to(size as f64 / 1024.0, 100.0),
                last_write_age_s: round_to(last_write.as_secs_f64(), 10.0),
                wall_age_s: round_to(started.elapsed().as_secs_f64(), 10.0),
            });
        }
    }
}

/// `x` rounded to 1/`per` (`per` = 100: two decimals).
fn round_to(x: f64, per: f64) -> f64 {
    (x * per).round() / per
}
