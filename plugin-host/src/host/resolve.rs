//! Turning a configured command (`argv[0]` of a host) into a canonical executable path.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why a command could not be resolved to an executable file.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The command string was empty.
    #[error("empty command: give the executable as an absolute path, a path relative to the config directory, or a program name on PATH")]
    Empty,
    /// A path (absolute, or relative to the base directory) did not name an executable file.
    #[error("command {cmd0:?}: {tried} {reason}; check the path in the configuration")]
    BadPath {
        /// The command as configured.
        cmd0: String,
        /// The path that was tried.
        tried: PathBuf,
        /// What was wrong with it (boxed: keeps the errors that carry a `ResolveError`
        /// small).
        reason: Box<NotExecutable>,
    },
    /// A bare name was not found on PATH.
    #[error(
        "command {cmd0:?} not found on PATH (tried: {}); install it or configure an absolute path",
        display_list(tried)
    )]
    NotOnPath {
        /// The command as configured.
        cmd0: String,
        /// Every candidate path that was tried, in PATH order.
        tried: Vec<PathBuf>,
    },
}

fn display_list(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "PATH is empty or unset".to_owned();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Resolves `cmd0` to the canonical path of an executable regular file.
///
/// * `"/abs/path"` is taken as is;
/// * a command containing `/` is taken relative to `base_dir` (normally the directory of the
///   configuration file);
/// * a bare name is searched in `path_var` (a `PATH`-style, `:`-separated list; empty
///   entries mean the current directory, as in POSIX `execvp`), first hit wins.
///
/// The result is canonicalized (symlinks resolved). A candidate must be a regular file with
/// at least one execute bit set.
///
/// # Errors
/// [`ResolveError`] naming `cmd0` and every path tried.
pub fn resolve_executable(
    cmd0: &str,
    base_dir: &Path,
    path_var: Option<&OsStr>,
) -> Result<PathBuf, ResolveError> {
    if cmd0.is_empty() {
        return Err(ResolveError::Empty);
    }
    if cmd0.contains('/') {
        let candidate = if cmd0.starts_with('/') {
            PathBuf::from(cmd0)
        } else {
            base_dir.join(cmd0)
        };
        return check_executable(&candidate).map_err(|reason| ResolveError::BadPath {
            cmd0: cmd0.to_owned(),
            tried: candidate,
            reason: Box::new(reason),
        });
    }
    let mut tried = Vec::new();
    if let Some(path_var) = path_var {
        for dir in std::env::split_paths(path_var) {
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            };
            let candidate = dir.join(cmd0);
            if tried.contains(&candidate) {
                continue; // PATH lists this directory twice
            }
            if let Ok(found) = check_executable(&candidate) {
                return Ok(found);
            }
            tried.push(candidate);
        }
    }
    Err(ResolveError::NotOnPath {
        cmd0: cmd0.to_owned(),
        tried,
    })
}

/// Why a path is not an executable regular file ([`check_executable`]). Display is a short
/// reason that follows the path in a message (`… /x (/real/x) is not executable`).
#[derive(Debug, thiserror::Error)]
pub enum NotExecutable {
    /// It could not be made canonical (missing, a dangling link, an unreadable directory).
    #[error("cannot be resolved ({0})")]
    Unresolved(std::io::Error),
    /// Its metadata could not be read.
    #[error("cannot be inspected ({0})")]
    Uninspectable(std::io::Error),
    /// The canonical path is not a regular file.
    #[error("({}) is not a regular file", .0.display())]
    NotAFile(PathBuf),
    /// The canonical path has no execute bit.
    #[error("({}) is not executable", .0.display())]
    NoExecuteBit(PathBuf),
}

/// Canonicalizes `path` and checks it is an executable regular file.
///
/// # Errors
/// [`NotExecutable`], what is wrong with it.
pub(crate) fn check_executable(path: &Path) -> Result<PathBuf, NotExecutable> {
    let canonical = path.canonicalize().map_err(NotExecutable::Unresolved)?;
    let meta = std::fs::metadata(&canonical).map_err(NotExecutable::Uninspectable)?;
    if !meta.is_file() {
        return Err(NotExecutable::NotAFile(canonical));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(NotExecutable::NoExecuteBit(canonical));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_relative_and_path_search() {
        let sh = resolve_executable("/bin/sh", Path::new("/nonexistent"), None).unwrap();
        assert_eq!(sh, Path::new("/bin/sh").canonicalize().unwrap());

        let rel = resolve_executable("./sh", Path::new("/bin"), None).unwrap();
        assert_eq!(rel, sh);

        let found = resolve_executable("sh", Path::new("/"), Some(OsStr::new("/nonexistent:/bin")))
            .unwrap();
        assert_eq!(found, sh);
    }

    #[test]
    fn errors_name_command_and_candidates() {
        let err = resolve_executable("no-such-cmd-xyz", Path::new("/"), Some(OsStr::new("/a:/b")))
            .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("no-such-cmd-xyz"), "{msg}");
        assert!(
            msg.contains("/a/no-such-cmd-xyz") && msg.contains("/b/no-such-cmd-xyz"),
            "{msg}"
        );

        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "data").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = resolve_executable(plain.to_str().unwrap(), Path::new("/"), None).unwrap_err();
        assert!(err.to_string().contains("not executable"), "{err}");
        let err = resolve_executable("/etc", Path::new("/"), None).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(matches!(
            resolve_executable("", Path::new("/"), None),
            Err(ResolveError::Empty)
        ));
    }
}
