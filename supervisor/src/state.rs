//! What persists between runs, under `log_dir`: the project lock (`agent-runner.lock`), the
//! round counter (`state.json`) and the orphan stash record (`orphan-state.json`). State
//! files are written atomically (temp file + rename).

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Name of the lock file in `log_dir`; it holds the holder's pid.
pub const LOCK_FILE: &str = "agent-runner.lock";
/// Name of the round counter file in `log_dir`.
pub const STATE_FILE: &str = "state.json";
/// Name of the orphan stash record in `log_dir`.
pub const ORPHAN_FILE: &str = "orphan-state.json";

/// The exclusive lock of one project: one supervisor (`serve` or `round`) at a time.
/// Released when dropped (or when the process dies: it is an `flock(2)`).
#[derive(Debug)]
pub struct ProjectLock {
    _lock: Flock<File>,
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error("another agent-runner (pid {pid}) already supervises this project (lock {path})")]
    Held {
        /// The holder's pid as recorded in the file (`?` if unreadable).
        pid: String,
        /// The lock file.
        path: String,
    },
    /// The lock file could not be opened or written.
    #[error("cannot use lock file {path}: {source}")]
    Io {
        /// The lock file.
        path: String,
        /// The I/O error.
        source: io::Error,
    },
}

impl ProjectLock {
    /// Takes the lock of the project whose log dir is `log_dir` (created if missing) and
    /// records this process's pid in it.
    pub fn acquire(log_dir: &Path) -> Result<Self, LockError> {
        let path = log_dir.join(LOCK_FILE);
        let io_err = |source| LockError::Io {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(log_dir).map_err(io_err)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_err)?;
        let mut lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((mut file, _)) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim();
                return Err(LockError::Held {
                    pid: if pid.is_empty() {
                        "?".into()
                    } else {
                        pid.into()
                    },
                    path: path.display().to_string(),
                });
            }
        };
        lock.set_len(0).map_err(io_err)?;
        lock.rewind().map_err(io_err)?;
        lock.write_all(format!("{}\n", std::process::id()).as_bytes())
            .map_err(io_err)?;
        Ok(ProjectLock { _lock: lock })
    }
}

/// `state.json`: the last round number handed out (round numbers persist across restarts).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RoundState {
    /// The last round number that started (0 before the first round).
    pub last_round: u64,
}

/// `orphan-state.json`: the last stash the supervisor made, by SHA (never `stash@{n}`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrphanState {
    /// The stash commit's SHA.
    pub sha: String,
    /// The round that left the tree dirty.
    pub round_num: u64,
    /// When it was made (UTC, [`crate::events::timestamp`] form).
    pub ts: String,
    /// Seconds since the Unix epoch when it was made (for the idempotency window).
    pub unix_s: u64,
}

/// Reads a JSON state file; a missing file is `Ok(None)`.
pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> io::Result<Option<T>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `value` as JSON to `path` atomically: a temp file in the same directory, fsync,
/// rename over the target.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp: PathBuf = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let mut file = File::create(&tmp)?;
    file.write_all(&serde_json::to_vec_pretty(value)?)?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Hands out the next round number and records it before the round starts, so a crash
/// mid-round never reuses a number.
pub fn next_round(log_dir: &Path) -> io::Result<u64> {
    let path = log_dir.join(STATE_FILE);
    let state: RoundState = read_json(&path)?.unwrap_or_default();
    let next = state.last_round + 1;
    write_json_atomic(&path, &RoundState { last_round: next })?;
    Ok(next)
}

/// The number the next round will get, without claiming it.
pub fn peek_next_round(log_dir: &Path) -> io::Result<u64> {
    let state: RoundState = read_json(&log_dir.join(STATE_FILE))?.unwrap_or_default();
    Ok(state.last_round + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_numbers_persist_and_lock_is_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(peek_next_round(dir.path()).unwrap(), 1);
        assert_eq!(next_round(dir.path()).unwrap(), 1);
        assert_eq!(next_round(dir.path()).unwrap(), 2);
        assert_eq!(peek_next_round(dir.path()).unwrap(), 3);

        let held = ProjectLock::acquire(dir.path()).unwrap();
        match ProjectLock::acquire(dir.path()) {
            Err(LockError::Held { pid, .. }) => assert_eq!(pid, std::process::id().to_string()),
            other => panic!("expected Held, got {other:?}"),
        }
        drop(held);
        ProjectLock::acquire(dir.path()).unwrap();
    }
}
