//! What one look (`peek`, `watch`) needs from the record: the newest events, the events of
//! the newest rounds, the newest `hook_failed` events and the newest `agent_network_blip`
//! events, gathered by reading the record backwards
//! ([`crate::record::events::read::Backwards`]) and stopping as soon as all are found. What lies further back than [`SCAN_BYTES`] comes from the summary `serve`
//! keeps ([`crate::record::events::summary`]) when the scan reaches the point it covers
//! (docs/operations.md "Reading the record"). Only the kept lines are deserialized; memory
//! is bounded by what is asked, not by the record.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;

use crate::record::events::read::Backwards;
use crate::record::events::summary::{self, Covers, Summary};
use crate::record::events::Recorded;

/// Completed rounds a look lists (`peek`'s `recent_rounds`).
pub(crate) const RECENT_ROUNDS: usize = 10;
/// `hook_failed` events a look lists (`recent_hook_failures`).
pub(crate) const RECENT_HOOK_FAILURES: usize = 10;
/// `agent_network_blip` events a look lists (`recent_blips`; the reference system's five,
/// docs/operations.md "peek --json").
pub(crate) const RECENT_BLIPS: usize = 5;

/// The kinds a look lists on their own, newest first, however far apart they lie.
const HOOK_FAILED: &str = "hook_failed";
const NETWORK_BLIP: &str = "agent_network_blip";
const LISTED_KINDS: [&str; 2] = [HOOK_FAILED, NETWORK_BLIP];

/// How far back a look reads at most when what it wants is not all found sooner and no
/// summary covers the rest (a record whose newest megabyte holds no round is a loop
/// deferring or failing, and says so in those lines).
pub(crate) const SCAN_BYTES: u64 = 1 << 20;

/// What to look for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wanted {
    /// The newest events of any kind.
    pub events: usize,
    /// The newest rounds (all their events).
    pub rounds: usize,
    /// The newest `hook_failed` events.
    pub hook_failures: usize,
    /// The newest `agent_network_blip` events.
    pub blips: usize,
    /// Also this round's events, however far back (the scan bound does not apply).
    pub round: Option<u64>,
}

/// What was found, each list oldest first.
#[derive(Debug, Default)]
pub(crate) struct Recent {
    /// The newest events (at most `Wanted::events`).
    pub events: Vec<Recorded>,
    /// Every event of the newest rounds and of `Wanted::round`.
    pub round_events: Vec<Recorded>,
    /// The newest `hook_failed` events.
    pub hook_failures: Vec<Recorded>,
    /// The newest `agent_network_blip` events.
    pub blips: Vec<Recorded>,
    /// Torn or non-JSON lines passed over.
    pub skipped: usize,
    /// The newest line read: where a summary of this scan stands.
    pub newest: Option<Covers>,
}

impl Wanted {
    /// How many events of listed `kind` ([`LISTED_KINDS`]) are wanted.
    fn of_kind(&self, kind: &str) -> usize {
        match kind {
            HOOK_FAILED => self.hook_failures,
            NETWORK_BLIP => self.blips,
            _ => 0,
        }
    }

    /// No events of the listed kinds.
    fn without_listed(self) -> Wanted {
        Wanted {
            hook_failures: 0,
            blips: 0,
            ..self
        }
    }
}

impl Recent {
    /// The list of listed `kind` ([`LISTED_KINDS`]).
    fn of_kind(&mut self, kind: &str) -> Option<&mut Vec<Recorded>> {
        match kind {
            HOOK_FAILED => Some(&mut self.hook_failures),
            NETWORK_BLIP => Some(&mut self.blips),
            _ => None,
        }
    }
}

/// Keeps, from lines offered newest first, what [`Wanted`] asks for.
struct Collector {
    wanted: Wanted,
    recent: Recent,
    /// The newest rounds seen, up to `Wanted::rounds`.
    rounds: BTreeSet<u64>,
    rounds_started: usize,
    round_found: bool,
    /// Set once a summary is merged, to the rounds it completed: rounds and failures are
    /// then whole, and older lines serve only `Wanted::events` and `Wanted::round`.
    summarized: Option<BTreeSet<u64>>,
}

impl Collector {
    fn new(wanted: Wanted) -> Self {
        Collector {
            wanted,
            recent: Recent::default(),
            rounds: BTreeSet::new(),
            rounds_started: 0,
            round_found: wanted.round.is_none(),
            summarized: None,
        }
    }

    /// Takes one line (its kind, round and a way to deserialize it) if it is wanted.
    fn offer(
        &mut self,
        event: &str,
        round_num: Option<u64>,
        value: impl FnOnce() -> Option<Recorded>,
    ) {
        let wanted = self.wanted;
        let keep_event = self.recent.events.len() < wanted.events;
        let wanted_of_kind = wanted.of_kind(event);
        let listed = self.summarized.is_none()
            && self
                .recent
                .of_kind(event)
                .is_some_and(|found| found.len() < wanted_of_kind);
        let in_round = round_num.is_some_and(|n| match &self.summarized {
            Some(done) => wanted.round == Some(n) && !done.contains(&n),
            None if wanted.round == Some(n) => true,
            None => {
                if self.rounds.len() < wanted.rounds {
                    self.rounds.insert(n);
                }
                self.rounds.contains(&n)
            }
        });
        if event == "round_start" {
            if round_num.is_some_and(|n| self.rounds.contains(&n)) {
                self.rounds_started += 1;
            }
            if round_num.is_some_and(|n| Some(n) <= wanted.round) {
                self.round_found = true;
            }
        }
        if !(keep_event || listed || in_round) {
            return;
        }
        let Some(value) = value() else {
            return;
        };
        if keep_event {
            self.recent.events.push(value.clone());
        }
        if listed {
            if let Some(found) = self.recent.of_kind(event) {
                found.push(value.clone());
            }
        }
        if in_round {
            self.recent.round_events.push(value);
        }
    }

    /// Everything but `Wanted::round` is found.
    fn tail_done(&mut self) -> bool {
        let wanted = self.wanted;
        let listed_done = LISTED_KINDS.iter().all(|kind| {
            self.recent
                .of_kind(kind)
                .is_some_and(|found| found.len() >= wanted.of_kind(kind))
        });
        self.recent.events.len() >= wanted.events
            && (self.summarized.is_some() || (self.rounds_started >= wanted.rounds && listed_done))
    }

    /// Takes a summary's rounds and listed kinds as the part of the record older than the
    /// lines offered so far (it holds no events of other kinds: those are still read).
    fn merge(&mut self, summary: Summary) {
        let wanted = self.wanted;
        self.wanted = Wanted {
            events: 0,
            ..wanted.without_listed()
        };
        for line in summary.round_events.into_iter().rev() {
            let Some(event) = Recorded::from_line(line) else {
                continue;
            };
            let kind = event.kind().to_owned();
            let num = event.round_num();
            self.offer(&kind, num, || Some(event));
        }
        self.wanted = wanted;
        for (kind, older) in [
            (HOOK_FAILED, summary.hook_failures),
            (NETWORK_BLIP, summary.network_blips),
        ] {
            let Some(found) = self.recent.of_kind(kind) else {
                continue;
            };
            let missing = wanted.of_kind(kind).saturating_sub(found.len());
            found.extend(
                older
                    .into_iter()
                    .rev()
                    .filter_map(Recorded::from_line)
                    .take(missing),
            );
        }
        self.summarized = Some(self.rounds.clone());
    }

    fn finish(mut self, skipped: usize) -> Recent {
        self.recent.skipped = skipped;
        self.recent.events.reverse();
        self.recent.round_events.reverse();
        self.recent.hook_failures.reverse();
        self.recent.blips.reverse();
        self.recent
    }
}

/// Reads back through the record of `state_dir` for `wanted`, at most [`SCAN_BYTES`] unless
/// `wanted.round` is still to be found, taking the summary's part when the scan reaches
/// it. An unreadable record gives what was found before the error (a look shows what it
/// can).
pub(crate) fn scan(state_dir: &Path, wanted: Wanted) -> Recent {
    gather(
        state_dir,
        wanted,
        summary::load(state_dir),
        Some(SCAN_BYTES),
    )
}

/// Like [`scan`], from `summary` (or without one) and with an optional byte bound.
pub(crate) fn gather(
    state_dir: &Path,
    wanted: Wanted,
    mut summary: Option<Summary>,
    limit: Option<u64>,
) -> Recent {
    let mut collector = Collector::new(wanted);
    let mut newest = None;
    let mut skipped = 0;
    if let Ok(mut back) = Backwards::open(state_dir) {
        let mut scanned: u64 = 0;
        while let Ok(Some(found)) = back.next_event() {
            let at = Covers::of(found.file, found.end);
            if summary.as_ref().is_some_and(|s| s.covers.includes(&at)) {
                let summary = summary.take().expect("checked above");
                newest.get_or_insert(summary.covers.clone());
                collector.merge(summary);
            }
            newest.get_or_insert(at);
            scanned += found.line.len() as u64 + 1;
            collector.offer(&found.head.event, found.head.round_num, || found.recorded());
            let bounded = limit.is_some_and(|limit| scanned >= limit);
            if collector.round_found && (collector.tail_done() || bounded) {
                break;
            }
        }
        skipped = back.skipped();
    }
    let mut recent = collector.finish(skipped);
    recent.newest = newest;
    recent
}

/// What the summary holds: what `peek` shows of rounds, hook failures and blips.
fn summary_wanted() -> Wanted {
    Wanted {
        events: 0,
        rounds: RECENT_ROUNDS + 1,
        hook_failures: RECENT_HOOK_FAILURES,
        blips: RECENT_BLIPS,
        round: None,
    }
}

/// Brings the summary of `state_dir` ([`summary`]) up to the end of the record and
/// writes it atomically (only `serve` and `round` call this). Nothing is written while the record is empty.
///
/// Errors: the summary cannot be written.
pub(crate) fn refresh_summary(state_dir: &Path) -> io::Result<()> {
    let previous = summary::load(state_dir);
    let unchanged = previous.as_ref().map(|s| s.covers.clone());
    let found = gather(state_dir, summary_wanted(), previous, None);
    let Some(covers) = found.newest else {
        return Ok(());
    };
    if unchanged.as_ref() == Some(&covers) {
        return Ok(());
    }
    let lines = |events: Vec<Recorded>| events.into_iter().map(|e| e.line).collect();
    let summary = Summary {
        version: summary::VERSION,
        covers,
        round_events: lines(found.round_events),
        hook_failures: lines(found.hook_failures),
        network_blips: lines(found.blips),
    };
    summary::write(state_dir, &summary)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::fmt::Write;

    /// Appends round `n` to `text`: its start, `failures` hook failures, its end.
    pub(crate) fn round(text: &mut String, n: u64, failures: usize) {
        let ts = "2026-11-29T10:00:00.000Z";
        writeln!(
            text,
            r#"{{"ts":"{ts}","event":"round_start","round_num":{n}}}"#
        )
        .unwrap();
        for _ in 0..failures {
            writeln!(text, r#"{{"ts":"{ts}","event":"hook_failed","hook":"h"}}"#).unwrap();
        }
        writeln!(
            text,
            r#"{{"ts":"{ts}","event":"round_end","round_num":{n}}}"#
        )
        .unwrap();
    }

    /// Appends a network blip of round `n` to `text`.
    pub(crate) fn blip(text: &mut String, n: u64) {
        writeln!(
            text,
            r#"{{"ts":"2026-11-29T10:00:00.000Z","event":"agent_network_blip","round_num":{n},"hook":"h","message":"dns","consecutive":1}}"#
        )
        .unwrap();
    }

    #[test]
    fn stops_when_found_and_keeps_only_what_was_asked() {
        let dir = tempfile::tempdir().unwrap();
        let mut old = String::new();
        for n in 1..=50 {
            round(&mut old, n, usize::from(n == 2));
            if n == 3 {
                blip(&mut old, n);
            }
        }
        std::fs::write(dir.path().join("events-2026-10.jsonl"), old).unwrap();
        let mut new = String::new();
        for n in 51..=60 {
            round(&mut new, n, 0);
        }
        new.push_str("{\"torn\n");
        std::fs::write(dir.path().join("events-2026-11.jsonl"), new).unwrap();

        let wanted = Wanted {
            events: 3,
            rounds: 12,
            hook_failures: 1,
            blips: 1,
            round: Some(1),
        };
        let recent = scan(dir.path(), wanted);
        assert_eq!(recent.events.len(), 3);
        assert_eq!(recent.events[2].round_num(), Some(60));
        let nums: BTreeSet<u64> = recent
            .round_events
            .iter()
            .map(|e| e.round_num().unwrap())
            .collect();
        let expected: BTreeSet<u64> = [1].into_iter().chain(49..=60).collect();
        assert_eq!(nums, expected);
        assert_eq!(recent.round_events.len(), 2 * expected.len());
        assert_eq!(recent.hook_failures.len(), 1);
        assert_eq!(recent.blips.len(), 1);
        assert_eq!(recent.blips[0].round_num(), Some(3));
        assert_eq!(recent.skipped, 1);

        // Without a failure or blip to find, the scan stops at the rounds it wanted: older lines
        // (and their torn line) are never read.
        std::fs::write(
            dir.path().join("events-2026-09.jsonl"),
            "{\"torn\n{\"torn\n",
        )
        .unwrap();
        let recent = scan(
            dir.path(),
            Wanted {
                hook_failures: 0,
                blips: 0,
                round: None,
                ..wanted
            },
        );
        assert_eq!(recent.skipped, 1);
        assert!(recent.hook_failures.is_empty() && recent.blips.is_empty());
        assert!(scan(&dir.path().join("missing"), wanted).events.is_empty());
    }
}

#[cfg(test)]
mod summary_tests {
    use super::*;
    use crate::record::events::recent::tests::{blip, round};
    use crate::record::events::summary::{load, Covers};
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
        blip(&mut text, 3);
        // More than a look reads of a loop deferring, after those rounds.
        while (text.len() as u64) < SCAN_BYTES + 4096 {
            text.push_str(
                "{\"ts\":\"2026-10-29T11:00:00.000Z\",\"event\":\"round_deferred\",\"defer_s\":60}\n",
            );
        }
        std::fs::write(&october, &text).unwrap();
        let look = || scan(dir.path(), summary_wanted());
        assert!(look().round_events.is_empty() && look().hook_failures.is_empty());
        assert!(look().blips.is_empty());

        refresh_summary(dir.path()).unwrap();
        let summary = load(dir.path()).unwrap();
        assert_eq!(summary.covers, Covers::of(&october, text.len() as u64));
        let found = look();
        assert_eq!(rounds_in(&found.round_events), BTreeSet::from([1, 2, 3]));
        assert_eq!(found.hook_failures.len(), 1);
        assert_eq!(found.blips.len(), 1);
        assert_eq!(found.blips[0].round_num(), Some(3));
        // Events of any kind are not in the summary: they are still read from the record.
        let newest = scan(
            dir.path(),
            Wanted {
                events: 3,
                ..summary_wanted()
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
        refresh_summary(dir.path()).unwrap();
        assert_eq!(
            load(dir.path()).unwrap().covers,
            Covers::of(&november, newer.len() as u64)
        );

        // A record cut shorter than the point covered: the summary is set aside, and the
        // next refresh rebuilds it from what is there.
        std::fs::write(&november, "").unwrap();
        assert!(load(dir.path()).is_none());
        assert_eq!(look().hook_failures.len(), 0);
        refresh_summary(dir.path()).unwrap();
        assert_eq!(load(dir.path()).unwrap().hook_failures.len(), 1);
        assert_eq!(look().hook_failures.len(), 1);
    }
}
