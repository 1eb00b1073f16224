//! Test-only helper for plugin-host's integration tests: performs one action named by
//! argv[1] (see `main`) and prints its outcome on stdout. Not a product binary.

use std::io::{Read, Write};

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn report(what: &str, r: std::io::Result<()>) {
    match r {
        Ok(()) => println!("{what}-ok"),
        Err(e) => println!("{what}-err {}", e.raw_os_error().unwrap_or(-1)),
    }
}

/// A `sockaddr_un` for `path` and its length.
fn sockaddr_un(path: &str) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: sockaddr_un is plain data; all-zero is valid.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in a.sun_path.iter_mut().zip(path.bytes()) {
        *d = s as libc::c_char;
    }
    (
        a,
        std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
    )
}

/// Writes `n` bytes to `path` (created or truncated) in writes of at most 1 MiB.
fn write_bytes(path: &std::path::Path, n: usize) -> std::io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    let chunk = vec![b'x'; 1 << 20];
    let mut left = n;
    while left > 0 {
        let k = left.min(chunk.len());
        f.write_all(&chunk[..k])?;
        left -= k;
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let action = args.get(1).map(String::as_str).unwrap_or("ok");
    let arg = args.get(2).cloned().unwrap_or_default();
    // "gated-<action>" waits for one byte (or EOF) on stdin first, so a test can look at the
    // running host before the action ends it.
    let action = match action.strip_prefix("gated-") {
        Some(gated) => {
            let _ = std::io::stdin().read(&mut [0u8; 1]);
            gated
        }
        None => action,
    };
    // Flush a marker first so tests can tell "started and then killed" from "never started".
    println!("start {action}");
    let _ = std::io::stdout().flush();
    match action {
        "ok" => println!("ok"),
        "env" => {
            for (k, v) in std::env::vars_os() {
                println!("{}={}", k.to_string_lossy(), v.to_string_lossy());
            }
        }
        "tcp-connect" => {
            let r = std::net::TcpStream::connect(("127.0.0.1", arg.parse::<u16>().unwrap()));
            report("tcp-connect", r.map(|_| ()));
        }
        "udp" => report("udp", std::net::UdpSocket::bind("127.0.0.1:0").map(|_| ())),
        "netlink" => {
            // SAFETY: plain socket(2) call.
            let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, 0) };
            println!("netlink-fd {fd} {}", errno());
        }
        "unix-pair" => {
            let r = std::os::unix::net::UnixStream::pair();
            report("unix-pair", r.map(|_| ()));
        }
        "unix-socket" => {
            // A pathname connect through the std API: socket(AF_UNIX) first.
            let r = std::os::unix::net::UnixStream::connect(&arg);
            report("unix-socket", r.map(|_| ()));
        }
        "unix-dgram-pair" => {
            let r = std::os::unix::net::UnixDatagram::pair();
            report("unix-dgram-pair", r.map(|_| ()));
        }
        "unix-pair-connect" | "unix-pair-bind" => {
            // A socketpair end pointed at a pathname address.
            let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
            let (name, len) = sockaddr_un(&arg);
            use std::os::fd::AsRawFd;
            // SAFETY: a valid sockaddr_un on the stack, alive across the call.
            let r = unsafe {
                if action == "unix-pair-connect" {
                    libc::connect(a.as_raw_fd(), std::ptr::addr_of!(name).cast(), len)
                } else {
                    libc::bind(a.as_raw_fd(), std::ptr::addr_of!(name).cast(), len)
                }
            };
            println!("{action} {r} {}", if r == 0 { 0 } else { errno() });
        }
        "write-size" => {
            // Writes argv[3] bytes into the file argv[2], in 1 MiB writes.
            let n: usize = args[3].parse().unwrap();
            report("write-size", write_bytes(std::path::Path::new(&arg), n));
        }
        "write-many" => {
            // Writes files of argv[3] bytes into directory argv[2] until one fails
            // (at most argv[4] files).
            let n: usize = args[3].parse().unwrap();
            let max: usize = args[4].parse().unwrap();
            let mut written = 0;
            let mut result = Ok(());
            for i in 0..max {
                result = write_bytes(&std::path::Path::new(&arg).join(format!("f{i}")), n);
                if result.is_err() {
                    break;
                }
                written += 1;
            }
            println!("files {written}");
            report("write-many", result);
        }
        "read" => report("read", std::fs::read(&arg).map(|_| ())),
        "lease" | "notify" => {
            // A read lease on a file it may read (F_SETLEASE), or a change notification on a
            // directory (F_NOTIFY): either would let a host stall or watch the record.
            let file = std::fs::File::open(&arg).unwrap();
            use std::os::fd::AsRawFd;
            let (cmd, value) = if action == "lease" {
                (libc::F_SETLEASE, libc::F_RDLCK)
            } else {
                (libc::F_NOTIFY, 2) // DN_MODIFY
            };
            // SAFETY: fcntl with integer arguments on a descriptor we own.
            let r = unsafe { libc::fcntl(file.as_raw_fd(), cmd, value) };
            println!("{action} {r}");
        }
        "write" => report("write", std::fs::write(&arg, b"x")),
        "mkdir" => report("mkdir", std::fs::create_dir(&arg)),
        "exec-sh" => {
            let r = std::process::Command::new("/bin/sh")
                .args(["-c", "true"])
                .status();
            report("exec-sh", r.map(|_| ()));
        }
        "signal" => {
            let pid: i32 = arg.parse().unwrap();
            // SAFETY: kill with signal 0 only checks permission.
            let r = unsafe { libc::kill(pid, 0) };
            println!("signal {r} {}", if r == 0 { 0 } else { errno() });
        }
        "ptrace" => {
            // SAFETY: PTRACE_TRACEME takes no pointers.
            let r = unsafe { libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) };
            println!("ptrace {r}");
        }
        "io_uring" => {
            let mut params = [0u8; 120];
            // SAFETY: io_uring_setup(1, params) with a zeroed params buffer.
            let r = unsafe { libc::syscall(libc::SYS_io_uring_setup, 1, params.as_mut_ptr()) };
            println!("io_uring {r}");
        }
        "bpf" => {
            // SAFETY: bpf with a NULL attr fails with EFAULT if allowed at all.
            let r = unsafe { libc::syscall(libc::SYS_bpf, 0, std::ptr::null::<u8>(), 0) };
            println!("bpf {r}");
        }
        "personality" => {
            // SAFETY: query only.
            let cur = unsafe { libc::personality(0xffff_ffff) };
            println!("personality-query {cur}");
            let _ = std::io::stdout().flush();
            // SAFETY: sets ADDR_NO_RANDOMIZE (harmless if allowed).
            let r = unsafe { libc::personality(0x0040000) };
            println!("personality-set {r}");
        }
        "x32-socket" => {
            // SAFETY: socket(AF_UNIX, SOCK_STREAM, 0) through the x32 syscall number.
            let r = unsafe { libc::syscall(41 | 0x4000_0000, libc::AF_UNIX, libc::SOCK_STREAM, 0) };
            println!("x32 {r}");
        }
        "threads" => {
            for _ in 0..3 {
                std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_secs(60)));
            }
            println!("ready");
            let _ = std::io::stdout().flush();
            // Wait until stdin closes.
            let _ = std::io::stdin().read(&mut [0u8; 1]);
        }
        "sigsys-ignored-tcp-connect" => {
            // SAFETY: sets the disposition of SIGSYS to SIG_IGN; no handler code involved.
            unsafe { libc::signal(libc::SIGSYS, libc::SIG_IGN) };
            let r = std::net::TcpStream::connect(("127.0.0.1", arg.parse::<u16>().unwrap()));
            report("tcp-connect", r.map(|_| ()));
        }
        "setsid-child-socket" => {
            // SAFETY: fork in a single-threaded program; the child only makes raw calls and
            // writes to stdout before exiting.
            let child = unsafe { libc::fork() };
            if child == 0 {
                // SAFETY: raw calls in the forked child.
                unsafe {
                    libc::setsid();
                    let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
                    println!("child-survived {fd}");
                    let _ = std::io::stdout().flush();
                    libc::_exit(0);
                }
            }
            println!("forked {child}");
            let _ = std::io::stdout().flush();
            let mut status = 0;
            // SAFETY: waits for our own child.
            unsafe { libc::waitpid(child, &mut status, 0) };
            println!("child-status {status}");
            let _ = std::io::stdout().flush();
            let _ = std::io::stdin().read(&mut [0u8; 1]);
        }
        "orphan-sleeper" => {
            // argv[2] is a marker the test finds in /proc/<pid>/cmdline (the grandchild keeps
            // it). The child forks the sleeper and exits: the sleeper is an orphan,
            // re-parented to the host (its PID namespace's init).
            let mut fds = [0i32; 2];
            // SAFETY: pipe into a live array; fork in a single-threaded program; the children
            // make only raw calls and never return.
            unsafe {
                assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
                let child = libc::fork();
                if child == 0 {
                    if libc::fork() == 0 {
                        libc::write(fds[1], b"s".as_ptr().cast(), 1);
                        libc::sleep(3600);
                    }
                    libc::_exit(0);
                }
                let mut status = 0;
                libc::waitpid(child, &mut status, 0);
                let mut b = 0u8;
                libc::read(fds[0], std::ptr::addr_of_mut!(b).cast(), 1);
            }
            println!("ready");
            let _ = std::io::stdout().flush();
            let _ = std::io::stdin().read(&mut [0u8; 1]);
        }
        "fork-until-refused" => {
            let mut n = 0;
            let e = loop {
                // SAFETY: fork in a single-threaded program; the child only pauses.
                let pid = unsafe { libc::fork() };
                if pid == 0 {
                    // SAFETY: raw calls in the child.
                    unsafe {
                        libc::pause();
                        libc::_exit(0);
                    }
                }
                if pid < 0 {
                    break errno();
                }
                n += 1;
                if n >= 10_000 {
                    break 0;
                }
            };
            println!("forks {n} errno {e}");
        }
        "pid-view" => {
            // SAFETY: getpid/getppid take no arguments.
            let (pid, ppid) = unsafe { (libc::getpid(), libc::getppid()) };
            let own = std::fs::read_link("/proc/self").map(|p| p.display().to_string());
            println!(
                "pid {pid} ppid {ppid} proc-self {}",
                own.unwrap_or_default()
            );
        }
        "cwd" => println!("{}", std::env::current_dir().unwrap().display()),
        other => {
            println!("unknown action {other}");
            std::process::exit(2);
        }
    }
    let _ = std::io::stdout().flush();
}
