//! What each preset's CLI prints (docs/detectors.md "Per CLI"): which lines of its JSON
//! stream are error records, and where it reports token usage.

use agent_runner_protocol::TokenUsage;
use regex::Regex;
use serde_json::Value;
use std::sync::LazyLock;

/// Where a CLI reports token usage.
#[derive(Clone, Copy, Debug)]
pub enum UsageRule {
    /// The last JSON record of `kind` (its `type`), usage object at `path`.
    Last {
        /// The record's `type`.
        kind: &'static str,
        /// Dotted path of the usage object inside the record.
        path: &'static str,
    },
    /// The sum over every JSON record of `kind`, usage object at `path`.
    Sum {
        /// The record's `type`.
        kind: &'static str,
        /// Dotted path of the usage object inside the record.
        path: &'static str,
    },
    /// aider's plain `Tokens: 12k sent, 1.2k received. Cost: $0.05 message, …` line.
    AiderText,
    /// The CLI does not report usage in a form we read.
    None,
}

/// Where a CLI names the model that did the round's work (reported with its usage as
/// `model`; the reference system's names, docs/detectors.md "Usage").
#[derive(Clone, Copy, Debug)]
pub enum ModelRule {
    /// The string at `path` in the last record of `kind`, prefixed with the string at
    /// `provider` and a `/` when there is one (pi: `anthropic/claude-sonnet-4-5`).
    Last {
        /// The record's `type`.
        kind: &'static str,
        /// Dotted path of the model's name inside the record.
        path: &'static str,
        /// Dotted path of the provider's name, if the CLI names one.
        provider: Option<&'static str>,
    },
    /// Of the per-model object at `path` in the last record of `kind`, the key whose
    /// `total_tokens` is largest (gemini's `stats.models`: a round may use several).
    Busiest {
        /// The record's `type`.
        kind: &'static str,
        /// Dotted path of the object keyed by model name.
        path: &'static str,
    },
}

/// Which counts of a CLI's usage report are the running total of its session rather than
/// the round's own, once a round resumes the session (`serve`'s session resume,
/// docs/detectors.md "Usage"): the supervisor turns them into the round's own by taking
/// off the same session's previous report (`crate::runtime::agent::session_usage`). Measured
/// with the real CLIs against the fake model server (tests/tests/suite/real_clis/real_clis.rs,
/// `resumed_usage_adds_up_to_the_bill`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionTotals {
    /// The token counts (input, output, cache read, cache write).
    pub tokens: bool,
    /// The cost (`cost_usd`).
    pub cost: bool,
}

/// Where a CLI's stream reports each model call's usage as the call completes: what its
/// output watch reads while the round runs (docs/detectors.md, "While the round runs").
#[derive(Clone, Copy, Debug)]
pub struct CallRule {
    /// The `type` of the record that reports a call.
    pub kind: &'static str,
    /// Dotted path of the call's usage object inside it.
    pub usage: &'static str,
    /// Dotted path of the model's name.
    pub model: &'static str,
    /// Dotted path of the provider's name, prefixed to the model's with a `/`.
    pub provider: Option<&'static str>,
    /// Dotted path of the call's id, when the CLI prints one record per content block of a
    /// call (claude): a record right after one of the same id is the same call.
    pub id: Option<&'static str>,
}

/// One preset CLI: the detector's name (the reference system's), the executable's
/// basename it applies to, and its usage rule.
#[derive(Clone, Copy, Debug)]
pub struct Dialect {
    /// The hook name, e.g. `claude_error_detector`.
    pub detector: &'static str,
    /// `ctx.agent_binary`'s basename this detector applies to.
    pub binary: &'static str,
    /// Where usage is read.
    pub usage: UsageRule,
    /// Which of its counts are the session's running total under session resume.
    pub session_totals: SessionTotals,
    /// Whether its usage report carries a cost in US dollars (claude's `total_cost_usd`,
    /// pi's `cost.total`, aider's `Cost: $… message`): `[budget]` counts that before the
    /// price table (`crate::budget::prices`).
    pub reports_cost: bool,
    /// Whether the input count of its usage object (`input_tokens`) includes the tokens
    /// read from the cache (gemini's `stats.input_tokens`, codex's `usage.input_tokens`):
    /// the recorded `input_tokens` is then that count less the cached ones, so it means
    /// what the reference system's does, input not read from the cache, for every CLI.
    pub input_counts_cache: bool,
    /// Where the model is named, the first that names it winning (empty: nowhere).
    pub model: &'static [ModelRule],
    /// The `type`s of the record that ends a round of its stream (`result`, `turn.failed`,
    /// …): the last such record is the round's final word. When it is not an error, the
    /// error-shaped records before it were the CLI's own retries, which worked.
    pub finale: &'static [&'static str],
    /// The CLI may exit 0 after a failure it printed (aider, after its own retries): its
    /// plain text is read whatever the exit status.
    pub text_whatever_exit: bool,
    /// Where its stream reports each model call as it completes; `None`: it reports usage
    /// only when the round ends (or never), so its output watch has nothing to read.
    pub calls: Option<CallRule>,
    /// Words of the lines it prints when one of its own optional fetches fails, after
    /// which it goes on (aider's model price list, fetched at every start while its cache
    /// is empty): a line holding one is not read for a diagnosis ([`without_noise`]). An
    /// offline machine, or the agent's network namespace, makes them fail every round.
    pub noise: &'static [&'static str],
}

/// The built-in detectors, one per preset (`init --preset`).
pub const DIALECTS: &[Dialect] = &[
    Dialect {
        detector: "claude_error_detector",
        binary: "claude",
        usage: UsageRule::Last {
            kind: "result",
            path: "usage",
        },
        session_totals: SessionTotals {
            tokens: false,
            cost: true,
        },
        reports_cost: true,
        input_counts_cache: false,
        model: &[ModelRule::Last {
            kind: "assistant",
            path: "message.model",
            provider: None,
        }],
        finale: &["result"],
        calls: Some(CallRule {
            kind: "assistant",
            usage: "message.usage",
            model: "message.model",
            provider: None,
            id: Some("message.id"),
        }),
        text_whatever_exit: false,
        noise: &[],
    },
    Dialect {
        detector: "gemini_error_detector",
        binary: "gemini",
        usage: UsageRule::Last {
            kind: "result",
            path: "stats",
        },
        session_totals: SessionTotals {
            tokens: false,
            cost: false,
        },
        reports_cost: false,
        input_counts_cache: true,
        model: &[
            ModelRule::Busiest {
                kind: "result",
                path: "stats.models",
            },
            ModelRule::Last {
                kind: "init",
                path: "model",
                provider: None,
            },
        ],
        finale: &["result"],
        calls: None,
        text_whatever_exit: false,
        noise: &[],
    },
    Dialect {
        detector: "codewhale_error_detector",
        binary: "codewhale",
        usage: UsageRule::Last {
            kind: "metadata",
            path: "usage",
        },
        session_totals: SessionTotals {
            tokens: false,
            cost: false,
        },
        reports_cost: false,
        input_counts_cache: false,
        model: &[],
        finale: &[],
        calls: None,
        text_whatever_exit: false,
        noise: &[],
    },
    Dialect {
        detector: "kimi_error_detector",
        binary: "kimi",
        usage: UsageRule::None,
        session_totals: SessionTotals {
            tokens: false,
            cost: false,
        },
        reports_cost: false,
        input_counts_cache: false,
        model: &[],
        finale: &[],
        calls: None,
        text_whatever_exit: false,
        noise: &[],
    },
    Dialect {
        detector: "pi_error_detector",
        binary: "pi",
        usage: UsageRule::Sum {
            kind: "message_end",
            path: "message.usage",
        },
        session_totals: SessionTotals {
            tokens: false,
            cost: false,
        },
        reports_cost: true,
        input_counts_cache: false,
        model: &[ModelRule::Last {
            kind: "message_end",
            path: "message.model",
            provider: Some("message.provider"),
        }],
        finale: &[],
        calls: Some(CallRule {
            kind: "message_end",
            usage: "message.usage",
            model: "message.model",
            provider: Some("message.provider"),
            id: None,
        }),
        text_whatever_exit: false,
        noise: &[],
    },
    Dialect {
        detector: "codex_error_detector",
        binary: "codex",
        usage: UsageRule::Sum {
            kind: "turn.completed",
            path: "usage",
        },
        session_totals: SessionTotals {
            tokens: true,
            cost: false,
        },
        reports_cost: false,
        input_counts_cache: true,
        model: &[],
        finale: &["turn.completed", "turn.failed"],
        calls: None,
        text_whatever_exit: false,
        noise: &[],
    },
    Dialect {
        detector: "aider_error_detector",
        binary: "aider",
        usage: UsageRule::AiderText,
        session_totals: SessionTotals {
            tokens: false,
            cost: false,
        },
        reports_cost: true,
        input_counts_cache: false,
        model: &[],
        finale: &[],
        calls: None,
        text_whatever_exit: true,
        noise: &["model_prices_and_context_window.json"],
    },
];

/// `tail` without the lines holding one of `dialect`'s [`Dialect::noise`] words (each left
/// as an empty line).
pub(crate) fn without_noise<'t>(dialect: &Dialect, tail: &'t str) -> std::borrow::Cow<'t, str> {
    let noisy = |line: &str| dialect.noise.iter().any(|n| line.contains(n));
    if !tail.lines().any(noisy) {
        return std::borrow::Cow::Borrowed(tail);
    }
    let kept: Vec<&str> = tail
        .lines()
        .map(|line| if noisy(line) { "" } else { line })
        .collect();
    std::borrow::Cow::Owned(kept.join("\n"))
}

/// Byte strings one of which every line [`error_text`] can flag contains: an `"error"`
/// key or value (`"type":"error"`, `"status":"error"`, `"stopReason":"error"`, an
/// `"error":` member), an `"error_…"` subtype, a true `is_error`, a failed type.
const ERROR_HINTS: &[&str] = &[
    "\"error\"",
    "\"error_",
    "is_error\":true",
    "is_error\": true",
    "failed",
];

/// The JSON records of a log tail that may matter to `dialect`, in order: lines starting
/// with `{` that may be error records ([`ERROR_HINTS`]) or name the record type its usage
/// is read from, and parse. Other lines (most of a log: the agent's own messages and tool
/// output) are not decoded at all.
pub(crate) fn records(dialect: &Dialect, tail: &str) -> Vec<Value> {
    let usage_type = match dialect.usage {
        UsageRule::Last { kind, .. } | UsageRule::Sum { kind, .. } => Some(format!("\"{kind}\"")),
        UsageRule::AiderText | UsageRule::None => None,
    };
    let may_matter = |line: &str| {
        ERROR_HINTS.iter().any(|h| line.contains(h))
            || usage_type.as_deref().is_some_and(|t| line.contains(t))
    };
    tail.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('{') && may_matter(l))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(Value::is_object)
        .collect()
}

/// The error texts of a record that reports an error at its top level (`type` naming an
/// error or failure, `is_error: true`, `status: "error"`, an `error` member, or an
/// assistant message that stopped on an error), else `None`. Nested records (a tool's
/// failed result inside a message) are not errors of the CLI.
pub(crate) fn error_text(record: &Value) -> Option<String> {
    let kind = record["type"].as_str().unwrap_or("");
    let message = &record["message"];
    let is_error = kind.contains("error")
        || kind.contains("failed")
        || record["is_error"] == Value::Bool(true)
        || record["subtype"]
            .as_str()
            .is_some_and(|s| s.starts_with("error"))
        || matches!(record["status"].as_str(), Some("error" | "failed"))
        || !record["error"].is_null()
        || message["stopReason"] == "error";
    if !is_error {
        return None;
    }
    let mut parts = Vec::new();
    for value in [
        &record["result"],
        message,
        &record["error"],
        &record["error"]["message"],
        &record["error"]["type"],
        &record["errorMessage"],
        &message["errorMessage"],
    ] {
        if let Some(text) = value.as_str() {
            parts.push(text.to_owned());
        }
    }
    for status in [
        &record["api_error_status"],
        &record["status_code"],
        &record["error"]["code"],
    ] {
        if let Some(code) = status.as_u64() {
            parts.push(format!("HTTP {code}"));
        }
    }
    Some(parts.join(" "))
}

/// The record that ends the round's stream (the last one whose `type` is in `finale`).
pub(crate) fn finale<'r>(finale: &[&str], records: &'r [Value]) -> Option<&'r Value> {
    records
        .iter()
        .rev()
        .find(|r| r["type"].as_str().is_some_and(|t| finale.contains(&t)))
}

/// Token usage per `dialect`, if the tail reports any (a record of zero tokens both ways,
/// as failed rounds print, is no usage), with the model that did the work when the stream
/// names it.
pub(crate) fn usage(dialect: &Dialect, records: &[Value], tail: &str) -> Option<TokenUsage> {
    let of = |r: &Value, path| usage_of(r, path, dialect.input_counts_cache);
    let usage = match dialect.usage {
        UsageRule::None => None,
        UsageRule::Last { kind, path } => records
            .iter()
            .rev()
            .find(|r| r["type"] == kind)
            .and_then(|r| of(r, path)),
        UsageRule::Sum { kind, path } => records
            .iter()
            .filter(|r| r["type"] == kind)
            .filter_map(|r| of(r, path))
            .reduce(|a, b| TokenUsage {
                input_tokens: a.input_tokens + b.input_tokens,
                output_tokens: a.output_tokens + b.output_tokens,
                cache_read_tokens: add(a.cache_read_tokens, b.cache_read_tokens),
                cache_write_tokens: add(a.cache_write_tokens, b.cache_write_tokens),
                cost_usd: match (a.cost_usd, b.cost_usd) {
                    (None, None) => None,
                    (x, y) => Some(x.unwrap_or(0.0) + y.unwrap_or(0.0)),
                },
                model: None,
            }),
        UsageRule::AiderText => aider_usage(tail),
    };
    let mut usage = usage.filter(|u| u.input_tokens > 0 || u.output_tokens > 0)?;
    usage.model = dialect.model.iter().find_map(|rule| model(*rule, tail));
    Some(usage)
}

/// The model `rule` finds in `tail`, reading back from its end: only lines that name the
/// record's type are decoded (a claude tail is mostly long `assistant` lines; the last one
/// is enough).
fn model(rule: ModelRule, tail: &str) -> Option<String> {
    let (ModelRule::Last { kind, .. } | ModelRule::Busiest { kind, .. }) = rule;
    let quoted = format!("\"{kind}\"");
    let record = tail
        .lines()
        .rev()
        .map(str::trim_start)
        .filter(|l| l.starts_with('{') && l.contains(&quoted))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["type"] == kind)?;
    let at = |path: &str| path.split('.').fold(&record, |v, key| &v[key]);
    match rule {
        ModelRule::Last { path, provider, .. } => {
            let model = at(path).as_str().filter(|m| !m.is_empty())?;
            match provider
                .and_then(|p| at(p).as_str())
                .filter(|p| !p.is_empty())
            {
                Some(provider) => Some(format!("{provider}/{model}")),
                None => Some(model.to_owned()),
            }
        }
        ModelRule::Busiest { path, .. } => at(path)
            .as_object()?
            .iter()
            .filter(|(_, m)| m.is_object())
            .max_by_key(|(_, m)| m["total_tokens"].as_u64().unwrap_or(0))
            .map(|(name, _)| name.clone()),
    }
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0) + y.unwrap_or(0)),
    }
}

fn first_u64(object: &Value, names: &[&str]) -> Option<u64> {
    names.iter().find_map(|n| object[*n].as_u64())
}

/// The usage object at `path` of `record`. Input is counted without the cached tokens:
/// a count that excludes them (`input`: gemini's and pi's) is taken as it is; one that
/// includes them (`counts_cache`) has them taken off.
pub(crate) fn usage_of(record: &Value, path: &str, counts_cache: bool) -> Option<TokenUsage> {
    let object = path.split('.').fold(record, |v, key| &v[key]);
    let cache_read_tokens = first_u64(
        object,
        &[
            "cache_read_input_tokens",
            "cached_input_tokens",
            "cacheRead",
            "cached",
        ],
    );
    let input_tokens = match object["input"].as_u64() {
        Some(net) => net,
        None => {
            let counted = first_u64(object, &["input_tokens", "prompt_tokens"])?;
            if counts_cache {
                counted.saturating_sub(cache_read_tokens.unwrap_or(0))
            } else {
                counted
            }
        }
    };
    Some(TokenUsage {
        input_tokens,
        output_tokens: first_u64(object, &["output_tokens", "output", "completion_tokens"])?,
        cache_read_tokens,
        cache_write_tokens: first_u64(object, &["cache_creation_input_tokens", "cacheWrite"]),
        cost_usd: record["total_cost_usd"]
            .as_f64()
            .or_else(|| object["cost"]["total"].as_f64()),
        model: None,
    })
}

static AIDER_TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"Tokens: ([\d.]+)(k?) sent(?:, [\d.]+k? cache \w+)*, ([\d.]+)(k?) received\.(?: Cost: \$([\d.]+) message)?")
        .expect("aider usage pattern compiles")
});

fn aider_usage(tail: &str) -> Option<TokenUsage> {
    let caps = AIDER_TOKENS.captures_iter(tail).last()?;
    let count = |n: &str, k: &str| -> Option<u64> {
        let value: f64 = n.parse().ok()?;
        Some((value * if k == "k" { 1000.0 } else { 1.0 }).round() as u64)
    };
    Some(TokenUsage {
        input_tokens: count(&caps[1], &caps[2])?,
        output_tokens: count(&caps[3], &caps[4])?,
        cache_read_tokens: None,
        cache_write_tokens: None,
        cost_usd: caps.get(5).and_then(|c| c.as_str().parse().ok()),
        model: None,
    })
}
