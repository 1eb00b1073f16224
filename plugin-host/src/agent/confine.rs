//! Confining the agent of a round: [`AgentConfinement`] is prepared in the supervisor (the
//! grants, the listener's socket, the config file to protect, the PID namespace plan) and
//! written into the agent's launch plan ([`AgentConfinement::fill_plan`]); the `plugin-host`
//! launcher applies it in the agent's own process ([`crate::launcher`]), in this order:
//!
//! 1. a fresh PID namespace (docs/security.md "The agent's confinement"):
//!    * root: the launcher is already born as PID 1 of a new PID namespace
//!      ([`AgentConfinement::pid_namespace_for_next_child`], armed by the spawning thread);
//!    * an unprivileged operator where user namespaces are allowed: new user, PID, mount,
//!      IPC and UTS namespaces and a reaper ([`crate::common::user_namespace`]), the reaper
//!      ignoring the round's stop signals;
//!    * in either case, the protected paths made read-only ([`crate::agent::protected`]: the
//!      supervisor's config file, the repository's hooks, the CLIs' project settings, each
//!      existing or as a placeholder the supervisor made for its first missing component):
//!      root first enters a mount namespace of the agent's own (`unshare(CLONE_NEWNS)`; the
//!      user namespace of the unprivileged case already made one); every mount there turns
//!      private ([`make_mounts_private`]), the shadow home of the CLI's state bound over
//!      the real one ([`bind`], [`crate::agent::shadow_home`]: each shared login into the
//!      shadow first, then the shadow over `~/.claude` etc.), each directory between the work tree's root and a
//!      protected path is bound over itself ([`bind_over_itself`], shallow first), then each
//!      protected path is bound over itself and remounted read-only ([`bind_read_only`]),
//!      keeping the source mount's `nosuid`/`nodev`/`noexec` (locked in a user namespace:
//!      the remount fails with `EPERM` without them), and the working directory is entered
//!      again through the new mounts. Landlock grants add up, so the work tree's write grant
//!      would otherwise cover them; the seccomp deny-list refuses `mount`/`umount2` and
//!      Landlock refuses mount changes, so the agent cannot undo it; an unlink or rename of a
//!      mount point (a protected path, a pinned directory) fails with `EBUSY`, a write with
//!      `EROFS`;
//! 2. an *init* fork ([`become_init_of_agent`]): PID 1 of the namespace stays behind, closes
//!    every descriptor, reaps every orphan and exits with the agent's status; the agent goes
//!    on as PID 2. PID 1 ignores signals it has no handler for, which would break the
//!    agent's stop signal; and when PID 1 exits the kernel kills everything left in the
//!    namespace, so nothing the agent started (`setsid`, double fork) outlives it, and
//!    nothing in it can signal, trace or address a process outside by its pid;
//! 3. `PR_SET_PDEATHSIG` = `SIGKILL` again (the parent changed);
//! 4. every capability dropped ([`crate::common::capabilities`]), `PR_SET_NO_NEW_PRIVS`;
//! 5. `landlock_restrict_self` of the ruleset of [`crate::agent::policy::agent_fs_grants`]
//!    and the allowed TCP ports;
//! 6. the seccomp filter ([`crate::agent::policy::agent_seccomp_program`], less what the
//!    operator's switches lift), returning `SECCOMP_RET_USER_NOTIF`, with a
//!    user-notification listener: sent over a unix socket made before the spawn
//!    (`SCM_RIGHTS`), then closed, so the agent never holds it. The supervisor takes it with
//!    [`AgentConfinement::denial_listener`]: each denied call is reported by name and fails
//!    with [`AGENT_DENY_ERRNO`] (the agent goes on); each `connect` and each write of a
//!    path is looked at and let run, and those Landlock refuses are reported.
//!
//! The agent then runs by the path the supervisor found on `PATH` (it is not pinned).

use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use crate::agent::policy::{
    agent_fs_grants, granted_in_stores, withheld_paths, AgentPolicyInput, AgentSeccompSwitches,
    AGENT_DENY_ERRNO, AGENT_SECCOMP_OBSERVE,
};
use crate::agent::protected::{
    protected_set, Placeholders, ProtectedRoots, ProtectedSet, Target, LINK_COVER,
};
use crate::agent::shadow_home::{prepare as prepare_shadow, ShadowBind, ShadowHome};
use crate::agent::withheld_files::WithheldFiles;
use crate::common::fd_passing::{recv_fd, socket_pair};
use crate::common::landlock::{FsGrant, PolicyError, TcpRule};
use crate::common::layers::{landlock_layer, layer, Layer};
use crate::common::notify::{DenialListener, Observed};
use crate::common::pid_namespace::FreshPidNamespace;
use crate::common::plan::{self, Grant, Plan, ReadOnlyFile, SeccompChoice, UserNamespace};
use crate::common::probe::{kernel_landlock_abi, Tier};
use crate::common::user_namespace::user_namespaces;

/// What the agent of a round is confined with.
#[derive(Debug, Clone)]
pub struct AgentSandboxSpec {
    /// The paths of the policy.
    pub policy: AgentPolicyInput,
    /// TCP ports the agent may connect to.
    pub connect_ports: Vec<u16>,
    /// Whether the agent runs in a network namespace of its own with only loopback (the
    /// egress bridge's): a TCP connect to any other address has no route there, and the
    /// observer tells it ([`LandlockPrediction`]).
    pub own_network: bool,
    /// Which of Landlock and seccomp to apply (the gate's verdict).
    pub tier: Tier,
    /// What the operator's switches lift from the seccomp deny-list.
    pub switches: AgentSeccompSwitches,
    /// Where the protected paths lie (the work tree's root, the hooks directory).
    pub roots: ProtectedRoots,
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
    /// Unprivileged: user + PID + mount namespaces entered by the launcher.
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

/// The agent's confinement, prepared in the supervisor.
#[derive(Debug)]
pub struct AgentConfinement {
    /// The Landlock grants, where Landlock applies.
    grants: Option<Vec<FsGrant>>,
    connect_ports: Vec<u16>,
    /// With seccomp: the supervisor's end (kept) and the agent's end (passed to the
    /// launcher) of the socket the seccomp listener travels on.
    listener: Option<(OwnedFd, OwnedFd)>,
    switches: AgentSeccompSwitches,
    predicted: LandlockPrediction,
    isolation: PidIsolation,
    /// The protected paths as found before the spawn (none without a mount namespace).
    protected: ProtectedSet,
    /// Bound read-only in the agent's mount namespace.
    read_only: Vec<ReadOnlyFile>,
    /// Bound over themselves, before `read_only`.
    pinned: Vec<PathBuf>,
    /// The shadow home's binds ([`crate::agent::shadow_home`]), before `pinned`.
    binds: Vec<ShadowBind>,
    /// The shadow home's variables ([`crate::agent::shadow_home::SHADOW_ENV`]).
    shadow_env: Vec<(String, String)>,
    /// Removed (when still empty) when this confinement drops, after the agent's round.
    placeholders: Option<Placeholders>,
    tmp_dir: PathBuf,
}

/// `path`'s read-only mount: the path and the `MS_NOSUID`/`MS_NODEV`/`MS_NOEXEC` of the
/// mount holding it (from `statvfs`).
fn read_only_file(path: &Path) -> std::io::Result<ReadOnlyFile> {
    let st = nix_statvfs(path)?;
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
    Ok(ReadOnlyFile {
        path: path.to_owned(),
        locked,
        cover: None,
    })
}

/// The link cover `<state_dir>/`[`LINK_COVER`]: an empty regular file, mode 0644 (so a
/// write through the read-only mount fails with `EROFS`, as at every protected path, not
/// with a permission error), made when missing; anything else found there (not empty, not a regular file, a link) is
/// removed first and made again, never followed.
fn link_cover(state_dir: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = state_dir.join(LINK_COVER);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() && m.len() == 0 => return Ok(path),
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path)?,
        Ok(_) => std::fs::remove_file(&path)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)?;
    Ok(path)
}

/// `statvfs(2)` of `path`.
fn nix_statvfs(path: &Path) -> std::io::Result<libc::statvfs> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: statvfs is plain data; all-zero is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` a live struct.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

/// `mount(2)` with no file system type and no data.
fn mount(src: Option<&CStr>, target: &CStr, flags: libc::c_ulong) -> std::io::Result<()> {
    let src = src.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: mount with NUL-terminated paths (or null where the call takes none) and no
    // data.
    let r = unsafe {
        libc::mount(
            src,
            target.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// In the launcher, in the agent's own mount namespace: every mount made private, so
/// nothing below propagates back to the supervisor's namespace.
///
/// # Errors
/// The `mount`'s OS error.
pub(crate) fn make_mounts_private() -> std::io::Result<()> {
    mount(None, c"/", libc::MS_REC | libc::MS_PRIVATE)
}

/// In the launcher, after [`make_mounts_private`]: `source` bound over `target` with the
/// mounts below it (the shadow home over the real state, a login into the shadow).
///
/// # Errors
/// The `mount`'s OS error.
pub(crate) fn bind(source: &CStr, target: &CStr) -> std::io::Result<()> {
    mount(Some(source), target, libc::MS_BIND | libc::MS_REC)
}

/// In the launcher, after [`make_mounts_private`]: the directory `path` bound over itself
/// with the mounts below it, so renaming or removing it fails with `EBUSY`.
///
/// # Errors
/// The `mount`'s OS error.
pub(crate) fn bind_over_itself(path: &CStr) -> std::io::Result<()> {
    mount(Some(path), path, libc::MS_BIND | libc::MS_REC)
}

/// In the launcher, after [`make_mounts_private`]: `path` bound over itself and remounted
/// read-only with the `locked` flags of its mount kept.
///
/// # Errors
/// The failing `mount`'s OS error.
pub(crate) fn bind_read_only(path: &CStr, locked: libc::c_ulong) -> std::io::Result<()> {
    mount(Some(path), path, libc::MS_BIND)?;
    mount(
        None,
        path,
        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | locked,
    )
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `MOUNT_ATTR_RDONLY`.
const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// In the launcher, after [`make_mounts_private`]: the empty file `cover` mounted read-only
/// over the symbolic link `link` itself, which is never followed: a detached clone of
/// `cover`'s mount (`open_tree`), made read-only before it is attached
/// (`mount_setattr`), attached by `move_mount` without `MOVE_MOUNT_T_SYMLINKS`, so the
/// link's own entry becomes the mount point. Through `link` the agent then sees an empty
/// read-only file: a write fails with `EROFS`, a path beneath it with `ENOTDIR`, an unlink
/// or rename of it with `EBUSY` (docs/security.md "Protected paths").
///
/// # Errors
/// The failing call's OS error.
pub(crate) fn cover_link(cover: &CStr, link: &CStr) -> std::io::Result<()> {
    use std::os::fd::FromRawFd;
    let flags = (libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC) as libc::c_uint;
    // SAFETY: open_tree with a NUL-terminated path; it returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, cover.as_ptr(), flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open_tree and is owned by nothing else.
    let tree = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr on our descriptor with an empty path and a live struct of the
    // size passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: move_mount of our descriptor (empty path) onto a NUL-terminated path;
    // without MOVE_MOUNT_T_SYMLINKS the path's last link is not followed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            link.as_ptr(),
            libc::MOVE_MOUNT_F_EMPTY_PATH as libc::c_uint,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// While alive, the spawning thread's next child is born in a fresh PID namespace (root);
/// drop it right after the spawn.
#[derive(Debug)]
pub struct PidNamespaceGuard(#[allow(dead_code)] FreshPidNamespace);

impl AgentConfinement {
    /// Prepares the confinement of `spec` (the grants where Landlock applies, the
    /// listener's socket where seccomp does), creates the TMPDIR, and plans the PID
    /// namespace of `isolation`.
    ///
    /// # Errors
    /// [`AgentConfineError`]: the TMPDIR cannot be created, the socket made, or the config
    /// file found.
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
        let mut policy = spec.policy.clone();
        let mut shadow = None;
        if isolation != PidIsolation::None {
            if let Some(home) = &policy.home {
                shadow =
                    prepare_shadow(&policy.state_dir, home, &policy.cli).map_err(io(&format!(
                        "the shadow home of {} in {}",
                        policy.cli,
                        policy.state_dir.display()
                    )))?;
                policy.shadow = Some(
                    shadow
                        .as_ref()
                        .map(|s: &ShadowHome| s.writable.clone())
                        .unwrap_or_default(),
                );
            }
        }
        let grants = spec.tier.landlock().then(|| agent_fs_grants(&policy));
        let mut predicted = LandlockPrediction::new(grants.as_deref(), &spec.connect_ports);
        if grants.is_some() {
            predicted.withheld = WithheldFiles::walk(
                withheld_paths(&policy),
                &granted_in_stores(&policy.read_paths, &policy.write_paths),
            );
        }
        predicted.unroutable = spec.own_network;
        if let Some(s) = &shadow {
            // The agent writes its shadow by the real paths it is bound over.
            predicted.also_writable(
                s.binds
                    .iter()
                    .filter(|b| s.writable.contains(&b.source))
                    .map(|b| b.target.clone()),
            );
        }
        let listener = if spec.tier.seccomp() {
            Some(socket_pair().map_err(io("the seccomp listener's socket"))?)
        } else {
            None
        };
        let mut confinement = AgentConfinement {
            grants,
            connect_ports: spec.connect_ports.clone(),
            listener,
            switches: spec.switches,
            predicted,
            isolation,
            protected: ProtectedSet::default(),
            read_only: Vec::new(),
            pinned: Vec::new(),
            shadow_env: shadow.as_ref().map(|s| s.env.clone()).unwrap_or_default(),
            binds: shadow.map(|s| s.binds).unwrap_or_default(),
            placeholders: None,
            tmp_dir: tmp.clone(),
        };
        if isolation == PidIsolation::None {
            return Ok(confinement);
        }
        let canonical = |p: &Path, what: &str| {
            p.canonicalize()
                .map_err(io(&format!("the {what} {}", p.display())))
        };
        let roots = ProtectedRoots {
            tree_root: canonical(&spec.roots.tree_root, "work tree")?,
            work_dir: canonical(&spec.roots.work_dir, "work dir")?,
            hooks_dirs: spec.roots.hooks_dirs.clone(),
            repo_dirs: spec.roots.repo_dirs.clone(),
            config: canonical(&spec.roots.config, "config file")?,
        };
        let set = protected_set(&roots);
        for p in &set.paths {
            if let Target::LinkOutside(at) = &p.target {
                return Err(AgentConfineError::Io {
                    what: format!(
                        "the protected path {}: {} on its way is a symbolic link outside the work tree, which the agent's mounts would neither follow nor cover (docs/security.md \"Protected paths\"); name the directory without the link",
                        p.path.display(),
                        at.display()
                    ),
                    source: std::io::Error::from_raw_os_error(libc::ELOOP),
                });
            }
        }
        confinement.placeholders = Some(
            Placeholders::make(&spec.policy.state_dir, &set.placeholders())
                .map_err(io("the protected paths' placeholders"))?,
        );
        for path in set.read_only() {
            confinement.read_only.push(
                read_only_file(&path)
                    .map_err(io(&format!("the protected path {}", path.display())))?,
            );
        }
        let links = set.links();
        if !links.is_empty() {
            let cover = link_cover(&spec.policy.state_dir)
                .map_err(io("the cover of the links at protected paths"))?;
            let mut file = read_only_file(&cover)
                .map_err(io(&format!("the link cover {}", cover.display())))?;
            file.cover = Some(cover);
            for link in links {
                confinement.read_only.push(ReadOnlyFile {
                    path: link,
                    ..file.clone()
                });
            }
        }
        confinement.pinned = set.pins.clone();
        confinement.protected = set;
        Ok(confinement)
    }

    /// The agent's TMPDIR.
    pub fn tmp_dir(&self) -> &Path {
        &self.tmp_dir
    }

    /// The protected paths as found before the spawn (empty without a mount namespace).
    pub fn protected(&self) -> &ProtectedSet {
        &self.protected
    }

    /// Whether the observer's walk of the credential stores stopped at its cap
    /// ([`crate::agent::withheld_files::MAX_WITHHELD_FILES`]): reads past it are refused
    /// by Landlock but not recorded.
    pub fn withheld_truncated(&self) -> bool {
        self.predicted.withheld.truncated()
    }

    /// The variables the agent's CLI needs while its shadow home is bound (name, value:
    /// [`crate::agent::shadow_home::SHADOW_ENV`]); empty without a shadow.
    pub fn shadow_env(&self) -> &[(String, String)] {
        &self.shadow_env
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

    /// Writes the module docs' steps into `plan` (a plan of [`Plan::program`]) and returns
    /// the descriptors the launcher must inherit for them.
    pub fn fill_plan(&self, plan: &mut Plan) -> Vec<RawFd> {
        let mut fds = Vec::new();
        if self.isolation == PidIsolation::UserNamespace {
            plan.user_namespace = Some(UserNamespace::Agent);
        }
        if self.isolation != PidIsolation::None {
            plan.mount_namespace = self.isolation == PidIsolation::PidNamespace;
            plan.binds = self
                .binds
                .iter()
                .map(|b| plan::Bind {
                    source: b.source.clone(),
                    target: b.target.clone(),
                })
                .collect();
            plan.pinned = self.pinned.clone();
            plan.read_only = self.read_only.clone();
        }
        plan.init = self.isolation != PidIsolation::None;
        plan.drop_capabilities = true;
        plan.no_new_privs = true;
        plan.landlock = self.grants.as_ref().map(|grants| plan::Landlock {
            grants: grants.iter().map(Grant::from).collect(),
            verified: None,
            tcp: TcpRule::ConnectTo(self.connect_ports.clone()),
        });
        if let Some((_, tx)) = &self.listener {
            fds.push(tx.as_raw_fd());
            plan.seccomp = Some(plan::Seccomp {
                program: SeccompChoice::Agent(self.switches),
                listener_to: Some(tx.as_raw_fd()),
            });
        }
        fds
    }

    /// After a successful launch (the launcher applied the plan before its exec): takes the
    /// seccomp listener the launcher sent and services it, each denied call reported
    /// ([`DenialListener::try_denial`]) and failed with [`AGENT_DENY_ERRNO`], each call of
    /// [`AGENT_SECCOMP_OBSERVE`] looked at and let run, those Landlock refuses (predicted
    /// from the policy: a TCP connect to a port not allowed, a write outside every write
    /// grant) reported ([`DenialListener::try_observed`]).
    /// `agent_pid` is only reported back. `None` when seccomp is not applied.
    ///
    /// Without the listener the kernel fails every notified call with `ENOSYS`: the denied
    /// ones, and the observed `connect`s too, so the caller ends the agent on a failure.
    ///
    /// # Errors
    /// No descriptor was received, or the servicing thread could not start.
    pub fn denial_listener(&self, agent_pid: u32) -> std::io::Result<Option<DenialListener>> {
        let Some((rx, _)) = &self.listener else {
            return Ok(None);
        };
        let fd = recv_fd(rx.as_raw_fd())?;
        let predicted = self.predicted.clone();
        DenialListener::start_answering(
            fd,
            agent_pid,
            AGENT_DENY_ERRNO,
            AGENT_SECCOMP_OBSERVE,
            Box::new(move |o| predicted.refuses(o)),
        )
        .map(Some)
    }
}

/// What Landlock refuses the agent, predicted from its policy for the seccomp observer
/// (docs/security.md "Denials told, not silent"): a prediction on what the caller's memory
/// held while its call waited, racy and the agent's to forge — it reports, it never
/// decides.
#[derive(Debug, Clone)]
struct LandlockPrediction {
    /// Landlock's TCP rule applies (Landlock applied, the kernel's ABI 4 or later).
    tcp: bool,
    /// The ports TCP may connect to.
    connect_ports: Vec<u16>,
    /// The agent is in its own network namespace with only loopback: a TCP connect to any
    /// other address fails (`ENETUNREACH`), told so that a client ignoring the proxy
    /// variables is seen.
    unroutable: bool,
    /// Landlock's file rules apply.
    files: bool,
    /// Where entries may be made and removed (`ReadWrite`, `ReadWriteExecute` grants),
    /// canonical.
    writable_trees: Vec<PathBuf>,
    /// Where existing files may be written: those and the `Device` grants, canonical.
    writable_files: Vec<PathBuf>,
    /// The credential stores, by identity: no grant reaches them.
    withheld: WithheldFiles,
}

impl LandlockPrediction {
    fn new(grants: Option<&[FsGrant]>, connect_ports: &[u16]) -> Self {
        use crate::common::landlock::FsAccess;
        let canonical = |g: &FsGrant| g.path.canonicalize().ok();
        let trees: Vec<PathBuf> = grants
            .unwrap_or_default()
            .iter()
            .filter(|g| matches!(g.access, FsAccess::ReadWrite | FsAccess::ReadWriteExecute))
            .filter_map(canonical)
            .collect();
        let mut files = trees.clone();
        files.extend(
            grants
                .unwrap_or_default()
                .iter()
                .filter(|g| g.access == FsAccess::Device)
                .filter_map(canonical),
        );
        LandlockPrediction {
            tcp: grants.is_some() && kernel_landlock_abi().unwrap_or(0) >= 4,
            connect_ports: connect_ports.to_vec(),
            unroutable: false,
            files: grants.is_some(),
            writable_trees: trees,
            writable_files: files,
            withheld: WithheldFiles::default(),
        }
    }

    /// Adds `paths` (canonical) where writes are allowed: the real paths the shadow home is
    /// bound over, as the agent names them.
    fn also_writable(&mut self, paths: impl Iterator<Item = PathBuf>) {
        for path in paths {
            self.writable_files.push(path.clone());
            self.writable_trees.push(path);
        }
    }

    /// Whether Landlock refuses `observed`: a TCP connect to a port not allowed; a write
    /// outside every write grant; a read of a credential store. Also a TCP connect out of
    /// the agent's own network namespace (not loopback), which nothing routes.
    fn refuses(&self, observed: &Observed) -> bool {
        match observed {
            Observed::Read { file, .. } => self.files && self.withheld.contains(*file),
            Observed::Connect { address, tcp, .. } => {
                let refused = self.tcp && !self.connect_ports.contains(&address.port());
                let unrouted = self.unroutable && !address.ip().is_loopback();
                *tcp && (refused || unrouted)
            }
            Observed::Write {
                path,
                existing_file,
                ..
            } => {
                let (roots, at) = if *existing_file {
                    (&self.writable_files, path.as_path())
                } else {
                    (&self.writable_trees, path.parent().unwrap_or(path))
                };
                self.files && !roots.iter().any(|r| at.starts_with(r))
            }
        }
    }
}

/// In the launcher: forks; the parent stays PID 1 of the namespace (never returns), the
/// child returns and becomes the agent (or the goal check).
///
/// # Errors
/// `fork` failed.
pub(crate) fn become_init_of_agent() -> std::io::Result<()> {
    // SAFETY: a raw clone duplicating this single-threaded process (as fork, without
    // atfork handlers); both sides only make raw system calls afterwards.
    let pid = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) };
    match pid {
        -1 => Err(std::io::Error::last_os_error()),
        0 => Ok(()),
        agent => init(agent as libc::pid_t),
    }
}

/// PID 1 of the agent's namespace: closes every descriptor (the launcher's status pipe and
/// the agent's output pipe must close with the agent's exec and exit, not with this
/// process), reaps every child, and exits with the agent's status once the agent is reaped
/// (a signal death as `128 + signal`: PID 1 cannot kill itself). Never returns.
fn init(agent: libc::pid_t) -> ! {
    // SAFETY: close_range over all descriptors of this process; nothing here uses them.
    unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) };
    crate::common::user_namespace::ignore_stop_signals();
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
    switches: AgentSeccompSwitches,
) -> Vec<Layer> {
    let mut out = Vec::new();
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
    out.push(landlock_layer(tier, landlock_abi, &covers));
    out.push(if tier.seccomp() {
        let unix = if switches.unix_sockets {
            "AF_UNIX sockets allowed ([agent.sandbox] unix_sockets = true)"
        } else {
            "AF_UNIX sockets refused but socketpair ([agent.sandbox] unix_sockets = false)"
        };
        let namespaces = if switches.user_namespaces {
            "new namespaces allowed ([agent.sandbox] user_namespaces = true)"
        } else {
            "new namespaces refused, clone3 ENOSYS ([agent.sandbox] user_namespaces = false)"
        };
        layer(
            "seccomp",
            true,
            format!("deny-list (EPERM, recorded): ptrace, process_vm_*, keyrings, mounts, setns, bpf, io_uring, modules, TIOCSTI; {unix}; {namespaces}; connects observed"),
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
            "own PID namespace (root): nothing it starts outlives it; the control socket refuses it",
        ),
        PidIsolation::UserNamespace => layer(
            "pid_namespace",
            true,
            "own user and PID namespaces (unprivileged): nothing it starts outlives it; the control socket refuses it",
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
            "no mount namespace of its own: a config file inside the work tree stays writable to the agent",
        )
    } else {
        layer(
            "config_read_only",
            true,
            "the config file bind-mounted read-only in a mount namespace of its own",
        )
    });
    out.push(crate::agent::protected::layer(
        isolation != PidIsolation::None,
    ));
    out.push(crate::agent::shadow_home::layer(
        isolation != PidIsolation::None,
    ));
    out.push(layer(
        "no_new_privs",
        true,
        "capabilities dropped, no_new_privs: set-user-ID programs and file capabilities grant nothing",
    ));
    out
}
