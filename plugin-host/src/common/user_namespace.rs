//! Full confinement without root: the host in its own user, PID and mount namespaces, its
//! process count bounded by `RLIMIT_NPROC` inside the new user namespace.
//!
//! An unprivileged supervisor cannot unshare a PID namespace (`CAP_SYS_ADMIN` is needed),
//! nor use a `pids` cgroup (the hierarchy belongs to root) — see [`crate::common::pid_namespace`]
//! and [`crate::common::pids_limit`]. Where the kernel allows unprivileged user namespaces it can do
//! both jobs another way, between fork and exec ([`UserNamespacePlan::enter`]):
//!
//! 1. `unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS)`:
//!    the forked child (single-threaded, as a user namespace requires) gets a user namespace
//!    it owns, in which it may create the PID, mount, IPC and UTS namespaces;
//! 2. `/proc/self/setgroups` ← `deny`, `/proc/self/uid_map` ← `U U 1`, `/proc/self/gid_map` ←
//!    `G G 1`: the operator's own ids map to themselves, so files the host creates belong to
//!    the operator and nothing else is reachable (user_namespaces(7));
//! 3. `setrlimit(RLIMIT_NPROC, pids_max + 1)`: since Linux 5.14 the kernel counts processes
//!    per (user namespace, uid) (`ucounts`), so inside the fresh namespace the count is the
//!    host's own tasks only, not all of the operator's; and the host holds no
//!    `CAP_SYS_RESOURCE`/`CAP_SYS_ADMIN` in the *initial* namespace, which is where
//!    `copy_process` looks for an exemption. The `+ 1` is the reaper below;
//! 4. `fork`: the child is PID 1 of the new PID namespace and goes on to confine itself and
//!    exec the host; the parent becomes a *reaper* that closes every descriptor (so the
//!    supervisor sees EOF on the host's pipes, and std's exec-error pipe closes at the
//!    host's exec), waits for the host and ends the same way (exit code, or the same
//!    signal re-raised with its default action), so the supervisor sees the host's status.
//!
//! The reaper is the supervisor's child and the leader of the host's process group, so
//! [`crate::host::launch::kill_group`] reaches both. Both arm `PR_SET_PDEATHSIG`: the supervisor's
//! death kills the reaper, whose death kills the host, whose death (as namespace init) kills
//! everything it started. The reaper runs no foreign code and makes only raw system calls.
//!
//! Root never takes this path: it has the plain PID namespace and the `pids` cgroup, and
//! `RLIMIT_NPROC` does not apply to uid 0 (`INIT_USER`).

use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::OnceLock;

use crate::common::id_map::IdMap;

/// What the forked child does to enter its namespaces; built before the fork.
#[derive(Debug)]
pub(crate) struct UserNamespacePlan {
    uid_map: IdMap,
    gid_map: IdMap,
    /// `RLIMIT_NPROC` inside the new user namespace (`None`: left as it is).
    nproc: Option<libc::rlim_t>,
    /// Whether the reaper ignores the signals that end a round cooperatively (`SIGTERM`,
    /// `SIGINT`, `SIGHUP`, …): the agent's reaper shares the agent's process group, which
    /// the supervisor signals as a whole, and must outlive the agent's grace.
    quiet_reaper: bool,
}

impl UserNamespacePlan {
    /// A plan bounding the host to `pids_max` tasks, for the calling process's ids.
    pub(crate) fn new(pids_max: u64) -> Self {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        UserNamespacePlan {
            uid_map: IdMap::identity(uid),
            gid_map: IdMap::identity(gid),
            nproc: Some(pids_max.saturating_add(1)),
            quiet_reaper: false,
        }
    }

    /// The agent's plan (`crate::agent::confine`): no `RLIMIT_NPROC` of its own (builds run
    /// many processes; the round's cgroup bounds them), and a reaper that ignores the
    /// round's stop signals.
    pub(crate) fn for_agent() -> Self {
        UserNamespacePlan {
            nproc: None,
            quiet_reaper: true,
            ..UserNamespacePlan::new(0)
        }
    }

    /// Between fork and exec: steps 1–4 of the module docs. Returns in the host-to-be (PID 1
    /// of the new PID namespace); the reaper never returns. Raw system calls only.
    ///
    /// # Errors
    /// The OS error of the failing step (before the fork).
    pub(crate) fn enter(&self) -> std::io::Result<()> {
        let flags = libc::CLONE_NEWUSER
            | libc::CLONE_NEWPID
            | libc::CLONE_NEWNS
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS;
        // SAFETY: unshare takes flags only; this child is single-threaded.
        if unsafe { libc::unshare(flags) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", self.uid_map.bytes())?;
        write_file(c"/proc/self/gid_map", self.gid_map.bytes())?;
        if let Some(nproc) = self.nproc {
            let lim = libc::rlimit {
                rlim_cur: nproc,
                rlim_max: nproc,
            };
            // SAFETY: setrlimit reads a valid stack struct.
            if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &lim) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        // A raw clone behaves like fork without running glibc's atfork handlers.
        // SAFETY: clone with SIGCHLD and no new stack duplicates this process; both sides
        // only make raw system calls afterwards.
        let pid =
            unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) };
        match pid {
            -1 => Err(std::io::Error::last_os_error()),
            0 => Ok(()),
            host => {
                if self.quiet_reaper {
                    ignore_stop_signals();
                }
                reap(host as libc::pid_t)
            }
        }
    }
}

/// The signals a round's stop sends to the agent's group (and terminals and timers send).
pub(crate) const STOP_SIGNALS: [libc::c_int; 7] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// Sets [`STOP_SIGNALS`] to `SIG_IGN` in the calling process. Raw system calls only.
pub(crate) fn ignore_stop_signals() {
    for sig in STOP_SIGNALS {
        // SAFETY: sigaction with a zeroed struct whose handler is SIG_IGN.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = libc::SIG_IGN;
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
}

/// The reaper: closes everything, waits for `host`, ends as it ended. Never returns.
fn reap(host: libc::pid_t) -> ! {
    // SAFETY: close_range over all descriptors of this process; nothing here uses them.
    unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) };
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: wait4 writes the status into a live stack integer.
        let r = unsafe { libc::wait4(host, &mut status, 0, std::ptr::null_mut()) };
        if r == host {
            break;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // SAFETY: _exit never returns.
            unsafe { libc::_exit(127) };
        }
    }
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: restore the default action of `sig`, unblock it and send it to this
        // process: it ends the reaper the way the host ended (RLIMIT_CORE is 0: no core).
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &act, std::ptr::null_mut());
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    // SAFETY: _exit never returns.
    unsafe { libc::_exit(code) }
}

/// Writes `data` to the existing file `path` in one `write`. Raw system calls only.
pub(crate) fn write_file(path: &CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY: open of a NUL-terminated static path; returns a descriptor or -1.
    let fd: RawFd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: write of a live buffer to the descriptor just opened.
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let err = std::io::Error::last_os_error();
    // SAFETY: close of the descriptor just opened.
    unsafe { libc::close(fd) };
    if n == data.len() as isize {
        Ok(())
    } else {
        Err(err)
    }
}

/// Whether this process may create a user namespace with PID and mount namespaces in it
/// (unprivileged user namespaces enabled, not blocked by a security module or a
/// `max_user_namespaces` of 0). Probed once by a forked child that tries and exits; the
/// answer is cached.
///
/// # Errors
/// [`NoUserNamespace`]: the errno of `unshare` and where to look, or why the probe failed.
pub fn user_namespaces() -> Result<(), NoUserNamespace> {
    static ANSWER: OnceLock<Result<(), NoUserNamespace>> = OnceLock::new();
    ANSWER.get_or_init(probe).clone()
}

/// Why this process cannot create a user namespace ([`user_namespaces`]). Display says it
/// in words, with the settings to look at.
#[derive(Clone, Debug, thiserror::Error)]
pub enum NoUserNamespace {
    /// The probe child could not be forked.
    #[error("cannot fork to probe: {0}")]
    Fork(std::sync::Arc<std::io::Error>),
    /// waitpid(2) on the probe child failed.
    #[error("cannot wait for the probe")]
    Wait,
    /// `unshare(CLONE_NEWUSER | CLONE_NEWPID | …)` failed in the probe child.
    #[error(
        "unshare(CLONE_NEWUSER) fails: {} ({})",
        std::io::Error::from_raw_os_error(*errno),
        why_no_user_namespace(*errno, *filtered)
    )]
    Unshare {
        /// The errno of `unshare`.
        errno: i32,
        /// Whether this process already runs under someone else's seccomp filter.
        filtered: bool,
    },
    /// The probe child was killed by a signal.
    #[error("the probe child died")]
    ChildDied,
}

fn probe() -> Result<(), NoUserNamespace> {
    // SAFETY: a raw clone duplicating this process (as fork, without atfork handlers); the
    // child makes one unshare and exits.
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) };
    if pid == 0 {
        let flags = libc::CLONE_NEWUSER
            | libc::CLONE_NEWPID
            | libc::CLONE_NEWNS
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS;
        // SAFETY: unshare takes flags; _exit never returns.
        unsafe {
            let code = if libc::unshare(flags) == 0 {
                0
            } else {
                *libc::__errno_location()
            };
            libc::_exit(code)
        }
    }
    if pid < 0 {
        return Err(NoUserNamespace::Fork(std::sync::Arc::new(
            std::io::Error::last_os_error(),
        )));
    }
    let mut status: libc::c_int = 0;
    // SAFETY: wait for the probe child into a live stack integer.
    while unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(NoUserNamespace::Wait);
        }
    }
    match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
        Some(0) => Ok(()),
        Some(errno) => Err(NoUserNamespace::Unshare {
            errno,
            filtered: under_seccomp_filter(),
        }),
        None => Err(NoUserNamespace::ChildDied),
    }
}

/// Whether this process already runs under a seccomp filter of someone else's (a container
/// runtime's profile, systemd's `SystemCallFilter=`): `Seccomp: 2` in `/proc/self/status`.
fn under_seccomp_filter() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .any(|line| line.split_whitespace().eq(["Seccomp:", "2"]))
    })
}

/// Where to look when `unshare(CLONE_NEWUSER)` failed with `errno`. Inside a container the
/// usual cause is the runtime's seccomp profile (containerd's and Docker's default deny
/// `unshare` without `CAP_SYS_ADMIN`), not the kernel's settings: docs/operations.md
/// "Confinement in a container".
fn why_no_user_namespace(errno: i32, filtered: bool) -> &'static str {
    if filtered && (errno == libc::EPERM || errno == libc::ENOSYS) {
        "this process runs under a seccomp filter (a container runtime's default profile denies unshare without CAP_SYS_ADMIN: allow it, deploy/seccomp/userns.py), or unprivileged user namespaces are disabled: see kernel.unprivileged_userns_clone, user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns"
    } else {
        "unprivileged user namespaces disabled: see kernel.unprivileged_userns_clone, user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_names_the_seccomp_filter_only_under_one() {
        assert!(why_no_user_namespace(libc::EPERM, true).contains("seccomp filter"));
        assert!(why_no_user_namespace(libc::ENOSYS, true).contains("seccomp filter"));
        assert!(!why_no_user_namespace(libc::EPERM, false).contains("seccomp"));
        assert!(!why_no_user_namespace(libc::ENOSPC, true).contains("seccomp"));
    }
}
