//! What `monitor --mode http` shows of money and tokens (docs/metrics.md, docs/operations.md
//! "The live page"): one [`Ledger`] per project, the one `serve` and `peek` count the caps
//! with ([`crate::budget`]), kept between requests and caught up with the record at each;
//! read into a [`SpendView`] for `/metrics` and into the chart of the newest rounds' cost,
//! tokens and duration for `/api/state` ([`chart`]).

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use crate::budget::prices::Tokens;
use crate::budget::spend::{Ledger, Lifetime};
use crate::config::budget::BudgetConfig;

/// How many of the newest rounds the page's chart shows.
pub(crate) const CHART_ROUNDS: usize = 60;

/// A project's ledger, opened at the first request (it reads the record from its start).
#[derive(Default)]
pub(crate) struct SpendFollower {
    ledger: Mutex<Option<Ledger>>,
}

/// One cap with what was spent against it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CapGauge {
    /// `round`, `daily` or `total` (the key's prefix: `round_usd`, `daily_tokens`, …).
    pub scope: &'static str,
    /// The cap; `None` when the key is not set.
    pub cap: Option<f64>,
    /// What was spent against it: the last round's cost, the day's, or since the record
    /// began or its last reset; `None` for `round` before any round reported usage.
    pub spent: Option<f64>,
}

/// The record's spend at one instant, as `/metrics` shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SpendView {
    /// The whole record's spend (the counters).
    pub lifetime: Lifetime,
    /// US-dollar caps: `round`, `daily`, `total`.
    pub usd: Vec<CapGauge>,
    /// Token caps: `daily`, `total`.
    pub tokens: Vec<CapGauge>,
    /// Per round, the newest rounds with usage: (round, US dollars, tokens).
    pub rounds: Vec<(u64, f64, Tokens)>,
}

impl SpendFollower {
    /// Catches the ledger up with the record of `state_dir` under `budget` (read again from
    /// the start when its prices or zone changed) and reads it at `now`.
    pub(crate) fn view(
        &self,
        state_dir: &Path,
        budget: &BudgetConfig,
        now: Timestamp,
    ) -> SpendView {
        let mut slot = self.ledger.lock().unwrap_or_else(|e| e.into_inner());
        let mut ledger = match slot.take() {
            Some(l) => l.follow(budget),
            None => Ledger::open(state_dir, budget),
        };
        ledger.catch_up();
        // Nothing reads what `serve` takes from it: keep it from piling up.
        ledger.take_rounds();
        let view = read(&ledger, budget, now);
        *slot = Some(ledger);
        view
    }
}

/// `ledger` read at `now` under the caps of `budget`.
fn read(ledger: &Ledger, budget: &BudgetConfig, now: Timestamp) -> SpendView {
    let total = ledger.total();
    let today = ledger.today(now);
    let mut rounds: BTreeMap<u64, (f64, Tokens)> = BTreeMap::new();
    for r in ledger.recent() {
        let (usd, tokens) = rounds.entry(r.round_num).or_default();
        *usd += r.usd;
        tokens.input += r.tokens.input;
        tokens.output += r.tokens.output;
        tokens.cache_read += r.tokens.cache_read;
        tokens.cache_write += r.tokens.cache_write;
    }
    SpendView {
        lifetime: ledger.lifetime(),
        usd: vec![
            CapGauge {
                scope: "round",
                cap: budget.round_usd,
                spent: ledger.last_round().map(|(_, usd)| usd),
            },
            CapGauge {
                scope: "daily",
                cap: budget.daily_usd,
                spent: Some(today.usd),
            },
            CapGauge {
                scope: "total",
                cap: budget.total_usd,
                spent: Some(total.usd),
            },
        ],
        tokens: vec![
            CapGauge {
                scope: "daily",
                cap: budget.daily_tokens.map(|t| t as f64),
                spent: Some(today.tokens as f64),
            },
            CapGauge {
                scope: "total",
                cap: budget.total_tokens.map(|t| t as f64),
                spent: Some(total.tokens as f64),
            },
        ],
        rounds: rounds
            .into_iter()
            .map(|(n, (usd, tokens))| (n, usd, tokens))
            .collect(),
    }
}

/// One round of the page's chart (`monitor.rounds_chart` of `/api/state`).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct ChartPoint {
    /// The round.
    pub round_num: u64,
    /// Its cost, US dollars, as the budget counts it (`null`: no usage reported).
    pub cost_usd: Option<f64>,
    /// Its tokens of every kind (`null`: no usage reported).
    pub tokens: Option<u64>,
    /// The agent's wall-clock time, seconds (`null`: no `agent_exit` among the rounds the
    /// monitor keeps).
    pub duration_s: Option<f64>,
}

/// The newest [`CHART_ROUNDS`] rounds that have a duration or usage, oldest first: the
/// costs of `spend`, the durations of `durations` (round → seconds).
pub(crate) fn chart(spend: &SpendView, durations: &BTreeMap<u64, f64>) -> Vec<ChartPoint> {
    let mut points: BTreeMap<u64, ChartPoint> = BTreeMap::new();
    let blank = |round_num| ChartPoint {
        round_num,
        cost_usd: None,
        tokens: None,
        duration_s: None,
    };
    for (n, d) in durations {
        points.entry(*n).or_insert_with(|| blank(*n)).duration_s = Some(*d);
    }
    for (n, usd, tokens) in &spend.rounds {
        let point = points.entry(*n).or_insert_with(|| blank(*n));
        point.cost_usd = Some(*usd);
        point.tokens = Some(tokens.total());
    }
    let skip = points.len().saturating_sub(CHART_ROUNDS);
    points.into_values().skip(skip).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::events::{Event, EventLog};

    fn usage(events: &EventLog, round_num: u64, cost: f64) {
        events.emit(Event::AgentUsageRecorded {
            round_num,
            hook: "claude_error_detector".into(),
            input_tokens: 1000,
            output_tokens: 100,
            cache_read_tokens: Some(20),
            cache_write_tokens: None,
            cost_usd: Some(cost),
            agent: "claude".into(),
            model: "claude-opus-4-5".into(),
            cached_tokens: 20,
            usage_scope: "round".into(),
            from_session_totals: vec![],
            source: "cli".into(),
            reported_cost_usd: None,
            reported_tokens: None,
            underreported: false,
        });
    }

    #[test]
    fn the_counters_outlive_a_reset_the_caps_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let events = EventLog::new(dir.path());
        let budget = BudgetConfig {
            total_usd: Some(1.0),
            round_usd: Some(0.3),
            daily_tokens: Some(10_000),
            zone: Some((jiff::tz::TimeZone::UTC, "UTC".into())),
            ..BudgetConfig::default()
        };
        usage(&events, 1, 0.4);
        usage(&events, 2, 0.4);
        let follower = SpendFollower::default();
        let now = Timestamp::now();
        let view = follower.view(dir.path(), &budget, now);
        assert!((view.lifetime.usd - 0.8).abs() < 1e-9, "{view:?}");
        assert_eq!(view.lifetime.tokens.input, 2000);
        assert_eq!(view.lifetime.tokens.cache_read, 40);
        assert_eq!(view.usd[0].spent, Some(0.4));
        assert_eq!(view.tokens[0].cap, Some(10_000.0));
        assert_eq!(view.tokens[0].spent, Some(2240.0));
        events.emit(Event::BudgetReset {
            spent_usd: 0.8,
            spent_tokens: 2240,
        });
        // A second hook's report for round 2 adds to that round.
        usage(&events, 2, 0.1);
        let view = follower.view(dir.path(), &budget, now);
        assert!((view.lifetime.usd - 0.9).abs() < 1e-9, "{view:?}");
        let total = &view.usd[2];
        assert_eq!((total.scope, total.cap), ("total", Some(1.0)));
        assert!((total.spent.unwrap() - 0.1).abs() < 1e-9, "{view:?}");
        assert!((view.usd[0].spent.unwrap() - 0.5).abs() < 1e-9, "{view:?}");
        let durations = BTreeMap::from([(1, 2.5), (2, 3.0), (3, 1.0)]);
        let points = chart(&view, &durations);
        assert_eq!(points.len(), 3);
        assert_eq!(points[1].tokens, Some(2240));
        assert!((points[1].cost_usd.unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(
            (points[2].cost_usd, points[2].duration_s),
            (None, Some(1.0))
        );
    }

    #[test]
    fn the_chart_keeps_the_newest_rounds() {
        let durations: BTreeMap<u64, f64> = (1..=100).map(|n| (n, n as f64)).collect();
        let points = chart(&SpendView::default(), &durations);
        assert_eq!(points.len(), CHART_ROUNDS);
        assert_eq!(points[0].round_num, 100 - CHART_ROUNDS as u64 + 1);
    }
}
