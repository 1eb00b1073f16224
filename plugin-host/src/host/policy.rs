//! The confinement policy of a host, as reviewed data.
//!
//! Two declarations live here and nowhere else:
//!
//! * [`fs_grants`]: every filesystem path a host may touch under Landlock, with the rights
//!   and the reason. Everything not granted is denied (all filesystem rights the kernel
//!   knows, up to ABI 7, are *handled*). TCP bind/connect are handled and never granted
//!   (ABI ≥ 4); abstract unix sockets and signals are scoped to the host's own domain
//!   (ABI ≥ 6).
//! * UNIX sockets: a host has none but its own `socketpair(AF_UNIX, SOCK_STREAM)`s.
//!   `socket(AF_UNIX)` fails with [`UNIX_SOCKET_ERRNO`] and `connect`, `bind`, `listen`,
//!   `accept`, `accept4` are not allowed: no Landlock ABI up to 7 restricts `connect()` to a
//!   *pathname* socket (docs/security.md "UNIX sockets").
//! * [`SECCOMP_ALLOW`]: the system calls a host may make, each with when and why (measured
//!   over the runtime matrix, docs/security.md "The allow-list"); anything else is refused
//!   (Landlock does the path-based work for the allowed ones). [`seccomp_program`] compiles
//!   it with `SECCOMP_RET_KILL_PROCESS` for a refusal; [`seccomp_program_for`] with
//!   [`DenyAction::Notify`] compiles the same rules with `SECCOMP_RET_USER_NOTIF` instead, so
//!   the supervisor learns which call it was before killing the host (see
//!   [`crate::common::notify`]). Both sit behind a guard that kills foreign-architecture and x32
//!   calls outright (`SECCOMP_RET_KILL_PROCESS` in either variant) and answers
//!   `clone3` with `ENOSYS` ([`CLONE3_ERRNO`]). [`NEVER_ALLOWED`] names the calls known to
//!   do harm, which the allow-list must never take in.
//!
//! Both are built in the supervisor *before* the fork (see [`crate::host::launch`]).
//! The source of each rule is `docs/protocol.md` §8 (what a confined host can do) and
//! `docs/design-notes.md`, "Implementation notes".

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::common::landlock::{FsAccess, FsGrant, PolicyError};
use crate::common::seccomp::{
    arch_guard, insn, syscall_name, SeccompProgram, BPF_JEQ_K, BPF_LD_W_ABS, BPF_RET_K,
    CLONE_NAMESPACE_MASK, DENIED_IOCTLS, SECCOMP_DATA_ARG0_LO, SECCOMP_RET_KILL_PROCESS,
};
use crate::host::pin::{Interpreter, VerifiedExecutable};

/// The dynamic loader every dynamically linked host needs (x86_64 psABI path; canonicalized
/// before use, on merged-/usr systems it lives in /usr/lib/x86_64-linux-gnu).
pub const DYNAMIC_LOADER: &str = "/lib64/ld-linux-x86-64.so.2";

/// The filesystem grants of a host (docs/protocol.md §8: readable are its executable and what it
/// needs to start, `work_dir` and `log_dir`; writable only `state_dir` and `tmp_dir`).
/// `extra_read` are the operator's `read_paths` for this host (checked by the supervisor's
/// config loader; each must exist), granted read-only.
pub fn fs_grants(
    exe: &VerifiedExecutable,
    work_dir: &Path,
    log_dir: &Path,
    state_dir: &Path,
    tmp_dir: &Path,
    extra_read: &[PathBuf],
) -> Vec<FsGrant> {
    let mut g = vec![FsGrant {
        path: exe.path.clone(),
        access: FsAccess::ReadExecute,
        why: "the host executable itself (exec of the verified descriptor checks execute; a script is read by its interpreter)",
        required: true,
        via_verified_fd: true,
    }];
    if let Some(interp) = &exe.interpreter {
        g.push(FsGrant {
            path: interp.path.clone(),
            access: FsAccess::ReadExecute,
            why: "the interpreter of a #! script host is what actually gets executed",
            required: true,
            via_verified_fd: false,
        });
        for (root, why) in interpreter_read_roots(interp) {
            g.push(FsGrant {
                path: root,
                access: FsAccess::ReadOnly,
                why,
                required: false,
                via_verified_fd: false,
            });
        }
    }
    let loader = Path::new(DYNAMIC_LOADER)
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(DYNAMIC_LOADER));
    g.push(FsGrant {
        path: loader,
        access: FsAccess::ReadExecute,
        why: "the dynamic loader, mapped by the kernel at exec of any dynamically linked program",
        required: false,
        via_verified_fd: false,
    });
    for (lib, why) in [
        (
            "/lib/x86_64-linux-gnu",
            "shared libraries (libc, libm, libgcc_s, libz, libexpat)",
        ),
        (
            "/usr/lib/x86_64-linux-gnu",
            "shared libraries (merged-/usr location)",
        ),
        ("/etc/ld.so.cache", "the loader's library index"),
    ] {
        g.push(FsGrant {
            path: PathBuf::from(lib),
            access: FsAccess::ReadOnly,
            why,
            required: false,
            via_verified_fd: false,
        });
    }
    for (path, why) in RUNTIME_START_FILES {
        g.push(FsGrant {
            path: PathBuf::from(path),
            access: FsAccess::ReadOnly,
            why,
            required: false,
            via_verified_fd: false,
        });
    }
    for path in extra_read {
        g.push(FsGrant {
            path: path.clone(),
            access: FsAccess::ReadOnly,
            why: "named by the operator in [plugins.hosts.<name>] read_paths",
            required: true,
            via_verified_fd: false,
        });
    }
    g.push(FsGrant {
        path: work_dir.to_owned(),
        access: FsAccess::ReadOnly,
        why: "docs/protocol.md §8: work_dir is readable (the host's cwd), never writable",
        required: true,
        via_verified_fd: false,
    });
    g.push(FsGrant {
        path: log_dir.to_owned(),
        access: FsAccess::ReadOnly,
        why: "docs/protocol.md §8: log_dir is readable",
        required: true,
        via_verified_fd: false,
    });
    g.push(FsGrant {
        path: state_dir.to_owned(),
        access: FsAccess::ReadWrite,
        why: "docs/protocol.md §8: the host's private state directory is writable",
        required: true,
        via_verified_fd: false,
    });
    g.push(FsGrant {
        path: tmp_dir.to_owned(),
        access: FsAccess::ReadWrite,
        why: "docs/protocol.md §8: TMPDIR is writable",
        required: true,
        via_verified_fd: false,
    });
    g.push(FsGrant {
        path: PathBuf::from("/dev/null"),
        access: FsAccess::Device,
        why: "redirections to /dev/null are common in interpreters and libraries",
        required: false,
        via_verified_fd: false,
    });
    g
}

/// The read-only trees of one runtime family installed under a *system* prefix (`/usr`,
/// `/usr/local`, `/`), where granting the whole prefix would open far more than the runtime.
#[derive(Debug, Clone, Copy)]
pub struct RuntimeTrees {
    /// The family, matched against the interpreter's file name (`python3.11` is `python`,
    /// `ruby3.1` is `ruby`, `nodejs` is `node`).
    pub family: &'static str,
    /// Paths relative to the prefix (a trailing `*` matches every entry of that directory
    /// whose name starts with the rest), or absolute paths (the family's system-wide
    /// directories outside the prefix).
    pub trees: &'static [&'static str],
    /// Why the runtime reads them.
    pub why: &'static str,
}

/// Reviewed data: what each runtime family reads from a system installation at start and
/// when importing its standard library (docs/protocol.md "Runtimes"). Shells (`sh`,
/// `bash`, `dash`) need nothing beyond the shared libraries. Architecture-specific
/// directories (`lib/x86_64-linux-gnu/perl*`, `…/ruby`) are already under the shared
/// library grant.
pub const RUNTIME_TREES: &[RuntimeTrees] = &[
    RuntimeTrees {
        family: "python",
        trees: &["lib/python3*"],
        why: "Python's standard library and dist-packages (lib/python3.X, lib/python3)",
    },
    RuntimeTrees {
        family: "perl",
        trees: &["share/perl", "share/perl5", "lib/site_perl"],
        why: "Perl's core and vendor modules (@INC: share/perl/5.X, share/perl5)",
    },
    RuntimeTrees {
        family: "ruby",
        trees: &["lib/ruby", "share/rubygems-integration", "/var/lib/gems"],
        why: "Ruby's standard library and RubyGems, loaded before the script runs",
    },
    RuntimeTrees {
        family: "node",
        trees: &["share/nodejs", "lib/node", "lib/node_modules"],
        why: "Node's system-wide module directories (Debian's nodejs packages)",
    },
];

/// Reviewed data: system files runtimes read at start, granted read-only to every host
/// (docs/protocol.md "Runtimes"). Each holds configuration or public data, never secrets;
/// none is writable by the agent.
pub const RUNTIME_START_FILES: &[(&str, &str)] = &[
    (
        "/etc/ssl/openssl.cnf",
        "OpenSSL's configuration: Node (and Python's ssl module) read it at start; Node exits 13 without it",
    ),
    (
        "/usr/lib/locale/locale-archive",
        "glibc's compiled locales (LANG/LC_* of the host environment); Perl warns without them",
    ),
    (
        "/usr/lib/locale/C.utf8",
        "glibc's C.UTF-8 locale (Debian ships it outside the archive)",
    ),
    (
        "/usr/share/locale/locale.alias",
        "glibc's locale name aliases, read by setlocale()",
    ),
    (
        "/usr/share/zoneinfo",
        "time zone data (TZ of the host environment, localtime())",
    ),
    ("/etc/localtime", "the system time zone (a link into zoneinfo)"),
];

/// The runtime family of an interpreter by its file name (see [`RuntimeTrees::family`]).
fn runtime_family(interp: &Path) -> Option<&'static RuntimeTrees> {
    let name = interp.file_name()?.to_string_lossy();
    RUNTIME_TREES.iter().find(|t| name.starts_with(t.family))
}

/// Read-only trees an interpreter needs to start, with the reason for each:
///
/// * a virtual environment it was named through or lives in (`<venv>/bin/python3` with a
///   `<venv>/pyvenv.cfg`): the environment's root, so its `site-packages` work, and the
///   base installation named by the file's `home` key (a `--copies` or uv environment
///   keeps its standard library there);
/// * a private installation (pyenv, nvm, rbenv, conda, `/opt/...`: the prefix above the
///   interpreter's `bin/`): that whole prefix;
/// * a system installation (`/usr`, `/usr/local`, `/`): only its family's
///   [`RUNTIME_TREES`], never the whole prefix.
///
/// A root that is `/`, the supervisor's home directory or one of its ancestors is never
/// returned (a runtime installed directly in `~/bin` gets no prefix grant): the home
/// directory holds credentials.
pub fn interpreter_read_roots(interp: &Interpreter) -> Vec<(PathBuf, &'static str)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let opens_home =
        |p: &Path| p == Path::new("/") || home.as_deref().is_some_and(|h| h.starts_with(p));
    let family = runtime_family(&interp.path);
    let mut roots: Vec<(PathBuf, &'static str)> = Vec::new();
    let mut prefixes: Vec<PathBuf> = interp
        .path
        .parent()
        .and_then(Path::parent)
        .map(Path::to_owned)
        .into_iter()
        .collect();
    for named in [&interp.named, &interp.path] {
        let Some(venv) = named.parent().and_then(Path::parent) else {
            continue;
        };
        let Ok(cfg) = std::fs::read_to_string(venv.join("pyvenv.cfg")) else {
            continue;
        };
        if !opens_home(venv) {
            roots.push((
                venv.to_owned(),
                "the virtual environment of the interpreter (pyvenv.cfg, site-packages)",
            ));
        }
        let base_bin = cfg.lines().find_map(|l| {
            let (key, value) = l.split_once('=')?;
            (key.trim() == "home").then(|| PathBuf::from(value.trim()))
        });
        if let Some(base) = base_bin.and_then(|b| b.canonicalize().ok()) {
            prefixes.extend(base.parent().map(Path::to_owned));
        }
    }
    for prefix in prefixes {
        let system = ["/", "/usr", "/usr/local"]
            .iter()
            .any(|s| prefix == Path::new(s));
        if !system {
            if !opens_home(&prefix) && !prefix.join("pyvenv.cfg").is_file() {
                roots.push((
                    prefix,
                    "the interpreter's private installation prefix (pyenv, nvm, rbenv, conda, /opt)",
                ));
            }
            continue;
        }
        let Some(family) = family else {
            continue;
        };
        for tree in family.trees {
            if let Some(stem) = tree.strip_suffix('*') {
                let (dir, start) = match stem.rsplit_once('/') {
                    Some((dir, start)) => (prefix.join(dir), start),
                    None => (prefix.clone(), stem),
                };
                let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(start))
                    .map(|e| e.path())
                    .collect();
                found.sort();
                roots.extend(found.into_iter().map(|p| (p, family.why)));
            } else {
                roots.push((prefix.join(tree), family.why));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    roots.retain(|(p, _)| seen.insert(p.clone()));
    roots
}

/// When an allowed system call is allowed (the argument-level denials inside the
/// allow-list). Argument checks look at the low 32 bits only, and only at `int`/`unsigned
/// int` arguments (the kernel truncates those itself) or flags whose meaningful bits are
/// all low (`clone`'s namespace flags).
#[derive(Debug, Clone, Copy)]
pub enum AllowWhen {
    /// Always.
    Always,
    /// When the low 32 bits of argument `arg` are *none* of `values` (each with its name):
    /// the `request` of `ioctl`, the `option` of `prctl`.
    ArgNotIn {
        /// The argument's index (0-based).
        arg: u8,
        /// The denied values and their names.
        values: &'static [(u64, &'static str)],
    },
    /// When the low 32 bits of argument `arg` are one of `values`: `personality` queries.
    ArgIn {
        /// The argument's index (0-based).
        arg: u8,
        /// The allowed values and their names.
        values: &'static [(u64, &'static str)],
    },
    /// When the low 32 bits of argument `arg`, masked with `mask`, are one of `values`: the
    /// policy of `sched_setscheduler` (flags masked off), `clone` without namespace flags
    /// (the mask is the flags, the only value 0), `fallocate` mode 0.
    ArgMaskedIn {
        /// The argument's index (0-based).
        arg: u8,
        /// The mask applied first.
        mask: u64,
        /// The allowed values and their names.
        values: &'static [(u64, &'static str)],
    },
    /// `socketpair(AF_UNIX, SOCK_STREAM [| flags])` only: a datagram or seqpacket pair
    /// could `sendto`/`sendmsg` an explicit pathname address, a stream pair cannot.
    UnixStreamPair,
}

/// One entry of the seccomp allow-list.
#[derive(Debug, Clone, Copy)]
pub struct Allowed {
    /// The x86_64 system call number (its name: [`syscall_name`]).
    pub nr: i64,
    /// When it is allowed.
    pub when: AllowWhen,
    /// Who needs it: the runtimes it was measured in (`bench/host_syscalls.sh`), or why a
    /// host may reasonably make it.
    pub why: &'static str,
}

macro_rules! allow {
    ($sys:ident, $why:expr) => {
        allow!($sys, AllowWhen::Always, $why)
    };
    ($sys:ident, $when:expr, $why:expr) => {
        Allowed {
            nr: libc::$sys,
            when: $when,
            why: $why,
        }
    };
}

// Who needs a call. "measured: …" names the runtimes of the matrix that made it under
// `strace -f` (bench/host_syscalls.sh, docs/security.md "The allow-list"); the others are
// the standard library's ordinary calls a host may make doing what docs/protocol.md §8 allows
// (read its inputs, write its state, threads, timers, children of its own interpreter).
const LOADER: &str = "measured: every runtime (the dynamic loader and libc start-up)";
const MEM: &str = "memory management: measured in every runtime (mmap, mprotect, munmap, brk; madvise and mremap by V8 and glibc's malloc)";
const FILE: &str = "file access; Landlock decides which paths (measured: every runtime)";
const FILE_OTHER: &str = "file access by path or descriptor, Landlock decides which paths (standard library calls: os.rename, fs.mkdir, File::sync_all, …)";
const FD: &str = "descriptor plumbing (measured: dup2 by bash and Rust, pipe2 by Node, fcntl everywhere; subprocess plumbing)";
const POLL: &str =
    "event loops: measured epoll_* by Node (libuv), poll by Rust; asyncio and tokio use epoll";
const EVENTFD: &str = "event-loop wake-ups: measured eventfd2 by Node and Ruby";
const THREAD: &str = "threads: measured futex, set_robust_list, rseq, set_tid_address, gettid in every runtime with threads (Node's V8 and libuv pools, Ruby's timer thread, Rust's SDK)";
const SIGNALS: &str = "signal handling of the host's own processes and threads (measured: rt_sigaction, rt_sigprocmask everywhere, sigaltstack by Ruby and Rust); Landlock's signal scope and the PID namespace keep signals inside the host";
const TIME: &str = "clocks, sleeps and timers (measured: clock_gettime, timer_create by Ruby; the vDSO answers most clock reads without a call)";
const IDS: &str =
    "identity and system queries, read-only (measured: get*id, uname, sysinfo, capget by Node)";
const LIMITS: &str = "resource limits (measured: prlimit64 in every runtime, glibc's getrlimit); without CAP_SYS_RESOURCE a host can only lower its own (soft = hard at launch), and only sees its own PID namespace";
const CHILD: &str = "children of the host's own interpreter (subprocess, multiprocessing, fork of a worker): exec is Landlock's (only the host, its interpreter, the loader), the PID namespace and pids cgroup bound them";
const SOCK: &str = "I/O on the host's own socketpair()s (tokio, asyncio, libuv wake-up channels; the listener hand-over before exec uses sendmsg); no call here can name an address a stream pair would use";
const PIDFD: &str = "process handles for the host's own children (Python 3.12's asyncio watches children with pidfd_open, libuv can); they reach exactly what kill reaches: the host's own PID namespace, and Landlock's signal scope";
const RANDOM: &str = "randomness: measured getrandom in every runtime (hash seeds, V8's, Ruby's)";
const SCHED: &str = "scheduling queries and yields (libuv's and Python's CPU count, spin locks)";

/// `clone` is allowed with no flag of [`CLONE_NAMESPACE_MASK`].
const NO_NAMESPACE_FLAG: &[(u64, &str)] = &[(0, "no namespace flag")];

/// `fallocate` is allowed with mode 0 only.
const MODE_ZERO: &[(u64, &str)] = &[(0, "mode 0")];

/// `personality` is allowed as a query, or setting the default.
const PERSONALITY_QUERY: &[(u64, &str)] = &[
    (0xffff_ffff, "query (0xffffffff)"),
    (0, "PER_LINUX (the default)"),
];

/// The errno `clone3` fails with in a host: `ENOSYS`. Its flags are in memory, where a
/// seccomp filter cannot look; glibc (2.34 and later) falls back to `clone` on `ENOSYS`,
/// whose flags [`crate::common::seccomp::DENIED_CLONE_FLAGS`] checks.
pub const CLONE3_ERRNO: i32 = libc::ENOSYS;

const NET: &str = "no network: no IP, packet or netlink sockets (socket(AF_UNIX) fails with EACCES instead, see UNIX_SOCKET_ERRNO)";
const UNIX: &str = "no UNIX-socket addresses: the only sockets a host can have are its own socketpair()s, which never need connect, bind, listen or accept (pathname sockets are not covered by Landlock up to ABI 7)";
const NS: &str = "no mounts or namespaces";
const META: &str = "no file metadata changes: Landlock up to ABI 7 does not cover chmod, chown, utime or extended attributes, so a host could open up ~/.ssh, plant a set-user-ID copy of itself or a security.capability attribute (no runtime of the matrix makes these calls, measured: docs/security.md \"File metadata\")";
const GROUP: &str = "no leaving the host's process group or session: the supervisor kills the host by its group (no PID namespace without privilege and without user namespaces)";
const CLOCK: &str = "no setting the system clock";
const HOSTNAME: &str = "no setting the host name";
const SYSV: &str = "no System V IPC: Landlock does not cover it, and outside a private IPC namespace a host could read other processes' shared memory";
const POSIX_MQ: &str =
    "no POSIX message queues: Landlock does not cover their names, and a queue outlives the host";
const MLOCK: &str = "no locked memory: no runtime of the matrix locks pages, and locked pages cannot be reclaimed under memory pressure";
const PRIV: &str = "no privileged operation, even where a capability is left (the host's capabilities are dropped before exec)";

/// Reviewed data: the `fcntl` commands no host may use. A host may read the event record
/// (its log dir is readable), and as the file's owner it could take a lease on it, which
/// holds up the supervisor's next write to it for the lease-break time (8 s here), again and
/// again; or watch the directory for changes (docs/security.md "The supervisor is not the
/// agent's deputy").
pub const DENIED_FCNTLS: &[(u64, &str)] = &[
    (
        libc::F_SETLEASE as u64,
        "F_SETLEASE: a lease stalls the supervisor's writes to the file",
    ),
    (
        libc::F_NOTIFY as u64,
        "F_NOTIFY: watching the record's directory",
    ),
];

/// Reviewed data: the `prctl` options no host may use.
pub const DENIED_PRCTLS: &[(u64, &str)] = &[
    (
        libc::PR_SET_PDEATHSIG as u64,
        "PR_SET_PDEATHSIG: the host must not clear the signal that kills it with the supervisor",
    ),
    (
        libc::PR_SET_SECCOMP as u64,
        "PR_SET_SECCOMP: no filter of the host's own (it could probe denied calls with errno returns, unrecorded)",
    ),
];

/// Reviewed data: the scheduling policies a host may take (`sched_setscheduler`, flags such
/// as `SCHED_RESET_ON_FORK` masked off): no `SCHED_FIFO`, `SCHED_RR` or `SCHED_DEADLINE`.
pub const ALLOWED_SCHED_POLICIES: &[(u64, &str)] = &[
    (libc::SCHED_OTHER as u64, "SCHED_OTHER"),
    (libc::SCHED_BATCH as u64, "SCHED_BATCH"),
    (libc::SCHED_IDLE as u64, "SCHED_IDLE"),
];

/// `setxattrat(2)` (Linux 6.13), not yet in the libc crate.
const SYS_SETXATTRAT: i64 = 463;
/// `removexattrat(2)` (Linux 6.13).
const SYS_REMOVEXATTRAT: i64 = 466;
/// `file_setattr(2)` (Linux 6.17): `FS_IOC_FSSETXATTR` by path.
const SYS_FILE_SETATTR: i64 = 469;

/// The seccomp allow-list (docs/security.md "The allow-list"): every system call a host may
/// make, with when and why. Anything else — a call nobody thought of as much as the known
/// dangerous ones ([`NEVER_ALLOWED`]) — stops the host: with [`DenyAction::Notify`] the
/// calling thread blocks in the kernel until the supervisor has read the call and killed
/// the host (the event names the call), with [`DenyAction::KillProcess`]
/// (`SECCOMP_RET_KILL_PROCESS`) the kernel kills it at once. Two calls are answered by the
/// guard in front of the list instead: `socket(AF_UNIX, …)` fails with
/// [`UNIX_SOCKET_ERRNO`], `clone3` with [`CLONE3_ERRNO`].
///
/// Measured with `bench/host_syscalls.sh` (`strace -f` of the runtime matrix: bash, sh,
/// Python, Node, Perl, Ruby, Rust hosts, 53 distinct calls), completed with the standard
/// library calls of the same kinds a host may make doing what docs/protocol.md §8 allows.
pub const SECCOMP_ALLOW: &[Allowed] = &[
    // Process start-up and end.
    allow!(SYS_execve, CHILD),
    allow!(SYS_execveat, "measured: the launch's own execveat (the listener hand-over happens before it) and Python/Perl/Ruby re-executing their interpreter"),
    allow!(SYS_arch_prctl, LOADER),
    allow!(SYS_exit, THREAD),
    allow!(SYS_exit_group, LOADER),
    allow!(SYS_restart_syscall, "the kernel restarts an interrupted sleep with it"),
    allow!(
        SYS_prctl,
        AllowWhen::ArgNotIn { arg: 0, values: DENIED_PRCTLS },
        "measured: Ruby (PR_SET_NAME of its threads); the death signal and the seccomp filter are the supervisor's (DENIED_PRCTLS)"
    ),
    allow!(
        SYS_personality,
        AllowWhen::ArgIn { arg: 0, values: PERSONALITY_QUERY },
        "queries only (glibc, Python's platform module): no execution-domain changes (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE)"
    ),
    // Memory.
    allow!(SYS_brk, MEM),
    allow!(SYS_mmap, MEM),
    allow!(SYS_munmap, MEM),
    allow!(SYS_mprotect, MEM),
    allow!(SYS_mremap, MEM),
    allow!(SYS_madvise, MEM),
    allow!(SYS_msync, MEM),
    allow!(SYS_mincore, MEM),
    allow!(SYS_pkey_alloc, "measured: Node (V8 protects its code space with a memory protection key)"),
    allow!(SYS_pkey_free, "V8, with pkey_alloc"),
    allow!(SYS_pkey_mprotect, "V8, with pkey_alloc"),
    // Files, by path (Landlock decides which) and by descriptor.
    allow!(SYS_read, FILE),
    allow!(SYS_write, FILE),
    allow!(SYS_readv, FILE_OTHER),
    allow!(SYS_writev, FILE_OTHER),
    allow!(SYS_pread64, FILE),
    allow!(SYS_pwrite64, FILE_OTHER),
    allow!(SYS_preadv, FILE_OTHER),
    allow!(SYS_pwritev, FILE_OTHER),
    allow!(SYS_preadv2, FILE_OTHER),
    allow!(SYS_pwritev2, FILE_OTHER),
    allow!(SYS_open, FILE_OTHER),
    allow!(SYS_openat, FILE),
    allow!(SYS_openat2, FILE_OTHER),
    allow!(SYS_creat, FILE_OTHER),
    allow!(SYS_close, FILE),
    allow!(SYS_close_range, "Python's subprocess closes the descriptors a child must not inherit"),
    allow!(SYS_lseek, FILE),
    allow!(SYS_stat, FILE_OTHER),
    allow!(SYS_fstat, FILE),
    allow!(SYS_lstat, FILE_OTHER),
    allow!(SYS_newfstatat, FILE),
    allow!(SYS_statx, "measured: Node (libuv's fs.stat)"),
    allow!(SYS_statfs, FILE_OTHER),
    allow!(SYS_fstatfs, FILE_OTHER),
    allow!(SYS_access, FILE),
    allow!(SYS_faccessat, FILE_OTHER),
    allow!(SYS_faccessat2, FILE_OTHER),
    allow!(SYS_readlink, "measured: Python, Node, Perl, Ruby (/proc/self/exe, realpath)"),
    allow!(SYS_readlinkat, FILE_OTHER),
    allow!(SYS_getdents, FILE_OTHER),
    allow!(SYS_getdents64, "measured: Python, Ruby (directory listings)"),
    allow!(SYS_getcwd, "measured: bash, sh, Ruby"),
    allow!(SYS_chdir, FILE_OTHER),
    allow!(SYS_fchdir, FILE_OTHER),
    allow!(SYS_mkdir, FILE_OTHER),
    allow!(SYS_mkdirat, FILE_OTHER),
    allow!(SYS_rmdir, FILE_OTHER),
    allow!(SYS_unlink, FILE_OTHER),
    allow!(SYS_unlinkat, FILE_OTHER),
    allow!(SYS_rename, FILE_OTHER),
    allow!(SYS_renameat, FILE_OTHER),
    allow!(SYS_renameat2, FILE_OTHER),
    allow!(SYS_link, FILE_OTHER),
    allow!(SYS_linkat, FILE_OTHER),
    allow!(SYS_symlink, FILE_OTHER),
    allow!(SYS_symlinkat, FILE_OTHER),
    allow!(SYS_truncate, FILE_OTHER),
    allow!(SYS_ftruncate, FILE_OTHER),
    allow!(SYS_fsync, FILE_OTHER),
    allow!(SYS_fdatasync, FILE_OTHER),
    allow!(SYS_fadvise64, FILE_OTHER),
    allow!(SYS_umask, "the host's own file-creation mask (it only narrows the modes of files it creates)"),
    allow!(
        SYS_fallocate,
        AllowWhen::ArgMaskedIn { arg: 1, mask: 0xffff_ffff, values: MODE_ZERO },
        "plain fallocate only (mode 0, bounded by RLIMIT_FSIZE like a write): KEEP_SIZE allocates past the file size unbounded, the range modes rewrite files in place"
    ),
    allow!(SYS_sendfile, FILE_OTHER),
    allow!(SYS_copy_file_range, FILE_OTHER),
    allow!(
        SYS_ioctl,
        AllowWhen::ArgNotIn { arg: 1, values: DENIED_IOCTLS },
        "measured: bash, Node, Perl, Python, Ruby (TCGETS to ask whether a descriptor is a terminal, FIONBIO, FIOCLEX); no terminal injection and no filesystem-wide or inode-flag ioctls (DENIED_IOCTLS)"
    ),
    // Descriptors.
    allow!(SYS_dup, FD),
    allow!(SYS_dup2, FD),
    allow!(SYS_dup3, FD),
    allow!(
        SYS_fcntl,
        AllowWhen::ArgNotIn { arg: 1, values: DENIED_FCNTLS },
        "descriptor plumbing (measured: fcntl everywhere: F_GETFL, F_SETFL, F_SETFD, F_DUPFD_CLOEXEC); no leases and no change notifications (DENIED_FCNTLS)"
    ),
    allow!(SYS_pipe, FD),
    allow!(SYS_pipe2, FD),
    // Event loops.
    allow!(SYS_poll, POLL),
    allow!(SYS_ppoll, POLL),
    allow!(SYS_select, POLL),
    allow!(SYS_pselect6, POLL),
    allow!(SYS_epoll_create, POLL),
    allow!(SYS_epoll_create1, POLL),
    allow!(SYS_epoll_ctl, POLL),
    allow!(SYS_epoll_wait, POLL),
    allow!(SYS_epoll_pwait, POLL),
    allow!(SYS_epoll_pwait2, POLL),
    allow!(SYS_eventfd, EVENTFD),
    allow!(SYS_eventfd2, EVENTFD),
    allow!(SYS_timerfd_create, TIME),
    allow!(SYS_timerfd_settime, TIME),
    allow!(SYS_timerfd_gettime, TIME),
    allow!(SYS_signalfd, SIGNALS),
    allow!(SYS_signalfd4, SIGNALS),
    // The host's own socket pairs.
    allow!(
        SYS_socketpair,
        AllowWhen::UnixStreamPair,
        "only socketpair(AF_UNIX, SOCK_STREAM): tokio, Python's asyncio and libuv make their wake-up channels with it"
    ),
    allow!(SYS_sendmsg, SOCK),
    allow!(SYS_recvmsg, SOCK),
    allow!(SYS_sendto, SOCK),
    allow!(SYS_recvfrom, SOCK),
    allow!(SYS_shutdown, SOCK),
    allow!(SYS_getsockopt, SOCK),
    allow!(SYS_setsockopt, SOCK),
    allow!(SYS_getsockname, SOCK),
    allow!(SYS_getpeername, SOCK),
    // Threads and children.
    allow!(
        SYS_clone,
        AllowWhen::ArgMaskedIn { arg: 0, mask: CLONE_NAMESPACE_MASK, values: NO_NAMESPACE_FLAG },
        "threads and children (glibc's pthread_create and fork fall back to clone when clone3 fails with ENOSYS); no namespace flag (DENIED_CLONE_FLAGS)"
    ),
    allow!(SYS_fork, CHILD),
    allow!(SYS_vfork, CHILD),
    allow!(SYS_wait4, CHILD),
    allow!(SYS_waitid, CHILD),
    allow!(SYS_futex, THREAD),
    allow!(SYS_set_robust_list, THREAD),
    allow!(SYS_set_tid_address, THREAD),
    allow!(SYS_rseq, THREAD),
    allow!(SYS_gettid, THREAD),
    allow!(SYS_sched_yield, SCHED),
    allow!(SYS_sched_getaffinity, SCHED),
    allow!(SYS_sched_getparam, SCHED),
    allow!(SYS_sched_getscheduler, SCHED),
    allow!(SYS_sched_get_priority_max, SCHED),
    allow!(SYS_sched_get_priority_min, SCHED),
    allow!(
        SYS_sched_setscheduler,
        AllowWhen::ArgMaskedIn { arg: 1, mask: 0xbfff_ffff, values: ALLOWED_SCHED_POLICIES },
        "normal, batch and idle policies only: no real-time scheduling (a SCHED_FIFO loop starves the machine)"
    ),
    // Signals.
    allow!(SYS_rt_sigaction, SIGNALS),
    allow!(SYS_rt_sigprocmask, SIGNALS),
    allow!(SYS_rt_sigreturn, SIGNALS),
    allow!(SYS_rt_sigsuspend, SIGNALS),
    allow!(SYS_rt_sigtimedwait, SIGNALS),
    allow!(SYS_rt_sigpending, SIGNALS),
    allow!(SYS_sigaltstack, SIGNALS),
    allow!(SYS_kill, SIGNALS),
    allow!(SYS_tkill, SIGNALS),
    allow!(SYS_tgkill, SIGNALS),
    allow!(SYS_pause, SIGNALS),
    allow!(SYS_pidfd_open, PIDFD),
    allow!(SYS_pidfd_send_signal, PIDFD),
    // Time.
    allow!(SYS_clock_gettime, TIME),
    allow!(SYS_clock_getres, TIME),
    allow!(SYS_gettimeofday, TIME),
    allow!(SYS_time, TIME),
    allow!(SYS_nanosleep, TIME),
    allow!(SYS_clock_nanosleep, TIME),
    allow!(SYS_alarm, TIME),
    allow!(SYS_getitimer, TIME),
    allow!(SYS_setitimer, TIME),
    allow!(SYS_timer_create, TIME),
    allow!(SYS_timer_settime, TIME),
    allow!(SYS_timer_gettime, TIME),
    allow!(SYS_timer_getoverrun, TIME),
    allow!(SYS_timer_delete, TIME),
    // Identity, limits, system queries.
    allow!(SYS_getpid, IDS),
    allow!(SYS_getppid, IDS),
    allow!(SYS_getuid, IDS),
    allow!(SYS_geteuid, IDS),
    allow!(SYS_getgid, IDS),
    allow!(SYS_getegid, IDS),
    allow!(SYS_getresuid, IDS),
    allow!(SYS_getresgid, IDS),
    allow!(SYS_getgroups, IDS),
    allow!(SYS_getpgrp, IDS),
    allow!(SYS_getpgid, IDS),
    allow!(SYS_getsid, IDS),
    allow!(SYS_capget, IDS),
    allow!(SYS_uname, IDS),
    allow!(SYS_sysinfo, IDS),
    allow!(SYS_getrusage, IDS),
    allow!(SYS_times, IDS),
    allow!(SYS_getcpu, IDS),
    allow!(SYS_getrlimit, LIMITS),
    allow!(SYS_setrlimit, LIMITS),
    allow!(SYS_prlimit64, LIMITS),
    allow!(SYS_getrandom, RANDOM),
];

/// Reviewed data: calls that are not in [`SECCOMP_ALLOW`] and must never be added to it,
/// with the reason (the deny-list of issue 24, kept so a later edit of the allow-list
/// cannot let one back in: `policy::tests` checks both lists are disjoint). Any other call
/// outside the allow-list is refused just the same; these are the ones known to do harm.
pub const NEVER_ALLOWED: &[(i64, &str)] = &[
    (libc::SYS_socket, NET),
    (libc::SYS_connect, UNIX),
    (libc::SYS_bind, UNIX),
    (libc::SYS_listen, UNIX),
    (libc::SYS_accept, UNIX),
    (libc::SYS_accept4, UNIX),
    (libc::SYS_ptrace, "no ptrace"),
    (libc::SYS_process_vm_readv, "no reading other processes' memory"),
    (libc::SYS_process_vm_writev, "no writing other processes' memory"),
    (libc::SYS_kcmp, "no comparing other processes' kernel objects"),
    (libc::SYS_pidfd_getfd, "no stealing another process's descriptors"),
    (libc::SYS_bpf, "no bpf"),
    (libc::SYS_io_uring_setup, "no io_uring (its operations bypass seccomp)"),
    (libc::SYS_io_uring_enter, "no io_uring"),
    (libc::SYS_io_uring_register, "no io_uring"),
    (libc::SYS_perf_event_open, "no perf events"),
    (libc::SYS_userfaultfd, "no userfaultfd (kernel exploitation aid)"),
    (libc::SYS_keyctl, "no kernel keyrings"),
    (libc::SYS_add_key, "no kernel keyrings"),
    (libc::SYS_request_key, "no kernel keyrings"),
    (libc::SYS_mount, NS),
    (libc::SYS_umount2, NS),
    (libc::SYS_pivot_root, NS),
    (libc::SYS_chroot, NS),
    (libc::SYS_unshare, NS),
    (libc::SYS_setns, NS),
    (libc::SYS_clone3, "its flags are in memory, where seccomp cannot look: answered ENOSYS by the guard, so libc falls back to clone, whose namespace flags are checked"),
    (libc::SYS_open_tree, NS),
    (libc::SYS_move_mount, NS),
    (libc::SYS_fsopen, NS),
    (libc::SYS_fsconfig, NS),
    (libc::SYS_fsmount, NS),
    (libc::SYS_fspick, NS),
    (libc::SYS_mount_setattr, NS),
    (libc::SYS_kexec_load, "no kernel replacement"),
    (libc::SYS_kexec_file_load, "no kernel replacement"),
    (libc::SYS_init_module, "no kernel modules"),
    (libc::SYS_finit_module, "no kernel modules"),
    (libc::SYS_delete_module, "no kernel modules"),
    (libc::SYS_chmod, META),
    (libc::SYS_fchmod, META),
    (libc::SYS_fchmodat, META),
    (libc::SYS_fchmodat2, META),
    (libc::SYS_chown, META),
    (libc::SYS_fchown, META),
    (libc::SYS_lchown, META),
    (libc::SYS_fchownat, META),
    (libc::SYS_utime, META),
    (libc::SYS_utimes, META),
    (libc::SYS_utimensat, META),
    (libc::SYS_futimesat, META),
    (libc::SYS_setxattr, META),
    (libc::SYS_lsetxattr, META),
    (libc::SYS_fsetxattr, META),
    (SYS_SETXATTRAT, META),
    (libc::SYS_removexattr, META),
    (libc::SYS_lremovexattr, META),
    (libc::SYS_fremovexattr, META),
    (SYS_REMOVEXATTRAT, META),
    (SYS_FILE_SETATTR, META),
    (libc::SYS_seccomp, "no seccomp filter of the host's own (it could probe refused calls with errno returns, unrecorded)"),
    (libc::SYS_setsid, GROUP),
    (libc::SYS_setpgid, GROUP),
    (libc::SYS_flock, "no flock: a host could hold the project lock (agent-runner.lock, readable where log_dir is the state dir) and refuse every later round"),
    (libc::SYS_fanotify_init, "no fanotify (watches and blocks other processes' file access disk-wide)"),
    (libc::SYS_fanotify_mark, "no fanotify"),
    (libc::SYS_inotify_init, "no inotify instances (see inotify_add_watch)"),
    (libc::SYS_inotify_init1, "no inotify instances (see inotify_add_watch)"),
    (libc::SYS_inotify_add_watch, "no inotify watches: Landlock does not check them, a watch on ~/.ssh leaks the names of new files"),
    (libc::SYS_memfd_create, "no memfd: executing one runs code that was never hashed"),
    (libc::SYS_memfd_secret, "no secret memory areas"),
    (libc::SYS_vhangup, "no hanging up the operator's terminal"),
    (libc::SYS_settimeofday, CLOCK),
    (libc::SYS_clock_settime, CLOCK),
    (libc::SYS_adjtimex, CLOCK),
    (libc::SYS_clock_adjtime, CLOCK),
    (libc::SYS_sethostname, HOSTNAME),
    (libc::SYS_setdomainname, HOSTNAME),
    (libc::SYS_sched_setattr, "no scheduling attributes (its policy is in memory, where seccomp cannot look)"),
    (libc::SYS_syslog, "no reading or clearing the kernel log"),
    (libc::SYS_shmget, SYSV),
    (libc::SYS_shmat, SYSV),
    (libc::SYS_shmctl, SYSV),
    (libc::SYS_shmdt, SYSV),
    (libc::SYS_msgget, SYSV),
    (libc::SYS_msgsnd, SYSV),
    (libc::SYS_msgrcv, SYSV),
    (libc::SYS_msgctl, SYSV),
    (libc::SYS_semget, SYSV),
    (libc::SYS_semop, SYSV),
    (libc::SYS_semtimedop, SYSV),
    (libc::SYS_semctl, SYSV),
    (libc::SYS_mq_open, POSIX_MQ),
    (libc::SYS_mq_unlink, POSIX_MQ),
    (libc::SYS_mq_timedsend, POSIX_MQ),
    (libc::SYS_mq_timedreceive, POSIX_MQ),
    (libc::SYS_mq_notify, POSIX_MQ),
    (libc::SYS_mq_getsetattr, POSIX_MQ),
    (libc::SYS_open_by_handle_at, "no opening files by handle (bypasses path checks)"),
    (libc::SYS_name_to_handle_at, "no file handles"),
    (libc::SYS_mlock, MLOCK),
    (libc::SYS_mlock2, MLOCK),
    (libc::SYS_mlockall, MLOCK),
    (libc::SYS_sched_setaffinity, "no pinning to CPUs (the host shares the machine's cores with the agent)"),
    (libc::SYS_ioprio_set, "no I/O priority changes"),
    (libc::SYS_setpriority, "no priority changes"),
    (libc::SYS_reboot, PRIV),
    (libc::SYS_swapon, PRIV),
    (libc::SYS_swapoff, PRIV),
    (libc::SYS_acct, PRIV),
    (libc::SYS_iopl, PRIV),
    (libc::SYS_ioperm, PRIV),
    (libc::SYS_quotactl, PRIV),
    (libc::SYS_quotactl_fd, PRIV),
    (libc::SYS_setuid, PRIV),
    (libc::SYS_setgid, PRIV),
    (libc::SYS_setreuid, PRIV),
    (libc::SYS_setregid, PRIV),
    (libc::SYS_setresuid, PRIV),
    (libc::SYS_setresgid, PRIV),
    (libc::SYS_setgroups, PRIV),
    (libc::SYS_setfsuid, PRIV),
    (libc::SYS_setfsgid, PRIV),
    (libc::SYS_capset, PRIV),
    (libc::SYS_landlock_create_ruleset, "no Landlock domain of the host's own (nothing needs one; the supervisor's is in force)"),
];

/// The errno `socket(AF_UNIX, …)` fails with in a host: `EACCES`. Failing (rather than
/// killing) keeps glibc working: `getpwuid` and friends first try `socket(AF_UNIX)` to reach
/// nscd and fall back on the files when it fails (bash looks up its user at start-up).
/// The host gets no UNIX socket to connect, bind or listen with either way.
pub const UNIX_SOCKET_ERRNO: i32 = libc::EACCES;

/// Our guard, prepended to seccompiler's program: [`arch_guard`], then fail
/// `socket(AF_UNIX, …)` with [`UNIX_SOCKET_ERRNO`] and `clone3` with [`CLONE3_ERRNO`]
/// (seccompiler has a single match action per program).
fn guard() -> Vec<libc::sock_filter> {
    let mut program = arch_guard();
    program.extend([
        // A = nr (still loaded): clone3?
        insn(BPF_JEQ_K, 0, 1, libc::SYS_clone3 as u32),
        insn(
            BPF_RET_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | CLONE3_ERRNO as u32,
        ),
        // socket?
        insn(BPF_JEQ_K, 0, 3, libc::SYS_socket as u32),
        insn(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARG0_LO),
        insn(BPF_JEQ_K, 0, 1, libc::AF_UNIX as u32),
        insn(
            BPF_RET_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | UNIX_SOCKET_ERRNO as u32,
        ),
    ]);
    program
}

/// What a call outside [`SECCOMP_ALLOW`] (or an allowed call with refused arguments) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyAction {
    /// `SECCOMP_RET_KILL_PROCESS`: the kernel kills the host at once; the parent sees only
    /// signal 31 (SIGSYS). Used where no listener is serviced.
    KillProcess,
    /// `SECCOMP_RET_USER_NOTIF`: the calling thread blocks in the kernel and the filter's
    /// listener (created with `SECCOMP_FILTER_FLAG_NEW_LISTENER`) receives the call. The
    /// call never runs: the supervisor's listener kills the host ([`crate::common::notify`]). Without
    /// a listener the kernel fails such a call with `ENOSYS`, so this variant must only be
    /// installed together with a new listener that the supervisor services.
    Notify,
}

impl DenyAction {
    fn ret(self) -> u32 {
        match self {
            DenyAction::KillProcess => SECCOMP_RET_KILL_PROCESS,
            DenyAction::Notify => libc::SECCOMP_RET_USER_NOTIF,
        }
    }
}

/// Compiles [`SECCOMP_ALLOW`] (match → allow, anything else → kill process) behind the
/// guard. Same as `seccomp_program_for(DenyAction::KillProcess)`.
///
/// # Errors
/// [`PolicyError::Seccomp`] if seccompiler rejects the rules (a bug in this module).
pub fn seccomp_program() -> Result<SeccompProgram, PolicyError> {
    seccomp_program_for(DenyAction::KillProcess)
}

/// The seccompiler rules that allow `when` (an empty chain allows unconditionally).
fn allow_rules(when: AllowWhen) -> Result<Vec<SeccompRule>, PolicyError> {
    let err = |e: seccompiler::BackendError| PolicyError::Seccomp(e.to_string());
    let cond = |arg: u8, op: SeccompCmpOp, v: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, v).map_err(err)
    };
    let rule = |conds: Vec<SeccompCondition>| SeccompRule::new(conds).map_err(err);
    Ok(match when {
        AllowWhen::Always => Vec::new(),
        // One rule: every value differs (the conditions of a rule are ANDed).
        AllowWhen::ArgNotIn { arg, values } => vec![rule(
            values
                .iter()
                .map(|(v, _)| cond(arg, SeccompCmpOp::Ne, *v))
                .collect::<Result<_, _>>()?,
        )?],
        // One rule per value (the rules of a chain are ORed).
        AllowWhen::ArgIn { arg, values } => values
            .iter()
            .map(|(v, _)| rule(vec![cond(arg, SeccompCmpOp::Eq, *v)?]))
            .collect::<Result<_, _>>()?,
        AllowWhen::ArgMaskedIn { arg, mask, values } => values
            .iter()
            .map(|(v, _)| rule(vec![cond(arg, SeccompCmpOp::MaskedEq(mask), *v)?]))
            .collect::<Result<_, _>>()?,
        AllowWhen::UnixStreamPair => vec![rule(vec![
            cond(0, SeccompCmpOp::Eq, libc::AF_UNIX as u64)?,
            // The type is the low 4 bits; the rest are SOCK_NONBLOCK/SOCK_CLOEXEC.
            cond(1, SeccompCmpOp::MaskedEq(0xf), libc::SOCK_STREAM as u64)?,
        ])?],
    })
}

/// Compiles [`SECCOMP_ALLOW`] (match → allow, anything else → `action`) behind the guard,
/// which kills foreign-architecture and x32 calls outright (`SECCOMP_RET_KILL_PROCESS` in
/// either variant) and fails `socket(AF_UNIX)` and `clone3` with an errno. Allowed calls
/// take exactly the same path through the program in both variants; only the return value
/// of a refusal differs.
///
/// # Errors
/// [`PolicyError::Seccomp`] if seccompiler rejects the rules (a bug in this module).
pub fn seccomp_program_for(action: DenyAction) -> Result<SeccompProgram, PolicyError> {
    let err = |e: seccompiler::BackendError| PolicyError::Seccomp(e.to_string());
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for a in SECCOMP_ALLOW {
        if rules.insert(a.nr, allow_rules(a.when)?).is_some() {
            return Err(PolicyError::Seccomp(format!(
                "{:?} is listed twice",
                syscall_name(a.nr)
            )));
        }
    }
    // seccompiler has no user-notification action: compile the refusal as a placeholder
    // (SECCOMP_RET_TRAP, used nowhere else in the program) and rewrite its return
    // instructions to the wanted action.
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Trap,
        SeccompAction::Allow,
        TargetArch::x86_64,
    )
    .map_err(err)?;
    let compiled: BpfProgram = filter.try_into().map_err(err)?;
    let mut filters = guard();
    let mut refusals = 0;
    filters.extend(compiled.into_iter().map(|f| {
        if f.code == BPF_RET_K && f.k == libc::SECCOMP_RET_TRAP {
            refusals += 1;
            insn(f.code, f.jt, f.jf, action.ret())
        } else {
            insn(f.code, f.jt, f.jf, f.k)
        }
    }));
    if refusals == 0 {
        return Err(PolicyError::Seccomp(
            "compiled program refuses nothing (placeholder action not found)".into(),
        ));
    }
    if filters.len() > libc::BPF_MAXINSNS as usize {
        return Err(PolicyError::Seccomp(format!(
            "program too long ({} > {} instructions)",
            filters.len(),
            libc::BPF_MAXINSNS
        )));
    }
    Ok(SeccompProgram::from_instructions(filters))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::seccomp::X32_SYSCALL_BIT;

    fn allowed(nr: i64) -> Option<&'static Allowed> {
        SECCOMP_ALLOW.iter().find(|a| a.nr == nr)
    }

    #[test]
    fn program_starts_with_guard_and_fits() {
        let p = seccomp_program().unwrap();
        assert!(p.len() > 6 && p.len() < 4096, "{}", p.len());
        assert_eq!(p.instructions()[4].k, X32_SYSCALL_BIT);
        // clone3 is answered by the guard, never allowed.
        assert!(allowed(libc::SYS_clone3).is_none());
        assert!(p
            .instructions()
            .iter()
            .any(|f| f.code == BPF_RET_K && f.k == libc::SECCOMP_RET_ERRNO | CLONE3_ERRNO as u32));
    }

    #[test]
    fn variants_differ_only_in_the_refusal_return() {
        let kill = seccomp_program_for(DenyAction::KillProcess).unwrap();
        let notify = seccomp_program_for(DenyAction::Notify).unwrap();
        assert_eq!(kill.len(), notify.len());
        let mut changed = 0;
        for (k, n) in kill.instructions().iter().zip(notify.instructions()) {
            assert_eq!((k.code, k.jt, k.jf), (n.code, n.jt, n.jf));
            if k.k != n.k {
                assert_eq!(k.code, BPF_RET_K);
                assert_eq!(
                    (k.k, n.k),
                    (SECCOMP_RET_KILL_PROCESS, libc::SECCOMP_RET_USER_NOTIF)
                );
                changed += 1;
            }
        }
        // One refusal per allowed call (its arguments did not match) and the default.
        assert!(changed > SECCOMP_ALLOW.len(), "{changed}");
        // The arch and x32 guard kills in both variants.
        for i in [2, 5] {
            assert_eq!(notify.instructions()[i].k, SECCOMP_RET_KILL_PROCESS);
        }
        // No trap placeholder is left, and nothing but allow/kill/notify/errno is returned.
        for f in notify.instructions().iter().filter(|f| f.code == BPF_RET_K) {
            assert!(
                [
                    libc::SECCOMP_RET_ALLOW,
                    SECCOMP_RET_KILL_PROCESS,
                    libc::SECCOMP_RET_USER_NOTIF,
                    libc::SECCOMP_RET_ERRNO | UNIX_SOCKET_ERRNO as u32,
                    libc::SECCOMP_RET_ERRNO | CLONE3_ERRNO as u32,
                ]
                .contains(&f.k),
                "{:#x}",
                f.k
            );
        }
    }

    #[test]
    fn the_allow_list_and_the_never_allowed_list_are_disjoint_and_named() {
        for (nr, why) in NEVER_ALLOWED {
            assert!(
                allowed(*nr).is_none(),
                "{:?} is allowed: {why}",
                syscall_name(*nr)
            );
            assert!(syscall_name(*nr).is_some(), "{nr}");
        }
        let mut seen = std::collections::HashSet::new();
        for a in SECCOMP_ALLOW {
            assert!(seen.insert(a.nr), "{:?} twice", syscall_name(a.nr));
            assert!(syscall_name(a.nr).is_some(), "{}", a.nr);
            assert!(!a.why.is_empty());
        }
    }

    #[test]
    fn every_measured_call_is_allowed() {
        // The union of bench/host_syscalls.sh over the runtime matrix (docs/security.md
        // "The allow-list"); socket and clone3 are answered by the guard.
        for name in "access arch_prctl brk capget clock_gettime close dup2 epoll_create1 \
            epoll_ctl epoll_pwait eventfd2 execveat exit_group fcntl fstat futex getcwd \
            getdents64 getegid geteuid getgid getpgrp getpid getppid getrandom gettid getuid \
            ioctl lseek madvise mmap mprotect munmap newfstatat openat pipe2 pkey_alloc poll \
            prctl pread64 prlimit64 read readlink rseq rt_sigaction rt_sigprocmask \
            set_robust_list set_tid_address sigaltstack statx sysinfo timer_create \
            timer_delete uname write sendmsg"
            .split_whitespace()
        {
            assert!(
                SECCOMP_ALLOW
                    .iter()
                    .any(|a| syscall_name(a.nr) == Some(name)),
                "{name} is not allowed"
            );
        }
    }

    #[test]
    fn clone_namespace_flags() {
        assert_eq!(CLONE_NAMESPACE_MASK & 0xff, 0, "the exit signal byte");
        assert_ne!(CLONE_NAMESPACE_MASK & libc::CLONE_NEWUSER as u64, 0);
        // glibc's thread and fork flags carry none.
        let thread = (libc::CLONE_VM
            | libc::CLONE_FS
            | libc::CLONE_FILES
            | libc::CLONE_SIGHAND
            | libc::CLONE_THREAD
            | libc::CLONE_SYSVSEM
            | libc::CLONE_SETTLS
            | libc::CLONE_PARENT_SETTID
            | libc::CLONE_CHILD_CLEARTID) as u64;
        assert_eq!(thread & CLONE_NAMESPACE_MASK, 0);
    }

    #[test]
    fn syscall_names() {
        assert_eq!(syscall_name(libc::SYS_socket), Some("socket"));
        assert_eq!(syscall_name(libc::SYS_read), Some("read"));
        assert_eq!(syscall_name(libc::SYS_kcmp), Some("kcmp"));
        assert_eq!(syscall_name(libc::SYS_mq_open), Some("mq_open"));
        assert_eq!(
            syscall_name(libc::SYS_io_uring_setup),
            Some("io_uring_setup")
        );
        assert_eq!(syscall_name(SYS_SETXATTRAT), Some("setxattrat"));
        assert_eq!(syscall_name(SYS_FILE_SETATTR), Some("file_setattr"));
        assert_eq!(syscall_name(400), None);
    }

    #[test]
    fn ioctl_numbers_match_the_kernel_headers() {
        let named = |n: &str| {
            DENIED_IOCTLS
                .iter()
                .find(|(_, w)| w.starts_with(n))
                .unwrap()
                .0
        };
        assert_eq!(named("FS_IOC_SETFLAGS "), libc::FS_IOC_SETFLAGS);
        assert_eq!(named("FS_IOC32_SETFLAGS"), libc::FS_IOC32_SETFLAGS);
        assert_eq!(named("FIFREEZE"), 0xC004_5877);
        assert_eq!(named("FITHAW"), 0xC004_5878);
        assert_eq!(named("EXT4_IOC_SHUTDOWN"), 0x8004_587D);
        assert_eq!(named("FS_IOC_FSSETXATTR"), 0x401C_5820);
    }
}
