//! The built-in output watches (docs/detectors.md, "While the round runs"): one per preset
//! CLI whose stream reports each model call as it completes ([`super::dialects::CallRule`]:
//! claude's `assistant` records, pi's `message_end`), answering `output_watch/observe`
//! (docs/protocol.md §5.10) with the usage of the calls a chunk of the running round's log
//! completed. Like the detectors, this reads agent output and runs only in the confined
//! built-in detector host.
//!
//! Lines are read whole: a line cut at a chunk's end waits for the next chunk (at most
//! [`MAX_CARRY`] of it; a longer line is passed over), and after bytes the supervisor
//! skipped the first, partial line is passed over too.

use agent_runner_protocol::{Observation, ObserveParams, TokenUsage};
use serde_json::Value;
use std::sync::Mutex;

use super::dialects::{usage_of, CallRule, Dialect};

/// Longest part of a line kept across chunks, in bytes. A claude `assistant` record holds
/// the call's whole content (a file it writes), so this is generous; a longer line's call
/// is not counted while the round runs (the usage read after the round still is).
pub(crate) const MAX_CARRY: usize = 1 << 20;

/// The watch's name for the detector `detector`: `claude_error_detector` →
/// `claude_usage_watch`.
pub(crate) fn watch_name(dialect: &Dialect) -> String {
    format!("{}_usage_watch", dialect.binary)
}

/// What one watch remembers of its round.
#[derive(Debug, Default)]
struct Seen {
    round_num: u64,
    /// The start of a line the last chunk cut.
    carry: String,
    /// Pass over text up to the next newline (a line whose start was not shown).
    skip_line: bool,
    /// The last line: (was it a call record, its id, the usage counted for it).
    last: Option<(Option<String>, TokenUsage)>,
}

/// One CLI's output watch.
#[derive(Debug)]
pub(crate) struct CallWatch {
    dialect: Dialect,
    rule: CallRule,
    seen: Mutex<Seen>,
}

impl CallWatch {
    /// The watch of `dialect`, `None` when its stream reports no call as it completes.
    pub(crate) fn of(dialect: Dialect) -> Option<Self> {
        Some(CallWatch {
            rule: dialect.calls?,
            dialect,
            seen: Mutex::default(),
        })
    }

    /// The usage of the calls `params.chunk` completed.
    pub(crate) fn observe(&self, params: &ObserveParams) -> Option<Observation> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let chunk = &params.chunk;
        if chunk.offset == 0 || seen.round_num != params.ctx.round_num {
            *seen = Seen {
                round_num: params.ctx.round_num,
                ..Seen::default()
            };
        }
        if chunk.skipped_bytes > 0 {
            seen.carry.clear();
            seen.skip_line = true;
            seen.last = None;
        }
        let mut text = std::mem::take(&mut seen.carry);
        text.push_str(&chunk.text);
        let mut usage = Vec::new();
        let mut rest = text.as_str();
        while let Some(end) = rest.find('\n') {
            let line = &rest[..end];
            rest = &rest[end + 1..];
            if std::mem::take(&mut seen.skip_line) {
                continue;
            }
            let call = self.call(line, &mut seen.last);
            usage.extend(call);
        }
        if rest.len() > MAX_CARRY {
            seen.skip_line = true;
        } else if !seen.skip_line {
            seen.carry = rest.to_owned();
        }
        usage.truncate(agent_runner_protocol::limits::MAX_OBSERVED_CALLS);
        (!usage.is_empty()).then_some(Observation { usage })
    }

    /// The usage `line` adds: a new call's own, or what a record of the call just counted
    /// adds to it; `last` is what the previous line was.
    fn call(
        &self,
        line: &str,
        last: &mut Option<(Option<String>, TokenUsage)>,
    ) -> Option<TokenUsage> {
        let before = last.take();
        let line = line.trim_start();
        let quoted = format!("\"{}\"", self.rule.kind);
        if !line.starts_with('{') || !line.contains(&quoted) {
            return None;
        }
        let record: Value = serde_json::from_str(line).ok()?;
        if record["type"] != self.rule.kind {
            return None;
        }
        let at = |path: &str| path.split('.').fold(&record, |v, key| &v[key]);
        let mut usage = usage_of(&record, self.rule.usage, self.dialect.input_counts_cache)?;
        if usage.input_tokens == 0 && usage.output_tokens == 0 {
            return None;
        }
        let model = at(self.rule.model).as_str().filter(|m| !m.is_empty());
        let provider = self
            .rule
            .provider
            .and_then(|p| at(p).as_str())
            .filter(|p| !p.is_empty());
        usage.model = match (provider, model) {
            (Some(p), Some(m)) => Some(format!("{p}/{m}")),
            (None, Some(m)) => Some(m.to_owned()),
            _ => None,
        };
        let id = self.rule.id.and_then(|p| at(p).as_str()).map(str::to_owned);
        let same = matches!(&before, Some((Some(prev), _)) if id.as_ref() == Some(prev));
        *last = Some((id, usage.clone()));
        if !same {
            return Some(usage);
        }
        // Another record of the call just counted: only what it adds.
        let (_, counted) = before.expect("matched above");
        let more = |now: u64, then: u64| now.saturating_sub(then);
        let more_opt =
            |now: Option<u64>, then: Option<u64>| now.map(|n| n.saturating_sub(then.unwrap_or(0)));
        let added = TokenUsage {
            input_tokens: more(usage.input_tokens, counted.input_tokens),
            output_tokens: more(usage.output_tokens, counted.output_tokens),
            cache_read_tokens: more_opt(usage.cache_read_tokens, counted.cache_read_tokens),
            cache_write_tokens: more_opt(usage.cache_write_tokens, counted.cache_write_tokens),
            cost_usd: usage
                .cost_usd
                .map(|c| (c - counted.cost_usd.unwrap_or(0.0)).max(0.0)),
            model: usage.model.clone(),
        };
        let nothing = added.input_tokens == 0
            && added.output_tokens == 0
            && added.cache_read_tokens.unwrap_or(0) == 0
            && added.cache_write_tokens.unwrap_or(0) == 0
            && added.cost_usd.unwrap_or(0.0) == 0.0;
        // Keep the larger counts as the call's.
        if let Some((_, kept)) = last.as_mut() {
            *kept = TokenUsage {
                input_tokens: usage.input_tokens.max(counted.input_tokens),
                output_tokens: usage.output_tokens.max(counted.output_tokens),
                ..usage
            };
        }
        (!nothing).then_some(added)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detectors::DIALECTS;
    use agent_runner_protocol::{Context, OutputChunk};

    fn params(round_num: u64, offset: u64, skipped: u64, text: &str) -> ObserveParams {
        ObserveParams {
            hook: "claude_usage_watch".parse().unwrap(),
            ctx: Context {
                work_dir: "/w".into(),
                log_dir: "/l".into(),
                project: "p".into(),
                round_num,
                phase: None,
                agent_name: None,
                agent_binary: None,
                agent_log_path: None,
                dry_run: false,
                vcs: None,
            },
            chunk: OutputChunk {
                offset,
                skipped_bytes: skipped,
                text: text.to_owned(),
            },
        }
    }

    fn dialect(cli: &str) -> Dialect {
        *DIALECTS.iter().find(|d| d.binary == cli).unwrap()
    }

    fn assistant(id: &str, input: u64, output: u64) -> String {
        format!("{{\"type\":\"assistant\",\"message\":{{\"id\":\"{id}\",\"model\":\"claude-x\",\"usage\":{{\"input_tokens\":{input},\"output_tokens\":{output},\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0}}}}}}\n")
    }

    #[test]
    fn claude_calls_are_counted_once_each_across_chunks() {
        let watch = CallWatch::of(dialect("claude")).unwrap();
        // Two content blocks of one call, a tool result, the next call (the fake model
        // gives every call the same id), cut in the middle of a line.
        let log = format!(
            "{}{}{{\"type\":\"user\"}}\n{}",
            assistant("m1", 100, 1),
            assistant("m1", 100, 1),
            assistant("m1", 200, 1)
        );
        let cut = log.len() - 20;
        let first = watch.observe(&params(1, 0, 0, &log[..cut])).unwrap();
        assert_eq!(first.usage.len(), 1, "{first:?}");
        assert_eq!(first.usage[0].input_tokens, 100);
        assert_eq!(first.usage[0].model.as_deref(), Some("claude-x"));
        let second = watch
            .observe(&params(1, cut as u64, 0, &log[cut..]))
            .unwrap();
        assert_eq!(second.usage.len(), 1);
        assert_eq!(second.usage[0].input_tokens, 200);
        // A new round starts afresh; bytes skipped make the first, partial line passed over.
        assert!(watch
            .observe(&params(2, 0, 0, "not json\n{\"type\":\"result\"}\n"))
            .is_none());
        let skipped = format!("ge\":{{}}}}\n{}", assistant("m2", 7, 3));
        let after = watch.observe(&params(2, 900, 400, &skipped)).unwrap();
        assert_eq!(after.usage[0].input_tokens, 7);
    }

    #[test]
    fn pi_reports_each_message_end_with_its_cost() {
        let watch = CallWatch::of(dialect("pi")).unwrap();
        let line = "{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"provider\":\"fake\",\"model\":\"m\",\"usage\":{\"input\":1500,\"output\":60,\"cacheRead\":0,\"cacheWrite\":0,\"cost\":{\"total\":0.2}}}}\n";
        let user = "{\"type\":\"message_end\",\"message\":{\"role\":\"user\",\"content\":[]}}\n";
        let text = format!("{user}{line}{line}");
        let seen = watch.observe(&params(1, 0, 0, &text)).unwrap();
        assert_eq!(seen.usage.len(), 2);
        assert_eq!(seen.usage[0].cost_usd, Some(0.2));
        assert_eq!(seen.usage[0].model.as_deref(), Some("fake/m"));
        assert!(CallWatch::of(dialect("gemini")).is_none());
    }
}
