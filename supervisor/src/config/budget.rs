//! `[budget]` and `[budget.prices."<model>"]`: the one place their keys are read, checked
//! and given defaults (docs/configuration.md, "[budget]"; what the caps do is
//! [`crate::budget`]).

use jiff::tz::TimeZone;
use serde::Deserialize;
use std::collections::BTreeMap;

use super::keys::config_table;

config_table! {
    /// `[budget]` as serde sees it.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawBudget = "budget" {
        /// what one round may spend: once its running cost, read while it runs by an
        /// output watch (claude's and pi's streams), reaches it, the agent is stopped
        /// (`budget_round_stopped`) and serve goes on with the next round; a round past it
        /// is recorded after its end (`budget_round_exceeded`)
        round_usd: f64 = (none) label "US dollars > 0" check dollars reload Next;
        /// spend of the day (in `timezone`) that pauses `serve` until the next day
        /// (`budget_paused` … `budget_resumed`)
        daily_usd: f64 = (none) label "US dollars > 0" check dollars reload Next;
        /// spend since the record began or since `agent-runner budget reset` that ends
        /// `serve` (`budget_exhausted`, exit 80, not restarted by the systemd unit); a
        /// round that reaches it while it runs is stopped, as for `round_usd`
        total_usd: f64 = (none) label "US dollars > 0" check dollars reload Next;
        /// tokens of the day (input, output, cache read and write) that pause `serve` until
        /// the next day
        daily_tokens: u64 = (none) range(1..) reload Next;
        /// tokens since the record began or since `agent-runner budget reset` that end
        /// `serve` (exit 80)
        total_tokens: u64 = (none) range(1..) reload Next;
        /// the IANA zone whose midnight starts a `daily_*` day
        timezone: String = (computed "the machine's local zone") reload Next
            into (zone: Option<(TimeZone, String)> = hand);
        /// the operator's prices, one table `[budget.prices."<model>"]` each (below), over
        /// the built-in table for the same model
        prices: BTreeMap<String, RawPrice> = (empty) label "tables" reload Next
            into (prices: BTreeMap<String, Price> = hand);
    }
    => /// `[budget]`, resolved: no cap set, nothing is held back.
    #[derive(Clone, Debug, Default)]
    pub struct BudgetConfig by BudgetHand {}
}

config_table! {
    /// One `[budget.prices."<model>"]` table: US dollars per million tokens.
    #[derive(Clone, Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawPrice = "budget.prices.<model>" {
        /// per million input tokens not read from the cache
        input: f64 = (required) label "US dollars ≥ 0" reload Next;
        /// per million output tokens
        output: f64 = (required) label "US dollars ≥ 0" reload Next;
        /// per million input tokens read from the cache
        cache_read: f64 = (computed "`input`") label "US dollars ≥ 0" reload Next;
        /// per million input tokens written to the cache
        cache_write: f64 = (computed "`input`") label "US dollars ≥ 0" reload Next;
    }
}

/// US dollars per million tokens of each kind: a row of the price table
/// (`crate::budget::prices`), the operator's or the built-in one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    /// Input tokens not read from the cache.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the cache.
    pub cache_read: f64,
    /// Input tokens written to the cache (Anthropic's 5-minute writes).
    pub cache_write: f64,
}

impl BudgetConfig {
    /// Whether any cap is set.
    pub(crate) fn any_cap(&self) -> bool {
        self.round_usd.is_some()
            || self.daily_usd.is_some()
            || self.total_usd.is_some()
            || self.daily_tokens.is_some()
            || self.total_tokens.is_some()
    }

    /// The zone whose midnight starts a day: `timezone`, else the machine's.
    pub(crate) fn zone(&self) -> (TimeZone, String) {
        self.zone.clone().unwrap_or_else(|| {
            let zone = TimeZone::system();
            let name = zone.iana_name().unwrap_or("local").to_owned();
            (zone, name)
        })
    }
}

/// Checks `[budget]` (absent: no caps).
///
/// Errors: `(dotted key, what was expected)`.
pub(super) fn resolve(raw: Option<RawBudget>) -> Result<BudgetConfig, (String, String)> {
    let Some(raw) = raw else {
        return Ok(BudgetConfig::default());
    };
    let zone = match raw.timezone.as_deref() {
        None => None,
        Some(name) => Some((
            TimeZone::get(name).map_err(|e| {
                (
                    "budget.timezone".to_owned(),
                    format!("{name:?} is not a known IANA time zone ({e}); e.g. \"Europe/Berlin\" or \"UTC\""),
                )
            })?,
            name.to_owned(),
        )),
    };
    let mut prices = BTreeMap::new();
    for (model, row) in &raw.prices() {
        let key = |field: &str| format!("budget.prices.{model:?}.{field}");
        let rate = |field: &str, value: f64| {
            if value.is_finite() && value >= 0.0 {
                Ok(value)
            } else {
                Err((
                    key(field),
                    format!("{value} is out of range; expected US dollars ≥ 0"),
                ))
            }
        };
        let input = rate("input", row.input)?;
        prices.insert(
            model.clone(),
            Price {
                input,
                output: rate("output", row.output)?,
                cache_read: rate("cache_read", row.cache_read.unwrap_or(input))?,
                cache_write: rate("cache_write", row.cache_write.unwrap_or(input))?,
            },
        );
    }
    raw.resolve_with(BudgetHand { zone, prices })
}
