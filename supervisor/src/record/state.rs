//! What persists between runs, under `state_dir` ([`crate::config::state_dir`]): the
//! project lock (`agent-runner.lock`), the
//! round counter (`state.json`) and the orphan stash record (`orphan-state.json`). State
//! files are written atomically (temp file + rename).

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::record::events::{Event, EventLog};

/// Name of the lock file in `state_dir`; it holds the holder's pid.
pub(crate) const LOCK_FILE: &str = "agent-runner.lock";
/// Name of the round counter file in `state_dir`.
pub(crate) const STATE_FILE: &str = "state.json";
/// Name of the orphan stash record in `state_dir`.
pub(crate) const ORPHAN_FILE: &str = "orphan-state.json";

/// The exclusive lock of one project: one supervisor (`serve` or `round`) at a time.
/// Released when dropped (or when the process dies: it is an `flock(2)`).
#[derive(Debug)]
pub(crate) struct ProjectLock {
    _lock: Flock<File>,
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
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
    /// Takes the lock of the project whose log dir is `state_dir` (created if missing) and
    /// records this process's pid in it.
    pub(crate) fn acquire(state_dir: &Path) -> Result<Self, LockError> {
        let path = state_dir.join(LOCK_FILE);
        let io_err = |source| LockError::Io {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(state_dir).map_err(io_err)?;
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

/// The pid of the process holding the project lock in `state_dir`, or `None` when nobody
/// holds it (the probe takes and releases the lock without writing to the file).
pub(crate) fn lock_holder(state_dir: &Path) -> Option<u32> {
    let file = File::open(state_dir.join(LOCK_FILE)).ok()?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(_free) => None,
        Err((mut file, _)) => {
            let mut pid = String::new();
            file.read_to_string(&mut pid).ok()?;
            pid.trim().parse().ok()
        }
    }
}

/// `state.json`: the last round number handed out (round numbers persist across restarts)
/// and how the last finished round ended (for the next round's context).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct RoundState {
    /// The last round number that started (0 before the first round).
    pub last_round: u64,
    /// The last round that finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<PreviousRound>,
}

/// How a finished round ended (`previous` in the round context).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PreviousRound {
    /// Its number.
    pub round_num: u64,
    /// The agent's exit code (`None` when a signal ended it).
    pub exit_code: Option<i32>,
    /// `agent_exit.exit_cause`.
    pub exit_cause: String,
    /// Wall time of the agent, seconds.
    pub duration_s: f64,
}

/// `orphan-state.json`: the last stash the supervisor made, by SHA (never `stash@{n}`).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct OrphanState {
    /// The stash commit's SHA.
    pub sha: String,
    /// The round that left the tree dirty.
    pub round_num: u64,
    /// When it was made (UTC, `YYYY-MM-DDTHH:MM:SS.mmmZ`).
    pub ts: String,
    /// Seconds since the Unix epoch when it was made (for the idempotency window).
    pub unix_s: u64,
}

/// Reads a JSON state file; a missing file is `Ok(None)`.
pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> io::Result<Option<T>> {
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
/// rename over the target. For state that must survive a power failure (the round counter,
/// the orphan record).
///
/// Errors: the directory cannot be created, or the file cannot be written or renamed.
pub(crate) fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    write_json(path, value, true)
}

/// Like [`write_json_atomic`] without the fsync: readers still see the old or the new file,
/// never a part, but a power failure may lose the update. For files rebuilt often from
/// other state (the round context, the record's summary), where an fsync would only add
/// milliseconds to every round.
///
/// Errors: as [`write_json_atomic`].
pub(crate) fn write_json_replace<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    write_json(path, value, false)
}

fn write_json<T: Serialize>(path: &Path, value: &T, sync: bool) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp: PathBuf = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let mut file = create_exclusive(&tmp)?;
    file.write_all(&serde_json::to_vec_pretty(value)?)?;
    file.write_all(b"\n")?;
    if sync {
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    } else {
        replace_unsynced(&tmp, path)
    }
}

/// Puts the new file `tmp` at `path`, for a file written without an fsync: readers see the
/// old bytes or the new, never a part. Where `path` exists, the two names are exchanged
/// (`renameat2(RENAME_EXCHANGE)`) and the old bytes, now at `tmp`, are unlinked: a plain
/// rename over an existing file makes ext4 (`auto_da_alloc`, its default) write the new
/// file's data out before the rename returns — 0.4–3 ms a file on a virtual disk,
/// several files a round (docs/performance.md, "Processes of one round"). What is given
/// up is only that heuristic's promise after a power failure (the file may then be empty
/// until it is written again), which a file rebuilt every round does not need. Where
/// `path` does not exist yet, or the file system cannot exchange (`EINVAL`), a plain
/// rename.
///
/// Errors: the rename fails; a directory stood at `path` (it is put back, as a plain rename
/// would have refused it). An `unlink` of the old bytes that fails is not an error (the
/// next write of this process removes the leftover first: [`create_exclusive`]).
fn replace_unsynced(tmp: &Path, path: &Path) -> io::Result<()> {
    use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
    let exchange = || renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RenameFlags::RENAME_EXCHANGE);
    match exchange() {
        Ok(()) => match std::fs::remove_file(tmp) {
            Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
                exchange()?;
                let _ = std::fs::remove_file(tmp);
                Err(e)
            }
            _ => Ok(()),
        },
        Err(nix::errno::Errno::ENOENT | nix::errno::Errno::EINVAL) => std::fs::rename(tmp, path),
        Err(e) => Err(e.into()),
    }
}

/// Creates `path` as a new file of this process: whatever is at that name (a leftover of
/// an earlier process with the same id, or a link the agent planted where a log dir inside
/// the tree takes temporary files) is removed first (`unlink` removes a link, never what
/// it names), then the file is created exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`): a
/// name that appears again in between fails the write (`AlreadyExists`) rather than being
/// followed (docs/security.md, "The supervisor is not the agent's deputy").
pub(crate) fn create_exclusive(path: &Path) -> io::Result<File> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(path)
}

/// Hands out the next round number and records it before the round starts, so a crash
/// mid-round never reuses a number.
pub(crate) fn next_round(state_dir: &Path) -> io::Result<u64> {
    let path = state_dir.join(STATE_FILE);
    let mut state: RoundState = read_json(&path)?.unwrap_or_default();
    state.last_round += 1;
    write_json_atomic(&path, &state)?;
    Ok(state.last_round)
}

/// Makes sure `state.json` never hands out a number already used: when a round log in
/// `rounds_dir` (`R<N>-….log`) shows a higher round than `last_round` (the state was lost
/// or deleted), the counter is raised to it. Returns `(was, now)` when it raised it, so
/// the caller records it (`round_state_recovered`); `None` when the counter was right.
///
/// Errors: `state.json` is unreadable or cannot be written.
pub(crate) fn recover_round_counter(
    state_dir: &Path,
    rounds_dir: &Path,
) -> io::Result<Option<(u64, u64)>> {
    let path = state_dir.join(STATE_FILE);
    let mut state: RoundState = read_json(&path)?.unwrap_or_default();
    let logged = std::fs::read_dir(rounds_dir)
        .into_iter()
        .flatten()
        .filter_map(|e| crate::record::retention::round_of(&e.ok()?.path()))
        .max()
        .unwrap_or(0);
    if logged <= state.last_round {
        return Ok(None);
    }
    let was = state.last_round;
    state.last_round = logged;
    write_json_atomic(&path, &state)?;
    Ok(Some((was, logged)))
}

/// Records how the round that just finished ended.
pub(crate) fn record_round_end(state_dir: &Path, previous: PreviousRound) -> io::Result<()> {
    let path = state_dir.join(STATE_FILE);
    let mut state: RoundState = read_json(&path)?.unwrap_or_default();
    state.previous = Some(previous);
    write_json_atomic(&path, &state)
}

/// `state.json` as it is (the default before the first round).
pub(crate) fn read_round_state(state_dir: &Path) -> io::Result<RoundState> {
    Ok(read_json(&state_dir.join(STATE_FILE))?.unwrap_or_default())
}

/// The number the next round will get, without claiming it.
pub(crate) fn peek_next_round(state_dir: &Path) -> io::Result<u64> {
    let state: RoundState = read_json(&state_dir.join(STATE_FILE))?.unwrap_or_default();
    Ok(state.last_round + 1)
}

/// Readies the record of `config`'s project at boot, with the project lock held: a record
/// left in `log_dir` by an earlier layout (`state.json`, `orphan-state.json`,
/// `events-*.jsonl`) is moved into `state_dir` when `state_dir` has none of its own
/// (`state_migrated`), and a round counter behind the round logs is raised to them
/// (`round_state_recovered`), so round numbers never restart silently. Failures are
/// recorded as warnings; the round counter is checked again when the round starts.
pub(crate) fn prepare(config: &Config, events: &EventLog) {
    let (log_dir, state_dir) = (&config.runtime.log_dir, &config.runtime.state_dir);
    if log_dir != state_dir {
        match adopt_old_layout(log_dir, state_dir) {
            Ok(moved) if moved.is_empty() => {}
            Ok(files) => events.emit(Event::StateMigrated {
                from: log_dir.clone(),
                to: state_dir.clone(),
                files,
            }),
            Err(e) => tracing::warn!(
                "cannot move the record from {} to {}: {e}",
                log_dir.display(),
                state_dir.display()
            ),
        }
    }
    match recover_round_counter(state_dir, &log_dir.join("rounds")) {
        Ok(None) => {}
        Ok(Some((was, now))) => {
            tracing::warn!(
                "state.json said round {was} but round logs reach R{now}; numbering resumes at R{}",
                now + 1
            );
            events.emit(Event::RoundStateRecovered {
                last_round_was: was,
                last_round: now,
                source: "round logs".to_owned(),
                state_file: state_dir.join(STATE_FILE),
            });
        }
        Err(e) => tracing::warn!("cannot check the round counter: {e}"),
    }
}

/// Moves `state.json`, `orphan-state.json` and `events-*.jsonl` (regular files) from
/// `log_dir` to `state_dir` when `state_dir` holds none of them yet; returns the names
/// moved.
fn adopt_old_layout(log_dir: &Path, state_dir: &Path) -> std::io::Result<Vec<String>> {
    let Ok(entries) = std::fs::read_dir(log_dir) else {
        return Ok(Vec::new());
    };
    // Regular files only: a symbolic link there is ours, a month file's link to the
    // record (`EventLog::linked_in`), never an old record.
    let names: Vec<String> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            e.file_type().ok()?.is_file().then_some(())?;
            e.file_name().into_string().ok()
        })
        .filter(|n| {
            n == STATE_FILE
                || n == ORPHAN_FILE
                || (n.starts_with("events-") && n.ends_with(".jsonl"))
        })
        .collect();
    if names.is_empty() || state_dir.join(STATE_FILE).exists() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(state_dir)?;
    let mut moved = Vec::new();
    for name in names {
        let (from, to) = (log_dir.join(&name), state_dir.join(&name));
        if to.exists() {
            continue; // written by this boot already; the old file stays where it is
        }
        if std::fs::rename(&from, &to).is_err() {
            std::fs::copy(&from, &to)?;
            std::fs::remove_file(&from)?;
        }
        moved.push(name);
    }
    Ok(moved)
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

    #[test]
    fn a_lost_counter_resumes_after_the_highest_logged_round() {
        let state = tempfile::tempdir().unwrap();
        let rounds = tempfile::tempdir().unwrap();
        assert_eq!(
            recover_round_counter(state.path(), rounds.path()).unwrap(),
            None
        );
        std::fs::write(rounds.path().join("R7-20261130T120000.log"), "").unwrap();
        std::fs::write(rounds.path().join("notes.txt"), "").unwrap();
        assert_eq!(
            recover_round_counter(state.path(), rounds.path()).unwrap(),
            Some((0, 7))
        );
        assert_eq!(next_round(state.path()).unwrap(), 8);
        assert_eq!(
            recover_round_counter(state.path(), rounds.path()).unwrap(),
            None
        );
    }

    #[test]
    fn a_link_planted_at_the_temporary_name_is_replaced_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("bashrc");
        std::fs::write(&target, "the operator's\n").unwrap();
        let view = dir.path().join("logs/.status.json");
        std::fs::create_dir_all(view.parent().unwrap()).unwrap();
        let tmp = dir
            .path()
            .join(format!("logs/..status.json.tmp-{}", std::process::id()));
        // The control: creating through the planted name as before writes the target.
        std::os::unix::fs::symlink(&target, &tmp).unwrap();
        File::create(&tmp).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "");
        std::fs::write(&target, "the operator's\n").unwrap();
        write_json_replace(&view, &serde_json::json!({"round": 1})).unwrap();
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "the operator's\n"
        );
        assert!(std::fs::read_to_string(&view)
            .unwrap()
            .contains("\"round\": 1"));
        assert!(!tmp.exists());
    }

    #[test]
    fn a_view_replaced_again_holds_the_new_bytes_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let view = dir.path().join("status.json");
        let tmp = dir
            .path()
            .join(format!(".status.json.tmp-{}", std::process::id()));
        for round in 1..=3 {
            write_json_replace(&view, &serde_json::json!({ "round": round })).unwrap();
            let now: serde_json::Value = read_json(&view).unwrap().unwrap();
            assert_eq!(now["round"], round);
            assert!(!tmp.exists(), "round {round} left {}", tmp.display());
        }

        // A link planted at the view's own name is replaced by the file, never written through.
        let target = dir.path().join("bashrc");
        std::fs::write(&target, "the operator's\n").unwrap();
        std::fs::remove_file(&view).unwrap();
        std::os::unix::fs::symlink(&target, &view).unwrap();
        write_json_replace(&view, &serde_json::json!({ "round": 4 })).unwrap();
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "the operator's\n"
        );
        assert!(!view.symlink_metadata().unwrap().is_symlink());
        assert!(!tmp.exists());

        // A directory at the name is refused, as a rename over it is, and left where it was.
        std::fs::remove_file(&view).unwrap();
        std::fs::create_dir(&view).unwrap();
        let err = write_json_replace(&view, &serde_json::json!({ "round": 5 })).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
        assert!(view.is_dir());
        assert!(!tmp.exists());
    }
}
