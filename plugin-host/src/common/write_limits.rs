//! Bounds on what a host writes (docs/security.md "Write limits").
//!
//! * **Per file**: `RLIMIT_FSIZE` = `file_max_mb`, with `SIGXFSZ` ignored before exec (an
//!   ignored disposition survives `execve`), so a write past the limit fails with `EFBIG`
//!   (a short write first, up to the limit) instead of killing the host. Applies to every
//!   regular file the host writes, in any directory.
//! * **TMPDIR in total**: where the child may create a mount namespace (root, or a user
//!   namespace, see [`crate::common::user_namespace`]), the host's `tmp_dir` is a fresh `tmpfs` of
//!   `tmp_max_mb` (and at most [`TMPFS_INODES`] files) mounted over the directory in the
//!   host's *own* mount namespace ([`PrivateTmp::mount`]): writes past it fail with
//!   `ENOSPC`, and its contents vanish with the host (the supervisor's view of the
//!   directory stays empty). Mounts of the supervisor's namespace are made slaves first, so
//!   nothing propagates back.
//! * **The state directory in total** is not a kernel bound: the supervisor measures it
//!   during and after every call and disables a host that went over (supervisor side, see
//!   `docs/security.md`).

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Default `RLIMIT_FSIZE` of a host, in MiB (largest single file it may write).
pub const DEFAULT_FILE_MAX_MB: u64 = 16;
/// Default size of a host's private TMPDIR (`tmpfs`), in MiB.
pub const DEFAULT_TMP_MAX_MB: u64 = 64;
/// Default total size of a host's state directory, in MiB (checked by the supervisor).
pub const DEFAULT_STATE_MAX_MB: u64 = 64;
/// Most files and directories in a host's private TMPDIR (`tmpfs` `nr_inodes`).
pub const TMPFS_INODES: u64 = 4096;

/// The `landlock_path_beneath_attr` of the kernel ABI (packed: 12 bytes).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

/// A private `tmpfs` for TMPDIR, prepared before the fork.
#[derive(Debug)]
pub(crate) struct PrivateTmp {
    target: CString,
    options: CString,
    /// Whether the child must unshare its mount namespace itself (root); false when it
    /// already has one (the user-namespace path).
    unshare: bool,
    /// The Landlock rights granted beneath `tmp_dir` (the bits of the ruleset), added for
    /// the new tmpfs root: a rule on the directory below the mount does not cover it.
    rights: u64,
}

impl PrivateTmp {
    /// A plan mounting `max_mb` MiB over `tmp_dir`, whose Landlock grant is `rights`.
    ///
    /// # Errors
    /// `None` if `tmp_dir` contains a NUL byte (the caller reports it).
    pub(crate) fn new(tmp_dir: &Path, max_mb: u64, unshare: bool, rights: u64) -> Option<Self> {
        let bytes = max_mb.saturating_mul(1024 * 1024);
        Some(PrivateTmp {
            target: CString::new(tmp_dir.as_os_str().as_bytes()).ok()?,
            options: CString::new(format!("size={bytes},nr_inodes={TMPFS_INODES},mode=0700"))
                .ok()?,
            unshare,
            rights,
        })
    }

    /// Between fork and exec: (unshare the mount namespace,) make every mount a slave,
    /// mount the tmpfs, and grant it in the Landlock ruleset `ruleset` (if any). Raw system
    /// calls only.
    ///
    /// # Errors
    /// The OS error of the failing step.
    pub(crate) fn mount(&self, ruleset: Option<RawFd>) -> std::io::Result<()> {
        let fail = || Err(std::io::Error::last_os_error());
        // SAFETY: unshare takes flags only.
        if self.unshare && unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
            return fail();
        }
        // SAFETY: mount with static strings; changes propagation only, in our namespace.
        let r = unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_SLAVE,
                std::ptr::null(),
            )
        };
        if r != 0 {
            return fail();
        }
        // SAFETY: mount with NUL-terminated strings owned by self.
        let r = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                self.target.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                self.options.as_ptr().cast(),
            )
        };
        if r != 0 {
            return fail();
        }
        let Some(ruleset) = ruleset else {
            return Ok(());
        };
        // SAFETY: open of a NUL-terminated path owned by self.
        let fd = unsafe {
            libc::open(
                self.target.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return fail();
        }
        let attr = PathBeneathAttr {
            allowed_access: self.rights,
            parent_fd: fd,
        };
        // SAFETY: landlock_add_rule reads the live packed attribute struct.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset,
                LANDLOCK_RULE_PATH_BENEATH,
                std::ptr::addr_of!(attr),
                0u32,
            )
        };
        let err = std::io::Error::last_os_error();
        // SAFETY: close of the descriptor just opened.
        unsafe { libc::close(fd) };
        if r != 0 {
            return Err(err);
        }
        Ok(())
    }
}

/// Between fork and exec: ignore `SIGXFSZ`, so `RLIMIT_FSIZE` fails writes with `EFBIG`
/// instead of killing (the ignored disposition survives `execve`).
pub(crate) fn ignore_sigxfsz() -> std::io::Result<()> {
    // SAFETY: sigaction with a zeroed struct whose handler is SIG_IGN; async-signal-safe.
    let r = unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_IGN;
        libc::sigaction(libc::SIGXFSZ, &act, std::ptr::null_mut())
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// What each entry beneath a state directory counts for at least, in bytes: an empty file,
/// a symlink or a directory takes an inode and a directory entry but maybe no block, so a
/// million of them would otherwise count for almost nothing (22 MiB) and slow every
/// measurement (docs/security.md "Write limits").
pub const ENTRY_CHARGE_BYTES: u64 = 4096;

/// Bytes charged for the entries beneath `dir`: each its allocated blocks (sparse files
/// count for what they occupy), at least [`ENTRY_CHARGE_BYTES`]; symlinks not followed; 0
/// if `dir` is missing. Unreadable entries are skipped.
pub fn disk_usage(dir: &Path) -> u64 {
    disk_usage_up_to(dir, u64::MAX)
}

/// [`disk_usage`], but the walk stops as soon as the total is above `stop_above` and
/// returns that total: one measurement reads at most `stop_above / ENTRY_CHARGE_BYTES + 1`
/// entries, however many the host made.
pub fn disk_usage_up_to(dir: &Path, stop_above: u64) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0u64;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.path().symlink_metadata() else {
                continue;
            };
            let charge = meta.blocks().saturating_mul(512).max(ENTRY_CHARGE_BYTES);
            total = total.saturating_add(charge);
            if total > stop_above {
                return total;
            }
            if meta.is_dir() {
                stack.push(e.path());
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_entries_count_and_the_walk_stops_past_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(disk_usage(dir.path()), 0);
        for i in 0..100 {
            std::fs::write(dir.path().join(format!("e{i}")), "").unwrap();
        }
        assert_eq!(disk_usage(dir.path()), 100 * ENTRY_CHARGE_BYTES);
        let bound = 10 * ENTRY_CHARGE_BYTES;
        assert_eq!(
            disk_usage_up_to(dir.path(), bound),
            bound + ENTRY_CHARGE_BYTES
        );
    }
}
