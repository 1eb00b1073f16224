//! `agent-runner budget reset` (docs/operations.md, "Budget"): records `budget_reset`, from
//! which `[budget]`'s `total_*` caps and the day's spend count again. Written to the record
//! as `upgrade` writes its events, whether `serve` runs or not: a running `serve` reads it
//! before its next round, or within a few seconds while a daily cap pauses it.

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
        .linked_in(&config.runtime.log_dir)
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
