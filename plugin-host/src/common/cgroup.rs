//! Where this process's own cgroup is, for one controller, in either layout: the one place
//! that reads `/proc/self/cgroup` and `/proc/self/mountinfo` (kernel docs,
//! `admin-guide/cgroup-v1/cgroups.rst` and `admin-guide/cgroup-v2.rst`; docs/security.md,
//! "Resource limits", and docs/operations.md, "Round cgroups").
//!
//! * cgroup v1: each controller has its own hierarchy; `/proc/self/cgroup` has a line
//!   `<id>:<controllers>:<path>` for it, and the hierarchy is a `cgroup` mount whose super
//!   options name the controller. A hybrid system (v1 controllers plus an almost empty v2
//!   mount) is v1 for every controller bound there, so v1 is looked at first.
//! * cgroup v2: one hierarchy; the line `0::<path>`, a `cgroup2` mount. A controller is
//!   usable below a cgroup when it is listed in that cgroup's `cgroup.controllers`. A
//!   cgroup with processes of its own cannot hand memory to children ("no internal
//!   processes"), so a supervisor that uses children moves itself into the leaf
//!   [`SUPERVISOR_LEAF`] first; its own cgroup is then still the leaf's parent.

use std::fs;
use std::path::{Path, PathBuf};

/// The leaf of its delegated v2 cgroup a supervisor moves itself into, so that its own
/// cgroup can enable controllers for children (kernel `cgroup-v2.rst`, "No Internal Process
/// Constraint"). [`own_cgroup`] reports the leaf's parent.
pub const SUPERVISOR_LEAF: &str = "agent-runner-supervisor";

/// Which cgroup layout a controller is mounted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A per-controller hierarchy (`cgroup` mount).
    V1,
    /// The unified hierarchy (`cgroup2` mount).
    V2,
}

impl Layout {
    /// `"v1"` or `"v2"`, as `doctor` and the events spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::V1 => "v1",
            Layout::V2 => "v2",
        }
    }
}

/// This process's own cgroup directory for one controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnCgroup {
    /// The directory under the mount point (e.g.
    /// `/sys/fs/cgroup/memory/process_api/8a29…` on v1).
    pub dir: PathBuf,
    /// The layout the controller is in.
    pub layout: Layout,
}

/// This process's cgroup for `controller` (`"memory"`, `"pids"`), if that controller is
/// mounted: v1 when a v1 hierarchy has it, else v2 when the cgroup's `cgroup.controllers`
/// lists it. `None` when neither offers it (or `/proc` is unreadable).
pub fn own_cgroup(controller: &str) -> Option<OwnCgroup> {
    let cgroups = fs::read_to_string("/proc/self/cgroup").ok()?;
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    if let Some(dir) = v1_dir(&cgroups, &mountinfo, controller) {
        return Some(OwnCgroup {
            dir,
            layout: Layout::V1,
        });
    }
    let dir = v2_dir(&cgroups, &mountinfo)?;
    let offered = fs::read_to_string(dir.join("cgroup.controllers")).ok()?;
    offered
        .split_whitespace()
        .any(|c| c == controller)
        .then_some(OwnCgroup {
            dir,
            layout: Layout::V2,
        })
}

/// Why a cgroup directory is not this process's to make children in ([`writable`],
/// [`delegated`], `crate::common::pids_limit::pids_cgroup`). Display says why in words, for
/// `doctor` and the log.
#[derive(Debug, thiserror::Error)]
pub enum NotDelegated {
    /// The supervisor's cgroup offers no such controller to it.
    #[error("no {0} controller delegated to the supervisor's cgroup")]
    NoController(&'static str),
    /// The path holds a NUL byte (cannot be passed to the kernel).
    #[error("{}: the path holds a NUL byte", .0.display())]
    NulInPath(PathBuf),
    /// access(2) says this process's user may not write it.
    #[error("{} is not writable by uid {uid}", dir.display())]
    NotWritable {
        /// The cgroup directory.
        dir: PathBuf,
        /// This process's effective uid.
        uid: u32,
    },
    /// Its metadata could not be read.
    #[error("{}: {source}", dir.display())]
    Unreadable {
        /// The cgroup directory.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Writable, but neither owned by this (non-root) user nor marked by systemd as handed
    /// over.
    #[error(
        "{} is writable by uid {uid} but was not handed over: {} and carries no \
         systemd delegation mark (trusted.delegate)",
        dir.display(),
        if *uid == 0 { "root can write every cgroup".to_owned() } else { format!("it is owned by uid {owner}") }
    )]
    NotHandedOver {
        /// The cgroup directory.
        dir: PathBuf,
        /// This process's effective uid.
        uid: u32,
        /// The directory's owner.
        owner: u32,
    },
}

/// Whether this process's user may write `dir` (create child cgroups in it): the meaning
/// of "delegated" (systemd `Delegate=yes` on v2, a chowned directory on v1).
///
/// # Errors
/// [`NotDelegated::NulInPath`], [`NotDelegated::NotWritable`].
pub fn writable(dir: &Path) -> Result<(), NotDelegated> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| NotDelegated::NulInPath(dir.to_owned()))?;
    // SAFETY: access(2) on a NUL-terminated path that outlives the call.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
        Ok(())
    } else {
        // SAFETY: geteuid(2) has no preconditions.
        let uid = unsafe { libc::geteuid() };
        Err(NotDelegated::NotWritable {
            dir: dir.to_owned(),
            uid,
        })
    }
}

/// Whether `dir` is *delegated* to this process: writable ([`writable`]) and handed over,
/// either by ownership (a non-root user owns it: systemd chowns a delegated cgroup to the
/// unit's user, and on v1 an administrator chowns it) or by systemd's mark on a cgroup of
/// a `Delegate=yes` unit (the extended attribute `trusted.delegate` or `user.delegate` set
/// to `1`; systemd's `docs/CGROUP_DELEGATION.md`). Root can write every cgroup, so for root
/// writability alone is not delegation: a cgroup systemd did not hand over is systemd's.
///
/// # Errors
/// Those of [`writable`], [`NotDelegated::Unreadable`], [`NotDelegated::NotHandedOver`].
pub fn delegated(dir: &Path) -> Result<(), NotDelegated> {
    use std::os::unix::fs::MetadataExt;
    writable(dir)?;
    // SAFETY: geteuid(2) has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let owner = fs::metadata(dir)
        .map_err(|source| NotDelegated::Unreadable {
            dir: dir.to_owned(),
            source,
        })?
        .uid();
    if uid != 0 && owner == uid {
        return Ok(());
    }
    if ["trusted.delegate", "user.delegate"]
        .iter()
        .any(|name| xattr_is_one(dir, name))
    {
        return Ok(());
    }
    Err(NotDelegated::NotHandedOver {
        dir: dir.to_owned(),
        uid,
        owner,
    })
}

/// Whether the extended attribute `name` of `path` reads `1`.
fn xattr_is_one(path: &Path, name: &str) -> bool {
    let (Ok(path), Ok(name)) = (
        std::ffi::CString::new(path.as_os_str().as_encoded_bytes()),
        std::ffi::CString::new(name),
    ) else {
        return false;
    };
    let mut value = [0u8; 8];
    // SAFETY: getxattr(2) with NUL-terminated strings that outlive the call and a buffer
    // whose length is passed; it writes at most that many bytes.
    let n = unsafe {
        libc::getxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    n > 0 && value[..n as usize].trim_ascii() == b"1"
}

/// Removes the child cgroups of `parent` that belong to this process or to a process that
/// is gone: `owner` reads the owning pid out of a child's name (`None`: not one of ours).
/// The kernel refuses (`EBUSY`) to remove one that still has tasks, so a cgroup in use
/// stays.
pub fn remove_stale_children(parent: &Path, owner: impl Fn(&str) -> Option<u32>) {
    let me = std::process::id();
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(&owner) else {
            continue;
        };
        if pid == me || !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(e.path());
        }
    }
}

/// The v1 hierarchy directory of `controller` from `/proc/self/cgroup` and mountinfo text.
fn v1_dir(cgroups: &str, mountinfo: &str, controller: &str) -> Option<PathBuf> {
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == controller) {
            return mount_of(mountinfo, |fstype, opts| {
                fstype == "cgroup" && opts.split(',').any(|o| o == controller)
            })
            .map(|(root, mount)| join_below(&mount, &root, path));
        }
    }
    None
}

/// The v2 directory of this process (the parent when it sits in [`SUPERVISOR_LEAF`]).
fn v2_dir(cgroups: &str, mountinfo: &str) -> Option<PathBuf> {
    let path = cgroups.lines().find_map(|l| l.strip_prefix("0::"))?;
    let (root, mount) = mount_of(mountinfo, |fstype, _| fstype == "cgroup2")?;
    let dir = join_below(&mount, &root, path);
    match (dir.file_name(), dir.parent()) {
        (Some(leaf), Some(parent)) if leaf == SUPERVISOR_LEAF => Some(parent.to_path_buf()),
        _ => Some(dir),
    }
}

/// The (root, mount point) of the first mount whose fstype and super options match.
fn mount_of(mountinfo: &str, want: impl Fn(&str, &str) -> bool) -> Option<(String, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (root, mount) = (left.get(3)?, left.get(4)?);
        let (fstype, opts) = (right.first()?, right.get(2)?);
        want(fstype, opts).then(|| ((*root).to_owned(), PathBuf::from(mount)))
    })
}

/// `mount` + `path` relative to the mount's `root` (a container may mount a sub-tree).
fn join_below(mount: &Path, root: &str, path: &str) -> PathBuf {
    let rel = path.strip_prefix(root).unwrap_or(path);
    mount.join(rel.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "30 25 0:26 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
                        32 25 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
                        31 25 0:27 /ctr /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";

    #[test]
    fn mountinfo_lookup_and_relative_paths() {
        let pids = mount_of(INFO, |t, o| {
            t == "cgroup" && o.split(',').any(|x| x == "pids")
        });
        assert_eq!(
            pids,
            Some(("/".to_owned(), PathBuf::from("/sys/fs/cgroup/pids")))
        );
        let (root, mount) = mount_of(INFO, |t, _| t == "cgroup2").unwrap();
        assert_eq!(
            join_below(&mount, &root, "/ctr/a/b"),
            PathBuf::from("/sys/fs/cgroup/unified/a/b")
        );
        assert_eq!(join_below(Path::new("/m"), "/", "/"), PathBuf::from("/m"));
    }

    #[test]
    fn v1_wins_for_a_controller_it_has_and_v2_reports_the_leafs_parent() {
        let cgroups = "4:memory:/process_api/abc\n8:pids:/\n0::/ctr/svc/agent-runner-supervisor\n";
        assert_eq!(
            v1_dir(cgroups, INFO, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"))
        );
        assert_eq!(v1_dir(cgroups, INFO, "hugetlb"), None);
        assert_eq!(
            v2_dir(cgroups, INFO),
            Some(PathBuf::from("/sys/fs/cgroup/unified/svc"))
        );
        assert_eq!(
            v2_dir("0::/ctr/svc\n", INFO),
            Some(PathBuf::from("/sys/fs/cgroup/unified/svc"))
        );
    }
}
