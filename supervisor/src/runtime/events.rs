//! The operator's record: `<log_dir>/events-YYYY-MM.jsonl` (UTC month), one JSON object per
//! line, `{"ts": "2026-11-29T16:43:55.711Z", "event": "<kind>", ...fields}` (the reference
//! system's format). Each line goes out in a single `write(2)` on an `O_APPEND` file, so
//! lines are never torn or interleaved, even with several writers.

use serde_json::{Map, Value};
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Appends events to the monthly files of one log dir.
#[derive(Clone, Debug)]
pub struct EventLog {
    dir: PathBuf,
}

/// A UTC timestamp with milliseconds, `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn timestamp(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

impl EventLog {
    /// Events of the project whose log dir is `dir` (created on first write).
    pub fn new(dir: &Path) -> Self {
        EventLog {
            dir: dir.to_owned(),
        }
    }

    /// The file holding events of the month of `ts` (a [`timestamp`]).
    pub fn file_for(&self, ts: &str) -> PathBuf {
        self.dir.join(format!("events-{}.jsonl", &ts[..7]))
    }

    /// Records one event of kind `event` with `fields` (an object; other values are
    /// recorded under `"value"`). A failure to write is logged, never raised: the record
    /// must not stop the loop.
    pub fn emit(&self, event: &str, fields: Value) {
        if let Err(err) = self.try_emit(event, fields) {
            tracing::error!(event, dir = %self.dir.display(), "cannot write event: {err}");
        }
    }

    fn try_emit(&self, event: &str, fields: Value) -> io::Result<()> {
        let ts = timestamp(SystemTime::now());
        let mut line = Map::new();
        line.insert("ts".into(), Value::String(ts.clone()));
        line.insert("event".into(), Value::String(event.to_owned()));
        match fields {
            Value::Object(map) => line.extend(map),
            Value::Null => {}
            other => {
                line.insert("value".into(), other);
            }
        }
        let mut bytes = serde_json::to_vec(&Value::Object(line))?;
        bytes.push(b'\n');
        std::fs::create_dir_all(&self.dir)?;
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.file_for(&ts))?;
        let written = file.write(&bytes)?;
        if written != bytes.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write: {written} of {} bytes", bytes.len()),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_whole_lines_with_ts_and_kind_first() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::new(&dir.path().join("logs"));
        log.emit("round_start", json!({"round_num": 1, "phase": null}));
        log.emit("round_end", json!({"round_num": 1}));
        let files: Vec<_> = std::fs::read_dir(dir.path().join("logs"))
            .unwrap()
            .collect();
        assert_eq!(files.len(), 1);
        let text = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event"], "round_start");
        assert_eq!(lines[1]["round_num"], 1);
        let ts = lines[0]["ts"].as_str().unwrap();
        assert!(ts.ends_with('Z') && ts.len() == 24, "{ts}");
        assert!(text.starts_with("{\"ts\":"), "{text}");
    }
}
