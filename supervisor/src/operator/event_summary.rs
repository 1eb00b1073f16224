//! The summary `serve` keeps beside the record, `<log_dir>/events-summary.json`, for the
//! questions reading backwards cannot answer cheaply: the newest rounds and `hook_failed`
//! events when they lie further back than a look reads ([`crate::operator::recent`]).
//!
//! It is state rebuilt from the record, never a source of truth: `serve` refreshes it at
//! boot and after every attempt at a round (reading back only to the point the previous
//! summary covers, or, when it is missing, unreadable or stale, until its lists are full)
//! and writes it atomically. Readers never write it; they use it only when their own
//! backwards scan reaches the point it covers, so a summary that is missing, stale or
//! describes a record since rotated is simply not used (docs/operations.md "Reading the
//! record").

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io;
use std::path::Path;

use crate::operator::peek::{RECENT_HOOK_FAILURES, RECENT_ROUNDS};
use crate::operator::recent::{self, Wanted};
use crate::runtime::events::Recorded;
use crate::runtime::state::{read_json, write_json_replace};

/// The summary's file name in `log_dir`.
pub const SUMMARY_FILE: &str = "events-summary.json";

/// This format's `version`; a summary of another version is rebuilt.
pub const VERSION: u32 = 1;

/// A point in the record: the end of a line of one monthly file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Covers {
    /// The file's name (`events-YYYY-MM.jsonl`).
    pub file: String,
    /// The offset just past the line's newline, in bytes.
    pub end: u64,
}

impl Covers {
    /// The point `end` of `path`.
    pub fn of(path: &Path, end: u64) -> Covers {
        Covers {
            file: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            end,
        }
    }

    /// `other` is at or before this point (monthly files sort by name).
    pub fn includes(&self, other: &Covers) -> bool {
        other.file < self.file || (other.file == self.file && other.end <= self.end)
    }
}

/// The newest rounds' events and `hook_failed` events of the record up to `covers`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Summary {
    /// [`VERSION`].
    pub version: u32,
    /// How far into the record this summary accounts for.
    pub covers: Covers,
    /// Every event of the newest [`RECENT_ROUNDS`] + 1 rounds, oldest first, as written.
    pub round_events: Vec<Value>,
    /// The newest [`RECENT_HOOK_FAILURES`] `hook_failed` events, oldest first, as written.
    pub hook_failures: Vec<Value>,
}

/// What the summary holds: what `peek` shows of rounds and hook failures.
fn wanted() -> Wanted {
    Wanted {
        events: 0,
        rounds: RECENT_ROUNDS + 1,
        hook_failures: RECENT_HOOK_FAILURES,
        round: None,
    }
}

/// The summary of `log_dir`, if there is one of this version whose covered point still
/// exists in the record (its file is at least that long).
pub fn load(log_dir: &Path) -> Option<Summary> {
    let summary: Summary = read_json(&log_dir.join(SUMMARY_FILE)).ok().flatten()?;
    let len = std::fs::metadata(log_dir.join(&summary.covers.file))
        .ok()?
        .len();
    (summary.version == VERSION && len >= summary.covers.end).then_some(summary)
}

/// Brings the summary of `log_dir` up to the end of the record and writes it atomically
/// (only `serve` calls this). Nothing is written while the record is empty.
///
/// Errors: the summary cannot be written.
pub fn refresh(log_dir: &Path) -> io::Result<()> {
    let previous = load(log_dir);
    let unchanged = previous.as_ref().map(|s| s.covers.clone());
    let found = recent::gather(log_dir, wanted(), previous, None);
    let Some(covers) = found.newest else {
        return Ok(());
    };
    if unchanged.as_ref() == Some(&covers) {
        return Ok(());
    }
    let lines = |events: Vec<Recorded>| events.into_iter().map(|e| e.line).collect();
    let summary = Summary {
        version: VERSION,
        covers,
        round_events: lines(found.round_events),
        hook_failures: lines(found.hook_failures),
    };
    write_json_replace(&log_dir.join(SUMMARY_FILE), &summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::recent::tests::round;
    use std::collections::BTreeSet;

    fn rounds_in(events: &[Recorded]) -> BTreeSet<u64> {
        events.iter().filter_map(Recorded::round_num).collect()
    }

    #[test]
    fn answers_beyond_the_scan_and_is_refreshed_or_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let october = dir.path().join("events-2026-10.jsonl");
        let mut text = String::new();
        for n in 1..=3 {
            round(&mut text, n, usize::from(n == 2));
        }
        // More than a look reads of a loop deferring, after those rounds.
        while (text.len() as u64) < recent::SCAN_BYTES + 4096 {
            text.push_str(
                "{\"ts\":\"2026-10-29T11:00:00.000Z\",\"event\":\"round_deferred\",\"defer_s\":60}\n",
            );
        }
        std::fs::write(&october, &text).unwrap();
        let look = || recent::scan(dir.path(), wanted());
        assert!(look().round_events.is_empty() && look().hook_failures.is_empty());

        refresh(dir.path()).unwrap();
        let summary = load(dir.path()).unwrap();
        assert_eq!(summary.covers, Covers::of(&october, text.len() as u64));
        let found = look();
        assert_eq!(rounds_in(&found.round_events), BTreeSet::from([1, 2, 3]));
        assert_eq!(found.hook_failures.len(), 1);
        // Events of any kind are not in the summary: they are still read from the record.
        let newest = recent::scan(
            dir.path(),
            Wanted {
                events: 3,
                ..wanted()
            },
        );
        assert_eq!(newest.events.len(), 3);
        assert_eq!(newest.events[2].kind(), "round_deferred");
        assert_eq!(rounds_in(&newest.round_events), BTreeSet::from([1, 2, 3]));

        // Lines appended since (a new month here) are read back to the summary's point.
        let november = dir.path().join("events-2026-11.jsonl");
        let mut newer = String::new();
        round(&mut newer, 4, 1);
        std::fs::write(&november, &newer).unwrap();
        let found = look();
        assert_eq!(rounds_in(&found.round_events), BTreeSet::from([1, 2, 3, 4]));
        assert_eq!(found.hook_failures.len(), 2);
        refresh(dir.path()).unwrap();
        assert_eq!(
            load(dir.path()).unwrap().covers,
            Covers::of(&november, newer.len() as u64)
        );

        // A record cut shorter than the point covered: the summary is set aside, and the
        // next refresh rebuilds it from what is there.
        std::fs::write(&november, "").unwrap();
        assert!(load(dir.path()).is_none());
        assert_eq!(look().hook_failures.len(), 0);
        refresh(dir.path()).unwrap();
        assert_eq!(load(dir.path()).unwrap().hook_failures.len(), 1);
        assert_eq!(look().hook_failures.len(), 1);
    }
}
