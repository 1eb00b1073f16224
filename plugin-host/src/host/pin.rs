//! Pins (`sha256:<hex>`) and executables verified against them.
//!
//! [`open_and_hash`] opens a host executable once, hashes it from that descriptor and keeps
//! the descriptor: [`crate::host::launch::spawn`] later executes *that* descriptor with
//! `execveat(fd, "", AT_EMPTY_PATH)`, so the bytes that were hashed are the bytes that run,
//! even if the path is replaced (renamed over) in between.
//!
//! For a `#!` script the interpreter named on the first line is resolved here (including
//! `#!/usr/bin/env NAME` and pyenv shims) and the launch executes that interpreter directly,
//! handing it the verified script as `/dev/fd/N`.

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use sha2::{Digest, Sha256};

use crate::host::resolve::{check_executable, resolve_executable, ResolveError};

/// A sha256 digest of an executable's bytes, written `sha256:<64 lowercase hex digits>`
/// (the form used in `[plugins.pin]` of the configuration).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Pin(pub [u8; 32]);

/// A string that is not of the form `sha256:<64 lowercase hex digits>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid pin {input:?}: expected \"sha256:\" followed by 64 lowercase hex digits (as printed by `sha256sum`)")]
pub struct ParsePinError {
    /// The rejected input.
    pub input: String,
}

impl Sha256Pin {
    /// The digest of `bytes`.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Sha256Pin(Sha256::digest(bytes).into())
    }
}

impl FromStr for Sha256Pin {
    type Err = ParsePinError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParsePinError {
            input: s.to_owned(),
        };
        let hex = s.strip_prefix("sha256:").ok_or_else(err)?;
        if hex.len() != 64 {
            return Err(err());
        }
        let mut out = [0u8; 32];
        for (i, pair) in hex.as_bytes().chunks_exact(2).enumerate() {
            let nibble = |c: u8| match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                _ => None,
            };
            let hi = nibble(pair[0]).ok_or_else(err)?;
            let lo = nibble(pair[1]).ok_or_else(err)?;
            out[i] = (hi << 4) | lo;
        }
        Ok(Sha256Pin(out))
    }
}

impl fmt::Display for Sha256Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Sha256Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The interpreter of a `#!` script host, resolved to a real executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    /// Canonical path of the interpreter binary (an ELF file, never a script). For
    /// `#!/usr/bin/env NAME`, NAME resolved on the supervisor's PATH; a pyenv shim is
    /// replaced by the interpreter it would run.
    pub path: PathBuf,
    /// The interpreter as the `#!` line (or `env`'s PATH search) named it, before symlinks
    /// are resolved: passed as its `argv[0]`, so that a virtual environment's
    /// `<venv>/bin/python3` (a symlink to the base interpreter) still finds its
    /// `pyvenv.cfg`. Equal to `path` for a pyenv shim (the shim is never run).
    pub named: PathBuf,
    /// Arguments between the interpreter and the script path, from the `#!` line (for `env`,
    /// what follows NAME; `env -S` lines are split on whitespace).
    pub args: Vec<String>,
}

/// An executable whose bytes were hashed from an open file descriptor that is kept for the
/// launch.
#[derive(Debug)]
pub struct VerifiedExecutable {
    /// Canonical path at the time of hashing (informational: the launch uses the descriptor).
    pub path: PathBuf,
    /// sha256 of the bytes read from the descriptor.
    pub sha256: Sha256Pin,
    /// `Some` for a `#!` script: the interpreter that will run it.
    pub interpreter: Option<Interpreter>,
    /// The descriptor that was hashed, opened `O_RDONLY | O_CLOEXEC`. (For scripts the launch
    /// clears `FD_CLOEXEC` on its own duplicate in the child only, so the descriptor never
    /// leaks into other programs the supervisor starts.)
    file: File,
    /// Size and timestamps at hashing time; compared again at launch to detect in-place
    /// writes to the same inode.
    stamp: Stamp,
}

/// Why an executable could not be opened, hashed or its interpreter resolved.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// The path did not name an executable regular file.
    #[error("host executable {path}: {reason}")]
    NotExecutable {
        /// The path given.
        path: PathBuf,
        /// What was wrong.
        reason: crate::host::resolve::NotExecutable,
    },
    /// Opening or reading the file failed.
    #[error("host executable {path}: cannot {action}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// "open" or "read".
        action: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The `#!` line could not be turned into a runnable interpreter.
    #[error("host script {path}: interpreter line {line:?}: {reason}")]
    Interpreter {
        /// The script.
        path: PathBuf,
        /// The `#!` line (without `#!`).
        line: String,
        /// What went wrong and what to do.
        reason: String,
    },
    /// `#!/usr/bin/env NAME`: NAME could not be found.
    #[error("host script {path}: {source}")]
    InterpreterNotFound {
        /// The script.
        path: PathBuf,
        /// The resolution failure.
        source: ResolveError,
    },
}

/// Maximum length of a `#!` line the kernel honours (BINPRM_BUF_SIZE, include/uapi/linux/binfmts.h).
const SHEBANG_MAX: usize = 256;

/// Opens `path` once, hashes it from that descriptor and keeps the descriptor.
///
/// For a `#!` script the interpreter is resolved from the supervisor's current `PATH` (see
/// [`Interpreter`]). Hashing costs about 0.7 ms per MB.
///
/// # Errors
/// [`PinError`] if the path is not an executable regular file, cannot be read, or names a
/// script whose interpreter cannot be resolved to an ELF executable.
pub fn open_and_hash(path: &Path) -> Result<VerifiedExecutable, PinError> {
    let canonical = check_executable(path).map_err(|reason| PinError::NotExecutable {
        path: path.to_owned(),
        reason,
    })?;
    let io_err = |action, source| PinError::Io {
        path: canonical.clone(),
        action,
        source,
    };
    // std opens with O_CLOEXEC.
    let mut file = File::open(&canonical).map_err(|e| io_err("open", e))?;
    let meta = file.metadata().map_err(|e| io_err("open", e))?;
    if !meta.is_file() {
        return Err(PinError::NotExecutable {
            reason: crate::host::resolve::NotExecutable::NotAFile(canonical.clone()),
            path: canonical,
        });
    }
    let mut hasher = Sha256::new();
    let mut head = Vec::with_capacity(SHEBANG_MAX);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err("read", e)),
        };
        if head.len() < SHEBANG_MAX {
            let take = (SHEBANG_MAX - head.len()).min(n);
            head.extend_from_slice(&buf[..take]);
        }
        hasher.update(&buf[..n]);
    }
    let sha256 = Sha256Pin(hasher.finalize().into());
    let interpreter = if head.starts_with(b"#!") {
        Some(parse_shebang(&canonical, &head)?)
    } else {
        None
    };
    Ok(VerifiedExecutable {
        path: canonical,
        sha256,
        interpreter,
        stamp: stamp_of(&meta),
        file,
    })
}

/// `st_size`, `st_mtime` and `st_ctime` of an inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

fn stamp_of(meta: &std::fs::Metadata) -> Stamp {
    Stamp {
        size: meta.size(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
    }
}

impl VerifiedExecutable {
    /// The verified descriptor (for the launch).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Whether the inode behind the descriptor still looks as it did when it was hashed: same
    /// size and mtime, and, while it is still linked into a directory, the same ctime (which
    /// a writer cannot reset). Once the path was replaced (renamed over or unlinked; link
    /// count 0) the unlink itself changes ctime, so only size and mtime are compared.
    /// A best-effort check against in-place writes; a rename over the path never affects
    /// the descriptor.
    ///
    /// # Errors
    /// `fstat` failure.
    pub fn unchanged_since_hash(&self) -> std::io::Result<bool> {
        let meta = self.file.metadata()?;
        let now = stamp_of(&meta);
        Ok(now.size == self.stamp.size
            && now.mtime == self.stamp.mtime
            && (meta.nlink() == 0 || now.ctime == self.stamp.ctime))
    }
}

/// Parses the `#!` line in `head` and resolves the interpreter.
fn parse_shebang(script: &Path, head: &[u8]) -> Result<Interpreter, PinError> {
    let line_end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = String::from_utf8_lossy(&head[2..line_end])
        .trim()
        .to_owned();
    let fail = |reason: String| PinError::Interpreter {
        path: script.to_owned(),
        line: line.clone(),
        reason,
    };
    if line.is_empty() {
        return Err(fail("no interpreter named after #!".into()));
    }
    // The kernel splits the line into the interpreter and at most one argument (the rest).
    let (interp, rest) = match line.find([' ', '\t']) {
        Some(i) => (&line[..i], line[i..].trim()),
        None => (line.as_str(), ""),
    };
    let interp_path = check_executable(Path::new(interp))
        .map_err(|r| fail(format!("interpreter {interp} {r}")))?;
    let is_env = interp_path.file_name() == Some(OsStr::new("env"));
    let (target, named, args): (PathBuf, PathBuf, Vec<String>) = if is_env {
        let mut words: Vec<&str> = rest.split_whitespace().collect();
        if words.first() == Some(&"-S") {
            words.remove(0);
        } else if let Some(w) = words.first() {
            if let Some(joined) = w.strip_prefix("-S") {
                words[0] = joined;
            }
        }
        let Some((name, more)) = words.split_first() else {
            return Err(fail("`env` without a program name".into()));
        };
        if name.starts_with('-') || name.contains('=') {
            return Err(fail(format!(
                "env option or assignment {name:?} is not supported; name the interpreter directly"
            )));
        }
        let path_var = std::env::var_os("PATH");
        let found =
            resolve_executable(name, Path::new("/"), path_var.as_deref()).map_err(|source| {
                PinError::InterpreterNotFound {
                    path: script.to_owned(),
                    source,
                }
            })?;
        let named = path_var
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(name))
            .find(|c| check_executable(c).ok().as_ref() == Some(&found))
            .unwrap_or_else(|| found.clone());
        (found, named, more.iter().map(|s| (*s).to_owned()).collect())
    } else {
        let args = if rest.is_empty() {
            Vec::new()
        } else {
            vec![rest.to_owned()]
        };
        (interp_path, PathBuf::from(interp), args)
    };
    let (real, named) = match resolve_pyenv_shim(&target).map_err(|e| fail(e.to_string()))? {
        Some(real) => (real.clone(), real),
        None => (target, named),
    };
    if is_script(&real).map_err(|e| fail(format!("cannot read {}: {e}", real.display())))? {
        return Err(fail(format!(
            "the interpreter {} is itself a script; point #! at a binary interpreter",
            real.display()
        )));
    }
    Ok(Interpreter {
        path: real,
        named,
        args,
    })
}

fn is_script(path: &Path) -> std::io::Result<bool> {
    let mut f = File::open(path)?;
    let mut two = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        match f.read(&mut two[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got == 2 && &two == b"#!")
}

/// If `path` is a pyenv shim (a shell script in `<PYENV_ROOT>/shims` that execs `pyenv`),
/// returns the interpreter it would run: the first version named by `PYENV_VERSION`,
/// `.python-version` (searched upwards from the current directory) or
/// `<PYENV_ROOT>/version` that has `bin/<name>`; for `system` (or nothing usable) the first
/// match on PATH outside pyenv's shim directories. `Ok(None)` when `path` is not a shim.
///
/// # Errors
/// [`NoPyenvInterpreter`]: a shim that names no installed interpreter.
fn resolve_pyenv_shim(path: &Path) -> Result<Option<PathBuf>, NoPyenvInterpreter> {
    let Some(dir) = path.parent() else {
        return Ok(None);
    };
    if dir.file_name() != Some(OsStr::new("shims")) {
        return Ok(None);
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(None);
    };
    if !text.starts_with("#!") || !text.contains("pyenv") {
        return Ok(None);
    }
    let name = path.file_name().unwrap_or_default();
    let root = dir.parent().unwrap_or(Path::new("/")).to_owned();
    let mut versions: Vec<String> = Vec::new();
    if let Ok(v) = std::env::var("PYENV_VERSION") {
        versions.extend(v.split(':').map(str::to_owned));
    } else if let Some(v) = version_file_upwards() {
        versions.extend(v);
    } else if let Ok(v) = std::fs::read_to_string(root.join("version")) {
        versions.extend(version_words(&v));
    }
    for v in versions.iter().filter(|v| v.as_str() != "system") {
        if let Ok(found) = check_executable(&root.join("versions").join(v).join("bin").join(name)) {
            return Ok(Some(found));
        }
    }
    // "system": the next match on PATH that is not a pyenv shim.
    if let Some(path_var) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path_var) {
            if d.file_name() == Some(OsStr::new("shims")) || d.starts_with(&root) {
                continue;
            }
            if let Ok(found) = check_executable(&d.join(name)) {
                return Ok(Some(found));
            }
        }
    }
    Err(NoPyenvInterpreter {
        shim: path.to_owned(),
        versions,
    })
}

/// A pyenv shim whose versions (and PATH) hold no interpreter of its name
/// ([`resolve_pyenv_shim`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "pyenv shim {} names no installed interpreter (versions tried: {versions:?}); \
     set PYENV_VERSION or point #! at the real interpreter",
    shim.display()
)]
struct NoPyenvInterpreter {
    /// The shim.
    shim: PathBuf,
    /// The versions tried, in order.
    versions: Vec<String>,
}

fn version_words(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

fn version_file_upwards() -> Option<Vec<String>> {
    let cwd = std::env::current_dir().ok()?;
    for dir in cwd.ancestors() {
        if let Ok(text) = std::fs::read_to_string(dir.join(".python-version")) {
            let words = version_words(&text);
            if !words.is_empty() {
                return Some(words);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_round_trip_and_rejections() {
        let text = format!("sha256:{}", "0123456789abcdef".repeat(4));
        let pin: Sha256Pin = text.parse().unwrap();
        assert_eq!(pin.0[0], 0x01);
        assert_eq!(pin.0[31], 0xef);
        assert_eq!(pin.to_string(), text);
        for bad in [
            "",
            "sha256:",
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde",
            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0",
            "sha512:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "sha256:g123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            let err = bad.parse::<Sha256Pin>().unwrap_err();
            assert!(err.to_string().contains("sha256:"), "{err}");
        }
    }

    #[test]
    fn known_digest() {
        // sha256("abc"), FIPS 180-2 appendix B.1.
        assert_eq!(
            Sha256Pin::of_bytes(b"abc").to_string(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn env_shebang_and_plain_shebang() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s");
        std::fs::write(&p, "#!/usr/bin/env -S sh -e\necho hi\n").unwrap();
        let i = parse_shebang(&p, b"#!/usr/bin/env -S sh -e\necho hi\n").unwrap();
        assert_eq!(i.path, Path::new("/bin/sh").canonicalize().unwrap());
        assert_eq!(i.args, vec!["-e".to_owned()]);
        let i = parse_shebang(&p, b"#!/bin/sh -e -u\n").unwrap();
        assert_eq!(i.args, vec!["-e -u".to_owned()]);
        assert!(parse_shebang(&p, b"#!\n").is_err());
        assert!(parse_shebang(&p, b"#!/usr/bin/env\n").is_err());
        assert!(parse_shebang(&p, b"#!/usr/bin/env FOO=1 sh\n").is_err());
        let err = parse_shebang(&p, b"#!/usr/bin/env no-such-interp-xyz\n").unwrap_err();
        assert!(err.to_string().contains("no-such-interp-xyz"), "{err}");
    }
}
