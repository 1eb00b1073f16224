//! What `[schedule]` says of the next round at an instant (docs/configuration.md
//! "[schedule]"): it may start, its phase is passed over (`phase_policy = "skip"` while
//! another phase is open), or `serve` waits until a schedule opens. The one place of this
//! rule: `serve` acts on it, `peek` shows it. Pure: callers pass the instant.

use jiff::Timestamp;

use crate::config::schedule::Schedule;
use crate::config::{Config, PhasePolicy};

/// What the schedule says of the next round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It may start now.
    Run,
    /// Its phase is closed while another is open: its round number is passed over.
    /// `opens`: when that phase's schedule opens, if within eight days.
    PassOver {
        /// When the phase's schedule opens.
        opens: Option<Timestamp>,
    },
    /// Nothing may start now: wait until `until` (the phase's schedule opening; under
    /// `phase_policy = "skip"`, the first phase's to open), `None` when nothing opens
    /// within eight days.
    Pause {
        /// When a round may start.
        until: Option<Timestamp>,
    },
}

/// The next round as the schedule sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Look<'a> {
    /// Its phase (`None` without phases).
    pub phase: Option<&'a str>,
    /// Its phase's schedule.
    pub schedule: &'a Schedule,
    /// What the schedule says.
    pub verdict: Verdict,
}

/// Looks at round `next_round` of `config` at `now`.
pub(crate) fn look(config: &Config, next_round: u64, now: Timestamp) -> Look<'_> {
    let phase = config.phase_for_round(next_round);
    let schedule = config.profile(phase).schedule;
    let verdict = if schedule.allows(now) {
        Verdict::Run
    } else {
        let skip =
            config.phases.phase_policy == PhasePolicy::Skip && !config.phases.list.is_empty();
        let phase_schedules = || {
            config
                .phases
                .list
                .iter()
                .map(|p| config.profile(Some(p)).schedule)
        };
        if skip && phase_schedules().any(|s| s.allows(now)) {
            Verdict::PassOver {
                opens: schedule.next_open(now),
            }
        } else if skip {
            Verdict::Pause {
                until: phase_schedules().filter_map(|s| s.next_open(now)).min(),
            }
        } else {
            Verdict::Pause {
                until: schedule.next_open(now),
            }
        }
    };
    Look {
        phase,
        schedule,
        verdict,
    }
}
