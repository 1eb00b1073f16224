//! The repositories nested in the tree whose config the operator's git reads
//! (docs/security.md, "What runs later: the watched tier"). The operator's plain `git
//! status` in the top runs a `git status` in every populated gitlink — a submodule, or a
//! repository committed as a gitlink without `.gitmodules` — under that repository's own
//! config, and so on down its own gitlinks; an untracked nested repository becomes a
//! gitlink at the next `git add`. Each is found in process, no git started: the gitlinks
//! of the top's index, the untracked directories `git status` lists whole, and the
//! gitlinks of each nested repository's own index (read in process, [`Marks::read`]),
//! whose directory holds a `.git` — a directory, or a file naming the git dir (a
//! submodule's `.git/modules/<name>`) — reached from the top through no symbolic link.
//!
//! Its config is watched like the top's only where the watch may write: its git dir and
//! common dir (a `commondir` file) inside the work tree or the top's git or common dir and
//! reached through no symbolic link there ([`Reach::Config`]). One elsewhere
//! ([`Reach::Out`]: a `.git` that is a link, a `.git` file or `commondir` naming a
//! directory outside, through a link) is never written.
//!
//! A nested index that cannot be read in process (split, sparse) hides the gitlinks in
//! it: told on [`Nested::index_unread`], for the watch to set such a repository aside when
//! the round made it so.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet, VecDeque};
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::spot;
use crate::runtime::git::index_file::{self, Marks};
use crate::tree_file::{open_regular, Symlink};

/// How many nested repositories are watched at most.
pub(super) const MAX_NESTED: usize = 256;
/// How many more are found past [`MAX_NESTED`] (their directories only: no config read,
/// no index), for the watch to set aside those the round made.
const MAX_PAST: usize = 4096;
/// How deep repositories nested in nested repositories are looked for.
const MAX_DEPTH: usize = 8;
/// The largest `.git` file or `commondir` file read (git's are one line).
const MAX_POINTER_BYTES: u64 = 4096;

/// Where a nested repository's config lies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Reach {
    /// Its git dir and common dir, canonical: inside the work tree or the top's git or
    /// common dir, reached through no symbolic link there.
    Config {
        git_dir: PathBuf,
        common_dir: PathBuf,
    },
    /// Out of the watch's reach: why, in words.
    Out(String),
}

/// A repository nested in the tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Nested {
    /// Its directory (the top's path joined with the path from the top).
    pub dir: PathBuf,
    pub reach: Reach,
    /// Why its own index could not be read in process (a split or sparse index, a link,
    /// too large): the repositories nested in it are not looked for.
    #[serde(default)]
    pub index_unread: Option<String>,
}

impl Nested {
    /// The files its config is read from, with their scope: the common dir's `config`
    /// (`local`) and the git dir's `config.worktree` (`worktree`), present or not; none
    /// when it lies out of reach.
    pub(super) fn config_files(&self) -> Vec<(PathBuf, &'static str)> {
        match &self.reach {
            Reach::Config {
                git_dir,
                common_dir,
            } => vec![
                (common_dir.join("config"), "local"),
                (git_dir.join("config.worktree"), "worktree"),
            ],
            Reach::Out(_) => Vec::new(),
        }
    }

    /// Its index, when it lies in reach.
    pub(super) fn index(&self) -> Option<PathBuf> {
        match &self.reach {
            Reach::Config { git_dir, .. } => Some(git_dir.join("index")),
            Reach::Out(_) => None,
        }
    }

    /// Its `.git`, what makes git take its directory for a repository.
    pub(super) fn entry(&self) -> PathBuf {
        self.dir.join(".git")
    }
}

/// The nested repositories found, those past [`MAX_NESTED`] (found, not looked into:
/// their indexes not read), and what could not be looked for at all (a path and why: past
/// [`MAX_PAST`] more).
#[derive(Debug, Default)]
pub(super) struct Found {
    pub repos: Vec<Nested>,
    pub past_limit: Vec<Nested>,
    pub unread: Vec<(PathBuf, String)>,
}

/// `bytes` as a path below a directory: relative, each component a plain name, none
/// `.git`; `None` otherwise (an index written by hand can hold anything).
fn below(bytes: &[u8]) -> Option<&Path> {
    let path = Path::new(OsStr::from_bytes(bytes));
    let plain = path.components().all(|c| match c {
        Component::Normal(name) => !name.eq_ignore_ascii_case(".git"),
        _ => false,
    });
    (plain && !bytes.is_empty()).then_some(path)
}

/// The repositories nested below `top` (the work tree's top, `roots` where the watch may
/// write: the tree, the top's git dir and common dir, canonical): those `gitlinks` (of the
/// top's index) and `untracked` (`git status`'s `? dir/`) name, paths from the top, and
/// the gitlinks of their own indexes, breadth first, at most [`MAX_NESTED`].
pub(super) fn find(
    top: &Path,
    roots: &[PathBuf],
    gitlinks: &BTreeSet<Vec<u8>>,
    untracked: &[Vec<u8>],
) -> Found {
    let mut found = Found::default();
    let mut queue: VecDeque<(PathBuf, usize)> = gitlinks
        .iter()
        .chain(untracked)
        .filter_map(|rel| below(rel))
        .map(|rel| (top.join(rel), 0))
        .collect();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    while let Some((dir, depth)) = queue.pop_front() {
        if !seen.insert(dir.clone()) {
            continue;
        }
        let Some(reach) = reach(top, &dir, roots) else {
            continue;
        };
        if found.repos.len() == MAX_NESTED {
            if found.past_limit.len() == MAX_PAST {
                found.unread.push((
                    dir,
                    format!("more than {} nested repositories: this one and the rest are not looked for", MAX_NESTED + MAX_PAST),
                ));
                break;
            }
            found.past_limit.push(Nested {
                dir,
                reach,
                index_unread: None,
            });
            continue;
        }
        let mut index_unread = None;
        if let Reach::Config { git_dir, .. } = &reach {
            if depth < MAX_DEPTH {
                match read_index(&git_dir.join("index")) {
                    Ok(marks) => queue.extend(
                        marks
                            .gitlinks
                            .iter()
                            .filter_map(|rel| below(rel))
                            .map(|rel| (dir.join(rel), depth + 1)),
                    ),
                    Err(why) => index_unread = Some(why),
                }
            }
        }
        found.repos.push(Nested {
            dir,
            reach,
            index_unread,
        });
    }
    found
}

/// The marks of the index at `path` (none when there is none). Errors: it cannot be read
/// in process ([`index_file::read_file`]), in words.
fn read_index(path: &Path) -> Result<Marks, String> {
    index_file::read_file(path).map_err(|unread| {
        format!(
            "it cannot be read in process ({}): the repositories nested in it are not looked for",
            unread.0
        )
    })
}

/// Where the nested repository at `dir` keeps its config; `None` when git takes `dir` for
/// no repository there: a component from `top` to it is no directory or a symbolic link
/// (git does not go through one), or it holds no `.git` it can read.
fn reach(top: &Path, dir: &Path, roots: &[PathBuf]) -> Option<Reach> {
    let rel = dir.strip_prefix(top).ok()?;
    let mut at = top.to_path_buf();
    for part in rel.components() {
        at.push(part);
        if !std::fs::symlink_metadata(&at).ok()?.file_type().is_dir() {
            return None;
        }
    }
    let entry = dir.join(".git");
    let kind = std::fs::symlink_metadata(&entry).ok()?.file_type();
    if kind.is_symlink() {
        return Some(Reach::Out(format!(
            "{} is a symbolic link",
            entry.display()
        )));
    }
    let written = if kind.is_dir() {
        entry
    } else if kind.is_file() {
        let text = match pointer(&entry) {
            Ok(Some(text)) => text,
            Ok(None) => return None,
            Err(why) => return Some(Reach::Out(why)),
        };
        dir.join(text.strip_prefix("gitdir: ")?)
    } else {
        return None;
    };
    let git_dir = match held(&written, roots) {
        Ok(dir) => dir,
        Err(why) => return Some(Reach::Out(why)),
    };
    let common_dir = match pointer(&git_dir.join("commondir")) {
        Ok(None) => git_dir.clone(),
        Ok(Some(text)) => match held(&git_dir.join(text), roots) {
            Ok(dir) => dir,
            Err(why) => return Some(Reach::Out(why)),
        },
        Err(why) => return Some(Reach::Out(why)),
    };
    Some(Reach::Config {
        git_dir,
        common_dir,
    })
}

/// The one line of a `.git` file or a `commondir` file, trailing whitespace cut (git's
/// reading); `None` when there is none. Errors: it is a link, no regular file, too large
/// or unreadable: git would read through what the watch will not.
fn pointer(path: &Path) -> Result<Option<String>, String> {
    let file = match open_regular(path, Symlink::Refuse) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} cannot be read: {e}", path.display())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_POINTER_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{} cannot be read: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_POINTER_BYTES {
        return Err(format!(
            "{} is larger than {MAX_POINTER_BYTES} bytes",
            path.display()
        ));
    }
    let text = String::from_utf8_lossy(&bytes).trim_end().to_owned();
    Ok((!text.is_empty()).then_some(text))
}

/// The directory `written` names, canonical, when the watch may write there: it resolves
/// inside `roots`, through no symbolic link that lies inside them (a link above the tree,
/// the operator's `/home -> /usr/home`, is not the agent's). Errors: why not, in words.
fn held(written: &Path, roots: &[PathBuf]) -> Result<PathBuf, String> {
    let canonical = std::fs::canonicalize(written)
        .map_err(|e| format!("{} does not resolve: {e}", written.display()))?;
    let mut prefix = PathBuf::new();
    for part in written.components() {
        prefix.push(part);
        let is_link = std::fs::symlink_metadata(&prefix).is_ok_and(|m| m.file_type().is_symlink());
        let Some(name) = prefix.file_name().filter(|_| is_link) else {
            continue;
        };
        let lies = prefix
            .parent()
            .and_then(|d| std::fs::canonicalize(d).ok())
            .map(|d| d.join(name));
        if lies.is_none_or(|at| spot::inside(&at, roots)) {
            return Err(format!(
                "{} is reached through the symbolic link {}",
                written.display(),
                prefix.display()
            ));
        }
    }
    if !spot::inside(&canonical, roots) {
        return Err(format!(
            "{} lies outside the work tree and the repository",
            canonical.display()
        ));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_are_taken_from_an_index() {
        assert_eq!(below(b"vendor/x"), Some(Path::new("vendor/x")));
        for bad in [
            &b""[..],
            b"/etc",
            b"../x",
            b"a/../../x",
            b"a/.git",
            b"a/.GIT/b",
            b"./a",
        ] {
            assert_eq!(below(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
