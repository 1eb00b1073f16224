//! The soft brake on the supervisor's own cgroup (`[monitor.host_health.brake]`,
//! docs/operations.md "The memory brake"), the reference system's `memory.high` brake:
//! while a round runs, `brake.warning_consecutive_samples` in-round samples in a row under
//! memory pressure (a warning or worse, as the in-round floor of `host_health` judges it)
//! set the brake file of the supervisor's delegated memory cgroup — the parent of the
//! supervisor's leaf and of every round's cgroup — to its current use less
//! `memory_high_step_pct` percent (never below [`MIN_BRAKE`]): further growth of the
//! agent is throttled and reclaimed instead of pushing the host toward the floor. As many
//! healthy samples in a row restore the value before (`memory_high_released`, `recovered`),
//! and so does the round's end (`round_end`). A failed write is recorded once
//! (`memory_high_write_failed`) and the brake stays off for the round: fail open.
//!
//! | layout | brake file | use |
//! |---|---|---|
//! | v2 | `memory.high` | `memory.current` |
//! | v1 | `memory.soft_limit_in_bytes` | `memory.usage_in_bytes` |
//!
//! On v1 the soft limit only marks the cgroup to be reclaimed first under host pressure,
//! which is exactly when it is set; v2's `memory.high` throttles as well.

use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use crate::config::HostHealthConfig;
use crate::record::events::{Event, EventLog};
use crate::runtime::machine::round_cgroup::Delegation;
use agent_runner_plugin_host::common::cgroup::Layout;

/// The lowest brake ever written (the reference system's 64 MiB).
pub(crate) const MIN_BRAKE: u64 = 64 * 1024 * 1024;

/// The brake of one round: where it is written and when.
#[derive(Clone, Debug)]
pub(crate) struct Brake {
    /// The supervisor's delegated memory cgroup.
    pub cgroup: Delegation,
    /// `brake.memory_high_step_pct`.
    pub step_pct: u64,
    /// `brake.warning_consecutive_samples`.
    pub samples: u32,
}

impl Brake {
    /// The brake `cfg` asks for, when it is on and the supervisor's cgroup is delegated.
    pub(crate) fn of(cfg: &HostHealthConfig, cgroup: Option<&Delegation>) -> Option<Brake> {
        Some(Brake {
            cgroup: cgroup.filter(|_| cfg.brake.memory_high)?.clone(),
            step_pct: cfg.brake.memory_high_step_pct.min(50),
            samples: cfg.brake.warning_consecutive_samples.max(1),
        })
    }

    fn files(&self) -> (PathBuf, PathBuf) {
        let (brake, usage) = match self.cgroup.layout {
            Layout::V2 => ("memory.high", "memory.current"),
            Layout::V1 => ("memory.soft_limit_in_bytes", "memory.usage_in_bytes"),
        };
        (self.cgroup.dir.join(brake), self.cgroup.dir.join(usage))
    }
}

/// The brake during one round: the streaks, and the value to restore while engaged.
/// Dropping it (the round ended) restores an engaged brake.
pub(crate) struct RoundBrake<'a> {
    brake: Brake,
    events: &'a EventLog,
    round_num: u64,
    pressure_streak: u32,
    healthy_streak: u32,
    /// The value before, while engaged.
    previous: Option<String>,
    /// A write failed: off for the rest of the round.
    disarmed: bool,
}

impl<'a> RoundBrake<'a> {
    /// The brake of round `round_num`, recording into `events`.
    pub(crate) fn new(brake: Brake, events: &'a EventLog, round_num: u64) -> Self {
        RoundBrake {
            brake,
            events,
            round_num,
            pressure_streak: 0,
            healthy_streak: 0,
            previous: None,
            disarmed: false,
        }
    }

    /// One in-round sample: `pressure` names the reading under pressure (`psi`,
    /// `combined_low`; `None`: healthy), `context` holds the readings.
    pub(crate) fn sample(&mut self, pressure: Option<&str>, context: &serde_json::Value) {
        if self.disarmed {
            return;
        }
        let Some(pressure) = pressure else {
            self.pressure_streak = 0;
            self.healthy_streak = self.healthy_streak.saturating_add(1);
            if self.previous.is_some() && self.healthy_streak >= self.brake.samples {
                self.release("recovered");
            }
            return;
        };
        self.healthy_streak = 0;
        self.pressure_streak = self.pressure_streak.saturating_add(1);
        if self.previous.is_none() && self.pressure_streak >= self.brake.samples {
            self.engage(pressure, context);
        }
    }

    fn engage(&mut self, signal: &str, context: &serde_json::Value) {
        let (file, usage) = self.brake.files();
        let started = Instant::now();
        let engaged = (|| -> std::io::Result<(String, u64, u64)> {
            let previous = fs::read_to_string(&file)?.trim().to_owned();
            let current: u64 = fs::read_to_string(&usage)?
                .trim()
                .parse()
                .map_err(std::io::Error::other)?;
            let written = (current / 100)
                .saturating_mul(100 - self.brake.step_pct)
                .max(MIN_BRAKE);
            fs::write(&file, written.to_string())?;
            Ok((previous, current, written))
        })();
        match engaged {
            Ok((previous, memory_current, written)) => {
                self.events.emit(Event::MemoryHighEngaged {
                    round_num: self.round_num,
                    previous: previous.clone(),
                    written,
                    memory_current,
                    write_ms: started.elapsed().as_millis() as u64,
                    signal: signal.to_owned(),
                    context: context.clone(),
                    file,
                });
                self.previous = Some(previous);
            }
            Err(e) => self.failed(&e),
        }
    }

    fn release(&mut self, reason: &str) {
        let Some(previous) = self.previous.take() else {
            return;
        };
        let (file, _) = self.brake.files();
        match fs::write(&file, &previous) {
            Ok(()) => self.events.emit(Event::MemoryHighReleased {
                round_num: self.round_num,
                reason: reason.to_owned(),
            }),
            Err(e) => self.failed(&e),
        }
    }

    fn failed(&mut self, e: &std::io::Error) {
        tracing::warn!("memory brake on {}: {e}", self.brake.cgroup.dir.display());
        self.events.emit(Event::MemoryHighWriteFailed {
            round_num: self.round_num,
            errno: e.raw_os_error(),
        });
        self.disarmed = true;
    }
}

impl Drop for RoundBrake<'_> {
    fn drop(&mut self) {
        self.release("round_end");
    }
}
