//! Following the operator's record as it grows: a position (the newest monthly file and the
//! bytes of it already read) advanced by [`Follower::poll`], which returns the whole lines
//! appended since (month rollover included; a line still being written waits for the next
//! poll). Used by `events --tail`, `monitor` and the live page. Never writes anything.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::operator::event_read::{event_files, Batch};

/// A reading position in one log dir's record.
#[derive(Clone, Debug)]
pub struct Follower {
    log_dir: PathBuf,
    current: Option<PathBuf>,
    offset: u64,
}

impl Follower {
    /// A follower that returns only events appended after this call.
    ///
    /// Errors: the log dir exists but cannot be listed, or its newest file cannot be read;
    /// the message starts with the path.
    pub fn at_end(log_dir: &Path) -> io::Result<Follower> {
        let current = event_files(log_dir).map_err(|e| naming(log_dir, e))?.pop();
        let offset = match &current {
            Some(path) => complete_len(path).map_err(|e| naming(path, e))?,
            None => 0,
        };
        Ok(Follower {
            log_dir: log_dir.to_owned(),
            current,
            offset,
        })
    }

    /// A follower that returns the whole record first, then what is appended.
    pub fn from_start(log_dir: &Path) -> Follower {
        Follower {
            log_dir: log_dir.to_owned(),
            current: None,
            offset: 0,
        }
    }

    /// The whole lines appended since the last poll (or since the start position).
    ///
    /// Errors: the directory or a file cannot be read; the message starts with its path.
    pub fn poll(&mut self) -> io::Result<Batch> {
        let mut batch = Batch::default();
        for path in event_files(&self.log_dir).map_err(|e| naming(&self.log_dir, e))? {
            if self.current.as_ref().is_some_and(|c| path < *c) {
                continue;
            }
            if self.current.as_ref() != Some(&path) {
                self.current = Some(path.clone());
                self.offset = 0;
            }
            self.offset +=
                read_from(&path, self.offset, &mut batch).map_err(|e| naming(&path, e))?;
        }
        Ok(batch)
    }
}

/// `e`, its message prefixed with `path`.
fn naming(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// The length of `path` up to and including its last newline.
fn complete_len(path: &Path) -> io::Result<u64> {
    let mut batch = Batch::default();
    read_from(path, 0, &mut batch)
}

/// Reads the whole lines of `path` from `offset` into `batch`; returns how many bytes
/// they took (a line still being written is left for the next poll).
pub fn read_from(path: &Path, offset: u64, batch: &mut Batch) -> io::Result<u64> {
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
    use std::io::Write;

    #[test]
    fn returns_each_whole_line_once_across_months() {
        let dir = tempfile::tempdir().unwrap();
        let oct = dir.path().join("events-2026-10.jsonl");
        std::fs::write(&oct, "{\"ts\":\"a\",\"event\":\"old\"}\n").unwrap();
        let mut at_end = Follower::at_end(dir.path()).unwrap();
        let mut all = Follower::from_start(dir.path());
        assert_eq!(all.poll().unwrap().events.len(), 1);
        assert!(at_end.poll().unwrap().events.is_empty());
        let mut f = std::fs::OpenOptions::new().append(true).open(&oct).unwrap();
        f.write_all(b"{\"ts\":\"b\",\"event\":\"x\"}\n{\"ts\":\"c\",\"ev")
            .unwrap();
        std::fs::write(
            dir.path().join("events-2026-11.jsonl"),
            "{\"ts\":\"d\",\"event\":\"y\"}\n",
        )
        .unwrap();
        let kinds = |b: Batch| {
            b.events
                .iter()
                .map(|e| e.kind().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(kinds(at_end.poll().unwrap()), ["x", "y"]);
        assert_eq!(kinds(all.poll().unwrap()), ["x", "y"]);
        assert!(at_end.poll().unwrap().events.is_empty());
    }
}
