//! A guard process that kills a process group when the supervisor dies.
//!
//! [`GroupGuard::new`] makes a close-on-exec pipe: the supervisor keeps the write end in the
//! [`GroupGuard`], the launcher gets the read end and forks the guard into the target's
//! process group ([`fork_guard`]). The guard blocks in `read(2)` until every write end is
//! closed — when the supervisor drops the value or dies by any means — and then sends
//! SIGKILL to its own group. (`PR_SET_PDEATHSIG` only reaches the group leader, not what it
//! started.)

use std::os::fd::{AsRawFd, OwnedFd};

/// The supervisor's end: while it lives, the guard waits.
#[derive(Debug)]
pub struct GroupGuard {
    _write: OwnedFd,
}

impl GroupGuard {
    /// The guard and the read end to hand the launcher (close-on-exec, above stdio).
    ///
    /// # Errors
    /// `pipe2` failed.
    pub fn new() -> std::io::Result<(GroupGuard, OwnedFd)> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into the live array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        use std::os::fd::FromRawFd;
        // SAFETY: both are fresh descriptors that nothing else owns.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let read = crate::common::fd_passing::above_stdio(read)?;
        Ok((GroupGuard { _write: write }, read))
    }
}

/// In the launcher, already in the target's process group: forks the guard, which closes
/// every descriptor but `read` (the status pipe, the round log, the project lock must close
/// with the target, not with the guard), waits for the end of the pipe and kills the group.
/// Returns in the launcher; the guard never returns.
///
/// # Errors
/// `fork` failed.
pub(crate) fn fork_guard(read: OwnedFd) -> std::io::Result<()> {
    let read_fd = read.as_raw_fd();
    // SAFETY: a raw clone duplicating this single-threaded process (as fork, without atfork
    // handlers); the child only makes raw system calls.
    match unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            let read_u = read_fd as libc::c_uint;
            // SAFETY: raw system calls on integers and a stack byte; never returns.
            unsafe {
                if read_u > 0 {
                    libc::syscall(libc::SYS_close_range, 0, read_u - 1, 0);
                }
                libc::syscall(libc::SYS_close_range, read_u + 1, libc::c_uint::MAX, 0);
                let mut byte = 0u8;
                loop {
                    let n = libc::read(read_fd, std::ptr::addr_of_mut!(byte).cast(), 1);
                    if n == -1 && *libc::__errno_location() == libc::EINTR {
                        continue;
                    }
                    break;
                }
                libc::kill(0, libc::SIGKILL);
                libc::_exit(0)
            }
        }
        _ => Ok(()), // `read` closes here: only the guard keeps it
    }
}
