//! Where the watch writes: a config file's directory held as its path resolved before the
//! round (docs/security.md, "What runs later: the watched tier"). The agent can replace
//! any directory of the tree by a symbolic link between the record and the revert
//! (`shared -> $HOME` under `include.path = ../shared/.gitconfig`): the path then names a
//! file of the operator's outside the tree. Every write, rename and creation of the watch
//! goes through a [`Spot`] — the directory opened one component at a time with
//! `O_NOFOLLOW` from where it resolved before the round ([`settle`]) — never through the
//! path by name, and only inside the work tree, the git dir and the common dir, or in an
//! operator's directory outside them whose path did not change at all.

use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::held_dir::{open_resolved, OpenDir};

/// How many links planted on one path are undone before the path is given up on.
const MAX_UNDONE_LINKS: usize = 16;

/// How a config file's path resolved: the links on the way to its directory and where
/// that directory is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Way {
    /// Each directory prefix of the path, as written (`..` kept), that is a symbolic link,
    /// with the link's text.
    pub links: Vec<(PathBuf, PathBuf)>,
    /// The file's directory, canonical; `None` when it does not resolve.
    pub dir: Option<PathBuf>,
    /// That directory's `(st_dev, st_ino)`.
    pub dir_id: Option<(u64, u64)>,
}

/// How `path` resolves now ([`Way`]).
pub(super) fn way(path: &Path) -> Way {
    let parent = path.parent().unwrap_or(Path::new("/"));
    let mut links = Vec::new();
    let mut prefix = PathBuf::new();
    for part in parent.components() {
        prefix.push(part);
        match std::fs::symlink_metadata(&prefix) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&prefix).unwrap_or_default();
                links.push((prefix.clone(), target));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let dir = std::fs::canonicalize(parent).ok();
    let dir_id = dir
        .as_ref()
        .and_then(|d| std::fs::metadata(d).ok())
        .map(|m| (m.dev(), m.ino()));
    Way { links, dir, dir_id }
}

/// A config file's directory, open where its path resolved before the round (no link
/// that appeared since followed), and the file's name in it.
#[derive(Debug)]
pub(super) struct Spot {
    dir: OpenDir,
    /// Where the directory is (canonical), for what is told.
    shown: PathBuf,
    name: OsString,
    /// Whether the directory lies in the work tree, the git dir or the common dir.
    pub inside: bool,
}

/// Something the watch did to make a write possible, told as its own `git_config_reverted`
/// (`action`, the path it concerns, `value`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Fix {
    /// `lock_set_aside` or `permission_restored`.
    pub action: &'static str,
    /// The lock or the directory.
    pub path: PathBuf,
    /// Where the lock went, or the directory's mode before and after (`0555 -> 0755`).
    pub value: String,
}

/// Whether `dir` (canonical) lies in one of `roots`.
pub(super) fn inside(dir: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| dir.starts_with(root))
}

/// A name beside `name` no other process picks: `<name><suffix>-<pid>-<ns>`.
fn stamped(name: &std::ffi::OsStr, suffix: &str) -> OsString {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut out = name.to_owned();
    out.push(format!("{suffix}-{}-{ns}", std::process::id()));
    out
}

/// Renames the symbolic link `link` (a directory prefix of a config file's path) aside to
/// `<link>.agent-runner-unread-<pid>-<ns>`, through its directory opened without following
/// a link. Returns where the link lies (its directory canonical) and the result; `None`
/// when it is not the watch's to touch: its directory lies outside `roots` or does not
/// resolve, or it holds a root (`.git` itself). Errors: the reason, in words.
fn undo_dir_link(link: &Path, roots: &[PathBuf]) -> Option<(PathBuf, Result<(), String>)> {
    let name = link.file_name()?;
    let dir = std::fs::canonicalize(link.parent()?).ok()?;
    if !inside(&dir, roots) || roots.iter().any(|root| root.starts_with(dir.join(name))) {
        return None;
    }
    let undone = open_resolved(&dir).and_then(|open| {
        let at = open.at().join(name);
        if !std::fs::symlink_metadata(&at)?.file_type().is_symlink() {
            return Err(std::io::Error::other("it is no longer a symbolic link"));
        }
        std::fs::rename(&at, open.at().join(stamped(name, ".agent-runner-unread")))
    });
    let undone = undone.map_err(|e| format!("setting the link aside failed: {e}"));
    Some((dir.join(name), undone))
}

/// A link set aside on the way to a config file: where it lay, its text, the result.
pub(super) type Undone = (PathBuf, PathBuf, Result<(), String>);

/// The links of `now` that `recorded` does not hold (made or re-pointed since), in order.
fn new_links<'a>(now: &'a Way, recorded: &Way) -> Vec<&'a (PathBuf, PathBuf)> {
    now.links
        .iter()
        .filter(|link| !recorded.links.contains(link))
        .collect()
}

/// Where the config file `path` may be read and written now, its path having resolved as
/// `recorded` before the round: each link planted on the way to its directory (made or
/// re-pointed since) that lies inside `roots` — the work tree, the git dir, the common dir
/// — is set aside first (one `(where it lay, its text, result)` each in the return), so the path
/// leads where it did, or nowhere. `Ok((None, _))`: its directory does not resolve (git
/// reads nothing there).
///
/// Errors: it now leads elsewhere than it did before the round — through a link outside
/// `roots` or one that could not be set aside, or into a directory outside `roots` that is
/// not the one it was — or its directory cannot be opened: the reason, in words. Nothing
/// may be written there.
pub(super) fn settle(
    path: &Path,
    recorded: &Way,
    roots: &[PathBuf],
) -> (Result<Option<Spot>, String>, Vec<Undone>) {
    let mut undone = Vec::new();
    let mut now = way(path);
    while undone.len() < MAX_UNDONE_LINKS {
        let Some((link, target, result)) =
            new_links(&now, recorded)
                .into_iter()
                .find_map(|(link, target)| {
                    undo_dir_link(link, roots).map(|(at, r)| (at, target.clone(), r))
                })
        else {
            break;
        };
        let failed = result.is_err();
        undone.push((link, target, result));
        if failed {
            break;
        }
        now = way(path);
    }
    (open_spot(path, recorded, &now, roots), undone)
}

/// The [`Spot`] of `path` when it resolves `now` as it did (`recorded`), see [`settle`].
fn open_spot(
    path: &Path,
    recorded: &Way,
    now: &Way,
    roots: &[PathBuf],
) -> Result<Option<Spot>, String> {
    let Some(dir) = &now.dir else {
        return Ok(None);
    };
    let inside = inside(dir, roots);
    let same = now.links == recorded.links
        && match &recorded.dir {
            Some(then) => then == dir && (inside || recorded.dir_id == now.dir_id),
            None => inside,
        };
    if !same {
        let then = recorded
            .dir
            .as_ref()
            .map_or_else(|| "nowhere".to_owned(), |d| d.display().to_string());
        return Err(format!(
            "{} now leads into {} (before the round: {}) through a symbolic link made or re-pointed during the round that the supervisor may not undo: never written",
            path.display(),
            dir.display(),
            then
        ));
    }
    let name = path
        .file_name()
        .ok_or_else(|| format!("{} names no file", path.display()))?
        .to_owned();
    let open = open_resolved(dir).map_err(|e| e.to_string())?;
    if open.id().ok() != now.dir_id {
        return Err(format!(
            "{} changed while it was looked at: never written",
            dir.display()
        ));
    }
    Ok(Some(Spot {
        dir: open,
        shown: dir.clone(),
        name,
        inside,
    }))
}

impl Spot {
    /// The file, reached through the open directory (`/proc/self/fd/<n>/<name>`).
    pub(super) fn at(&self) -> PathBuf {
        self.dir.at().join(&self.name)
    }

    /// `<name><suffix>` in the open directory.
    fn beside(&self, suffix: &str) -> PathBuf {
        let mut name = self.name.clone();
        name.push(suffix);
        self.dir.at().join(name)
    }

    /// Gives the owner back write and search permission on the directory (`u+rwx`) when
    /// the round took it (`chmod 555 .git`: git's writer, and this one, could not make
    /// their lock there): only inside the work tree and the repository, and only a
    /// directory the supervisor's user owns. `None` when nothing was changed.
    fn own_dir(&self) -> Option<Fix> {
        if !self.inside {
            return None;
        }
        let (mode, now) = crate::tree_file::give_back_owner_rwx(&self.dir.at())?;
        Some(Fix {
            action: "permission_restored",
            path: self.shown.clone(),
            value: format!("{mode:04o} -> {now:04o}"),
        })
    }

    /// Clears `<name>.lock` (git's lock beside the file): after the round no git of the
    /// agent's runs, so one left is stale or planted to make the revert fail. A regular
    /// file or a link is removed; anything else (a directory, a FIFO) is renamed aside to
    /// `<name>.lock.agent-runner-unread-<pid>-<ns>`, told as a [`Fix`]. Errors: it could
    /// not be cleared.
    fn clear_lock(&self) -> Result<Option<Fix>, String> {
        let lock = self.beside(".lock");
        let Ok(meta) = std::fs::symlink_metadata(&lock) else {
            return Ok(None);
        };
        let kind = meta.file_type();
        if kind.is_file() || kind.is_symlink() {
            return std::fs::remove_file(&lock)
                .map(|()| None)
                .map_err(|e| format!("removing the lock left beside it failed: {e}"));
        }
        let mut name = self.name.clone();
        name.push(".lock");
        let aside = stamped(&name, ".agent-runner-unread");
        std::fs::rename(&lock, self.dir.at().join(&aside))
            .map_err(|e| format!("setting aside the lock left beside it failed: {e}"))?;
        Ok(Some(Fix {
            action: "lock_set_aside",
            path: self.shown.join(name),
            value: self.shown.join(aside).display().to_string(),
        }))
    }

    /// The file's mode now (`0o644` when it has none to copy).
    fn mode(&self) -> u32 {
        std::fs::symlink_metadata(self.at())
            .ok()
            .filter(|m| m.file_type().is_file())
            .map_or(0o644, |m| m.permissions().mode() & 0o7777)
    }

    /// Writes `bytes` as the file the way git's writer does, never through a link: the
    /// lock `<name>.lock` cleared ([`Spot::clear_lock`]) and created exclusively
    /// (`O_EXCL | O_NOFOLLOW`) with the file's mode, then renamed over the file. The
    /// directory's write permission is given back first when the round took it
    /// ([`Spot::own_dir`]). Returns what was done to make it possible. Errors: the
    /// reason, in words (the file is then as it was).
    pub(super) fn put(&self, bytes: &[u8]) -> (Result<(), String>, Vec<Fix>) {
        let mut fixes: Vec<Fix> = self.own_dir().into_iter().collect();
        let lock = self.beside(".lock");
        let cleared = self.clear_lock();
        let put = cleared.and_then(|fix| {
            fixes.extend(fix);
            write_new(&lock, bytes, self.mode())
                .and_then(|()| std::fs::rename(&lock, self.at()))
                .map_err(|e| {
                    let _ = std::fs::remove_file(&lock);
                    format!("writing it back failed: {e}")
                })
        });
        (put, fixes)
    }

    /// Moves the file (whatever it is: a file too large to read, a FIFO, a directory) aside
    /// to `<name>.agent-runner-unread-<pid>-<ns>` and, when `before` is given, writes those
    /// bytes as the file (created exclusively beside it, never through a link, then
    /// renamed over it). Only inside the work tree and the repository. Returns where it
    /// went and what was done to make it possible. Errors: the reason, in words.
    pub(super) fn set_aside(&self, before: Option<&[u8]>) -> (Result<PathBuf, String>, Vec<Fix>) {
        if !self.inside {
            return (
                Err("it lies outside the work tree and the repository: not set aside".to_owned()),
                Vec::new(),
            );
        }
        let fixes: Vec<Fix> = self.own_dir().into_iter().collect();
        let aside = stamped(&self.name, ".agent-runner-unread");
        let moved = std::fs::rename(self.at(), self.dir.at().join(&aside))
            .map_err(|e| format!("setting it aside failed: {e}"))
            .and_then(|()| match before {
                Some(bytes) => self
                    .write_beside(bytes)
                    .map_err(|e| format!("putting the file before back failed: {e}")),
                None => Ok(()),
            });
        (moved.map(|()| self.shown.join(aside)), fixes)
    }

    /// Undoes the symbolic link the round made or re-pointed at the file: puts back what
    /// was there before the round (`link`: the operator's link, re-made; else `bytes`: the
    /// file's, written beside it exclusively and renamed over the link), or removes the
    /// link when nothing was. What the link leads to is never read or written. Errors: the
    /// reason, in words (the link then stays; git reads through it).
    pub(super) fn undo_link(
        &self,
        link: Option<&Path>,
        bytes: Option<&[u8]>,
    ) -> Result<(), String> {
        let undone = match (link, bytes) {
            (Some(target), _) => self.link_beside(target),
            (None, Some(bytes)) => self.write_beside(bytes),
            (None, None) => std::fs::remove_file(self.at()),
        };
        undone.map_err(|e| format!("putting back the file before the round failed: {e}"))
    }

    /// Makes the file a symbolic link to `target`: made beside it, then renamed over it.
    fn link_beside(&self, target: &Path) -> std::io::Result<()> {
        let beside = self.beside(&format!(".agent-runner-{}", std::process::id()));
        let _ = std::fs::remove_file(&beside);
        let made = std::os::unix::fs::symlink(target, &beside)
            .and_then(|()| std::fs::rename(&beside, self.at()));
        if made.is_err() {
            let _ = std::fs::remove_file(&beside);
        }
        made
    }

    /// Writes `bytes` as the file: to a file beside it, created exclusively and never
    /// through a link, then renamed over it (a link or file there is replaced, never
    /// written through).
    fn write_beside(&self, bytes: &[u8]) -> std::io::Result<()> {
        let copy = self.beside(&format!(".agent-runner-{}", std::process::id()));
        let _ = std::fs::remove_file(&copy);
        let written =
            write_new(&copy, bytes, 0o644).and_then(|()| std::fs::rename(&copy, self.at()));
        if written.is_err() {
            let _ = std::fs::remove_file(&copy);
        }
        written
    }
}

/// Creates `path` exclusively (`O_EXCL | O_NOFOLLOW`, `mode`) and writes `bytes` to it.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    // The mode asked for, whatever the umask took.
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.write_all(bytes)
}
