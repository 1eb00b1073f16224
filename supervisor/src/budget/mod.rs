//! `[budget]` (docs/operations.md, "Budget"; the keys: [`crate::config::budget`]): caps on
//! money and tokens, counted from the record ([`spend::Ledger`]) so a restart does not
//! reset them. Before every round of `serve`: a `total_*` cap reached ends it
//! (`budget_exhausted`, exit [`crate::exit::BUDGET_EXHAUSTED`]); a `daily_*` cap reached
//! pauses it until the next day (`budget_paused` … `budget_resumed`). During a round, what
//! it may still spend ([`RoundCap`]: the least of `round_usd` and what is left of each
//! total and daily cap) bounds it: the running usage its CLI's output watch reports
//! crossing it stops the agent (`crate::runtime::usage_watch`, `budget_round_stopped`).
//! After a round, `round_usd` passed is recorded (`budget_round_exceeded`). The one place
//! of this rule: `serve` acts on it, `peek` shows it. Pure: callers pass the instant.

pub(crate) mod billed;
pub(crate) mod prices;
pub(crate) mod spend;

use jiff::Timestamp;

use crate::config::budget::BudgetConfig;
use spend::Ledger;

/// What the budget says of the next round.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Verdict {
    /// It may start.
    Run,
    /// A `total_*` cap is reached: no round starts again until a reset.
    Exhausted(Reached),
    /// A `daily_*` cap is reached: no round starts before `until`, the next day.
    Pause {
        /// The cap reached.
        reached: Reached,
        /// When the next day starts.
        until: Timestamp,
    },
}

/// A cap reached.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Reached {
    /// The key: `total_usd`, `total_tokens`, `daily_usd`, `daily_tokens`.
    pub scope: &'static str,
    /// What was spent (US dollars or tokens).
    pub spent: f64,
    /// The cap.
    pub cap: f64,
}

/// One cap against its spend, for `peek` and `doctor`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CapLine {
    /// The key.
    pub scope: &'static str,
    /// Spent against it.
    pub spent: f64,
    /// The cap.
    pub cap: f64,
}

/// Every cap set, with its spend at `now`: totals first, then the day's, then `round_usd`
/// (whose spend is the last round's cost).
pub(crate) fn lines(budget: &BudgetConfig, ledger: &Ledger, now: Timestamp) -> Vec<CapLine> {
    let total = ledger.total();
    let today = ledger.today(now);
    [
        ("total_usd", budget.total_usd, total.usd),
        (
            "total_tokens",
            budget.total_tokens.map(|t| t as f64),
            total.tokens as f64,
        ),
        ("daily_usd", budget.daily_usd, today.usd),
        (
            "daily_tokens",
            budget.daily_tokens.map(|t| t as f64),
            today.tokens as f64,
        ),
    ]
    .into_iter()
    .filter_map(|(scope, cap, spent)| cap.map(|cap| CapLine { scope, spent, cap }))
    .collect()
}

/// What a round may still spend of one kind (US dollars or tokens): the cap that leaves
/// the least.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Left {
    /// The key: `round_usd`, `total_usd`, `daily_usd`, `total_tokens`, `daily_tokens`.
    pub scope: &'static str,
    /// The cap.
    pub cap: f64,
    /// Spent against it before the round (0 for `round_usd`).
    pub before: f64,
}

impl Left {
    /// What the round may spend before it reaches the cap (never below 0).
    pub(crate) fn room(&self) -> f64 {
        (self.cap - self.before).max(0.0)
    }

    /// The cap reached when the round has spent `running`, if it has.
    pub(crate) fn reached(&self, running: f64) -> Option<Reached> {
        (running >= self.room()).then_some(Reached {
            scope: self.scope,
            spent: self.before + running,
            cap: self.cap,
        })
    }
}

/// What the next round may spend (docs/operations.md, "Budget": "Within a round").
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RoundCap {
    /// US dollars: `round_usd`, `total_usd`, `daily_usd`, whichever leaves the least.
    pub usd: Option<Left>,
    /// Tokens: `total_tokens`, `daily_tokens`, whichever leaves the least.
    pub tokens: Option<Left>,
}

impl RoundCap {
    /// Whether any cap bounds the round.
    pub(crate) fn any(&self) -> bool {
        self.usd.is_some() || self.tokens.is_some()
    }

    /// The first cap the round's running spend (`usd`, `tokens`) reached, money first.
    pub(crate) fn reached(&self, usd: f64, tokens: u64) -> Option<Reached> {
        let money = self.usd.as_ref().and_then(|l| l.reached(usd));
        money.or_else(|| self.tokens.as_ref().and_then(|l| l.reached(tokens as f64)))
    }
}

/// What a round starting at `now` may spend under `budget`, the record's spend in `ledger`.
pub(crate) fn round_cap(budget: &BudgetConfig, ledger: &Ledger, now: Timestamp) -> RoundCap {
    let total = ledger.total();
    let today = ledger.today(now);
    let least = |caps: [(&'static str, Option<f64>, f64); 3]| {
        caps.into_iter()
            .filter_map(|(scope, cap, before)| cap.map(|cap| Left { scope, cap, before }))
            .min_by(|a, b| a.room().total_cmp(&b.room()))
    };
    RoundCap {
        usd: least([
            ("round_usd", budget.round_usd, 0.0),
            ("total_usd", budget.total_usd, total.usd),
            ("daily_usd", budget.daily_usd, today.usd),
        ]),
        tokens: least([
            (
                "total_tokens",
                budget.total_tokens.map(|t| t as f64),
                total.tokens as f64,
            ),
            (
                "daily_tokens",
                budget.daily_tokens.map(|t| t as f64),
                today.tokens as f64,
            ),
            ("", None, 0.0),
        ]),
    }
}

/// Looks at the budget before a round at `now`: the first cap reached of `total_usd`,
/// `total_tokens` (exhausted), then `daily_usd`, `daily_tokens` (pause until the next day).
pub(crate) fn look(budget: &BudgetConfig, ledger: &Ledger, now: Timestamp) -> Verdict {
    for line in lines(budget, ledger, now) {
        if line.spent < line.cap {
            continue;
        }
        let reached = Reached {
            scope: line.scope,
            spent: line.spent,
            cap: line.cap,
        };
        return if line.scope.starts_with("total") {
            Verdict::Exhausted(reached)
        } else {
            Verdict::Pause {
                reached,
                until: ledger.next_day(now),
            }
        };
    }
    Verdict::Run
}

/// Where the spend of a round of the CLI `cli` (`[agent] cli`'s answer; `None`: none
/// agent-runner knows) comes from, in words for `doctor`, and whether it is counted at
/// all (a CLI whose output reports no usage leaves the caps nothing to count, unless a
/// post-round host reports it).
pub(crate) fn source_of(cli: Option<&str>, budget: &BudgetConfig) -> (bool, String) {
    let dialect = cli.and_then(|c| crate::detectors::DIALECTS.iter().find(|d| d.binary == c));
    let Some(dialect) =
        dialect.filter(|d| !matches!(d.usage, crate::detectors::dialects::UsageRule::None))
    else {
        let who = cli.unwrap_or("the agent");
        return (
            false,
            format!("{who} reports no usage agent-runner reads: the caps count only what a post-round host reports (agent_usage_recorded)"),
        );
    };
    let table = prices::PriceTable::new(&budget.prices);
    let highest = table.highest();
    let mut words = if dialect.reports_cost {
        format!(
            "{} reports each round's cost, counted first; without one, its tokens at",
            dialect.binary
        )
    } else {
        format!("{} reports tokens, no cost: counted at", dialect.binary)
    };
    if dialect.model.is_empty() {
        words.push_str(&format!(
            " [budget.prices.\"unknown\"] (it names no model), else the table's highest prices (${}/M input, ${}/M output)",
            highest.input, highest.output
        ));
    } else {
        words.push_str(&format!(
            " the model's price ([budget.prices.\"<model>\"], else the built-in table: {}), an unpriced model at the table's highest (${}/M input, ${}/M output)",
            prices::provenance(),
            highest.input,
            highest.output
        ));
    }
    words.push_str(if dialect.calls.is_some() {
        "; read call by call while the round runs, so a round is stopped once it reaches a cap"
    } else {
        "; read only when the round ends, so the round that crosses a cap runs to its end"
    });
    let totals = dialect.session_totals;
    if totals.tokens || totals.cost {
        words.push_str(
            "; its reports are the session's running total, each round's taken as the difference",
        );
    }
    (true, words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::events::{Event, EventLog};

    fn usage(events: &EventLog, round_num: u64, cost: Option<f64>, model: &str) {
        events.emit(Event::AgentUsageRecorded {
            round_num,
            hook: "claude_error_detector".into(),
            input_tokens: 1000,
            output_tokens: 100,
            cache_read_tokens: Some(0),
            cache_write_tokens: Some(0),
            cost_usd: cost,
            agent: "claude".into(),
            model: model.into(),
            cached_tokens: 0,
            usage_scope: "round".into(),
            from_session_totals: vec![],
            source: "cli".into(),
            reported_cost_usd: None,
            reported_tokens: None,
            underreported: false,
        });
    }

    fn in_zone(zone: &str) -> BudgetConfig {
        BudgetConfig {
            zone: Some((jiff::tz::TimeZone::get(zone).unwrap(), zone.to_owned())),
            ..BudgetConfig::default()
        }
    }

    #[test]
    fn a_total_cap_is_counted_from_the_record_and_a_reset_starts_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let events = EventLog::new(dir.path());
        let budget = BudgetConfig {
            total_usd: Some(1.0),
            ..in_zone("UTC")
        };
        for n in 1..=2 {
            usage(&events, n, Some(0.4), "claude-opus-4-5");
        }
        let now = Timestamp::now();
        let mut ledger = Ledger::open(dir.path(), &budget);
        assert_eq!(look(&budget, &ledger, now), Verdict::Run);
        usage(&events, 3, Some(0.4), "claude-opus-4-5");
        ledger.catch_up();
        let Verdict::Exhausted(reached) = look(&budget, &ledger, now) else {
            panic!("{:?}", look(&budget, &ledger, now));
        };
        assert_eq!(reached.scope, "total_usd");
        assert!((reached.spent - 1.2).abs() < 1e-9);
        assert_eq!(
            ledger.take_rounds().len(),
            1,
            "only what came after the first read"
        );
        // A new reader of the same record (a restart) finds the same spend.
        let again = Ledger::open(dir.path(), &budget);
        assert!(matches!(look(&budget, &again, now), Verdict::Exhausted(_)));
        events.emit(Event::BudgetReset {
            spent_usd: 1.2,
            spent_tokens: 3300,
        });
        ledger.catch_up();
        assert_eq!(look(&budget, &ledger, now), Verdict::Run);
        assert_eq!(ledger.total().usd, 0.0);
    }

    #[test]
    fn a_daily_cap_pauses_until_the_next_day_of_its_zone() {
        let dir = tempfile::tempdir().unwrap();
        let events = EventLog::new(dir.path());
        let budget = BudgetConfig {
            daily_tokens: Some(2000),
            ..in_zone("Asia/Tokyo")
        };
        usage(&events, 1, None, "gpt-5");
        usage(&events, 2, None, "gpt-5");
        let ledger = Ledger::open(dir.path(), &budget);
        // The clock is the caller's: today in Tokyo, the rounds' day, the cap is reached…
        let now = Timestamp::now();
        let Verdict::Pause { reached, until } = look(&budget, &ledger, now) else {
            panic!("{:?}", look(&budget, &ledger, now));
        };
        assert_eq!(reached.scope, "daily_tokens");
        assert_eq!(reached.spent, 2200.0);
        let tokyo = jiff::tz::TimeZone::get("Asia/Tokyo").unwrap();
        let midnight = until.to_zoned(tokyo.clone());
        assert_eq!((midnight.hour(), midnight.minute()), (0, 0));
        assert_eq!(
            midnight.date(),
            now.to_zoned(tokyo).date().tomorrow().unwrap()
        );
        // …and at the next day's start it is not.
        assert_eq!(look(&budget, &ledger, until), Verdict::Run);
        assert_eq!(ledger.today(until).tokens, 0);
        // Not a total: the same spend under a total cap of more goes on.
        let total = BudgetConfig {
            total_tokens: Some(3000),
            ..in_zone("UTC")
        };
        assert_eq!(look(&total, &ledger, until), Verdict::Run);
    }

    #[test]
    fn a_round_may_spend_the_least_its_caps_leave() {
        let dir = tempfile::tempdir().unwrap();
        let events = EventLog::new(dir.path());
        usage(&events, 1, Some(0.7), "claude-opus-4-5");
        let budget = BudgetConfig {
            round_usd: Some(0.5),
            total_usd: Some(1.0),
            total_tokens: Some(5000),
            ..in_zone("UTC")
        };
        let ledger = Ledger::open(dir.path(), &budget);
        let cap = round_cap(&budget, &ledger, Timestamp::now());
        // $0.30 of the total is left, less than round_usd's $0.50.
        let usd = cap.usd.clone().unwrap();
        assert_eq!(usd.scope, "total_usd");
        assert!((usd.room() - 0.3).abs() < 1e-9);
        assert_eq!(cap.reached(0.2, 100), None);
        let reached = cap.reached(0.31, 100).unwrap();
        assert_eq!(reached.scope, "total_usd");
        assert!((reached.spent - 1.01).abs() < 1e-9);
        // 1100 tokens spent of 5000: 3900 left.
        assert_eq!(cap.reached(0.0, 3900).unwrap().scope, "total_tokens");
        let alone = BudgetConfig {
            round_usd: Some(0.5),
            ..in_zone("UTC")
        };
        let cap = round_cap(&alone, &ledger, Timestamp::now());
        assert_eq!(cap.reached(0.5, 0).unwrap().spent, 0.5);
        assert!(cap.tokens.is_none());
    }

    #[test]
    fn rounds_of_an_unpriced_model_count_at_the_highest_price() {
        let dir = tempfile::tempdir().unwrap();
        let events = EventLog::new(dir.path());
        let budget = BudgetConfig {
            total_usd: Some(0.05),
            ..in_zone("UTC")
        };
        usage(&events, 1, None, "unknown");
        let ledger = Ledger::open(dir.path(), &budget);
        let total = ledger.total();
        assert_eq!(total.unpriced_rounds, 1);
        // 1000 input at $15/M and 100 output at $75/M: the table's highest.
        assert!((total.usd - 0.0225).abs() < 1e-9, "{total:?}");
        assert_eq!(look(&budget, &ledger, Timestamp::now()), Verdict::Run);
        usage(&events, 2, None, "unknown");
        usage(&events, 3, None, "unknown");
        let ledger = Ledger::open(dir.path(), &budget);
        assert!(matches!(
            look(&budget, &ledger, Timestamp::now()),
            Verdict::Exhausted(_)
        ));
    }
}
