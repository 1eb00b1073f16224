//! `events --kind K[,K2] [--window N | --tail] [--since TS]`: the operator's record as
//! JSON Lines on stdout, filtered by kind, across the monthly files in chronological
//! order (the reference system's verb; its exit codes: 2 bad arguments, 1 unreadable
//! file).
//!
//! - `--window N` (default 10): the last N matching events, then exit.
//! - `--since TS` (RFC 3339, e.g. `2026-11-29T17:00:00Z`, or a date): every matching
//!   event with `ts >= TS`, then exit (or follow, with `--tail`). A client resumes by
//!   passing the last `ts` it saw: that event may repeat, none is lost.
//! - `--kind '*'` (ours): every kind.
//! - `--tail`: follow the record (month rollover included) until Ctrl-C or until stdout's
//!   reader is gone (a closed pipe, a hung-up socket), exit 0. With
//!   `--since`, following goes on from exactly where the history read stopped, so no event
//!   is lost between the two (what `monitor --host` relies on to resume without a gap).
//!
//! Torn or non-JSON lines are skipped and counted on stderr, never fatal.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::exit::{self, CliError};
use crate::record::events::read::{Backwards, Forward, Head};

/// Matching events printed when neither `--window`, `--since` nor `--tail` is given.
pub(crate) const DEFAULT_WINDOW: usize = 10;

/// `--kind '*'` matches every kind (ours: what `monitor --host` asks the remote for).
pub(crate) const ALL_KINDS: &str = "*";

/// How often `--tail` looks for new lines.
pub(crate) const TAIL_POLL: Duration = Duration::from_millis(250);

/// A validated query.
#[derive(Clone, Debug)]
pub(crate) struct Query {
    kinds: BTreeSet<String>,
    window: Option<usize>,
    follow: bool,
    since: Option<SystemTime>,
}

/// A usage error (exit 2) with `message`.
fn usage(message: String) -> CliError {
    CliError {
        code: exit::USAGE,
        message,
    }
}

impl Query {
    /// Validates the arguments of the verb.
    ///
    /// Errors (exit 2): no kind, `--window` with `--tail` or `--since`, a window of 0, a
    /// `--since` that is not a timestamp.
    pub(crate) fn new(
        kind: &str,
        window: Option<usize>,
        follow: bool,
        since: Option<&str>,
    ) -> Result<Query, CliError> {
        let kinds: BTreeSet<String> = kind
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect();
        if kinds.is_empty() {
            return Err(usage(
                "events: --kind needs at least one event kind, e.g. --kind round_start,round_end"
                    .into(),
            ));
        }
        if window.is_some() && follow {
            return Err(usage(
                "events: --window and --tail are mutually exclusive".into(),
            ));
        }
        if window.is_some() && since.is_some() {
            return Err(usage(
                "events: --window and --since are mutually exclusive".into(),
            ));
        }
        if window == Some(0) {
            return Err(usage("events: --window expects a positive number".into()));
        }
        let since = since
            .map(|raw| {
                parse_since(raw).ok_or_else(|| {
                    usage(format!(
                        "events: --since expects an RFC 3339 timestamp such as 2026-11-29T17:00:00Z (or a date, 2026-11-29), got {raw:?}"
                    ))
                })
            })
            .transpose()?;
        let window = match (window, follow, since) {
            (Some(n), _, _) => Some(n),
            (None, false, None) => Some(DEFAULT_WINDOW),
            _ => None,
        };
        Ok(Query {
            kinds,
            window,
            follow,
            since,
        })
    }

    fn matches(&self, head: &Head) -> bool {
        (self.kinds.contains(head.event.as_str()) || self.kinds.contains(ALL_KINDS))
            && self
                .since
                .is_none_or(|since| head.time().is_some_and(|ts| ts >= since))
    }
}

fn parse_since(raw: &str) -> Option<SystemTime> {
    let raw = raw.trim();
    if raw.len() == 10 {
        return humantime::parse_rfc3339_weak(&format!("{raw}T00:00:00Z")).ok();
    }
    humantime::parse_rfc3339_weak(raw.trim_end_matches('Z')).ok()
}

/// Runs the query over the record in `state_dir`; returns the exit code. `--window N` reads
/// the record backwards and stops at the N-th match; `--since` reads forwards from the
/// first line at or after the timestamp; `--tail` reads what is appended. Matching lines
/// are printed as written (they are checked to be JSON objects, not re-encoded); memory
/// stays bounded by the window, whatever the record's size.
///
/// Errors (exit 1): a file or the directory cannot be read.
pub(crate) async fn run(state_dir: &Path, query: &Query) -> Result<u8, CliError> {
    let unreadable = |e: io::Error| CliError::failure(format!("cannot read {e}"));
    let mut out = io::stdout().lock();
    if let Some(window) = query.window {
        let mut back = Backwards::open(state_dir).map_err(unreadable)?;
        let mut matching: Vec<Vec<u8>> = Vec::with_capacity(window);
        while matching.len() < window {
            let Some(found) = back.next_event().map_err(unreadable)? else {
                break;
            };
            if query.matches(&found.head) {
                matching.push(found.line.to_vec());
            }
        }
        report_skipped(back.skipped());
        for line in matching.iter().rev() {
            if !print_line(&mut out, line) {
                break;
            }
        }
        return Ok(exit::OK);
    }
    let mut reader = match query.since {
        Some(since) => Forward::since(state_dir, since),
        None => Forward::at_end(state_dir),
    }
    .map_err(unreadable)?;
    if query.since.is_some() {
        while let Some(found) = reader.next_event().map_err(unreadable)? {
            if query.matches(&found.head) && !print_line(&mut out, found.line) {
                return Ok(exit::OK);
            }
        }
    }
    let _ = out.flush();
    drop(out);
    if !query.follow {
        report_skipped(reader.skipped());
        return Ok(exit::OK);
    }
    follow(state_dir, reader, query).await
}

/// Writes `line` and its newline; `false` when stdout is closed (the reader went away).
fn print_line(out: &mut impl Write, line: &[u8]) -> bool {
    out.write_all(line)
        .and_then(|_| out.write_all(b"\n"))
        .is_ok()
}

fn report_skipped(skipped: usize) {
    if skipped > 0 {
        eprintln!("agent-runner events: skipped {skipped} torn or non-JSON line(s)");
    }
}

/// Prints matching events appended after `reader`'s position until Ctrl-C, or until
/// stdout's reader is gone (checked every [`TAIL_POLL`], written to or not).
async fn follow(state_dir: &Path, mut reader: Forward, query: &Query) -> Result<u8, CliError> {
    let unreadable = |e: io::Error| CliError::failure(format!("cannot read {e}"));
    let mut interrupted = crate::operator::interrupt::interrupt_signal()?;
    loop {
        tokio::select! {
            _ = interrupted.recv() => {
                report_skipped(reader.skipped());
                return Ok(exit::OK);
            }
            _ = tokio::time::sleep(TAIL_POLL) => {}
        }
        if crate::operator::interrupt::stdout_closed() {
            report_skipped(reader.skipped());
            return Ok(exit::OK);
        }
        reader.refresh(state_dir).map_err(unreadable)?;
        let mut out = io::stdout().lock();
        while let Some(found) = reader.next_event().map_err(unreadable)? {
            if query.matches(&found.head) && !print_line(&mut out, found.line) {
                return Ok(exit::OK);
            }
        }
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::events::read::head;

    #[test]
    fn argument_rules() {
        assert!(Query::new("", None, false, None).is_err());
        assert_eq!(
            Query::new("a", Some(3), true, None).unwrap_err().code,
            exit::USAGE
        );
        assert_eq!(
            Query::new("a", Some(3), false, Some("2026-01-01"))
                .unwrap_err()
                .code,
            exit::USAGE
        );
        assert_eq!(
            Query::new("a", None, false, Some("yesterday"))
                .unwrap_err()
                .code,
            exit::USAGE
        );
        assert_eq!(
            Query::new("a", None, false, None).unwrap().window,
            Some(DEFAULT_WINDOW)
        );
        let q = Query::new("a, b", None, false, Some("2026-11-29T17:00:00Z")).unwrap();
        let matches = |line: &str| q.matches(&head(line.as_bytes()).unwrap());
        assert!(matches(
            r#"{"ts": "2026-11-29T17:00:00.000Z", "event": "b"}"#
        ));
        assert!(!matches(
            r#"{"ts": "2026-11-29T16:59:59.999Z", "event": "a"}"#
        ));
        assert!(!matches(
            r#"{"ts": "2026-11-29T18:00:00.000Z", "event": "c"}"#
        ));
        assert!(Query::new("a", None, false, Some("2026-11-29")).is_ok());
        let every = Query::new(ALL_KINDS, None, true, None).unwrap();
        assert!(every.matches(&head(br#"{"event": "anything"}"#).unwrap()));
    }
}
