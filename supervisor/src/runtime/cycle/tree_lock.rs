//! One supervisor per work tree, and one work tree per record, by the tree's identity (its
//! top directory's device and inode), not by its path or name (docs/operations.md, "State
//! dir").
//!
//! - The lock: besides the project lock in `state_dir` (keyed by path and project name),
//!   `serve` and `round` hold an `flock(2)` on the work dir itself, taken first at boot
//!   ([`lock`]). The same tree reached
//!   through a bind mount or a symlink-free second path is the same inode, so a second
//!   supervisor is refused however it names the tree.
//! - The record: `state_dir/tree-identity` names the tree whose record it is
//!   (`<dev> <ino> <path>`). Two projects with the same folder name under the default
//!   `~/.agent-runner/{project}/logs` get a record each
//!   ([`crate::config::state_dir::own_default`]); a supervisor of another tree whose
//!   *written* config leads to the same `state_dir` is refused (a config error) while
//!   that tree exists, rather than continuing its round numbers and events. A record
//!   whose tree is gone (moved, cloned anew) is taken over.

use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::config::state_dir::{identity, other_live_tree, IDENTITY_FILE};

/// The work dir's lock; released when dropped or when the process dies.
#[derive(Debug)]
pub(crate) struct TreeLock {
    _lock: Flock<File>,
}

/// Why the work tree cannot be supervised now.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TreeLockError {
    /// Another supervisor holds the work dir's lock, under whatever path.
    #[error("another agent-runner{} already supervises the work tree {work_dir} (perhaps through another path to it: a bind mount, a second config)", holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default())]
    Held {
        /// The work dir.
        work_dir: PathBuf,
        /// Its pid, when this config's project lock names it.
        holder: Option<u32>,
    },
    /// The record in `state_dir` belongs to another, existing work tree.
    #[error("{state_dir} holds the record of another work tree, {other}: the configs of two trees name the same log dir (or state dir): give each its own [runtime] log_dir, or leave it out (the default gives each tree its own)")]
    OtherTree {
        /// The state dir.
        state_dir: PathBuf,
        /// The tree whose record it is.
        other: PathBuf,
    },
    /// The work dir or the identity file could not be used.
    #[error("cannot lock the work tree {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> TreeLockError {
    let path = path.to_owned();
    move |source| TreeLockError::Io { path, source }
}

/// Locks `work_dir` itself (an `flock(2)` on the directory: the same inode whatever path
/// reaches it). Taken first thing at boot, right after the config is read and before
/// anything slow (the sandbox probe, the launcher check, git), so of two supervisors
/// started one after the other on one tree the first one wins, however loaded the machine
/// (issue 38: taken late, a `round` started a moment after a booting `serve` could lock
/// first). It writes nothing.
///
/// Errors: [`TreeLockError`]: `Held` (another supervisor holds it), `Io` (the work dir
/// cannot be opened, or the file system refuses the lock).
pub(crate) fn lock(work_dir: &Path) -> Result<TreeLock, TreeLockError> {
    let dir = File::open(work_dir).map_err(io_at(work_dir))?;
    match Flock::lock(dir, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(TreeLock { _lock: lock }),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Err(TreeLockError::Held {
            work_dir: work_dir.to_owned(),
            holder: None,
        }),
        Err((_, errno)) => Err(TreeLockError::Io {
            path: work_dir.to_owned(),
            source: errno.into(),
        }),
    }
}

/// Checks that `state_dir`'s record is `work_dir`'s (or nobody's) and names `work_dir` in
/// it. Call with the tree's [`lock`] and the project lock held.
///
/// Errors: [`TreeLockError`]: `OtherTree` (the record is another existing tree's), `Io`.
pub(crate) fn claim_record(work_dir: &Path, state_dir: &Path) -> Result<(), TreeLockError> {
    let ours = identity(work_dir).map_err(io_at(work_dir))?;
    if let Some(other) = other_live_tree(state_dir, work_dir) {
        return Err(TreeLockError::OtherTree {
            state_dir: state_dir.to_owned(),
            other,
        });
    }
    let file = state_dir.join(IDENTITY_FILE);
    let text = format!("{} {} {}\n", ours.0, ours.1, work_dir.display());
    if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&file, &text).map_err(io_at(&file))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_one_tree_and_the_tree_is_locked_once() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, state) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("s"),
        );
        for dir in [&a, &b, &state] {
            std::fs::create_dir(dir).unwrap();
        }
        let held = lock(&a).unwrap();
        claim_record(&a, &state).unwrap();
        assert!(matches!(lock(&a), Err(TreeLockError::Held { .. })));
        let b_held = lock(&b).unwrap();
        assert!(matches!(
            claim_record(&b, &state),
            Err(TreeLockError::OtherTree { .. })
        ));
        drop(held);
        // Tree a is gone: its record is taken over.
        std::fs::remove_dir(&a).unwrap();
        claim_record(&b, &state).unwrap();
        drop(b_held);
    }
}
