//! The config file's path as the agent could have changed it (docs/security.md, "The
//! supervisor is not the agent's deputy"): each entry of the path and where it resolves,
//! with the `ctime` no process can set, and the rule that tells a change the agent could
//! have made ([`agent_could_have`]) — applied by the reload before every round
//! (`config_follow`) and, across boots, after each round (`round`,
//! [`crate::record::agent_changes`]).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// One run of the agent: from just before its spawn to when its round's processes were
/// gone, and whether the config file was read-only to it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AgentRan {
    /// Just before the spawn.
    pub from: SystemTime,
    /// When the round's processes were gone.
    pub to: SystemTime,
    /// Whether the config file was read-only to it
    /// ([`crate::runtime::agent::sandbox::AgentSandboxGate::config_read_only`]).
    pub config_read_only: bool,
}

/// One entry of the config's path: where, its device and inode, its `ctime` (seconds,
/// nanoseconds); `None` when it could not be looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    path: PathBuf,
    seen: Option<(u64, u64, i64, i64)>,
}

/// Each entry of `path` (every ancestor and itself, not following a final link) and of
/// the path it resolves to, as `lstat` sees it now.
pub(crate) fn path_entries(path: &Path) -> Vec<Entry> {
    let mut paths: Vec<PathBuf> = path.ancestors().map(Path::to_path_buf).collect();
    if let Ok(resolved) = std::fs::canonicalize(path) {
        paths.extend(resolved.ancestors().map(Path::to_path_buf));
    }
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter(|p| !p.as_os_str().is_empty())
        .map(|path| {
            let seen = std::fs::symlink_metadata(&path)
                .ok()
                .map(|m| (m.dev(), m.ino(), m.ctime(), m.ctime_nsec()));
            Entry { path, seen }
        })
        .collect()
}

/// The `ctime` of the file `path` resolves to.
pub(crate) fn file_ctime(path: &Path) -> Option<(i64, i64)> {
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.ctime(), m.ctime_nsec()))
}

/// Whether `ctime` lies within `ran` (widened by the kernel's clock granularity).
pub(crate) fn within(ctime: (i64, i64), ran: &AgentRan) -> bool {
    let Ok(seconds) = u64::try_from(ctime.0) else {
        return false;
    };
    let at = SystemTime::UNIX_EPOCH + Duration::new(seconds, ctime.1 as u32);
    let slack = Duration::from_millis(20);
    at + slack >= ran.from && at <= ran.to + slack
}

/// What makes the config file at `path` one the agent could have written, `None` when it
/// could not have: the path reaches into `work_dir` (an entry as given or resolved lies in
/// it) and, while the agent ran (`ran`), an entry that is not what `before` held was made,
/// or the file was written in place where it was not read-only to the agent.
pub(crate) fn agent_could_have(
    path: &Path,
    work_dir: &Path,
    before: &[Entry],
    ran: Option<AgentRan>,
) -> Option<String> {
    let ran = &ran?;
    let tree = std::fs::canonicalize(work_dir).unwrap_or_else(|_| work_dir.to_owned());
    let now = path_entries(path);
    let reaches = now
        .iter()
        .any(|e| e.path != tree && (e.path.starts_with(&tree) || e.path.starts_with(work_dir)));
    if !reaches {
        return None;
    }
    if !ran.config_read_only && file_ctime(path).is_some_and(|c| within(c, ran)) {
        return Some(format!(
            "{} was written while the agent ran",
            path.display()
        ));
    }
    now.iter()
        .filter(|e| {
            !before.iter().any(|b| {
                b.path == e.path && b.seen.map(|s| (s.0, s.1)) == e.seen.map(|s| (s.0, s.1))
            })
        })
        .find(|e| e.seen.is_some_and(|s| within((s.2, s.3), ran)))
        .map(|e| format!("{} was replaced while the agent ran", e.path.display()))
}
