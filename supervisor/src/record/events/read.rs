//! Reading the operator's record back ([`crate::record::events`] writes it) without
//! loading it: the monthly files of a log dir read **backwards** in blocks from the newest
//! line ([`Backwards`]), or **forwards** from a position ([`Forward`]), one line at a time,
//! so a reader stops as soon as its question is answered and holds only the lines it keeps
//! (docs/operations.md "Reading the record").
//!
//! Lines are parsed lazily: finding a line costs a newline search; [`head`] keeps only
//! `ts`, `event` and `round_num`; the caller deserializes the lines it keeps. A line that is torn, not JSON, or not an object with a string `event` is skipped
//! and counted, never fatal. The last line of a file without its newline is still being
//! written: left out, not counted. Reading never creates or changes anything.
//!
//! Files that change under a reader: a file listed but gone when opened is passed over; a
//! file that shrinks while read backwards ends there (its older part is not read); a
//! forward reader that finds its file shorter than its position, or replaced by another
//! file of the same name, starts that file again from its beginning.

use serde::Deserialize;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::record::events::Recorded;

/// Bytes read per step when reading backwards.
pub(crate) const BLOCK_BYTES: usize = 64 * 1024;

/// The event files of `state_dir` (`events-YYYY-MM.jsonl`), oldest month first; empty when
/// the directory does not exist.
///
/// Errors: the directory exists but cannot be listed.
pub(crate) fn event_files(state_dir: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(state_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(at_path(state_dir)(e)),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| month_of(p).is_some())
        .collect();
    files.sort();
    Ok(files)
}

/// `YYYY-MM` of an event file's name, `None` for other names.
fn month_of(path: &Path) -> Option<&str> {
    path.file_name()?
        .to_str()?
        .strip_prefix("events-")?
        .strip_suffix(".jsonl")
}

/// The fields a reader selects on (the rest of the line is checked to be JSON, not kept).
#[derive(Debug, Deserialize)]
pub(crate) struct Head {
    /// `ts` (RFC 3339 UTC, milliseconds), when present and a string.
    #[serde(default)]
    pub ts: Option<String>,
    /// The event kind.
    pub event: String,
    /// `round_num`, when present and a number.
    #[serde(default)]
    pub round_num: Option<u64>,
}

impl Head {
    /// `ts` as a time, `None` when absent or not RFC 3339.
    pub(crate) fn time(&self) -> Option<SystemTime> {
        self.ts.as_deref().and_then(parse_ts)
    }
}

/// Parses an RFC 3339 timestamp as the record writes it (`2026-11-29T16:43:55.711Z`).
pub(crate) fn parse_ts(ts: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(ts.trim_end_matches('Z')).ok()
}

/// The head of `line`: `None` when the line is not a JSON object with a string `event`
/// (a torn or foreign line). The whole line is checked to be JSON; nothing but the head
/// is kept, so a line is parsed once to be selected and once more only if it is kept.
pub(crate) fn head(line: &[u8]) -> Option<Head> {
    serde_json::from_slice(line).ok()
}

/// `err` with the path it happened at, so the operator is told which file.
fn at_path(path: &Path) -> impl Fn(io::Error) -> io::Error + '_ {
    move |err| io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

/// `line` is blank (skipped silently, as a writer never produces one on purpose).
fn blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// A line found, with its place in the record.
#[derive(Debug)]
pub(crate) struct Found<'a> {
    /// The line, without its newline: valid JSON whose head is `head`.
    pub line: &'a [u8],
    /// Its head.
    pub head: Head,
    /// The file it is in.
    pub file: &'a Path,
    /// The offset just past its newline in that file.
    pub end: u64,
}

impl Found<'_> {
    /// The whole line as a [`Recorded`] event (its head was read to find it; this parses
    /// the rest); `None` when it is not one.
    pub(crate) fn recorded(&self) -> Option<Recorded> {
        serde_json::from_slice(self.line)
            .ok()
            .and_then(Recorded::from_line)
    }
}

/// A file being read backwards: bytes `pos..pos + buf.len()` of it are in `buf`, and
/// `buf[..end]` are the lines not yet returned (`buf[end - 1]` is a newline, or `end` is 0).
struct BackFile {
    file: File,
    pos: u64,
    buf: Vec<u8>,
    end: usize,
}

impl BackFile {
    /// Opens `path` and finds its last newline (a torn last line is left out). `None`:
    /// the file is gone or holds no whole line.
    fn open(path: &Path) -> io::Result<Option<BackFile>> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let pos = file.metadata()?.len();
        let mut back = BackFile {
            file,
            pos,
            buf: Vec::new(),
            end: 0,
        };
        loop {
            if let Some(i) = back.buf.iter().rposition(|b| *b == b'\n') {
                back.end = i + 1;
                return Ok(Some(back));
            }
            if !back.read_before()? {
                return Ok(None);
            }
        }
    }

    /// Reads the block before `pos` into the front of `buf`; `false` at the file's start,
    /// or when the file was cut shorter since it was opened (its older part is given up).
    fn read_before(&mut self) -> io::Result<bool> {
        if self.pos == 0 {
            return Ok(false);
        }
        let n = (BLOCK_BYTES as u64).min(self.pos) as usize;
        let at = self.pos - n as u64;
        let mut block = vec![0; n];
        let mut got = 0;
        while got < n {
            match self.file.read_at(&mut block[got..], at + got as u64) {
                Ok(0) => {
                    self.pos = 0;
                    self.end = 0;
                    return Ok(false);
                }
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.buf.truncate(self.end);
        self.buf.splice(0..0, block);
        self.pos = at;
        self.end += n;
        Ok(true)
    }

    /// The range in `buf` of the newest line not yet returned, and its end offset in the
    /// file; `None` when the file is exhausted.
    fn pop_line(&mut self) -> io::Result<Option<(usize, usize, u64)>> {
        loop {
            if self.end == 0 {
                return Ok(None);
            }
            let body_end = self.end - 1;
            match self.buf[..body_end].iter().rposition(|b| *b == b'\n') {
                Some(i) => {
                    let file_end = self.pos + self.end as u64;
                    self.end = i + 1;
                    return Ok(Some((i + 1, body_end, file_end)));
                }
                None if self.pos == 0 => {
                    let file_end = self.end as u64;
                    self.end = 0;
                    return Ok(Some((0, body_end, file_end)));
                }
                None => {
                    if !self.read_before()? {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

/// The record read newest line first, file by file, a block at a time.
pub(crate) struct Backwards {
    files: Vec<PathBuf>,
    /// Files not yet opened are `files[..next]`.
    next: usize,
    current: Option<BackFile>,
    skipped: usize,
}

impl Backwards {
    /// The record of `state_dir`, from its newest line (nothing when there is no record).
    ///
    /// Errors: the directory exists but cannot be listed.
    pub(crate) fn open(state_dir: &Path) -> io::Result<Backwards> {
        Ok(Backwards::over(event_files(state_dir)?))
    }

    /// `files` (oldest first), from the newest line of the last one.
    pub(crate) fn over(files: Vec<PathBuf>) -> Backwards {
        Backwards {
            next: files.len(),
            files,
            current: None,
            skipped: 0,
        }
    }

    /// Torn or non-JSON lines passed over so far.
    pub(crate) fn skipped(&self) -> usize {
        self.skipped
    }

    /// The next line, going back in time; `None` once the oldest file is read.
    ///
    /// Errors: a file cannot be opened or read.
    pub(crate) fn next_event(&mut self) -> io::Result<Option<Found<'_>>> {
        loop {
            if self.current.is_none() {
                if self.next == 0 {
                    return Ok(None);
                }
                self.next -= 1;
                let path = &self.files[self.next];
                self.current = BackFile::open(path).map_err(at_path(path))?;
                continue;
            }
            let Some(back) = self.current.as_mut() else {
                continue;
            };
            let popped = back.pop_line().map_err(at_path(&self.files[self.next]))?;
            let Some((from, to, end)) = popped else {
                self.current = None;
                continue;
            };
            if blank(&back.buf[from..to]) {
                continue;
            }
            let Some(head) = head(&back.buf[from..to]) else {
                self.skipped += 1;
                continue;
            };
            let line = &self.current.as_ref().expect("read above").buf[from..to];
            return Ok(Some(Found {
                line,
                head,
                file: &self.files[self.next],
                end,
            }));
        }
    }
}

/// The record read oldest line first from a position, across the monthly files. The
/// position only ever moves past whole lines, so a reader that stops at the end can be
/// asked again later ([`Forward::refresh`]) and goes on with what was appended.
pub(crate) struct Forward {
    files: Vec<PathBuf>,
    /// The file being read, an index into `files`.
    index: usize,
    /// Where in it the next line starts.
    offset: u64,
    /// The open file (`None` until opened at `offset`).
    reader: Option<BufReader<File>>,
    /// The file read last, by device and inode, to notice a file replaced under its name.
    identity: Option<(u64, u64)>,
    line: Vec<u8>,
    skipped: usize,
}

impl Forward {
    /// From byte `offset` of `files[index]` (oldest first).
    pub(crate) fn at(files: Vec<PathBuf>, index: usize, offset: u64) -> Forward {
        Forward {
            files,
            index,
            offset,
            reader: None,
            identity: None,
            line: Vec::new(),
            skipped: 0,
        }
    }

    /// From the end of the record of `state_dir`: only lines appended later are read.
    ///
    /// Errors: the directory or the newest file cannot be read.
    pub(crate) fn at_end(state_dir: &Path) -> io::Result<Forward> {
        let files = event_files(state_dir)?;
        let Some(newest) = files.last() else {
            return Ok(Forward::at(files, 0, 0));
        };
        let offset = match std::fs::metadata(newest) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(at_path(newest)(e)),
        };
        let index = files.len() - 1;
        Ok(Forward::at(files, index, offset))
    }

    /// From the first line with `ts >= since`, found by reading backwards only the file of
    /// `since`'s month (older files are passed over by name, newer ones read whole). The
    /// writer appends in time order (docs/operations.md "Reading the record"), so the lines
    /// before that point are all older.
    ///
    /// Errors: the directory or a file cannot be read.
    pub(crate) fn since(state_dir: &Path, since: SystemTime) -> io::Result<Forward> {
        let files = event_files(state_dir)?;
        let month = crate::record::events::timestamp(since)[..7].to_owned();
        let Some(index) = files
            .iter()
            .rposition(|p| month_of(p).is_some_and(|m| m <= month.as_str()))
        else {
            return Ok(Forward::at(files, 0, 0));
        };
        let mut back = Backwards::over(vec![files[index].clone()]);
        let mut offset = 0;
        while let Some(found) = back.next_event()? {
            if found.head.time().is_some_and(|t| t < since) {
                offset = found.end;
                break;
            }
        }
        Ok(Forward::at(files, index, offset))
    }

    /// Torn or non-JSON lines passed over so far.
    pub(crate) fn skipped(&self) -> usize {
        self.skipped
    }

    /// Lists the files of `state_dir` again, so months begun since are read too.
    ///
    /// Errors: the directory cannot be listed.
    pub(crate) fn refresh(&mut self, state_dir: &Path) -> io::Result<()> {
        let files = event_files(state_dir)?;
        let current = self.files.get(self.index).cloned();
        self.index = match &current {
            Some(current) => files
                .iter()
                .position(|p| p >= current)
                .unwrap_or(files.len()),
            None => 0,
        };
        if current.as_ref() != files.get(self.index) {
            self.offset = 0;
            self.identity = None;
        }
        self.files = files;
        self.reader = None;
        Ok(())
    }

    /// Opens the current file at `offset`; `false` when it is gone. A file shorter than
    /// `offset`, or another file than the one read before, is read from its start.
    fn open_current(&mut self) -> io::Result<bool> {
        let Some(path) = self.files.get(self.index) else {
            return Ok(false);
        };
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(at_path(path)(e)),
        };
        let meta = file.metadata().map_err(at_path(path))?;
        let identity = (meta.dev(), meta.ino());
        if meta.len() < self.offset || self.identity.is_some_and(|i| i != identity) {
            self.offset = 0;
        }
        self.identity = Some(identity);
        let mut reader = BufReader::with_capacity(BLOCK_BYTES, file);
        reader
            .seek(SeekFrom::Start(self.offset))
            .map_err(at_path(path))?;
        self.reader = Some(reader);
        Ok(true)
    }

    /// Moves to the next file, if there is one.
    fn next_file(&mut self) -> bool {
        if self.index + 1 >= self.files.len() {
            return false;
        }
        self.index += 1;
        self.offset = 0;
        self.identity = None;
        self.reader = None;
        true
    }

    /// The next whole line; `None` at the end of the record (a line still being written
    /// is left for a later call).
    ///
    /// Errors: a file cannot be opened or read.
    pub(crate) fn next_event(&mut self) -> io::Result<Option<Found<'_>>> {
        loop {
            if self.reader.is_none() && !self.open_current()? {
                if self.next_file() {
                    continue;
                }
                return Ok(None);
            }
            let Some(reader) = self.reader.as_mut() else {
                continue;
            };
            self.line.clear();
            let n = reader
                .read_until(b'\n', &mut self.line)
                .map_err(|e| at_path(&self.files[self.index])(e))?;
            if n == 0 || self.line.last() != Some(&b'\n') {
                // The end of this file, or a line still being written: not consumed.
                self.reader = None;
                if self.next_file() {
                    continue;
                }
                return Ok(None);
            }
            self.offset += n as u64;
            if blank(&self.line[..n - 1]) {
                continue;
            }
            let Some(head) = head(&self.line[..n - 1]) else {
                self.skipped += 1;
                continue;
            };
            return Ok(Some(Found {
                line: &self.line[..n - 1],
                head,
                file: &self.files[self.index],
                end: self.offset,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds_backwards(back: &mut Backwards) -> Vec<String> {
        let mut kinds = Vec::new();
        while let Some(found) = back.next_event().unwrap() {
            kinds.push(found.head.event);
        }
        kinds
    }

    fn kinds_forward(fwd: &mut Forward) -> Vec<String> {
        let mut kinds = Vec::new();
        while let Some(found) = fwd.next_event().unwrap() {
            kinds.push(found.head.event);
        }
        kinds
    }

    #[test]
    fn skips_torn_and_foreign_lines_across_months_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("events-2026-11.jsonl"),
            "{\"ts\":\"2026-11-01T00:00:00.000Z\",\"event\":\"b\"}\nnot json\n\n[1]\n{\"ts\":\"2026-11-02T00:00:00.000Z\",\"event\":\"c\"}\n{\"ts\":\"x\",\"ev",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("events-2026-10.jsonl"),
            "{\"ts\":\"2026-10-01T00:00:00.000Z\",\"event\":\"a\"}\n{\"torn\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("other.jsonl"), "{\"event\":\"z\"}\n").unwrap();
        let mut back = Backwards::open(dir.path()).unwrap();
        assert_eq!(kinds_backwards(&mut back), ["c", "b", "a"]);
        assert_eq!(back.skipped(), 3);
        let mut fwd = Forward::at(event_files(dir.path()).unwrap(), 0, 0);
        assert_eq!(kinds_forward(&mut fwd), ["a", "b", "c"]);
        assert_eq!(fwd.skipped(), 3);
        assert!(event_files(&dir.path().join("missing")).unwrap().is_empty());
        assert!(Backwards::open(&dir.path().join("missing"))
            .unwrap()
            .next_event()
            .unwrap()
            .is_none());
    }

    #[test]
    fn lines_longer_than_a_block_and_a_file_without_newline() {
        let dir = tempfile::tempdir().unwrap();
        let long = "x".repeat(BLOCK_BYTES * 2 + 7);
        let mut text = String::new();
        for i in 0..3 {
            text.push_str(&format!("{{\"event\":\"e{i}\",\"pad\":\"{long}\"}}\n"));
        }
        std::fs::write(dir.path().join("events-2026-11.jsonl"), &text).unwrap();
        std::fs::write(dir.path().join("events-2026-10.jsonl"), "{\"event\":\"torn").unwrap();
        let mut back = Backwards::open(dir.path()).unwrap();
        assert_eq!(kinds_backwards(&mut back), ["e2", "e1", "e0"]);
        assert_eq!(back.skipped(), 0);
    }

    #[test]
    fn since_starts_in_the_right_month_and_resumes_after_appends() {
        let dir = tempfile::tempdir().unwrap();
        let line = |ts: &str, kind: &str| format!("{{\"ts\":\"{ts}\",\"event\":\"{kind}\"}}\n");
        std::fs::write(
            dir.path().join("events-2026-09.jsonl"),
            line("2026-09-30T00:00:00.000Z", "sep"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("events-2026-10.jsonl"),
            line("2026-10-01T00:00:00.000Z", "early") + &line("2026-10-20T00:00:00.000Z", "late"),
        )
        .unwrap();
        let nov = dir.path().join("events-2026-11.jsonl");
        std::fs::write(&nov, line("2026-11-01T00:00:00.000Z", "nov")).unwrap();
        let at = |ts: &str| parse_ts(ts).unwrap();
        let mut fwd = Forward::since(dir.path(), at("2026-10-20T00:00:00Z")).unwrap();
        assert_eq!(kinds_forward(&mut fwd), ["late", "nov"]);
        let mut fwd = Forward::since(dir.path(), at("2026-10-25T00:00:00Z")).unwrap();
        assert_eq!(kinds_forward(&mut fwd), ["nov"]);
        let mut fwd = Forward::since(dir.path(), at("2020-01-01T00:00:00Z")).unwrap();
        assert_eq!(kinds_forward(&mut fwd), ["sep", "early", "late", "nov"]);

        // A line being written is not consumed until its newline arrives; a new month's
        // file is found by `refresh`.
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&nov).unwrap();
        f.write_all(b"{\"ts\":\"2026-11-02T00:00:00.000Z\",\"event\":\"par")
            .unwrap();
        assert!(fwd.next_event().unwrap().is_none());
        f.write_all(b"t\"}\n").unwrap();
        std::fs::write(
            dir.path().join("events-2026-12.jsonl"),
            line("2026-12-01T00:00:00.000Z", "dec"),
        )
        .unwrap();
        fwd.refresh(dir.path()).unwrap();
        assert_eq!(kinds_forward(&mut fwd), ["part", "dec"]);
    }

    #[test]
    fn files_rotated_while_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events-2026-11.jsonl");
        let mut text = String::new();
        for i in 0..5000 {
            text.push_str(&format!("{{\"event\":\"e{i}\"}}\n"));
        }
        std::fs::write(&path, &text).unwrap();
        // Cut short while read backwards: what was read is returned, the rest given up.
        let mut back = Backwards::open(dir.path()).unwrap();
        assert_eq!(back.next_event().unwrap().unwrap().head.event, "e4999");
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(10)
            .unwrap();
        let rest = kinds_backwards(&mut back);
        assert!(!rest.is_empty() && rest.len() < 4999, "{}", rest.len());
        assert_eq!(rest[0], "e4998");

        // Gone after it was listed: passed over.
        std::fs::write(&path, "{\"event\":\"a\"}\n").unwrap();
        let mut back = Backwards::open(dir.path()).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(back.next_event().unwrap().is_none());

        // Followed forwards, then truncated (copytruncate) or replaced (rename + create):
        // read again from the start of the new content.
        std::fs::write(&path, "{\"event\":\"a\"}\n{\"event\":\"b\"}\n").unwrap();
        let mut fwd = Forward::at_end(dir.path()).unwrap();
        assert!(fwd.next_event().unwrap().is_none());
        std::fs::write(&path, "{\"event\":\"c\"}\n").unwrap();
        fwd.refresh(dir.path()).unwrap();
        assert_eq!(kinds_forward(&mut fwd), ["c"]);
        std::fs::rename(&path, dir.path().join("old")).unwrap();
        std::fs::write(&path, "{\"event\":\"d\"}\n{\"event\":\"e\"}\n").unwrap();
        fwd.refresh(dir.path()).unwrap();
        assert_eq!(kinds_forward(&mut fwd), ["d", "e"]);
    }
}
