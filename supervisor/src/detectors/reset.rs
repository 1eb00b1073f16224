//! Reset times in agent output (docs/detectors.md "Reset times"): an epoch
//! (`limit reached|1764478800`), a clock time with or without a zone (`resets 5am
//! (Europe/Berlin)`, `try again at 3:42 PM`, `reset at 17:00 UTC`) or a duration (`try
//! again in 4 days 2 hours 5 minutes`, `retry in 21.5s`, `Retry-After: 30`). Pure: the
//! caller passes `now` and the local zone, so tests control the clock.

use jiff::civil::Time;
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp, ToSpan, Zoned};
use regex::Regex;
use std::sync::LazyLock;
use std::time::Duration;

/// When the provider will take requests again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reset {
    /// At this instant.
    At(Timestamp),
    /// After this long (from the round's end).
    After(Duration),
}

/// How far ahead a parsed reset may lie; anything later is taken as a misreading.
const HORIZON: Duration = Duration::from_secs(8 * 24 * 3600);

static EPOCH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:limit reached\|?|reset[s_]?(?:_?at)?\W{0,4}|resetsAt\W{0,4})(\d{10}|\d{13})\b",
    )
    .expect("epoch pattern compiles")
});

static CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(?:resets?|try again|available again|retry)\s+(?:at\s+)?",
        r"(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?",
        r"(?:\s*\(([A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)*)\)|\s+(UTC|GMT|Z)\b)?",
    ))
    .expect("clock pattern compiles")
});

static AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(?:(?:try again|retry|resets?|available again|please retry)\s+(?:in|after)|retry-after:?)\s+",
        r"((?:\d+(?:\.\d+)?\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)[\s,]*(?:and\s+)?)+|\d+\b)",
    ))
    .expect("duration pattern compiles")
});

static PART: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)")
        .expect("duration part pattern compiles")
});

/// The first reset time found in `text`, judged at `now` in `local` (the zone of a clock
/// time printed without one). `None` when there is none, or it lies in the past or more
/// than 8 days ahead.
pub(crate) fn find(text: &str, now: Timestamp, local: &TimeZone) -> Option<Reset> {
    if let Some(caps) = EPOCH.captures(text) {
        let digits = &caps[1];
        let secs: i64 = digits.parse().ok()?;
        let secs = if digits.len() == 13 {
            secs / 1000
        } else {
            secs
        };
        let at = Timestamp::from_second(secs).ok()?;
        return plausible(at, now).then_some(Reset::At(at));
    }
    if let Some(caps) = AFTER.captures(text) {
        let spec = &caps[1];
        let mut secs = 0f64;
        if let Ok(plain) = spec.trim().parse::<u64>() {
            secs = plain as f64;
        } else {
            for part in PART.captures_iter(spec) {
                let n: f64 = part[1].parse().ok()?;
                let unit = part[2].to_ascii_lowercase();
                secs += n * match unit.as_bytes()[0] {
                    b'd' => 86_400.0,
                    b'h' => 3_600.0,
                    b'm' => 60.0,
                    _ => 1.0,
                };
            }
        }
        let after = Duration::from_secs_f64(secs.ceil());
        return (after > Duration::ZERO && after <= HORIZON).then_some(Reset::After(after));
    }
    if let Some(caps) = CLOCK.captures(text) {
        let mut hour: i8 = caps[1].parse().ok()?;
        let minute: i8 = caps.get(2).map_or(Some(0), |m| m.as_str().parse().ok())?;
        if let Some(ampm) = caps.get(3) {
            if !(1..=12).contains(&hour) {
                return None;
            }
            let pm = ampm.as_str().to_ascii_lowercase().starts_with('p');
            hour = (hour % 12) + if pm { 12 } else { 0 };
        } else if caps.get(2).is_none() {
            // A bare number ("retry 3") is not a clock time.
            return None;
        }
        let zone = match (caps.get(4), caps.get(5)) {
            (Some(name), _) => TimeZone::get(name.as_str()).ok()?,
            (None, Some(_)) => TimeZone::UTC,
            (None, None) => local.clone(),
        };
        let time = Time::new(hour, minute, 0, 0).ok()?;
        let today: Zoned = now.to_zoned(zone);
        let mut at = today
            .date()
            .to_datetime(time)
            .to_zoned(today.time_zone().clone())
            .ok()?;
        if at.timestamp() <= now {
            at = at.checked_add(1.day()).ok()?;
        }
        let at = at.timestamp();
        return plausible(at, now).then_some(Reset::At(at));
    }
    None
}

fn plausible(at: Timestamp, now: Timestamp) -> bool {
    let ahead: Span = at.since(now).unwrap_or_default();
    let secs = ahead.total(jiff::Unit::Second).unwrap_or(-1.0);
    secs > 0.0 && secs <= HORIZON.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-11-30T01:00:00Z".parse().unwrap()
    }

    fn at(text: &str) -> Option<String> {
        match find(text, now(), &TimeZone::UTC)? {
            Reset::At(ts) => Some(ts.to_string()),
            Reset::After(d) => Some(format!("+{}s", d.as_secs())),
        }
    }

    #[test]
    fn epochs() {
        let epoch = now().as_second() + 7200;
        assert_eq!(
            at(&format!("Claude AI usage limit reached|{epoch}")).as_deref(),
            Some("2026-11-30T03:00:00Z")
        );
        assert_eq!(
            at(&format!("{{\"resetsAt\":{}}}", epoch * 1000)).as_deref(),
            Some("2026-11-30T03:00:00Z")
        );
        // In the past, or absurdly far ahead: not a reset.
        assert_eq!(
            at(&format!("limit reached|{}", now().as_second() - 5)),
            None
        );
        assert_eq!(at("limit reached|4102444800"), None);
    }

    #[test]
    fn clock_times() {
        assert_eq!(
            at("5-hour limit reached ∙ resets 5am (Europe/Berlin)").as_deref(),
            Some("2026-11-30T04:00:00Z")
        );
        // 00:30 UTC already passed at 01:00: tomorrow.
        assert_eq!(
            at("resets 12:30am (UTC)").as_deref(),
            Some("2026-12-01T00:30:00Z")
        );
        assert_eq!(
            at("try again at 3:42 PM").as_deref(),
            Some("2026-11-30T15:42:00Z")
        );
        assert_eq!(
            at("quota reset at 17:00 UTC").as_deref(),
            Some("2026-11-30T17:00:00Z")
        );
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let local = find("try again at 3:42 PM", now(), &berlin).unwrap();
        assert_eq!(local, Reset::At("2026-11-30T14:42:00Z".parse().unwrap()));
        assert_eq!(at("resets 13pm"), None);
        assert_eq!(at("resets 5am (Not/AZone)"), None);
    }

    #[test]
    fn durations() {
        assert_eq!(
            at("try again in 4 days 2 hours 5 minutes").as_deref(),
            Some("+353100s")
        );
        assert_eq!(at("Please retry in 21.5s.").as_deref(), Some("+22s"));
        assert_eq!(at("Try again in 1m30s").as_deref(), Some("+90s"));
        assert_eq!(at("Retry-After: 30").as_deref(), Some("+30s"));
        assert_eq!(at("resets in 2h, 10 minutes").as_deref(), Some("+7800s"));
        assert_eq!(at("try again in 30 days"), None);
        assert_eq!(at("nothing to see"), None);
    }
}
