//! `serve`'s bounds on time and on calls (ours; docs/configuration.md, "[runtime]"):
//! `max_duration_s` ends `serve` once it has run that long, `max_rounds_per_hour` holds the
//! next round back while that many rounds started in the last 60 minutes. The ceiling is
//! counted from the record (`round_start` events), so a restart does not reset it.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::record::events::read::Backwards;

/// The ceiling's window.
pub(crate) const HOUR: Duration = Duration::from_secs(3600);

/// A ceiling reached: how many rounds started in the window and how long until the oldest
/// of them leaves it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ceiling {
    /// `round_start` events in the last hour.
    pub rounds_last_hour: u64,
    /// Until a round may start.
    pub wait: Duration,
}

/// Whether `max` rounds (or more) started within the hour before `now`, by the record of
/// `state_dir`; `None` when a round may start. An unreadable record holds nothing back.
pub(crate) fn ceiling(state_dir: &Path, max: u64, now: SystemTime) -> Option<Ceiling> {
    let since = now.checked_sub(HOUR)?;
    let mut back = Backwards::open(state_dir).ok()?;
    let mut starts: Vec<SystemTime> = Vec::new();
    while let Ok(Some(found)) = back.next_event() {
        let Some(at) = found.head.time() else {
            continue;
        };
        if at < since {
            break;
        }
        if found.head.event == "round_start" {
            starts.push(at);
        }
    }
    let count = starts.len() as u64;
    if count < max {
        return None;
    }
    // Newest first: the round whose ageing-out brings the count under `max`.
    let pivot = starts[(max - 1) as usize];
    let wait = (pivot + HOUR)
        .duration_since(now)
        .unwrap_or_default()
        .max(Duration::from_secs(1));
    Some(Ceiling {
        rounds_last_hour: count,
        wait,
    })
}
