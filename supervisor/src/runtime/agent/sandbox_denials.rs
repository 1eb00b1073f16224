//! What the agent's sandbox refused in one round, counted and recorded as
//! `agent_sandbox_denied` events when the agent has ended (docs/operations.md, "Event
//! kinds"; docs/security.md, "Denials told, not silent").
//!
//! Denials are counted per distinct (layer, target, access): an agent that retries the same
//! refused request a thousand times makes one event with `count: 1000`. A round records at
//! most [`MAX_EVENTS_PER_ROUND`] events, the most frequent denials first; the last one says
//! how many distinct denials, and how many denials in all, were left out.

use std::collections::BTreeMap;

use crate::record::events::Event;

/// The most `agent_sandbox_denied` events one round records.
pub(crate) const MAX_EVENTS_PER_ROUND: usize = 20;

/// The denials of one round.
#[derive(Debug, Default)]
pub(crate) struct DenialTally {
    /// (layer, target, access) → count, with the order of first sight.
    counts: BTreeMap<(&'static str, String, &'static str), (u64, usize)>,
}

impl DenialTally {
    /// Counts one denial: `layer` (`seccomp`, `landlock`), `target` (what was denied: a
    /// system call, a path), `access` (`syscall`; for a path, the call that wrote it:
    /// `openat`, `mkdirat`, `unlinkat`, `renameat2`, …; `read` for a read of a credential
    /// store). Refused connects are counted by
    /// [`crate::runtime::egress::refusals`].
    pub(crate) fn add(&mut self, layer: &'static str, target: String, access: &'static str) {
        let next = self.counts.len();
        self.counts
            .entry((layer, target, access))
            .or_insert((0, next))
            .0 += 1;
    }

    /// The round's events: one per distinct denial, most frequent first (then first seen
    /// first), at most [`MAX_EVENTS_PER_ROUND`], the last carrying what was left out.
    pub(crate) fn into_events(self, round_num: u64) -> Vec<Event> {
        let mut all: Vec<_> = self.counts.into_iter().collect();
        all.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
        let left_out = all.split_off(all.len().min(MAX_EVENTS_PER_ROUND));
        let dropped_kinds = left_out.len() as u64;
        let dropped_count: u64 = left_out.iter().map(|(_, (n, _))| n).sum();
        let last = all.len().saturating_sub(1);
        all.into_iter()
            .enumerate()
            .map(
                |(i, ((layer, target, access), (count, _)))| Event::AgentSandboxDenied {
                    round_num,
                    layer: layer.to_owned(),
                    target,
                    access: access.to_owned(),
                    count,
                    dropped_kinds: (i == last && dropped_kinds > 0).then_some(dropped_kinds),
                    dropped_count: (i == last && dropped_kinds > 0).then_some(dropped_count),
                },
            )
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_counted_and_the_most_frequent_come_first() {
        let mut t = DenialTally::default();
        t.add("egress", "a.example:443".into(), "connect");
        for _ in 0..3 {
            t.add("egress", "b.example:443".into(), "connect");
        }
        t.add("egress", "a.example:443".into(), "http");
        let events = t.into_events(7);
        let got: Vec<_> = events
            .iter()
            .map(|e| match e {
                Event::AgentSandboxDenied {
                    round_num: 7,
                    target,
                    access,
                    count,
                    dropped_kinds: None,
                    dropped_count: None,
                    ..
                } => (target.as_str(), access.as_str(), *count),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            got,
            [
                ("b.example:443", "connect", 3),
                ("a.example:443", "connect", 1),
                ("a.example:443", "http", 1)
            ]
        );
    }

    #[test]
    fn past_the_cap_the_last_event_says_what_was_left_out() {
        let mut t = DenialTally::default();
        for i in 0..MAX_EVENTS_PER_ROUND + 5 {
            for _ in 0..2 {
                t.add("egress", format!("h{i}.example:443"), "connect");
            }
        }
        let events = t.into_events(1);
        assert_eq!(events.len(), MAX_EVENTS_PER_ROUND);
        for (i, e) in events.iter().enumerate() {
            let Event::AgentSandboxDenied {
                dropped_kinds,
                dropped_count,
                ..
            } = e
            else {
                panic!("{e:?}")
            };
            if i + 1 == MAX_EVENTS_PER_ROUND {
                assert_eq!((*dropped_kinds, *dropped_count), (Some(5), Some(10)));
            } else {
                assert_eq!((*dropped_kinds, *dropped_count), (None, None));
            }
        }
    }

    #[test]
    fn no_denials_no_events() {
        assert!(DenialTally::default().into_events(1).is_empty());
    }
}
