//! The memory loops of earlier `serve` runs (docs/operations.md, "Memory loops"): one
//! `mem_loop` ends a `serve` with exit 71, which the systemd unit restarts; the
//! [`PERSISTENT_AT`]-th within [`WINDOW`] ends it with exit 70 (`mem_loop_persistent`),
//! which it does not. A restart starts with fresh counters, so the loops are remembered in
//! `<state_dir>/mem-loops.json`: the Unix seconds of each, those older than the window
//! dropped at every write. The reference system counts `mem_loop` events of the last two
//! hours in its event log; a file of its own survives event retention and a record read
//! backwards for nothing else.

use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// The file in the state dir.
pub(crate) const FILE: &str = "mem-loops.json";

/// How long a memory loop counts toward [`PERSISTENT_AT`] (the reference system's 2 h: a
/// host healthy that long earns a restartable exit again).
pub(crate) const WINDOW: Duration = Duration::from_secs(7200);

/// The memory loop within [`WINDOW`] (this one included) that stops for good.
pub(crate) const PERSISTENT_AT: u32 = 3;

#[derive(Debug, Default, Serialize, Deserialize)]
struct MemLoops {
    /// When each loop within the window ended a `serve`, Unix seconds, oldest first.
    unix_s: Vec<u64>,
}

/// Records a memory loop ending a `serve` at `now` and returns how many fell within
/// [`WINDOW`], this one included. An unreadable file counts as none before this one (and is
/// replaced); a failed write is returned after the count, so the caller can still decide.
///
/// # Errors
/// The count, and why the file could not be written.
pub(crate) fn record(state_dir: &Path, now: SystemTime) -> Result<u32, (u32, io::Error)> {
    let path = state_dir.join(FILE);
    let secs = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    };
    let now_s = secs(now);
    let since = now_s.saturating_sub(WINDOW.as_secs());
    let mut loops: MemLoops = match super::state::read_json(&path) {
        Ok(found) => found.unwrap_or_default(),
        Err(e) => {
            tracing::warn!("{FILE} unreadable ({e}); counting memory loops afresh");
            MemLoops::default()
        }
    };
    loops.unix_s.retain(|t| *t > since && *t <= now_s);
    loops.unix_s.push(now_s);
    let count = u32::try_from(loops.unix_s.len()).unwrap_or(u32::MAX);
    match super::state::write_json_atomic(&path, &loops) {
        Ok(()) => Ok(count),
        Err(e) => Err((count, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_count_within_the_window_and_old_ones_age_out() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(record(dir.path(), t0).unwrap(), 1);
        assert_eq!(record(dir.path(), t0 + Duration::from_secs(60)).unwrap(), 2);
        // Two hours after the first, only the second is still within the window.
        let later = t0 + WINDOW + Duration::from_secs(1);
        assert_eq!(record(dir.path(), later).unwrap(), 2);
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert!(!text.contains("1000000,"), "{text}");
        // A damaged file counts as none before.
        std::fs::write(dir.path().join(FILE), "{not json").unwrap();
        assert_eq!(record(dir.path(), later).unwrap(), 1);
    }
}
