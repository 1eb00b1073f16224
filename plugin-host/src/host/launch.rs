//! Starting a host: confined before its first instruction, running the verified bytes.
//!
//! [`spawn`] prepares, in the supervisor, what must be decided or opened here: the verified
//! descriptor (and for a `#!` script its interpreter's), the host's environment
//! ([`crate::host::env`]), its filesystem grants ([`crate::host::policy::fs_grants`]), a pidfd
//! of the supervisor, the host's `pids` cgroup, and which namespaces it gets. It writes them
//! into a [`Plan`] and starts the `plugin-host` launcher on it ([`crate::launcher`]), which
//! applies, in its own process: the `pids` cgroup ([`crate::common::pids_limit`]), the
//! limits (`RLIMIT_CORE = 0`, `RLIMIT_NOFILE`, `RLIMIT_AS`, `RLIMIT_FSIZE`:
//! [`crate::common::write_limits`]), `PR_SET_PDEATHSIG`; for an unprivileged supervisor
//! where user namespaces are allowed, user, PID and mount namespaces with `RLIMIT_NPROC`
//! ([`crate::common::user_namespace`]); where a mount namespace can be had, a private
//! size-limited `tmpfs` over `tmp_dir`; new IPC and UTS namespaces; `SIGXFSZ` ignored; every
//! capability dropped; `PR_SET_NO_NEW_PRIVS`; Landlock; seccomp (with
//! [`spawn_with_listener`], the listener handed back over a socket); and finally
//! `execveat(fd, "", argv, envp, AT_EMPTY_PATH)` of the verified executable, or for a `#!`
//! script of its interpreter with argv `[interpreter, interpreter args…, /dev/fd/N, args…]`
//! (what the kernel would do for `execveat` of the script descriptor, without running
//! `/usr/bin/env` or shims).
//!
//! The host is born as PID 1 of a new PID namespace ([`crate::common::pid_namespace`]; the
//! spawning thread unshares it just before the fork and returns to its own right after), so
//! when the host dies every process it started dies too, including ones that left its
//! process group with `setsid()`.
//!
//! `PR_SET_PDEATHSIG` fires when the spawning *thread* exits: call [`spawn`] from a
//! long-lived thread (the supervisor's main thread). The host is also in its own process
//! group ([`kill_group`]) and its stdin is a pipe, so it sees EOF when the supervisor goes.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::MutexGuard;

use crate::common::fd_passing::{above_stdio, recv_fd, socket_pair};
use crate::common::landlock::TcpRule;
use crate::common::launcher::{Launcher, LauncherError};
use crate::common::notify::DenialListener;
use crate::common::pid_namespace::{own_pidfd, FreshPidNamespace};
use crate::common::pids_limit::PidsCgroup;
use crate::common::plan::Failure;
use crate::common::plan::{self, Exec, Grant, Limit, Plan, SeccompChoice, UserNamespace};
use crate::common::probe::Tier;
use crate::common::user_namespace::user_namespaces;
pub use crate::common::write_limits::{DEFAULT_FILE_MAX_MB, DEFAULT_TMP_MAX_MB};
use crate::host::env::host_environment;
use crate::host::pin::VerifiedExecutable;
use crate::host::policy::fs_grants;

/// Default address-space limit of a host, in MiB (`RLIMIT_AS`).
pub const DEFAULT_MEMORY_MAX_MB: u64 = 1024;
/// Default open-file limit of a host (`RLIMIT_NOFILE`).
pub const DEFAULT_NOFILE_MAX: u64 = 256;
pub use crate::common::pids_limit::DEFAULT_PIDS_MAX;

/// Everything needed to start one host.
#[derive(Debug)]
pub struct LaunchSpec {
    /// The host's name (from the configuration); becomes `AGENT_RUNNER_HOST`.
    pub name: String,
    /// The verified executable; its descriptor is what runs. Reusable for restarts.
    pub exe: VerifiedExecutable,
    /// Arguments after `argv[0]`.
    pub args: Vec<OsString>,
    /// The host's cwd; readable, not writable.
    pub work_dir: PathBuf,
    /// Readable, not writable.
    pub log_dir: PathBuf,
    /// The host's private writable directory (created if missing).
    pub state_dir: PathBuf,
    /// The host's `TMPDIR`, writable (created if missing).
    pub tmp_dir: PathBuf,
    /// Which layers to apply. Asking for a layer the kernel lacks is an error.
    pub confine: Tier,
    /// `RLIMIT_AS` in MiB (default [`DEFAULT_MEMORY_MAX_MB`]).
    pub memory_max_mb: u64,
    /// `RLIMIT_NOFILE` (default [`DEFAULT_NOFILE_MAX`]).
    pub nofile_max: u64,
    /// Most tasks (processes and threads) the host may have at once, `pids.max` of its own
    /// `pids` cgroup (default [`DEFAULT_PIDS_MAX`]; not enforced where the system offers no
    /// `pids` controller, see [`crate::common::pids_limit`]).
    pub pids_max: u64,
    /// Extra read-only paths (the operator's `[plugins.hosts.<name>] read_paths`, checked
    /// by the supervisor's config loader); empty by default.
    pub read_paths: Vec<PathBuf>,
    /// `RLIMIT_FSIZE` in MiB: the largest file the host may write (default
    /// [`DEFAULT_FILE_MAX_MB`]; see [`crate::common::write_limits`]).
    pub file_max_mb: u64,
    /// Size of the host's private TMPDIR `tmpfs` in MiB (default [`DEFAULT_TMP_MAX_MB`];
    /// where no mount namespace can be had, TMPDIR is the plain directory).
    pub tmp_max_mb: u64,
}

impl LaunchSpec {
    /// A spec with no extra arguments, full confinement and the default limits.
    pub fn new(
        name: impl Into<String>,
        exe: VerifiedExecutable,
        work_dir: impl Into<PathBuf>,
        log_dir: impl Into<PathBuf>,
        state_dir: impl Into<PathBuf>,
        tmp_dir: impl Into<PathBuf>,
    ) -> Self {
        LaunchSpec {
            name: name.into(),
            exe,
            args: Vec::new(),
            work_dir: work_dir.into(),
            log_dir: log_dir.into(),
            state_dir: state_dir.into(),
            tmp_dir: tmp_dir.into(),
            confine: Tier::LandlockSeccomp,
            memory_max_mb: DEFAULT_MEMORY_MAX_MB,
            nofile_max: DEFAULT_NOFILE_MAX,
            pids_max: DEFAULT_PIDS_MAX,
            read_paths: Vec::new(),
            file_max_mb: DEFAULT_FILE_MAX_MB,
            tmp_max_mb: DEFAULT_TMP_MAX_MB,
        }
    }
}

/// Why a host could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// state_dir or tmp_dir could not be created.
    #[error(
        "host {host}: cannot create {path}: {source}; check permissions of the state directory"
    )]
    CreateDir {
        /// Host name.
        host: String,
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The executable's inode changed after it was hashed (written in place).
    #[error("host {host}: {path} was modified after it was hashed; re-verify its pin before starting it")]
    Modified {
        /// Host name.
        host: String,
        /// The executable.
        path: PathBuf,
    },
    /// An argument, environment entry or path contained a NUL byte.
    #[error("host {host}: {what} contains a NUL byte")]
    Nul {
        /// Host name.
        host: String,
        /// Which value.
        what: String,
    },
    /// The `plugin-host` launcher is missing or not of this build.
    #[error("host {host}: {source}")]
    Launcher {
        /// Host name.
        host: String,
        /// Why the launcher cannot be used.
        source: LauncherError,
    },
    /// The launcher could not confine the host (a policy it could not build; no OS error).
    #[error("host {host}: {source}")]
    Confine {
        /// Host name.
        host: String,
        /// The launcher's report.
        source: Failure,
    },
    /// Duplicating or opening a descriptor failed.
    #[error("host {host}: cannot open {path}: {source}")]
    Open {
        /// Host name.
        host: String,
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The seccomp listener could not be set up or received (the host, if it started, has
    /// been killed).
    #[error("host {host}: seccomp listener: {source}")]
    Listener {
        /// Host name.
        host: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// fork, confinement or exec failed (the error of the failing step in the child).
    #[error("host {host}: cannot start {path}: {source}{}", spawn_hint(.source))]
    Spawn {
        /// Host name.
        host: String,
        /// What was executed (the host, or its interpreter).
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

fn spawn_hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EACCES) => " (denied: the executable, its interpreter or the loader is not executable here, or the policy forbids it)",
        Some(libc::ENOEXEC) => " (not a format the kernel can run)",
        Some(libc::E2BIG) => " (too many or too long arguments/environment)",
        _ => "",
    }
}

/// A new open file description (offset 0, `O_RDONLY | O_CLOEXEC`) of the file behind
/// `fd`, through `/proc/self/fd` (the inode the descriptor holds, whatever its path now
/// names).
fn reopen(fd: &OwnedFd) -> std::io::Result<OwnedFd> {
    std::fs::File::open(format!("/proc/self/fd/{}", fd.as_raw_fd())).map(OwnedFd::from)
}

/// Starts the host described by `spec`, confined at `spec.confine`.
///
/// stdin, stdout and stderr are pipes; the child is PID 1 of a new PID namespace (when the
/// supervisor may create one; see [`crate::common::pid_namespace`]) and the leader of a new process
/// group (its pid is the group id, see [`kill_group`]), has cwd `work_dir`, and is killed when the
/// returned [`tokio::process::Child`] is dropped. Must be called inside a tokio runtime,
/// from a long-lived thread (see the module docs about `PR_SET_PDEATHSIG`).
///
/// # Errors
/// [`LaunchError`] naming the host: directories that cannot be created, a modified
/// executable, a policy the kernel rejects, or a failure of a confinement step or of the
/// exec in the child (e.g. `EACCES`).
pub fn spawn(spec: &LaunchSpec) -> Result<tokio::process::Child, LaunchError> {
    spawn_inner(spec, false).map(|(child, _)| child)
}

/// Like [`spawn`], but a seccomp denial is *named*: when seccomp is applied
/// (`spec.confine.seccomp()`), a call outside the allow-list returns `SECCOMP_RET_USER_NOTIF` instead of
/// killing outright, and the returned [`DenialListener`] reports which call it was
/// ([`DenialListener::next_denial`]). The listener is serviced by a background thread that
/// also kills the host (`SIGSYS` to its group, then `SIGKILL`) on any denial, so the denied
/// call never runs and the host never hangs, whether or not the caller polls the listener.
/// The arch/x32 guard still kills with `SECCOMP_RET_KILL_PROCESS` (no name). See
/// [`crate::common::notify`].
///
/// The listener is `None` when seccomp is not applied.
///
/// # Errors
/// As [`spawn`], plus [`LaunchError::Listener`] if the listener cannot be received or
/// serviced (the host is then killed).
pub fn spawn_with_listener(
    spec: &LaunchSpec,
) -> Result<(tokio::process::Child, Option<DenialListener>), LaunchError> {
    let (child, sock) = spawn_inner(spec, true)?;
    let Some(sock) = sock else {
        return Ok((child, None));
    };
    let listener_err = |source| LaunchError::Listener {
        host: spec.name.clone(),
        source,
    };
    let Some(pid) = child.id() else {
        return Err(listener_err(std::io::Error::from_raw_os_error(libc::ESRCH)));
    };
    match recv_fd(sock.as_raw_fd()).and_then(|fd| DenialListener::start(fd, pid)) {
        Ok(listener) => Ok((child, Some(listener))),
        Err(e) => {
            // Never leave a host running without a serviced listener.
            let _ = kill_group(pid);
            Err(listener_err(e))
        }
    }
}

/// The spawn; with `notify` and seccomp applied, also returns the supervisor's end of the
/// socket the listener was sent over.
fn spawn_inner(
    spec: &LaunchSpec,
    notify: bool,
) -> Result<(tokio::process::Child, Option<OwnedFd>), LaunchError> {
    let host = spec.name.as_str();
    let launcher = Launcher::get().map_err(|source| LaunchError::Launcher {
        host: host.to_owned(),
        source,
    })?;
    create_host_dirs(spec)?;
    let verified = verified_descriptor(spec)?;
    let target = exec_target(spec, verified)?;
    let env = host_environment(host, &spec.tmp_dir);
    let notify = notify && spec.confine.seccomp();
    let (listener_rx, listener_tx) = listener_socket(host, notify)?;
    let supervisor = own_pidfd()
        .and_then(above_stdio)
        .map_err(|e| open_error(host, Path::new("<pidfd of the supervisor>"), e))?;
    // No fork may happen between this and the spawn: the thread's next child is born in
    // the new PID namespace.
    let pid_ns = FreshPidNamespace::for_next_child()
        .map_err(|e| open_error(host, Path::new("/proc/thread-self/ns/pid"), e))?;
    let user_ns = if pid_ns.is_some() {
        false
    } else {
        // (The probe forks: only here, where no PID namespace is armed.)
        user_namespace_wanted(spec)
    };
    let (pids_cgroup, pids_guard) = pids_cgroup(spec, user_ns)?;
    let private_tmp = private_tmp(spec, pid_ns.is_some(), user_ns);
    // The verified file for Landlock's grant of it: the executable, or a script itself.
    let verified_fd = target.script_fd.as_ref().unwrap_or(&target.fd).as_raw_fd();
    let mut fds: Vec<RawFd> = vec![target.fd.as_raw_fd(), supervisor.as_raw_fd()];
    fds.extend(target.script_fd.as_ref().map(AsRawFd::as_raw_fd));
    fds.extend(pids_cgroup.as_ref().map(AsRawFd::as_raw_fd));
    fds.extend(listener_tx.as_ref().map(AsRawFd::as_raw_fd));
    let plan = Plan {
        format: plan::PLAN_FORMAT,
        build_id: plan::BUILD_ID.into(),
        name: host.to_owned(),
        cgroup_procs: pids_cgroup.as_ref().map(AsRawFd::as_raw_fd),
        group_guard: None,
        rlimits: host_rlimits(spec),
        supervisor: supervisor.as_raw_fd(),
        egress: None,
        user_namespace: user_ns.then_some(UserNamespace::Host {
            pids_max: spec.pids_max,
        }),
        mount_namespace: false,
        binds: Vec::new(),
        pinned: Vec::new(),
        read_only: Vec::new(),
        private_tmp,
        private_ipc_uts: pid_ns.is_some(),
        init: false,
        ignore_sigxfsz: true,
        drop_capabilities: true,
        no_new_privs: true,
        inherit: target
            .script_fd
            .as_ref()
            .map(AsRawFd::as_raw_fd)
            .into_iter()
            .collect(),
        landlock: spec.confine.landlock().then(|| plan::Landlock {
            grants: fs_grants(
                &spec.exe,
                &spec.work_dir,
                &spec.log_dir,
                &spec.state_dir,
                &spec.tmp_dir,
                &spec.read_paths,
            )
            .iter()
            .map(Grant::from)
            .collect(),
            verified: Some(verified_fd),
            tcp: TcpRule::None,
        }),
        seccomp: spec.confine.seccomp().then(|| plan::Seccomp {
            program: if notify {
                SeccompChoice::HostNotify
            } else {
                SeccompChoice::HostKill
            },
            listener_to: listener_tx.as_ref().map(AsRawFd::as_raw_fd),
        }),
        exec: Exec::Descriptor {
            fd: target.fd.as_raw_fd(),
            argv: target.argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
            env: env
                .iter()
                .map(|(k, v)| {
                    let mut kv = k.as_bytes().to_vec();
                    kv.push(b'=');
                    kv.extend_from_slice(v.as_bytes());
                    kv
                })
                .collect(),
        },
    };
    let (cmd, pending) = launcher
        .command(&plan, &fds)
        .map_err(|source| LaunchError::Launcher {
            host: host.to_owned(),
            source,
        })?;
    let mut cmd = host_command(spec, cmd);
    tracing::debug!(host, exe = %spec.exe.path.display(), tier = %spec.confine, "spawning host");
    let spawned = cmd.spawn();
    drop(pid_ns); // later children of this thread are ordinary again
    let child = spawned.map_err(|source| LaunchError::Spawn {
        host: host.to_owned(),
        path: launcher.path().to_owned(),
        source,
    })?;
    let confirmed = pending.confirm();
    drop(pids_guard); // the launcher has joined its cgroup (or failed)
    confirmed.map_err(|failure| match failure.errno {
        Some(_) => LaunchError::Spawn {
            host: host.to_owned(),
            path: target.path.clone(),
            source: failure.into_io(),
        },
        None => LaunchError::Confine {
            host: host.to_owned(),
            source: failure,
        },
    })?;
    Ok((child, listener_rx))
}

/// [`LaunchError::Open`] for `host` and `path`.
fn open_error(host: &str, path: &Path, source: std::io::Error) -> LaunchError {
    LaunchError::Open {
        host: host.to_owned(),
        path: path.to_owned(),
        source,
    }
}

/// Creates the host's `state_dir` and `tmp_dir` (and their parents) if missing.
fn create_host_dirs(spec: &LaunchSpec) -> Result<(), LaunchError> {
    for dir in [&spec.state_dir, &spec.tmp_dir] {
        std::fs::create_dir_all(dir).map_err(|source| LaunchError::CreateDir {
            host: spec.name.clone(),
            path: dir.clone(),
            source,
        })?;
    }
    Ok(())
}

/// A duplicate (`O_CLOEXEC`, above stdio) of the verified descriptor, owned by this launch,
/// once the executable is shown unchanged since it was hashed ([`LaunchError::Modified`]
/// otherwise).
fn verified_descriptor(spec: &LaunchSpec) -> Result<OwnedFd, LaunchError> {
    let (host, exe) = (spec.name.as_str(), &spec.exe);
    match exe.unchanged_since_hash() {
        Ok(true) => {}
        Ok(false) => {
            return Err(LaunchError::Modified {
                host: host.to_owned(),
                path: exe.path.clone(),
            })
        }
        Err(e) => return Err(open_error(host, &exe.path, e)),
    }
    exe.file()
        .try_clone()
        .map(OwnedFd::from)
        .and_then(above_stdio)
        .map_err(|e| open_error(host, &exe.path, e))
}

/// What `execveat` runs: the verified executable itself, or for a `#!` script its
/// interpreter with the verified script passed as `/dev/fd/N`.
struct ExecTarget {
    /// The descriptor executed.
    fd: OwnedFd,
    /// For a script host: the verified script descriptor, inherited by the interpreter.
    script_fd: Option<OwnedFd>,
    /// What is executed (for `Command` and error messages).
    path: PathBuf,
    /// The full argv, `argv[0]` first, the spec's arguments last.
    argv: Vec<OsString>,
}

/// The [`ExecTarget`] of `spec`, taking ownership of its `verified` descriptor.
fn exec_target(spec: &LaunchSpec, verified: OwnedFd) -> Result<ExecTarget, LaunchError> {
    let (host, exe) = (spec.name.as_str(), &spec.exe);
    let mut target = match &exe.interpreter {
        None => ExecTarget {
            fd: verified,
            script_fd: None,
            path: exe.path.clone(),
            argv: vec![exe.path.as_os_str().to_owned()],
        },
        Some(interp) => {
            let ifd: OwnedFd = std::fs::File::open(&interp.path)
                .map_err(|e| open_error(host, &interp.path, e))?
                .into();
            // The interpreter must read the bytes that were hashed, from their start: a
            // fresh open file description of the verified inode (through its descriptor,
            // never the path), so its offset is 0 and no other launch shares it. Perl reads
            // `/dev/fd/N` through the inherited descriptor itself; bash, sh, Python and
            // Node reopen it (docs/security.md "Verified launch").
            let script = reopen(&verified)
                .and_then(above_stdio)
                .map_err(|e| open_error(host, &exe.path, e))?;
            drop(verified);
            let mut argv = vec![interp.named.as_os_str().to_owned()];
            argv.extend(interp.args.iter().map(OsString::from));
            argv.push(format!("/dev/fd/{}", script.as_raw_fd()).into());
            ExecTarget {
                fd: ifd,
                script_fd: Some(script),
                path: interp.path.clone(),
                argv,
            }
        }
    };
    target.argv.extend(spec.args.iter().cloned());
    Ok(target)
}

/// With `notify`, the unix socket pair over which the child sends its seccomp listener:
/// `(supervisor's end, child's end)`; `(None, None)` otherwise.
fn listener_socket(
    host: &str,
    notify: bool,
) -> Result<(Option<OwnedFd>, Option<OwnedFd>), LaunchError> {
    if !notify {
        return Ok((None, None));
    }
    let (rx, tx) =
        socket_pair().map_err(|e| open_error(host, Path::new("<seccomp listener socket>"), e))?;
    Ok((Some(rx), Some(tx)))
}

/// Whether an unprivileged supervisor gives the host user, PID and mount namespaces: where
/// user namespaces are allowed (else `false`, with a warning). The probe forks: call only
/// while no PID namespace is armed for the next child.
fn user_namespace_wanted(spec: &LaunchSpec) -> bool {
    match user_namespaces() {
        Ok(()) => true,
        Err(reason) => {
            let host = spec.name.as_str();
            tracing::warn!(host, %reason, "no PID namespace (needs CAP_SYS_ADMIN or a user namespace): processes the host starts with setsid() could outlive it");
            false
        }
    }
}

/// The host's own `pids` cgroup: its `cgroup.procs` (above stdio) for the child to join, and
/// the guard to hold until it has. None when the host gets a user namespace (which bounds
/// its tasks with `RLIMIT_NPROC`) or where no `pids` controller is available (with a
/// warning).
fn pids_cgroup(
    spec: &LaunchSpec,
    in_user_ns: bool,
) -> Result<(Option<OwnedFd>, Option<MutexGuard<'static, ()>>), LaunchError> {
    let host = spec.name.as_str();
    let pids_err = |e| open_error(host, Path::new("<pids cgroup>"), e);
    let pids = if in_user_ns {
        None
    } else {
        PidsCgroup::create(spec.pids_max).map_err(pids_err)?
    };
    Ok(match pids {
        Some(PidsCgroup { procs, guard }) => {
            (Some(above_stdio(procs).map_err(pids_err)?), Some(guard))
        }
        None if in_user_ns => (None, None),
        None => {
            tracing::warn!(
                host,
                "no pids cgroup available: the host's number of processes is not bounded"
            );
            (None, None)
        }
    })
}

/// The private size-limited TMPDIR `tmpfs`, where the host gets a mount namespace (its own
/// PID namespace's, or the user namespace's); `None`, with a warning, elsewhere.
fn private_tmp(spec: &LaunchSpec, in_pid_ns: bool, in_user_ns: bool) -> Option<plan::PrivateTmp> {
    if !(in_pid_ns || in_user_ns) {
        let host = spec.name.as_str();
        tracing::warn!(
            host,
            "no mount namespace: TMPDIR is bounded only by the supervisor's usage check"
        );
        return None;
    }
    Some(plan::PrivateTmp {
        dir: spec.tmp_dir.clone(),
        max_mb: spec.tmp_max_mb,
        unshare: !in_user_ns,
    })
}

/// The host's resource limits, `(resource, soft = hard value)`: no core dumps, and the
/// spec's open-file, address-space and file-size limits (MiB converted to bytes).
fn host_rlimits(spec: &LaunchSpec) -> Vec<(Limit, u64)> {
    let mib = 1024 * 1024;
    vec![
        (Limit::CoreSize, 0),
        (Limit::OpenFiles, spec.nofile_max),
        (Limit::AddressSpace, spec.memory_max_mb.saturating_mul(mib)),
        (Limit::FileSize, spec.file_max_mb.saturating_mul(mib)),
    ]
}

/// The launcher's command for `spec`: cwd `work_dir`, piped stdio, its own process group,
/// killed on drop.
fn host_command(spec: &LaunchSpec, mut cmd: std::process::Command) -> tokio::process::Command {
    cmd.current_dir(&spec.work_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    cmd
}

/// Sends SIGKILL to the process group `pgid` (a host's pid, since hosts lead their own
/// group), killing the host and every process it started that stayed in the group. Those
/// that left the group (`setsid`) die too when the host is its PID namespace's init (see
/// [`crate::common::pid_namespace`]): the kernel kills the whole namespace when its init dies.
/// A group that no longer exists is not an error.
///
/// # Errors
/// The OS error of `kill(2)` other than `ESRCH` (e.g. `EPERM`).
pub fn kill_group(pgid: u32) -> std::io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid)
        .ok()
        .filter(|p| *p > 1)
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: kill with a negative pid signals the process group; no memory involved.
    if unsafe { libc::kill(-pgid, libc::SIGKILL) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(e)
    }
}
