//! Descriptors handed between processes: a unix socket pair, one descriptor sent over it
//! with `SCM_RIGHTS` (the seccomp listener a confined process hands back to the supervisor),
//! and descriptors kept above the standard streams.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Sends `fd` over the unix socket `sock` (one data byte plus `SCM_RIGHTS`): the launcher
/// hands a seccomp listener back to the supervisor this way.
pub(crate) fn send_fd(sock: RawFd, fd: RawFd) -> std::io::Result<()> {
    use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
    let byte = [0u8; 1];
    let iov = [std::io::IoSlice::new(&byte)];
    let fds = [fd];
    let sent = sendmsg::<()>(
        sock,
        &iov,
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::MSG_NOSIGNAL,
        None,
    )?;
    if sent == 1 {
        Ok(())
    } else {
        Err(std::io::ErrorKind::WriteZero.into())
    }
}

/// Receives one descriptor sent by [`send_fd`], without waiting (it was sent before exec,
/// and a successful spawn means exec happened). The descriptor is `O_CLOEXEC`.
pub(crate) fn recv_fd(sock: RawFd) -> std::io::Result<OwnedFd> {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
    let mut byte = [0u8; 1];
    let mut iov = [std::io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!(libc::c_int);
    let msg = recvmsg::<()>(
        sock,
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_CMSG_CLOEXEC,
    )?;
    let bad = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "no listener descriptor received",
        )
    };
    if msg.flags.contains(MsgFlags::MSG_CTRUNC) {
        return Err(bad());
    }
    match msg.cmsgs()?.next() {
        Some(ControlMessageOwned::ScmRights(fds)) if fds.len() == 1 => {
            // SAFETY: SCM_RIGHTS installed `fds[0]` in this process as a new descriptor
            // owned by nobody.
            Ok(unsafe { OwnedFd::from_raw_fd(fds[0]) })
        }
        _ => Err(bad()),
    }
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
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    let (a, b) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    Ok((above_stdio(a)?, above_stdio(b)?))
}
