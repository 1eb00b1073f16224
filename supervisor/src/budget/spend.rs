//! Spend counted from the record (docs/operations.md, "Budget"), so a restart does not reset
//! it: every `agent_usage_recorded` costed ([`super::prices`]), summed since the record
//! began or its last `budget_reset` (`total_*`), and per day in the budget's zone
//! (`daily_*`; a reset starts the day's count afresh too). The record is read once from its
//! start, then only what was appended since ([`Forward`]). Beside the caps' counts, what
//! the whole record spent whatever its resets ([`Ledger::lifetime`]: the monitor's
//! counters, docs/metrics.md) and the newest rounds' costs ([`Ledger::recent`]: the live
//! page's chart).

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::Timestamp;
use serde_json::Value;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use super::prices::{CostSource, PriceTable, Tokens};
use crate::config::budget::BudgetConfig;
use crate::record::events::read::{event_files, Forward};

/// Money and tokens spent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Spend {
    /// US dollars.
    pub usd: f64,
    /// Tokens of every kind.
    pub tokens: u64,
    /// Rounds counted.
    pub rounds: u64,
    /// Of them, rounds of a model with no price, counted at the table's highest.
    pub unpriced_rounds: u64,
}

impl Spend {
    fn add(&mut self, usd: f64, tokens: u64, source: CostSource) {
        self.usd += usd;
        self.tokens += tokens;
        self.rounds += 1;
        self.unpriced_rounds += u64::from(source == CostSource::Highest);
    }
}

/// One usage report (`agent_usage_recorded`) of a round as the ledger costed it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RoundCost {
    /// The round.
    pub round_num: u64,
    /// Its cost, US dollars.
    pub usd: f64,
    /// Its tokens.
    pub tokens: Tokens,
}

/// What the whole record spent, from its start, `budget_reset` or not: what the
/// monitor's counters count (a Prometheus counter never goes down; docs/metrics.md).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Lifetime {
    /// US dollars.
    pub usd: f64,
    /// Tokens of each kind.
    pub tokens: Tokens,
}

/// How many of the newest usage reports a ledger keeps ([`Ledger::recent`]).
pub(crate) const RECENT_REPORTS: usize = 200;

/// The record's spend, kept up to date by [`Ledger::catch_up`].
pub(crate) struct Ledger {
    state_dir: PathBuf,
    forward: Forward,
    table: PriceTable,
    zone: TimeZone,
    /// What the table and zone were built from, to notice a reload that changes them.
    built_from: (BTreeKey, String),
    total: Spend,
    /// The newest day with spend (or a reset), and its spend.
    day: Option<(Date, Spend)>,
    /// When the last reset was recorded.
    pub last_reset: Option<String>,
    /// Rounds costed since [`Ledger::take_rounds`] was last called.
    fresh: Vec<RoundCost>,
    /// The whole record's spend.
    lifetime: Lifetime,
    /// The newest [`RECENT_REPORTS`] reports, oldest first.
    recent: VecDeque<RoundCost>,
}

type BTreeKey = Vec<(String, [u64; 4])>;

fn prices_key(budget: &BudgetConfig) -> BTreeKey {
    budget
        .prices
        .iter()
        .map(|(m, p)| {
            let bits = [p.input, p.output, p.cache_read, p.cache_write].map(f64::to_bits);
            (m.clone(), bits)
        })
        .collect()
}

impl Ledger {
    /// The spend of the record of `state_dir` under `budget` (its prices and zone), read
    /// from the record's start. An unreadable record counts as empty (a round's own write
    /// failing is reported where it happens).
    pub(crate) fn open(state_dir: &Path, budget: &BudgetConfig) -> Ledger {
        let (zone, zone_name) = budget.zone();
        let files = event_files(state_dir).unwrap_or_default();
        let mut ledger = Ledger {
            state_dir: state_dir.to_owned(),
            forward: Forward::at(files, 0, 0),
            table: PriceTable::new(&budget.prices),
            zone,
            built_from: (prices_key(budget), zone_name),
            total: Spend::default(),
            day: None,
            last_reset: None,
            fresh: Vec::new(),
            lifetime: Lifetime::default(),
            recent: VecDeque::new(),
        };
        ledger.catch_up();
        ledger.fresh.clear();
        ledger
    }

    /// The same ledger under a re-read `budget`: read again from the start when its prices
    /// or zone changed.
    pub(crate) fn follow(self, budget: &BudgetConfig) -> Ledger {
        if self.built_from == (prices_key(budget), budget.zone().1) {
            return self;
        }
        Ledger::open(&self.state_dir, budget)
    }

    /// Reads what was appended to the record since the last look.
    pub(crate) fn catch_up(&mut self) {
        if let Err(err) = self.forward.refresh(&self.state_dir) {
            tracing::warn!("budget: cannot list the record: {err}");
            return;
        }
        loop {
            let found = match self.forward.next_event() {
                Ok(Some(found)) => found,
                Ok(None) => break,
                Err(err) => {
                    tracing::warn!("budget: cannot read the record: {err}");
                    break;
                }
            };
            let kind = found.head.event.as_str();
            if kind != "agent_usage_recorded" && kind != "budget_reset" {
                continue;
            }
            let Some(at) = found.head.ts.as_deref().and_then(parse_ts) else {
                continue;
            };
            let date = at.to_zoned(self.zone.clone()).date();
            if kind == "budget_reset" {
                self.total = Spend::default();
                self.day = Some((date, Spend::default()));
                self.last_reset = found.head.ts.clone();
                continue;
            }
            let Ok(line) = serde_json::from_slice::<Value>(found.line) else {
                continue;
            };
            let count = |key: &str| line[key].as_u64().unwrap_or(0);
            let tokens = Tokens {
                input: count("input_tokens"),
                output: count("output_tokens"),
                cache_read: count("cache_read_tokens"),
                cache_write: count("cache_write_tokens"),
            };
            let model = line["model"].as_str().unwrap_or("unknown");
            let (usd, source) = self.table.cost(model, tokens, line["cost_usd"].as_f64());
            self.total.add(usd, tokens.total(), source);
            match &mut self.day {
                Some((day, spend)) if *day == date => spend.add(usd, tokens.total(), source),
                _ => {
                    let mut spend = Spend::default();
                    spend.add(usd, tokens.total(), source);
                    self.day = Some((date, spend));
                }
            }
            self.lifetime.usd += usd;
            let all = &mut self.lifetime.tokens;
            all.input += tokens.input;
            all.output += tokens.output;
            all.cache_read += tokens.cache_read;
            all.cache_write += tokens.cache_write;
            if let Some(round_num) = found.head.round_num {
                let cost = RoundCost {
                    round_num,
                    usd,
                    tokens,
                };
                self.fresh.push(cost);
                if self.recent.len() == RECENT_REPORTS {
                    self.recent.pop_front();
                }
                self.recent.push_back(cost);
            }
        }
    }

    /// Spent since the record began or its last reset.
    pub(crate) fn total(&self) -> Spend {
        self.total
    }

    /// Spent on the day of `now` in the budget's zone.
    pub(crate) fn today(&self, now: Timestamp) -> Spend {
        let today = now.to_zoned(self.zone.clone()).date();
        match self.day {
            Some((day, spend)) if day == today => spend,
            _ => Spend::default(),
        }
    }

    /// When the day after `now`'s starts, in the budget's zone.
    pub(crate) fn next_day(&self, now: Timestamp) -> Timestamp {
        let zoned = now.to_zoned(self.zone.clone());
        zoned
            .date()
            .tomorrow()
            .ok()
            .and_then(|d| d.to_zoned(self.zone.clone()).ok())
            .map(|z| z.timestamp())
            .unwrap_or_else(|| now + jiff::SignedDuration::from_hours(24))
    }

    /// Spent since the record began, whatever was reset since.
    pub(crate) fn lifetime(&self) -> Lifetime {
        self.lifetime
    }

    /// The newest usage reports, oldest first (at most [`RECENT_REPORTS`]; a round may
    /// have several, one per hook that reported).
    pub(crate) fn recent(&self) -> impl Iterator<Item = &RoundCost> {
        self.recent.iter()
    }

    /// The cost of the newest round with usage (all its reports), what `round_usd` is
    /// held against; `None` before any.
    pub(crate) fn last_round(&self) -> Option<(u64, f64)> {
        let last = self.recent.back()?.round_num;
        let usd = self
            .recent
            .iter()
            .filter(|r| r.round_num == last)
            .map(|r| r.usd)
            .sum();
        Some((last, usd))
    }

    /// The rounds costed since the last call (none of those the first read found).
    pub(crate) fn take_rounds(&mut self) -> Vec<RoundCost> {
        std::mem::take(&mut self.fresh)
    }
}

/// A record timestamp (`2026-12-02T07:38:24.404Z`).
fn parse_ts(ts: &str) -> Option<Timestamp> {
    ts.parse().ok()
}
