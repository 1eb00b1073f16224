//! Per-round child cgroups (docs/operations.md, "Round cgroups"): when the supervisor's own
//! memory cgroup is delegated to it (writable by its user: systemd `Delegate=yes` on cgroup
//! v2, a chowned directory on v1), each round's agent runs in a child cgroup
//! `round-<N>.<supervisor pid>` made before the spawn and removed after the round. The
//! round's peak memory becomes `round_cgroup_memory`, an OOM kill inside it
//! `round_oom_killed`; `[monitor.host_health] memory.round_high_mb` sets the brake and
//! `memory.round_max_mb` the hard limit.
//!
//! The agent joins its cgroup itself, between fork and exec (it writes `0` to the open
//! `cgroup.procs`, [`RoundCgroup::procs`]): nothing it starts can run outside it.
//!
//! Files per layout (kernel `admin-guide/cgroup-v2.rst` and `cgroup-v1/memory.rst`):
//!
//! | what | v2 | v1 |
//! |---|---|---|
//! | brake | `memory.high` | `memory.soft_limit_in_bytes` |
//! | hard limit | `memory.max` | `memory.limit_in_bytes` |
//! | peak | `memory.peak` | `memory.max_usage_in_bytes` |
//! | OOM kills | `memory.events` `oom_kill N` | `memory.oom_control` `oom_kill N` |

use crate::config::RoundCgroupMode;
use agent_runner_plugin_host::common::cgroup::{self, Layout, OwnCgroup, SUPERVISOR_LEAF};
use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The name prefix of round cgroups.
const PREFIX: &str = "round-";

/// The supervisor's delegated memory cgroup: rounds get children of [`Delegation::dir`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Delegation {
    /// The supervisor's own memory cgroup directory.
    pub dir: PathBuf,
    /// Its layout.
    pub layout: Layout,
}

/// The memory limits of one round, in bytes (from `[monitor.host_health] memory`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The brake (`memory.high` / `memory.soft_limit_in_bytes`).
    pub high: Option<u64>,
    /// The hard limit (`memory.max` / `memory.limit_in_bytes`).
    pub max: Option<u64>,
}

impl Limits {
    /// The limits `[monitor.host_health]` asks for (MiB there, bytes here).
    pub(crate) fn of(cfg: &crate::config::HostHealthConfig) -> Limits {
        let bytes = |mb: Option<u64>| mb.map(|mb| mb.saturating_mul(1024 * 1024));
        Limits {
            high: bytes(cfg.memory.round_high_mb),
            max: bytes(cfg.memory.round_max_mb),
        }
    }
}

/// Whether rounds get cgroups of their own under `mode`, read-only (for `doctor`): with
/// `auto`, when this process's memory cgroup is delegated to it ([`cgroup::delegated`]);
/// with `on`, when it may write it.
///
/// # Errors
/// [`NoDelegation`]: `off`, no memory controller, or the directory is not delegated.
pub(crate) fn delegation(mode: RoundCgroupMode) -> Result<Delegation, NoDelegation> {
    if mode == RoundCgroupMode::Off {
        return Err(NoDelegation::Off);
    }
    let OwnCgroup { dir, layout } =
        cgroup::own_cgroup("memory").ok_or(NoDelegation::NoMemoryController)?;
    match mode {
        RoundCgroupMode::On => cgroup::writable(&dir)?,
        _ => cgroup::delegated(&dir)?,
    }
    Ok(Delegation { dir, layout })
}

/// Why rounds get no cgroups of their own ([`delegation`]). Display says it in words, for
/// `doctor` and the log.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoDelegation {
    /// `[monitor.host_health] round_cgroup = "off"`.
    #[error("memory.round_cgroup = \"off\"")]
    Off,
    /// The supervisor's cgroup has no memory controller mounted.
    #[error("no memory controller is mounted for the supervisor's cgroup")]
    NoMemoryController,
    /// The directory is not writable, or not handed over.
    #[error(transparent)]
    NotDelegated(#[from] cgroup::NotDelegated),
}

/// [`delegation`], made ready for children at boot (before any host starts): on cgroup v2
/// a cgroup with processes cannot enable `memory` for children, so the supervisor moves
/// itself into the leaf [`SUPERVISOR_LEAF`] and enables `+memory` in
/// `cgroup.subtree_control`. `None` (and one log line when something failed) when rounds
/// run without a cgroup of their own.
pub(crate) fn prepare(mode: RoundCgroupMode) -> Option<Delegation> {
    let found = match delegation(mode) {
        Ok(d) => d,
        Err(why) => {
            tracing::debug!("rounds run without a cgroup of their own: {why}");
            return None;
        }
    };
    if found.layout == Layout::V2 {
        if let Err(e) = enable_v2_children(&found.dir) {
            tracing::warn!(
                "rounds run without a cgroup of their own: cannot enable memory for children of {}: {e}",
                found.dir.display()
            );
            return None;
        }
    }
    Some(found)
}

/// Moves this process into `<dir>/SUPERVISOR_LEAF` unless it is there, then enables
/// `memory` for `dir`'s children.
fn enable_v2_children(dir: &Path) -> std::io::Result<()> {
    let control = dir.join("cgroup.subtree_control");
    if lists(&fs::read_to_string(&control)?, "memory") {
        return Ok(());
    }
    let leaf = dir.join(SUPERVISOR_LEAF);
    match fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    fs::write(leaf.join("cgroup.procs"), std::process::id().to_string())?;
    fs::write(control, "+memory")
}

fn lists(text: &str, word: &str) -> bool {
    text.split_whitespace().any(|w| w == word)
}

/// One round's cgroup, made and limited, waiting for the agent to join.
#[derive(Debug)]
pub(crate) struct RoundCgroup {
    /// The cgroup's directory.
    pub dir: PathBuf,
    layout: Layout,
    limits: Limits,
    /// Its `cgroup.procs`, open for writing (close-on-exec), until the spawn takes it
    /// ([`RoundCgroup::take_procs`]).
    procs: Option<OwnedFd>,
}

/// What a round's cgroup was and measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Usage {
    /// The cgroup's directory (removed by now).
    pub dir: PathBuf,
    /// Its layout.
    pub layout: Layout,
    /// The limits it had.
    pub limits: Limits,
    /// Peak memory in bytes, when the kernel keeps it.
    pub peak_bytes: Option<u64>,
    /// OOM kills inside the cgroup.
    pub oom_kills: u64,
}

impl Delegation {
    /// Makes `round-<round_num>.<pid>` below the delegated cgroup with `limits`, after
    /// removing the empty round cgroups of earlier rounds and of supervisors that are gone.
    ///
    /// # Errors
    /// The OS error of `mkdir`, of writing a limit or of opening `cgroup.procs` (the
    /// directory is removed again).
    pub(crate) fn create(&self, round_num: u64, limits: Limits) -> std::io::Result<RoundCgroup> {
        sweep(&self.dir);
        let dir = self
            .dir
            .join(format!("{PREFIX}{round_num}.{}", std::process::id()));
        fs::create_dir(&dir)?;
        let made = (|| {
            let (high, max) = match self.layout {
                Layout::V2 => ("memory.high", "memory.max"),
                Layout::V1 => ("memory.soft_limit_in_bytes", "memory.limit_in_bytes"),
            };
            if let Some(bytes) = limits.high {
                fs::write(dir.join(high), bytes.to_string())?;
            }
            if let Some(bytes) = limits.max {
                fs::write(dir.join(max), bytes.to_string())?;
            }
            let procs = fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))?;
            Ok(OwnedFd::from(procs))
        })();
        match made {
            Ok(procs) => Ok(RoundCgroup {
                dir,
                layout: self.layout,
                limits,
                procs: Some(procs),
            }),
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                Err(e)
            }
        }
    }
}

/// Tries to remove a cgroup whose processes have just been reaped: the kernel may still be
/// detaching them for a moment (`EBUSY`).
const REMOVE_TRIES: u32 = 50;
const REMOVE_PAUSE: Duration = Duration::from_millis(10);

impl RoundCgroup {
    /// The open `cgroup.procs` for the agent to write `0` to between fork and exec
    /// (`AgentSpec::cgroup_procs`); `None` once taken.
    pub(crate) fn take_procs(&mut self) -> Option<OwnedFd> {
        self.procs.take()
    }

    /// A second descriptor of its `cgroup.procs`, for one more process to join it (each
    /// goal check of the round); `None` once taken or when it cannot be duplicated.
    pub(crate) fn procs_for_one_more(&self) -> Option<OwnedFd> {
        self.procs.as_ref()?.try_clone().ok()
    }

    /// OOM kills inside the cgroup so far.
    pub(crate) fn oom_kills(&self) -> u64 {
        let file = match self.layout {
            Layout::V2 => "memory.events",
            Layout::V1 => "memory.oom_control",
        };
        fs::read_to_string(self.dir.join(file)).map_or(0, |t| counter(&t, "oom_kill"))
    }

    /// Reads what the round used, then removes the cgroup (its processes are gone: the
    /// agent's end reaps them all, docs/design-notes.md). A cgroup that cannot be removed
    /// is logged and left for the next round's sweep.
    pub(crate) async fn finish(self) -> Usage {
        let read = |name: &str| fs::read_to_string(self.dir.join(name)).ok();
        let peak_file = match self.layout {
            Layout::V2 => "memory.peak",
            Layout::V1 => "memory.max_usage_in_bytes",
        };
        let usage = Usage {
            dir: self.dir.clone(),
            layout: self.layout,
            limits: self.limits,
            peak_bytes: read(peak_file).and_then(|t| t.trim().parse().ok()),
            oom_kills: self.oom_kills(),
        };
        for _ in 0..REMOVE_TRIES {
            match fs::remove_dir(&self.dir) {
                Ok(()) => return usage,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    tokio::time::sleep(REMOVE_PAUSE).await;
                }
                Err(e) => {
                    tracing::warn!("cannot remove round cgroup {}: {e}", self.dir.display());
                    return usage;
                }
            }
        }
        tracing::warn!(
            "round cgroup {} still has processes; the next round removes it",
            self.dir.display()
        );
        usage
    }
}

/// The value of `key` in a flat-keyed file (`memory.events`, `memory.oom_control`).
fn counter(text: &str, key: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Removes round cgroups below `parent` left by this supervisor's earlier rounds or by
/// supervisors that are gone (`round-<N>.<pid>`); one that still has processes stays.
fn sweep(parent: &Path) {
    cgroup::remove_stale_children(parent, |name| {
        name.strip_prefix(PREFIX)?.split_once('.')?.1.parse().ok()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_limits_read_as_the_kernel_writes_them() {
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
        let v2 = "low 0\nhigh 5\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(counter(v1, "oom_kill"), 2);
        assert_eq!(counter(v2, "oom_kill"), 1);
        assert_eq!(counter("", "oom_kill"), 0);
        let mut cfg = crate::config::HostHealthConfig::default();
        cfg.memory.round_high_mb = Some(48);
        cfg.memory.round_max_mb = Some(64);
        assert_eq!(
            Limits::of(&cfg),
            Limits {
                high: Some(48 << 20),
                max: Some(64 << 20)
            }
        );
        assert!(lists("cpu memory pids", "memory") && !lists("cpu pids", "memory"));
    }
}
