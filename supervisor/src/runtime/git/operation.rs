//! A repository in the middle of a git operation (a rebase, merge, cherry-pick or revert
//! stopped on a conflict, a bisect under way): the supervisor leaves it untouched — no
//! stash, no commit — because either would act on a half-done state (a commit onto a
//! rebase's detached HEAD, a stash of conflict markers, a failed commit's reset of the
//! conflicted index entries). Found from the marker files git keeps in the work tree's
//! git dir (git's own `wt-status.c` reads the same ones), read directly: no git process
//! runs, so `peek` can say it too (docs/operations.md, "Leaving it unattended").

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::tree_file::{open_regular, Symlink};

/// A git operation that is under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    /// `git rebase` (`rebase-merge/` or `rebase-apply/` without `applying`).
    Rebase,
    /// `git am` (`rebase-apply/applying`).
    Am,
    /// `git merge` (`MERGE_HEAD`).
    Merge,
    /// `git cherry-pick` (`CHERRY_PICK_HEAD`, or `sequencer/` of a multi-commit pick).
    CherryPick,
    /// `git revert` (`REVERT_HEAD`).
    Revert,
    /// `git bisect` (`BISECT_LOG`).
    Bisect,
}

impl Operation {
    /// The git command's name (`rebase`, `am`, `merge`, `cherry-pick`, `revert`,
    /// `bisect`), as the event carries it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Operation::Rebase => "rebase",
            Operation::Am => "am",
            Operation::Merge => "merge",
            Operation::CherryPick => "cherry-pick",
            Operation::Revert => "revert",
            Operation::Bisect => "bisect",
        }
    }

    /// What the operator does to end it, one line.
    pub(crate) fn what_to_do(self) -> String {
        let name = self.name();
        match self {
            Operation::Bisect => {
                "finish the bisect with `git bisect reset`; until then the supervisor stashes and commits nothing".to_owned()
            }
            _ => format!(
                "resolve the conflicts and run `git {name} --continue`, or `git {name} --abort`; until then the supervisor stashes and commits nothing"
            ),
        }
    }
}

/// An operation found in progress, and the marker that shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InProgress {
    /// Which operation.
    pub operation: Operation,
    /// The marker file or directory in the git dir.
    pub marker: PathBuf,
}

/// The git dir of the work tree holding `work_dir`: the first `.git` found walking up, a
/// directory, or a file `gitdir: <path>` (a linked worktree, a submodule), its path
/// relative to the file's directory. `None` outside a repository.
pub(crate) fn git_dir(work_dir: &Path) -> Option<PathBuf> {
    for dir in work_dir.ancestors() {
        let dot_git = dir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        if meta.is_dir() {
            return Some(dot_git);
        }
        // A `.git` file is one short line; a FIFO or a huge file there is not git's.
        let file = open_regular(&dot_git, Symlink::Follow).ok()?;
        let mut text = String::new();
        file.take(4096).read_to_string(&mut text).ok()?;
        let target = text.strip_prefix("gitdir:")?.trim();
        return Some(dir.join(target));
    }
    None
}

/// The operation under way in the repository holding `work_dir`, if any (the first found,
/// in git's order of precedence); `None` when none is, or outside a repository.
pub(crate) fn in_progress(work_dir: &Path) -> Option<InProgress> {
    let git_dir = git_dir(work_dir)?;
    let exists = |name: &str| std::fs::symlink_metadata(git_dir.join(name)).is_ok();
    let found = if exists("rebase-merge") {
        Some((Operation::Rebase, "rebase-merge"))
    } else if exists("rebase-apply/applying") {
        Some((Operation::Am, "rebase-apply"))
    } else if exists("rebase-apply") {
        Some((Operation::Rebase, "rebase-apply"))
    } else if exists("MERGE_HEAD") {
        Some((Operation::Merge, "MERGE_HEAD"))
    } else if exists("CHERRY_PICK_HEAD") {
        Some((Operation::CherryPick, "CHERRY_PICK_HEAD"))
    } else if exists("REVERT_HEAD") {
        Some((Operation::Revert, "REVERT_HEAD"))
    } else if exists("sequencer") {
        Some((Operation::CherryPick, "sequencer"))
    } else if exists("BISECT_LOG") {
        Some((Operation::Bisect, "BISECT_LOG"))
    } else {
        None
    };
    found.map(|(operation, marker)| InProgress {
        operation,
        marker: git_dir.join(marker),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_name_their_operation_and_a_gitdir_file_is_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path();
        let real = top.join("elsewhere/gitdir");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::create_dir_all(top.join("tree/sub")).unwrap();
        std::fs::write(top.join("tree/.git"), "gitdir: ../elsewhere/gitdir\n").unwrap();
        let work = top.join("tree/sub");
        assert_eq!(in_progress(&work), None);
        for (marker, op) in [
            ("BISECT_LOG", Operation::Bisect),
            ("REVERT_HEAD", Operation::Revert),
            ("CHERRY_PICK_HEAD", Operation::CherryPick),
            ("MERGE_HEAD", Operation::Merge),
            ("rebase-apply", Operation::Rebase),
            ("rebase-apply/applying", Operation::Am),
            ("rebase-merge", Operation::Rebase),
        ] {
            if marker.contains('/') || marker.starts_with("rebase") {
                std::fs::create_dir_all(real.join(marker)).unwrap();
            } else {
                std::fs::write(real.join(marker), "x\n").unwrap();
            }
            assert_eq!(in_progress(&work).unwrap().operation, op, "{marker}");
        }
    }
}
