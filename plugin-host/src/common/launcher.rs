//! The supervisor's side: start the `plugin-host` launcher with a plan, and learn whether
//! the target runs.
//!
//! [`Launcher::command`] writes the plan into a sealed memory file, makes the status pipe,
//! and returns a `Command` for the launcher whose only step between fork and exec clears
//! the close-on-exec flag of the descriptors the plan names. The caller adds stdio, the
//! working directory and the process group, spawns it, and calls [`Pending::confirm`]: the
//! status pipe closes empty when the launcher executed the target, or carries the
//! launcher's [`Failure`].

use std::io::{Seek, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::common::build_note;
use crate::common::fd_passing::above_stdio;
use crate::common::plan::{Failure, Plan, BUILD_ID};

/// The launcher executable's file name, beside `agent-runner`.
pub const LAUNCHER_NAME: &str = "plugin-host";

/// How long the launcher may take from its exec to the target's (its steps are
/// milliseconds; a launcher stuck longer is killed and the spawn fails).
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(30);

/// The path set with [`Launcher::use_path`] (tests, benches).
static CHOSEN: OnceLock<PathBuf> = OnceLock::new();

/// The launcher this process launches with: opened and checked once.
static OPENED: OnceLock<Result<Launcher, LauncherError>> = OnceLock::new();

/// Why the launcher cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LauncherError {
    /// No launcher where it must be.
    #[error("the confinement launcher {path} is missing ({reason}); it is installed beside agent-runner (`cargo install --path supervisor` installs both); nothing is launched without it")]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
        /// The OS error.
        reason: String,
    },
    /// The launcher answers with another build.
    #[error("the confinement launcher {path} is build {found}, not this supervisor's {BUILD_ID}; install agent-runner and plugin-host from the same build; nothing is launched with it")]
    Foreign {
        /// The launcher.
        path: PathBuf,
        /// What it said its build is.
        found: String,
    },
    /// The launcher could not be asked (not executable, crashed).
    #[error("the confinement launcher {path} cannot be run: {reason}")]
    Unusable {
        /// The launcher.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The plan's memory file or the status pipe could not be made.
    #[error("cannot prepare the launch: {0}")]
    Io(String),
}

/// The `plugin-host` launcher, held open: every launch runs the file that was checked,
/// even if its path is replaced later (an upgrade swaps it for the next supervisor, not
/// for this one).
#[derive(Debug)]
pub struct Launcher {
    path: PathBuf,
    file: std::fs::File,
}

impl Launcher {
    /// Makes `path` the launcher of this process (first call wins; later calls, and calls
    /// after the first launch, are ignored). For tests and benchmarks, whose executables do
    /// not sit beside it.
    pub fn use_path(path: impl Into<PathBuf>) {
        let _ = CHOSEN.set(path.into());
    }

    /// Where this process looks for its launcher: the path set with
    /// [`Launcher::use_path`], else `plugin-host` in the directory of the running
    /// executable.
    pub fn default_path() -> PathBuf {
        if let Some(path) = CHOSEN.get() {
            return path.clone();
        }
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_owned))
            .unwrap_or_default()
            .join(LAUNCHER_NAME)
    }

    /// The launcher of this process, opened and checked ([`Launcher::open`]) on first use.
    ///
    /// # Errors
    /// [`LauncherError`]: missing, unusable, or another build (the same answer for the
    /// life of the process: fail closed, never a fallback).
    pub fn get() -> Result<&'static Launcher, LauncherError> {
        OPENED
            .get_or_init(|| Launcher::open(&Launcher::default_path()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Opens the launcher at `path` and learns its build, which must be this process's
    /// [`BUILD_ID`]: read from the section of the open file ([`build_note::read`]) when it
    /// is an ELF executable of this machine with one and the file may be executed
    /// (`access(2)` `X_OK` through the open descriptor: permissions and a `noexec` mount),
    /// else asked of the launcher itself (`--build-id`). Every plan is checked again by the
    /// launcher itself.
    ///
    /// # Errors
    /// [`LauncherError`]: missing, unusable, or another build.
    pub fn open(path: &Path) -> Result<Launcher, LauncherError> {
        let file = std::fs::File::open(path).map_err(|e| LauncherError::Missing {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let launcher = Launcher {
            path: path.to_owned(),
            file,
        };
        let found = match build_note::read(&launcher.file) {
            Some(found) if launcher.executable() => found,
            _ => launcher.ask_build()?,
        };
        if found != BUILD_ID {
            return Err(LauncherError::Foreign {
                path: path.to_owned(),
                found,
            });
        }
        Ok(launcher)
    }

    /// Whether this process may execute the open file (`access(2)` `X_OK` on its
    /// descriptor's path, which the kernel resolves to the file itself).
    fn executable(&self) -> bool {
        nix::unistd::access(&self.exec_path(), nix::unistd::AccessFlags::X_OK).is_ok()
    }

    /// Runs the launcher with `--build-id` and returns what it printed.
    fn ask_build(&self) -> Result<String, LauncherError> {
        let unusable = |reason: String| LauncherError::Unusable {
            path: self.path.clone(),
            reason,
        };
        let out = std::process::Command::new(self.exec_path())
            .arg0(LAUNCHER_NAME)
            .arg("--build-id")
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .map_err(|e| unusable(e.to_string()))?;
        if !out.status.success() {
            return Err(unusable(format!("`--build-id` ended with {}", out.status)));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Its path, as opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What is executed: the open file, through `/proc/self/fd` (in the forked child, its
    /// copy of the descriptor; the path is resolved before close-on-exec applies).
    fn exec_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
    }

    /// The sha256 of its bytes (the open file's), hex.
    ///
    /// # Errors
    /// It cannot be read.
    pub fn sha256(&self) -> std::io::Result<String> {
        let mut file = std::fs::File::open(self.exec_path())?;
        let mut hasher = Sha256::new();
        std::io::copy(&mut file, &mut hasher)?;
        Ok(hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    }

    /// A command running the launcher on `plan`, with `fds` (the descriptors the plan names,
    /// each close-on-exec in this process and above the standard streams) passed on. The
    /// caller sets stdio, the working directory and the process group, spawns it, and
    /// then calls [`Pending::confirm`].
    ///
    /// # Errors
    /// [`LauncherError::Io`] when the memory file or the pipe cannot be made.
    pub fn command(
        &self,
        plan: &Plan,
        fds: &[RawFd],
    ) -> Result<(std::process::Command, Pending), LauncherError> {
        let io = |e: std::io::Error| LauncherError::Io(e.to_string());
        let plan_fd = plan_file(plan).map_err(io)?;
        let (status_rx, status_tx) = status_pipe().map_err(io)?;
        let mut pass: Vec<RawFd> = fds.to_vec();
        pass.push(plan_fd.as_raw_fd());
        pass.push(status_tx.as_raw_fd());
        let mut cmd = std::process::Command::new(self.exec_path());
        cmd.arg0(LAUNCHER_NAME)
            .arg("--plan-fd")
            .arg(plan_fd.as_raw_fd().to_string())
            .arg("--status-fd")
            .arg(status_tx.as_raw_fd().to_string())
            .env_clear();
        // SAFETY: the closure runs in the forked child before exec and makes only fcntl
        // calls on descriptor numbers captured by value; it allocates nothing and takes no
        // locks. The descriptors stay open in this process until `Pending` drops.
        unsafe {
            cmd.pre_exec(move || {
                for &fd in &pass {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        Ok((
            cmd,
            Pending {
                status_rx,
                _plan: plan_fd,
                status_tx: Some(status_tx),
            },
        ))
    }
}

/// A launch whose target may not run yet: see [`Pending::confirm`].
#[derive(Debug)]
pub struct Pending {
    status_rx: OwnedFd,
    _plan: OwnedFd,
    status_tx: Option<OwnedFd>,
}

impl Pending {
    /// After the spawn: waits (at most 30 s) until the launcher executed the target (the
    /// status pipe closes empty) or reported why not.
    ///
    /// # Errors
    /// The launcher's [`Failure`]; a launcher that ended or hung without a word is a
    /// failure of step `launcher` (the caller kills it).
    pub fn confirm(mut self) -> Result<(), Failure> {
        // Our copy of the write end must go, or the pipe never ends.
        self.status_tx = None;
        let mut report = Vec::new();
        let deadline = std::time::Instant::now() + CONFIRM_TIMEOUT;
        loop {
            use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(self.status_rx.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(Failure::os("launcher", &e.into())),
                Ok(0) => {
                    return Err(Failure {
                        step: "launcher".into(),
                        errno: None,
                        message: format!("no exec within {} s; killed", CONFIRM_TIMEOUT.as_secs()),
                    })
                }
                Ok(_) => {}
            }
            let mut buf = [0u8; 4096];
            match nix::unistd::read(&self.status_rx, &mut buf) {
                Ok(0) => break,
                Ok(n) => report.extend_from_slice(&buf[..n]),
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(Failure::os("launcher", &e.into())),
            }
        }
        if report.is_empty() {
            return Ok(());
        }
        Err(serde_json::from_slice(&report).unwrap_or_else(|_| Failure {
            step: "launcher".into(),
            errno: None,
            message: String::from_utf8_lossy(&report).into_owned(),
        }))
    }
}

/// The plan as JSON in a sealed memory file (close-on-exec, above stdio, offset 0).
fn plan_file(plan: &Plan) -> std::io::Result<OwnedFd> {
    use nix::fcntl::{fcntl, FcntlArg, SealFlag};
    use nix::sys::memfd::{memfd_create, MFdFlags};
    let fd = memfd_create(
        c"agent-runner-plan",
        MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
    )?;
    let mut file = std::fs::File::from(fd);
    file.write_all(&serde_json::to_vec(plan).map_err(std::io::Error::other)?)?;
    let seals = SealFlag::F_SEAL_SEAL
        | SealFlag::F_SEAL_SHRINK
        | SealFlag::F_SEAL_GROW
        | SealFlag::F_SEAL_WRITE;
    fcntl(&file, FcntlArg::F_ADD_SEALS(seals))?;
    file.rewind()?;
    above_stdio(OwnedFd::from(file))
}

/// The status pipe: `(read end, write end)`, both close-on-exec and above stdio.
fn status_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (rx, tx) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    Ok((above_stdio(rx)?, above_stdio(tx)?))
}
