//! Naming seccomp denials: the supervisor side of the user-notification listener.
//!
//! [`crate::host::launch::spawn_with_listener`] installs the host's seccomp filter with
//! [`DenyAction::Notify`](crate::host::policy::DenyAction::Notify) and
//! `SECCOMP_FILTER_FLAG_NEW_LISTENER`. The child passes the listener descriptor to the
//! supervisor over a unix socket (`SCM_RIGHTS`) and closes its own copy before `execveat`, so
//! the host never holds the listener (it could otherwise answer its own notifications).
//!
//! With user notification a denied call does not fail: the calling thread *blocks* in the
//! kernel until the listener answers, and if the listener is closed the kernel fails the call
//! with `ENOSYS` and the host carries on. So the listener must always be serviced and never
//! closed while the host lives. This module therefore does not leave that to the caller: a
//! dedicated thread per host (`ar-seccomp`) owns the listener and, for every notification:
//!
//! 1. reads it (`SECCOMP_IOCTL_NOTIF_RECV`: pid, system-call number, arguments);
//! 2. queues a [`Denied`] for [`DenialListener::next_denial`] (before any signal is sent, so
//!    a caller that sees the host's exit can rely on [`DenialListener::try_denial`]);
//! 3. kills: `SIGKILL` to the notifying process if it left the host's process group,
//!    `SIGSYS` to the host's process group (so the exit status reads "signal 31", as with
//!    `SECCOMP_RET_KILL_PROCESS`; `RLIMIT_CORE=0` keeps it from dumping core into
//!    `work_dir`), then — after the host's main process has exited, or after
//!    [`KILL_GRACE`] if it has not (a host can block, ignore or catch `SIGSYS`) — `SIGKILL`
//!    to the group. A host that is PID 1 of its own PID namespace (the normal case, see
//!    [`crate::common::pid_namespace`]) ignores `SIGSYS` from outside, so it gets `SIGKILL` at once:
//!    its exit status reads "signal 9", and callers name the kill from the [`Denied`] report
//!    (the supervisor's event still says `"signal": 31`).
//!
//! The notification is never answered: the denied call never runs, and nobody ever replies
//! "continue". (The agent's listener, [`DenialListener::start_answering`], answers instead:
//! a denied call fails with an errno, an observed call — `connect` — is looked at and then
//! let run with `SECCOMP_USER_NOTIF_FLAG_CONTINUE`.) The thread ends, closing the listener, when no process uses the filter any
//! more (the kernel reports `POLLHUP` once the last such process has been reaped), even if
//! the [`DenialListener`] was dropped earlier.
//!
//! Why a thread rather than `tokio::io::unix::AsyncFd`: `AsyncFd` needs tokio's `net`
//! feature, which this workspace does not enable; and servicing must not depend on the caller
//! polling a future. The thread spends its life blocked in `poll(2)`.
//!
//! Hosts that never make a denied call are not slowed down: allowed calls take exactly the
//! same path through the filter as without a listener (only the return value of the deny
//! rules differs), and nothing is notified for them.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;

pub use crate::common::seccomp::syscall_name;

/// The signal a seccomp denial reports (31, SIGSYS), for events such as
/// `plugin_sandbox_kill {"signal": 31, "syscall": "socket"}`.
pub const DENIAL_SIGNAL: i32 = libc::SIGSYS;

/// How long the host gets to die of `SIGSYS` before its process group gets `SIGKILL`.
pub const KILL_GRACE: Duration = Duration::from_millis(200);

/// One denied system call, read from the host's seccomp listener. By the time a caller sees
/// it, the host is being killed (see the module docs); the call itself never ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// The thread that made the call (a thread id in the supervisor's pid namespace; the
    /// host's pid for a single-threaded host).
    pub pid: u32,
    /// The x86_64 system call number.
    pub nr: i64,
    /// Its name ([`syscall_name`]), `"unknown"` for a number no kernel up to 6.17 assigns.
    pub name: &'static str,
    /// The call's six raw arguments (e.g. `args[0]` of `socket` is the address family).
    pub args: [u64; 6],
}

/// The supervisor's end of a host's seccomp listener: the denials of that host, in order.
///
/// The listener itself is serviced (and the host killed on a denial) by a background thread
/// whether or not this value is polled or kept; dropping it only discards the reports.
#[derive(Debug)]
pub struct DenialListener {
    rx: mpsc::UnboundedReceiver<Denied>,
    observed: Option<mpsc::UnboundedReceiver<Observed>>,
    pgid: u32,
}

/// A call the listener let run after looking at it (the agent's observed calls,
/// [`crate::agent::policy::AGENT_SECCOMP_OBSERVE`]). What was read comes from the caller's
/// memory and descriptor table while its call waited: another thread of the caller can
/// change either before the kernel reads them again, so an observation reports, it never
/// decides (docs/security.md "Denials told, not silent").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// A `connect` to an internet address (`AF_INET`, `AF_INET6`).
    Connect {
        /// The calling thread (in the supervisor's PID namespace).
        pid: u32,
        /// The address and port connected to.
        address: std::net::SocketAddr,
        /// Whether the socket is a TCP stream: the only kind Landlock's connect rule covers
        /// (a UDP `connect`, as the resolver makes, is never refused by it).
        tcp: bool,
    },
    /// An open that only reads an existing file or directory (no write flag, no
    /// `O_PATH`), of which the caller names the path (docs/security.md "Denials told,
    /// not silent": the prediction reports reads of the credential stores).
    Read {
        /// The calling thread (in the supervisor's PID namespace).
        pid: u32,
        /// The call's name (`open`, `openat`).
        call: &'static str,
        /// The path as the caller named it, made absolute (its working directory or
        /// descriptor's path joined in front of a relative one), links not resolved.
        path: std::path::PathBuf,
        /// The device and inode number of what it leads to, links followed (`stat`), as
        /// the kernel will open it.
        file: (u64, u64),
    },
    /// A call that writes a path: an open for writing, a create, a remove, a rename (each
    /// of a rename's two paths is one observation).
    Write {
        /// The calling thread (in the supervisor's PID namespace).
        pid: u32,
        /// The call's name (`openat`, `mkdirat`, `unlinkat`, `renameat2`, …).
        call: &'static str,
        /// The path, absolute: its directory where the caller's working directory or
        /// descriptor and its links lead, the last component as written — or, for an open
        /// of an existing file, where that file's links lead.
        path: std::path::PathBuf,
        /// The call writes an existing file (an open of one) rather than adding or
        /// removing an entry of its directory.
        existing_file: bool,
    },
}

/// Which observations a listener queues (the others are let run unreported): the caller's
/// prediction of a refusal, so that only what will be told is held.
pub type KeepObserved = Box<dyn FnMut(&Observed) -> bool + Send>;

/// The most observations one listener queues; later ones are let run unreported (a
/// hostile agent's loop of refused writes cannot fill the supervisor's memory).
pub const MAX_QUEUED_OBSERVATIONS: usize = 65_536;

/// The most bytes of paths one listener's queued observations hold; later ones are let run
/// unreported. The count alone does not bound them: each path may be `PATH_MAX` long, and
/// a hostile agent names one store by as many paths as it likes (`//`, `./`), 65,536 of
/// 4 KiB being 256 MiB of the supervisor's memory (`tests/tests/suite/confinement/hostile_observer.rs`).
pub const MAX_QUEUED_OBSERVATION_BYTES: usize = 4 << 20;

/// The most denials one listener queues; later ones are still answered (`-errno`, or the
/// host killed) but not reported. A confined agent goes on after each denial and may loop
/// on one at some 100,000 calls a second, each queued until the round ends
/// (`tests/tests/suite/confinement/hostile_observer.rs`: 360 MiB of the supervisor's memory in 20 s before
/// this cap).
pub const MAX_QUEUED_DENIALS: usize = 65_536;

/// What an observation weighs against [`MAX_QUEUED_OBSERVATION_BYTES`]: its size and its
/// path's.
fn weight(o: &Observed) -> usize {
    std::mem::size_of::<Observed>()
        + match o {
            Observed::Connect { .. } => 0,
            Observed::Read { path, .. } | Observed::Write { path, .. } => path.as_os_str().len(),
        }
}

impl DenialListener {
    /// Starts servicing `listener` (a seccomp user-notification descriptor) for the host
    /// whose process group is `pgid` (the host's pid).
    pub(crate) fn start(listener: OwnedFd, pgid: u32) -> std::io::Result<Self> {
        let pgid_t = libc::pid_t::try_from(pgid)
            .ok()
            .filter(|p| *p > 1)
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // The host is our unreaped child, so its pid cannot have been reused.
        let pidfd = pidfd_open(pgid_t).ok();
        let init = is_namespace_init(pgid_t);
        let size = notif_size()?;
        let (tx, rx) = mpsc::unbounded_channel();
        let on_denial = OnDenial::Kill {
            pgid: pgid_t,
            pidfd,
            init,
        };
        std::thread::Builder::new()
            .name("ar-seccomp".into())
            .spawn(move || serve(listener, on_denial, size, tx))?;
        Ok(DenialListener {
            rx,
            observed: None,
            pgid,
        })
    }

    /// Starts servicing `listener` for a process that must *go on* after a denial (the
    /// agent of a round: docs/security.md, "Denials told, not silent"): a notified call
    /// whose number is in `observe` is looked at ([`Observed`], queued for
    /// [`DenialListener::try_observed`] when `keep` says so, at most
    /// [`MAX_QUEUED_OBSERVATIONS`] of at most [`MAX_QUEUED_OBSERVATION_BYTES`]) and then let run
    /// (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`); any other is queued as a [`Denied`] (at most
    /// [`MAX_QUEUED_DENIALS`]) and then
    /// answered with `-errno` (the call fails as with `SECCOMP_RET_ERRNO`; it never runs).
    /// Nobody is signalled. `pgid` is only reported back by [`DenialListener::pgid`]. The
    /// thread ends, as with [`DenialListener::start`], once no process uses the filter.
    ///
    /// # Errors
    /// The notification size cannot be queried, or the thread cannot be started.
    pub fn start_answering(
        listener: OwnedFd,
        pgid: u32,
        errno: i32,
        observe: &'static [AgentObservation],
        keep: KeepObserved,
    ) -> std::io::Result<Self> {
        let size = notif_size()?;
        let (tx, rx) = mpsc::unbounded_channel();
        let (observed_tx, observed_rx) = mpsc::unbounded_channel();
        let on_denial = OnDenial::Fail {
            errno,
            observe,
            keep,
            observed: observed_tx,
        };
        std::thread::Builder::new()
            .name("ar-seccomp".into())
            .spawn(move || serve(listener, on_denial, size, tx))?;
        Ok(DenialListener {
            rx,
            observed: Some(observed_rx),
            pgid,
        })
    }

    /// An observed call already looked at, if any, without waiting (only a listener of
    /// [`DenialListener::start_answering`] observes). Each is queued before its call is let
    /// run, so once every process under the filter is gone this returns them all.
    pub fn try_observed(&mut self) -> Option<Observed> {
        self.observed.as_mut()?.try_recv().ok()
    }

    /// The process group of the host (its pid).
    pub fn pgid(&self) -> u32 {
        self.pgid
    }

    /// Waits for the next denied system call of this host. When it returns, the host is
    /// already being killed (`SIGSYS` to its group, then `SIGKILL`): the caller has nothing
    /// to answer or kill, and should not send `SIGKILL` itself if it wants the exit status
    /// to read signal 31. It only records the event and reaps the host as usual.
    ///
    /// Cancel-safe (it can be used in `tokio::select!` next to `Child::wait`).
    ///
    /// # Errors
    /// `ErrorKind::UnexpectedEof` once no process uses the host's filter any more and every
    /// denial has been returned (the host ended, and was reaped).
    pub async fn next_denial(&mut self) -> std::io::Result<Denied> {
        self.rx.recv().await.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the host's seccomp filter is no longer in use; no further denials",
            )
        })
    }

    /// A denial already read, if any, without waiting. A denial is queued before the host is
    /// signalled, so after `Child::wait` has returned this tells for certain whether the
    /// host was stopped by the seccomp filter (a call outside the allow-list) — `None` with a SIGSYS exit means
    /// the architecture/x32 guard killed it, or a signal from elsewhere.
    pub fn try_denial(&mut self) -> Option<Denied> {
        self.rx.try_recv().ok()
    }
}

/// The size of the kernel's `struct seccomp_notif` (at least the one libc knows).
fn notif_size() -> std::io::Result<usize> {
    let mut sizes = libc::seccomp_notif_sizes {
        seccomp_notif: 0,
        seccomp_notif_resp: 0,
        seccomp_data: 0,
    };
    // SAFETY: SECCOMP_GET_NOTIF_SIZES writes one seccomp_notif_sizes into the valid, live
    // struct we pass.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_NOTIF_SIZES,
            0u32,
            &mut sizes as *mut libc::seccomp_notif_sizes,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(usize::from(sizes.seccomp_notif).max(std::mem::size_of::<libc::seccomp_notif>()))
}

/// True if `pid` is PID 1 of its own PID namespace (the last `NSpid` field of its status).
fn is_namespace_init(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .and_then(|ids| ids.split_whitespace().last().map(|l| l == "1"))
        })
        .unwrap_or(false)
}

fn pidfd_open(pid: libc::pid_t) -> std::io::Result<OwnedFd> {
    // SAFETY: pidfd_open(pid, 0) takes integers and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `poll(2)` on one descriptor; returns revents (0 on timeout), retrying on EINTR.
fn poll_one(fd: RawFd, events: libc::c_short, timeout_ms: libc::c_int) -> std::io::Result<i16> {
    loop {
        let mut p = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd on the stack.
        let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        if r >= 0 {
            return Ok(p.revents);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// What the listener thread does after queueing a denial.
enum OnDenial {
    /// Kill the host (the module docs): its process group, a pidfd of its main process
    /// (for the grace), and whether it is a PID-namespace init.
    Kill {
        pgid: libc::pid_t,
        pidfd: Option<OwnedFd>,
        init: bool,
    },
    /// Answer the call with `errno`, or let it run after a look when its number is in
    /// `observe`; signal nobody.
    Fail {
        errno: i32,
        observe: &'static [AgentObservation],
        keep: KeepObserved,
        observed: mpsc::UnboundedSender<Observed>,
    },
}

/// The listener thread: see the module docs.
fn serve(
    listener: OwnedFd,
    mut on_denial: OnDenial,
    size: usize,
    tx: mpsc::UnboundedSender<Denied>,
) {
    let pgid = match &on_denial {
        OnDenial::Kill { pgid, .. } => *pgid,
        OnDenial::Fail { .. } => 0,
    };
    let fd = listener.as_raw_fd();
    // u64 words: aligned for struct seccomp_notif.
    let mut buf = vec![0u64; size.div_ceil(8)];
    let mut queued = 0usize;
    let mut queued_bytes = 0usize;
    let mut denials = 0usize;
    loop {
        let revents = match poll_one(fd, libc::POLLIN, -1) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(pgid, error = %e, "seccomp listener: poll failed; killing the host");
                if pgid > 1 {
                    signal_group(pgid, libc::SIGKILL);
                }
                return;
            }
        };
        if revents & libc::POLLIN == 0 {
            // POLLHUP: no process uses the filter any more.
            return;
        }
        buf.fill(0);
        // SAFETY: NOTIF_RECV writes at most the kernel's sizeof(struct seccomp_notif) bytes,
        // which is ≤ buf's length (queried with SECCOMP_GET_NOTIF_SIZES); buf is zeroed as
        // the kernel requires.
        let r = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, buf.as_mut_ptr()) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                // The caller died (or was interrupted) before we read it.
                Some(libc::ENOENT) | Some(libc::EINTR) => continue,
                _ => {
                    tracing::error!(pgid, error = %e, "seccomp listener: cannot read a notification; killing the host");
                    if pgid > 1 {
                        signal_group(pgid, libc::SIGKILL);
                    }
                    return;
                }
            }
        }
        // SAFETY: buf is 8-byte aligned, at least size_of::<seccomp_notif>() long and was
        // filled by the kernel; seccomp_notif is plain integers (any bit pattern is valid).
        let notif: libc::seccomp_notif =
            unsafe { std::ptr::read(buf.as_ptr().cast::<libc::seccomp_notif>()) };
        let nr = i64::from(notif.data.nr);
        if let OnDenial::Fail {
            observe,
            keep,
            observed,
            ..
        } = &mut on_denial
        {
            if let Some(entry) = observe.iter().find(|o| o.nr == nr) {
                // Queued before the call runs, and only while its caller still waits (the
                // pid then still names it).
                let seen = look_at(&notif, entry);
                if id_valid(fd, notif.id) {
                    for o in seen.into_iter().filter(|o| keep(o)) {
                        let bytes = weight(&o);
                        if queued < MAX_QUEUED_OBSERVATIONS
                            && queued_bytes + bytes <= MAX_QUEUED_OBSERVATION_BYTES
                        {
                            queued += 1;
                            queued_bytes += bytes;
                            let _ = observed.send(o);
                        }
                    }
                }
                answer_continue(fd, notif.id);
                continue;
            }
        }
        let denied = Denied {
            pid: notif.pid,
            nr,
            name: syscall_name(nr).unwrap_or("unknown"),
            args: notif.data.args,
        };
        // Queue the report before any answer or signal, so it is there when the process's
        // exit is seen.
        if denials < MAX_QUEUED_DENIALS {
            denials += 1;
            let _ = tx.send(denied);
        }
        match &on_denial {
            OnDenial::Kill { pgid, pidfd, init } => {
                tracing::warn!(
                    pgid,
                    pid = notif.pid,
                    nr,
                    "seccomp denied a host system call; killing the host"
                );
                kill_for(
                    fd,
                    &notif,
                    *pgid,
                    if *init { None } else { pidfd.as_ref() },
                    *init,
                );
            }
            OnDenial::Fail { errno, .. } => answer_error(fd, notif.id, *errno),
        }
    }
}

/// Answers notification `id` with `-errno` (the call fails; it never runs). A notification
/// whose caller died meanwhile (`ENOENT`) needs no answer.
fn answer_error(fd: RawFd, id: u64, errno: i32) {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: -errno,
        flags: 0,
    };
    // SAFETY: NOTIF_SEND reads one live seccomp_notif_resp.
    unsafe {
        libc::ioctl(
            fd,
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &mut resp as *mut libc::seccomp_notif_resp,
        )
    };
}

/// Lets notification `id`'s call run as if the filter had allowed it. A notification whose
/// caller died meanwhile (`ENOENT`) needs no answer.
fn answer_continue(fd: RawFd, id: u64) {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: 0,
        flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    };
    // SAFETY: NOTIF_SEND reads one live seccomp_notif_resp.
    unsafe {
        libc::ioctl(
            fd,
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &mut resp as *mut libc::seccomp_notif_resp,
        )
    };
}

/// Whether notification `id`'s caller still waits for its answer (so the pid read with it
/// still names that caller).
fn id_valid(fd: RawFd, id: u64) -> bool {
    let mut id = id;
    // SAFETY: NOTIF_ID_VALID reads one u64 from the live `id`.
    unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &mut id as *mut u64) == 0 }
}

/// What an observed call is about, read from its caller while it waits: nothing for what
/// cannot be read (its memory, descriptor or directory; reported nothing, never refused).
fn look_at(notif: &libc::seccomp_notif, entry: &AgentObservation) -> Vec<Observed> {
    if entry.nr == libc::SYS_connect {
        return look_at_connect(notif).into_iter().collect();
    }
    let call = syscall_name(entry.nr).unwrap_or("unknown");
    entry
        .paths
        .iter()
        .filter_map(|p| {
            if let PathUse::OpensByFlags { flags, write_mask } = p.does {
                let flags = notif.data.args[usize::from(flags)];
                if flags & write_mask == 0 {
                    return read_path(notif, p, flags).map(|(path, file)| Observed::Read {
                        pid: notif.pid,
                        call,
                        path,
                        file,
                    });
                }
            }
            let (path, existing_file) = written_path(notif, p)?;
            Some(Observed::Write {
                pid: notif.pid,
                call,
                path,
                existing_file,
            })
        })
        .collect()
}

/// The path of a read-only open `p` of the call of `notif`, made absolute, and the device
/// and inode of what it leads to ([`Observed::Read`]); `None` for an `O_PATH` open (which
/// Landlock does not check) and for what does not exist (the kernel's `ENOENT` comes before
/// Landlock). One `stat` on top of reading the path: every read-only open of the agent
/// comes here.
fn read_path(
    notif: &libc::seccomp_notif,
    p: &ObservedPath,
    flags: u64,
) -> Option<(PathBuf, (u64, u64))> {
    use std::os::unix::fs::MetadataExt;
    if flags & libc::O_PATH as u64 != 0 {
        return None;
    }
    let full = absolute_path(notif, p)?;
    let meta = std::fs::metadata(&full).ok()?;
    Some((full, (meta.dev(), meta.ino())))
}

/// The path argument `p` of the call of `notif` read from the caller's memory and made
/// absolute: where its working directory or descriptor leads in front of a relative one;
/// `/proc/self` (and `/dev/fd`, `/dev/stdin`, … which lead there) as the caller's own.
/// Links are not resolved.
fn absolute_path(notif: &libc::seccomp_notif, p: &ObservedPath) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let args = notif.data.args;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    let got = read_memory(notif.pid, args[usize::from(p.path)], &mut buf)?;
    let end = buf[..got].iter().position(|b| *b == 0)?;
    let written = Path::new(std::ffi::OsStr::from_bytes(&buf[..end]));
    // `/proc/self` (and `/dev/fd`, `/dev/stdout`, … which lead there) here is the
    // supervisor: the caller's own is its pid's.
    let own = Path::new("/proc").join(notif.pid.to_string());
    let own_fd = |n: &str| own.join("fd").join(n);
    let full = if let Ok(rest) = written
        .strip_prefix("/proc/self")
        .or_else(|_| written.strip_prefix("/proc/thread-self"))
    {
        own.join(rest)
    } else if let Ok(rest) = written.strip_prefix("/dev/fd") {
        own.join("fd").join(rest)
    } else if written == Path::new("/dev/stdin") {
        own_fd("0")
    } else if written == Path::new("/dev/stdout") {
        own_fd("1")
    } else if written == Path::new("/dev/stderr") {
        own_fd("2")
    } else if written.is_absolute() {
        written.to_owned()
    } else {
        let dirfd = p.dirfd.map(|a| args[usize::from(a)] as i32);
        let base = match dirfd {
            None | Some(libc::AT_FDCWD) => format!("/proc/{}/cwd", notif.pid),
            Some(fd) => format!("/proc/{}/fd/{fd}", notif.pid),
        };
        std::fs::read_link(base).ok()?.join(written)
    };
    Some(full)
}

/// The absolute path of `p` of the call of `notif` ([`Observed::Write`]'s `path`), and
/// whether it is an existing file the call opens.
fn written_path(notif: &libc::seccomp_notif, p: &ObservedPath) -> Option<(PathBuf, bool)> {
    let full = absolute_path(notif, p)?;
    // What the kernel refuses before Landlock looks is not Landlock's.
    let exists = full.symlink_metadata().is_ok();
    match p.does {
        PathUse::Opens | PathUse::OpensByFlags { .. } => match full.canonicalize() {
            Ok(real) => return Some((real, true)),
            // A link of /proc to what has no path (a pipe, a socket, an anonymous inode:
            // `/proc/self/fd/N`): no file Landlock checks.
            Err(_)
                if full.starts_with("/proc") && full.read_link().is_ok_and(|l| l.is_relative()) =>
            {
                return None
            }
            Err(_) => {}
        },
        PathUse::Makes if exists => return None,
        PathUse::Removes if !exists => return None,
        _ => {}
    }
    let name = full.file_name()?;
    let dir = full.parent()?.canonicalize().ok()?;
    Some((dir.join(name), false))
}

/// A `connect`'s address and socket kind ([`Observed::Connect`]).
fn look_at_connect(notif: &libc::seccomp_notif) -> Option<Observed> {
    let [fd, addr, len, ..] = notif.data.args;
    let mut buf = [0u8; std::mem::size_of::<libc::sockaddr_in6>()];
    let want = usize::try_from(len).ok()?.min(buf.len());
    let got = read_memory(notif.pid, addr, &mut buf[..want])?;
    let address = socket_address(&buf[..got])?;
    let tcp = is_tcp(notif.pid, i32::try_from(fd).ok()?)?;
    Some(Observed::Connect {
        pid: notif.pid,
        address,
        tcp,
    })
}

/// Reads `buf.len()` bytes at `addr` of process (thread) `pid` (`process_vm_readv`: the
/// supervisor is the agent's ancestor, which ptrace's access check and Yama ask for);
/// how many were read.
fn read_memory(pid: u32, addr: u64, buf: &mut [u8]) -> Option<usize> {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: process_vm_readv writes at most `buf.len()` bytes into `buf` (the local iovec)
    // and only reads the other process's memory.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    usize::try_from(n).ok()
}

/// The internet address of a `struct sockaddr` of `bytes` (native byte order for the
/// family, network order for port and address); `None` for another family or too few bytes.
fn socket_address(bytes: &[u8]) -> Option<std::net::SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
    let family = u16::from_ne_bytes(bytes.get(..2)?.try_into().ok()?);
    let port = u16::from_be_bytes(bytes.get(2..4)?.try_into().ok()?);
    match i32::from(family) {
        libc::AF_INET => {
            let ip: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::from((Ipv4Addr::from(ip), port)))
        }
        libc::AF_INET6 => {
            let ip: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
            Some(SocketAddr::from((Ipv6Addr::from(ip), port)))
        }
        _ => None,
    }
}

/// Whether descriptor `fd` of thread `pid` is a TCP stream socket: a copy taken with
/// `pidfd_getfd` (of the thread's process, found by its `Tgid`) and asked `SO_TYPE` and
/// `SO_PROTOCOL`, then closed.
fn is_tcp(pid: u32, fd: RawFd) -> Option<bool> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let tgid: libc::pid_t = status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()?;
    let pidfd = pidfd_open(tgid).ok()?;
    // SAFETY: pidfd_getfd(pidfd, fd, 0) takes integers and returns a new descriptor or -1.
    let copy = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0u32) };
    if copy < 0 {
        return None;
    }
    // SAFETY: `copy` is a fresh descriptor that nothing else owns.
    let copy = unsafe { OwnedFd::from_raw_fd(copy as RawFd) };
    let option = |name| {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes one c_int into the live `value` and its size into `len`.
        let r = unsafe {
            libc::getsockopt(
                copy.as_raw_fd(),
                libc::SOL_SOCKET,
                name,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (r == 0).then_some(value)
    };
    Some(
        option(libc::SO_TYPE)? == libc::SOCK_STREAM
            && option(libc::SO_PROTOCOL)? == libc::IPPROTO_TCP,
    )
}

/// Kills the host after a notification (see the module docs). The notification itself is
/// never answered. `init`: the host is a PID-namespace init, which ignores `SIGSYS` from
/// us, so there is no grace to wait for.
fn kill_for(
    fd: RawFd,
    notif: &libc::seccomp_notif,
    pgid: libc::pid_t,
    pidfd: Option<&OwnedFd>,
    init: bool,
) {
    let pid = notif.pid as libc::pid_t;
    // SAFETY: getpgid takes an integer.
    let its_group = unsafe { libc::getpgid(pid) };
    if its_group != pgid {
        // A process that left the host's group (setsid/setpgid). Its pid is still its own
        // while the notification is pending, which NOTIF_ID_VALID confirms.
        if id_valid(fd, notif.id) {
            // SAFETY: kill takes integers.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    signal_group(pgid, libc::SIGSYS);
    match pidfd {
        _ if init => {}
        Some(p) => {
            let ms = KILL_GRACE.as_millis() as libc::c_int;
            let _ = poll_one(p.as_raw_fd(), libc::POLLIN, ms);
        }
        None => std::thread::sleep(KILL_GRACE),
    }
    // Whatever survived SIGSYS (blocked, ignored or caught it, or other group members).
    signal_group(pgid, libc::SIGKILL);
}

fn signal_group(pgid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill with a negative pid signals a process group; integers only.
    unsafe { libc::kill(-pgid, sig) };
}

/// When an entry of the agent's seccomp deny-list (`crate::agent::policy::AGENT_SECCOMP_DENY`)
/// refuses its call, or of its observed calls (`AGENT_SECCOMP_OBSERVE`) is observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentDenyWhen {
    /// Always.
    Always,
    /// When the low 32 bits of argument `arg` are one of `values` (each with its name).
    ArgIn {
        /// The argument's index (0-based).
        arg: u8,
        /// The refused values and their names.
        values: &'static [(u64, &'static str)],
    },
    /// When argument `arg` carries any of `flags` (each a bit of its low 32 bits, with its
    /// name): one masked comparison per flag.
    ArgAnyFlag {
        /// The argument's index (0-based).
        arg: u8,
        /// The refused flags and their names.
        flags: &'static [(u64, &'static str)],
    },
}

/// One path a call of the agent's observed calls (`crate::agent::policy::AGENT_SECCOMP_OBSERVE`)
/// changes: the index of its path argument,
/// of the directory descriptor it is relative to (none: the caller's working directory),
/// and what the call does there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObservedPath {
    /// The directory descriptor's argument (`*at` calls).
    pub dirfd: Option<u8>,
    /// The path's argument.
    pub path: u8,
    /// What the call does there.
    pub does: PathUse,
}

/// What a call does with a path it writes, which tells where Landlock checks it and when
/// the kernel refuses it first (so the observer does not call it Landlock's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathUse {
    /// Opens it: an existing file is written where it resolves; a missing one is made in
    /// its directory.
    Opens,
    /// Opens it, for writing when argument `flags` carries a bit of `write_mask` (as
    /// [`PathUse::Opens`]), else only to read it ([`Observed::Read`]).
    OpensByFlags {
        /// The flags argument's index (0-based).
        flags: u8,
        /// The flags that ask for writing.
        write_mask: u64,
    },
    /// Makes an entry (`mkdir`): an existing one fails with `EEXIST` first.
    Makes,
    /// Removes an entry (`unlink`, `rmdir`, a rename's source): a missing one fails with
    /// `ENOENT` first.
    Removes,
    /// Makes or replaces an entry (a rename's target).
    Replaces,
}

/// One call the agent's filter lets run after the supervisor has looked at it.
#[derive(Debug, Clone, Copy)]
pub struct AgentObservation {
    /// The x86_64 system call number.
    pub nr: i64,
    /// When it is observed ([`AgentDenyWhen`]'s forms).
    pub when: AgentDenyWhen,
    /// The paths it writes (none for `connect`).
    pub paths: &'static [ObservedPath],
    /// Why.
    pub why: &'static str,
}
