//! The round's own usage when its CLI reports the running total of a resumed session
//! (docs/detectors.md, "Usage"): claude's `total_cost_usd` and codex's token counts grow
//! from round to round of one session. Each is turned into the round's own by taking off
//! the same session's previous report: keyed by the session the round resumed
//! ([`crate::runtime::agent::sessions`]); a round that starts a session starts from zero; a
//! total lower than the previous one means the CLI started a new session after all, and
//! is taken whole. Counts a CLI reports per round ([`SessionTotals`] false) are kept as
//! they are, as are a third-party host's (the protocol's `usage` is the round's).

use std::collections::BTreeMap;

use agent_runner_protocol::TokenUsage;

use crate::detectors::dialects::SessionTotals;
use crate::runtime::agent::sessions::Resume;

/// The last report of each session of a `serve` (sessions live as long as the `serve`
/// that minted them, so this does too).
#[derive(Debug, Default)]
pub struct SessionUsage {
    last: BTreeMap<String, TokenUsage>,
}

/// The round's own usage, and which of its fields were reported as session totals and
/// turned into the round's (`agent_usage_recorded.from_session_totals`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RoundUsage {
    /// The round's own counts and cost.
    pub usage: TokenUsage,
    /// The event's names of the fields taken as a difference of session totals.
    pub from_session_totals: Vec<&'static str>,
}

impl SessionUsage {
    /// The round's own usage from `reported`, which the CLI counted as `totals` says, in
    /// the round whose session was `session` (`None`: no session resume, every round a
    /// session of its own).
    pub(crate) fn round(
        &mut self,
        session: Option<&Resume>,
        totals: SessionTotals,
        reported: TokenUsage,
    ) -> RoundUsage {
        let Some(session) = session.filter(|_| totals.tokens || totals.cost) else {
            return RoundUsage {
                usage: reported,
                from_session_totals: Vec::new(),
            };
        };
        let previous = if session.resuming {
            self.last.get(&session.id).cloned()
        } else {
            None
        };
        self.last.insert(session.id.clone(), reported.clone());
        let mut usage = reported;
        let mut from_session_totals = Vec::new();
        if totals.tokens {
            from_session_totals.extend([
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
            ]);
            if let Some(before) = previous.as_ref().filter(|b| tokens_grew(b, &usage)) {
                usage.input_tokens -= before.input_tokens;
                usage.output_tokens -= before.output_tokens;
                usage.cache_read_tokens = less(usage.cache_read_tokens, before.cache_read_tokens);
                usage.cache_write_tokens =
                    less(usage.cache_write_tokens, before.cache_write_tokens);
            }
        }
        if totals.cost {
            from_session_totals.push("cost_usd");
            let before = previous.as_ref().and_then(|b| b.cost_usd);
            if let (Some(now), Some(before)) = (usage.cost_usd, before) {
                if now >= before {
                    usage.cost_usd = Some(to_nano_dollars(now - before));
                }
            }
        }
        RoundUsage {
            usage,
            from_session_totals,
        }
    }
}

/// Whether every token count of `now` is at least `before`'s: the same session went on.
/// A lower one means a new session, taken whole.
fn tokens_grew(before: &TokenUsage, now: &TokenUsage) -> bool {
    let at_least = |b: Option<u64>, n: Option<u64>| b.unwrap_or(0) <= n.unwrap_or(0);
    before.input_tokens <= now.input_tokens
        && before.output_tokens <= now.output_tokens
        && at_least(before.cache_read_tokens, now.cache_read_tokens)
        && at_least(before.cache_write_tokens, now.cache_write_tokens)
}

fn less(now: Option<u64>, before: Option<u64>) -> Option<u64> {
    now.map(|n| n - before.unwrap_or(0))
}

/// `usd` rounded to a billionth of a dollar: the difference of two running totals in
/// binary floating point carries noise (`0.8 - 0.4` is `0.4000000000000001`) that no
/// provider bills (they report at most six to ten decimals).
fn to_nano_dollars(usd: f64) -> f64 {
    (usd * 1e9).round() / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(input: u64, output: u64, cost: Option<f64>) -> TokenUsage {
        TokenUsage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: Some(input / 2),
            cache_write_tokens: None,
            cost_usd: cost,
            model: None,
        }
    }

    fn session(id: &str, resuming: bool) -> Resume {
        Resume {
            id: id.to_owned(),
            resuming,
            args: Vec::new(),
            renewed: None,
        }
    }

    const CLAUDE: SessionTotals = SessionTotals {
        tokens: false,
        cost: true,
    };
    const CODEX: SessionTotals = SessionTotals {
        tokens: true,
        cost: false,
    };

    #[test]
    fn running_totals_of_a_resumed_session_become_each_rounds_own() {
        let mut ledger = SessionUsage::default();
        let a = session("a", false);
        let a_again = session("a", true);
        let first = ledger.round(Some(&a), CODEX, report(3000, 100, None));
        assert_eq!(first.usage, report(3000, 100, None));
        assert_eq!(first.from_session_totals[0], "input_tokens");
        let second = ledger.round(Some(&a_again), CODEX, report(6000, 200, None));
        assert_eq!(second.usage.input_tokens, 3000);
        assert_eq!(second.usage.output_tokens, 100);
        assert_eq!(second.usage.cache_read_tokens, Some(1500));
        // claude: tokens per round, cost the session's.
        let mut ledger = SessionUsage::default();
        let costs: Vec<f64> = [0.0066, 0.0132, 0.0198]
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let s = session("c", i > 0);
                let got = ledger.round(Some(&s), CLAUDE, report(240, 60, Some(*c)));
                assert_eq!(got.usage.input_tokens, 240);
                assert_eq!(got.from_session_totals, ["cost_usd"]);
                got.usage.cost_usd.unwrap()
            })
            .collect();
        assert!(costs.iter().all(|c| *c == 0.0066), "{costs:?}");
    }

    #[test]
    fn a_new_session_or_a_lower_total_is_taken_whole() {
        let mut ledger = SessionUsage::default();
        ledger.round(Some(&session("a", false)), CODEX, report(6000, 200, None));
        // A new session (fresh eyes, a failed round before it) starts from zero.
        let fresh = ledger.round(Some(&session("b", false)), CODEX, report(3000, 100, None));
        assert_eq!(fresh.usage.input_tokens, 3000);
        // A total lower than the session's previous: the CLI started afresh.
        let lower = ledger.round(Some(&session("a", true)), CODEX, report(2000, 300, None));
        assert_eq!(lower.usage.input_tokens, 2000);
        assert_eq!(lower.usage.output_tokens, 300);
        let mut ledger = SessionUsage::default();
        ledger.round(Some(&session("c", false)), CLAUDE, report(1, 1, Some(0.5)));
        let lower = ledger.round(Some(&session("c", true)), CLAUDE, report(1, 1, Some(0.2)));
        assert_eq!(lower.usage.cost_usd, Some(0.2));
    }

    #[test]
    fn without_resume_or_session_totals_the_report_is_the_rounds() {
        let mut ledger = SessionUsage::default();
        let r = report(6000, 200, Some(1.0));
        assert_eq!(ledger.round(None, CODEX, r.clone()).usage, r);
        let s = session("a", false);
        ledger.round(Some(&s), SessionTotals::default(), r.clone());
        let again = ledger.round(
            Some(&session("a", true)),
            SessionTotals::default(),
            r.clone(),
        );
        assert_eq!(again.usage, r);
        assert!(again.from_session_totals.is_empty());
    }
}
