//! Descriptors handed between processes: a unix socket pair, one descriptor sent over it
//! with `SCM_RIGHTS` (the seccomp listener a confined process hands back to the supervisor),
//! and descriptors kept above the standard streams.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `CMSG_SPACE(sizeof(int))`, for one descriptor.
// SAFETY: CMSG_SPACE is arithmetic on its argument only.
const CMSG_FD_SPACE: usize =
    unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;

/// A control-message buffer for one descriptor, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct CmsgBuf([u8; CMSG_FD_SPACE]);

/// Sends `fd` over the unix socket `sock` (one data byte plus `SCM_RIGHTS`). Only raw system
/// calls and stack memory: usable between fork and exec.
pub(crate) fn send_fd(sock: RawFd, fd: RawFd) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut buf = CmsgBuf([0; CMSG_FD_SPACE]);
    // SAFETY: msghdr is plain data; all-zero is a valid (empty) value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = buf.0.as_mut_ptr().cast();
    msg.msg_controllen = CMSG_FD_SPACE as _;
    // SAFETY: msg points at a control buffer of CMSG_SPACE(sizeof(int)) bytes, aligned for
    // cmsghdr, so CMSG_FIRSTHDR is non-null and the header and its int payload lie inside it.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
    }
    // SAFETY: msg and everything it points to live on this stack frame for the call.
    if unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) } == 1 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Receives one descriptor sent by [`send_fd`], without waiting (it was sent before exec,
/// and a successful spawn means exec happened). The descriptor is `O_CLOEXEC`.
pub(crate) fn recv_fd(sock: RawFd) -> std::io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut buf = CmsgBuf([0; CMSG_FD_SPACE]);
    // SAFETY: msghdr is plain data; all-zero is a valid (empty) value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = buf.0.as_mut_ptr().cast();
    msg.msg_controllen = CMSG_FD_SPACE as _;
    // SAFETY: msg and the buffers it points to live on this stack frame for the call.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let bad = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "no listener descriptor received",
        )
    };
    // SAFETY: msg was filled by recvmsg; CMSG_FIRSTHDR returns null or a header inside buf.
    let cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    if cmsg.is_null() || msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(bad());
    }
    // SAFETY: cmsg is non-null and points inside buf (see above).
    let (level, ty, len) = unsafe { ((*cmsg).cmsg_level, (*cmsg).cmsg_type, (*cmsg).cmsg_len) };
    // SAFETY: CMSG_LEN is arithmetic on its argument only.
    let want = unsafe { libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) } as usize;
    if level != libc::SOL_SOCKET || ty != libc::SCM_RIGHTS || len != want {
        return Err(bad());
    }
    // SAFETY: the header says it carries exactly one int, inside buf.
    let fd = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>()) };
    // SAFETY: SCM_RIGHTS installed `fd` in this process as a new descriptor owned by nobody.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Moves `fd` to a number ≥ 3 (keeping `FD_CLOEXEC`): std's child sets up stdin/stdout/stderr
/// with `dup2` onto 0–2 *before* our pre_exec step runs, which would clobber a descriptor we
/// still need if the supervisor was started with a standard stream closed.
pub(crate) fn above_stdio(fd: OwnedFd) -> std::io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own returns a new descriptor or -1.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `new` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// A unix socket pair (`SOCK_SEQPACKET`, close-on-exec), both ends above stdio.
pub(crate) fn socket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: socketpair writes two descriptors into the live array.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors that nothing else owns.
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((above_stdio(a)?, above_stdio(b)?))
}
