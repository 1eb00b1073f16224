//! Reading the operator's record back ([`crate::runtime::events`] writes it): the monthly files of
//! a log dir in chronological order, whole or only their tail. A line that is torn, not
//! JSON, or not an object with a string `event` is skipped and counted, never fatal; a kind
//! this version does not know is kept (as [`Recorded`] with no typed event).
//! Reading never creates or changes anything.

use serde_json::Value;

use crate::runtime::events::Recorded;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Events read, and how many lines were skipped as torn or not JSON.
#[derive(Debug, Default)]
pub struct Batch {
    /// The events, oldest first.
    pub events: Vec<Recorded>,
    /// Lines skipped.
    pub skipped: usize,
}

impl Batch {
    /// Parses the whole lines of `text` into this batch. A last line without its newline
    /// is still being written and is left out (not counted).
    pub fn push_lines(&mut self, text: &[u8]) {
        let complete = match text.iter().rposition(|b| *b == b'\n') {
            Some(end) => &text[..end],
            None => return,
        };
        for line in complete.split(|b| *b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(Recorded::from_line)
            {
                Some(event) => self.events.push(event),
                None => self.skipped += 1,
            }
        }
    }
}

/// The event files of `state_dir` (`events-YYYY-MM.jsonl`), oldest month first; empty when
/// the directory does not exist.
///
/// Errors: the directory exists but cannot be listed.
pub fn event_files(state_dir: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(state_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("events-") && n.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Every event of `path`, appended to `batch`.
///
/// Errors: the file cannot be opened or read.
pub fn read_file(path: &Path, batch: &mut Batch) -> io::Result<()> {
    let bytes = std::fs::read(path)?;
    batch.push_lines(&bytes);
    Ok(())
}

/// The most recent events of `state_dir`, reading at most about `max_bytes` from the end of
/// the newest files (so a years-long record costs the same as a fresh one). The first,
/// possibly partial, line of a truncated read is dropped, not counted.
///
/// Errors: a file or the directory cannot be read.
pub fn tail(state_dir: &Path, max_bytes: u64) -> io::Result<Batch> {
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut budget = max_bytes;
    for path in event_files(state_dir)?.iter().rev() {
        if budget == 0 {
            break;
        }
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let start = len.saturating_sub(budget);
        // From one byte earlier: if that byte is a newline, the first line is whole.
        file.seek(SeekFrom::Start(start.saturating_sub(1)))?;
        let mut bytes = Vec::with_capacity((len - start + 1) as usize);
        file.read_to_end(&mut bytes)?;
        budget = budget.saturating_sub(len - start);
        if start > 0 {
            let cut = bytes
                .iter()
                .position(|b| *b == b'\n')
                .map_or(bytes.len(), |i| i + 1);
            bytes.drain(..cut);
        }
        chunks.push(bytes);
    }
    let mut batch = Batch::default();
    for chunk in chunks.iter().rev() {
        batch.push_lines(chunk);
    }
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_torn_and_foreign_lines_and_reads_months_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("events-2026-11.jsonl"),
            "{\"ts\":\"2026-11-01T00:00:00.000Z\",\"event\":\"b\"}\nnot json\n[1]\n{\"ts\":\"x\",\"ev",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("events-2026-10.jsonl"),
            "{\"ts\":\"2026-10-01T00:00:00.000Z\",\"event\":\"a\"}\n{\"torn\n",
        )
        .unwrap();
        let mut batch = Batch::default();
        for f in event_files(dir.path()).unwrap() {
            read_file(&f, &mut batch).unwrap();
        }
        let kinds: Vec<_> = batch.events.iter().map(|e| e.kind()).collect();
        assert_eq!(kinds, ["a", "b"]);
        assert_eq!(batch.skipped, 3);

        let recent = tail(dir.path(), 75).unwrap();
        assert_eq!(recent.events.len(), 1);
        assert_eq!(recent.events[0].kind(), "b");
        assert_eq!(recent.skipped, 2);
        assert!(event_files(&dir.path().join("missing")).unwrap().is_empty());
    }
}
