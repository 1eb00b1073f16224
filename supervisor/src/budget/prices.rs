//! What a round cost when its CLI reported no cost (docs/operations.md, "Budget"): the
//! built-in price table (reviewed data: each row names the provider page it was read from
//! and when), the operator's `[budget.prices."<model>"]` over it. A model the table does not
//! price never counts as free: it counts at the table's highest price of each kind.

use std::collections::BTreeMap;

pub(crate) use crate::config::budget::Price;

/// One row of the built-in table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PriceRow {
    /// The model's name as the CLIs report it, without a snapshot date.
    pub model: &'static str,
    /// Its prices.
    pub price: Price,
    /// The page the prices were read from.
    pub source: &'static str,
    /// When they were read (UTC date).
    pub reviewed: &'static str,
}

const ANTHROPIC: &str = "https://platform.claude.com/docs/en/about-claude/pricing";
const ANTHROPIC_OLDER: &str = "https://docs.anthropic.com/en/docs/about-claude/pricing";
const OPENAI_GPT5_CODEX: &str = "https://developers.openai.com/api/docs/models/gpt-5-codex";

const fn row(
    model: &'static str,
    (input, output, cache_read, cache_write): (f64, f64, f64, f64),
    source: &'static str,
) -> PriceRow {
    PriceRow {
        model,
        price: Price {
            input,
            output,
            cache_read,
            cache_write,
        },
        source,
        reviewed: "2026-12-02",
    }
}

/// The built-in table: input, output, cache read, cache write (5 minutes), US dollars per
/// million tokens. OpenAI bills no cache write: its column is the input price (a count
/// that never comes from codex, whose usage has no writes).
pub(crate) const PRICES: &[PriceRow] = &[
    row("claude-fable-5-1", (10.0, 50.0, 0.25, 12.5), ANTHROPIC),
    row("claude-opus-5", (5.0, 25.0, 0.5, 6.25), ANTHROPIC),
    row("claude-opus-4-8", (5.0, 25.0, 0.5, 6.25), ANTHROPIC),
    row("claude-opus-4-7", (5.0, 25.0, 0.5, 6.25), ANTHROPIC),
    row("claude-opus-4-6", (5.0, 25.0, 0.5, 6.25), ANTHROPIC),
    row("claude-opus-4-5", (5.0, 25.0, 0.5, 6.25), ANTHROPIC),
    row("claude-opus-4-1", (15.0, 75.0, 1.5, 18.75), ANTHROPIC),
    row("claude-opus-4", (15.0, 75.0, 1.5, 18.75), ANTHROPIC),
    row("claude-sonnet-4", (3.0, 15.0, 0.3, 3.75), ANTHROPIC_OLDER),
    row("claude-3-5-haiku", (0.8, 4.0, 0.08, 1.0), ANTHROPIC_OLDER),
    row("gpt-5-codex", (1.25, 10.0, 0.125, 1.25), OPENAI_GPT5_CODEX),
    row("gpt-5", (1.25, 10.0, 0.125, 1.25), OPENAI_GPT5_CODEX),
];

/// Where the built-in rows come from, in words: each source page and when it was read.
pub(crate) fn provenance() -> String {
    let mut pages: Vec<String> = PRICES
        .iter()
        .map(|r| format!("{} read {}", r.source, r.reviewed))
        .collect();
    pages.dedup();
    format!("{} rows from {}", PRICES.len(), pages.join(", "))
}

/// Token counts of one round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tokens {
    /// Input not read from the cache.
    pub input: u64,
    /// Output.
    pub output: u64,
    /// Read from the cache.
    pub cache_read: u64,
    /// Written to the cache.
    pub cache_write: u64,
}

impl Tokens {
    /// Every token counted (what `daily_tokens` and `total_tokens` cap).
    pub(crate) fn total(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// How a round's cost was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CostSource {
    /// The CLI reported it.
    Reported,
    /// The model's row of the price table (the operator's or the built-in one).
    Table,
    /// The model has no price: the table's highest price of each kind.
    Highest,
}

/// The prices rounds are costed with: the operator's rows over the built-in ones.
#[derive(Clone, Debug)]
pub(crate) struct PriceTable {
    rows: BTreeMap<String, Price>,
}

impl PriceTable {
    /// The built-in table with `operator`'s rows over it.
    pub(crate) fn new(operator: &BTreeMap<String, Price>) -> Self {
        let mut rows: BTreeMap<String, Price> = PRICES
            .iter()
            .map(|r| (r.model.to_owned(), r.price))
            .collect();
        rows.extend(operator.iter().map(|(m, p)| (m.clone(), *p)));
        PriceTable { rows }
    }

    /// The price of `model` as a CLI names it: the row of its name, else of its name less
    /// a provider prefix (`anthropic/…`) and a snapshot date (`-20250929`); `None`:
    /// unpriced.
    pub(crate) fn price_of(&self, model: &str) -> Option<Price> {
        let bare = model.rsplit('/').next().unwrap_or(model);
        let undated = match bare.rsplit_once('-') {
            Some((head, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => {
                head
            }
            _ => bare,
        };
        [model, bare, undated]
            .iter()
            .find_map(|name| self.rows.get(*name).copied())
    }

    /// The highest price of each kind in the table: what an unpriced model counts at.
    pub(crate) fn highest(&self) -> Price {
        self.rows.values().fold(
            Price {
                input: 0.0,
                output: 0.0,
                cache_read: 0.0,
                cache_write: 0.0,
            },
            |a, p| Price {
                input: a.input.max(p.input),
                output: a.output.max(p.output),
                cache_read: a.cache_read.max(p.cache_read),
                cache_write: a.cache_write.max(p.cache_write),
            },
        )
    }

    /// What a round of `model` that used `tokens` cost, and how that was found: the
    /// CLI's `reported` cost when it is above zero (a CLI that prices a model it does
    /// not know at 0 is not believed: the table decides; a row of 0 in the operator's
    /// table makes a model free), else the model's row, else the highest prices.
    pub(crate) fn cost(
        &self,
        model: &str,
        tokens: Tokens,
        reported: Option<f64>,
    ) -> (f64, CostSource) {
        if let Some(cost) = reported.filter(|c| c.is_finite() && *c > 0.0) {
            return (cost, CostSource::Reported);
        }
        if tokens.total() == 0 {
            return (0.0, CostSource::Reported);
        }
        let (price, source) = match self.price_of(model) {
            Some(price) => (price, CostSource::Table),
            None => (self.highest(), CostSource::Highest),
        };
        let per_million = |count: u64, rate: f64| count as f64 * rate / 1_000_000.0;
        let cost = per_million(tokens.input, price.input)
            + per_million(tokens.output, price.output)
            + per_million(tokens.cache_read, price.cache_read)
            + per_million(tokens.cache_write, price.cache_write);
        (cost, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUND: Tokens = Tokens {
        input: 1_000_000,
        output: 1_000_000,
        cache_read: 0,
        cache_write: 0,
    };

    #[test]
    fn a_model_is_found_by_name_without_its_provider_or_snapshot_date() {
        let table = PriceTable::new(&BTreeMap::new());
        let opus = table.price_of("claude-opus-4-5").unwrap();
        assert_eq!(table.price_of("claude-opus-4-5-20251101"), Some(opus));
        assert_eq!(table.price_of("anthropic/claude-opus-4-5"), Some(opus));
        assert_eq!(table.price_of("gpt-5-codex").unwrap().input, 1.25);
        assert_eq!(table.price_of("fake-model"), None);
    }

    #[test]
    fn an_unpriced_model_never_counts_as_free() {
        let table = PriceTable::new(&BTreeMap::new());
        let (cost, source) = table.cost("some-new-model", ROUND, None);
        assert_eq!(source, CostSource::Highest);
        // The table's highest input and output prices (claude-opus-4's).
        assert_eq!(cost, 15.0 + 75.0);
        // A CLI reporting 0 for a model it cannot price is not believed either.
        assert_eq!(table.cost("some-new-model", ROUND, Some(0.0)).0, 90.0);
        // The control: a priced model costs its row.
        assert_eq!(table.cost("gpt-5", ROUND, None), (11.25, CostSource::Table));
        // Usage with no tokens costs nothing.
        assert_eq!(table.cost("x", Tokens::default(), None).0, 0.0);
    }

    #[test]
    fn a_reported_cost_wins_and_the_operator_rows_override() {
        let mut mine = BTreeMap::new();
        let free = Price {
            input: 0.0,
            output: 0.0,
            cache_read: 0.0,
            cache_write: 0.0,
        };
        mine.insert("local-llama".to_owned(), free);
        mine.insert("gpt-5".to_owned(), Price { input: 2.0, ..free });
        let table = PriceTable::new(&mine);
        assert_eq!(
            table.cost("claude-opus-4-5", ROUND, Some(0.4)),
            (0.4, CostSource::Reported)
        );
        assert_eq!(
            table.cost("local-llama", ROUND, None),
            (0.0, CostSource::Table)
        );
        assert_eq!(table.cost("gpt-5", ROUND, None).0, 2.0);
    }

    #[test]
    fn every_row_names_its_source_and_date() {
        for row in PRICES {
            assert!(row.source.starts_with("https://"), "{}", row.model);
            assert_eq!(row.reviewed.len(), 10, "{}", row.model);
        }
    }
}
