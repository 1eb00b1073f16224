//! Files in the agent's reach (the work tree, the round logs under a `log_dir` inside it):
//! the agent can replace any of them at will, with a FIFO or a file that grows without
//! end. The one way the supervisor opens them ([`open_regular`]: never blocks, regular
//! files only), reads them whole ([`read_regular`], [`read_regular_to_string`]: the
//! config file and the prompt files, which the agent can write too) and hashes them
//! ([`regular_file_sha256`]: bounded memory), for dirt attribution,
//! `substrate_fingerprint_paths`, result grace, post-round log tails and `peek`.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// Whether a final symlink in the path is followed when the file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Symlink {
    /// Open what it points to.
    Follow,
    /// Refuse it (`O_NOFOLLOW`): the caller has looked at the link itself.
    Refuse,
}

/// Opens `path` for reading if it is a regular file.
///
/// The open is non-blocking (`O_NONBLOCK`; no effect on a regular file's reads), and the
/// type is checked on the opened descriptor: a FIFO put where a file was (opening it for
/// reading would wait for a writer for ever) or a device is never read, whatever was
/// swapped in between a look and the open.
///
/// Errors: the open's, or `InvalidInput` ("not a regular file").
pub(crate) fn open_regular(path: &Path, symlink: Symlink) -> std::io::Result<File> {
    let flags = match symlink {
        Symlink::Follow => libc::O_NONBLOCK,
        Symlink::Refuse => libc::O_NONBLOCK | libc::O_NOFOLLOW,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// A regular file's bytes ([`open_regular`], following a final symlink: an operator may
/// link the config or a prompt).
pub(crate) fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut open_regular(path, Symlink::Follow)?, &mut bytes)?;
    Ok(bytes)
}

/// A regular file's bytes ([`open_regular`]), at most `max` of them: `None` when it does
/// not exist. Errors: the open's, or `FileTooLarge` when it holds more than `max` bytes.
pub(crate) fn read_regular_at_most(
    path: &Path,
    symlink: Symlink,
    max: u64,
) -> std::io::Result<Option<Vec<u8>>> {
    let file = match open_regular(path, symlink) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        other => other?,
    };
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, max.saturating_add(1)),
        &mut bytes,
    )?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("it is larger than {max} bytes"),
        ));
    }
    Ok(Some(bytes))
}

/// A regular file's text ([`read_regular`]); `InvalidData` when it is not UTF-8, as
/// `std::fs::read_to_string`.
pub(crate) fn read_regular_to_string(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_regular(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The first `chars` characters of a regular file ([`open_regular`]), lossy UTF-8, reading
/// at most four bytes a character; empty when it cannot be opened or is not a regular file.
pub(crate) fn head_chars(path: &Path, symlink: Symlink, chars: usize) -> String {
    use std::io::Read;
    let mut bytes = Vec::new();
    let limit = u64::try_from(chars.saturating_mul(4)).unwrap_or(u64::MAX);
    match open_regular(path, symlink).and_then(|f| f.take(limit).read_to_end(&mut bytes)) {
        Ok(_) => String::from_utf8_lossy(&bytes)
            .chars()
            .take(chars)
            .collect(),
        Err(_) => String::new(),
    }
}

/// The sha256 of a regular file's bytes ([`open_regular`]), up to the size it had when
/// opened, streamed through a fixed buffer. `None` when it cannot be opened or is not a
/// regular file. Memory stays at the buffer's size whatever the file's, and a file that
/// grows while it is read (a log another process writes) is read once, not chased.
pub(crate) fn regular_file_sha256(path: &Path, symlink: Symlink) -> Option<[u8; 32]> {
    let file = open_regular(path, symlink).ok()?;
    let len = file.metadata().ok()?.len();
    let mut hasher = Sha256::new();
    std::io::copy(&mut std::io::Read::take(file, len), &mut hasher).ok()?;
    Some(hasher.finalize().into())
}

/// Gives the owner back read, write and search permission on the directory `dir` (`u+rwx`)
/// when an agent took it (`chmod 555 .git`: the supervisor's renames and locks there then
/// fail): only a directory the supervisor's own user owns. Returns the mode before and
/// after, `None` when nothing was changed (already `u+rwx`, another owner, or it failed).
/// Callers decide where this may be done (inside the work tree and the repository only).
pub(crate) fn give_back_owner_rwx(dir: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = std::fs::metadata(dir).ok()?;
    let mode = meta.permissions().mode() & 0o7777;
    // SAFETY: geteuid(2) takes no argument, cannot fail and touches no memory of ours.
    let euid = unsafe { libc::geteuid() };
    if !meta.is_dir() || mode & 0o700 == 0o700 || meta.uid() != euid {
        return None;
    }
    let now = mode | 0o700;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(now)).ok()?;
    Some((mode, now))
}

/// Where files the supervisor reads from the agent's reach resolved when the operator set
/// them up (at boot, or when a reloaded config named them): a link the operator had then (a
/// shared prompt, a prompts dir linked elsewhere) is followed as it resolved then; a link
/// that appeared or was re-pointed since is refused, naming the file, never followed
/// (docs/security.md, "The supervisor is not the agent's deputy").
#[derive(Clone, Debug, Default)]
pub(crate) struct KnownLinks {
    resolved: HashMap<PathBuf, PathBuf>,
    /// Paths refused whatever they lead to now, with why: a link an agent made in an
    /// earlier process and nobody changed since ([`crate::record::agent_changes`]).
    refused: HashMap<PathBuf, String>,
}

/// `path` made absolute and without `.` or `..` components, links not looked at.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

impl KnownLinks {
    /// Where each of `paths` resolves now (a path that does not resolve is checked as one
    /// that involves no link: [`KnownLinks::check`]).
    pub(crate) fn of(paths: &[PathBuf]) -> KnownLinks {
        let mut links = KnownLinks::default();
        links.learn_new(paths);
        links
    }

    /// Learns where each of `paths` not known yet resolves now; a known one keeps where
    /// it resolved when first learnt.
    pub(crate) fn learn_new(&mut self, paths: &[PathBuf]) {
        for path in paths {
            if self.resolved.contains_key(path) {
                continue;
            }
            if let Ok(resolved) = std::fs::canonicalize(path) {
                self.resolved.insert(path.clone(), resolved);
            }
        }
    }

    /// Refuses `path` from now on, whatever it leads to (`why` names it and the fix), and
    /// forgets where it led.
    pub(crate) fn refuse(&mut self, path: &Path, why: String) {
        self.resolved.remove(path);
        self.refused.insert(path.to_path_buf(), why);
    }

    /// Whether `path` may be read: it resolves as it did when learnt, or, not learnt, it
    /// involves no link at all, and it is not refused ([`KnownLinks::refuse`]). Errors
    /// (`PermissionDenied`, naming the file and where it leads now): any other resolution.
    pub(crate) fn check(&self, path: &Path) -> std::io::Result<()> {
        if let Some(why) = self.refused.get(path) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                why.clone(),
            ));
        }
        let Ok(now) = std::fs::canonicalize(path) else {
            return Ok(());
        };
        let expected = self
            .resolved
            .get(path)
            .cloned()
            .unwrap_or_else(|| lexical(path));
        if now == expected {
            return Ok(());
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} now leads to {} through a symbolic link that was not there when agent-runner started (or read this config): refused, never followed (a link the agent made would hand what it names to the supervisor); remove the link, or restart agent-runner if you made it",
                path.display(),
                now.display()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_regular_files_only_and_never_waits_on_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "abc").unwrap();
        let expected: [u8; 32] = Sha256::digest(b"abc").into();
        assert_eq!(regular_file_sha256(&file, Symlink::Refuse), Some(expected));
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(regular_file_sha256(&link, Symlink::Follow), Some(expected));
        assert_eq!(regular_file_sha256(&link, Symlink::Refuse), None);
        let fifo = dir.path().join("p");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(regular_file_sha256(&fifo, Symlink::Follow), None);
        assert_eq!(regular_file_sha256(dir.path(), Symlink::Follow), None);
        assert_eq!(read_regular_to_string(&link).unwrap(), "abc");
        let refused = read_regular(&fifo).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_link_known_at_boot_is_followed_a_new_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("shared.md"), "shared").unwrap();
        std::fs::write(root.join("key"), "KEY").unwrap();
        std::fs::write(root.join("plain.md"), "plain").unwrap();
        let linked = root.join("linked.md");
        std::os::unix::fs::symlink(root.join("shared.md"), &linked).unwrap();
        let plain = root.join("plain.md");
        let links = KnownLinks::of(&[linked.clone(), plain.clone()]);
        assert!(links.check(&linked).is_ok());
        assert!(links.check(&plain).is_ok());
        // Re-pointed, and a plain file made a link: refused, naming the file.
        std::fs::remove_file(&linked).unwrap();
        std::os::unix::fs::symlink(root.join("key"), &linked).unwrap();
        let refused = links.check(&linked).unwrap_err().to_string();
        assert!(refused.contains("linked.md now leads to"), "{refused}");
        std::fs::remove_file(&plain).unwrap();
        std::os::unix::fs::symlink(root.join("key"), &plain).unwrap();
        assert!(links.check(&plain).is_err());
        // Not known, no link: read.
        assert!(links.check(&root.join("shared.md")).is_ok());
    }
}
