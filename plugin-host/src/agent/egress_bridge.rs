//! The agent's way out when its egress is filtered: a private network namespace with only
//! loopback, and a forwarder handing every connection to the supervisor's proxy.
//!
//! With `[agent.sandbox] allow_hosts` set, the agent must reach the outside only through the
//! supervisor's filtering proxy (docs/security.md, "Egress by host name"). Between fork and
//! exec, [`EgressBridge::enter`]:
//!
//! 1. unshares a network namespace (`CLONE_NEWNET`; for an unprivileged operator inside a new
//!    user namespace of its own, `CLONE_NEWUSER | CLONE_NEWNET`, the operator's ids mapped to
//!    themselves as in [`crate::common::user_namespace`]). The namespace has one interface, `lo`,
//!    which it brings up: no other interface, no route, so a direct connection to any
//!    address outside fails (`ENETUNREACH`; `127.0.0.0/8` is the namespace's own loopback);
//! 2. binds a listening TCP socket to `127.0.0.1:`[`PROXY_PORT`] in that namespace (the
//!    namespace is new, so the port is always free), and one to `127.0.0.1:<port>` and
//!    `[::1]:<port>` for each *forwarded* port the bridge was made with ([`bridge`]: a
//!    local model endpoint of `connect_ports`, later the key broker's) — the `::1` one only
//!    where the kernel has IPv6;
//! 3. forks the *forwarder*: a child that keeps only those listening sockets and its end of
//!    a `SOCK_SEQPACKET` pair whose other end the supervisor holds ([`BridgeReceiver`]). For
//!    every connection it accepts on any of them it sends the connected socket itself to
//!    the supervisor (`SCM_RIGHTS`) and closes its copy; the supervisor tells which port it
//!    was by the socket's own address (`getsockname`) and serves it with that port's
//!    handler (the proxy for [`PROXY_PORT`]). It copies no bytes: the supervisor's proxy reads
//!    and writes the agent's connection directly, so the forwarder holds no data and needs
//!    no buffers. It ignores the stop signals the round's process group gets (the agent may
//!    be draining its turn), dies with `PR_SET_PDEATHSIG` = SIGKILL when the agent's process
//!    (its parent) ends, and with the group's `SIGKILL` at the end of the round;
//! 4. returns, and the caller goes on to confine and exec the agent (the listening socket
//!    and the pair's end are close-on-exec: the agent never holds them).
//!
//! The agent is then told `HTTPS_PROXY=http://127.0.0.1:3128` and friends (see
//! [`proxy_url`]); whatever it connects to, only the proxy can take it further.
//!
//! Everything is prepared before the fork; `enter` and the forwarder make raw system calls
//! only (no allocation, locks or logging), the crate's rule for code between fork and exec.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::common::id_map::IdMap;

/// The loopback TCP port, inside the agent's network namespace, the forwarder listens on.
/// The namespace is private to the round, so a fixed port cannot collide (3128: the port
/// HTTP proxies customarily use).
pub const PROXY_PORT: u16 = 3128;

/// The most forwarded ports one bridge takes besides [`PROXY_PORT`] (each is two listening
/// sockets in the forwarder, which keeps them in a fixed array: it may not allocate).
pub const MAX_FORWARDED_PORTS: usize = 32;

/// Listening sockets of one forwarder at most: the proxy's and two per forwarded port.
const MAX_LISTENERS: usize = 1 + 2 * MAX_FORWARDED_PORTS;

/// The proxy URL the agent is given (`http://127.0.0.1:3128`).
pub fn proxy_url() -> String {
    format!("http://127.0.0.1:{PROXY_PORT}")
}

/// What the forked agent process does to enter its network namespace and start the
/// forwarder; built before the fork by [`bridge`]. Move it into the fork (for
/// `std::process::Command`, into the `pre_exec` closure) and drop the parent's copy after
/// the spawn, so that [`BridgeReceiver::recv`] sees the end when the forwarder ends.
#[derive(Debug)]
pub struct EgressBridge {
    /// The forwarder's end of the pair (close-on-exec).
    forwarder_end: OwnedFd,
    /// `Some((uid_map, gid_map))`: also create a user namespace (unprivileged operator).
    user_namespace: Option<(IdMap, IdMap)>,
    /// The ids those maps map.
    ids: Option<(u32, u32)>,
    /// The forwarded loopback ports (not [`PROXY_PORT`], no repeats, at most
    /// [`MAX_FORWARDED_PORTS`]).
    ports: Vec<u16>,
}

/// The supervisor's end: the agent's connections, one descriptor per message.
#[derive(Debug)]
pub struct BridgeReceiver {
    fd: OwnedFd,
}

/// Prepares a bridge for one agent launch. `user_namespace`: `Some((uid, gid))` creates a
/// user namespace around the network namespace, mapping the agent's own ids (the ids the
/// agent process has when [`EgressBridge::enter`] runs) to themselves. It is needed unless
/// that process holds `CAP_SYS_ADMIN` (root); a caller whose launch already entered a user
/// namespace passes `None` and calls [`EgressBridge::enter`] after it.
///
/// `forwarded`: loopback ports the forwarder also listens on (`127.0.0.1` and `::1`), each
/// connection handed over like the proxy's; [`PROXY_PORT`] and repeats are left out.
///
/// # Errors
/// `socketpair(2)` failed (descriptor limits); more than [`MAX_FORWARDED_PORTS`] ports
/// (`InvalidInput`).
pub fn bridge(
    user_namespace: Option<(u32, u32)>,
    forwarded: &[u16],
) -> std::io::Result<(EgressBridge, BridgeReceiver)> {
    let ports = forwarded_ports(forwarded)?;
    let (a, b) = crate::common::fd_passing::socket_pair()?;
    let user_namespace_ids = user_namespace;
    let user_namespace =
        user_namespace.map(|(uid, gid)| (IdMap::identity(uid), IdMap::identity(gid)));
    Ok((
        EgressBridge {
            forwarder_end: a,
            user_namespace,
            ids: user_namespace_ids,
            ports,
        },
        BridgeReceiver { fd: b },
    ))
}

/// `forwarded` without [`PROXY_PORT`], `0` and repeats, in order.
///
/// # Errors
/// More than [`MAX_FORWARDED_PORTS`] remain (`InvalidInput`).
fn forwarded_ports(forwarded: &[u16]) -> std::io::Result<Vec<u16>> {
    let mut ports: Vec<u16> = Vec::new();
    for &p in forwarded {
        if p != PROXY_PORT && p != 0 && !ports.contains(&p) {
            ports.push(p);
        }
    }
    if ports.len() > MAX_FORWARDED_PORTS {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} loopback ports to forward into the agent's network namespace; at most {MAX_FORWARDED_PORTS}",
                ports.len()
            ),
        ));
    }
    Ok(ports)
}

/// Where [`EgressBridge::enter`] failed, for the caller's report (raw system calls only:
/// the step and the errno, nothing allocated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnterError {
    /// The step: `"unshare"`, `"uid_map"`, `"loopback"`, `"listen"` or `"fork"`.
    pub step: &'static str,
    /// The errno.
    pub errno: i32,
}

impl std::fmt::Display for EnterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "egress bridge: {} failed: {}",
            self.step,
            std::io::Error::from_raw_os_error(self.errno)
        )
    }
}

impl std::error::Error for EnterError {}

impl From<EnterError> for std::io::Error {
    fn from(e: EnterError) -> Self {
        std::io::Error::from_raw_os_error(e.errno)
    }
}

fn errno() -> i32 {
    // SAFETY: reads this thread's errno.
    unsafe { *libc::__errno_location() }
}

fn fail(step: &'static str) -> EnterError {
    EnterError {
        step,
        errno: errno(),
    }
}

impl EgressBridge {
    /// The supervisor's side: the forwarder's end (for the launch plan to pass on), the
    /// `(uid, gid)` of the user namespace to create, if any, and the forwarded ports.
    pub fn into_parts(self) -> (OwnedFd, Option<(u32, u32)>, Vec<u16>) {
        (self.forwarder_end, self.ids, self.ports)
    }

    /// The launcher's side: the bridge of [`EgressBridge::into_parts`].
    ///
    /// # Errors
    /// As [`bridge`]: too many forwarded ports.
    pub(crate) fn from_parts(
        forwarder_end: OwnedFd,
        ids: Option<(u32, u32)>,
        ports: &[u16],
    ) -> std::io::Result<Self> {
        Ok(EgressBridge {
            forwarder_end,
            user_namespace: ids.map(|(uid, gid)| (IdMap::identity(uid), IdMap::identity(gid))),
            ids,
            ports: forwarded_ports(ports)?,
        })
    }

    /// Run in the forked child before exec (single-threaded; raw system calls only): the
    /// steps of the module docs. On return the process is in its network namespace and the
    /// forwarder runs; on error nothing outside this process changed and the caller must not
    /// exec the agent (fail closed).
    ///
    /// # Errors
    /// The failing step and its errno ([`EnterError`]).
    pub fn enter(&self) -> Result<(), EnterError> {
        self.enter_namespace()?;
        let mut listeners = [-1 as RawFd; MAX_LISTENERS];
        let count = match self.listen_all(&mut listeners) {
            Ok(n) => n,
            Err(e) => {
                close_all(&listeners);
                return Err(e);
            }
        };
        // SAFETY: getpid takes nothing.
        let parent = unsafe { libc::getpid() };
        // A raw clone behaves like fork without running glibc's atfork handlers.
        // SAFETY: clone with SIGCHLD and no new stack duplicates this process; both sides
        // only make raw system calls afterwards.
        let pid =
            unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) };
        match pid {
            -1 => {
                let e = fail("fork");
                close_all(&listeners);
                Err(e)
            }
            0 => forward(parent, &listeners[..count], self.forwarder_end.as_raw_fd()),
            _ => {
                // The agent never holds the listening sockets (the forwarder does).
                close_all(&listeners);
                Ok(())
            }
        }
    }

    /// Step 2 of the module docs: the proxy's listening socket, then each forwarded port's
    /// (`127.0.0.1`, and `::1` where IPv6 is there), into `out`; how many.
    fn listen_all(&self, out: &mut [RawFd; MAX_LISTENERS]) -> Result<usize, EnterError> {
        out[0] = listen_loopback(PROXY_PORT, false)?;
        let mut n = 1;
        for &port in &self.ports {
            out[n] = listen_loopback(port, false)?;
            n += 1;
            // A kernel or namespace without IPv6 has no `::1`: the forward is then IPv4's only.
            if let Ok(fd) = listen_loopback(port, true) {
                out[n] = fd;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Steps 1 of the module docs: the namespaces, the id maps, `lo` up.
    fn enter_namespace(&self) -> Result<(), EnterError> {
        let flags = match self.user_namespace {
            Some(_) => libc::CLONE_NEWUSER | libc::CLONE_NEWNET,
            None => libc::CLONE_NEWNET,
        };
        // SAFETY: unshare takes flags.
        if unsafe { libc::unshare(flags) } != 0 {
            return Err(fail("unshare"));
        }
        if let Some((uid_map, gid_map)) = &self.user_namespace {
            crate::common::user_namespace::write_file(c"/proc/self/setgroups", b"deny")
                .and_then(|()| {
                    crate::common::user_namespace::write_file(
                        c"/proc/self/uid_map",
                        uid_map.bytes(),
                    )
                })
                .and_then(|()| {
                    crate::common::user_namespace::write_file(
                        c"/proc/self/gid_map",
                        gid_map.bytes(),
                    )
                })
                .map_err(|e| EnterError {
                    step: "uid_map",
                    errno: e.raw_os_error().unwrap_or(libc::EPERM),
                })?;
        }
        loopback_up()
    }
}

/// Whether this process can give an agent its network namespace (as
/// [`EgressBridge::enter`] would, for this process's own ids): probed once by a forked
/// child that enters one, binds the proxy port and exits; the answer is cached.
///
/// # Errors
/// [`NoBridge`]: which step failed and why, with where to look.
pub fn probe() -> Result<(), NoBridge> {
    static ANSWER: std::sync::OnceLock<Result<(), NoBridge>> = std::sync::OnceLock::new();
    ANSWER.get_or_init(probe_once).clone()
}

/// Why this process cannot give an agent its network namespace ([`probe`]). Display says
/// which step failed and why, with where to look.
#[derive(Clone, Debug, thiserror::Error)]
pub enum NoBridge {
    /// The probe's own setup failed before the fork: what (`socketpair`, `pipe`) and why.
    #[error("{0}: {1}")]
    Setup(&'static str, std::sync::Arc<std::io::Error>),
    /// The probe child could not be forked.
    #[error("cannot fork to probe: {0}")]
    Fork(std::sync::Arc<std::io::Error>),
    /// waitpid(2) on the probe child failed.
    #[error("cannot wait for the probe")]
    Wait,
    /// A step of entering the namespace failed in the probe child.
    #[error(
        "{step} failed: {}{}",
        std::io::Error::from_raw_os_error(*errno),
        if *unprivileged && *step == STEPS[0] {
            " (an unprivileged operator needs user namespaces: see kernel.unprivileged_userns_clone, user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns)"
        } else {
            ""
        }
    )]
    Step {
        /// The step (`unshare`, `uid_map`, `loopback`, `listen`, `fork`).
        step: &'static str,
        /// Its errno.
        errno: i32,
        /// Whether this process is not root (then `unshare` needs user namespaces).
        unprivileged: bool,
    },
    /// The probe child died before reporting.
    #[error("the probe child died")]
    ChildDied,
}

const STEPS: [&str; 5] = ["unshare", "uid_map", "loopback", "listen", "fork"];

fn probe_once() -> Result<(), NoBridge> {
    // SAFETY: geteuid/getuid/getgid take nothing.
    let ids = unsafe { (libc::geteuid() != 0).then(|| (libc::getuid(), libc::getgid())) };
    let (plan, _receiver) =
        bridge(ids, &[]).map_err(|e| NoBridge::Setup("socketpair", std::sync::Arc::new(e)))?;
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the live array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(NoBridge::Setup(
            "pipe",
            std::sync::Arc::new(std::io::Error::last_os_error()),
        ));
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: a raw clone duplicating this process (as fork, without atfork handlers); the
    // child makes raw system calls only and exits.
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) };
    if pid == 0 {
        let report = match plan
            .enter_namespace()
            .and_then(|()| listen_loopback(PROXY_PORT, false).map(|_| ()))
        {
            Ok(()) => [0i32, 0],
            Err(e) => [
                STEPS.iter().position(|s| *s == e.step).unwrap_or(0) as i32 + 1,
                e.errno,
            ],
        };
        // SAFETY: writes 8 bytes of a live array to the pipe, then exits.
        unsafe {
            libc::write(write_end.as_raw_fd(), report.as_ptr().cast(), 8);
            libc::_exit(0)
        }
    }
    drop(write_end);
    if pid < 0 {
        return Err(NoBridge::Fork(std::sync::Arc::new(
            std::io::Error::last_os_error(),
        )));
    }
    let mut status: libc::c_int = 0;
    // SAFETY: waits for the probe child into a live stack integer.
    while unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(NoBridge::Wait);
        }
    }
    let mut report = [0i32; 2];
    // SAFETY: reads at most 8 bytes into the live array.
    let n = unsafe { libc::read(read_end.as_raw_fd(), report.as_mut_ptr().cast(), 8) };
    match (n, report) {
        (8, [0, _]) => Ok(()),
        (8, [step, errno]) => Err(NoBridge::Step {
            step: STEPS.get(step as usize - 1).unwrap_or(&"?"),
            errno,
            unprivileged: ids.is_some(),
        }),
        _ => Err(NoBridge::ChildDied),
    }
}

/// Brings `lo` up (`SIOCSIFFLAGS`), which gives the namespace `127.0.0.1/8`.
fn loopback_up() -> Result<(), EnterError> {
    // SAFETY: socket takes integers; returns a descriptor or -1.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return Err(fail("loopback"));
    }
    // SAFETY: ifreq is plain data (zero is valid); the ioctls read and write the live struct.
    let r = unsafe {
        let mut req: libc::ifreq = std::mem::zeroed();
        for (d, s) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *s as libc::c_char;
        }
        let mut r = libc::ioctl(s, libc::SIOCGIFFLAGS, &mut req as *mut libc::ifreq);
        if r == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            r = libc::ioctl(s, libc::SIOCSIFFLAGS, &mut req as *mut libc::ifreq);
        }
        r
    };
    let e = fail("loopback");
    // SAFETY: closes the descriptor made above.
    unsafe { libc::close(s) };
    if r == 0 {
        Ok(())
    } else {
        Err(e)
    }
}

/// Closes every descriptor of `fds` that is one (`-1` marks a free slot).
fn close_all(fds: &[RawFd]) {
    for &fd in fds.iter().filter(|fd| **fd >= 0) {
        // SAFETY: closes a descriptor this process made and no one else holds.
        unsafe { libc::close(fd) };
    }
}

/// A close-on-exec, non-blocking TCP socket listening on `127.0.0.1:port` (`[::1]:port`,
/// IPv6 only, when `v6`).
fn listen_loopback(port: u16, v6: bool) -> Result<RawFd, EnterError> {
    let family = if v6 { libc::AF_INET6 } else { libc::AF_INET };
    // SAFETY: socket takes integers; returns a descriptor or -1.
    let s = unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if s < 0 {
        return Err(fail("listen"));
    }
    let v4 = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    };
    let v6addr = libc::sockaddr_in6 {
        sin6_family: libc::AF_INET6 as libc::sa_family_t,
        sin6_port: port.to_be(),
        sin6_flowinfo: 0,
        sin6_addr: libc::in6_addr {
            s6_addr: std::net::Ipv6Addr::LOCALHOST.octets(),
        },
        sin6_scope_id: 0,
    };
    let one: libc::c_int = 1;
    // SAFETY: setsockopt reads one live int; bind reads a live sockaddr of the given
    // length; listen takes integers.
    let r = unsafe {
        let mut r = 0;
        if v6 {
            r = libc::setsockopt(
                s,
                libc::IPPROTO_IPV6,
                libc::IPV6_V6ONLY,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        if r == 0 {
            r = if v6 {
                libc::bind(
                    s,
                    (&v6addr as *const libc::sockaddr_in6).cast(),
                    std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                )
            } else {
                libc::bind(
                    s,
                    (&v4 as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            };
        }
        if r == 0 {
            libc::listen(s, 128)
        } else {
            r
        }
    };
    if r != 0 {
        let e = fail("listen");
        // SAFETY: closes the descriptor made above.
        unsafe { libc::close(s) };
        return Err(e);
    }
    Ok(s)
}

/// The forwarder (module docs, step 3). Never returns.
fn forward(parent: libc::pid_t, listeners: &[RawFd], channel: RawFd) -> ! {
    // SAFETY: raw system calls on integers and live stack structs. The descriptors are moved
    // to 0 (the channel) and 1.. (the listeners) and everything else is closed, so the
    // forwarder holds none of the round's pipes (the round log, std's exec-error pipe) and
    // cannot keep them open.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            // The agent's process ended before PDEATHSIG was armed.
            libc::_exit(0);
        }
        let mut ign: libc::sigaction = std::mem::zeroed();
        ign.sa_sigaction = libc::SIG_IGN;
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
            libc::SIGUSR1,
            libc::SIGUSR2,
        ] {
            libc::sigaction(sig, &ign, std::ptr::null_mut());
        }
        // Above every descriptor we keep first, so no move overwrites another: each
        // copy lands above the highest of them, and the targets 0..=n lie below it.
        let count = listeners.len();
        let mut keep = [-1 as RawFd; MAX_LISTENERS + 1];
        keep[0] = channel;
        keep[1..=count].copy_from_slice(listeners);
        let above = keep[..=count].iter().copied().max().unwrap_or(0) + 1;
        let mut moved = [-1 as RawFd; MAX_LISTENERS + 1];
        for i in 0..=count {
            moved[i] = libc::fcntl(keep[i], libc::F_DUPFD_CLOEXEC, above);
            if moved[i] < 0 {
                libc::_exit(111);
            }
        }
        for (i, &fd) in moved[..=count].iter().enumerate() {
            if libc::dup2(fd, i as RawFd) < 0 {
                libc::_exit(111);
            }
        }
        libc::syscall(libc::SYS_close_range, count as u32 + 1, u32::MAX, 0u32);
        let mut polled = [libc::pollfd {
            fd: -1,
            events: 0,
            revents: 0,
        }; MAX_LISTENERS];
        for (i, p) in polled[..count].iter_mut().enumerate() {
            p.fd = i as RawFd + 1;
            p.events = libc::POLLIN;
        }
        loop {
            if libc::poll(polled.as_mut_ptr(), count as libc::nfds_t, -1) < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                libc::_exit(112);
            }
            for p in &polled[..count] {
                if p.revents == 0 {
                    continue;
                }
                // The listener is non-blocking: a connection gone before the accept is
                // EAGAIN, and the wait goes on.
                let conn = libc::accept4(p.fd, std::ptr::null_mut(), std::ptr::null_mut(), 0);
                if conn < 0 {
                    match errno() {
                        libc::EINTR
                        | libc::EAGAIN
                        | libc::ECONNABORTED
                        | libc::EMFILE
                        | libc::ENFILE
                        | libc::ENOBUFS
                        | libc::ENOMEM
                        | libc::EPROTO => continue,
                        _ => libc::_exit(112),
                    }
                }
                let sent = send_fd(0, conn);
                libc::close(conn);
                if !sent {
                    // The supervisor's end is gone: nobody to hand connections to.
                    libc::_exit(0);
                }
            }
        }
    }
}

/// Sends `fd` over the seqpacket socket `channel` with one data byte. False if the peer is
/// gone.
fn send_fd(channel: RawFd, fd: RawFd) -> bool {
    // u64 words: aligned for cmsghdr; 32 bytes ≥ CMSG_SPACE(sizeof(int)) = 24.
    let mut control = [0u64; 4];
    let mut byte = [b'c'];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: msghdr is plain data; the CMSG_* helpers compute pointers inside `control`,
    // which is large and aligned enough for one cmsghdr with one int; sendmsg reads the live
    // structs.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        loop {
            if libc::sendmsg(channel, &msg, libc::MSG_NOSIGNAL) >= 0 {
                return true;
            }
            if errno() != libc::EINTR {
                return false;
            }
        }
    }
}

impl BridgeReceiver {
    /// Blocks for the agent's next connection: a connected TCP socket (close-on-exec) in the
    /// agent's network namespace, its local address the loopback port it was made to
    /// ([`PROXY_PORT`] or a forwarded one). `Ok(None)` once the forwarder has ended (the round is
    /// over). A message that carries anything but one socket is dropped (the descriptors it
    /// carried closed) and the wait goes on.
    ///
    /// # Errors
    /// `recvmsg(2)` failed other than by `EINTR`.
    pub fn recv(&self) -> std::io::Result<Option<OwnedFd>> {
        loop {
            let mut control = [0u64; 8];
            let mut byte = [0u8; 1];
            let mut iov = libc::iovec {
                iov_base: byte.as_mut_ptr().cast(),
                iov_len: 1,
            };
            // SAFETY: msghdr is plain data pointing at live buffers; recvmsg fills them.
            let (n, msg) = unsafe {
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_iov = &mut iov;
                msg.msg_iovlen = 1;
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = std::mem::size_of_val(&control);
                let n = libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
                (n, msg)
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 && msg.msg_controllen == 0 {
                return Ok(None);
            }
            let mut fds = Vec::new();
            // SAFETY: walks the control messages the kernel wrote into `control`, taking
            // ownership of every descriptor an SCM_RIGHTS message carries (each is new in
            // this process).
            unsafe {
                let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
                while !cmsg.is_null() {
                    if (*cmsg).cmsg_level == libc::SOL_SOCKET
                        && (*cmsg).cmsg_type == libc::SCM_RIGHTS
                    {
                        let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                        let count = ((*cmsg).cmsg_len - libc::CMSG_LEN(0) as usize)
                            / std::mem::size_of::<RawFd>();
                        for i in 0..count {
                            fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                        }
                    }
                    cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
                }
            }
            if fds.len() == 1 && is_tcp_socket(&fds[0]) {
                return Ok(fds.pop());
            }
        }
    }
}

/// True if `fd` is a TCP stream socket (`SO_DOMAIN` inet, `SO_TYPE` stream).
fn is_tcp_socket(fd: &OwnedFd) -> bool {
    let opt = |name| {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes one int into the live `v`.
        let r = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                name,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (r == 0).then_some(v)
    };
    matches!(opt(libc::SO_DOMAIN), Some(libc::AF_INET | libc::AF_INET6))
        && opt(libc::SO_TYPE) == Some(libc::SOCK_STREAM)
}
