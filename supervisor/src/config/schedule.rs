//! `[schedule]`: the hours rounds may start in (docs/configuration.md "[schedule]"), the
//! reference system's window syntax: `"[DAYS ]HH:MM-HH:MM"`, `DAYS` a comma list of
//! `mon`…`sun` or ranges (`mon-fri`), a window whose end is not after its start wrapping
//! past midnight (its tail belongs to its start day), `24:00` allowed as an end. A round
//! may start when some `run_windows` entry holds (or there is none) and no `pause_windows`
//! entry does, in `timezone` (an IANA name; default the system's zone). Pure: callers pass
//! the instant, so tests control the clock. Zone rules come from `jiff`'s bundled
//! database.

use jiff::tz::TimeZone;
use jiff::Timestamp;

/// Minutes in a day.
const DAY: u16 = 24 * 60;

/// How far ahead [`Schedule::next_open`] looks: a week and a day, so weekday-only run
/// windows across a long weekend are found.
const HORIZON_MIN: i64 = 8 * 24 * 60;

/// One window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Minute of the day it opens, 0..1440.
    start: u16,
    /// Minute of the day it closes, 1..=1440; at or before `start` it wraps past midnight.
    end: u16,
    /// Weekdays it opens on (0 = Monday); empty means every day.
    days: Vec<u8>,
    /// As written, for events.
    pub label: String,
}

/// A `run_windows` / `pause_windows` entry that is not a window. Display:
/// `"<entry>": <problem>`, the value of a config error.
#[derive(Debug, thiserror::Error)]
#[error("{window:?}: {problem}")]
pub(crate) struct BadWindow {
    /// The entry as written.
    window: String,
    /// What is wrong with it.
    problem: WindowProblem,
}

/// What is wrong with a window entry.
#[derive(Debug, thiserror::Error)]
enum WindowProblem {
    #[error("expected \"HH:MM-HH:MM\", optionally after days like \"mon-fri \"")]
    NoRange,
    #[error("{0:?} is not HH:MM")]
    NotTime(String),
    #[error("24:00 is only an end")]
    MidnightStart,
    #[error("{0:?} is out of range")]
    OutOfRange(String),
    #[error("{0:?} is not a weekday (mon … sun)")]
    NotWeekday(String),
    #[error("a weekday range runs mon → sun, not {0:?}")]
    BackwardDays(String),
}

const WEEKDAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

impl Window {
    /// Parses `"[DAYS ]HH:MM-HH:MM"`.
    ///
    /// Errors: [`BadWindow`], saying what is wrong, for the config error.
    pub(crate) fn parse(text: &str) -> Result<Window, BadWindow> {
        let bad = |problem| BadWindow {
            window: text.to_owned(),
            problem,
        };
        let spec = text.trim();
        let (days_text, times) = match spec.rsplit_once(' ') {
            Some((days, times)) => (Some(days.trim()), times),
            None => (None, spec),
        };
        let (start, end) = times
            .split_once('-')
            .ok_or(WindowProblem::NoRange)
            .map_err(bad)?;
        let start = minute(start, false).map_err(bad)?;
        let end = minute(end, true).map_err(bad)?;
        let mut days = Vec::new();
        if let Some(list) = days_text {
            for token in list.split(',').map(|t| t.trim().to_ascii_lowercase()) {
                let day = |name: &str| {
                    WEEKDAYS
                        .iter()
                        .position(|d| *d == name)
                        .map(|i| i as u8)
                        .ok_or_else(|| bad(WindowProblem::NotWeekday(name.to_owned())))
                };
                match token.split_once('-') {
                    Some((a, b)) => {
                        let (a, b) = (day(a)?, day(b)?);
                        if a > b {
                            return Err(bad(WindowProblem::BackwardDays(token)));
                        }
                        days.extend(a..=b);
                    }
                    None => days.push(day(&token)?),
                }
            }
        }
        Ok(Window {
            start,
            end,
            days,
            label: spec.to_owned(),
        })
    }

    /// Whether the window holds on `weekday` (0 = Monday) at `minute` of the day.
    fn contains(&self, weekday: u8, minute: u16) -> bool {
        let wraps = self.end <= self.start;
        let (inside, start_day) = if wraps {
            if minute >= self.start {
                (true, weekday)
            } else {
                (minute < self.end, (weekday + 6) % 7)
            }
        } else {
            (self.start <= minute && minute < self.end, weekday)
        };
        inside && (self.days.is_empty() || self.days.contains(&start_day))
    }
}

/// The minute of the day of `"HH:MM"` (`"24:00"` only as an `end`).
fn minute(text: &str, end: bool) -> Result<u16, WindowProblem> {
    let not_time = || WindowProblem::NotTime(text.to_owned());
    let (h, m) = text
        .trim()
        .split_once(':')
        .filter(|(h, m)| h.len() == 2 && m.len() == 2)
        .ok_or_else(not_time)?;
    let (h, m): (u16, u16) = (
        h.parse().map_err(|_| not_time())?,
        m.parse().map_err(|_| not_time())?,
    );
    match (h, m) {
        (24, 0) if end => Ok(DAY),
        (24, _) => Err(WindowProblem::MidnightStart),
        (0..=23, 0..=59) => Ok(h * 60 + m),
        _ => Err(WindowProblem::OutOfRange(text.to_owned())),
    }
}

/// A resolved `[schedule]` (or a phase's).
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The zone windows are read in.
    pub zone: TimeZone,
    /// Its name, for events.
    pub zone_name: String,
    /// Rounds start only inside one of these (when any).
    pub run: Vec<Window>,
    /// Rounds never start inside one of these.
    pub pause: Vec<Window>,
}

impl Schedule {
    /// Whether any window is set.
    pub(crate) fn is_active(&self) -> bool {
        !self.run.is_empty() || !self.pause.is_empty()
    }

    /// Whether a round may start at `at`.
    pub(crate) fn allows(&self, at: Timestamp) -> bool {
        let (weekday, minute) = self.local(at);
        (self.run.is_empty() || self.run.iter().any(|w| w.contains(weekday, minute)))
            && !self.pause.iter().any(|w| w.contains(weekday, minute))
    }

    /// The first instant, minute-aligned, at or after `at` when a round may start; `None`
    /// when none lies within eight days (windows that never open).
    pub(crate) fn next_open(&self, at: Timestamp) -> Option<Timestamp> {
        self.first_minute(at, true)
    }

    /// The first instant, minute-aligned, at or after `at` when no round may start; `None`
    /// when none lies within eight days (windows that never close).
    pub(crate) fn next_close(&self, at: Timestamp) -> Option<Timestamp> {
        self.first_minute(at, false)
    }

    /// The `pause_windows` entry holding at `at`, if any (the first, in config order).
    pub(crate) fn pause_window_at(&self, at: Timestamp) -> Option<&Window> {
        let (weekday, minute) = self.local(at);
        self.pause.iter().find(|w| w.contains(weekday, minute))
    }

    /// `at` itself when [`Schedule::allows`] it is `allowed`, else the first following
    /// minute that is, within [`HORIZON_MIN`].
    fn first_minute(&self, at: Timestamp, allowed: bool) -> Option<Timestamp> {
        if self.allows(at) == allowed {
            return Some(at);
        }
        let minute0 = at.as_second() - at.as_second().rem_euclid(60);
        (1..=HORIZON_MIN)
            .filter_map(|i| Timestamp::from_second(minute0 + i * 60).ok())
            .find(|t| self.allows(*t) == allowed)
    }

    /// The first pair of run windows, one of each schedule, that are both open at some
    /// weekday and minute outside each schedule's own `pause_windows`; `None` when there
    /// is none, or either schedule has no run windows, or the zones differ (no
    /// cross-zone arithmetic, as in the reference system; docs/configuration.md
    /// "[phases]"). A scan of the week's 10 080 minutes per window pair, at load only.
    pub(crate) fn run_window_overlap<'a>(
        &'a self,
        other: &'a Schedule,
    ) -> Option<(&'a Window, &'a Window)> {
        if self.zone_name != other.zone_name {
            return None;
        }
        let open = |w: &Window, pause: &[Window], d: u8, m: u16| {
            w.contains(d, m) && !pause.iter().any(|p| p.contains(d, m))
        };
        self.run
            .iter()
            .flat_map(|a| other.run.iter().map(move |b| (a, b)))
            .find(|(a, b)| {
                (0..7u8).any(|d| {
                    (0..DAY).any(|m| open(a, &self.pause, d, m) && open(b, &other.pause, d, m))
                })
            })
    }

    /// The weekday (0 = Monday) and minute of the day of `at` in the schedule's zone.
    fn local(&self, at: Timestamp) -> (u8, u16) {
        let local = at.to_zoned(self.zone.clone());
        (
            local.weekday().to_monday_zero_offset() as u8,
            local.hour() as u16 * 60 + local.minute() as u16,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(zone: &str, run: &[&str], pause: &[&str]) -> Schedule {
        Schedule {
            zone: TimeZone::get(zone).unwrap(),
            zone_name: zone.to_owned(),
            run: run.iter().map(|w| Window::parse(w).unwrap()).collect(),
            pause: pause.iter().map(|w| Window::parse(w).unwrap()).collect(),
        }
    }

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn parses_the_window_syntax() {
        assert!(Window::parse("09:00-17:00").is_ok());
        assert!(Window::parse("mon-fri 09:00-24:00").is_ok());
        assert!(Window::parse("sat,sun 22:00-06:00").is_ok());
        for bad in [
            "9:00-17:00",
            "09:00",
            "24:00-01:00",
            "09:60-10:00",
            "fri-mon 09:00-10:00",
            "moon 09:00-10:00",
            "09:00-25:00",
        ] {
            assert!(Window::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn run_and_pause_windows_with_wrap_days_and_zones() {
        // 2026-11-30 is a Monday.
        let s = schedule("Europe/Berlin", &["mon-fri 22:00-06:00"], &["02:00-03:00"]);
        assert!(s.allows(ts("2026-11-30T21:30:00Z"))); // Mon 22:30 Berlin
        assert!(!s.allows(ts("2026-11-30T20:30:00Z"))); // Mon 21:30
        assert!(!s.allows(ts("2026-12-01T01:30:00Z"))); // Tue 02:30: paused
        assert!(s.allows(ts("2026-12-01T04:00:00Z"))); // Tue 05:00: Monday's tail
                                                       // Friday's window runs into Saturday morning; Saturday's own evening is closed.
        assert!(s.allows(ts("2026-12-05T03:00:00Z"))); // Sat 04:00
        assert!(!s.allows(ts("2026-12-05T21:30:00Z"))); // Sat 22:30
                                                        // From Saturday evening the next opening is Monday 22:00 Berlin.
        assert_eq!(
            s.next_open(ts("2026-12-05T21:30:00Z")),
            Some(ts("2026-12-07T21:00:00Z"))
        );
        // 24:00 closes at midnight.
        let s = schedule("UTC", &["18:00-24:00"], &[]);
        assert!(s.allows(ts("2026-11-30T23:59:00Z")));
        assert!(!s.allows(ts("2026-12-01T00:00:00Z")));
        assert_eq!(
            s.next_open(ts("2026-12-01T00:00:30Z")),
            Some(ts("2026-12-01T18:00:00Z"))
        );
        // It closes at midnight, and its pause window holds 02:00-03:00 only.
        let s2 = schedule("UTC", &["18:00-24:00"], &["02:00-03:00"]);
        assert_eq!(
            s2.next_close(ts("2026-11-30T19:00:30Z")),
            Some(ts("2026-12-01T00:00:00Z"))
        );
        assert_eq!(
            s2.next_close(ts("2026-11-30T12:00:00Z")),
            Some(ts("2026-11-30T12:00:00Z"))
        );
        assert_eq!(
            s2.pause_window_at(ts("2026-12-01T02:30:00Z"))
                .map(|w| w.label.as_str()),
            Some("02:00-03:00")
        );
        assert_eq!(s2.pause_window_at(ts("2026-12-01T12:00:00Z")), None);
        // No windows: always open; windows that never open: no next opening.
        assert!(schedule("UTC", &[], &[]).allows(ts("2026-11-30T12:00:00Z")));
        let never = schedule("UTC", &[], &["00:00-24:00"]);
        assert_eq!(never.next_open(ts("2026-11-30T12:00:00Z")), None);
        assert_eq!(
            schedule("UTC", &[], &[]).next_close(ts("2026-11-30T12:00:00Z")),
            None
        );
    }

    #[test]
    fn daylight_saving_changes_follow_the_zone() {
        // New York's clocks go back on 2026-11-01: 09:00 local is 13:00Z before, 14:00Z after.
        let s = schedule("America/New_York", &["09:00-10:00"], &[]);
        assert!(s.allows(ts("2026-10-30T13:30:00Z")));
        assert!(!s.allows(ts("2026-11-02T13:30:00Z")));
        assert!(s.allows(ts("2026-11-02T14:30:00Z")));
    }
}
