//! `ar-e2e-attempts`: a hostile spawn-hook host (SDK, Rust) for the hostile-host suite
//! (`tests/tests/suite/confinement/hostile.rs`). Its hook `attempt` tries the one forbidden thing named by
//! its config key `attempt` in `before_spawn` and reports the outcome as a hook error whose
//! message reads `outcome <attempt>: <result>`, where `<result>` is `denied errno=<n>`,
//! `allowed <detail>`, `found …` or `not-found named=<bool>` (whether the spawn view names
//! `AGENT_RUNNER_SECRET_X`). Attempts the sandbox kills never report.
//!
//! Config keys: `attempt`; `port` (tcp_connect, udp_send); `path` (read, write,
//! write_log_dir: a directory); `pid_file` (a file holding the supervisor's pid, waited for
//! up to 60 s: read_pid_environ, kill_pid, pidfd_kill_pid, ptrace_attach); `needle` (secret_env);
//! `bytes` (memory_hog, write_big, write_many, write_tmp); `count` (write_many,
//! write_tmp); `max` (fork_bomb: a safety cap); `name` (call: the system call to make on
//! `path`, see `call`). `path` of unix_connect may be `@name` (an abstract socket); `hook`
//! names the hook (default `attempt`; several hosts of one project need distinct names).
//! Test-only.

use agent_runner_sdk::{proceed, BeforeSpawnParams, ConfigTable, HookError, Hooks, Host};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The result of an attempt that returned.
fn outcome(attempt: &str, result: String) -> HookError {
    HookError::new(format!("outcome {attempt}: {result}"))
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
}

fn io_result<T>(r: std::io::Result<T>, detail: &str) -> String {
    match r {
        Ok(_) => format!("allowed {detail}"),
        Err(e) => format!("denied errno={}", e.raw_os_error().unwrap_or(-1)),
    }
}

/// A raw system call's return value as a result string.
fn raw_result(rc: i64, detail: &str) -> String {
    if rc < 0 {
        format!("denied errno={}", errno())
    } else {
        format!("allowed {detail} rc={rc}")
    }
}

fn inet_addr(port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn socket(family: i32, ty: i32, proto: i32) -> String {
    // SAFETY: socket(2) takes integers only.
    let fd = unsafe { libc::socket(family, ty, proto) };
    raw_result(fd.into(), "socket")
}

fn tcp_connect(port: u16) -> String {
    std::net::TcpStream::connect(("127.0.0.1", port))
        .map(|_| "allowed connected".to_owned())
        .unwrap_or_else(|e| format!("denied errno={}", e.raw_os_error().unwrap_or(-1)))
}

fn udp_send(port: u16) -> String {
    // SAFETY: socket(2) takes integers only.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    if fd < 0 {
        return format!("denied errno={}", errno());
    }
    let addr = inet_addr(port);
    // SAFETY: a valid buffer and sockaddr_in, both alive across the call.
    let rc = unsafe {
        libc::sendto(
            fd,
            b"x".as_ptr().cast(),
            1,
            0,
            std::ptr::addr_of!(addr).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    raw_result(rc as i64, "sent")
}

/// Waits (up to 60 s) for `path` to hold a pid.
fn pid_from(path: &str) -> Result<i32, HookError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            return Ok(pid);
        }
        if Instant::now() > deadline {
            return Err(HookError::new(format!("no pid in {path}")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Tries to open every file under `dir` for appending; the first success is reported. A
/// `dir` that cannot even be listed is reported as denied with that error.
fn write_dir_files(dir: &std::path::Path) -> String {
    if let Err(e) = std::fs::read_dir(dir) {
        return format!("denied errno={} files=0", e.raw_os_error().unwrap_or(-1));
    }
    let mut tried = 0;
    let mut last = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            tried += 1;
            match std::fs::OpenOptions::new().append(true).open(&p) {
                Ok(_) => return format!("allowed {}", p.display()),
                Err(e) => last = e.raw_os_error().unwrap_or(-1),
            }
        }
    }
    if tried == 0 {
        return "allowed nothing-to-try".to_owned();
    }
    format!("denied errno={last} files={tried}")
}

/// Forks a child that forks a grandchild sleeping an hour and exits: the grandchild is an
/// orphan, re-parented to the host, and keeps the host's stdout open.
fn orphan_sleeper() {
    // SAFETY: the children make only raw async-signal-safe calls and never return.
    unsafe {
        let child = libc::fork();
        if child == 0 {
            if libc::fork() == 0 {
                libc::sleep(3600);
            }
            libc::_exit(0);
        }
        let mut status = 0;
        libc::waitpid(child, &mut status, 0);
    }
}

/// A file of the host's own in its TMPDIR, open for reading and writing (for the `f*`
/// forms of the metadata calls).
fn own_fd() -> i32 {
    use std::os::fd::IntoRawFd;
    let path = std::env::temp_dir().join("own");
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map(|f| f.into_raw_fd())
        .unwrap_or(-1)
}

/// `path` opened read-only (a directory too), or -1.
fn open_ro(path: &std::ffi::CStr) -> i32 {
    // SAFETY: open of a NUL-terminated path; returns a descriptor or -1.
    unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) }
}

/// A one-instruction "allow everything" seccomp program, for a host that tries to
/// install its own filter.
fn allow_all_filter(f: impl FnOnce(&libc::sock_fprog) -> i64) -> i64 {
    let mut insn = [libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ALLOW,
    }];
    let prog = libc::sock_fprog {
        len: 1,
        filter: insn.as_mut_ptr(),
    };
    f(&prog)
}

/// Makes the system call `name` (the issue-24 attacks: metadata, privileged calls, leaving
/// the group, IPC, ...) on `path`, and reports its return value. Every one of them is
/// meant to be killed by the sandbox before it runs; the arguments are chosen so that
/// the call would do real harm if it were not (`chmod 04777`, `FIFREEZE`, a 4 GiB
/// `fallocate(KEEP_SIZE)`, `PR_SET_PDEATHSIG 0`).
fn call(name: &str, path: &str) -> String {
    let cpath = std::ffi::CString::new(path).unwrap_or_default();
    let p = cpath.as_ptr();
    let x = c"user.x".as_ptr();
    // SAFETY: each arm makes one raw system call with valid C strings and live stack
    // buffers of the sizes passed; descriptors are ours.
    let rc: i64 = unsafe {
        use libc::{syscall as sc, AT_FDCWD as CWD};
        let (uid, gid) = (libc::getuid(), libc::getgid());
        match name {
            "chmod" => sc(libc::SYS_chmod, p, 0o4777),
            "fchmod" => sc(libc::SYS_fchmod, own_fd(), 0o4777),
            "fchmodat" => sc(libc::SYS_fchmodat, CWD, p, 0o4777, 0),
            "fchmodat2" => sc(libc::SYS_fchmodat2, CWD, p, 0o4777, 0),
            "chown" => sc(libc::SYS_chown, p, uid, gid),
            "fchown" => sc(libc::SYS_fchown, own_fd(), uid, gid),
            "lchown" => sc(libc::SYS_lchown, p, uid, gid),
            "fchownat" => sc(libc::SYS_fchownat, CWD, p, uid, gid, 0),
            "utime" => sc(libc::SYS_utime, p, 0),
            "utimes" => sc(libc::SYS_utimes, p, 0),
            "utimensat" => sc(libc::SYS_utimensat, CWD, p, 0, 0),
            "futimesat" => sc(libc::SYS_futimesat, CWD, p, 0),
            "setxattr" => sc(libc::SYS_setxattr, p, x, c"v".as_ptr(), 1, 0),
            "lsetxattr" => sc(libc::SYS_lsetxattr, p, x, c"v".as_ptr(), 1, 0),
            "fsetxattr" => sc(libc::SYS_fsetxattr, own_fd(), x, c"v".as_ptr(), 1, 0),
            "setxattrat" => {
                let args = [0u64; 2];
                sc(463, CWD, p, 0, x, args.as_ptr(), 16)
            }
            "removexattr" => sc(libc::SYS_removexattr, p, x),
            "lremovexattr" => sc(libc::SYS_lremovexattr, p, x),
            "fremovexattr" => sc(libc::SYS_fremovexattr, own_fd(), x),
            "removexattrat" => sc(466, CWD, p, 0, x),
            "file_setattr" => {
                let attr = [0u8; 64];
                sc(469, CWD, p, attr.as_ptr(), 24, 0)
            }
            "fallocate_keep_size" | "fallocate_punch_hole" | "fallocate_plain" => {
                let mode = match name {
                    "fallocate_keep_size" => libc::FALLOC_FL_KEEP_SIZE,
                    "fallocate_punch_hole" => {
                        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE
                    }
                    _ => 0,
                };
                let fd = libc::open(p, libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC, 0o600);
                if fd < 0 {
                    -1
                } else {
                    sc(libc::SYS_fallocate, fd, mode, 0, 4u64 << 30)
                }
            }
            "pdeathsig_clear" => sc(libc::SYS_prctl, libc::PR_SET_PDEATHSIG, 0, 0, 0, 0),
            "prctl_seccomp" => allow_all_filter(|f| {
                sc(
                    libc::SYS_prctl,
                    libc::PR_SET_SECCOMP,
                    2,
                    f as *const libc::sock_fprog,
                    0,
                    0,
                )
            }),
            "seccomp" => {
                allow_all_filter(|f| sc(libc::SYS_seccomp, 1, 0, f as *const libc::sock_fprog))
            }
            "setsid" => sc(libc::SYS_setsid),
            "setpgid" => sc(libc::SYS_setpgid, 0, 0),
            "FIFREEZE" => sc(libc::SYS_ioctl, open_ro(&cpath), 0xC004_5877u64, 0),
            "FITHAW" => sc(libc::SYS_ioctl, open_ro(&cpath), 0xC004_5878u64, 0),
            "EXT4_IOC_SHUTDOWN" => {
                let flags: u32 = 2; // EXT4_GOING_FLAGS_NOLOGFLUSH
                sc(libc::SYS_ioctl, open_ro(&cpath), 0x8004_587Du64, &flags)
            }
            "FS_IOC_SETFLAGS" => {
                let flags: libc::c_long = 0x10; // FS_IMMUTABLE_FL
                sc(
                    libc::SYS_ioctl,
                    open_ro(&cpath),
                    libc::FS_IOC_SETFLAGS,
                    &flags,
                )
            }
            "fanotify_init" => sc(libc::SYS_fanotify_init, 0, libc::O_RDONLY),
            "inotify_add_watch" => {
                let fd = libc::inotify_init1(libc::IN_CLOEXEC);
                sc(libc::SYS_inotify_add_watch, fd, p, libc::IN_CREATE)
            }
            "memfd_create" => sc(libc::SYS_memfd_create, c"code".as_ptr(), 0),
            "vhangup" => sc(libc::SYS_vhangup),
            "settimeofday" | "clock_settime" => {
                let mut now: libc::timespec = std::mem::zeroed();
                libc::clock_gettime(libc::CLOCK_REALTIME, &mut now);
                if name == "clock_settime" {
                    sc(libc::SYS_clock_settime, libc::CLOCK_REALTIME, &now)
                } else {
                    let tv = libc::timeval {
                        tv_sec: now.tv_sec,
                        tv_usec: now.tv_nsec / 1000,
                    };
                    sc(libc::SYS_settimeofday, &tv, 0)
                }
            }
            "adjtimex" | "clock_adjtime" => {
                let mut t: libc::timex = std::mem::zeroed();
                if name == "adjtimex" {
                    sc(libc::SYS_adjtimex, &mut t)
                } else {
                    sc(libc::SYS_clock_adjtime, libc::CLOCK_REALTIME, &mut t)
                }
            }
            "sethostname" | "setdomainname" => {
                let mut u: libc::utsname = std::mem::zeroed();
                libc::uname(&mut u);
                let (field, nr) = if name == "sethostname" {
                    (&u.nodename, libc::SYS_sethostname)
                } else {
                    (&u.domainname, libc::SYS_setdomainname)
                };
                let len = field.iter().position(|c| *c == 0).unwrap_or(0);
                sc(nr, field.as_ptr(), len)
            }
            "sched_fifo" => {
                let param = libc::sched_param { sched_priority: 1 };
                sc(libc::SYS_sched_setscheduler, 0, libc::SCHED_FIFO, &param)
            }
            "sched_setattr" => {
                let attr = [0u32; 14];
                sc(libc::SYS_sched_setattr, 0, attr.as_ptr(), 0)
            }
            "syslog" => {
                let mut buf = [0u8; 256];
                sc(libc::SYS_syslog, 3, buf.as_mut_ptr(), buf.len())
            }
            "shmget" => sc(libc::SYS_shmget, libc::IPC_PRIVATE, 4096, 0o600),
            "shmat" => sc(libc::SYS_shmat, 0, 0, libc::SHM_RDONLY),
            "msgget" => sc(libc::SYS_msgget, libc::IPC_PRIVATE, 0o600),
            "semget" => sc(libc::SYS_semget, libc::IPC_PRIVATE, 1, 0o600),
            "flock" => sc(
                libc::SYS_flock,
                open_ro(&cpath),
                libc::LOCK_EX | libc::LOCK_NB,
            ),
            "open_by_handle_at" => {
                let handle = [0u8; 136];
                sc(
                    libc::SYS_open_by_handle_at,
                    CWD,
                    handle.as_ptr(),
                    libc::O_RDONLY,
                )
            }
            // Outside the allow-list, never on the old deny-list.
            "kcmp" => sc(libc::SYS_kcmp, libc::getpid(), libc::getpid(), 0, 0, 1),
            "keyctl" => sc(libc::SYS_keyctl, 0, -3, 0), // KEYCTL_GET_KEYRING_ID, session
            "personality" => sc(libc::SYS_personality, 0x0040_0000), // READ_IMPLIES_EXEC
            "pidfd_getfd" => {
                let me = sc(libc::SYS_pidfd_open, libc::getpid(), 0);
                sc(libc::SYS_pidfd_getfd, me, 0, 0)
            }
            "mlock" => {
                let page = [0u8; 4096];
                sc(libc::SYS_mlock, page.as_ptr(), page.len())
            }
            "sched_setaffinity" => {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(0, &mut set);
                sc(
                    libc::SYS_sched_setaffinity,
                    0,
                    std::mem::size_of_val(&set),
                    &set,
                )
            }
            // IOPRIO_WHO_PROCESS, self, the real-time class at level 0.
            "ioprio_set" => sc(libc::SYS_ioprio_set, 1, 0, 1 << 13),
            "setuid" => sc(libc::SYS_setuid, 65534),
            "mq_open" => sc(
                libc::SYS_mq_open,
                c"ar-hostile".as_ptr(),
                libc::O_CREAT | libc::O_RDWR,
                0o600,
                0,
            ),
            // New namespaces: clone's flags are checked; clone3's are in memory, so it
            // fails with ENOSYS (and libc falls back to clone).
            "clone_newuser" | "clone_newnet" => {
                let flag = if name == "clone_newuser" {
                    libc::CLONE_NEWUSER
                } else {
                    libc::CLONE_NEWNET
                };
                let pid = sc(libc::SYS_clone, flag | libc::SIGCHLD, 0, 0, 0, 0);
                if pid == 0 {
                    libc::_exit(0);
                }
                pid
            }
            "unshare_newns" => sc(libc::SYS_unshare, libc::CLONE_NEWNS),
            "clone3_newuser" => {
                // struct clone_args: flags, pidfd, child_tid, parent_tid, exit_signal, ...
                let mut args = [0u64; 11];
                args[0] = libc::CLONE_NEWUSER as u64;
                args[4] = libc::SIGCHLD as u64;
                let pid = sc(libc::SYS_clone3, args.as_mut_ptr(), 88);
                if pid == 0 {
                    libc::_exit(0);
                }
                pid
            }
            // The second attacker (docs/security.md "Attacked again").
            "kill_all" => sc(libc::SYS_kill, -1, libc::SIGKILL),
            "raise_fsize" => {
                let inf = libc::rlimit {
                    rlim_cur: libc::RLIM_INFINITY,
                    rlim_max: libc::RLIM_INFINITY,
                };
                sc(libc::SYS_setrlimit, libc::RLIMIT_FSIZE, &inf)
            }
            // `path` is `<source>|<new link>`.
            "hardlink" => {
                let (from, to) = path.split_once('|').unwrap_or((path, ""));
                let from = std::ffi::CString::new(from).unwrap_or_default();
                let to = std::ffi::CString::new(to).unwrap_or_default();
                sc(libc::SYS_link, from.as_ptr(), to.as_ptr())
            }
            "symlink_and_open" => {
                let link = std::env::temp_dir().join("to-target");
                let to = std::ffi::CString::new(link.into_os_string().into_encoded_bytes())
                    .unwrap_or_default();
                let made = sc(libc::SYS_symlink, p, to.as_ptr());
                if made < 0 {
                    made
                } else {
                    libc::open(to.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC).into()
                }
            }
            _ => return format!("unknown call {name:?}"),
        }
    };
    raw_result(rc, name)
}

/// Forks children (each pausing forever) until fork fails or `max` are running.
fn fork_bomb(max: u64) -> String {
    for n in 0..max {
        // SAFETY: the child only pauses (raw call) and never returns.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: raw calls only in the child.
            unsafe {
                libc::pause();
                libc::_exit(0);
            }
        }
        if pid < 0 {
            return format!("denied errno={} after={n}", errno());
        }
    }
    format!("allowed {max}")
}

fn memory_hog(bytes: u64) -> String {
    let mut v: Vec<u8> = Vec::new();
    match v.try_reserve_exact(bytes as usize) {
        Err(_) => format!("denied errno={}", libc::ENOMEM),
        Ok(()) => {
            v.resize(bytes as usize, 1);
            format!("allowed {}", v.len())
        }
    }
}

/// A `sockaddr_un` for `path`; a leading `@` names an abstract socket.
fn sockaddr_un(path: &str) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: sockaddr_un is plain data; all-zero is valid.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let (bytes, len) = match path.strip_prefix('@') {
        // Abstract: sun_path[0] = 0, then the name; the length counts exactly that.
        Some(name) => (name.as_bytes(), 1 + name.len()),
        None => (path.as_bytes(), path.len() + 1),
    };
    let offset = usize::from(path.starts_with('@'));
    for (d, s) in a.sun_path[offset..].iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let base = std::mem::size_of::<libc::sa_family_t>();
    (a, (base + len) as libc::socklen_t)
}

/// socket(AF_UNIX) and connect to `path` (pathname, or `@name` abstract).
fn unix_connect(path: &str) -> String {
    // SAFETY: socket(2) takes integers only.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
    if fd < 0 {
        return format!("denied errno={}", errno());
    }
    let (addr, len) = sockaddr_un(path);
    // SAFETY: a valid sockaddr_un alive across the call.
    let rc = unsafe { libc::connect(fd, std::ptr::addr_of!(addr).cast(), len) };
    raw_result(rc.into(), "connected")
}

/// Connects to the supervisor's control socket at `path` and asks it to `kill`:
/// `allowed reply=<its answer>`, or `denied errno=<n>` if no connection could be made.
fn unix_request(path: &str) -> String {
    use std::io::{BufRead, BufReader};
    match std::os::unix::net::UnixStream::connect(path) {
        Err(e) => format!("denied errno={}", e.raw_os_error().unwrap_or(-1)),
        Ok(mut s) => {
            let _ = s.write_all(b"{\"cmd\": \"kill\"}\n");
            let mut line = String::new();
            let _ = BufReader::new(s).read_line(&mut line);
            format!("allowed reply={}", line.trim())
        }
    }
}

/// A socketpair end pointed at `path`: connect (or bind with `bind`).
fn unix_pair(path: &str, bind: bool) -> String {
    let mut fds = [0; 2];
    // SAFETY: socketpair writes two descriptors into the live array.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) } != 0 {
        return format!("denied errno={}", errno());
    }
    let (addr, len) = sockaddr_un(path);
    // SAFETY: a valid sockaddr_un alive across the call.
    let rc = unsafe {
        if bind {
            libc::bind(fds[0], std::ptr::addr_of!(addr).cast(), len)
        } else {
            libc::connect(fds[0], std::ptr::addr_of!(addr).cast(), len)
        }
    };
    raw_result(rc.into(), if bind { "bound" } else { "connected" })
}

/// Writes `n` bytes to `path` (created or truncated) in writes of at most 1 MiB.
fn write_bytes(path: &std::path::Path, n: u64) -> std::io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    let chunk = vec![b'x'; 1 << 20];
    let mut left = n;
    while left > 0 {
        let k = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..k])?;
        left -= k as u64;
    }
    f.sync_all()
}

/// Writes `count` files of `bytes` into `dir`, pausing 20 ms between files, until one
/// fails: `denied errno=<n> files=<written>`, or `allowed files=<count>`.
fn write_many(dir: &std::path::Path, bytes: u64, count: u64) -> String {
    for i in 0..count {
        if let Err(e) = write_bytes(&dir.join(format!("fill-{i}")), bytes) {
            return format!("denied errno={} files={i}", e.raw_os_error().unwrap_or(-1));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    format!("allowed files={count}")
}

fn run(
    attempt: &str,
    config: &serde_json::Map<String, serde_json::Value>,
    p: &BeforeSpawnParams,
) -> Result<String, HookError> {
    let c = ConfigTable::new(config);
    let port = c.u64_or("port", 9, u64::from(u16::MAX))? as u16;
    let path = c.string_or("path", "")?;
    Ok(match attempt {
        "tcp_connect" => tcp_connect(port),
        "udp_send" => udp_send(port),
        "netlink_socket" => socket(libc::AF_NETLINK, libc::SOCK_RAW, 0),
        "packet_socket" => socket(libc::AF_PACKET, libc::SOCK_RAW, 0),
        "read" => io_result(std::fs::read(&path), "read"),
        "read_pid_environ" => {
            let pid = pid_from(&c.string_or("pid_file", "")?)?;
            io_result(std::fs::read(format!("/proc/{pid}/environ")), "read")
        }
        "write" => io_result(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(b"x")),
            "written",
        ),
        "write_log_dir" => write_dir_files(std::path::Path::new(&path)),
        "exec_sh" => io_result(
            std::process::Command::new("/bin/sh")
                .args(["-c", "true"])
                .status(),
            "ran",
        ),
        "kill_pid" => {
            let pid = pid_from(&c.string_or("pid_file", "")?)?;
            // SAFETY: kill(2) takes integers only.
            raw_result(
                unsafe { libc::kill(pid, libc::SIGKILL) }.into(),
                "signalled",
            )
        }
        "pidfd_kill_pid" => {
            let pid = pid_from(&c.string_or("pid_file", "")?)?;
            // SAFETY: pidfd_open and pidfd_send_signal take integers (a null siginfo).
            unsafe {
                let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0);
                if fd < 0 {
                    raw_result(fd, "opened")
                } else {
                    raw_result(
                        libc::syscall(libc::SYS_pidfd_send_signal, fd, libc::SIGKILL, 0, 0),
                        "signalled",
                    )
                }
            }
        }
        "ptrace_attach" => {
            let pid = pid_from(&c.string_or("pid_file", "")?)?;
            // SAFETY: ptrace(PTRACE_ATTACH, pid, 0, 0): integers only.
            raw_result(
                unsafe { libc::ptrace(libc::PTRACE_ATTACH, pid, 0, 0) },
                "attached",
            )
        }
        "io_uring_setup" => {
            let mut params = [0u8; 120];
            // SAFETY: io_uring_setup(entries, params) with a zeroed, large-enough params buffer.
            raw_result(
                unsafe { libc::syscall(libc::SYS_io_uring_setup, 4, params.as_mut_ptr()) },
                "ring",
            )
        }
        "bpf" => {
            let mut attr = [0u8; 128];
            // SAFETY: bpf(BPF_MAP_CREATE, attr, size) with a zeroed buffer of that size.
            raw_result(
                unsafe { libc::syscall(libc::SYS_bpf, 0, attr.as_mut_ptr(), attr.len()) },
                "bpf",
            )
        }
        "x32_socket" => {
            // SAFETY: socket(AF_UNIX, SOCK_STREAM, 0) through its x32 system call number.
            raw_result(
                unsafe { libc::syscall(41 | 0x4000_0000, libc::AF_UNIX, libc::SOCK_STREAM, 0) },
                "x32",
            )
        }
        "perf_event_open" => {
            let mut attr = [0u8; 128];
            // SAFETY: perf_event_open(attr, pid 0, cpu -1, group -1, flags 0), zeroed attr.
            raw_result(
                unsafe {
                    libc::syscall(libc::SYS_perf_event_open, attr.as_mut_ptr(), 0, -1, -1, 0)
                },
                "perf",
            )
        }
        "add_key" => {
            // SAFETY: add_key("user", "k", "v", 1, KEY_SPEC_PROCESS_KEYRING): static C strings.
            raw_result(
                unsafe {
                    libc::syscall(
                        libc::SYS_add_key,
                        c"user".as_ptr(),
                        c"k".as_ptr(),
                        c"v".as_ptr(),
                        1,
                        -2,
                    )
                },
                "key",
            )
        }
        "mount" => {
            // SAFETY: mount("none", "/tmp", "tmpfs", 0, NULL): static C strings.
            raw_result(
                unsafe {
                    libc::syscall(
                        libc::SYS_mount,
                        c"none".as_ptr(),
                        c"/tmp".as_ptr(),
                        c"tmpfs".as_ptr(),
                        0,
                        0,
                    )
                },
                "mounted",
            )
        }
        "unshare" => {
            // SAFETY: unshare takes flags only.
            raw_result(
                unsafe { libc::unshare(libc::CLONE_NEWUSER) }.into(),
                "unshared",
            )
        }
        "process_vm_readv" => {
            // SAFETY: process_vm_readv(1, NULL, 0, NULL, 0, 0): no iovecs, nothing is read.
            raw_result(
                unsafe { libc::syscall(libc::SYS_process_vm_readv, 1, 0, 0, 0, 0, 0) },
                "read",
            )
        }
        "userfaultfd" => {
            // SAFETY: userfaultfd(0) takes flags only.
            raw_result(unsafe { libc::syscall(libc::SYS_userfaultfd, 0) }, "uffd")
        }
        "unix_connect" => unix_connect(&path),
        "unix_request" => unix_request(&path),
        "unix_pair_connect" => unix_pair(&path, false),
        "unix_pair_bind" => unix_pair(&path, true),
        "write_big" => io_result(
            write_bytes(
                std::path::Path::new(&path),
                c.u64_or("bytes", 1 << 20, u64::MAX)?,
            ),
            "wrote",
        ),
        "write_many" => write_many(
            std::path::Path::new(&path),
            c.u64_or("bytes", 1 << 20, u64::MAX)?,
            c.u64_or("count", 16, 1_000_000)?,
        ),
        "write_tmp" => write_many(
            &std::env::temp_dir(),
            c.u64_or("bytes", 1 << 20, u64::MAX)?,
            c.u64_or("count", 16, 1_000_000)?,
        ),
        "fork_bomb" => fork_bomb(c.u64_or("max", 4096, 100_000)?),
        "memory_hog" => memory_hog(c.u64_or("bytes", 1 << 31, u64::MAX)?),
        "orphan_sleeper" => {
            orphan_sleeper();
            return Ok(String::new());
        }
        "call" => call(&c.string_or("name", "")?, &path),
        "stdout_holder_exit" => {
            // A grandchild keeps our stdout open; we exit in the middle of the call.
            orphan_sleeper();
            std::thread::sleep(Duration::from_millis(200));
            // SAFETY: _exit ends the process at once.
            unsafe { libc::_exit(3) }
        }
        "secret_env" => {
            let needle = c.string_or("needle", "")?;
            let in_env = std::env::vars_os().any(|(k, v)| {
                k.to_string_lossy().contains(&needle) || v.to_string_lossy().contains(&needle)
            });
            let in_view = p
                .spawn
                .argv
                .iter()
                .chain(&p.spawn.env_names)
                .any(|s| s.contains(&needle));
            // The view does name the variables (names only): say which secret-ish names it saw.
            let named = p
                .spawn
                .env_names
                .iter()
                .any(|n| n == "AGENT_RUNNER_SECRET_X");
            match (in_env, in_view) {
                (false, false) => format!("not-found named={named}"),
                (e, v) => format!("found env={e} view={v}"),
            }
        }
        other => return Err(HookError::new(format!("unknown attempt {other:?}"))),
    })
}

fn main() -> ExitCode {
    Host::new("ar-e2e-attempts", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            let config = init.config.clone();
            let c = ConfigTable::new(&config);
            c.expect_only(&[
                "attempt", "port", "path", "pid_file", "needle", "bytes", "max", "count", "name",
                "hook",
            ])?;
            let attempt = c.string_or("attempt", "")?;
            let hook = c.string_or("hook", "attempt")?;
            Ok(
                Hooks::new().spawn_hook(&hook, move |p: &BeforeSpawnParams| {
                    let result = run(&attempt, &config, p)?;
                    if result.is_empty() {
                        return Ok(proceed());
                    }
                    Err(outcome(&attempt, result))
                }),
            )
        })
        .run()
}
