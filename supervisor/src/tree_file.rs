//! Files in the agent's reach (the work tree, the round logs under a `log_dir` inside it):
//! the agent can replace any of them at will, with a FIFO or a file that grows without
//! end. The one way the supervisor opens them ([`open_regular`]: never blocks, regular
//! files only), reads them whole ([`read_regular`], [`read_regular_to_string`]: the
//! config file and the prompt files, which the agent can write too) and hashes them
//! ([`regular_file_sha256`]: bounded memory), for dirt attribution,
//! `substrate_fingerprint_paths`, result grace, post-round log tails and `peek`.

use sha2::{Digest, Sha256};
use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

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
}
