//! Result grace (docs/configuration.md `max_grace_after_result_s`): an agent that printed
//! its result (`[agent] terminal_marker` appeared in the round log) but is still running
//! `max_grace_after_result_s` later is ended — unless a child of it is still at work (one
//! whose command line matches no `grace_kill_ignore_patterns`), in which case it is left
//! to its budget and `round_grace_extended` is recorded once.
//!
//! The marker is found by a plain byte-substring search over the log as it grows; nothing
//! of the agent's output is interpreted here. An agent that prints the marker early only
//! shortens its own round, as exiting would.
//!
//! The same watch ends a round whose CLI says it is stuck waiting ([`STALLS`], reviewed
//! data: codex's `Reconnecting... waiting for network`, which it prints for the whole
//! budget while its provider cannot be reached): once the CLI's words appear as often as
//! the table says, `agent_stalled` is recorded and the agent's process group gets its stop
//! signal, then SIGKILL after its grace — within seconds, not after the budget. The round
//! ends as a failed one (the agent's own exit status, or the signal), and the post-round
//! detectors read the words in its log (`network`: backed off as an outage). An agent
//! that prints the words only ends its own round.

use regex::Regex;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::record::events::{Event, EventLog, GraceChild};

/// How often the log is looked at.
pub(crate) const POLL: Duration = Duration::from_millis(500);

/// Most bytes read from the log per look (a fast writer is caught up over several looks).
const CHUNK: u64 = 1 << 20;

/// Children listed in each of `round_grace_extended`'s lists.
const MAX_LISTED: usize = 10;

/// Reviewed data: what a CLI prints while it waits for something that will not come
/// within the round, and how many times before the round is ended: `(cli, words, times)`.
/// codex 0.171 prints its line at each reconnect, the first a few seconds after a
/// connection is refused (tests/agent-clis/transcripts/codex/refused.log: four in 60 s);
/// the second one means its own retry failed too.
pub(crate) const STALLS: &[(&str, &str, usize)] = &[("codex", "waiting for network", 2)];

/// A CLI's stall words in a round ([`STALLS`]) and how its agent is ended on them.
#[derive(Debug)]
pub(crate) struct Stall {
    /// The CLI.
    pub cli: &'static str,
    /// Its words.
    pub words: &'static str,
    /// How many times they appear before the round ends.
    pub times: usize,
    /// The agent's stop signal and grace ([`crate::runtime::agent::cooperative`]).
    pub stop: crate::runtime::agent::cooperative::StopSignal,
}

impl Stall {
    /// The stall watch for a round of `cli`, ended with `stop`; `None` for a CLI without
    /// one.
    pub(crate) fn of(
        cli: Option<&str>,
        stop: crate::runtime::agent::cooperative::StopSignal,
    ) -> Option<Self> {
        let (cli, words, times) = STALLS.iter().find(|(c, _, _)| Some(*c) == cli)?;
        Some(Stall {
            cli,
            words,
            times: *times,
            stop,
        })
    }
}

/// The grace of one round.
#[derive(Debug)]
pub(crate) struct Grace {
    /// The bytes marking the result; empty: no result grace (the stall watch alone).
    pub marker: Vec<u8>,
    /// How long the agent may linger after it.
    pub after: Duration,
    /// Children whose command line matches one of these do not keep the agent alive.
    pub ignore: Vec<Regex>,
    /// The round log.
    pub log_path: PathBuf,
    /// Where the grace events go.
    pub events: EventLog,
    /// The round.
    pub round_num: u64,
    /// The CLI's stall words, if it has any.
    pub stall: Option<Stall>,
}

/// Counts the appearances of `needle` in a stream fed chunk by chunk.
#[derive(Debug, Default)]
struct Counter {
    seen: usize,
    carry: Vec<u8>,
}

impl Counter {
    /// Adds `chunk`; returns the appearances so far.
    fn feed(&mut self, needle: &[u8], chunk: &[u8]) -> usize {
        if needle.is_empty() {
            return 0;
        }
        let mut window = std::mem::take(&mut self.carry);
        window.extend_from_slice(chunk);
        let mut at = 0;
        while let Some(i) = window[at..].windows(needle.len()).position(|w| w == needle) {
            self.seen += 1;
            at += i + needle.len();
        }
        let keep = (needle.len() - 1).min(window.len() - at);
        self.carry = window[window.len() - keep..].to_vec();
        self.seen
    }
}

impl Grace {
    /// Returns when the agent `agent_pid` should be ended: its result was printed at
    /// least [`Grace::after`] ago and no child of it (other than ignored ones and the
    /// group guard, whose executable is `guard_exe`) is running. Never returns otherwise.
    ///
    /// A round of a CLI with stall words ([`Grace::stall`]) is ended here once they
    /// appeared often enough: its group gets the stop signal, then SIGKILL after the grace,
    /// and this never returns (the agent's exit ends the wait, as its own exit would).
    pub(crate) async fn due(&self, agent_pid: u32, guard_exe: Option<PathBuf>) {
        let mut offset = 0u64;
        let mut window: Vec<u8> = Vec::new();
        let mut seen_at: Option<Instant> = None;
        let mut extended = false;
        let mut stalls = Counter::default();
        loop {
            tokio::time::sleep(POLL).await;
            let watching_stall = self.stall.is_some();
            if seen_at.is_none() && (!self.marker.is_empty() || watching_stall) {
                if let Ok(chunk) = read_from(&self.log_path, offset) {
                    offset += chunk.len() as u64;
                    if let Some(stall) = &self.stall {
                        if stalls.feed(stall.words.as_bytes(), &chunk) >= stall.times {
                            self.end_stalled(stall, agent_pid).await;
                        }
                    }
                    if self.marker.is_empty() {
                        continue;
                    }
                    window.extend_from_slice(&chunk);
                    if contains(&window, &self.marker) {
                        seen_at = Some(Instant::now());
                    } else {
                        // Keep what could be the start of a marker split across looks.
                        let keep = self.marker.len().saturating_sub(1).min(window.len());
                        window.drain(..window.len() - keep);
                    }
                }
            }
            let Some(seen) = seen_at else { continue };
            if seen.elapsed() < self.after {
                continue;
            }
            let (live, ignored) = children(agent_pid, guard_exe.as_deref(), &self.ignore);
            if live.is_empty() {
                self.events.emit(Event::RoundGraceKill {
                    round_num: self.round_num,
                    grace_s: self.after.as_secs(),
                });
                return;
            }
            if !extended {
                extended = true;
                self.events.emit(Event::RoundGraceExtended {
                    round_num: self.round_num,
                    grace_s: self.after.as_secs(),
                    live_children: live.into_iter().take(MAX_LISTED).collect(),
                    ignored_children: ignored.into_iter().take(MAX_LISTED).collect(),
                });
            }
        }
    }
}

impl Grace {
    /// Records `agent_stalled` and ends the agent's process group `pgid` as the budget
    /// would: the stop signal, SIGKILL after the grace. Never returns.
    async fn end_stalled(&self, stall: &Stall, pgid: u32) -> ! {
        use nix::sys::signal::{killpg, Signal};
        use nix::unistd::Pid;
        self.events.emit(Event::AgentStalled {
            round_num: self.round_num,
            cli: stall.cli.to_owned(),
            words: stall.words.to_owned(),
            times: stall.times as u64,
        });
        let group = Pid::from_raw(pgid as i32);
        if group.as_raw() > 0 {
            let _ = killpg(group, stall.stop.signal);
            tokio::time::sleep(stall.stop.grace).await;
            let _ = killpg(group, Signal::SIGKILL);
        }
        std::future::pending().await
    }
}

fn read_from(path: &Path, offset: u64) -> std::io::Result<Vec<u8>> {
    let mut file = crate::tree_file::open_regular(path, crate::tree_file::Symlink::Refuse)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.take(CHUNK).read_to_end(&mut bytes)?;
    Ok(bytes)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// `pid`'s descendants, split into (live, ignored) by matching their command lines against
/// `ignore`; each is kept by its process name and pid only (docs/operations.md,
/// `round_grace_extended`). The group guard (a fork of the `plugin-host` launcher, whose
/// executable is `guard_exe`) is left out.
fn children(
    pid: u32,
    guard_exe: Option<&std::path::Path>,
    ignore: &[Regex],
) -> (Vec<GraceChild>, Vec<GraceChild>) {
    let mut live = Vec::new();
    let mut ignored = Vec::new();
    let mut stack = vec![pid];
    while let Some(parent) = stack.pop() {
        for child in crate::runtime::machine::processes::children_of(parent)
            .into_iter()
            .map(|(p, _)| p)
        {
            stack.push(child);
            let exe = std::fs::read_link(format!("/proc/{child}/exe")).ok();
            if exe.is_some() && exe.as_deref() == guard_exe {
                continue;
            }
            let cmdline = std::fs::read(format!("/proc/{child}/cmdline"))
                .map(|raw| {
                    raw.split(|b| *b == 0)
                        .filter(|w| !w.is_empty())
                        .map(|w| String::from_utf8_lossy(w).into_owned())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            if cmdline.is_empty() {
                continue; // gone, or a zombie
            }
            let name = std::fs::read_to_string(format!("/proc/{child}/comm"))
                .map(|c| c.trim_end_matches('\n').to_owned())
                .unwrap_or_default();
            let matched = ignore
                .iter()
                .find(|re| re.is_match(&cmdline))
                .map(|re| re.as_str().to_owned());
            let entry = GraceChild {
                name,
                pid: child,
                matched,
            };
            if entry.matched.is_some() {
                ignored.push(entry);
            } else {
                live.push(entry);
            }
        }
    }
    (live, ignored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appearances_are_counted_across_chunks() {
        let mut c = Counter::default();
        let needle = b"waiting for network";
        assert_eq!(
            c.feed(needle, b"{\"message\":\"Reconnecting... waiting for net"),
            0
        );
        assert_eq!(c.feed(needle, b"work\"}\n"), 1);
        assert_eq!(
            c.feed(needle, b"waiting for network waiting for network"),
            3
        );
        assert_eq!(c.feed(needle, b"nothing"), 3);
    }

    #[test]
    fn finds_a_marker_only_when_whole() {
        assert!(contains(b"x{\"type\":\"result\"}", b"\"type\":\"result\""));
        assert!(!contains(b"\"type\":\"resu", b"\"type\":\"result\""));
        assert!(!contains(b"anything", b""));
    }
}
