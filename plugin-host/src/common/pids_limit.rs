//! A bound on the number of processes and threads of a host: a `pids` cgroup per launch.
//!
//! `RLIMIT_NPROC` cannot do this: it counts per user, and the kernel ignores it for root
//! (`INIT_USER`) and for `CAP_SYS_ADMIN`/`CAP_SYS_RESOURCE` holders — the supervisor runs as
//! root. The `pids` controller counts the tasks of a cgroup, whoever owns them: once
//! `pids.max` tasks exist, `fork`/`clone` fail with `EAGAIN` inside the host, so a fork bomb
//! stays a small, bounded tree (and dies with the host, see [`crate::common::pid_namespace`]).
//!
//! Before the fork, [`PidsCgroup::create`] makes `agent-runner.<supervisor pid>.<n>` below
//! the supervisor's own cgroup in the `pids` hierarchy (cgroup v1 `pids`, or cgroup v2 when
//! the supervisor's cgroup delegates `pids` to its children), writes `pids.max`, and opens
//! its `cgroup.procs` for writing. Between fork and exec, the child writes `"0"` to that
//! descriptor, which moves the writer itself into the cgroup: one raw `write(2)`.
//!
//! Cgroups of hosts that have exited are removed (`rmdir`, which the kernel refuses while a
//! task is inside) by the next [`PidsCgroup::create`] of any supervisor: its own earlier ones,
//! and those of supervisors that no longer run. Where no `pids` controller is available,
//! [`PidsCgroup::create`] returns `None` and the host runs without this bound
//! (`docs/security.md`).

use crate::common::cgroup::{self, Layout};
use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Default bound on a host's tasks (processes and threads together).
pub const DEFAULT_PIDS_MAX: u64 = 128;

/// Name prefix of the per-launch cgroups.
const PREFIX: &str = "agent-runner.";

/// Serializes sweeping and creating, so a sweep never removes a cgroup whose child has not
/// joined it yet.
static LOCK: Mutex<()> = Mutex::new(());
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A per-launch `pids` cgroup, ready for the child to join.
#[derive(Debug)]
pub(crate) struct PidsCgroup {
    /// `cgroup.procs` of the new cgroup, open for writing (`O_CLOEXEC`); the child writes
    /// `"0"` to it.
    pub(crate) procs: OwnedFd,
    /// Keep until the child has joined (after the fork): no sweep runs meanwhile.
    pub(crate) guard: std::sync::MutexGuard<'static, ()>,
}

impl PidsCgroup {
    /// Creates a cgroup allowing `max` tasks. `Ok(None)` when this system offers no
    /// writable `pids` controller to the supervisor.
    ///
    /// # Errors
    /// The OS error of creating the cgroup, writing `pids.max` or opening `cgroup.procs`
    /// once a writable `pids` hierarchy was found.
    pub(crate) fn create(max: u64) -> std::io::Result<Option<Self>> {
        let Some(parent) = own_pids_cgroup() else {
            return Ok(None);
        };
        let guard = LOCK.lock().unwrap_or_else(|p| p.into_inner());
        sweep(&parent);
        let dir = parent.join(format!(
            "{PREFIX}{}.{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::EROFS) => return Ok(None),
            Err(e) => return Err(e),
        }
        let made = (|| {
            fs::write(dir.join("pids.max"), max.to_string())?;
            let procs = fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))?;
            Ok(OwnedFd::from(procs))
        })();
        match made {
            Ok(procs) => Ok(Some(PidsCgroup { procs, guard })),
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                Err(e)
            }
        }
    }
}

/// The cgroup below which hosts' `pids` cgroups are made, if this process may create
/// them there; otherwise why not (for `doctor`).
///
/// # Errors
/// [`cgroup::NotDelegated::NoController`] (`pids`), or why [`cgroup::writable`] refused.
pub fn pids_cgroup() -> Result<PathBuf, cgroup::NotDelegated> {
    let dir = own_pids_cgroup().ok_or(cgroup::NotDelegated::NoController("pids"))?;
    cgroup::writable(&dir)?;
    Ok(dir)
}

/// The supervisor's own cgroup directory in a `pids` hierarchy, if any: v1, or v2 when
/// the cgroup hands the `pids` controller to its children (`cgroup.subtree_control`).
fn own_pids_cgroup() -> Option<PathBuf> {
    let own = cgroup::own_cgroup("pids")?;
    match own.layout {
        Layout::V1 => Some(own.dir),
        Layout::V2 => {
            let delegated = fs::read_to_string(own.dir.join("cgroup.subtree_control")).ok()?;
            delegated
                .split_whitespace()
                .any(|c| c == "pids")
                .then_some(own.dir)
        }
    }
}

/// Removes the cgroups of exited hosts below `parent`: ours, and those of supervisors that
/// are gone (named `agent-runner.<supervisor pid>.<n>`).
fn sweep(parent: &Path) {
    cgroup::remove_stale_children(parent, |name| {
        name.strip_prefix(PREFIX)?.split('.').next()?.parse().ok()
    });
}
