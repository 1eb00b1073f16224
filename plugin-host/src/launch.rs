//! Starting a host: confined before its first instruction, running the verified bytes.
//!
//! [`spawn`] prepares everything in the supervisor (argv/envp C strings and pointer arrays,
//! the Landlock ruleset descriptor, the seccomp BPF program, the limits) and then forks
//! through `tokio::process::Command`. Between fork and exec the child only makes raw,
//! async-signal-safe system calls, in this order:
//!
//! 0. `write(procs_fd, "0")`: join the launch's own `pids` cgroup, bounding the host's
//!    tasks to `pids_max` ([`crate::pids_limit`]; skipped where no `pids` controller is
//!    available);
//! 1. `setrlimit`: `RLIMIT_CORE = 0` (a seccomp kill must not dump core into `work_dir`),
//!    `RLIMIT_NOFILE`, `RLIMIT_AS`, `RLIMIT_FSIZE` ([`crate::write_limits`]);
//! 2. `prctl(PR_SET_PDEATHSIG, SIGKILL)`, then a `poll` of a pidfd of the supervisor (made
//!    before the fork) must show it alive (else `_exit(1)`: the supervisor died during the
//!    fork; `getppid()` cannot tell, it is 0 in the host's own PID namespace);
//!    * for an unprivileged supervisor (no PID namespace of its own making) where user
//!      namespaces are allowed: new user, PID and mount namespaces, `RLIMIT_NPROC`, and a
//!      fork into the host-to-be and a reaper ([`crate::user_namespace`]), after which the
//!      host-to-be arms `PR_SET_PDEATHSIG` again (its parent is now the reaper);
//!    * where a mount namespace can be had (root, or the user namespace above): a private
//!      size-limited `tmpfs` over `tmp_dir`, granted in the Landlock ruleset
//!      ([`crate::write_limits`]);
//!    * new IPC and UTS namespaces (root: `unshare(CLONE_NEWIPC | CLONE_NEWUTS)`; the
//!      user-namespace path makes them with the others): no System V IPC object and no
//!      host name is shared with the rest of the machine;
//!    * `SIGXFSZ` ignored, so `RLIMIT_FSIZE` fails writes with `EFBIG`;
//!    * every capability dropped: bounding, ambient, effective, permitted and inheritable
//!      sets, secure bits locked ([`crate::capabilities`]);
//! 3. `prctl(PR_SET_NO_NEW_PRIVS, 1)`;
//! 4. for a script host, `fcntl(F_SETFD, 0)` on the verified script descriptor so the
//!    interpreter can open it as `/dev/fd/N`;
//! 5. `landlock_restrict_self(ruleset_fd, 0)` (if Landlock is applied);
//! 6. `seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog)` (if seccomp is applied); with
//!    [`spawn_with_listener`], `seccomp(SECCOMP_SET_MODE_FILTER,
//!    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog)` with the user-notification variant of the
//!    program, then `sendmsg(SCM_RIGHTS)` of the returned listener over a unix socket made
//!    before the fork, then `close` of the listener (the host must never hold it);
//! 7. `execveat(fd, "", argv, envp, AT_EMPTY_PATH)`: `fd` is the verified executable, or for
//!    a `#!` script the resolved interpreter, with argv
//!    `[interpreter, interpreter args…, /dev/fd/N, args…]` (what the kernel would do for
//!    `execveat` of the script descriptor, without running `/usr/bin/env` or shims).
//!
//! A failure in the child is reported to [`spawn`] as an OS error (std's exec-error pipe).
//!
//! The child is born as PID 1 of a new PID namespace ([`crate::pid_namespace`]; the spawning
//! thread unshares it just before the fork and returns to its own right after), so when the
//! host dies every process it started dies too, including ones that left its process group
//! with `setsid()`.
//!
//! `PR_SET_PDEATHSIG` fires when the spawning *thread* exits: call [`spawn`] from a
//! long-lived thread (the supervisor's main thread). The host is also in its own process
//! group ([`kill_group`]) and its stdin is a pipe, so it sees EOF when the supervisor goes.

use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::MutexGuard;

use crate::capabilities::drop_all as drop_capabilities;
use crate::env::host_environment;
use crate::notify::DenialListener;
use crate::pid_namespace::{die_with_supervisor, own_pidfd, FreshPidNamespace};
use crate::pids_limit::PidsCgroup;
use crate::pin::VerifiedExecutable;
use crate::policy::{
    fs_grants, landlock_ruleset, seccomp_program_for, DenyAction, FsAccess, PolicyError,
    SeccompProgram, POLICY_LANDLOCK_ABI,
};
use crate::probe::kernel_landlock_abi;
use crate::probe::Tier;
use crate::user_namespace::{user_namespaces, UserNamespacePlan};
use crate::write_limits::{ignore_sigxfsz, PrivateTmp};
pub use crate::write_limits::{DEFAULT_FILE_MAX_MB, DEFAULT_TMP_MAX_MB};

/// Default address-space limit of a host, in MiB (`RLIMIT_AS`).
pub const DEFAULT_MEMORY_MAX_MB: u64 = 1024;
/// Default open-file limit of a host (`RLIMIT_NOFILE`).
pub const DEFAULT_NOFILE_MAX: u64 = 256;
pub use crate::pids_limit::DEFAULT_PIDS_MAX;

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
    /// `pids` controller, see [`crate::pids_limit`]).
    pub pids_max: u64,
    /// Extra read-only paths (the operator's `[plugins.hosts.<name>] read_paths`, checked
    /// by the supervisor's config loader); empty by default.
    pub read_paths: Vec<PathBuf>,
    /// `RLIMIT_FSIZE` in MiB: the largest file the host may write (default
    /// [`DEFAULT_FILE_MAX_MB`]; see [`crate::write_limits`]).
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
    /// The confinement policy could not be built.
    #[error("host {host}: {source}")]
    Policy {
        /// Host name.
        host: String,
        /// The policy error.
        source: PolicyError,
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

/// Pointer arrays for `execveat`, with the strings they point into.
struct ExecArgs {
    _strings: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    _env_strings: Vec<CString>,
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the raw pointers point into the heap buffers of the CStrings owned by the same
// struct; nothing mutates them after construction, so sharing or sending the struct across
// threads is as safe as sharing the CStrings themselves.
unsafe impl Send for ExecArgs {}
// SAFETY: see the Send impl: immutable after construction.
unsafe impl Sync for ExecArgs {}

fn cstring(host: &str, what: &str, bytes: &[u8]) -> Result<CString, LaunchError> {
    CString::new(bytes).map_err(|_| LaunchError::Nul {
        host: host.to_owned(),
        what: what.to_owned(),
    })
}

impl ExecArgs {
    fn new(
        host: &str,
        argv: &[OsString],
        env: &[(OsString, OsString)],
    ) -> Result<Self, LaunchError> {
        let strings = argv
            .iter()
            .map(|a| cstring(host, &format!("argument {a:?}"), a.as_bytes()))
            .collect::<Result<Vec<_>, _>>()?;
        let env_strings = env
            .iter()
            .map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                cstring(host, &format!("environment variable {k:?}"), &kv)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut argv: Vec<_> = strings.iter().map(|s| s.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<_> = env_strings.iter().map(|s| s.as_ptr()).collect();
        envp.push(std::ptr::null());
        Ok(ExecArgs {
            _strings: strings,
            argv,
            _env_strings: env_strings,
            envp,
        })
    }
}

/// Everything the child needs, moved into the `pre_exec` closure.
struct ChildPlan {
    /// `cgroup.procs` of the host's `pids` cgroup, if any.
    pids_cgroup: Option<OwnedFd>,
    /// A pidfd of the supervisor (see [`crate::pid_namespace::has_exited`]).
    supervisor: OwnedFd,
    rlimits: [(libc::__rlimit_resource_t, libc::rlim_t); 4],
    /// For an unprivileged supervisor: the user/PID/mount namespaces to enter.
    user_ns: Option<UserNamespacePlan>,
    /// The private TMPDIR to mount, where a mount namespace can be had.
    private_tmp: Option<PrivateTmp>,
    /// Whether the child unshares its IPC and UTS namespaces itself (root: the host is in a
    /// PID namespace of the supervisor's making; the user-namespace path makes them in
    /// [`UserNamespacePlan::enter`]).
    private_ipc_uts: bool,
    /// Kept open (and closed in the parent after the spawn) for execveat.
    exec_fd: OwnedFd,
    /// For a script host: the verified script descriptor, to be inherited by the interpreter.
    script_fd: Option<OwnedFd>,
    landlock: Option<OwnedFd>,
    seccomp: Option<SeccompProgram>,
    /// With [`spawn_with_listener`]: the child's end of the unix socket over which the
    /// seccomp listener is sent to the supervisor.
    listener_tx: Option<OwnedFd>,
    args: ExecArgs,
}

/// `CMSG_SPACE(sizeof(int))`, for one descriptor.
// SAFETY: CMSG_SPACE is arithmetic on its argument only.
const CMSG_FD_SPACE: usize =
    unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;

/// A control-message buffer for one descriptor, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct CmsgBuf([u8; CMSG_FD_SPACE]);

/// Sends `fd` over the unix socket `sock` (one data byte plus `SCM_RIGHTS`). Only raw system
/// calls and stack memory: usable between fork and exec.
pub(crate) fn send_fd(sock: RawFd, fd: RawFd) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut buf = CmsgBuf([0; CMSG_FD_SPACE]);
    // SAFETY: msghdr is plain data; all-zero is a valid (empty) value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = buf.0.as_mut_ptr().cast();
    msg.msg_controllen = CMSG_FD_SPACE as _;
    // SAFETY: msg points at a control buffer of CMSG_SPACE(sizeof(int)) bytes, aligned for
    // cmsghdr, so CMSG_FIRSTHDR is non-null and the header and its int payload lie inside it.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
    }
    // SAFETY: msg and everything it points to live on this stack frame for the call.
    if unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) } == 1 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Receives one descriptor sent by [`send_fd`], without waiting (it was sent before exec,
/// and a successful spawn means exec happened). The descriptor is `O_CLOEXEC`.
pub(crate) fn recv_fd(sock: RawFd) -> std::io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut buf = CmsgBuf([0; CMSG_FD_SPACE]);
    // SAFETY: msghdr is plain data; all-zero is a valid (empty) value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = buf.0.as_mut_ptr().cast();
    msg.msg_controllen = CMSG_FD_SPACE as _;
    // SAFETY: msg and the buffers it points to live on this stack frame for the call.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let bad = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "no listener descriptor received",
        )
    };
    // SAFETY: msg was filled by recvmsg; CMSG_FIRSTHDR returns null or a header inside buf.
    let cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    if cmsg.is_null() || msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(bad());
    }
    // SAFETY: cmsg is non-null and points inside buf (see above).
    let (level, ty, len) = unsafe { ((*cmsg).cmsg_level, (*cmsg).cmsg_type, (*cmsg).cmsg_len) };
    // SAFETY: CMSG_LEN is arithmetic on its argument only.
    let want = unsafe { libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) } as _;
    if level != libc::SOL_SOCKET || ty != libc::SCM_RIGHTS || len != want {
        return Err(bad());
    }
    // SAFETY: the header says it carries exactly one int, inside buf.
    let fd = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>()) };
    // SAFETY: SCM_RIGHTS installed `fd` in this process as a new descriptor owned by nobody.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Installs `prog` in this (forked, single-threaded) process. With `listener_tx`, asks for
/// the user-notification listener, sends it over `listener_tx` and closes it here: the
/// confined program must never hold it. Only raw system calls: usable between fork and exec
/// (hosts and the confined agent alike).
///
/// # Errors
/// The `seccomp`, `sendmsg` or `close` error.
pub(crate) fn install_filter(
    prog: &SeccompProgram,
    listener_tx: Option<&OwnedFd>,
) -> std::io::Result<()> {
    let fprog = prog.fprog();
    let flags = if listener_tx.is_some() {
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
    } else {
        0
    };
    // SAFETY: fprog points at the program's instructions, which live (unmoved, unmodified)
    // in `prog` for the duration of the call; the kernel copies them.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const libc::sock_fprog,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if let Some(sock) = listener_tx {
        // From here on the filter is in force: sendmsg, close and execveat are allowed.
        let listener = r as RawFd;
        let sent = send_fd(sock.as_raw_fd(), listener);
        // SAFETY: close of the listener descriptor seccomp(2) just returned to this process;
        // nothing else refers to it.
        let closed = unsafe { libc::close(listener) };
        sent?;
        if closed != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

impl ChildPlan {
    /// Runs in the forked child, the steps in the module docs' order. Only raw system calls:
    /// no allocation, no locks, no logging (nor in any step below).
    fn apply(&self) -> std::io::Result<()> {
        self.join_pids_cgroup()?;
        self.set_rlimits()?;
        die_with_supervisor(&self.supervisor)?;
        if let Some(user_ns) = &self.user_ns {
            user_ns.enter()?;
            // Now PID 1 of the new namespace, child of the reaper.
            die_with_supervisor(&self.supervisor)?;
        }
        if let Some(tmp) = &self.private_tmp {
            tmp.mount(self.landlock.as_ref().map(|fd| fd.as_raw_fd()))?;
        }
        if self.private_ipc_uts {
            // SAFETY: unshare takes flags only; this child is single-threaded.
            if unsafe { libc::unshare(libc::CLONE_NEWIPC | libc::CLONE_NEWUTS) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        ignore_sigxfsz()?;
        drop_capabilities()?;
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.inherit_script()?;
        self.restrict_landlock()?;
        self.install_seccomp()?;
        self.exec()
    }

    /// Step 0: joins the host's `pids` cgroup, if any.
    fn join_pids_cgroup(&self) -> std::io::Result<()> {
        if let Some(procs) = &self.pids_cgroup {
            // SAFETY: write of a 1-byte static buffer to a descriptor we own; "0" moves the
            // writing process into the cgroup.
            if unsafe { libc::write(procs.as_raw_fd(), b"0".as_ptr().cast(), 1) } != 1 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Step 1: sets each resource limit (soft and hard) from the plan's array.
    fn set_rlimits(&self) -> std::io::Result<()> {
        for (resource, value) in self.rlimits {
            let lim = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            // SAFETY: setrlimit reads a valid stack rlimit struct; async-signal-safe.
            if unsafe { libc::setrlimit(resource, &lim) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Step 4: for a script host, clears `FD_CLOEXEC` on the verified script descriptor.
    fn inherit_script(&self) -> std::io::Result<()> {
        if let Some(fd) = &self.script_fd {
            // SAFETY: fcntl on a descriptor we own; clears FD_CLOEXEC so the interpreter
            // inherits the verified script as /dev/fd/N.
            if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Step 5: enforces the Landlock ruleset, if Landlock is applied.
    fn restrict_landlock(&self) -> std::io::Result<()> {
        if let Some(ruleset) = &self.landlock {
            // SAFETY: landlock_restrict_self(ruleset_fd, flags=0) takes a descriptor we own.
            let r = unsafe {
                libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32)
            };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Step 6: installs the seccomp filter, if seccomp is applied; with a listener socket,
    /// asks for the user-notification listener, sends it to the supervisor and closes it.
    fn install_seccomp(&self) -> std::io::Result<()> {
        match &self.seccomp {
            Some(prog) => install_filter(prog, self.listener_tx.as_ref()),
            None => Ok(()),
        }
    }

    /// Step 7: `execveat` of the exec descriptor. Returns only with its error.
    fn exec(&self) -> std::io::Result<()> {
        // SAFETY: argv/envp are NULL-terminated arrays of pointers into live CStrings owned by
        // self; the path is an empty C string as AT_EMPTY_PATH requires. Returns only on error.
        unsafe {
            libc::syscall(
                libc::SYS_execveat,
                self.exec_fd.as_raw_fd(),
                c"".as_ptr(),
                self.args.argv.as_ptr(),
                self.args.envp.as_ptr(),
                libc::AT_EMPTY_PATH,
            )
        };
        Err(std::io::Error::last_os_error())
    }
}

/// Moves `fd` to a number ≥ 3 (keeping `FD_CLOEXEC`): std's child sets up stdin/stdout/stderr
/// with `dup2` onto 0–2 *before* our pre_exec step runs, which would clobber a descriptor we
/// still need if the supervisor was started with a standard stream closed.
fn above_stdio(fd: OwnedFd) -> std::io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own returns a new descriptor or -1.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `new` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
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
/// supervisor may create one; see [`crate::pid_namespace`]) and the leader of a new process
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
/// [`crate::notify`].
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

/// A unix socket pair (`SOCK_SEQPACKET`, close-on-exec), both ends above stdio.
pub(crate) fn socket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: socketpair writes two descriptors into the live array.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors that nothing else owns.
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((above_stdio(a)?, above_stdio(b)?))
}

/// The spawn; with `notify` and seccomp applied, also returns the supervisor's end of the
/// socket the listener was sent over.
fn spawn_inner(
    spec: &LaunchSpec,
    notify: bool,
) -> Result<(tokio::process::Child, Option<OwnedFd>), LaunchError> {
    let host = spec.name.as_str();
    create_host_dirs(spec)?;
    let verified = verified_descriptor(spec)?;
    let target = exec_target(spec, verified)?;
    let args = ExecArgs::new(host, &target.argv, &host_environment(host, &spec.tmp_dir))?;
    let landlock = landlock_ruleset_fd(spec)?;
    let notify = notify && spec.confine.seccomp();
    let seccomp = seccomp_filter(spec, notify)?;
    let (listener_rx, listener_tx) = listener_socket(host, notify)?;
    let supervisor = own_pidfd()
        .and_then(above_stdio)
        .map_err(|e| open_error(host, Path::new("<pidfd of the supervisor>"), e))?;
    // No fork may happen between this and the spawn: the thread's next child is born in
    // the new PID namespace.
    let pid_ns = FreshPidNamespace::for_next_child()
        .map_err(|e| open_error(host, Path::new("/proc/thread-self/ns/pid"), e))?;
    let user_ns = if pid_ns.is_some() {
        None
    } else {
        // (The probe forks: only here, where no PID namespace is armed.)
        user_namespace_plan(spec)
    };
    let (pids_cgroup, pids_guard) = pids_cgroup(spec, user_ns.is_some())?;
    let private_tmp = private_tmp(spec, pid_ns.is_some(), user_ns.is_some())?;
    let plan = ChildPlan {
        pids_cgroup,
        supervisor,
        rlimits: host_rlimits(spec),
        user_ns,
        private_tmp,
        private_ipc_uts: pid_ns.is_some(),
        exec_fd: target.fd,
        script_fd: target.script_fd,
        landlock,
        seccomp,
        listener_tx,
        args,
    };
    let mut cmd = host_command(spec, &target.path, plan);
    tracing::debug!(host, exe = %spec.exe.path.display(), tier = %spec.confine, "spawning host");
    let spawned = cmd.spawn();
    drop(pid_ns); // later children of this thread are ordinary again
    drop(pids_guard); // the child has joined its cgroup (or failed)
    let child = spawned.map_err(|source| LaunchError::Spawn {
        host: host.to_owned(),
        path: target.path,
        source,
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

/// [`LaunchError::Policy`] for `host`.
fn policy_error(host: &str, source: PolicyError) -> LaunchError {
    LaunchError::Policy {
        host: host.to_owned(),
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

/// The Landlock ruleset descriptor (above stdio) of the host's filesystem grants, when
/// `spec.confine` applies Landlock.
fn landlock_ruleset_fd(spec: &LaunchSpec) -> Result<Option<OwnedFd>, LaunchError> {
    if !spec.confine.landlock() {
        return Ok(None);
    }
    let host = spec.name.as_str();
    let grants = fs_grants(
        &spec.exe,
        &spec.work_dir,
        &spec.log_dir,
        &spec.state_dir,
        &spec.tmp_dir,
        &spec.read_paths,
    );
    let ruleset = landlock_ruleset(&grants, spec.exe.file(), kernel_landlock_abi().unwrap_or(0))
        .map_err(|e| policy_error(host, e))?;
    above_stdio(ruleset)
        .map(Some)
        .map_err(|e| open_error(host, Path::new("<landlock ruleset>"), e))
}

/// The seccomp program, when `spec.confine` applies seccomp: denials notify the supervisor
/// when `notify`, else kill the process.
fn seccomp_filter(spec: &LaunchSpec, notify: bool) -> Result<Option<SeccompProgram>, LaunchError> {
    if !spec.confine.seccomp() {
        return Ok(None);
    }
    let action = if notify {
        DenyAction::Notify
    } else {
        DenyAction::KillProcess
    };
    seccomp_program_for(action)
        .map(Some)
        .map_err(|e| policy_error(&spec.name, e))
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

/// The user/PID/mount namespaces an unprivileged supervisor gives the host, where user
/// namespaces are allowed (`None`, with a warning, elsewhere). The probe forks: call only
/// while no PID namespace is armed for the next child.
fn user_namespace_plan(spec: &LaunchSpec) -> Option<UserNamespacePlan> {
    match user_namespaces() {
        Ok(()) => Some(UserNamespacePlan::new(spec.pids_max)),
        Err(reason) => {
            let host = spec.name.as_str();
            tracing::warn!(host, %reason, "no PID namespace (needs CAP_SYS_ADMIN or a user namespace): processes the host starts with setsid() could outlive it");
            None
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
fn private_tmp(
    spec: &LaunchSpec,
    in_pid_ns: bool,
    in_user_ns: bool,
) -> Result<Option<PrivateTmp>, LaunchError> {
    let host = spec.name.as_str();
    if !(in_pid_ns || in_user_ns) {
        tracing::warn!(
            host,
            "no mount namespace: TMPDIR is bounded only by the supervisor's usage check"
        );
        return Ok(None);
    }
    let abi =
        landlock::ABI::from(kernel_landlock_abi().unwrap_or(0).min(POLICY_LANDLOCK_ABI) as i32);
    let rights = FsAccess::ReadWrite.rights(abi).bits();
    PrivateTmp::new(&spec.tmp_dir, spec.tmp_max_mb, !in_user_ns, rights)
        .map(Some)
        .ok_or_else(|| LaunchError::Nul {
            host: host.to_owned(),
            what: "tmp_dir".into(),
        })
}

/// The host's resource limits, `(resource, soft = hard value)`: no core dumps, and the
/// spec's open-file, address-space and file-size limits (MiB converted to bytes).
fn host_rlimits(spec: &LaunchSpec) -> [(libc::__rlimit_resource_t, libc::rlim_t); 4] {
    let mib = 1024 * 1024;
    [
        (libc::RLIMIT_CORE, 0),
        (libc::RLIMIT_NOFILE, spec.nofile_max),
        (libc::RLIMIT_AS, spec.memory_max_mb.saturating_mul(mib)),
        (libc::RLIMIT_FSIZE, spec.file_max_mb.saturating_mul(mib)),
    ]
}

/// The command that forks the host: clean environment, cwd `work_dir`, piped stdio, its own
/// process group, killed on drop, and `plan` applied between fork and exec.
fn host_command(spec: &LaunchSpec, exec_path: &Path, plan: ChildPlan) -> tokio::process::Command {
    let mut cmd = std::process::Command::new(exec_path);
    cmd.env_clear()
        .current_dir(&spec.work_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: the closure only makes raw async-signal-safe system calls on data prepared
    // before the fork (ChildPlan::apply); it allocates nothing, takes no locks, logs nothing.
    unsafe {
        cmd.pre_exec(move || plan.apply());
    }
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    cmd
}

/// Sends SIGKILL to the process group `pgid` (a host's pid, since hosts lead their own
/// group), killing the host and every process it started that stayed in the group. Those
/// that left the group (`setsid`) die too when the host is its PID namespace's init (see
/// [`crate::pid_namespace`]): the kernel kills the whole namespace when its init dies.
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
