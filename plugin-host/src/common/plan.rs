//! The plan the supervisor hands the `plugin-host` launcher: what to apply, in the launcher's
//! own process, before it runs the target (docs/security.md "The launcher").
//!
//! It travels as one JSON document in a sealed memory file whose descriptor the launcher
//! inherits. Descriptors the plan names ([`Fd`]) are numbers in the launcher's table: the
//! spawn clears their close-on-exec flag so they survive into it, and the launcher sets it
//! again before the target runs (only [`Plan::inherit`] reaches the target).
//!
//! The format is versioned twice over: [`PLAN_FORMAT`] for the shape, and [`BUILD_ID`] for
//! the build. A launcher refuses a plan of another format or another build, so an
//! `agent-runner` and a `plugin-host` that were not built together never confine anything
//! between them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::common::landlock::{FsAccess, FsGrant, TcpRule};

/// The plan's shape. Raised whenever a field changes meaning, is added or goes.
pub const PLAN_FORMAT: u32 = 4;

/// This build of the confinement code: a digest of `plugin-host/`'s sources and the
/// workspace version, made by the crate's build script. The supervisor writes its own into
/// every plan; the launcher compares it with its own.
pub const BUILD_ID: &str = env!("AGENT_RUNNER_PLUGIN_HOST_BUILD_ID");

/// A descriptor number in the launcher's table.
pub type Fd = i32;

/// Everything the launcher does, in its order (the module docs of [`crate::launcher`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// [`PLAN_FORMAT`] of the supervisor that wrote it.
    pub format: u32,
    /// [`BUILD_ID`] of the supervisor that wrote it.
    pub build_id: String,
    /// Who is launched (a host's name, `agent`, a goal check's name): for messages.
    pub name: String,
    /// `cgroup.procs` of a cgroup to join first (a host's `pids` cgroup, the round's cgroup).
    pub cgroup_procs: Option<Fd>,
    /// The read end of a pipe only the supervisor writes: a guard process is forked into the
    /// target's process group, and kills the group when the pipe ends (the supervisor died).
    pub group_guard: Option<Fd>,
    /// Each limit set as soft and hard value (`setrlimit`).
    pub rlimits: Vec<(Limit, u64)>,
    /// A pidfd of the supervisor: `PR_SET_PDEATHSIG` is armed and the supervisor must still
    /// be alive, here and again after each step that changes the parent.
    pub supervisor: Fd,
    /// A network namespace with only loopback and a forwarder to the supervisor's proxy
    /// (and its forwarded loopback ports).
    pub egress: Option<Egress>,
    /// User, PID and mount namespaces of the target's own, with a reaper (unprivileged).
    pub user_namespace: Option<UserNamespace>,
    /// Unshare a mount namespace before [`Plan::read_only`] (root; the user namespace above
    /// makes one otherwise).
    pub mount_namespace: bool,
    /// Binds in the target's mount namespace, in this order, before [`Plan::pinned`]: the
    /// agent's shadow home over its CLI's real state (docs/security.md "The shadow CLI
    /// home").
    pub binds: Vec<Bind>,
    /// Directories bound over themselves (with the mounts below them) in the target's
    /// mount namespace, in this order, before [`Plan::read_only`]: each becomes a mount
    /// point, which cannot be renamed or removed.
    pub pinned: Vec<PathBuf>,
    /// Paths (files or directories) bind-mounted read-only over themselves in the target's
    /// mount namespace, after [`Plan::pinned`]; a symbolic link covered by an empty file.
    pub read_only: Vec<ReadOnlyFile>,
    /// A private size-limited `tmpfs` over the target's TMPDIR.
    pub private_tmp: Option<PrivateTmp>,
    /// Unshare IPC and UTS namespaces (root; the user namespace makes them otherwise).
    pub private_ipc_uts: bool,
    /// Fork an init: PID 1 of the target's PID namespace stays behind, reaps, and exits with
    /// the target's status.
    pub init: bool,
    /// Ignore `SIGXFSZ`, so `RLIMIT_FSIZE` fails writes with `EFBIG`.
    pub ignore_sigxfsz: bool,
    /// Drop every capability (all sets, secure bits locked).
    pub drop_capabilities: bool,
    /// `PR_SET_NO_NEW_PRIVS`.
    pub no_new_privs: bool,
    /// Descriptors the target inherits (a script host's verified script, `/dev/fd/N`).
    pub inherit: Vec<Fd>,
    /// The Landlock ruleset to build and enforce.
    pub landlock: Option<Landlock>,
    /// The seccomp program to build and install.
    pub seccomp: Option<Seccomp>,
    /// What runs.
    pub exec: Exec,
}

impl Plan {
    /// A plan that only runs `path` with `argv` and `env` (`NAME=value` each), dying with the
    /// supervisor whose pidfd is `supervisor`: nothing else is applied until the caller says
    /// so (the agent's confinement, a guard, a cgroup).
    pub fn program(
        name: &str,
        supervisor: Fd,
        path: PathBuf,
        argv: Vec<Vec<u8>>,
        env: Vec<Vec<u8>>,
    ) -> Plan {
        Plan {
            format: PLAN_FORMAT,
            build_id: BUILD_ID.to_owned(),
            name: name.to_owned(),
            cgroup_procs: None,
            group_guard: None,
            rlimits: Vec::new(),
            supervisor,
            egress: None,
            user_namespace: None,
            mount_namespace: false,
            binds: Vec::new(),
            pinned: Vec::new(),
            read_only: Vec::new(),
            private_tmp: None,
            private_ipc_uts: false,
            init: false,
            ignore_sigxfsz: false,
            drop_capabilities: false,
            no_new_privs: false,
            inherit: Vec::new(),
            landlock: None,
            seccomp: None,
            exec: Exec::Path { path, argv, env },
        }
    }
}

/// `NAME=value` of one environment entry, as [`Exec`] carries it.
pub fn env_entry(name: &std::ffi::OsStr, value: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut kv = name.as_bytes().to_vec();
    kv.push(b'=');
    kv.extend_from_slice(value.as_bytes());
    kv
}

/// A resource limit of [`Plan::rlimits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Limit {
    /// `RLIMIT_CORE`, bytes.
    CoreSize,
    /// `RLIMIT_NOFILE`, descriptors.
    OpenFiles,
    /// `RLIMIT_AS`, bytes.
    AddressSpace,
    /// `RLIMIT_FSIZE`, bytes.
    FileSize,
}

/// [`Plan::egress`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Egress {
    /// The forwarder's end of the socket pair the supervisor's proxy receives connections on.
    pub forwarder: Fd,
    /// `(uid, gid)`: also create a user namespace around the network namespace.
    pub user_namespace: Option<(u32, u32)>,
    /// Loopback ports the forwarder also listens on besides the proxy's (a local endpoint
    /// of `connect_ports`; the supervisor serves each by its port).
    pub ports: Vec<u16>,
}

/// [`Plan::user_namespace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum UserNamespace {
    /// A host's: `RLIMIT_NPROC` of `pids_max` (+ the reaper) inside it.
    Host {
        /// Most tasks of the host.
        pids_max: u64,
    },
    /// The agent's: no `RLIMIT_NPROC`, a reaper that ignores the round's stop signals.
    Agent,
}

/// [`Plan::binds`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bind {
    /// What is seen (canonical).
    pub source: PathBuf,
    /// Where (canonical), with the mounts below `source`.
    pub target: PathBuf,
}

/// [`Plan::read_only`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReadOnlyFile {
    /// The path (canonical: no link on its way; with `cover`, itself a symbolic link).
    pub path: PathBuf,
    /// `MS_NOSUID | MS_NODEV | MS_NOEXEC` of the mount holding it, kept on the remount.
    pub locked: u64,
    /// `path` is a symbolic link: this empty file is mounted read-only over the link
    /// itself, which is never followed (`crate::agent::protected::Target::Link`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cover: Option<PathBuf>,
}

/// [`Plan::private_tmp`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrivateTmp {
    /// The directory the `tmpfs` is mounted over.
    pub dir: PathBuf,
    /// Its size, MiB.
    pub max_mb: u64,
    /// Unshare the mount namespace first (root; the user namespace made one otherwise).
    pub unshare: bool,
}

/// [`Plan::landlock`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Landlock {
    /// What is allowed.
    pub grants: Vec<Grant>,
    /// The verified executable, for grants made through its descriptor.
    pub verified: Option<Fd>,
    /// TCP.
    pub tcp: TcpRule,
}

/// One [`FsGrant`] on the wire (its `why` stays with the supervisor's reviewed data).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Grant {
    /// [`FsGrant::path`].
    pub path: PathBuf,
    /// [`FsGrant::access`].
    pub access: FsAccess,
    /// [`FsGrant::required`].
    pub required: bool,
    /// [`FsGrant::via_verified_fd`].
    pub via_verified_fd: bool,
}

impl From<&FsGrant> for Grant {
    fn from(g: &FsGrant) -> Self {
        Grant {
            path: g.path.clone(),
            access: g.access,
            required: g.required,
            via_verified_fd: g.via_verified_fd,
        }
    }
}

impl Grant {
    /// Back to a grant for the ruleset builder.
    pub fn to_fs_grant(&self) -> FsGrant {
        FsGrant {
            path: self.path.clone(),
            access: self.access,
            why: "granted by the supervisor's plan",
            required: self.required,
            via_verified_fd: self.via_verified_fd,
        }
    }
}

/// [`Plan::seccomp`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Seccomp {
    /// Which program.
    pub program: SeccompChoice,
    /// Where the user-notification listener goes (a unix socket the supervisor reads);
    /// `None`: no listener.
    pub listener_to: Option<Fd>,
}

/// The operator's switches of the agent's seccomp program, as the plan carries them to the
/// launcher. Both off by default: the agent gets no UNIX socket but its `socketpair`s and
/// no namespace of its own making.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSeccompSwitches {
    /// `[agent.sandbox] unix_sockets`.
    pub unix_sockets: bool,
    /// `[agent.sandbox] user_namespaces`.
    pub user_namespaces: bool,
}

/// The seccomp programs the launcher can build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SeccompChoice {
    /// A host's allow-list, a refusal kills the host.
    HostKill,
    /// A host's allow-list, a refusal is sent to the listener (the supervisor names it, then
    /// kills the host).
    HostNotify,
    /// The agent's deny-list less what the operator's switches lift, a refusal or an
    /// observed call is sent to the listener (the supervisor names a refusal and fails the
    /// call, lets an observed call run).
    Agent(AgentSeccompSwitches),
}

/// [`Plan::exec`]: `argv` and `env` are raw bytes (`env` as `NAME=value`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Exec {
    /// `execveat(fd, "", argv, env, AT_EMPTY_PATH)`: the verified bytes (hosts).
    Descriptor {
        /// The descriptor executed.
        fd: Fd,
        /// The full argv.
        argv: Vec<Vec<u8>>,
        /// The full environment.
        env: Vec<Vec<u8>>,
    },
    /// `execve(path, argv, env)`: a program by the path the supervisor resolved (the agent,
    /// goal checks: a `#!` script must see its own path, not `/dev/fd/N`).
    Path {
        /// The program.
        path: PathBuf,
        /// The full argv.
        argv: Vec<Vec<u8>>,
        /// The full environment.
        env: Vec<Vec<u8>>,
    },
}

/// Why the launcher did not run the target, as it reports it to the supervisor (one JSON
/// document on the status pipe, which otherwise closes empty at the target's exec).
#[derive(Debug, Clone, Serialize, Deserialize, thiserror::Error)]
#[error("plugin-host: {step}: {message}")]
pub struct Failure {
    /// The step that failed (`plan`, `landlock`, `seccomp`, `exec`, …).
    pub step: String,
    /// The OS error number, when the step failed with one.
    pub errno: Option<i32>,
    /// What happened.
    pub message: String,
}

impl Failure {
    /// A failure of `step` with the OS error `e`.
    pub fn os(step: &str, e: &std::io::Error) -> Self {
        Failure {
            step: step.to_owned(),
            errno: e.raw_os_error(),
            message: e.to_string(),
        }
    }

    /// As an `io::Error`: the errno when there is one (so callers keep telling `EACCES` from
    /// `ENOENT`), else the message.
    pub fn into_io(self) -> std::io::Error {
        match self.errno {
            Some(errno) => std::io::Error::from_raw_os_error(errno),
            None => std::io::Error::other(self.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_survives_its_wire_form() {
        let mut plan = Plan::program(
            "agent",
            5,
            "/usr/bin/env".into(),
            vec![b"env".to_vec()],
            vec![env_entry("K".as_ref(), "v=w".as_ref())],
        );
        plan.landlock = Some(Landlock {
            grants: vec![Grant {
                path: "/tmp".into(),
                access: FsAccess::ReadWrite,
                required: true,
                via_verified_fd: false,
            }],
            verified: None,
            tcp: TcpRule::ConnectTo(vec![443, 4010]),
        });
        plan.user_namespace = Some(UserNamespace::Host { pids_max: 64 });
        let back: Plan = serde_json::from_slice(&serde_json::to_vec(&plan).unwrap()).unwrap();
        assert_eq!(back.build_id, BUILD_ID);
        assert_eq!(back.user_namespace, plan.user_namespace);
        let landlock = back.landlock.unwrap();
        assert_eq!(landlock.tcp, TcpRule::ConnectTo(vec![443, 4010]));
        assert_eq!(landlock.grants[0].to_fs_grant().access, FsAccess::ReadWrite);
        match back.exec {
            Exec::Path { env, .. } => assert_eq!(env, [b"K=v=w".to_vec()]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_failure_keeps_its_errno_as_an_io_error() {
        let e = std::io::Error::from_raw_os_error(libc::EACCES);
        let failure = Failure::os("exec", &e);
        assert_eq!(failure.to_string(), format!("plugin-host: exec: {e}"));
        assert_eq!(failure.into_io().raw_os_error(), Some(libc::EACCES));
        let plain = Failure {
            step: "landlock".into(),
            errno: None,
            message: "cannot open /x".into(),
        };
        assert!(plain.into_io().to_string().contains("cannot open /x"));
    }

    #[test]
    fn the_build_id_is_sixteen_hex_digits() {
        assert_eq!(BUILD_ID.len(), 16);
        assert!(BUILD_ID.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
