//! `events --kind K[,K2] [--window N | --tail] [--since TS]`: the operator's record as
//! JSON Lines on stdout, filtered by kind, across the monthly files in chronological
//! order (the reference system's verb; its exit codes: 2 bad arguments, 1 unreadable
//! file).
//!
//! - `--window N` (default 10): the last N matching events, then exit.
//! - `--since TS` (RFC 3339, e.g. `2026-11-29T17:00:00Z`, or a date): every matching
//!   event with `ts >= TS`, then exit (or follow, with `--tail`). A client resumes by
//!   passing the last `ts` it saw: that event may repeat, none is lost.
//! - `--tail`: follow the record (month rollover included) until Ctrl-C, exit 0.
//!
//! Torn or non-JSON lines are skipped and counted on stderr, never fatal.

use std::collections::BTreeSet;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::exit::{self, CliError};
use crate::operator::event_read::{event_files, read_file, Batch};
use crate::runtime::events::Recorded;

/// Matching events printed when neither `--window`, `--since` nor `--tail` is given.
pub const DEFAULT_WINDOW: usize = 10;

/// How often `--tail` looks for new lines.
pub const TAIL_POLL: Duration = Duration::from_millis(250);

/// A validated query.
#[derive(Clone, Debug)]
pub struct Query {
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
    pub fn new(
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

    fn matches(&self, event: &Recorded) -> bool {
        self.kinds.contains(event.kind())
            && self.since.is_none_or(|since| {
                event
                    .ts()
                    .and_then(|ts| humantime::parse_rfc3339_weak(ts).ok())
                    .is_some_and(|ts| ts >= since)
            })
    }
}

fn parse_since(raw: &str) -> Option<SystemTime> {
    let raw = raw.trim();
    if raw.len() == 10 {
        return humantime::parse_rfc3339_weak(&format!("{raw}T00:00:00Z")).ok();
    }
    humantime::parse_rfc3339_weak(raw.trim_end_matches('Z')).ok()
}

/// Runs the query over the record in `state_dir`; returns the exit code.
///
/// Errors (exit 1): a file or the directory cannot be read.
pub async fn run(state_dir: &Path, query: &Query) -> Result<u8, CliError> {
    let unreadable = |path: &Path, e: io::Error| {
        CliError::failure(format!("cannot read {}: {e}", path.display()))
    };
    let files = event_files(state_dir).map_err(|e| unreadable(state_dir, e))?;
    let mut out = io::stdout().lock();
    let mut skipped = 0;
    if query.window.is_some() || query.since.is_some() {
        let mut matching = Vec::new();
        for path in &files {
            let mut batch = Batch::default();
            read_file(path, &mut batch).map_err(|e| unreadable(path, e))?;
            skipped += batch.skipped;
            matching.extend(batch.events.into_iter().filter(|e| query.matches(e)));
        }
        let from = query.window.map_or(0, |n| matching.len().saturating_sub(n));
        for event in &matching[from..] {
            if writeln!(out, "{event}").is_err() {
                return Ok(exit::OK);
            }
        }
    }
    report_skipped(skipped);
    if !query.follow {
        return Ok(exit::OK);
    }
    let _ = out.flush();
    drop(out);
    follow(state_dir, files.last().cloned(), query).await
}

fn report_skipped(skipped: usize) {
    if skipped > 0 {
        eprintln!("agent-runner events: skipped {skipped} torn or non-JSON line(s)");
    }
}

/// Prints matching events appended after this call until Ctrl-C.
async fn follow(state_dir: &Path, newest: Option<PathBuf>, query: &Query) -> Result<u8, CliError> {
    // Position: the newest file and how far into it we have read (its end: only new
    // events are printed).
    let mut current = newest.clone();
    let mut offset = match &newest {
        Some(path) => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        None => 0,
    };
    let mut skipped = 0;
    let mut interrupted = crate::operator::interrupt::interrupt_signal()?;
    loop {
        tokio::select! {
            _ = interrupted.recv() => {
                report_skipped(skipped);
                return Ok(exit::OK);
            }
            _ = tokio::time::sleep(TAIL_POLL) => {}
        }
        let files = event_files(state_dir)
            .map_err(|e| CliError::failure(format!("cannot read {}: {e}", state_dir.display())))?;
        let from = current.clone();
        for path in files
            .iter()
            .filter(|p| from.as_ref().is_none_or(|c| *p >= c))
        {
            if current.as_ref() != Some(path) {
                current = Some(path.clone());
                offset = 0;
            }
            let mut batch = Batch::default();
            offset += read_from(path, offset, &mut batch)
                .map_err(|e| CliError::failure(format!("cannot read {}: {e}", path.display())))?;
            skipped += batch.skipped;
            let mut out = io::stdout().lock();
            for event in batch.events.iter().filter(|e| query.matches(e)) {
                if writeln!(out, "{event}").is_err() {
                    return Ok(exit::OK);
                }
            }
            let _ = out.flush();
        }
    }
}

/// Reads the whole lines of `path` from `offset` into `batch`; returns how many bytes
/// they took (a line still being written is left for the next poll).
fn read_from(path: &Path, offset: u64, batch: &mut Batch) -> io::Result<u64> {
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    batch.push_lines(&bytes[..complete]);
    Ok(complete as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorded(line: serde_json::Value) -> Recorded {
        Recorded::from_line(line).unwrap()
    }

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
        assert!(q.matches(&recorded(
            json!({"ts": "2026-11-29T17:00:00.000Z", "event": "b"})
        )));
        assert!(!q.matches(&recorded(
            json!({"ts": "2026-11-29T16:59:59.999Z", "event": "a"})
        )));
        assert!(!q.matches(&recorded(
            json!({"ts": "2026-11-29T18:00:00.000Z", "event": "c"})
        )));
        assert!(Query::new("a", None, false, Some("2026-11-29")).is_ok());
    }
}
