//! `peek --json`'s `schedule`: what `[schedule]` says of the next round at the moment of
//! the look, in the reference system's shape (`paused`, `resume_at`, `active_window`,
//! `phase`) plus ours (the zone, the windows, when the open stretch ends and the next one
//! starts). Read from the resolved config with the rule `serve` follows
//! ([`crate::runtime::cycle::schedule_gate`]); docs/operations.md "peek --json".

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::Serialize;

use crate::config::Config;
use crate::runtime::cycle::schedule_gate::{self, Verdict};

/// What the reference system puts in `active_window` while paused outside every run
/// window (no pause window holds).
const OUTSIDE_RUN_WINDOWS: &str = "outside run_windows";

/// `peek`'s `schedule` (`null` when neither `[schedule]` nor any phase's schedule sets a
/// window). Instants are UTC, RFC 3339; searches look eight days ahead.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct PeekSchedule {
    /// The schedule holds rounds now: `serve` waits (`schedule_paused`). `false` while the
    /// next round may start, or while `phase_policy = "skip"` passes its closed phase over
    /// for an open one.
    pub paused: bool,
    /// While paused, when a round may start again; `""` otherwise, or when nothing opens
    /// within eight days.
    pub resume_at: String,
    /// While paused, the `pause_windows` entry holding now, or `"outside run_windows"`;
    /// `""` otherwise.
    pub active_window: String,
    /// The next round's phase; `""` without phases.
    pub phase: String,
    /// The zone the windows are read in (ours).
    pub timezone: String,
    /// The next round's phase's `run_windows`, as written (ours).
    pub run_windows: Vec<String>,
    /// Its `pause_windows`, as written (ours).
    pub pause_windows: Vec<String>,
    /// When the next round's phase's schedule lets a round start: now (to the second)
    /// while it is open, else when it opens (ours; `null` when not within eight days).
    pub next_start: Option<String>,
    /// When the open stretch beginning at `next_start` ends (ours; `null` when not within
    /// eight days).
    pub next_end: Option<String>,
}

/// The `schedule` block for round `next_round` of `config` at `now`.
pub(crate) fn of(config: &Config, next_round: u64, now: Timestamp) -> Option<PeekSchedule> {
    let any = config.schedule.is_active()
        || config
            .phases
            .overrides
            .values()
            .filter_map(|o| o.schedule.as_ref())
            .any(|s| s.is_active());
    if !any {
        return None;
    }
    let look = schedule_gate::look(config, next_round, now);
    let schedule = look.schedule;
    let resume_at = match look.verdict {
        Verdict::Run | Verdict::PassOver { .. } => None,
        Verdict::Pause { until } => Some(until),
    };
    let paused = resume_at.is_some();
    let next_start = schedule.next_open(now);
    let text = |t: Timestamp| t.round(jiff::Unit::Second).unwrap_or(t).to_string();
    let active_window = match (paused, schedule.pause_window_at(now)) {
        (false, _) => String::new(),
        (true, Some(window)) => window.label.clone(),
        (true, None) => OUTSIDE_RUN_WINDOWS.to_owned(),
    };
    let labels = |windows: &[crate::config::schedule::Window]| {
        windows.iter().map(|w| w.label.clone()).collect()
    };
    Some(PeekSchedule {
        paused,
        resume_at: resume_at.flatten().map(text).unwrap_or_default(),
        active_window,
        phase: look.phase.unwrap_or("").to_owned(),
        timezone: schedule.zone_name.clone(),
        run_windows: labels(&schedule.run),
        pause_windows: labels(&schedule.pause),
        next_start: next_start.map(text),
        next_end: next_start
            .and_then(|start| schedule.next_close(start))
            .map(text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &std::path::Path, tail: &str) -> Config {
        std::fs::write(dir.join("prompt.md"), "work\n").unwrap();
        let text = format!(
            "schema_version = 1\n[agent]\ncommand = [\"true\"]\n[prompt]\nfile = \"prompt.md\"\n[runtime]\nlog_dir = \"logs\"\n{tail}\n"
        );
        crate::config::parse_str(&dir.join("agent-runner.toml"), &text).unwrap()
    }

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn null_without_windows_open_or_paused_with_the_reference_fields() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            of(&config(dir.path(), ""), 1, ts("2026-11-30T12:00:00Z")),
            None
        );

        // Weekdays 09:00-17:00 Berlin, lunch paused. 2026-11-30 is a Monday.
        let c = config(
            dir.path(),
            "[schedule]\ntimezone = \"Europe/Berlin\"\nrun_windows = [\"mon-fri 09:00-17:00\"]\npause_windows = [\"12:00-13:00\"]",
        );
        let open = of(&c, 1, ts("2026-11-30T09:30:20Z")).unwrap(); // Mon 10:30:20
        assert!(!open.paused);
        assert_eq!(
            (open.resume_at.as_str(), open.active_window.as_str()),
            ("", "")
        );
        assert_eq!(open.next_start.as_deref(), Some("2026-11-30T09:30:20Z"));
        assert_eq!(open.next_end.as_deref(), Some("2026-11-30T11:00:00Z")); // 12:00 Berlin
        assert_eq!(open.timezone, "Europe/Berlin");
        assert_eq!(open.run_windows, ["mon-fri 09:00-17:00"]);
        assert_eq!(open.pause_windows, ["12:00-13:00"]);

        let lunch = of(&c, 1, ts("2026-11-30T11:30:00Z")).unwrap();
        assert!(lunch.paused);
        assert_eq!(lunch.resume_at, "2026-11-30T12:00:00Z");
        assert_eq!(lunch.active_window, "12:00-13:00");
        assert_eq!(lunch.next_start.as_deref(), Some("2026-11-30T12:00:00Z"));
        assert_eq!(lunch.next_end.as_deref(), Some("2026-11-30T16:00:00Z"));

        let weekend = of(&c, 1, ts("2026-12-05T12:00:00Z")).unwrap(); // Saturday
        assert_eq!(weekend.active_window, OUTSIDE_RUN_WINDOWS);
        assert_eq!(weekend.resume_at, "2026-12-07T08:00:00Z"); // Monday 09:00
        assert_eq!(weekend.phase, "");
    }

    #[test]
    fn a_phase_passed_over_is_not_a_pause() {
        let dir = tempfile::tempdir().unwrap();
        let phases = "[phases]\nlist = [\"build\", \"review\"]\nphase_policy = \"POLICY\"\n[phases.review.schedule]\ntimezone = \"UTC\"\nrun_windows = [\"09:00-10:00\"]";
        let at = ts("2026-11-30T12:00:00Z");
        let skip = config(dir.path(), &phases.replace("POLICY", "skip"));
        // Round 2 is a review round: closed, while build is open.
        assert_eq!(
            schedule_gate::look(&skip, 2, at).verdict,
            Verdict::PassOver {
                opens: Some(ts("2026-12-01T09:00:00Z"))
            }
        );
        let view = of(&skip, 2, at).unwrap();
        assert!(!view.paused, "{view:?}");
        assert_eq!(view.phase, "review");
        assert_eq!(view.next_start.as_deref(), Some("2026-12-01T09:00:00Z"));
        assert!(!of(&skip, 1, at).unwrap().paused);

        let wait = config(dir.path(), &phases.replace("POLICY", "wait"));
        let view = of(&wait, 2, at).unwrap();
        assert!(view.paused);
        assert_eq!(view.resume_at, "2026-12-01T09:00:00Z");
        assert_eq!(view.active_window, OUTSIDE_RUN_WINDOWS);
    }
}
