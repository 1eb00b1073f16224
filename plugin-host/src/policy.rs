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
//!   `accept`, `accept4` are in [`SECCOMP_DENY`]: no Landlock ABI up to 7 restricts
//!   `connect()` to a *pathname* socket (docs/security.md "UNIX sockets").
//! * [`SECCOMP_DENY`]: the system calls a host may not make; every other call is allowed
//!   (Landlock does the path-based work). [`seccomp_program`] compiles it with
//!   `SECCOMP_RET_KILL_PROCESS` on a match; [`seccomp_program_for`] with
//!   [`DenyAction::Notify`] compiles the same rules with `SECCOMP_RET_USER_NOTIF` instead, so
//!   the supervisor can learn which call it was before killing the host (see
//!   [`crate::notify`]). Both sit behind a guard that kills foreign-architecture and x32
//!   calls outright (`SECCOMP_RET_KILL_PROCESS` in either variant).
//!
//! Both are built in the supervisor *before* the fork (see [`crate::launch`]).
//! The source of each rule is `docs/protocol.md` §8 (what a confined host can do) and
//! `docs/design-notes.md`, "Implementation notes".

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::pin::{Interpreter, VerifiedExecutable};

/// The newest Landlock ABI this policy was written and tested against. Newer kernels are
/// used at this level (rights introduced later are not handled, i.e. not restricted).
pub const POLICY_LANDLOCK_ABI: u32 = 7;

/// The dynamic loader every dynamically linked host needs (x86_64 psABI path; canonicalized
/// before use, on merged-/usr systems it lives in /usr/lib/x86_64-linux-gnu).
pub const DYNAMIC_LOADER: &str = "/lib64/ld-linux-x86-64.so.2";

/// A kind of access granted on a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsAccess {
    /// Read and execute one file (a program or the loader).
    ReadExecute,
    /// Read files and list directories beneath the path; no execute, no write.
    ReadOnly,
    /// Read, write, create and remove files and directories beneath the path (no execute, no
    /// device nodes).
    ReadWrite,
    /// Read and write an existing device file (`/dev/null`), including `O_TRUNC` and ioctls.
    Device,
    /// Read, list and execute beneath the path; no write (the agent's system and toolchain
    /// trees, [`crate::agent_policy`]).
    ReadExecuteTree,
    /// Everything [`FsAccess::ReadWrite`] allows, plus execute (the agent's work tree, its
    /// own state and TMPDIR: it builds and runs programs there).
    ReadWriteExecute,
}

impl FsAccess {
    /// The Landlock rights of this kind at `abi`.
    pub fn rights(self, abi: ABI) -> BitFlags<AccessFs> {
        let all = AccessFs::from_all(abi);
        let r = match self {
            FsAccess::ReadExecute => AccessFs::ReadFile | AccessFs::Execute,
            FsAccess::ReadOnly => AccessFs::ReadFile | AccessFs::ReadDir,
            FsAccess::ReadWrite => {
                AccessFs::from_all(abi)
                    & !(AccessFs::Execute
                        | AccessFs::MakeChar
                        | AccessFs::MakeBlock
                        | AccessFs::IoctlDev)
            }
            FsAccess::Device => {
                AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev
            }
            FsAccess::ReadExecuteTree => AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute,
            FsAccess::ReadWriteExecute => {
                AccessFs::from_all(abi)
                    & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev)
            }
        };
        r & all
    }
}

/// One Landlock grant: `access` on `path` (a file, or a directory and everything beneath).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsGrant {
    /// The path (canonical where it matters; Landlock follows symlinks when opening it).
    pub path: PathBuf,
    /// What is allowed.
    pub access: FsAccess,
    /// Why the host needs it.
    pub why: &'static str,
    /// If false, a missing path is skipped (system library locations vary); if true, a
    /// missing path is an error.
    pub required: bool,
    /// If true, the rule is added through the verified executable's open descriptor rather
    /// than by opening `path` again, so it names the inode that was hashed even if the path
    /// was replaced since.
    pub via_verified_fd: bool,
}

/// Why a policy could not be built.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A required path of the policy could not be opened.
    #[error(
        "landlock policy: cannot open {path} ({reason}); it must exist before the host starts"
    )]
    Path {
        /// The path.
        path: PathBuf,
        /// The error.
        reason: String,
    },
    /// The kernel rejected the ruleset.
    #[error("landlock policy: {0}; check `agent-runner doctor` for the kernel's Landlock support")]
    Landlock(#[from] landlock::RulesetError),
    /// The kernel has no Landlock.
    #[error("landlock policy: Landlock is not available on this kernel; use a lower sandbox tier or enable Landlock")]
    LandlockUnavailable,
    /// The seccomp filter could not be compiled.
    #[error("seccomp policy: {0}")]
    Seccomp(String),
}

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

/// Reviewed data: credential directories and files under the home directory that no grant
/// may cover implicitly (docs/security.md). An operator's `read_paths` entry that contains
/// one of them (`~`, `~/.config`) is refused; naming one exactly (or a path inside it) is
/// a deliberate choice and allowed.
pub const CREDENTIAL_PATHS: &[(&str, &str)] = &[
    (".ssh", "SSH keys"),
    (".aws", "AWS credentials"),
    (".config/gcloud", "Google Cloud credentials"),
    (".claude", "Claude Code credentials"),
    (".claude.json", "Claude Code account state"),
    (".gnupg", "GnuPG keys"),
    (".netrc", "passwords for hosts"),
    (".docker", "registry credentials"),
    (".kube", "Kubernetes credentials"),
    (".config/gh", "GitHub CLI token"),
    (".azure", "Azure credentials"),
    (".git-credentials", "git's stored passwords"),
    (".gemini", "Gemini CLI credentials"),
];

/// The first of `protected` that `path` covers without naming it: `path` is a strict
/// ancestor of it. `None` when `path` is safe to grant read-only.
pub fn covers_protected<'a>(path: &Path, protected: &'a [PathBuf]) -> Option<&'a PathBuf> {
    protected
        .iter()
        .find(|p| p.starts_with(path) && p.as_path() != path)
}

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

/// Builds the Landlock ruleset for `grants` (those marked `via_verified_fd` through
/// `verified`, the verified executable's descriptor) on a kernel with Landlock ABI `kernel_abi` and
/// returns its file descriptor (to be passed to `landlock_restrict_self` in the child).
///
/// All filesystem rights of `min(kernel_abi, POLICY_LANDLOCK_ABI)` are handled (hard
/// requirement); at ABI ≥ 4 TCP bind and connect are handled and not granted; at ABI ≥ 6
/// the abstract-unix-socket and signal scopes are set.
///
/// # Errors
/// [`PolicyError`] if a required path is missing or the kernel rejects the ruleset.
pub fn landlock_ruleset(
    grants: &[FsGrant],
    verified: &File,
    kernel_abi: u32,
) -> Result<OwnedFd, PolicyError> {
    let level = kernel_abi.min(POLICY_LANDLOCK_ABI);
    if level == 0 {
        return Err(PolicyError::LandlockUnavailable);
    }
    let abi = ABI::from(level as i32);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))?;
    if level >= 4 {
        // No network: TCP bind/connect handled, no rule grants them (docs/protocol.md §8).
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    if level >= 6 {
        // No abstract unix sockets outside the host's domain, no signals to processes
        // outside the host (docs/protocol.md §8).
        ruleset = ruleset.scope(Scope::from_all(abi))?;
    }
    let mut created = ruleset.create()?;
    for grant in grants {
        if grant.via_verified_fd {
            let is_dir = verified.metadata().map(|m| m.is_dir()).unwrap_or(false);
            let mut rights = grant.access.rights(abi);
            if !is_dir {
                rights &= AccessFs::from_file(abi);
            }
            created = created.add_rule(PathBeneath::new(verified.as_fd(), rights))?;
            continue;
        }
        let fd = match PathFd::new(&grant.path) {
            Ok(fd) => fd,
            Err(_) if !grant.required && !grant.path.exists() => continue,
            Err(e) => {
                return Err(PolicyError::Path {
                    path: grant.path.clone(),
                    reason: e.to_string(),
                })
            }
        };
        let is_dir = std::fs::metadata(&grant.path)
            .map(|m| m.is_dir())
            .unwrap_or(false);
        let mut rights = grant.access.rights(abi);
        if !is_dir {
            rights &= AccessFs::from_file(abi);
        }
        created = created.add_rule(PathBeneath::new(fd, rights))?;
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or(PolicyError::LandlockUnavailable)
}

/// When a denied system call kills the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyWhen {
    /// Always.
    Always,
    /// When argument 0 (the address family) is not `AF_UNIX`.
    FamilyNotUnix,
    /// `socketpair`: when argument 0 is not `AF_UNIX` or the type (argument 1 without the
    /// `SOCK_NONBLOCK`/`SOCK_CLOEXEC` flags) is not `SOCK_STREAM`: a datagram or seqpacket
    /// pair could `sendto`/`sendmsg` an explicit pathname address, a stream pair cannot.
    NotUnixStreamPair,
    /// When argument 0 is neither `0xffffffff` (query) nor `0` (`PER_LINUX`, the default).
    PersonalityChange,
    /// When the low 32 bits of argument `arg` are one of `values` (each with its name).
    /// Only for `int`/`unsigned int` arguments, which the kernel truncates to 32 bits itself
    /// (the `option` of `prctl`, the `request` of `ioctl`).
    ArgIn {
        /// The argument's index (0-based).
        arg: u8,
        /// The denied values and their names.
        values: &'static [(u64, &'static str)],
    },
    /// When the low 32 bits of argument `arg` are not 0 (the `mode` of `fallocate`).
    ArgNonZero(u8),
    /// When the low 32 bits of argument `arg`, masked with `mask`, are one of `values`
    /// (the policy of `sched_setscheduler`, flags masked off).
    ArgMaskedIn {
        /// The argument's index (0-based).
        arg: u8,
        /// The mask applied first.
        mask: u64,
        /// The denied values and their names.
        values: &'static [(u64, &'static str)],
    },
}

/// One entry of the seccomp deny-list.
#[derive(Debug, Clone, Copy)]
pub struct Denial {
    /// The x86_64 system call number.
    pub nr: i64,
    /// Its name.
    pub name: &'static str,
    /// When it is denied.
    pub when: DenyWhen,
    /// Why.
    pub why: &'static str,
}

macro_rules! deny {
    ($sys:ident, $when:expr, $why:expr) => {
        Denial {
            nr: libc::$sys,
            name: stringify!($sys),
            when: $when,
            why: $why,
        }
    };
    ($sys:ident = $nr:expr, $when:expr, $why:expr) => {
        Denial {
            nr: $nr,
            name: stringify!($sys),
            when: $when,
            why: $why,
        }
    };
}

const NET: &str = "no network: no IP, packet or netlink sockets (socket(AF_UNIX) fails with EACCES instead, see UNIX_SOCKET_ERRNO)";
const PAIR: &str = "only socketpair(AF_UNIX, SOCK_STREAM): tokio, Python's asyncio and libuv make their wake-up channels with it";
const UNIX: &str = "no UNIX-socket addresses: the only sockets a host can have are its own socketpair()s, which never need connect, bind, listen or accept (pathname sockets are not covered by Landlock up to ABI 7)";
const NS: &str = "no mounts or namespaces";
const META: &str = "no file metadata changes: Landlock up to ABI 7 does not cover chmod, chown, utime or extended attributes, so a host could open up ~/.ssh, plant a set-user-ID copy of itself or a security.capability attribute (no runtime of the matrix makes these calls, measured: docs/security.md \"File metadata\")";
const GROUP: &str = "no leaving the host's process group or session: the supervisor kills the host by its group (no PID namespace without privilege and without user namespaces)";
const CLOCK: &str = "no setting the system clock";
const HOSTNAME: &str = "no setting the host name";
const SYSV: &str = "no System V IPC: Landlock does not cover it, and outside a private IPC namespace a host could read other processes' shared memory";
const PRIV: &str = "no privileged operation, even where a capability is left (the host's capabilities are dropped before exec)";

/// `_IOC(dir, type, nr, size)` of `<asm-generic/ioctl.h>`.
const fn ioc(dir: u64, ty: u8, nr: u8, size: u64) -> u64 {
    (dir << 30) | (size << 16) | ((ty as u64) << 8) | nr as u64
}
const IOC_WRITE: u64 = 1;
const IOC_READ: u64 = 2;

/// Reviewed data: the `ioctl` requests no host may make, on any descriptor. Landlock's
/// `IOCTL_DEV` right (ABI 5) only covers device files; these act on the *filesystem* of any
/// file or directory the host can open, even read-only (docs/security.md "What Landlock
/// does not cover").
pub const DENIED_IOCTLS: &[(u64, &str)] = &[
    (libc::TIOCSTI, "TIOCSTI (types into a terminal)"),
    (libc::TIOCLINUX, "TIOCLINUX (console tricks)"),
    (libc::TIOCSCTTY, "TIOCSCTTY (steals a controlling terminal)"),
    (libc::TIOCCONS, "TIOCCONS (redirects the console)"),
    (libc::TIOCSETD, "TIOCSETD (loads a line discipline)"),
    (
        ioc(IOC_READ | IOC_WRITE, b'X', 119, 4),
        "FIFREEZE (every write to the filesystem blocks)",
    ),
    (ioc(IOC_READ | IOC_WRITE, b'X', 120, 4), "FITHAW"),
    (
        ioc(IOC_READ, b'X', 125, 4),
        "EXT4_IOC_SHUTDOWN / XFS_IOC_GOINGDOWN (shuts the filesystem down)",
    ),
    (
        ioc(IOC_WRITE, b'f', 2, 8),
        "FS_IOC_SETFLAGS (immutable, append-only, ... inode flags)",
    ),
    (ioc(IOC_WRITE, b'f', 2, 4), "FS_IOC32_SETFLAGS"),
    (
        ioc(IOC_WRITE, b'v', 2, 8),
        "FS_IOC_SETVERSION (inode generation)",
    ),
    (ioc(IOC_WRITE, b'v', 2, 4), "FS_IOC32_SETVERSION"),
    (
        ioc(IOC_WRITE, b'X', 32, 28),
        "FS_IOC_FSSETXATTR (inode flags, project id)",
    ),
    (
        ioc(IOC_WRITE, 0x94, 50, 256),
        "FS_IOC_SETFSLABEL (renames the filesystem)",
    ),
    (ioc(IOC_READ, b'f', 19, 12), "FS_IOC_SET_ENCRYPTION_POLICY"),
    (
        ioc(IOC_READ | IOC_WRITE, b'f', 23, 80),
        "FS_IOC_ADD_ENCRYPTION_KEY",
    ),
    (ioc(IOC_WRITE, b'f', 133, 128), "FS_IOC_ENABLE_VERITY"),
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

/// Reviewed data: the scheduling policies no host may take (`sched_setscheduler`, flags such
/// as `SCHED_RESET_ON_FORK` masked off).
pub const DENIED_SCHED_POLICIES: &[(u64, &str)] = &[
    (libc::SCHED_FIFO as u64, "SCHED_FIFO"),
    (libc::SCHED_RR as u64, "SCHED_RR"),
    (6, "SCHED_DEADLINE"),
];

/// `setxattrat(2)` (Linux 6.13), not yet in the libc crate.
const SYS_SETXATTRAT: i64 = 463;
/// `removexattrat(2)` (Linux 6.13).
const SYS_REMOVEXATTRAT: i64 = 466;
/// `file_setattr(2)` (Linux 6.17): `FS_IOC_FSSETXATTR` by path.
const SYS_FILE_SETATTR: i64 = 469;

/// The seccomp deny-list (docs/protocol.md §8 "cannot do"); a match kills the whole host process
/// (`SECCOMP_RET_KILL_PROCESS`, the parent sees signal 31, SIGSYS), or with
/// [`DenyAction::Notify`] stops the calling thread in the kernel until the supervisor has read
/// the notification and killed the host. `clone3` is deliberately *not* here: glibc's
/// `pthread_create` uses it.
pub const SECCOMP_DENY: &[Denial] = &[
    deny!(SYS_socket, DenyWhen::FamilyNotUnix, NET),
    deny!(SYS_socketpair, DenyWhen::NotUnixStreamPair, PAIR),
    deny!(SYS_connect, DenyWhen::Always, UNIX),
    deny!(SYS_bind, DenyWhen::Always, UNIX),
    deny!(SYS_listen, DenyWhen::Always, UNIX),
    deny!(SYS_accept, DenyWhen::Always, UNIX),
    deny!(SYS_accept4, DenyWhen::Always, UNIX),
    deny!(SYS_ptrace, DenyWhen::Always, "no ptrace"),
    deny!(SYS_process_vm_readv, DenyWhen::Always, "no reading other processes' memory"),
    deny!(SYS_process_vm_writev, DenyWhen::Always, "no writing other processes' memory"),
    deny!(SYS_bpf, DenyWhen::Always, "no bpf"),
    deny!(SYS_io_uring_setup, DenyWhen::Always, "no io_uring (bypasses seccomp for its operations)"),
    deny!(SYS_io_uring_enter, DenyWhen::Always, "no io_uring"),
    deny!(SYS_io_uring_register, DenyWhen::Always, "no io_uring"),
    deny!(SYS_perf_event_open, DenyWhen::Always, "no perf events"),
    deny!(SYS_userfaultfd, DenyWhen::Always, "no userfaultfd (kernel exploitation aid)"),
    deny!(SYS_keyctl, DenyWhen::Always, "no kernel keyrings"),
    deny!(SYS_add_key, DenyWhen::Always, "no kernel keyrings"),
    deny!(SYS_request_key, DenyWhen::Always, "no kernel keyrings"),
    deny!(SYS_mount, DenyWhen::Always, NS),
    deny!(SYS_umount2, DenyWhen::Always, NS),
    deny!(SYS_pivot_root, DenyWhen::Always, NS),
    deny!(SYS_chroot, DenyWhen::Always, NS),
    deny!(SYS_unshare, DenyWhen::Always, NS),
    deny!(SYS_setns, DenyWhen::Always, NS),
    deny!(SYS_open_tree, DenyWhen::Always, NS),
    deny!(SYS_move_mount, DenyWhen::Always, NS),
    deny!(SYS_fsopen, DenyWhen::Always, NS),
    deny!(SYS_fsconfig, DenyWhen::Always, NS),
    deny!(SYS_fsmount, DenyWhen::Always, NS),
    deny!(SYS_fspick, DenyWhen::Always, NS),
    deny!(SYS_kexec_load, DenyWhen::Always, "no kernel replacement"),
    deny!(SYS_kexec_file_load, DenyWhen::Always, "no kernel replacement"),
    deny!(SYS_init_module, DenyWhen::Always, "no kernel modules"),
    deny!(SYS_finit_module, DenyWhen::Always, "no kernel modules"),
    deny!(SYS_delete_module, DenyWhen::Always, "no kernel modules"),
    deny!(
        SYS_personality,
        DenyWhen::PersonalityChange,
        "no execution-domain changes (e.g. READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE)"
    ),
    deny!(
        SYS_ioctl,
        DenyWhen::ArgIn { arg: 1, values: DENIED_IOCTLS },
        "no terminal injection and no filesystem-wide or inode-flag ioctls (DENIED_IOCTLS)"
    ),
    deny!(SYS_chmod, DenyWhen::Always, META),
    deny!(SYS_fchmod, DenyWhen::Always, META),
    deny!(SYS_fchmodat, DenyWhen::Always, META),
    deny!(SYS_fchmodat2, DenyWhen::Always, META),
    deny!(SYS_chown, DenyWhen::Always, META),
    deny!(SYS_fchown, DenyWhen::Always, META),
    deny!(SYS_lchown, DenyWhen::Always, META),
    deny!(SYS_fchownat, DenyWhen::Always, META),
    deny!(SYS_utime, DenyWhen::Always, META),
    deny!(SYS_utimes, DenyWhen::Always, META),
    deny!(SYS_utimensat, DenyWhen::Always, META),
    deny!(SYS_futimesat, DenyWhen::Always, META),
    deny!(SYS_setxattr, DenyWhen::Always, META),
    deny!(SYS_lsetxattr, DenyWhen::Always, META),
    deny!(SYS_fsetxattr, DenyWhen::Always, META),
    deny!(SYS_setxattrat = SYS_SETXATTRAT, DenyWhen::Always, META),
    deny!(SYS_removexattr, DenyWhen::Always, META),
    deny!(SYS_lremovexattr, DenyWhen::Always, META),
    deny!(SYS_fremovexattr, DenyWhen::Always, META),
    deny!(SYS_removexattrat = SYS_REMOVEXATTRAT, DenyWhen::Always, META),
    deny!(SYS_file_setattr = SYS_FILE_SETATTR, DenyWhen::Always, META),
    deny!(
        SYS_fallocate,
        DenyWhen::ArgNonZero(1),
        "only plain fallocate (mode 0, bounded by RLIMIT_FSIZE): KEEP_SIZE allocates past the file size unbounded, the range modes rewrite files in place"
    ),
    deny!(
        SYS_prctl,
        DenyWhen::ArgIn { arg: 0, values: DENIED_PRCTLS },
        "the death signal and the seccomp filter are the supervisor's (DENIED_PRCTLS)"
    ),
    deny!(SYS_seccomp, DenyWhen::Always, "no seccomp filter of the host's own (it could probe denied calls with errno returns, unrecorded)"),
    deny!(SYS_setsid, DenyWhen::Always, GROUP),
    deny!(SYS_setpgid, DenyWhen::Always, GROUP),
    deny!(
        SYS_flock,
        DenyWhen::Always,
        "no flock: a host could hold the project lock (agent-runner.lock, readable where log_dir is the state dir) and refuse every later round"
    ),
    deny!(SYS_fanotify_init, DenyWhen::Always, "no fanotify (watches and blocks other processes' file access disk-wide)"),
    deny!(SYS_fanotify_mark, DenyWhen::Always, "no fanotify"),
    deny!(
        SYS_inotify_add_watch,
        DenyWhen::Always,
        "no inotify watches: Landlock does not check them, a watch on ~/.ssh leaks the names of new files"
    ),
    deny!(
        SYS_memfd_create,
        DenyWhen::Always,
        "no memfd: executing one runs code that was never hashed (Landlock does not check the exec of an anonymous file)"
    ),
    deny!(SYS_memfd_secret, DenyWhen::Always, "no secret memory areas"),
    deny!(SYS_vhangup, DenyWhen::Always, "no hanging up the operator's terminal"),
    deny!(SYS_settimeofday, DenyWhen::Always, CLOCK),
    deny!(SYS_clock_settime, DenyWhen::Always, CLOCK),
    deny!(SYS_adjtimex, DenyWhen::Always, CLOCK),
    deny!(SYS_clock_adjtime, DenyWhen::Always, CLOCK),
    deny!(SYS_sethostname, DenyWhen::Always, HOSTNAME),
    deny!(SYS_setdomainname, DenyWhen::Always, HOSTNAME),
    deny!(
        SYS_sched_setscheduler,
        DenyWhen::ArgMaskedIn { arg: 1, mask: 0xbfff_ffff, values: DENIED_SCHED_POLICIES },
        "no real-time scheduling (a SCHED_FIFO loop starves the machine)"
    ),
    deny!(SYS_sched_setattr, DenyWhen::Always, "no scheduling attributes (its policy is in memory, where seccomp cannot look)"),
    deny!(SYS_syslog, DenyWhen::Always, "no reading or clearing the kernel log"),
    deny!(SYS_shmget, DenyWhen::Always, SYSV),
    deny!(SYS_shmat, DenyWhen::Always, SYSV),
    deny!(SYS_shmctl, DenyWhen::Always, SYSV),
    deny!(SYS_shmdt, DenyWhen::Always, SYSV),
    deny!(SYS_msgget, DenyWhen::Always, SYSV),
    deny!(SYS_msgsnd, DenyWhen::Always, SYSV),
    deny!(SYS_msgrcv, DenyWhen::Always, SYSV),
    deny!(SYS_msgctl, DenyWhen::Always, SYSV),
    deny!(SYS_semget, DenyWhen::Always, SYSV),
    deny!(SYS_semop, DenyWhen::Always, SYSV),
    deny!(SYS_semtimedop, DenyWhen::Always, SYSV),
    deny!(SYS_semctl, DenyWhen::Always, SYSV),
    deny!(SYS_open_by_handle_at, DenyWhen::Always, "no opening files by handle (bypasses path checks)"),
    deny!(SYS_name_to_handle_at, DenyWhen::Always, "no file handles"),
    deny!(SYS_reboot, DenyWhen::Always, PRIV),
    deny!(SYS_swapon, DenyWhen::Always, PRIV),
    deny!(SYS_swapoff, DenyWhen::Always, PRIV),
    deny!(SYS_acct, DenyWhen::Always, PRIV),
    deny!(SYS_iopl, DenyWhen::Always, PRIV),
    deny!(SYS_ioperm, DenyWhen::Always, PRIV),
    deny!(SYS_quotactl, DenyWhen::Always, PRIV),
    deny!(SYS_quotactl_fd, DenyWhen::Always, PRIV),
];

/// A compiled seccomp filter, ready for `seccomp(SECCOMP_SET_MODE_FILTER, ...)`.
pub struct SeccompProgram {
    filters: Vec<libc::sock_filter>,
}

impl std::fmt::Debug for SeccompProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SeccompProgram({} instructions)", self.filters.len())
    }
}

impl SeccompProgram {
    /// Number of BPF instructions.
    pub fn len(&self) -> usize {
        self.filters.len()
    }

    /// Whether the program is empty (never true for a built program).
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// The `sock_fprog` pointing into this program (valid while `self` lives, unmoved
    /// contents: the instructions are heap-allocated and never modified).
    pub(crate) fn fprog(&self) -> libc::sock_fprog {
        libc::sock_fprog {
            len: self.filters.len() as libc::c_ushort,
            filter: self.filters.as_ptr() as *mut libc::sock_filter,
        }
    }
}

const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;
/// Offset of the low 32 bits of `args[0]` in `struct seccomp_data` (little-endian).
const SECCOMP_DATA_ARG0_LO: u32 = 16;
const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The errno `socket(AF_UNIX, …)` fails with in a host: `EACCES`. Failing (rather than
/// killing) keeps glibc working: `getpwuid` and friends first try `socket(AF_UNIX)` to reach
/// nscd and fall back on the files when it fails (bash looks up its user at start-up).
/// The host gets no UNIX socket to connect, bind or listen with either way.
pub const UNIX_SOCKET_ERRNO: i32 = libc::EACCES;

/// Our guard, prepended to seccompiler's program: kill any call made with a foreign
/// architecture and any x86_64 call with the x32 bit (0x40000000) set, which seccompiler
/// does not check (x32 numbers alias the x86_64 ones); then fail `socket(AF_UNIX, …)`
/// with [`UNIX_SOCKET_ERRNO`] (seccompiler has a single match action per program).
/// The instructions of [`guard`] that check the architecture and the x32 bit (the rest is
/// the `socket(AF_UNIX)` rule).
const ARCH_GUARD_LEN: usize = 6;

fn guard() -> Vec<libc::sock_filter> {
    vec![
        insn(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARCH),
        insn(BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        insn(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        insn(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_NR),
        insn(BPF_JSET_K, 0, 1, X32_SYSCALL_BIT),
        insn(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        // A = nr (still loaded): socket?
        insn(BPF_JEQ_K, 0, 3, libc::SYS_socket as u32),
        insn(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARG0_LO),
        insn(BPF_JEQ_K, 0, 1, libc::AF_UNIX as u32),
        insn(
            BPF_RET_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | UNIX_SOCKET_ERRNO as u32,
        ),
    ]
}

/// The name of an x86_64 system call of [`SECCOMP_DENY`] (`"socket"`, `"ptrace"`, ...), or
/// `None` for any other number.
pub fn syscall_name(nr: i64) -> Option<&'static str> {
    SECCOMP_DENY
        .iter()
        .find(|d| d.nr == nr)
        .map(|d| d.name.strip_prefix("SYS_").unwrap_or(d.name))
}

/// What a match of [`SECCOMP_DENY`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyAction {
    /// `SECCOMP_RET_KILL_PROCESS`: the kernel kills the host at once; the parent sees only
    /// signal 31 (SIGSYS).
    KillProcess,
    /// `SECCOMP_RET_USER_NOTIF`: the calling thread blocks in the kernel and the filter's
    /// listener (created with `SECCOMP_FILTER_FLAG_NEW_LISTENER`) receives the call. The
    /// call never runs: the supervisor's listener kills the host ([`crate::notify`]). Without
    /// a listener the kernel fails such a call with `ENOSYS`, so this variant must only be
    /// installed together with a new listener that the supervisor services.
    Notify,
}

impl DenyAction {
    pub(crate) fn ret(self) -> u32 {
        match self {
            DenyAction::KillProcess => SECCOMP_RET_KILL_PROCESS,
            DenyAction::Notify => libc::SECCOMP_RET_USER_NOTIF,
        }
    }
}

/// Compiles [`SECCOMP_DENY`] (default allow, match → kill process) behind the x32/arch guard.
/// Same as `seccomp_program_for(DenyAction::KillProcess)`.
///
/// # Errors
/// [`PolicyError::Seccomp`] if seccompiler rejects the rules (a bug in this module).
pub fn seccomp_program() -> Result<SeccompProgram, PolicyError> {
    seccomp_program_for(DenyAction::KillProcess)
}

/// Compiles [`SECCOMP_DENY`] (default allow, match → `action`) behind the x32/arch guard,
/// which always kills the process. Allowed calls take exactly the same path through the
/// program in both variants; only the return value of the deny rules differs.
///
/// # Errors
/// [`PolicyError::Seccomp`] if seccompiler rejects the rules (a bug in this module).
pub fn seccomp_program_for(action: DenyAction) -> Result<SeccompProgram, PolicyError> {
    compile_deny_list(SECCOMP_DENY, action.ret(), true)
}

/// Compiles `deny` (default allow, a match returns `ret`) behind the arch/x32 guard; with
/// `unix_socket_errno`, `socket(AF_UNIX, …)` fails with [`UNIX_SOCKET_ERRNO`] first (the
/// hosts' rule). Shared by the hosts' program and the agent's
/// ([`crate::agent_policy::agent_seccomp_program`]).
///
/// # Errors
/// [`PolicyError::Seccomp`] if seccompiler rejects the rules (a bug in the list).
pub(crate) fn compile_deny_list(
    deny: &[Denial],
    ret: u32,
    unix_socket_errno: bool,
) -> Result<SeccompProgram, PolicyError> {
    let err = |e: seccompiler::BackendError| PolicyError::Seccomp(e.to_string());
    let cond = |arg: u8, op: SeccompCmpOp, v: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, v).map_err(err)
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for d in deny {
        let chain = match d.when {
            DenyWhen::Always => Vec::new(),
            DenyWhen::FamilyNotUnix => {
                vec![
                    SeccompRule::new(vec![cond(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?])
                        .map_err(err)?,
                ]
            }
            DenyWhen::NotUnixStreamPair => {
                let mut chain =
                    vec![
                        SeccompRule::new(vec![cond(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?])
                            .map_err(err)?,
                    ];
                // Any type but SOCK_STREAM (the low 4 bits; the rest are flags).
                for ty in [
                    libc::SOCK_DGRAM,
                    libc::SOCK_RAW,
                    libc::SOCK_RDM,
                    libc::SOCK_SEQPACKET,
                    libc::SOCK_DCCP,
                    10, // SOCK_PACKET (deprecated in libc)
                ] {
                    chain.push(
                        SeccompRule::new(vec![cond(1, SeccompCmpOp::MaskedEq(0xf), ty as u64)?])
                            .map_err(err)?,
                    );
                }
                chain
            }
            DenyWhen::PersonalityChange => vec![SeccompRule::new(vec![
                cond(0, SeccompCmpOp::Ne, 0xffff_ffff)?,
                cond(0, SeccompCmpOp::Ne, 0)?,
            ])
            .map_err(err)?],
            DenyWhen::ArgIn { arg, values } => values
                .iter()
                .map(|(v, _)| SeccompRule::new(vec![cond(arg, SeccompCmpOp::Eq, *v)?]).map_err(err))
                .collect::<Result<_, _>>()?,
            DenyWhen::ArgNonZero(arg) => {
                vec![SeccompRule::new(vec![cond(arg, SeccompCmpOp::Ne, 0)?]).map_err(err)?]
            }
            DenyWhen::ArgMaskedIn { arg, mask, values } => values
                .iter()
                .map(|(v, _)| {
                    SeccompRule::new(vec![cond(arg, SeccompCmpOp::MaskedEq(mask), *v)?])
                        .map_err(err)
                })
                .collect::<Result<_, _>>()?,
        };
        rules.insert(d.nr, chain);
    }
    // seccompiler has no user-notification action: compile the rules with a placeholder
    // action (SECCOMP_RET_TRAP, used nowhere else in the program) and rewrite its return
    // instructions to the wanted action.
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Trap,
        TargetArch::x86_64,
    )
    .map_err(err)?;
    let compiled: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| PolicyError::Seccomp(e.to_string()))?;
    let mut filters = guard();
    if !unix_socket_errno {
        filters.truncate(ARCH_GUARD_LEN);
    }
    let mut denials = 0;
    filters.extend(compiled.into_iter().map(|f| {
        if f.code == BPF_RET_K && f.k == libc::SECCOMP_RET_TRAP {
            denials += 1;
            insn(f.code, f.jt, f.jf, ret)
        } else {
            insn(f.code, f.jt, f.jf, f.k)
        }
    }));
    if denials == 0 {
        return Err(PolicyError::Seccomp(
            "compiled program has no deny rule (placeholder action not found)".into(),
        ));
    }
    if filters.len() > libc::BPF_MAXINSNS as usize {
        return Err(PolicyError::Seccomp(format!(
            "program too long ({} > {} instructions)",
            filters.len(),
            libc::BPF_MAXINSNS
        )));
    }
    Ok(SeccompProgram { filters })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_starts_with_guard_and_fits() {
        let p = seccomp_program().unwrap();
        assert!(p.len() > 6 && p.len() < 4096);
        assert_eq!(p.filters[4].k, X32_SYSCALL_BIT);
        assert!(!SECCOMP_DENY.iter().any(|d| d.nr == libc::SYS_clone3));
    }

    #[test]
    fn variants_differ_only_in_the_deny_return() {
        let kill = seccomp_program_for(DenyAction::KillProcess).unwrap();
        let notify = seccomp_program_for(DenyAction::Notify).unwrap();
        assert_eq!(kill.len(), notify.len());
        let mut changed = 0;
        for (k, n) in kill.filters.iter().zip(&notify.filters) {
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
        assert!(changed >= SECCOMP_DENY.len(), "{changed}");
        // The arch and x32 guard kills in both variants.
        for i in [2, 5] {
            assert_eq!(notify.filters[i].k, SECCOMP_RET_KILL_PROCESS);
        }
        // No trap placeholder is left, and nothing but allow/kill/notify is returned.
        for f in notify.filters.iter().filter(|f| f.code == BPF_RET_K) {
            assert!(
                [
                    libc::SECCOMP_RET_ALLOW,
                    SECCOMP_RET_KILL_PROCESS,
                    libc::SECCOMP_RET_USER_NOTIF,
                    libc::SECCOMP_RET_ERRNO | UNIX_SOCKET_ERRNO as u32,
                ]
                .contains(&f.k),
                "{:#x}",
                f.k
            );
        }
    }

    #[test]
    fn syscall_names() {
        assert_eq!(syscall_name(libc::SYS_socket), Some("socket"));
        assert_eq!(
            syscall_name(libc::SYS_io_uring_setup),
            Some("io_uring_setup")
        );
        assert_eq!(syscall_name(libc::SYS_read), None);
        assert!(SECCOMP_DENY.iter().all(|d| syscall_name(d.nr).is_some()));
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
        assert_eq!(syscall_name(SYS_SETXATTRAT), Some("setxattrat"));
    }

    #[test]
    fn rights_are_what_they_say() {
        let abi = ABI::V7;
        assert!(!FsAccess::ReadOnly.rights(abi).contains(AccessFs::Execute));
        assert!(!FsAccess::ReadOnly.rights(abi).contains(AccessFs::WriteFile));
        assert!(!FsAccess::ReadWrite.rights(abi).contains(AccessFs::Execute));
        assert!(FsAccess::ReadWrite
            .rights(abi)
            .contains(AccessFs::MakeDir | AccessFs::RemoveFile));
    }
}
