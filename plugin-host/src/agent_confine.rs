//! Confining the agent of a round: [`AgentConfinement`] is built in the supervisor before
//! the fork (the Landlock ruleset, the seccomp program, the namespace plan), and
//! [`AgentConfinement::apply`] runs in the forked child between fork and exec, making raw
//! system calls only, in this order:
//!
//! 1. a fresh PID namespace (docs/security.md "The agent's confinement"):
//!    * root: the child is already born as PID 1 of a new PID namespace
//!      ([`AgentConfinement::pid_namespace_for_next_child`], armed by the spawning thread);
//!    * an unprivileged operator where user namespaces are allowed: new user, PID, mount,
//!      IPC and UTS namespaces and a reaper ([`crate::user_namespace`]), the reaper
//!      ignoring the round's stop signals;
//!    * in either case, the supervisor's config file made read-only ([`ReadOnlyConfig`]):
//!      root first enters a mount namespace of the agent's own (`unshare(CLONE_NEWNS)`; the
//!      user namespace of the unprivileged case already made one); every mount there turns
//!      private, then the config file is bind-mounted over itself and remounted read-only,
//!      keeping the source mount's `nosuid`/`nodev`/`noexec` (locked in a user namespace:
//!      the remount fails with `EPERM` without them). Landlock grants add up, so the work
//!      tree's write grant would otherwise cover a config file inside it; the seccomp
//!      deny-list refuses `mount`/`umount2` and Landlock refuses mount changes, so the agent
//!      cannot undo it; an unlink or rename of the mount point fails with `EBUSY`, a write
//!      with `EROFS`;
//! 2. an *init* fork: PID 1 of the namespace stays behind, closes every descriptor, reaps
//!    every orphan and exits with the agent's status; the agent goes on as PID 2. PID 1
//!    ignores signals it has no handler for, which would break the agent's stop signal;
//!    and when PID 1 exits the kernel kills everything left in the namespace, so nothing
//!    the agent started (`setsid`, double fork) outlives it, and nothing in it can signal,
//!    trace or address a process outside by its pid;
//! 3. `PR_SET_PDEATHSIG` = `SIGKILL` again (the parent changed);
//! 4. every capability dropped ([`crate::capabilities`]), `PR_SET_NO_NEW_PRIVS`;
//! 5. `landlock_restrict_self` ([`crate::agent_policy::agent_landlock_ruleset`]);
//! 6. the seccomp filter ([`crate::agent_policy::agent_seccomp_program`]), returning
//!    `SECCOMP_RET_USER_NOTIF`, with a user-notification listener: sent over a unix socket
//!    made before the fork (`SCM_RIGHTS`), then closed, so the agent never holds it. The
//!    supervisor takes it with [`AgentConfinement::denial_listener`]: each denied call is
//!    reported by name and fails with [`AGENT_DENY_ERRNO`] (the agent goes on).
//!
//! The exec that follows is the ordinary one of the caller's `Command` (the agent is found
//! on `PATH` and is not pinned).
//!
//! Extension point kept in this order for what comes next: a network namespace joins in
//! step 1.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::agent_policy::{
    agent_fs_grants, agent_landlock_ruleset, agent_seccomp_program, AgentPolicyInput,
    AGENT_DENY_ERRNO,
};
use crate::capabilities::drop_all as drop_capabilities;
use crate::launch::{install_filter, recv_fd, socket_pair};
use crate::layers::Layer;
use crate::notify::DenialListener;
use crate::pid_namespace::{die_with_supervisor, own_pidfd, FreshPidNamespace};
use crate::policy::{PolicyError, SeccompProgram};
use crate::probe::{kernel_landlock_abi, Tier};
use crate::user_namespace::{user_namespaces, UserNamespacePlan};

/// What the agent of a round is confined with.
#[derive(Debug, Clone)]
pub struct AgentSandboxSpec {
    /// The paths of the policy.
    pub policy: AgentPolicyInput,
    /// TCP ports the agent may connect to.
    pub connect_ports: Vec<u16>,
    /// Which of Landlock and seccomp to apply (the gate's verdict).
    pub tier: Tier,
}

/// Why the agent's confinement could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum AgentConfineError {
    /// The policy could not be built (a missing required path, the kernel refused).
    #[error("agent sandbox: {0}")]
    Policy(#[from] PolicyError),
    /// A descriptor could not be opened or the TMPDIR created.
    #[error("agent sandbox: {what}: {source}")]
    Io {
        /// What failed.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// How the agent gets its own PID namespace on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidIsolation {
    /// Root: a PID namespace unshared by the spawning thread for its next child.
    PidNamespace,
    /// Unprivileged: user + PID + mount namespaces entered by the child.
    UserNamespace,
    /// Neither is possible (unprivileged, user namespaces disabled).
    None,
}

impl PidIsolation {
    /// What this process can give the agent: root gets a plain PID namespace; anyone else
    /// a user namespace where the kernel allows it (probed once, cached).
    pub fn detect() -> (PidIsolation, Option<String>) {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            return (PidIsolation::PidNamespace, None);
        }
        match user_namespaces() {
            Ok(()) => (PidIsolation::UserNamespace, None),
            Err(reason) => (PidIsolation::None, Some(reason.to_string())),
        }
    }
}

/// The agent's confinement, prepared before the fork.
#[derive(Debug)]
pub struct AgentConfinement {
    landlock: Option<OwnedFd>,
    seccomp: Option<SeccompProgram>,
    /// With seccomp: the supervisor's end (kept) and the agent's end (sent over) of the
    /// socket the seccomp listener travels on.
    listener: Option<(OwnedFd, OwnedFd)>,
    isolation: PidIsolation,
    user_ns: Option<UserNamespacePlan>,
    read_only_config: Option<ReadOnlyConfig>,
    supervisor: OwnedFd,
    tmp_dir: PathBuf,
}

/// The config file made read-only in the agent's mount namespace (step 1 of the module
/// docs, in either case), prepared before the fork.
#[derive(Debug)]
struct ReadOnlyConfig {
    /// The canonical path of the config file.
    path: CString,
    /// The `MS_NOSUID`/`MS_NODEV`/`MS_NOEXEC` of the mount holding it (from `statvfs`).
    locked: libc::c_ulong,
}

impl ReadOnlyConfig {
    /// Resolves `config` and reads its mount's flags.
    fn prepare(config: &Path) -> std::io::Result<Self> {
        let canonical = config.canonicalize()?;
        let path = CString::new(canonical.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: statvfs writes into a zeroed stack struct; `path` is NUL-terminated.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut locked = 0;
        for (st_flag, ms_flag) in [
            (libc::ST_NOSUID, libc::MS_NOSUID),
            (libc::ST_NODEV, libc::MS_NODEV),
            (libc::ST_NOEXEC, libc::MS_NOEXEC),
        ] {
            if st.f_flag & st_flag != 0 {
                locked |= ms_flag;
            }
        }
        Ok(ReadOnlyConfig { path, locked })
    }

    /// Between fork and exec, in the agent's own mount namespace: mounts private, the
    /// config bound over itself, remounted read-only. Raw system calls only.
    fn apply(&self) -> std::io::Result<()> {
        let mount = |src: *const libc::c_char, target: *const libc::c_char, flags| {
            // SAFETY: mount with NUL-terminated paths prepared before the fork (or null
            // where the call takes none) and no data.
            let r = unsafe { libc::mount(src, target, std::ptr::null(), flags, std::ptr::null()) };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        };
        let none = std::ptr::null();
        mount(none, c"/".as_ptr(), libc::MS_REC | libc::MS_PRIVATE)?;
        mount(self.path.as_ptr(), self.path.as_ptr(), libc::MS_BIND)?;
        mount(
            none,
            self.path.as_ptr(),
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | self.locked,
        )
    }
}

/// While alive, the spawning thread's next child is born in a fresh PID namespace (root);
/// drop it right after the spawn.
#[derive(Debug)]
pub struct PidNamespaceGuard(#[allow(dead_code)] FreshPidNamespace);

impl AgentConfinement {
    /// Builds the ruleset and the program of `spec` (each only where `spec.tier` applies
    /// it), creates the private TMPDIR, and plans the PID namespace of `isolation`.
    ///
    /// # Errors
    /// [`AgentConfineError`]: a required path is missing, the kernel rejected the ruleset,
    /// a descriptor could not be opened.
    pub fn build(
        spec: &AgentSandboxSpec,
        isolation: PidIsolation,
    ) -> Result<Self, AgentConfineError> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |source| AgentConfineError::Io { what, source }
        };
        let tmp = &spec.policy.tmp_dir;
        std::fs::create_dir_all(tmp).map_err(io(&format!("create {}", tmp.display())))?;
        let landlock = if spec.tier.landlock() {
            let grants = agent_fs_grants(&spec.policy);
            let abi = kernel_landlock_abi().unwrap_or(0);
            Some(agent_landlock_ruleset(&grants, &spec.connect_ports, abi)?)
        } else {
            None
        };
        let (seccomp, listener) = if spec.tier.seccomp() {
            let program = agent_seccomp_program(Some(libc::SECCOMP_RET_USER_NOTIF))?;
            let pair = socket_pair().map_err(io("the seccomp listener's socket"))?;
            (Some(program), Some(pair))
        } else {
            (None, None)
        };
        let supervisor = own_pidfd().map_err(io("pidfd of the supervisor"))?;
        let user_ns = (isolation == PidIsolation::UserNamespace).then(UserNamespacePlan::for_agent);
        let read_only_config = if isolation == PidIsolation::None {
            None
        } else {
            let config = &spec.policy.config_path;
            Some(
                ReadOnlyConfig::prepare(config)
                    .map_err(io(&format!("the config file {}", config.display())))?,
            )
        };
        Ok(AgentConfinement {
            landlock,
            seccomp,
            listener,
            isolation,
            user_ns,
            read_only_config,
            supervisor,
            tmp_dir: tmp.clone(),
        })
    }

    /// The agent's TMPDIR.
    pub fn tmp_dir(&self) -> &Path {
        &self.tmp_dir
    }

    /// For root: unshares the PID namespace of the calling thread's next child. Call right
    /// before the spawn (no other fork in between, on this thread) and drop the guard right
    /// after. `None` when not root.
    ///
    /// # Errors
    /// The OS error of `unshare(CLONE_NEWPID)` (or `EPERM` when the kernel refuses it).
    pub fn pid_namespace_for_next_child(&self) -> std::io::Result<Option<PidNamespaceGuard>> {
        if self.isolation != PidIsolation::PidNamespace {
            return Ok(None);
        }
        match FreshPidNamespace::for_next_child()? {
            Some(ns) => Ok(Some(PidNamespaceGuard(ns))),
            None => Err(std::io::Error::from_raw_os_error(libc::EPERM)),
        }
    }

    /// Between fork and exec, after `setpgid`: the module docs' steps. Raw system calls
    /// only; returns in the agent-to-be (the init and the reaper never return).
    ///
    /// # Errors
    /// The OS error of the failing step (the spawn fails with it).
    pub fn apply(&self) -> std::io::Result<()> {
        if let Some(user_ns) = &self.user_ns {
            user_ns.enter()?;
            die_with_supervisor(&self.supervisor)?;
        }
        if let Some(config) = &self.read_only_config {
            if self.isolation == PidIsolation::PidNamespace {
                // SAFETY: unshare takes flags only; this child is single-threaded.
                if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            config.apply()?;
        }
        if self.isolation != PidIsolation::None {
            become_init_of_agent()?;
            die_with_supervisor(&self.supervisor)?;
        }
        drop_capabilities()?;
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(ruleset) = &self.landlock {
            // SAFETY: landlock_restrict_self(ruleset_fd, flags=0) on a descriptor we own.
            let r = unsafe {
                libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32)
            };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        if let Some(prog) = &self.seccomp {
            install_filter(prog, self.listener.as_ref().map(|(_, tx)| tx))?;
        }
        Ok(())
    }

    /// After a successful spawn (the agent applied [`AgentConfinement::apply`] before its
    /// exec): takes the seccomp listener the agent sent and services it, each denied call
    /// reported ([`DenialListener::try_denial`]) and failed with [`AGENT_DENY_ERRNO`].
    /// `agent_pid` is only reported back. `None` when seccomp is not applied.
    ///
    /// A failure here leaves the calls denied all the same (the listener is gone, so the
    /// kernel fails them with `ENOSYS`), only unreported.
    ///
    /// # Errors
    /// No descriptor was received, or the servicing thread could not start.
    pub fn denial_listener(&self, agent_pid: u32) -> std::io::Result<Option<DenialListener>> {
        let Some((rx, _)) = &self.listener else {
            return Ok(None);
        };
        let fd = recv_fd(rx.as_raw_fd())?;
        DenialListener::start_answering(fd, agent_pid, AGENT_DENY_ERRNO).map(Some)
    }
}

/// Step 2: forks; the parent stays PID 1 of the namespace (never returns), the child
/// returns and becomes the agent.
fn become_init_of_agent() -> std::io::Result<()> {
    // SAFETY: a raw clone duplicating this single-threaded process (as fork, without
    // atfork handlers); both sides only make raw system calls afterwards.
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) };
    match pid {
        -1 => Err(std::io::Error::last_os_error()),
        0 => Ok(()),
        agent => init(agent as libc::pid_t),
    }
}

/// PID 1 of the agent's namespace: closes every descriptor (std's exec-error pipe and the
/// agent's output pipe must close with the agent's exec and exit, not with this process),
/// reaps every child, and exits with the agent's status once the agent is reaped (a
/// signal death as `128 + signal`: PID 1 cannot kill itself). Never returns.
fn init(agent: libc::pid_t) -> ! {
    // SAFETY: close_range over all descriptors of this process; nothing here uses them.
    unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) };
    crate::user_namespace::ignore_stop_signals();
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: wait4 writes the status into a live stack integer.
        let r = unsafe { libc::wait4(-1, &mut status, 0, std::ptr::null_mut()) };
        if r == agent {
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                128 + libc::WTERMSIG(status)
            };
            // SAFETY: _exit never returns.
            unsafe { libc::_exit(code) };
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // SAFETY: _exit never returns.
            unsafe { libc::_exit(127) };
        }
    }
}

/// The layers the agent gets at `tier` with `isolation`, on a kernel with Landlock ABI
/// `landlock_abi`, each on or off with what it covers or why not (for `doctor` and
/// `peek`; docs/security.md "The agent's confinement").
pub fn agent_layers(
    tier: Tier,
    landlock_abi: u32,
    isolation: PidIsolation,
    isolation_missing: Option<&str>,
) -> Vec<Layer> {
    let layer = |name, on, detail: String| Layer { name, on, detail };
    let mut out = Vec::new();
    out.push(if tier.landlock() {
        let mut covers =
            vec!["filesystem: write the tree, its own state, TMPDIR; read the system; never the credential stores or the state dir"];
        if landlock_abi >= 4 {
            covers.push("TCP connect only to the allowed ports");
        } else {
            covers.push("TCP not restricted (needs ABI 4)");
        }
        if landlock_abi >= 6 {
            covers.push("signals and abstract UNIX sockets scoped to the agent's processes");
        } else {
            covers.push("signals not scoped (needs ABI 6)");
        }
        layer(
            "landlock",
            true,
            format!("ABI {landlock_abi}: {}", covers.join("; ")),
        )
    } else {
        layer(
            "landlock",
            false,
            format!("not applied at tier {}", tier.as_str()),
        )
    });
    out.push(if tier.seccomp() {
        layer(
            "seccomp",
            true,
            "deny-list (EPERM): ptrace, process_vm_*, keyrings, mounts, namespaces, bpf, io_uring, modules, TIOCSTI".into(),
        )
    } else {
        layer(
            "seccomp",
            false,
            format!("not applied at tier {}", tier.as_str()),
        )
    });
    out.push(match isolation {
        PidIsolation::PidNamespace => layer(
            "pid_namespace",
            true,
            "own PID namespace (root): nothing it starts outlives it; the control socket refuses it".into(),
        ),
        PidIsolation::UserNamespace => layer(
            "pid_namespace",
            true,
            "own user and PID namespaces (unprivileged): nothing it starts outlives it; the control socket refuses it".into(),
        ),
        PidIsolation::None => layer(
            "pid_namespace",
            false,
            isolation_missing.unwrap_or("unavailable").to_owned(),
        ),
    });
    out.push(if isolation == PidIsolation::None {
        layer(
            "config_read_only",
            false,
            "no mount namespace of its own: a config file inside the work tree stays writable to the agent".into(),
        )
    } else {
        layer(
            "config_read_only",
            true,
            "the config file bind-mounted read-only in a mount namespace of its own".into(),
        )
    });
    out.push(layer(
        "no_new_privs",
        true,
        "capabilities dropped, no_new_privs: set-user-ID programs and file capabilities grant nothing".into(),
    ));
    out
}
