//! One supervisor per work tree, and one work tree per record, by the tree's identity (its
//! top directory's device and inode), not by its path or name (docs/operations.md, "State
//! dir").
//!
//! - The lock: besides the project lock in `state_dir` (keyed by path and project name),
//!   `serve` and `round` hold an `flock(2)` on the work dir itself. The same tree reached
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
    #[error("another agent-runner already supervises the work tree {work_dir} (perhaps through another path to it: a bind mount, a second config)")]
    Held {
        /// The work dir.
        work_dir: PathBuf,
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

/// Checks that `state_dir`'s record is `work_dir`'s (or nobody's), locks `work_dir`, and
/// names `work_dir` in the record. Call with the project lock held.
///
/// Errors: [`TreeLockError`]: `Held` (another supervisor), `OtherTree` (the record is
/// another existing tree's), `Io`.
pub(crate) fn acquire(work_dir: &Path, state_dir: &Path) -> Result<TreeLock, TreeLockError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| TreeLockError::Io { path, source }
    };
    let ours = identity(work_dir).map_err(io(work_dir))?;
    let file = state_dir.join(IDENTITY_FILE);
    if let Some(other) = other_live_tree(state_dir, work_dir) {
        return Err(TreeLockError::OtherTree {
            state_dir: state_dir.to_owned(),
            other,
        });
    }
    let dir = File::open(work_dir).map_err(io(work_dir))?;
    let lock =
        Flock::lock(dir, FlockArg::LockExclusiveNonblock).map_err(|_| TreeLockError::Held {
            work_dir: work_dir.to_owned(),
        })?;
    let text = format!("{} {} {}\n", ours.0, ours.1, work_dir.display());
    if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&file, &text).map_err(io(&file))?;
    }
    Ok(TreeLock { _lock: lock })
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
        let held = acquire(&a, &state).unwrap();
        assert!(matches!(
            acquire(&a, &state),
            Err(TreeLockError::Held { .. })
        ));
        assert!(matches!(
            acquire(&b, &state),
            Err(TreeLockError::OtherTree { .. })
        ));
        drop(held);
        // Tree a is gone: its record is taken over.
        std::fs::remove_dir(&a).unwrap();
        acquire(&b, &state).unwrap();
    }
}
