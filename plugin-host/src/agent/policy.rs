//! The confinement policy of the *agent* (the coding-agent CLI a round runs), as reviewed
//! data with one `why` per rule (docs/security.md "The agent's confinement").
//!
//! The agent is not a host: it is not pinned, it is exec'd through its resolved path (often
//! a node or Python script), it needs the network, it builds and runs programs in the work
//! tree. So its policy is wider than a host's ([`crate::host::policy`]) but draws the same lines
//! around what is not its business:
//!
//! * **write** (and execute): the work tree, the agent's own state ([`AGENT_STATE`], by the
//!   CLI's name: its shadow home in the state dir where it has a mount namespace,
//!   [`crate::agent::shadow_home`], else the real one), a private TMPDIR, and the operator's
//!   `[agent.sandbox] write_paths`;
//! * **read** (and execute): the system ([`SYSTEM_TREES`], `/etc` but [`ETC_WITHHELD`]),
//!   the home directory's entries except the credential stores ([`AGENT_WITHHELD`]) and the
//!   supervisor's state dir, the installation prefix of the agent's executable, the
//!   supervisor's config file and log dir (read-only), and `[agent.sandbox] read_paths`;
//! * **never**: the operator's credential stores that are not the agent's own (another
//!   agent's login included), the supervisor's state dir (lock, control socket, events);
//! * **network**: TCP `connect` only to the listed ports ([`DEFAULT_CONNECT_PORTS`] plus
//!   `[agent.sandbox] connect_ports`); `bind` is not restricted (test suites listen);
//!   abstract UNIX sockets and signals are scoped to the agent's own processes (ABI ≥ 6),
//!   so it can neither signal the supervisor nor its hosts;
//! * **system calls**: [`AGENT_SECCOMP_DENY`]: tracing and reading other processes'
//!   memory, keyrings, mounts and namespaces, `socket(AF_UNIX)`, kernel modules, … fail
//!   with `EPERM` (recorded); `clone3` with `ENOSYS`; the operator's
//!   [`AgentSeccompSwitches`] lift the UNIX-socket and namespace rules;
//!   [`AGENT_SECCOMP_OBSERVE`]: `connect` is looked at and let run, so Landlock's refusals
//!   of it are told.
//!
//! Everything is built in the supervisor before the fork ([`crate::agent::confine`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::common::credentials::CREDENTIAL_PATHS;
use crate::common::landlock::{FsAccess, FsGrant, PolicyError};
pub use crate::common::notify::{AgentDenyWhen, AgentObservation, ObservedPath, PathUse};
pub use crate::common::plan::AgentSeccompSwitches;
use crate::common::seccomp::{
    arch_guard, insn, SeccompProgram, BPF_JEQ_K, BPF_RET_K, DENIED_IOCTLS,
};

/// One CLI's own state in the home directory: written by the CLI itself (login, settings,
/// sessions, caches), so the agent may write it, and no other agent may read it.
#[derive(Debug, Clone, Copy)]
pub struct AgentState {
    /// The CLI's executable name (`command[0]`'s file name).
    pub cli: &'static str,
    /// Paths relative to the home directory; the first is the CLI's state directory,
    /// which [`create_state`] makes when missing.
    pub paths: &'static [&'static str],
    /// What the CLI keeps there.
    pub why: &'static str,
    /// Files of `paths` made, with this content, when missing: a CLI that creates one on
    /// first run could not in a home that is not writable (claude without `~/.claude.json`
    /// cannot resume a session: "No conversation found").
    pub seed: &'static [(&'static str, &'static str)],
}

/// Reviewed data: what each preset CLI writes under the home directory (measured with the
/// pinned CLIs of tests/agent-clis/versions.env, docs/agent-clis.md).
pub const AGENT_STATE: &[AgentState] = &[
    AgentState {
        cli: "claude",
        paths: &[".claude", ".claude.json", ".claude.json.backup"],
        why: "Claude Code: ~/.claude (credentials, settings, sessions, todos) and ~/.claude.json (account state)",
        seed: &[(".claude.json", "{}")],
    },
    AgentState {
        cli: "codex",
        paths: &[".codex"],
        why: "Codex CLI: ~/.codex (auth.json, config.toml, sessions, logs)",
        seed: &[],
    },
    AgentState {
        cli: "gemini",
        paths: &[".gemini"],
        why: "Gemini CLI: ~/.gemini (oauth credentials, settings, tmp session files)",
        seed: &[],
    },
    AgentState {
        cli: "aider",
        paths: &[".aider", ".aider.conf.yml"],
        why: "aider: ~/.aider (caches, analytics id) and its config file",
        seed: &[],
    },
    AgentState {
        cli: "kimi",
        paths: &[".kimi"],
        why: "Kimi CLI: ~/.kimi (config.toml, login, sessions, logs)",
        seed: &[],
    },
    AgentState {
        cli: "pi",
        paths: &[".pi"],
        why: "pi: ~/.pi/agent (settings.json, models.json, auth.json, sessions)",
        seed: &[],
    },
];

/// Makes the state of `cli` that its first run would create under `home`, when missing:
/// its state directory (its [`AgentState`]'s first path, mode 0700) and its
/// [`AgentState::seed`] files (mode 0600). A Landlock rule needs an existing path, and the
/// confined CLI cannot create them in a home that is not writable. Nothing for a CLI
/// without an entry; an existing path is left as it is.
///
/// Errors: a directory or file cannot be made.
pub fn create_state(cli: &str, home: &Path) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let Some(state) = AGENT_STATE.iter().find(|s| s.cli == cli) else {
        return Ok(());
    };
    if let Some(dir) = state.paths.first() {
        let path = home.join(dir);
        if path.symlink_metadata().is_err() {
            std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        }
    }
    for (rel, text) in state.seed {
        let made = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(home.join(rel));
        match made {
            Ok(mut file) => file.write_all(text.as_bytes())?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reviewed data: what the agent never reads beneath the home directory, on top of
/// [`CREDENTIAL_PATHS`] (less the agent's own [`AGENT_STATE`]): other agents' logins, which
/// a host's `read_paths` may cover (the operator's credential stores are
/// [`CREDENTIAL_PATHS`], which no grant of a host or the agent may cover).
pub const AGENT_WITHHELD: &[(&str, &str)] = &[
    (".codex", "Codex CLI credentials"),
    (".aider", "aider state"),
    (".aider.conf.yml", "aider config (may hold API keys)"),
    (".kimi", "Kimi CLI login and config"),
    (".pi", "pi's provider keys (auth.json) and config"),
    (".config/github-copilot", "GitHub Copilot token"),
];

/// Reviewed data: the system trees the agent reads and executes from (each skipped where
/// missing).
pub const SYSTEM_TREES: &[(&str, &str)] = &[
    ("/usr", "programs, libraries, interpreters and toolchains installed system-wide"),
    ("/bin", "programs (a directory, or a link into /usr)"),
    ("/sbin", "programs (a directory, or a link into /usr)"),
    ("/lib", "libraries and the dynamic loader (a directory, or a link into /usr)"),
    ("/lib64", "the x86_64 dynamic loader's path"),
    ("/lib32", "32-bit libraries"),
    ("/opt", "toolchains installed outside the package manager"),
    ("/snap", "snap packages"),
    ("/nix/store", "Nix store"),
    ("/var/lib/gems", "Ruby gems installed system-wide"),
    ("/run/systemd/resolve", "resolv.conf's target under systemd-resolved"),
    ("/proc", "process information the runtimes read (/proc/self, cpuinfo, meminfo); other processes' memory and environment are refused by Landlock's ptrace rule"),
    ("/sys", "CPU, memory and cgroup facts node and Python read"),
];

/// Reviewed data: entries of `/etc` the agent does not read (everything else in `/etc` is
/// read-only: name service, TLS roots, git's and the shells' system config).
pub const ETC_WITHHELD: &[(&str, &str)] = &[
    ("shadow", "password hashes"),
    ("shadow-", "password hashes (backup)"),
    ("gshadow", "group password hashes"),
    ("gshadow-", "group password hashes (backup)"),
    ("sudoers", "sudo policy"),
    ("sudoers.d", "sudo policy"),
    ("ssh", "the machine's SSH host keys"),
    (
        "ssl",
        "private keys under /etc/ssl/private (the public parts are granted below)",
    ),
    ("security", "PAM secrets (opasswd)"),
];

/// Reviewed data: files under withheld `/etc` entries that are public and needed.
pub const ETC_PUBLIC: &[(&str, &str)] = &[
    (
        "/etc/ssl/certs",
        "TLS root certificates (every HTTPS client)",
    ),
    (
        "/etc/ssl/openssl.cnf",
        "OpenSSL's configuration (node reads it at start)",
    ),
    (
        "/etc/ssh/ssh_config",
        "the system's ssh client configuration",
    ),
    (
        "/etc/ssh/ssh_config.d",
        "the system's ssh client configuration",
    ),
];

/// Reviewed data: the device files an agent and its tools use.
pub const AGENT_DEVICES: &[(&str, &str)] = &[
    ("/dev/null", "redirections"),
    ("/dev/zero", "zero bytes"),
    ("/dev/full", "tests of write errors"),
    ("/dev/random", "random bytes"),
    ("/dev/urandom", "random bytes"),
    ("/dev/tty", "the controlling terminal, when there is one"),
    (
        "/dev/ptmx",
        "pseudo-terminals: CLIs run commands under a pty",
    ),
    ("/dev/pts", "pseudo-terminals"),
];

/// Ports the agent may connect to whatever its CLI: HTTPS, where every preset's provider
/// listens. `[agent.sandbox] connect_ports` adds more (a local model server, a proxy).
pub const DEFAULT_CONNECT_PORTS: &[u16] = &[443];

/// What the agent's policy is built from (all paths absolute).
#[derive(Debug, Clone, Default)]
pub struct AgentPolicyInput {
    /// The work tree (write).
    pub work_dir: PathBuf,
    /// The agent's `HOME`, if set.
    pub home: Option<PathBuf>,
    /// `command[0]`'s file name (`claude`, `codex`, …): selects [`AGENT_STATE`].
    pub cli: String,
    /// The agent's executable as found on `PATH` (before following links).
    pub executable: PathBuf,
    /// The agent's private TMPDIR (write).
    pub tmp_dir: PathBuf,
    /// The supervisor's state dir (never).
    pub state_dir: PathBuf,
    /// The supervisor's log dir (read-only, unless it holds the state dir: then nothing).
    pub log_dir: PathBuf,
    /// The supervisor's config file (read-only).
    pub config_path: PathBuf,
    /// `[agent.sandbox] write_paths` (checked by the supervisor's config loader).
    pub write_paths: Vec<PathBuf>,
    /// `[agent.sandbox] read_paths`.
    pub read_paths: Vec<PathBuf>,
    /// Where the agent gets a shadow home ([`crate::agent::shadow_home`]): the shadow's
    /// paths bound over its real state, written instead of it (the real state paths then
    /// get no grant at all). `None`: the real state is written (no mount namespace).
    pub shadow: Option<Vec<PathBuf>>,
}

fn grant(path: impl Into<PathBuf>, access: FsAccess, why: &'static str) -> FsGrant {
    FsGrant {
        path: path.into(),
        access,
        why,
        required: false,
        via_verified_fd: false,
    }
}

/// The paths beneath the home directory the agent never reads: [`CREDENTIAL_PATHS`] and
/// [`AGENT_WITHHELD`] less the agent's own state, with the reason.
pub fn withheld_in_home(home: &Path, cli: &str) -> Vec<(PathBuf, &'static str)> {
    let own = own_state(cli);
    CREDENTIAL_PATHS
        .iter()
        .chain(AGENT_WITHHELD)
        .filter(|(rel, _)| !own.iter().any(|o| o == rel))
        .map(|(rel, why)| (home.join(rel), *why))
        .collect()
}

/// The credential stores the agent never reads, for the observer's report of refused
/// reads ([`crate::agent::withheld_files`]): [`withheld_in_home`] and `/etc`'s
/// [`ETC_WITHHELD`].
pub fn withheld_paths(input: &AgentPolicyInput) -> Vec<PathBuf> {
    withheld_paths_of(input.home.as_deref(), &input.cli)
}

/// [`withheld_paths`] of an agent of CLI `cli` with home `home` (`doctor` has no
/// [`AgentPolicyInput`]).
pub fn withheld_paths_of(home: Option<&Path>, cli: &str) -> Vec<PathBuf> {
    let home = home
        .into_iter()
        .flat_map(|h| withheld_in_home(h, cli).into_iter().map(|(p, _)| p));
    let etc = ETC_WITHHELD.iter().map(|(n, _)| Path::new("/etc").join(n));
    home.chain(etc).collect()
}

/// What the agent's grants give back inside a withheld store, left out of the observer's
/// walk ([`crate::agent::withheld_files::WithheldFiles::walk`]): `/etc`'s public parts
/// ([`ETC_PUBLIC`]: `/etc/ssl/certs` in `/etc/ssl`, whose reads every HTTPS client makes
/// and Landlock allows) and the operator's `read_paths` and `write_paths`.
pub fn granted_in_stores(read_paths: &[PathBuf], write_paths: &[PathBuf]) -> Vec<PathBuf> {
    ETC_PUBLIC
        .iter()
        .map(|(p, _)| PathBuf::from(p))
        .chain(read_paths.iter().cloned())
        .chain(write_paths.iter().cloned())
        .collect()
}

/// The agent's own state paths (relative to home) for `cli`.
pub fn own_state(cli: &str) -> &'static [&'static str] {
    AGENT_STATE
        .iter()
        .find(|s| s.cli == cli)
        .map(|s| s.paths)
        .unwrap_or(&[])
}

/// The agent's filesystem grants. Missing paths are skipped (but the work tree and TMPDIR
/// are required); a path granted twice gets the union of the rights (Landlock's rule).
pub fn agent_fs_grants(input: &AgentPolicyInput) -> Vec<FsGrant> {
    let mut g = Vec::new();
    for (path, why) in SYSTEM_TREES {
        g.push(grant(*path, FsAccess::ReadExecuteTree, why));
    }
    let etc_withheld: Vec<&str> = ETC_WITHHELD.iter().map(|(n, _)| *n).collect();
    for entry in std::fs::read_dir("/etc").into_iter().flatten().flatten() {
        let name = entry.file_name();
        if etc_withheld.iter().any(|w| name.as_os_str() == *w) {
            continue;
        }
        g.push(grant(
            entry.path(),
            FsAccess::ReadExecuteTree,
            "system configuration (name service, git and shell config, alternatives)",
        ));
    }
    for (path, why) in ETC_PUBLIC {
        g.push(grant(*path, FsAccess::ReadOnly, why));
    }
    for (path, why) in AGENT_DEVICES {
        g.push(grant(*path, FsAccess::Device, why));
    }
    g.push(grant(
        "/dev/shm",
        FsAccess::ReadWrite,
        "POSIX shared memory (Python's multiprocessing, browsers)",
    ));
    let mut protected: Vec<PathBuf> = vec![input.state_dir.clone()];
    if let Some(home) = &input.home {
        protected.extend(
            withheld_in_home(home, &input.cli)
                .into_iter()
                .map(|(p, _)| p),
        );
        match &input.shadow {
            Some(shadow) => {
                protected.extend(own_state(&input.cli).iter().map(|rel| home.join(rel)));
                for path in shadow {
                    g.push(grant(
                        path,
                        FsAccess::ReadWriteExecute,
                        "the agent's own state (AGENT_STATE) as its shadow home, bound over the real one: its settings, sessions and (bound into it) its login",
                    ));
                }
            }
            None => {
                for rel in own_state(&input.cli) {
                    g.push(grant(
                        home.join(rel),
                        FsAccess::ReadWriteExecute,
                        "the agent's own state (AGENT_STATE): its login, settings and sessions",
                    ));
                }
            }
        }
        readable_except(home, &protected, &mut g, 0);
    }
    if let Some(prefix) = install_prefix(&input.executable, input.home.as_deref()) {
        g.push(grant(
            prefix,
            FsAccess::ReadExecuteTree,
            "the installation prefix of the agent's executable (its node_modules or venv)",
        ));
    }
    if let Ok(real) = input.executable.canonicalize() {
        g.push(grant(
            real,
            FsAccess::ReadExecute,
            "the agent's executable itself",
        ));
    }
    for prefix in interpreter_prefixes(&input.executable, input.home.as_deref()) {
        g.push(grant(
            prefix,
            FsAccess::ReadExecuteTree,
            "the installation prefix of the interpreter the agent's script names on its #! line, as written and where its links lead (a venv's python is a link into a Python installed elsewhere)",
        ));
    }
    g.push(grant(
        &input.config_path,
        FsAccess::ReadOnly,
        "the supervisor's config file: readable, never writable from outside the tree",
    ));
    if !input.state_dir.starts_with(&input.log_dir) {
        g.push(grant(
            &input.log_dir,
            FsAccess::ReadOnly,
            "the log dir: round logs and round-context.json are readable, not writable",
        ));
    }
    for path in &input.read_paths {
        g.push(FsGrant {
            required: true,
            ..grant(
                path,
                FsAccess::ReadExecuteTree,
                "named by the operator in [agent.sandbox] read_paths",
            )
        });
    }
    for path in &input.write_paths {
        g.push(FsGrant {
            required: true,
            ..grant(
                path,
                FsAccess::ReadWriteExecute,
                "named by the operator in [agent.sandbox] write_paths",
            )
        });
    }
    g.push(FsGrant {
        required: true,
        ..grant(
            &input.tmp_dir,
            FsAccess::ReadWriteExecute,
            "the agent's private TMPDIR",
        )
    });
    g.push(FsGrant {
        required: true,
        ..grant(
            &input.work_dir,
            FsAccess::ReadWriteExecute,
            "the work tree: the agent's job is to change it",
        )
    });
    g
}

/// Grants read+execute on every entry of `dir` except those in `protected`; an entry that
/// holds a protected path is descended into instead (to a small depth: credential paths
/// are at most two levels down).
fn readable_except(dir: &Path, protected: &[PathBuf], g: &mut Vec<FsGrant>, depth: u32) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if protected.contains(&path) {
            continue;
        }
        if protected.iter().any(|p| p.starts_with(&path)) {
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && depth < 4 {
                readable_except(&path, protected, g, depth + 1);
            }
            continue;
        }
        g.push(grant(
            path,
            FsAccess::ReadExecuteTree,
            "the home directory's entries but the credential stores: dotfiles, toolchains (~/.cargo, ~/.nvm, ~/.local)",
        ));
    }
}

/// The installation prefix of an executable found at `exe`: `P` for `P/bin/x` and
/// `P/node_modules/.bin/x`. Never `/`, the home directory or an ancestor of it.
pub fn install_prefix(exe: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let dir = exe.parent()?;
    let prefix = match dir.file_name()?.to_str()? {
        "bin" => dir.parent()?,
        ".bin" if dir.parent()?.file_name()? == "node_modules" => dir.parent()?.parent()?,
        _ => return None,
    };
    let system = ["/", "/usr", "/usr/local"]
        .iter()
        .any(|s| prefix == Path::new(s));
    let opens_home = home.is_some_and(|h| h.starts_with(prefix));
    (!system && !opens_home).then(|| prefix.to_owned())
}

/// The installation prefixes ([`install_prefix`]) of the interpreter a script at `exe`
/// names on its `#!` line: as written (a venv, whose `pyvenv.cfg` and `site-packages` the
/// interpreter reads) and as its links resolve (the Python the venv was made from). Empty
/// for a binary, an `env` line (the interpreter is then found on `PATH`, in the system)
/// or a prefix [`install_prefix`] refuses.
pub fn interpreter_prefixes(exe: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(exe)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let Some(line) = head[..n].strip_prefix(b"#!") else {
        return Vec::new();
    };
    let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
    let Some(word) = line
        .split(|b| *b == b' ' || *b == b'\t')
        .find(|w| !w.is_empty())
    else {
        return Vec::new();
    };
    let interpreter = Path::new(std::ffi::OsStr::from_bytes(word));
    let mut out = Vec::new();
    let real = interpreter.canonicalize().ok();
    for path in std::iter::once(interpreter).chain(real.as_deref()) {
        if let Some(prefix) = install_prefix(path, home) {
            if !out.contains(&prefix) {
                out.push(prefix);
            }
        }
    }
    out
}

/// An operator switch that lifts entries of [`AGENT_SECCOMP_DENY`] (`[agent.sandbox]`,
/// docs/configuration.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentSwitch {
    /// `unix_sockets = true`: `socket(AF_UNIX, …)` allowed.
    UnixSockets,
    /// `user_namespaces = true`: new namespaces (`clone` with namespace flags, `clone3`,
    /// `unshare`) and `chroot` allowed.
    UserNamespaces,
}

impl AgentSeccompSwitches {
    /// Whether `switch` is on.
    pub fn is_on(self, switch: AgentSwitch) -> bool {
        match switch {
            AgentSwitch::UnixSockets => self.unix_sockets,
            AgentSwitch::UserNamespaces => self.user_namespaces,
        }
    }
}

/// One entry of the agent's seccomp deny-list.
#[derive(Debug, Clone, Copy)]
pub struct AgentDenial {
    /// The x86_64 system call number.
    pub nr: i64,
    /// Its name.
    pub name: &'static str,
    /// When it is refused.
    pub when: AgentDenyWhen,
    /// The operator switch that lifts it, if any.
    pub opened_by: Option<AgentSwitch>,
    /// Why.
    pub why: &'static str,
}

macro_rules! deny {
    ($sys:ident, $why:expr) => {
        deny!($sys, None, $why)
    };
    ($sys:ident, $opened_by:expr, $why:expr) => {
        AgentDenial {
            nr: libc::$sys,
            name: stringify!($sys),
            when: AgentDenyWhen::Always,
            opened_by: $opened_by,
            why: $why,
        }
    };
}

const TRACE: &str = "no tracing or reading other processes' memory: the supervisor, its hosts and the operator's other programs are out of reach (Landlock's ptrace rule already refuses processes outside the agent's domain)";
const KEYS: &str = "no kernel keyrings: the operator's session keyring may hold credentials";
const MOUNTS: &str =
    "no mount changes: they could undo the read-only config mount (Landlock refuses them too)";
const NS: &str = "no namespaces of the agent's own making: a new user namespace gives every capability inside it and opens kernel code an unprivileged process never reaches (netfilter, raw and packet sockets); our PID, user and mount namespaces are made before the filter ([agent.sandbox] user_namespaces lifts it, setns stays refused)";
const KERNEL: &str = "no kernel replacement, modules, BPF programs, perf events or io_uring";
const PRIV: &str = "no privileged operation, even where a capability is left (the agent's capabilities are dropped)";

/// Reviewed data: the address families `socket` is refused for. Landlock (up to ABI 7)
/// does not cover `connect` to a pathname UNIX socket: the operator's ssh agent, the Docker
/// daemon, the systemd user bus (`systemd-run --user` runs anything unconfined), a database.
/// `socketpair` is not `socket` and stays allowed (libuv, tokio and Python make their
/// pipes with it).
pub const DENIED_SOCKET_FAMILIES: &[(u64, &str)] = &[(libc::AF_UNIX as u64, "AF_UNIX")];

/// Reviewed data: the namespace flags no `clone` of the agent may carry (the hosts' list,
/// [`crate::common::seccomp::DENIED_CLONE_FLAGS`]). `CLONE_NEWTIME` (0x80) exists only for
/// `unshare` and `clone3`, both refused: in `clone`'s first argument the low byte is the
/// exit signal.
pub const AGENT_DENIED_CLONE_FLAGS: &[(u64, &str)] = crate::common::seccomp::DENIED_CLONE_FLAGS;

/// The agent's seccomp deny-list (default allow: unlike a host, the agent runs arbitrary
/// toolchains, so no allow-list could be measured). Only escapes from its confinement and
/// from the round. A match fails the call (`EPERM`, [`AGENT_DENY_ERRNO`]) and is recorded;
/// the agent goes on. `clone3` is answered `ENOSYS` in front of the list
/// ([`AGENT_CLONE3_ERRNO`]).
pub const AGENT_SECCOMP_DENY: &[AgentDenial] = &[
    deny!(SYS_ptrace, TRACE),
    deny!(SYS_process_vm_readv, TRACE),
    deny!(SYS_process_vm_writev, TRACE),
    deny!(SYS_kcmp, TRACE),
    deny!(SYS_pidfd_getfd, "no taking descriptors out of other processes"),
    deny!(SYS_keyctl, KEYS),
    deny!(SYS_add_key, KEYS),
    deny!(SYS_request_key, KEYS),
    deny!(SYS_mount, MOUNTS),
    deny!(SYS_umount2, MOUNTS),
    deny!(SYS_pivot_root, MOUNTS),
    deny!(SYS_chroot, Some(AgentSwitch::UserNamespaces), "no chroot: without a user namespace of its own the agent lacks CAP_SYS_CHROOT anyway; inside one (user_namespaces) it only narrows its own view (Chromium's sandbox chroots its renderers)"),
    deny!(SYS_unshare, Some(AgentSwitch::UserNamespaces), NS),
    deny!(SYS_setns, "no joining other namespaces (the machine's, through /proc/<pid>/ns)"),
    AgentDenial {
        nr: libc::SYS_clone,
        name: "SYS_clone",
        when: AgentDenyWhen::ArgAnyFlag {
            arg: 0,
            flags: AGENT_DENIED_CLONE_FLAGS,
        },
        opened_by: Some(AgentSwitch::UserNamespaces),
        why: NS,
    },
    deny!(SYS_open_tree, MOUNTS),
    deny!(SYS_move_mount, MOUNTS),
    deny!(SYS_fsopen, MOUNTS),
    deny!(SYS_fsconfig, MOUNTS),
    deny!(SYS_fsmount, MOUNTS),
    deny!(SYS_fspick, MOUNTS),
    AgentDenial {
        nr: libc::SYS_socket,
        name: "SYS_socket",
        when: AgentDenyWhen::ArgIn {
            arg: 0,
            values: DENIED_SOCKET_FAMILIES,
        },
        opened_by: Some(AgentSwitch::UnixSockets),
        why: "no UNIX sockets (DENIED_SOCKET_FAMILIES): pathname sockets outside every grant (ssh agent, docker.sock, the user bus) are reachable through connect, which Landlock does not cover ([agent.sandbox] unix_sockets lifts it; glibc's user lookups try nscd this way and fall back to the files)",
    },
    deny!(SYS_bpf, KERNEL),
    deny!(SYS_perf_event_open, KERNEL),
    deny!(SYS_io_uring_setup, KERNEL),
    deny!(SYS_io_uring_enter, KERNEL),
    deny!(SYS_io_uring_register, KERNEL),
    deny!(SYS_userfaultfd, KERNEL),
    deny!(SYS_kexec_load, KERNEL),
    deny!(SYS_kexec_file_load, KERNEL),
    deny!(SYS_init_module, KERNEL),
    deny!(SYS_finit_module, KERNEL),
    deny!(SYS_delete_module, KERNEL),
    deny!(SYS_open_by_handle_at, "no opening files by handle (bypasses Landlock's path checks)"),
    deny!(SYS_fanotify_init, "no watching or blocking other processes' file access"),
    AgentDenial {
        nr: libc::SYS_ioctl,
        name: "SYS_ioctl",
        when: AgentDenyWhen::ArgIn {
            arg: 1,
            values: DENIED_IOCTLS,
        },
        opened_by: None,
        why: "no typing into the operator's terminal and no filesystem-wide or inode-flag ioctls (DENIED_IOCTLS)",
    },
    deny!(SYS_settimeofday, PRIV),
    deny!(SYS_clock_settime, PRIV),
    deny!(SYS_clock_adjtime, PRIV),
    deny!(SYS_adjtimex, PRIV),
    deny!(SYS_sethostname, PRIV),
    deny!(SYS_setdomainname, PRIV),
    deny!(SYS_syslog, PRIV),
    deny!(SYS_reboot, PRIV),
    deny!(SYS_swapon, PRIV),
    deny!(SYS_swapoff, PRIV),
    deny!(SYS_acct, PRIV),
    deny!(SYS_iopl, PRIV),
    deny!(SYS_ioperm, PRIV),
    deny!(SYS_quotactl, PRIV),
    deny!(SYS_vhangup, PRIV),
];

/// Reviewed data: the `open` flags that ask for writing (`O_WRONLY`, `O_RDWR`, `O_CREAT`,
/// `O_TRUNC`); an open without them only reads.
pub const WRITE_OPEN_FLAGS: &[(u64, &str)] = &[
    (libc::O_WRONLY as u64, "O_WRONLY"),
    (libc::O_RDWR as u64, "O_RDWR"),
    (libc::O_CREAT as u64, "O_CREAT"),
    (libc::O_TRUNC as u64, "O_TRUNC"),
];

/// [`WRITE_OPEN_FLAGS`] as one mask.
const WRITE_OPEN_MASK: u64 = {
    let mut mask = 0;
    let mut i = 0;
    while i < WRITE_OPEN_FLAGS.len() {
        mask |= WRITE_OPEN_FLAGS[i].0;
        i += 1;
    }
    mask
};

const fn at(dirfd: u8, path: u8, does: PathUse) -> ObservedPath {
    ObservedPath {
        dirfd: Some(dirfd),
        path,
        does,
    }
}

const fn cwd(path: u8, does: PathUse) -> ObservedPath {
    ObservedPath {
        dirfd: None,
        path,
        does,
    }
}

const WRITES: &str = "a write Landlock refuses (outside every write grant) is recorded as agent_sandbox_denied (layer landlock, the path, the call): Landlock itself records nothing readable";

const OPENS: &str = "a write Landlock refuses (outside every write grant), and a read of a credential store (withheld from every grant), are recorded as agent_sandbox_denied (layer landlock, the path, the call or `read`): Landlock itself records nothing readable";

/// An open whose flags argument is `flags`: a write when it carries a [`WRITE_OPEN_FLAGS`]
/// flag, else a read.
const fn opens(flags: u8) -> PathUse {
    PathUse::OpensByFlags {
        flags,
        write_mask: WRITE_OPEN_MASK,
    }
}

macro_rules! observe {
    ($sys:ident, $when:expr, $paths:expr, $why:expr) => {
        AgentObservation {
            nr: libc::$sys,
            when: $when,
            paths: $paths,
            why: $why,
        }
    };
}

/// Reviewed data: the calls the agent's filter lets run after the supervisor has looked at
/// them (a user notification answered `SECCOMP_USER_NOTIF_FLAG_CONTINUE`): it reports,
/// never decides (docs/security.md "Denials told, not silent"). Every `open` and `openat`
/// (a write with [`WRITE_OPEN_FLAGS`], else a read; seccomp cannot look at the path, so
/// each read-only open is a round trip through the supervisor too); `openat2` (its flags
/// are in memory), links, `mknod` and `truncate` are not observed.
pub const AGENT_SECCOMP_OBSERVE: &[AgentObservation] = &[
    observe!(
        SYS_connect,
        AgentDenyWhen::Always,
        &[],
        "a TCP connect to a port Landlock refuses is told as agent_egress_refused with its address (Landlock itself records nothing readable)"
    ),
    observe!(SYS_open, AgentDenyWhen::Always, &[cwd(0, opens(1))], OPENS),
    observe!(SYS_openat, AgentDenyWhen::Always, &[at(0, 1, opens(2))], OPENS),
    observe!(SYS_creat, AgentDenyWhen::Always, &[cwd(0, PathUse::Opens)], WRITES),
    observe!(SYS_mkdir, AgentDenyWhen::Always, &[cwd(0, PathUse::Makes)], WRITES),
    observe!(SYS_mkdirat, AgentDenyWhen::Always, &[at(0, 1, PathUse::Makes)], WRITES),
    observe!(SYS_unlink, AgentDenyWhen::Always, &[cwd(0, PathUse::Removes)], WRITES),
    observe!(SYS_rmdir, AgentDenyWhen::Always, &[cwd(0, PathUse::Removes)], WRITES),
    observe!(SYS_unlinkat, AgentDenyWhen::Always, &[at(0, 1, PathUse::Removes)], WRITES),
    observe!(
        SYS_rename,
        AgentDenyWhen::Always,
        &[cwd(0, PathUse::Removes), cwd(1, PathUse::Replaces)],
        WRITES
    ),
    observe!(
        SYS_renameat,
        AgentDenyWhen::Always,
        &[at(0, 1, PathUse::Removes), at(2, 3, PathUse::Replaces)],
        WRITES
    ),
    observe!(
        SYS_renameat2,
        AgentDenyWhen::Always,
        &[at(0, 1, PathUse::Removes), at(2, 3, PathUse::Replaces)],
        WRITES
    ),
];

/// The errno a denied call of the agent fails with.
pub const AGENT_DENY_ERRNO: i32 = libc::EPERM;

/// The errno `clone3` fails with in the agent (unless `user_namespaces`): `ENOSYS`, as in a
/// host ([`crate::host::policy::CLONE3_ERRNO`]). Its flags are in memory, where seccomp
/// cannot look; glibc (2.34 and later) falls back to `clone` on `ENOSYS`, whose namespace
/// flags the list checks. Answered in the filter, not recorded: glibc tries it for every
/// thread.
pub const AGENT_CLONE3_ERRNO: i32 = libc::ENOSYS;

/// What a refused call of the agent is recorded as (the `target` of its
/// `agent_sandbox_denied` event): the call's name, with the refused value or flags of its
/// argument where an entry of [`AGENT_SECCOMP_DENY`] looks at one
/// (`socket(AF_UNIX)`, `clone(CLONE_NEWUSER|CLONE_NEWNS)`, `ioctl(TIOCSTI)`).
pub fn denial_target(nr: i64, args: &[u64; 6]) -> String {
    let name = crate::common::seccomp::syscall_name(nr).unwrap_or("unknown");
    let first_word = |label: &'static str| label.split(' ').next().unwrap_or(label);
    let detail = AGENT_SECCOMP_DENY
        .iter()
        .find(|d| d.nr == nr)
        .and_then(|d| match d.when {
            AgentDenyWhen::Always => None,
            AgentDenyWhen::ArgIn { arg, values } => {
                let v = args[usize::from(arg)] & 0xffff_ffff;
                values
                    .iter()
                    .find(|(x, _)| *x == v)
                    .map(|(_, n)| first_word(n).to_owned())
            }
            AgentDenyWhen::ArgAnyFlag { arg, flags } => {
                let v = args[usize::from(arg)];
                let set: Vec<&str> = flags
                    .iter()
                    .filter(|(f, _)| v & f != 0)
                    .map(|(_, n)| first_word(n))
                    .collect();
                (!set.is_empty()).then(|| set.join("|"))
            }
        });
    match detail {
        Some(d) => format!("{name}({d})"),
        None => name.to_owned(),
    }
}

/// Compiles [`AGENT_SECCOMP_DENY`] (less what `switches` lift) and
/// [`AGENT_SECCOMP_OBSERVE`] (default allow) behind the hosts' arch/x32 guard and the
/// `clone3` answer ([`AGENT_CLONE3_ERRNO`], unless `user_namespaces`). A match returns
/// `SECCOMP_RET_USER_NOTIF`: the program must be installed with a new listener the
/// supervisor services ([`crate::common::notify::DenialListener::start_answering`]), which
/// fails a denied call and lets an observed one run. Without one the kernel fails both
/// with `ENOSYS`.
///
/// # Errors
/// [`PolicyError::Seccomp`] if seccompiler rejects the rules (a bug in the list).
pub fn agent_seccomp_program(
    switches: AgentSeccompSwitches,
) -> Result<SeccompProgram, PolicyError> {
    let err = |e: seccompiler::BackendError| PolicyError::Seccomp(e.to_string());
    let cond = |arg: u8, op: SeccompCmpOp, v: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, v).map_err(err)
    };
    let chain = |when: AgentDenyWhen| -> Result<Vec<SeccompRule>, PolicyError> {
        match when {
            AgentDenyWhen::Always => Ok(Vec::new()),
            // One rule per value (the rules of a chain are ORed).
            AgentDenyWhen::ArgIn { arg, values } => values
                .iter()
                .map(|(v, _)| SeccompRule::new(vec![cond(arg, SeccompCmpOp::Eq, *v)?]).map_err(err))
                .collect(),
            AgentDenyWhen::ArgAnyFlag { arg, flags } => flags
                .iter()
                .map(|(f, _)| {
                    SeccompRule::new(vec![cond(arg, SeccompCmpOp::MaskedEq(*f), *f)?]).map_err(err)
                })
                .collect(),
        }
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let lifted = |d: &AgentDenial| d.opened_by.is_some_and(|s| switches.is_on(s));
    for d in AGENT_SECCOMP_DENY.iter().filter(|d| !lifted(d)) {
        if rules.insert(d.nr, chain(d.when)?).is_some() {
            return Err(PolicyError::Seccomp(format!("{} is listed twice", d.name)));
        }
    }
    for o in AGENT_SECCOMP_OBSERVE {
        if rules.insert(o.nr, chain(o.when)?).is_some() {
            return Err(PolicyError::Seccomp(format!(
                "{:?} is both denied and observed, or observed twice",
                crate::common::seccomp::syscall_name(o.nr)
            )));
        }
    }
    // A placeholder match action (SECCOMP_RET_TRAP, used nowhere else), rewritten.
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Trap,
        TargetArch::x86_64,
    )
    .map_err(err)?;
    let compiled: BpfProgram = filter.try_into().map_err(err)?;
    let mut filters = arch_guard();
    if !switches.user_namespaces {
        // A = nr (still loaded by the guard): clone3?
        filters.extend([
            insn(BPF_JEQ_K, 0, 1, libc::SYS_clone3 as u32),
            insn(
                BPF_RET_K,
                0,
                0,
                libc::SECCOMP_RET_ERRNO | AGENT_CLONE3_ERRNO as u32,
            ),
        ]);
    }
    let mut refusals = 0;
    filters.extend(compiled.into_iter().map(|f| {
        let k = if f.code == BPF_RET_K && f.k == libc::SECCOMP_RET_TRAP {
            refusals += 1;
            libc::SECCOMP_RET_USER_NOTIF
        } else {
            f.k
        };
        insn(f.code, f.jt, f.jf, k)
    }));
    if refusals == 0 || filters.len() > libc::BPF_MAXINSNS as usize {
        return Err(PolicyError::Seccomp(format!(
            "the agent's program is malformed ({refusals} refusals, {} instructions)",
            filters.len()
        )));
    }
    Ok(SeccompProgram::from_instructions(filters))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cli_s_first_run_state_is_made_and_an_existing_one_kept() {
        let home = tempfile::tempdir().unwrap();
        create_state("claude", home.path()).unwrap();
        assert!(home.path().join(".claude").is_dir());
        assert_eq!(
            std::fs::read_to_string(home.path().join(".claude.json")).unwrap(),
            "{}"
        );
        std::fs::write(home.path().join(".claude.json"), "{\"mine\":1}").unwrap();
        create_state("claude", home.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(home.path().join(".claude.json")).unwrap(),
            "{\"mine\":1}"
        );
        create_state("aider", home.path()).unwrap();
        assert!(home.path().join(".aider").is_dir());
        create_state("unknown-cli", home.path()).unwrap();
        assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 3);
    }

    #[test]
    fn interpreter_prefixes_follow_the_shebang_and_its_links() {
        let dir = tempfile::tempdir().unwrap();
        let python = dir.path().join("python-3.13/bin/python3.13");
        std::fs::create_dir_all(python.parent().unwrap()).unwrap();
        std::fs::write(&python, "").unwrap();
        let venv_bin = dir.path().join("venv/bin");
        std::fs::create_dir_all(&venv_bin).unwrap();
        std::os::unix::fs::symlink(&python, venv_bin.join("python3")).unwrap();
        let script = venv_bin.join("kimi");
        std::fs::write(
            &script,
            format!("#!{}/python3\nimport kimi\n", venv_bin.display()),
        )
        .unwrap();
        let real = dir.path().canonicalize().unwrap();
        assert_eq!(
            interpreter_prefixes(&script, Some(Path::new("/home/op"))),
            [dir.path().join("venv"), real.join("python-3.13")]
        );
        std::fs::write(&script, "#!/usr/bin/env python3\n").unwrap();
        assert!(interpreter_prefixes(&script, None).is_empty());
        std::fs::write(&script, "\x7fELF").unwrap();
        assert!(interpreter_prefixes(&script, None).is_empty());
    }

    #[test]
    fn install_prefixes() {
        let home = Path::new("/home/op");
        assert_eq!(
            install_prefix(Path::new("/x/cli/node_modules/.bin/claude"), Some(home)),
            Some(PathBuf::from("/x/cli"))
        );
        assert_eq!(
            install_prefix(Path::new("/x/venv/bin/aider"), Some(home)),
            Some(PathBuf::from("/x/venv"))
        );
        assert_eq!(
            install_prefix(Path::new("/usr/bin/claude"), Some(home)),
            None
        );
        assert_eq!(install_prefix(Path::new("/home/bin/x"), Some(home)), None);
        assert_eq!(install_prefix(Path::new("/x/y/claude"), Some(home)), None);
    }

    #[test]
    fn own_state_is_not_withheld_others_are() {
        let home = Path::new("/h");
        let w = withheld_in_home(home, "claude");
        assert!(!w.iter().any(|(p, _)| p == Path::new("/h/.claude")));
        assert!(w.iter().any(|(p, _)| p == Path::new("/h/.codex")));
        assert!(w.iter().any(|(p, _)| p == Path::new("/h/.ssh")));
        let w = withheld_in_home(home, "codex");
        assert!(w.iter().any(|(p, _)| p == Path::new("/h/.claude")));
        assert!(!w.iter().any(|(p, _)| p == Path::new("/h/.codex")));
    }

    /// A credential file deep in a toolchain's directory is withheld alone: the rest of
    /// the directory (`~/.cargo/bin`, its registry) stays readable, and so does a store's
    /// sibling (`~/.cache/pip` beside `~/.cache/huggingface/token`).
    #[test]
    fn a_deep_credential_file_leaves_its_directory_readable() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        for dir in [
            ".cargo/bin",
            ".cargo/registry",
            ".cache/pip",
            ".cache/huggingface",
        ] {
            std::fs::create_dir_all(h.join(dir)).unwrap();
        }
        for file in [
            ".cargo/credentials.toml",
            ".cache/huggingface/token",
            ".npmrc",
            ".bashrc",
        ] {
            std::fs::write(h.join(file), "x").unwrap();
        }
        let protected: Vec<PathBuf> = withheld_in_home(h, "claude")
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        let mut g = Vec::new();
        readable_except(h, &protected, &mut g, 0);
        let granted: Vec<&Path> = g.iter().map(|g| g.path.as_path()).collect();
        for readable in [".cargo/bin", ".cargo/registry", ".cache/pip", ".bashrc"] {
            assert!(
                granted.contains(&h.join(readable).as_path()),
                "{readable}: {granted:?}"
            );
        }
        for withheld in [
            ".cargo/credentials.toml",
            ".cache/huggingface/token",
            ".npmrc",
        ] {
            let path = h.join(withheld);
            assert!(
                !granted.iter().any(|g| path.starts_with(g)),
                "{withheld} is reachable: {granted:?}"
            );
        }
    }

    #[test]
    fn the_agent_program_compiles_behind_the_guard_for_every_switch() {
        for (unix_sockets, user_namespaces) in
            [(false, false), (true, false), (false, true), (true, true)]
        {
            let switches = AgentSeccompSwitches {
                unix_sockets,
                user_namespaces,
            };
            let p = agent_seccomp_program(switches).unwrap();
            assert!(p.len() > AGENT_SECCOMP_DENY.len());
            let clone3_answered = p
                .instructions()
                .iter()
                .any(|i| i.k == libc::SECCOMP_RET_ERRNO | AGENT_CLONE3_ERRNO as u32);
            assert_eq!(clone3_answered, !user_namespaces);
        }
    }

    #[test]
    fn a_denial_is_named_with_its_refused_argument() {
        let mut args = [0u64; 6];
        assert_eq!(denial_target(libc::SYS_ptrace, &args), "ptrace");
        args[0] = libc::AF_UNIX as u64;
        assert_eq!(denial_target(libc::SYS_socket, &args), "socket(AF_UNIX)");
        args[0] = (libc::CLONE_NEWUSER | libc::CLONE_NEWNS) as u64 | libc::SIGCHLD as u64;
        assert_eq!(
            denial_target(libc::SYS_clone, &args),
            "clone(CLONE_NEWNS|CLONE_NEWUSER)"
        );
        args[1] = libc::TIOCSTI;
        assert_eq!(denial_target(libc::SYS_ioctl, &args), "ioctl(TIOCSTI)");
    }
}
