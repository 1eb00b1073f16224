//! Where the supervisor's git reads and writes, held by identity (docs/security.md, "The
//! supervisor is not the agent's deputy"): the work tree's top, its git dir and common dir,
//! found once by git's own discovery (with its ownership check, `safe.directory`), and
//! what each of them and the paths git writes through were when found ([`Place::changed`]
//! tells what moved since). Also what the repository's config was read from
//! ([`ConfigSeen`]), so it is listed again only when one of those files changed.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::tree_file::{regular_file_sha256, Symlink};

/// What one path was when looked at: missing, a directory, a regular file (with its
/// content's hash), a symbolic link (with its target) or something else, each with its
/// device and inode.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Missing,
    Dir(u64, u64),
    File(u64, u64, Option<[u8; 32]>),
    Link(PathBuf),
    Other(u64, u64, u32),
}

impl Seen {
    /// `path` as it is now, the final symbolic link followed or not.
    fn of(path: &Path, follow: bool) -> Seen {
        let meta = if follow {
            std::fs::metadata(path)
        } else {
            std::fs::symlink_metadata(path)
        };
        let Ok(meta) = meta else {
            return Seen::Missing;
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            return Seen::Link(std::fs::read_link(path).unwrap_or_default());
        }
        let (dev, ino) = (meta.dev(), meta.ino());
        if kind.is_dir() {
            Seen::Dir(dev, ino)
        } else if kind.is_file() {
            let symlink = if follow {
                Symlink::Follow
            } else {
                Symlink::Refuse
            };
            Seen::File(dev, ino, regular_file_sha256(path, symlink))
        } else {
            Seen::Other(dev, ino, meta.mode())
        }
    }

    /// The kind, for messages.
    fn kind(&self) -> &'static str {
        match self {
            Seen::Missing => "missing",
            Seen::Dir(..) => "a directory",
            Seen::File(..) => "a file",
            Seen::Link(_) => "a symbolic link",
            Seen::Other(..) => "neither a file nor a directory",
        }
    }
}

/// One path held: its name in messages, whether its final link is followed, what it was.
#[derive(Clone, Debug)]
struct Mark {
    path: PathBuf,
    follow: bool,
    seen: Seen,
}

impl Mark {
    fn of(path: PathBuf, follow: bool) -> Mark {
        let seen = Seen::of(&path, follow);
        Mark { path, follow, seen }
    }

    /// Whether `now` is what the mark held, or a directory where there was nothing (git
    /// makes `logs` with a repository's first reference update).
    fn holds(&self, now: &Seen) -> bool {
        *now == self.seen || (self.seen == Seen::Missing && matches!(now, Seen::Dir(..)))
    }
}

/// The repository the supervisor's git is pinned to, found at boot.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    /// The work tree's top (`git rev-parse --show-toplevel`).
    pub top: PathBuf,
    /// The git dir (`--absolute-git-dir`): `GIT_DIR` of every later call.
    pub git_dir: PathBuf,
    /// The common dir (`--git-common-dir`; the git dir itself but in a linked worktree).
    pub common_dir: PathBuf,
    /// The work dir's path from the top, with its trailing `/` (empty at the top).
    pub prefix: Vec<u8>,
    marks: Vec<Mark>,
}

impl Place {
    /// The place found by `git rev-parse --show-toplevel --absolute-git-dir
    /// --git-common-dir` (`top`, `git_dir`, `common`: `common` relative to `work_dir` unless
    /// absolute), with what each path git reads or writes through is now. Errors (a message
    /// naming the path and the fix): the top's `.git` does not name `git_dir` (a
    /// `core.worktree` moved the work tree away from its git dir, or git found another
    /// repository than the top's own).
    pub(crate) fn hold(
        work_dir: &Path,
        top: PathBuf,
        git_dir: PathBuf,
        common: &Path,
        prefix: Vec<u8>,
    ) -> Result<Place, String> {
        let common_dir =
            std::fs::canonicalize(work_dir.join(common)).unwrap_or_else(|_| work_dir.join(common));
        let dot_git = top.join(".git");
        let named = match Seen::of(&dot_git, false) {
            Seen::Dir(..) | Seen::Link(_) => Some(dot_git.clone()),
            Seen::File(..) => gitdir_of_file(&dot_git).map(|d| top.join(d)),
            _ => None,
        };
        let same = named.is_some_and(|named| {
            Seen::of(&named, true) == Seen::of(&git_dir, true)
                && matches!(Seen::of(&git_dir, true), Seen::Dir(..))
        });
        if !same {
            return Err(format!(
                "git found the git dir {} for the work tree {}, but {} does not name it (a `core.worktree` setting, or a `.git` that is not this work tree's own); agent-runner works only on a work tree whose own `.git` is its repository: unset `core.worktree`, or point [runtime] work_dir at the repository's own work tree",
                git_dir.display(),
                top.display(),
                dot_git.display()
            ));
        }
        let mut marks = vec![
            Mark::of(dot_git, false),
            Mark::of(git_dir.clone(), true),
            Mark::of(common_dir.clone(), true),
        ];
        // Where git writes objects, refs and their logs (a link there would take the
        // supervisor's writes elsewhere), and where it reads other repositories' objects
        // from (`objects/info/alternates`) or its common dir (`commondir`).
        for dir in [&git_dir, &common_dir] {
            for name in ["objects", "refs", "logs", "commondir"] {
                marks.push(Mark::of(dir.join(name), false));
            }
            marks.push(Mark::of(dir.join("objects/info/alternates"), true));
        }
        Ok(Place {
            top,
            git_dir,
            common_dir,
            prefix,
            marks,
        })
    }

    /// What changed since boot, `None` when nothing did: each path git reads or writes
    /// through that is no longer what it was (another directory or file, a file with other
    /// content, a link), and a link where git appends a reference's log (`logs/HEAD`,
    /// `logs/refs/stash`, the branch's log: git would append through it, outside the
    /// repository).
    pub(crate) fn changed(&self) -> Option<String> {
        let mut changes = Vec::new();
        for mark in &self.marks {
            let now = Seen::of(&mark.path, mark.follow);
            if !mark.holds(&now) {
                let how = if now.kind() == mark.seen.kind() {
                    format!(
                        "is another {} than at boot",
                        now.kind().trim_start_matches("a ")
                    )
                } else {
                    format!("was {} at boot, is {} now", mark.seen.kind(), now.kind())
                };
                changes.push(format!("{} {how}", mark.path.display()));
            }
        }
        for path in self.appended_logs() {
            if let Seen::Link(target) = Seen::of(&path, false) {
                changes.push(format!(
                    "{} is a symbolic link (to {}): git would append to its target",
                    path.display(),
                    target.display()
                ));
            }
        }
        (!changes.is_empty()).then(|| changes.join("; "))
    }

    /// The logs (and refs) a stash or commit appends to or replaces: `HEAD`'s,
    /// `refs/stash`'s and the current branch's, and the directories they lie in.
    fn appended_logs(&self) -> Vec<PathBuf> {
        let mut paths = vec![
            self.git_dir.join("logs/HEAD"),
            self.git_dir.join("HEAD"),
            self.common_dir.join("logs/refs"),
            self.common_dir.join("logs/refs/stash"),
            self.common_dir.join("refs/stash"),
            self.common_dir.join("packed-refs"),
        ];
        let head = std::fs::read_to_string(self.git_dir.join("HEAD")).unwrap_or_default();
        if let Some(branch) = head.trim_end().strip_prefix("ref: ") {
            let mut dir = PathBuf::new();
            for part in Path::new(branch).components() {
                dir.push(part);
                paths.push(self.common_dir.join("logs").join(&dir));
                paths.push(self.common_dir.join(&dir));
            }
        }
        paths
    }
}

/// The path a `.git` file names (`gitdir: <path>`), as written.
fn gitdir_of_file(file: &Path) -> Option<PathBuf> {
    let text = crate::tree_file::head_chars(file, Symlink::Refuse, 4096);
    let line = text.lines().next()?;
    Some(PathBuf::from(line.strip_prefix("gitdir: ")?.trim_end()))
}

/// The files the repository's config was read from, as they were when listed: its own
/// config files (present or not), the files each entry came from (`--show-origin`), the
/// files its includes name (present or not) and `HEAD` (`includeIf "onbranch:"`). While
/// none of them changed, the listing stands.
#[derive(Clone, Debug)]
pub(crate) struct ConfigSeen {
    files: Vec<(PathBuf, Seen)>,
}

impl ConfigSeen {
    /// What `place`'s config files and `entries` (`scope`, `origin`, `key`, `value` of the
    /// repository's own scopes) name are now.
    pub(crate) fn of<'a>(
        place: &Place,
        entries: impl Iterator<Item = (&'a str, &'a str, &'a str)>,
    ) -> ConfigSeen {
        let mut paths: Vec<PathBuf> = [
            place.git_dir.join("config"),
            place.git_dir.join("config.worktree"),
            place.common_dir.join("config"),
            place.common_dir.join("config.worktree"),
            place.git_dir.join("HEAD"),
        ]
        .into();
        for (origin, key, value) in entries {
            let Some(origin) = origin.strip_prefix("file:") else {
                continue;
            };
            let origin = place.top.join(origin);
            let included =
                key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path"));
            if included {
                let target = match value.strip_prefix("~/") {
                    Some(rest) => std::env::var_os("HOME")
                        .map(|home| PathBuf::from(home).join(rest))
                        .unwrap_or_default(),
                    None => origin
                        .parent()
                        .map(|dir| dir.join(value))
                        .unwrap_or_default(),
                };
                paths.push(target);
            }
            paths.push(origin);
        }
        paths.sort();
        paths.dedup();
        ConfigSeen {
            files: paths
                .into_iter()
                .map(|p| {
                    let seen = Seen::of(&p, true);
                    (p, seen)
                })
                .collect(),
        }
    }

    /// Whether every file is still what it was.
    pub(crate) fn unchanged(&self) -> bool {
        self.files
            .iter()
            .all(|(p, seen)| Seen::of(p, true) == *seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, Place) {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join(".git/refs/heads")).unwrap();
        std::fs::create_dir_all(top.join(".git/objects")).unwrap();
        std::fs::write(top.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let git_dir = top.join(".git");
        let place = Place::hold(&top, top.clone(), git_dir.clone(), &git_dir, Vec::new()).unwrap();
        (dir, place)
    }

    #[test]
    fn a_git_dir_replaced_or_linked_is_named() {
        let (_dir, place) = repo();
        assert_eq!(place.changed(), None);
        std::fs::write(place.git_dir.join("objects/info-alternates-like"), "x").unwrap();
        assert_eq!(place.changed(), None, "a new object file is no change");
        let elsewhere = place.top.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::create_dir_all(place.git_dir.join("logs/refs/heads")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, place.git_dir.join("logs/refs/heads/main")).unwrap();
        let changed = place.changed().unwrap();
        assert!(
            changed.contains("logs/refs/heads/main is a symbolic link"),
            "{changed}"
        );
        std::fs::rename(place.git_dir.clone(), place.top.join("old")).unwrap();
        std::fs::write(place.top.join(".git"), "gitdir: /elsewhere\n").unwrap();
        let changed = place.changed().unwrap();
        assert!(
            changed.contains("/.git was a directory at boot, is a file now"),
            "{changed}"
        );
    }

    #[test]
    fn a_work_tree_moved_away_from_its_git_dir_is_refused() {
        let (_dir, place) = repo();
        let other = place.top.join("sub");
        std::fs::create_dir(&other).unwrap();
        let refused = Place::hold(
            &other,
            other.clone(),
            place.git_dir.clone(),
            &place.git_dir,
            Vec::new(),
        )
        .unwrap_err();
        assert!(refused.contains("core.worktree"), "{refused}");
    }

    #[test]
    fn an_included_file_that_appears_changes_the_config() {
        let (_dir, place) = repo();
        let origin = format!("file:{}", place.git_dir.join("config").display());
        let seen = ConfigSeen::of(
            &place,
            [(origin.as_str(), "include.path", "extra.inc")].into_iter(),
        );
        assert!(seen.unchanged());
        std::fs::write(place.git_dir.join("extra.inc"), "[x]\n").unwrap();
        assert!(!seen.unchanged());
    }
}
