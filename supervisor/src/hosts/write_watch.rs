//! The state directory's total size bound: the supervisor side of a host's write limits
//! (docs/security.md "Write limits"; the per-file and TMPDIR bounds are the kernel's, see
//! `agent_runner_plugin_host::common::write_limits`).
//!
//! While a host runs, [`WriteWatch`] measures its state directory every
//! [`CHECK_INTERVAL`], each file, directory and link counted for at least
//! [`ENTRY_CHARGE_BYTES`](agent_runner_plugin_host::common::write_limits::ENTRY_CHARGE_BYTES) (so
//! inodes are bounded with the bytes), the walk stopping once past the limit. Once it
//! holds more than `state_max_mb`, the host's process group is
//! killed at once, `plugin_write_limit` is recorded (`host`, `dir`, `used_bytes`,
//! `limit_bytes`) and the breach is remembered, so the manager disables the host
//! (`plugin_disabled`) before its next call. The overshoot is what the host writes in one
//! interval plus one measurement, and never more than one file of `file_max_mb` per open
//! descriptor in flight: `RLIMIT_FSIZE` bounds each file.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::record::events::{Event, EventLog};
use agent_runner_plugin_host::common::write_limits::disk_usage_up_to;
use agent_runner_plugin_host::host::launch::kill_group;

/// How often a running host's state directory is measured.
pub(super) const CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// Measures one running host's state directory; stops when dropped.
pub(super) struct WriteWatch {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WriteWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What to watch.
pub(super) struct WatchSpec {
    /// The host's name (for the event).
    pub host: String,
    /// Its state directory.
    pub dir: PathBuf,
    /// Most bytes it may hold (`state_max_mb`).
    pub limit_bytes: u64,
    /// The host's process group (its pid).
    pub pgid: u32,
    /// Set once the limit was exceeded; shared with the manager, kept across restarts.
    pub breached: Arc<AtomicBool>,
}

impl WriteWatch {
    /// Starts measuring `spec.dir` (inside a tokio runtime).
    pub(super) fn start(spec: WatchSpec, events: EventLog) -> WriteWatch {
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(CHECK_INTERVAL).await;
                let dir = spec.dir.clone();
                let limit = spec.limit_bytes;
                let measure = move || disk_usage_up_to(&dir, limit);
                let Ok(used) = tokio::task::spawn_blocking(measure).await else {
                    return;
                };
                if used > spec.limit_bytes {
                    // Flagged before the kill, so whoever reaps the host knows who killed it
                    // (`super::cause::Bounds::signal_cause`).
                    spec.breached.store(true, Ordering::SeqCst);
                    let _ = kill_group(spec.pgid);
                    tracing::warn!(host = %spec.host, used, limit = spec.limit_bytes, "state directory over its limit; host killed");
                    events.emit(Event::PluginWriteLimit {
                        host: spec.host,
                        dir: "state".into(),
                        path: spec.dir,
                        used_bytes: used,
                        limit_bytes: spec.limit_bytes,
                    });
                    return;
                }
            }
        });
        WriteWatch { task }
    }
}
