//! `agent-runner budget reset` (docs/operations.md, "Budget"): records `budget_reset`, from
//! which `[budget]`'s `total_*` caps and the day's spend count again. Written to the record
//! as `upgrade` writes its events, whether `serve` runs or not: a running `serve` reads it
//! before its next round, or within a few seconds while a daily cap pauses it.

use schemars::JsonSchema;
use serde::Serialize;
use std::path::Path;

use crate::budget::spend::Ledger;
use crate::exit::{self, CliError};
use crate::record::events::{Event, EventLog};

/// Records `budget_reset` with what was spent before it and says so (`--json`: the event's
/// fields).
///
/// Errors: the config cannot be loaded (exit 78).
pub(crate) fn reset(config_path: &Path, json: bool) -> Result<u8, CliError> {
    let config = crate::config::load(config_path)?;
    let state_dir = &config.runtime.state_dir;
    let spent = Ledger::open(state_dir, &config.budget).total();
    let event = Event::BudgetReset {
        spent_usd: spent.usd,
        spent_tokens: spent.tokens,
    };
    EventLog::new(state_dir)
        .linked_in(crate::record::agent_changes::held_log_dir(&config))
        .try_emit(&event)
        .map_err(|e| {
            CliError::failure(format!(
                "cannot write budget_reset to the record in {}: {e}",
                state_dir.display()
            ))
        })?;
    if json {
        println!(
            "{}",
            serde_json::json!({"spent_usd": spent.usd, "spent_tokens": spent.tokens})
        );
    } else {
        println!(
            "budget reset: ${:.4} and {} tokens were spent before it; [budget] total_* and today's spend count from now",
            spent.usd, spent.tokens
        );
    }
    Ok(exit::OK)
}

/// `peek`'s `budget` (`null` when `[budget]` sets no cap): each cap against its spend, by
/// the rule `serve` follows ([`crate::budget::look`]), counted from the record as `serve`
/// counts it (docs/operations.md, "Budget").
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct PeekBudget {
    /// What the budget says of the next round now: `run`, `paused` (a `daily_*` cap) or
    /// `exhausted` (a `total_*` cap).
    pub state: String,
    /// Each cap set: `scope` (its key), `spent` (US dollars or tokens), `cap`.
    pub caps: Vec<PeekCap>,
    /// `round_usd`, when set (after a round past it, `budget_round_exceeded`).
    pub round_usd: Option<f64>,
    /// What `round_usd` is held against: the cost of the newest round with usage, US
    /// dollars (all its reports); `null` before any.
    pub last_round_usd: Option<f64>,
    /// Spent since the record began or its last reset, US dollars.
    pub total_usd: f64,
    /// Tokens of every kind spent since then.
    pub total_tokens: u64,
    /// Rounds counted since then.
    pub rounds: u64,
    /// Of them, rounds of a model with no price, counted at the table's highest.
    pub unpriced_rounds: u64,
    /// When the last `budget_reset` was recorded, `null` when never.
    pub since_reset: Option<String>,
    /// The zone of a `daily_*` day.
    pub timezone: String,
    /// What each recorded usage covers: `round` (docs/detectors.md, "Usage").
    pub usage_scope: String,
}

/// One cap of [`PeekBudget`].
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct PeekCap {
    /// The key: `total_usd`, `total_tokens`, `daily_usd`, `daily_tokens`.
    pub scope: String,
    /// Spent against it (US dollars or tokens).
    pub spent: f64,
    /// The cap.
    pub cap: f64,
}

/// [`PeekBudget`] of `config` at `now`; `None` without a cap.
pub(crate) fn peek(config: &crate::config::Config, now: jiff::Timestamp) -> Option<PeekBudget> {
    let budget = &config.budget;
    if !budget.any_cap() {
        return None;
    }
    let ledger = Ledger::open(&config.runtime.state_dir, budget);
    let state = match crate::budget::look(budget, &ledger, now) {
        crate::budget::Verdict::Run => "run",
        crate::budget::Verdict::Pause { .. } => "paused",
        crate::budget::Verdict::Exhausted(_) => "exhausted",
    };
    let total = ledger.total();
    Some(PeekBudget {
        state: state.to_owned(),
        caps: crate::budget::lines(budget, &ledger, now)
            .into_iter()
            .map(|l| PeekCap {
                scope: l.scope.to_owned(),
                spent: l.spent,
                cap: l.cap,
            })
            .collect(),
        round_usd: budget.round_usd,
        last_round_usd: ledger.last_round().map(|(_, usd)| usd),
        total_usd: total.usd,
        total_tokens: total.tokens,
        rounds: total.rounds,
        unpriced_rounds: total.unpriced_rounds,
        since_reset: ledger.last_reset.clone(),
        timezone: budget.zone().1,
        usage_scope: crate::runtime::steps::post_round::USAGE_SCOPE.to_owned(),
    })
}
