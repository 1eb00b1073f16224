//! Replacing the agent-runner binary on disk for `upgrade` (docs/operations.md, "upgrade"),
//! and with it the `plugin-host` launcher of the same build (docs/security.md "The
//! launcher"): both or neither. The new binary and the launcher beside it are copied into a
//! staging directory inside the installed binary's own directory (written, fsync'd, given
//! the installed file's mode and owner, closed), where the checks run them as a pair; each
//! installed file is kept as `<name>.previous` (a hard link, so it costs no space), and the
//! staged files are renamed over the installed ones, the launcher first (a supervisor
//! already running keeps the launcher it opened at boot). rename(2) within one directory is atomic: at
//! every instant the installed path names either the whole old file or the whole new one,
//! never a half-written one. A running process keeps executing its old inode (the rename
//! does not write into it, so there is no ETXTBSY); only processes started afterwards run
//! the new bytes. [`restore`] swaps `<name>.previous` back the same way.
//!
//! One upgrade at a time per directory: [`SwapLock`] holds an exclusive flock(2) on the
//! directory itself (no lock file is left behind).

use nix::fcntl::{Flock, FlockArg};
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Suffix of the kept old binary: `<name>.previous`, beside the installed one.
pub(crate) const PREVIOUS_SUFFIX: &str = ".previous";

/// Why a step of the swap failed, in words naming the path and the cause.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SwapError(pub String);

fn err(what: &str, path: &Path, e: impl std::fmt::Display) -> SwapError {
    SwapError(format!("{what} {}: {e}", path.display()))
}

/// The exclusive lock on the installed binary's directory, held for the whole upgrade;
/// released when dropped.
pub(crate) struct SwapLock {
    _dir: Flock<File>,
}

/// Takes the lock of `dir` without waiting.
///
/// Errors: another upgrade holds it, or the directory cannot be opened.
pub(crate) fn lock(dir: &Path) -> Result<SwapLock, SwapError> {
    let file = File::open(dir).map_err(|e| err("cannot open", dir, e))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(dir) => Ok(SwapLock { _dir: dir }),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Err(SwapError(format!(
            "another upgrade of a binary in {} is running",
            dir.display()
        ))),
        Err((_, e)) => Err(err("cannot lock", dir, e)),
    }
}

/// `<installed>.previous`.
pub(crate) fn previous_path(installed: &Path) -> PathBuf {
    let mut name = installed.as_os_str().to_owned();
    name.push(PREVIOUS_SUFFIX);
    PathBuf::from(name)
}

/// The launcher beside `binary`: `<its directory>/plugin-host`.
pub(crate) fn launcher_beside(binary: &Path) -> PathBuf {
    binary
        .parent()
        .unwrap_or(Path::new("/"))
        .join(agent_runner_plugin_host::common::launcher::LAUNCHER_NAME)
}

/// A copy of the new build (the binary and its launcher) staged in a directory beside the
/// installed binary, removed when dropped, with whatever was not renamed into place.
pub(crate) struct Staged {
    /// The staging directory: `<dir>/.<name>.upgrade-<pid>`.
    dir: PathBuf,
    /// The staged binary: `<staging dir>/<name>`.
    pub path: PathBuf,
    /// The staged launcher: `<staging dir>/plugin-host`, beside it, as the checks run it.
    launcher: PathBuf,
    /// sha256 of the binary's bytes, lowercase hex.
    pub sha256: String,
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What [`stage`] refuses before anything is written: the source is the installed file
/// itself, not a regular file, not executable, empty, or byte-identical to it.
fn check_source(source: &Path, src: &File, installed: &std::fs::Metadata) -> Result<(), SwapError> {
    let meta = src.metadata().map_err(|e| err("cannot stat", source, e))?;
    if !meta.file_type().is_file() {
        return Err(SwapError(format!(
            "{} is not a regular file",
            source.display()
        )));
    }
    if meta.dev() == installed.dev() && meta.ino() == installed.ino() {
        return Err(SwapError(format!(
            "{} is the installed binary itself: nothing to upgrade",
            source.display()
        )));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(SwapError(format!(
            "{} is not executable (mode {:o}): chmod +x it first",
            source.display(),
            meta.permissions().mode() & 0o7777
        )));
    }
    if meta.len() == 0 {
        return Err(SwapError(format!("{} is empty", source.display())));
    }
    Ok(())
}

/// sha256 of the file at `path`, lowercase hex.
fn sha256_of(path: &Path) -> Result<String, SwapError> {
    let mut file = File::open(path).map_err(|e| err("cannot read", path, e))?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| err("cannot read", path, e))?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
    }
    Ok(hex(&hash.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Copies `source` (a symbolic link is followed; its bytes are read once, through one open
/// file) and the launcher beside it ([`launcher_beside`] the resolved source) into a new
/// staging directory beside `installed`, each fsync'd, with `installed`'s mode (and owner,
/// where allowed), closed so it can be executed. The staged copies are what gets checked
/// and renamed into place, so a source changed after this call changes nothing.
///
/// Errors: the checks of [`check_source`]; no launcher beside the source; the directory is
/// not writable; a read, write or fsync failed (a full disk) — the staging directory is
/// removed.
pub(crate) fn stage(source: &Path, installed: &Path) -> Result<Staged, SwapError> {
    let installed_meta =
        std::fs::metadata(installed).map_err(|e| err("cannot stat", installed, e))?;
    let mut src = File::open(source).map_err(|e| err("cannot open", source, e))?;
    check_source(source, &src, &installed_meta)?;
    let dir = installed.parent().unwrap_or(Path::new("/"));
    let name = installed
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let launcher_source = launcher_beside(&source.canonicalize().unwrap_or(source.to_owned()));
    let mut launcher_src = File::open(&launcher_source).map_err(|e| {
        SwapError(format!(
            "no launcher beside the new binary ({}: {e}): a build's agent-runner and plugin-host are installed together",
            launcher_source.display()
        ))
    })?;
    let staging = dir.join(format!(".{name}.upgrade-{}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&staging)
        .map_err(|e| err("cannot write in", dir, e))?;
    let mut staged = Staged {
        path: staging.join(&name),
        launcher: staging.join(agent_runner_plugin_host::common::launcher::LAUNCHER_NAME),
        dir: staging,
        sha256: String::new(),
    };
    staged.sha256 = copy_into(&mut src, source, &staged.path, &installed_meta)?;
    if staged.sha256 == sha256_of(installed)? {
        return Err(SwapError(format!(
            "{} has the same bytes as the installed {}: nothing to upgrade",
            source.display(),
            installed.display()
        )));
    }
    copy_into(
        &mut launcher_src,
        &launcher_source,
        &staged.launcher,
        &installed_meta,
    )?;
    Ok(staged)
}

/// Copies `src` (read from `source`) into a new file `path` with `installed`'s mode and
/// owner (where allowed: root, or an owner already ours), fsync'd and closed; returns the
/// sha256 of the bytes, lowercase hex.
fn copy_into(
    src: &mut File,
    source: &Path,
    path: &Path,
    installed: &std::fs::Metadata,
) -> Result<String, SwapError> {
    let mut out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| err("cannot write", path, e))?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = src
            .read(&mut buf)
            .map_err(|e| err("cannot read", source, e))?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| err("cannot write", path, e))?;
    }
    if let Err(e) = std::os::unix::fs::fchown(&out, Some(installed.uid()), Some(installed.gid())) {
        if e.kind() != std::io::ErrorKind::PermissionDenied {
            return Err(err("cannot chown", path, e));
        }
    }
    out.set_permissions(std::fs::Permissions::from_mode(
        installed.permissions().mode() & 0o7777,
    ))
    .map_err(|e| err("cannot chmod", path, e))?;
    out.sync_all().map_err(|e| err("cannot fsync", path, e))?;
    Ok(hex(&hash.finalize()))
}

/// Keeps `installed` as `<installed>.previous` (a hard link made under a temporary name,
/// then renamed over an older `.previous`), then renames `staged` over `installed` and
/// fsyncs the directory.
///
/// Errors: a link, rename or fsync failed; `installed` is unchanged unless the last rename
/// succeeded (then the error is only the directory's fsync).
pub(crate) fn swap(staged: Staged, installed: &Path) -> Result<(), SwapError> {
    let launcher = launcher_beside(installed);
    let launcher_previous = previous_path(&launcher);
    let had_launcher = launcher.exists();
    if had_launcher {
        link_over(&launcher, &launcher_previous)?;
    } else {
        // A `.previous` of an older pair must not be restored with this one's binary.
        let _ = std::fs::remove_file(&launcher_previous);
    }
    std::fs::rename(&staged.launcher, &launcher)
        .map_err(|e| err("cannot rename the new launcher over", &launcher, e))?;
    let placed = link_over(installed, &previous_path(installed)).and_then(|()| {
        std::fs::rename(&staged.path, installed)
            .map_err(|e| err("cannot rename the new binary over", installed, e))
    });
    if let Err(e) = placed {
        // Neither: the old launcher goes back beside the old binary.
        let _ = if had_launcher {
            link_over(&launcher_previous, &launcher)
        } else {
            std::fs::remove_file(&launcher).map_err(|e| err("cannot remove", &launcher, e))
        };
        return Err(e);
    }
    sync_dir(installed)
}

/// Puts `<installed>.previous` back at `installed`, and the launcher's `.previous` beside
/// it where one was kept (each a hard link under a temporary name, renamed over): the
/// rollback. The `.previous` files stay.
///
/// Errors: a link, rename or fsync failed.
pub(crate) fn restore(installed: &Path) -> Result<(), SwapError> {
    let launcher = launcher_beside(installed);
    if previous_path(&launcher).exists() {
        link_over(&previous_path(&launcher), &launcher)?;
    }
    link_over(&previous_path(installed), installed)?;
    sync_dir(installed)
}

/// Makes `to` a hard link of `from`, replacing whatever is at `to` atomically.
fn link_over(from: &Path, to: &Path) -> Result<(), SwapError> {
    let mut tmp = to.as_os_str().to_owned();
    tmp.push(format!(".link-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    std::fs::hard_link(from, &tmp).map_err(|e| err("cannot link", &tmp, e))?;
    std::fs::rename(&tmp, to).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err("cannot rename over", to, e)
    })
}

fn sync_dir(installed: &Path) -> Result<(), SwapError> {
    let dir = installed.parent().unwrap_or(Path::new("/"));
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| err("cannot fsync", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exe(dir: &Path, name: &str, body: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn swap_keeps_both_old_files_as_previous_and_restore_puts_both_back() {
        let dir = tempfile::tempdir().unwrap();
        let installed = exe(dir.path(), "agent-runner", b"old");
        exe(dir.path(), "plugin-host", b"old launcher");
        let build = dir.path().join("build");
        std::fs::create_dir(&build).unwrap();
        let new = exe(&build, "agent-runner", b"new bytes");
        exe(&build, "plugin-host", b"new launcher");
        let staged = stage(&new, &installed).unwrap();
        assert!(staged.path.starts_with(dir.path()));
        swap(staged, &installed).unwrap();
        let launcher = dir.path().join("plugin-host");
        assert_eq!(std::fs::read(&installed).unwrap(), b"new bytes");
        assert_eq!(std::fs::read(&launcher).unwrap(), b"new launcher");
        assert_eq!(std::fs::read(previous_path(&installed)).unwrap(), b"old");
        assert_eq!(
            std::fs::read(previous_path(&launcher)).unwrap(),
            b"old launcher"
        );
        let mode = std::fs::metadata(&installed).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        restore(&installed).unwrap();
        assert_eq!(std::fs::read(&installed).unwrap(), b"old");
        assert_eq!(std::fs::read(&launcher).unwrap(), b"old launcher");
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "agent-runner",
                "agent-runner.previous",
                "build",
                "plugin-host",
                "plugin-host.previous"
            ],
            "no staged or link file left"
        );
    }

    #[test]
    fn a_new_binary_without_its_launcher_is_refused_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let installed = exe(dir.path(), "agent-runner", b"old");
        let build = dir.path().join("build");
        std::fs::create_dir(&build).unwrap();
        let new = exe(&build, "agent-runner", b"new bytes");
        let e = stage(&new, &installed).err().unwrap();
        assert!(e.0.contains("no launcher beside the new binary"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn stage_refuses_what_cannot_be_a_new_binary_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let installed = exe(dir.path(), "agent-runner", b"old");
        exe(dir.path(), "plugin-host", b"launcher");
        let same = exe(dir.path(), "copy", b"old");
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&installed, &link).unwrap();
        let cases: [(&Path, &str); 5] = [
            (&installed, "the installed binary itself"),
            (&link, "the installed binary itself"),
            (&same, "same bytes"),
            (&plain, "not executable"),
            (dir.path(), "not a regular file"),
        ];
        for (source, why) in cases {
            let e = stage(source, &installed).err().expect(why);
            assert!(e.0.contains(why), "{}: {e}", source.display());
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 5);
    }

    #[test]
    fn a_second_lock_of_the_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock(dir.path()).unwrap();
        let e = lock(dir.path()).err().unwrap();
        assert!(e.0.contains("another upgrade"), "{e}");
        drop(first);
        lock(dir.path()).unwrap();
    }
}
