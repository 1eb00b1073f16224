//! The round's spend while it runs (docs/operations.md, "Budget": "Within a round";
//! docs/protocol.md §5.10): while a `[budget]` cap is set, the round log is shown as it
//! grows, in chunks of at most `MAX_CHUNK_BYTES`, to the output watches that apply to the
//! round's CLI (the built-in detector host's for claude and pi, and any host's). Each
//! answers the usage of the model calls a chunk completed; the supervisor prices each call
//! ([`crate::budget::prices`]), sums them, and once the sum reaches what the round may
//! spend ([`crate::budget::RoundCap`]) records `budget_round_stopped` and has the agent
//! ended as its time budget would end it (its cooperative stop signal, SIGKILL after the
//! grace). The supervisor reads the log as bytes and cuts chunks after a newline; only the
//! confined hosts read what the agent wrote.
//!
//! When the round's provider key is brokered, what the provider billed in the answers the
//! key broker relayed so far ([`crate::runtime::egress::key_broker::KeyBroker::billed_now`],
//! priced by the same table) counts too, every [`POLL`], whatever the watches say: the
//! round is stopped at the answer that crossed its cap even when its CLI prints nothing
//! while it runs (hook `key_broker` in `budget_round_stopped`).
//!
//! The log is the queue: the agent writes it whatever the watch does, so a slow or silent
//! host never holds the agent's output up. A watch more than [`MAX_BEHIND`] bytes behind
//! skips to the log's end (the bytes skipped are told to the host and recorded as
//! `output_watch_skipped`); a host that is not running is not started mid-round (a failed
//! call is recorded as any host call's, and the round goes on unwatched by it).

use agent_runner_protocol::limits::MAX_CHUNK_BYTES;
use agent_runner_protocol::{
    decode_observation, Context, HookName, ObserveParams, OutputChunk, TokenUsage,
};
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::oneshot;

use crate::budget::prices::{PriceTable, Tokens};
use crate::budget::{Reached, RoundCap};
use crate::hosts::{HookRef, HostManager};
use crate::record::events::{Event, EventLog};

/// How often the log is looked at for new lines.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// How far behind the log's end a watch may fall before it skips to it, in bytes.
pub(crate) const MAX_BEHIND: u64 = 1 << 20;

/// Chunks shown after the agent ended (its last lines), at most.
const LAST_CHUNKS: usize = 16;

/// One round's watch.
pub(crate) struct UsageWatch {
    /// The output watches that apply to the round.
    pub hooks: Vec<HookRef>,
    /// The round context (`agent_log_path` set).
    pub ctx: Context,
    /// The round log.
    pub log_path: PathBuf,
    /// What the round may spend.
    pub cap: RoundCap,
    /// The prices a call's tokens are counted at when it reports no cost.
    pub table: PriceTable,
    /// The record.
    pub events: EventLog,
    /// The round's key broker, when its key is brokered: what the provider billed so far.
    pub broker: Option<std::sync::Arc<crate::runtime::egress::key_broker::KeyBroker>>,
}

/// What one hook reported over the round.
#[derive(Clone, Debug, Default)]
struct Tally {
    usd: f64,
    usage: Option<TokenUsage>,
    calls: u64,
}

impl Tally {
    fn tokens(&self) -> u64 {
        self.usage.as_ref().map_or(0, |u| tokens(u).total())
    }
}

/// What the watch saw of a round.
#[derive(Clone, Debug, Default)]
pub(crate) struct Watched {
    /// The hook whose report counted (the one reporting the most spend), with the round's
    /// usage as it summed it (the model: the last one named) and its cost in US dollars.
    pub usage: Option<(HookName, TokenUsage, f64)>,
}

fn tokens(u: &TokenUsage) -> Tokens {
    Tokens {
        input: u.input_tokens,
        output: u.output_tokens,
        cache_read: u.cache_read_tokens.unwrap_or(0),
        cache_write: u.cache_write_tokens.unwrap_or(0),
    }
}

fn add(sum: Option<TokenUsage>, call: TokenUsage) -> TokenUsage {
    let Some(sum) = sum else { return call };
    let opt = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    TokenUsage {
        input_tokens: sum.input_tokens + call.input_tokens,
        output_tokens: sum.output_tokens + call.output_tokens,
        cache_read_tokens: opt(sum.cache_read_tokens, call.cache_read_tokens),
        cache_write_tokens: opt(sum.cache_write_tokens, call.cache_write_tokens),
        cost_usd: match (sum.cost_usd, call.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        },
        model: call.model.or(sum.model),
    }
}

/// The next bytes of `log_path` from `offset`: at most [`MAX_CHUNK_BYTES`], ended after
/// their last newline (all of them when they hold none and fill a chunk, or `whole`);
/// empty when no whole line is there yet. Also the log's length.
fn read_chunk(log_path: &std::path::Path, offset: u64, whole: bool) -> (Vec<u8>, u64) {
    let read = || -> std::io::Result<(Vec<u8>, u64)> {
        let mut file = crate::tree_file::open_regular(log_path, crate::tree_file::Symlink::Refuse)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(offset))?;
        let mut bytes = Vec::new();
        file.take(MAX_CHUNK_BYTES as u64).read_to_end(&mut bytes)?;
        Ok((bytes, len))
    };
    let Ok((mut bytes, len)) = read() else {
        return (Vec::new(), offset);
    };
    match bytes.iter().rposition(|b| *b == b'\n') {
        Some(end) => bytes.truncate(end + 1),
        None if whole || bytes.len() == MAX_CHUNK_BYTES => {}
        None => bytes.clear(),
    }
    (bytes, len)
}

impl UsageWatch {
    /// Watches the round until `ended` fires (the agent is gone; its last lines are shown
    /// then), sending on `crossed` once the round's running spend reached its cap.
    pub(crate) async fn run(
        self,
        hosts: &mut HostManager,
        mut ended: oneshot::Receiver<()>,
        crossed: oneshot::Sender<()>,
    ) -> Watched {
        let mut crossed = Some(crossed);
        tracing::debug!(cap = ?self.cap, "usage watch: the round's cap");
        let mut tallies: Vec<Tally> = vec![Tally::default(); self.hooks.len()];
        let mut offset = 0u64;
        let mut skipped_total = 0u64;
        let mut stopped = None;
        let mut finished = false;
        loop {
            if !finished {
                tokio::select! {
                    _ = tokio::time::sleep(POLL) => {}
                    _ = &mut ended => finished = true,
                }
            }
            let mut chunks = 0;
            loop {
                let (bytes, len) = read_chunk(&self.log_path, offset, finished);
                let mut skipped = 0;
                let (bytes, at) = if len.saturating_sub(offset) > MAX_BEHIND {
                    // Too far behind: on from the last chunk's worth of the log.
                    let from = len - MAX_CHUNK_BYTES as u64;
                    skipped = from - offset;
                    (read_chunk(&self.log_path, from, finished).0, from)
                } else {
                    (bytes, offset)
                };
                if bytes.is_empty() {
                    break;
                }
                skipped_total += skipped;
                offset = at + bytes.len() as u64;
                let chunk = OutputChunk {
                    offset: at,
                    skipped_bytes: skipped,
                    text: agent_runner_protocol::tail::chunk_text(&bytes),
                };
                self.show(hosts, &chunk, &mut tallies).await;
                tracing::debug!(offset, usd = ?tallies.iter().map(|t| t.usd).collect::<Vec<_>>(), "usage watch: chunk shown");
                if stopped.is_none() {
                    stopped = self.crossed(&tallies);
                    if let Some(reached) = &stopped {
                        self.stop(reached, &tallies);
                        if let Some(tx) = crossed.take() {
                            let _ = tx.send(());
                        }
                    }
                }
                chunks += 1;
                if finished && chunks >= LAST_CHUNKS {
                    break;
                }
            }
            // What the provider billed counts whether or not the log grew.
            if stopped.is_none() {
                stopped = self.crossed(&tallies);
                if let Some(reached) = &stopped {
                    self.stop(reached, &tallies);
                    if let Some(tx) = crossed.take() {
                        let _ = tx.send(());
                    }
                }
            }
            if finished {
                break;
            }
        }
        if skipped_total > 0 {
            self.events.emit(Event::OutputWatchSkipped {
                round_num: self.ctx.round_num,
                skipped_bytes: skipped_total,
                max_behind_bytes: MAX_BEHIND,
            });
        }
        let best = tallies
            .iter()
            .enumerate()
            .filter(|(_, t)| t.usage.is_some())
            .max_by(|(_, a), (_, b)| a.usd.total_cmp(&b.usd));
        Watched {
            usage: best.and_then(|(i, t)| {
                let usage = t.usage.clone()?;
                Some((self.hooks[i].name.clone(), usage, t.usd))
            }),
        }
    }

    /// Shows `chunk` to every watch whose host runs, adding what each reports to its tally.
    async fn show(&self, hosts: &mut HostManager, chunk: &OutputChunk, tallies: &mut [Tally]) {
        for (hook, tally) in self.hooks.iter().zip(tallies.iter_mut()) {
            if !hosts.is_running(hook) {
                continue;
            }
            let params = ObserveParams {
                hook: hook.name.clone(),
                ctx: self.ctx.clone(),
                chunk: chunk.clone(),
            };
            let params = serde_json::to_value(params).expect("params serialize");
            let Ok(Some(value)) = hosts.call(hook, params).await else {
                continue;
            };
            let observation = match decode_observation(value) {
                Ok(Some(observation)) => observation,
                Ok(None) => continue,
                Err(err) => {
                    hosts.invalid_result(hook, format!("observe result {err}"));
                    continue;
                }
            };
            for call in observation.usage {
                let model = call.model.as_deref().unwrap_or("unknown");
                let (usd, _) = self.table.cost(model, tokens(&call), call.cost_usd);
                tally.usd += usd;
                tally.calls += 1;
                tally.usage = Some(add(tally.usage.take(), call));
            }
        }
    }

    /// The cap reached by the spend the watches report (the most any one reports: they
    /// count the same calls), if one is.
    fn crossed(&self, tallies: &[Tally]) -> Option<Reached> {
        let billed = self.billed();
        let usd = tallies.iter().map(|t| t.usd).fold(billed.usd, f64::max);
        let tokens = tallies
            .iter()
            .map(Tally::tokens)
            .max()
            .unwrap_or(0)
            .max(billed.tokens.total());
        self.cap.reached(usd, tokens)
    }

    /// What the key broker read the provider billing so far, priced (nothing without one).
    fn billed(&self) -> crate::budget::billed::Priced {
        let billed = self
            .broker
            .as_ref()
            .map(|b| b.billed_now())
            .unwrap_or_default();
        billed.priced(&self.table)
    }

    /// Records `budget_round_stopped` for `reached`.
    fn stop(&self, reached: &Reached, tallies: &[Tally]) {
        let billed = self.billed();
        let top = tallies
            .iter()
            .enumerate()
            .max_by(|(_, a), (_, b)| a.usd.total_cmp(&b.usd));
        let (i, tally) = match top {
            Some((i, tally)) if tally.usd > billed.usd || billed.answers == 0 => (i, tally),
            _ => {
                self.events.emit(Event::BudgetRoundStopped {
                    round_num: self.ctx.round_num,
                    scope: reached.scope.to_owned(),
                    spent: reached.spent,
                    cap: reached.cap,
                    round_usd: billed.usd,
                    round_tokens: billed.tokens.total(),
                    calls: billed.answers,
                    hook: crate::budget::billed::BROKER_HOOK.to_owned(),
                });
                return;
            }
        };
        self.events.emit(Event::BudgetRoundStopped {
            round_num: self.ctx.round_num,
            scope: reached.scope.to_owned(),
            spent: reached.spent,
            cap: reached.cap,
            round_usd: tally.usd,
            round_tokens: tally.tokens(),
            calls: tally.calls,
            hook: self.hooks[i].name.to_string(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_end_after_a_newline_unless_a_line_fills_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("R1.log");
        std::fs::write(&log, b"one\ntwo\nthr").unwrap();
        assert_eq!(read_chunk(&log, 0, false), (b"one\ntwo\n".to_vec(), 11));
        assert_eq!(read_chunk(&log, 8, false).0, b"");
        assert_eq!(read_chunk(&log, 8, true).0, b"thr");
        std::fs::write(&log, vec![b'x'; MAX_CHUNK_BYTES + 5]).unwrap();
        assert_eq!(read_chunk(&log, 0, false).0.len(), MAX_CHUNK_BYTES);
        // A link the agent planted is not followed.
        let link = dir.path().join("R2.log");
        std::os::unix::fs::symlink(&log, &link).unwrap();
        assert_eq!(read_chunk(&link, 0, true), (Vec::new(), 0));
    }
}
