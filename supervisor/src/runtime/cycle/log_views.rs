//! Files in `log_dir` that scripts written against the reference system read
//! (docs/reference-system.md, "Views in log_dir"): `status.json` (how the last round
//! ended), `serve.pid` (while `serve` runs) and `agent-runner.lock.holder` (while a
//! supervisor holds the project lock).
//!
//! They are views, never the source of truth: the lock is the `flock(2)` on
//! `<state_dir>/agent-runner.lock` ([`crate::record::state`]) and the round counter is
//! `<state_dir>/state.json`; nothing of ours reads these files back to decide anything.
//! Writing one can fail (a read-only `log_dir`): that is logged and the supervisor goes on.
//! The JSON views are replaced atomically but not fsync'd ([`write_json_replace`]): a
//! power failure may leave the previous one or an empty file, which the next boot or round
//! writes again.
//! Each is written through the log dir as it resolved at boot ([`HeldDir`]): a link the
//! agent planted at the log dir or above it is refused, never written through.

use crate::held_dir::HeldDir;
use crate::record::events::timestamp;
use crate::record::state::{create_exclusive, write_json_replace};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// `<log_dir>/status.json`: written after each round ends.
pub(crate) const STATUS_FILE: &str = "status.json";
/// `<log_dir>/serve.pid`: the pid of `serve`, a decimal line, while it runs.
pub(crate) const SERVE_PID_FILE: &str = "serve.pid";
/// `<log_dir>/agent-runner.lock.holder`: who holds the project lock, while it is held.
pub(crate) const HOLDER_FILE: &str = "agent-runner.lock.holder";

/// A view file that is removed when dropped (the process ended its role).
#[derive(Debug)]
pub(crate) struct ViewFile {
    dir: HeldDir,
    name: &'static str,
}

impl Drop for ViewFile {
    fn drop(&mut self) {
        if let Ok(open) = self.dir.open() {
            let _ = std::fs::remove_file(open.at().join(self.name));
        }
    }
}

/// `agent-runner.lock.holder`'s shape: the holder's pid, when it took the lock (UTC, ms)
/// and its command line (at most 80 characters), as the reference writes it.
#[derive(Serialize)]
struct Holder {
    pid: u32,
    started_at: String,
    cmdline: String,
}

/// Writes `agent-runner.lock.holder` for this process (the caller holds the lock); the
/// file goes when the returned guard drops. `None` (logged) when it cannot be written.
pub(crate) fn hold(log_dir: &HeldDir) -> Option<ViewFile> {
    let cmdline: String = std::env::args().collect::<Vec<_>>().join(" ");
    let holder = Holder {
        pid: std::process::id(),
        started_at: timestamp(SystemTime::now()),
        cmdline: cmdline.chars().take(80).collect(),
    };
    guarded(log_dir, HOLDER_FILE, |path| {
        write_json_replace(path, &holder)
    })
}

/// Writes `serve.pid` for this process, created anew (a link left at its name, by an
/// agent of an earlier run where the log dir lies in the tree, is removed, never written
/// through: [`create_exclusive`]); the file goes when the returned guard drops.
pub(crate) fn serve_pid(log_dir: &HeldDir) -> Option<ViewFile> {
    guarded(log_dir, SERVE_PID_FILE, |path| {
        create_exclusive(path)?.write_all(format!("{}\n", std::process::id()).as_bytes())
    })
}

/// [`write_view`], and a guard that removes the file when it drops.
fn guarded(
    log_dir: &HeldDir,
    name: &'static str,
    write: impl FnOnce(&Path) -> std::io::Result<()>,
) -> Option<ViewFile> {
    write_view(log_dir, name, write).then(|| ViewFile {
        dir: log_dir.clone(),
        name,
    })
}

/// Writes `<log_dir>/<name>` with `write` (given the path inside the held directory);
/// whether it was written (a failure is logged).
fn write_view(
    log_dir: &HeldDir,
    name: &str,
    write: impl FnOnce(&Path) -> std::io::Result<()>,
) -> bool {
    match log_dir.open().and_then(|dir| write(&dir.at().join(name))) {
        Ok(()) => true,
        Err(e) => {
            let path = log_dir.shown().join(name);
            tracing::warn!("cannot write {} (a view for scripts): {e}", path.display());
            false
        }
    }
}

/// `status.json`'s shape, the reference's keys: the round that just ended and how. Absent
/// values are left out, as the reference does. `running` is always false: the file is
/// written between rounds.
#[derive(Debug, Serialize)]
pub(crate) struct StatusView {
    /// The round that ended.
    pub round_num: u64,
    /// Always false (written after the round).
    pub running: bool,
    /// When it ended (UTC, ms).
    pub last_completed_at: String,
    /// The agent's exit code; absent when a signal ended it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_exit_code: Option<i32>,
    /// The agent's wall time, seconds.
    pub last_duration_s: f64,
    /// The round's phase; absent without phases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_phase: Option<String>,
    /// Always 0 (the reference's field; phases follow the round number here).
    pub phase_index: u64,
}

/// Writes `status.json` after round `round_num` ended.
pub(crate) fn write_status(
    log_dir: &HeldDir,
    round_num: u64,
    exit_code: Option<i32>,
    duration_s: f64,
    phase: Option<&str>,
) {
    let status = StatusView {
        round_num,
        running: false,
        last_completed_at: timestamp(SystemTime::now()),
        last_exit_code: exit_code,
        last_duration_s: duration_s,
        current_phase: phase.map(str::to_owned),
        phase_index: 0,
    };
    write_view(log_dir, STATUS_FILE, |path| {
        write_json_replace(path, &status)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_are_written_and_the_guarded_ones_removed() {
        let dir = tempfile::tempdir().unwrap();
        let log_dir = dir.path().join("logs");
        let held = HeldDir::resolve(&log_dir);
        let holder = hold(&held).expect("holder written");
        let pid = serve_pid(&held).expect("pid written");
        let text = std::fs::read_to_string(log_dir.join(HOLDER_FILE)).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["pid"], std::process::id());
        assert_eq!(
            std::fs::read_to_string(log_dir.join(SERVE_PID_FILE)).unwrap(),
            format!("{}\n", std::process::id())
        );
        write_status(&held, 3, None, 1.5, Some("build"));
        let status: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(log_dir.join(STATUS_FILE)).unwrap())
                .unwrap();
        assert_eq!(status["round_num"], 3);
        assert_eq!(status["current_phase"], "build");
        assert!(status.get("last_exit_code").is_none(), "{status}");
        drop((holder, pid));
        assert!(!log_dir.join(HOLDER_FILE).exists());
        assert!(!log_dir.join(SERVE_PID_FILE).exists());
        assert!(log_dir.join(STATUS_FILE).exists());
    }

    #[test]
    fn a_log_dir_replaced_by_a_link_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let (log_dir, home) = (dir.path().join("logs"), dir.path().join("home"));
        std::fs::create_dir_all(&home).unwrap();
        let held = HeldDir::resolve(&log_dir);
        write_status(&held, 1, Some(0), 1.0, None);
        std::fs::rename(&log_dir, dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&home, &log_dir).unwrap();
        write_status(&held, 2, Some(0), 1.0, None);
        assert!(hold(&held).is_none());
        assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0);
        // Control: by its path, the log dir now leads into `home`.
        std::fs::write(log_dir.join(STATUS_FILE), "{}").unwrap();
        assert!(home.join(STATUS_FILE).exists());
    }
}
