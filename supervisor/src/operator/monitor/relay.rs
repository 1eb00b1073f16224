//! `monitor --host ALIAS --mode events`: another machine's record, relayed as JSON Lines
//! over the user's own `ssh` (the system OpenSSH client with the user's config, keys and
//! agent; no SSH library in this process).
//!
//! The remote runs `agent-runner events --tail --kind <kinds> [--since TS]`. When the link
//! drops, the relay reconnects with `--since` set to the last `ts` it printed: the remote
//! replays from that instant (`events` follows from exactly where its history read
//! stopped), and lines already printed with that same `ts` are dropped, so nothing is lost
//! and nothing repeats. Each drop is a `monitor_remote_blip` in the local record; after
//! `[monitor] remote_failure_tolerance_s` without a working link the relay records
//! `monitor_remote_giveup` and exits 1. ssh runs in its own process group, killed when the
//! relay ends.

use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::exit::{self, CliError};
use crate::record::events::{Event, EventLog};

/// Waits before reconnect attempt 1, 2, …; the last value repeats.
pub(crate) const BACKOFF_S: [u64; 6] = [1, 2, 4, 8, 16, 30];

/// Lines of ssh's stderr kept for the blip and give-up events.
const STDERR_LINES: usize = 20;

/// What to relay from where.
#[derive(Clone, Debug)]
pub(crate) struct RelayOptions {
    /// The ssh alias (or `user@host`).
    pub host: String,
    /// Kinds to relay, comma-separated; every kind (`*`) when unset.
    pub kind: Option<String>,
    /// The config path on the remote; unset: the remote's `./agent-runner.toml`.
    pub remote_config: Option<String>,
    /// How long to keep reconnecting.
    pub tolerance: Duration,
    /// Where the relay's own events go (the local project's state dir, docs/operations.md
    /// "State dir").
    pub state_dir: PathBuf,
}

/// A shell word for the remote's shell (ssh hands the command line to it).
fn sh_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// The argv: `ssh <host> -- <remote command>`.
pub(crate) fn ssh_argv(options: &RelayOptions, since: Option<&str>) -> Vec<String> {
    let mut remote = vec!["agent-runner".to_owned()];
    if let Some(config) = &options.remote_config {
        remote.extend(["--config".to_owned(), config.clone()]);
    }
    remote.extend(["events", "--tail", "--kind"].map(str::to_owned));
    remote.push(
        options
            .kind
            .clone()
            .unwrap_or_else(|| crate::operator::event_query::ALL_KINDS.to_owned()),
    );
    if let Some(ts) = since {
        remote.extend(["--since".to_owned(), ts.to_owned()]);
    }
    let command: Vec<String> = remote.iter().map(|w| sh_quote(w)).collect();
    vec![
        "ssh".into(),
        "-o".into(),
        "BatchMode=yes".into(),
        "-o".into(),
        "ServerAliveInterval=10".into(),
        "-o".into(),
        "ServerAliveCountMax=3".into(),
        options.host.clone(),
        "--".into(),
        command.join(" "),
    ]
}

/// Where the relay is: the last `ts` printed and the lines printed with it.
#[derive(Default)]
struct Position {
    ts: Option<String>,
    at_ts: HashSet<String>,
}

impl Position {
    /// Whether `line` is new; records it if so. Lines without a `ts` always pass.
    fn admit(&mut self, line: &str) -> bool {
        let ts = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v["ts"].as_str().map(str::to_owned));
        let Some(ts) = ts else {
            return true;
        };
        match self.ts.as_deref().map(|last| ts.as_str().cmp(last)) {
            Some(std::cmp::Ordering::Less) => false,
            Some(std::cmp::Ordering::Equal) => self.at_ts.insert(line.to_owned()),
            _ => {
                self.ts = Some(ts);
                self.at_ts = HashSet::from([line.to_owned()]);
                true
            }
        }
    }
}

/// Relays until Ctrl-C/SIGTERM (exit 0) or until the link stays down for the tolerance
/// (exit 1).
///
/// Errors: `ssh` cannot be started at all (exit 1).
pub(crate) async fn run(options: &RelayOptions) -> Result<u8, CliError> {
    let events = EventLog::new(&options.state_dir);
    let mut position = Position::default();
    let mut attempt = 0u32;
    let mut down_since: Option<Instant> = None;
    let mut interrupted = crate::operator::interrupt::interrupt_signal()?;
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| CliError::failure(e.to_string()))?;
    loop {
        let argv = ssh_argv(options, position.ts.as_deref());
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| CliError::failure(format!("cannot run ssh: {e}")))?;
        let pgid = child.id().map(|p| nix::unistd::Pid::from_raw(p as i32));
        let stderr = child.stderr.take().map(BufReader::new);
        let stderr_tail = tokio::spawn(async move {
            let mut tail = VecDeque::new();
            if let Some(mut reader) = stderr {
                let mut line = String::new();
                while reader.read_line(&mut line).await.unwrap_or(0) > 0 {
                    if tail.len() == STDERR_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line.trim_end().to_owned());
                    line.clear();
                }
            }
            Vec::from(tail).join("\n")
        });
        let mut lines = child.stdout.take().map(|s| BufReader::new(s).lines());
        let stop = loop {
            let next = async {
                match lines.as_mut() {
                    Some(l) => l.next_line().await,
                    None => Ok(None),
                }
            };
            tokio::select! {
                _ = interrupted.recv() => break true,
                _ = terminate.recv() => break true,
                line = next => match line {
                    Ok(Some(line)) => {
                        attempt = 0;
                        down_since = None;
                        if position.admit(&line) {
                            let mut out = std::io::stdout().lock();
                            if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                                break true;
                            }
                        }
                    }
                    _ => break false,
                },
            }
        };
        if let Some(pgid) = pgid {
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGTERM);
        }
        let status = child.wait().await.ok();
        let error = stderr_tail.await.unwrap_or_default();
        if stop {
            return Ok(exit::OK);
        }
        let returncode = status.and_then(|s| s.code());
        let since = *down_since.get_or_insert_with(Instant::now);
        attempt += 1;
        if since.elapsed() >= options.tolerance {
            events.emit(Event::MonitorRemoteGiveup {
                host: options.host.clone(),
                returncode,
                total_attempts: attempt,
                total_elapsed_s: (since.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            });
            return Err(CliError::failure(format!(
                "monitor --host {}: the link stayed down for {} s (remote_failure_tolerance_s); last ssh error: {error}",
                options.host,
                options.tolerance.as_secs()
            )));
        }
        events.emit(Event::MonitorRemoteBlip {
            host: options.host.clone(),
            returncode,
            error: error.clone(),
            attempt,
        });
        eprintln!(
            "agent-runner monitor: ssh to {} ended (exit {}); reconnecting",
            options.host,
            returncode.map_or("signal".to_owned(), |c| c.to_string())
        );
        let wait = BACKOFF_S[(attempt as usize - 1).min(BACKOFF_S.len() - 1)];
        let left = options.tolerance.saturating_sub(since.elapsed());
        tokio::select! {
            _ = interrupted.recv() => return Ok(exit::OK),
            _ = terminate.recv() => return Ok(exit::OK),
            _ = tokio::time::sleep(Duration::from_secs(wait).min(left)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resumes_without_repeats_and_quotes_the_remote_command() {
        let mut p = Position::default();
        let a = r#"{"ts":"2026-11-29T16:00:00.000Z","event":"a"}"#;
        let b = r#"{"ts":"2026-11-29T16:00:00.000Z","event":"b"}"#;
        let c = r#"{"ts":"2026-11-29T16:00:01.000Z","event":"c"}"#;
        assert!(p.admit(a) && p.admit(b));
        // The reconnect replays from the last ts: a and b again, then c.
        assert!(!p.admit(a) && !p.admit(b));
        assert!(p.admit(c));
        assert!(!p.admit(a));
        let argv = ssh_argv(
            &RelayOptions {
                host: "box".into(),
                kind: None,
                remote_config: Some("/srv/it's/agent-runner.toml".into()),
                tolerance: Duration::from_secs(90),
                state_dir: PathBuf::from("/l"),
            },
            Some("2026-11-29T16:00:01.000Z"),
        );
        assert_eq!(argv[7], "box");
        assert_eq!(
            argv[9],
            r#"'agent-runner' '--config' '/srv/it'\''s/agent-runner.toml' 'events' '--tail' '--kind' '*' '--since' '2026-11-29T16:00:01.000Z'"#
        );
    }
}
