//! A directory held by identity: the log dir, which may lie inside the work tree, where the
//! agent can replace it, or its `rounds` folder, with a symbolic link to anywhere between
//! two rounds (docs/security.md, "The supervisor is not the agent's deputy").
//!
//! The directory is opened once (`O_PATH | O_DIRECTORY`), following the links the operator
//! had when the supervisor started; every later open, create, rename and removal goes
//! through the held descriptor (its `/proc/self/fd/<n>` path, [`HeldDir::at`]: the kernel
//! resolves that magic link to the open directory itself, never by name again), so a link
//! the agent planted at the directory's path, or at any directory above it, is never
//! followed. A child ([`HeldDir::child`]) is opened beneath it with `O_NOFOLLOW`: a link
//! at its name is refused, never followed. File names inside are the callers' to open with
//! `O_NOFOLLOW` (and `O_EXCL` for new files), which with a held directory gives what
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` would for a one-component name, on
//! every kernel we run on.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// A directory by the path the operator gave and the path it resolved to then.
#[derive(Clone, Debug)]
pub(crate) struct HeldDir {
    /// The path it was named by, for messages and events.
    shown: PathBuf,
    /// Where it resolved when the supervisor started: absolute, no links, no `..`.
    resolved: PathBuf,
}

/// One open of a [`HeldDir`] (`O_PATH | O_DIRECTORY`): the directory itself, whatever is
/// done at its path while it is open.
#[derive(Debug)]
pub(crate) struct OpenDir {
    fd: OwnedFd,
}

/// `O_PATH | O_DIRECTORY | O_NOFOLLOW` of the one-component `name` beneath the open
/// directory `dir` (`openat(2)`, never a path resolved again by name): a link there is
/// refused.
fn open_beneath(dir: &OpenDir, name: &std::ffi::OsStr) -> nix::Result<OwnedFd> {
    nix::fcntl::openat(
        &dir.fd,
        name,
        nix::fcntl::OFlag::O_PATH
            | nix::fcntl::OFlag::O_DIRECTORY
            | nix::fcntl::OFlag::O_NOFOLLOW
            | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
}

/// `O_PATH | O_DIRECTORY | O_NOFOLLOW` of `path`: a link there is refused.
fn open_component(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)
}

impl HeldDir {
    /// Resolves `path` now, following the links the operator has on the way
    /// (`logs -> /mnt/…`): its longest existing part resolved, the rest as written (made
    /// by [`HeldDir::open`]). Every later [`HeldDir::open`] follows no link.
    pub(crate) fn resolve(path: &Path) -> HeldDir {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let mut existing = absolute.as_path();
        let mut rest = Vec::new();
        let resolved = loop {
            if let Ok(real) = existing.canonicalize() {
                break real;
            }
            match (existing.file_name(), existing.parent()) {
                (Some(name), Some(parent)) => {
                    rest.push(name.to_owned());
                    existing = parent;
                }
                _ => break absolute.clone(),
            }
        };
        HeldDir {
            shown: path.to_owned(),
            resolved: rest.iter().rev().fold(resolved, |p, name| p.join(name)),
        }
    }

    /// `path` held with no link followed below the work tree `tree` (its components inside
    /// the tree taken as written, the tree itself resolved): a link an agent made there in
    /// an earlier process is refused by every [`HeldDir::open`], never followed. A `path`
    /// outside the tree: [`HeldDir::resolve`].
    pub(crate) fn refusing_links_below(path: &Path, tree: &Path) -> HeldDir {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let tree_abs = std::path::absolute(tree).unwrap_or_else(|_| tree.to_owned());
        match (absolute.strip_prefix(&tree_abs), tree_abs.canonicalize()) {
            (Ok(rest), Ok(real)) => HeldDir {
                shown: path.to_owned(),
                resolved: real.join(rest),
            },
            _ => HeldDir::resolve(path),
        }
    }

    /// Whether its path resolves elsewhere now than when it was held (a link made or
    /// re-pointed on the way since).
    pub(crate) fn moved(&self) -> bool {
        HeldDir::resolve(&self.shown).resolved != self.resolved
    }

    /// The directory `name` inside this one (made by [`HeldDir::open`] when missing).
    ///
    /// Errors: `name` is not one path component (`InvalidInput`).
    pub(crate) fn child(&self, name: &str) -> io::Result<HeldDir> {
        let one = Path::new(name).components().collect::<Vec<_>>();
        if !matches!(one.as_slice(), [Component::Normal(_)]) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not one path component"),
            ));
        }
        Ok(HeldDir {
            shown: self.shown.join(name),
            resolved: self.resolved.join(name),
        })
    }

    /// The path it is named by (for messages and events).
    pub(crate) fn shown(&self) -> &Path {
        &self.shown
    }

    /// Opens the directory at its resolved path one component at a time, each with
    /// `O_NOFOLLOW`, making missing ones (mode 0755: the agent may have removed the log dir,
    /// `git clean -fdx`). A link found on the way (one the agent planted after boot) is
    /// refused, never followed.
    ///
    /// Errors: a component is a link or not a directory (the message names it), or cannot
    /// be made or opened.
    pub(crate) fn open(&self) -> io::Result<OpenDir> {
        let mut dir = OpenDir {
            fd: open_component(Path::new("/"))?.into(),
        };
        let mut walked = PathBuf::from("/");
        for part in self.resolved.components().skip(1) {
            walked.push(part);
            // Opened first, made only when missing (`ENOENT`), then opened: one `openat`
            // for a component that exists, as every one does after the first round.
            let fd = match open_beneath(&dir, part.as_os_str()) {
                Err(nix::errno::Errno::ENOENT) => {
                    match nix::sys::stat::mkdirat(
                        &dir.fd,
                        part.as_os_str(),
                        nix::sys::stat::Mode::from_bits_truncate(0o755),
                    ) {
                        Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
                        Err(e) => return Err(io::Error::from(e)),
                    }
                    open_beneath(&dir, part.as_os_str())
                }
                other => other,
            }
            .map_err(|e| {
                let e = io::Error::from(e);
                let link = nix::sys::stat::fstatat(
                    &dir.fd,
                    part.as_os_str(),
                    nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                )
                .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK);
                let what = if link {
                    "is a symbolic link that was not there when the supervisor started (refused, never followed)".to_owned()
                } else {
                    format!("cannot be opened as a directory: {e}")
                };
                io::Error::new(e.kind(), format!("{} {what}", walked.display()))
            })?;
            dir = OpenDir { fd };
        }
        Ok(dir)
    }
}

/// Opens the existing directory `path` — absolute, as [`std::fs::canonicalize`] gives it
/// (no link, no `..`) — one component at a time, each with `O_NOFOLLOW`, making nothing:
/// the directory a path resolved to earlier, reached now without following any link that
/// appeared on the way since.
///
/// Errors: a component is missing, a link or not a directory (the message names it).
pub(crate) fn open_resolved(path: &Path) -> io::Result<OpenDir> {
    let mut dir = OpenDir {
        fd: open_component(Path::new("/"))?.into(),
    };
    let mut walked = PathBuf::from("/");
    for part in path.components().skip(1) {
        walked.push(part);
        let fd = open_beneath(&dir, part.as_os_str()).map_err(|e| {
            let e = io::Error::from(e);
            io::Error::new(
                e.kind(),
                format!(
                    "{} cannot be opened as a directory without following a link: {e}",
                    walked.display()
                ),
            )
        })?;
        dir = OpenDir { fd };
    }
    Ok(dir)
}

impl OpenDir {
    /// The open directory's `(st_dev, st_ino)`. Errors: `fstat(2)`'s.
    pub(crate) fn id(&self) -> io::Result<(u64, u64)> {
        let st = nix::sys::stat::fstat(&self.fd).map_err(io::Error::from)?;
        #[allow(clippy::useless_conversion)]
        Ok((u64::from(st.st_dev), u64::from(st.st_ino)))
    }

    /// The path that reaches this open directory itself, `/proc/self/fd/<n>`, whatever is
    /// at its name now; join one-component names to it. Valid while `self` lives.
    pub(crate) fn at(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dir_held_below_the_tree_refuses_a_link_that_was_there_before() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, tree.join("logs")).unwrap();
        let followed = HeldDir::resolve(&tree.join("logs"));
        assert!(
            followed.open().is_ok(),
            "the control: a boot follows the link"
        );
        let held = HeldDir::refusing_links_below(&tree.join("logs"), &tree);
        let refused = held.open().unwrap_err().to_string();
        assert!(refused.contains("is a symbolic link"), "{refused}");
        assert!(held.moved());
        assert!(!followed.moved());
    }

    #[test]
    fn a_link_planted_after_boot_is_refused_and_a_removed_dir_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let held = HeldDir::resolve(&tree.join("logs"));
        std::fs::write(held.open().unwrap().at().join("status.json"), "1").unwrap();
        // The agent removes the log dir: it is made again.
        std::fs::remove_dir_all(tree.join("logs")).unwrap();
        std::fs::write(held.open().unwrap().at().join("status.json"), "2").unwrap();
        assert_eq!(
            std::fs::read_to_string(tree.join("logs/status.json")).unwrap(),
            "2"
        );
        // The agent puts a link to the operator's home in its place: refused, named.
        std::fs::remove_dir_all(tree.join("logs")).unwrap();
        std::os::unix::fs::symlink(&home, tree.join("logs")).unwrap();
        let err = held.open().unwrap_err();
        assert!(err.to_string().contains("logs is a symbolic link"), "{err}");
        // A link higher up is refused as well.
        std::fs::remove_file(tree.join("logs")).unwrap();
        std::fs::rename(&tree, dir.path().join("old")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("old"), &tree).unwrap();
        assert!(held.open().is_err());
        let rounds = held.child("rounds").unwrap();
        assert!(rounds.open().is_err());
        assert!(held.child("../x").is_err() && held.child("a/b").is_err());
        // Control: the path itself does lead through the link.
        std::fs::write(tree.join("probe"), "").unwrap();
        assert!(dir.path().join("old/probe").exists());
        assert!(!home.join("status.json").exists());
    }

    #[test]
    fn the_operators_link_at_boot_is_followed_as_it_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir_all(&mnt).unwrap();
        std::os::unix::fs::symlink(&mnt, dir.path().join("logs")).unwrap();
        let held = HeldDir::resolve(&dir.path().join("logs"));
        assert_eq!(held.shown(), dir.path().join("logs"));
        let rounds = held.child("rounds").unwrap().open().unwrap();
        std::fs::write(rounds.at().join("R1.log"), "x").unwrap();
        assert!(mnt.join("rounds/R1.log").exists());
    }
}
