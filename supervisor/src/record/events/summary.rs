//! The summary `serve` and `round` keep beside the record, `<state_dir>/events-summary.json`, for the
//! questions reading backwards cannot answer cheaply: the newest rounds, `hook_failed` and
//! `agent_network_blip` events when they lie further back than a look reads ([`crate::record::events::recent`], which
//! also refreshes it for them).
//!
//! It is state rebuilt from the record, never a source of truth: `serve` refreshes it at
//! boot and after every attempt at a round, `round` when it ends (reading back only to the point the previous
//! summary covers, or, when it is missing, unreadable or stale, until its lists are full)
//! and writes it atomically. Readers never write it; they use it only when their own
//! backwards scan reaches the point it covers, so a summary that is missing, stale or
//! describes a record since rotated is simply not used (docs/operations.md "Reading the
//! record").

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io;
use std::path::Path;

use crate::record::state::{read_json, write_json_replace};

/// The summary's file name in `state_dir`.
pub(crate) const SUMMARY_FILE: &str = "events-summary.json";

/// This format's `version`; a summary of another version is rebuilt (2: with
/// `network_blips`).
pub(crate) const VERSION: u32 = 2;

/// A point in the record: the end of a line of one monthly file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Covers {
    /// The file's name (`events-YYYY-MM.jsonl`).
    pub file: String,
    /// The offset just past the line's newline, in bytes.
    pub end: u64,
}

impl Covers {
    /// The point `end` of `path`.
    pub(crate) fn of(path: &Path, end: u64) -> Covers {
        Covers {
            file: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            end,
        }
    }

    /// `other` is at or before this point (monthly files sort by name).
    pub(crate) fn includes(&self, other: &Covers) -> bool {
        other.file < self.file || (other.file == self.file && other.end <= self.end)
    }
}

/// The newest rounds' events, `hook_failed` and `agent_network_blip` events of the record
/// up to `covers`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Summary {
    /// [`VERSION`].
    pub version: u32,
    /// How far into the record this summary accounts for.
    pub covers: Covers,
    /// Every event of the newest `RECENT_ROUNDS` + 1 rounds, oldest first, as written.
    pub round_events: Vec<Value>,
    /// The newest `RECENT_HOOK_FAILURES` `hook_failed` events, oldest first, as written.
    pub hook_failures: Vec<Value>,
    /// The newest `RECENT_BLIPS` `agent_network_blip` events, oldest first, as written.
    pub network_blips: Vec<Value>,
}

/// The summary of `state_dir`, if there is one of this version whose covered point still
/// exists in the record (its file is at least that long).
pub(crate) fn load(state_dir: &Path) -> Option<Summary> {
    let summary: Summary = read_json(&state_dir.join(SUMMARY_FILE)).ok().flatten()?;
    let len = std::fs::metadata(state_dir.join(&summary.covers.file))
        .ok()?
        .len();
    (summary.version == VERSION && len >= summary.covers.end).then_some(summary)
}

/// Writes `summary` into `state_dir` atomically (no fsync: it is rebuilt when lost).
///
/// Errors: the file cannot be written.
pub(crate) fn write(state_dir: &Path, summary: &Summary) -> io::Result<()> {
    write_json_replace(&state_dir.join(SUMMARY_FILE), summary)
}
