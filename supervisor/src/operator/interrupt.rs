//! Ctrl-C for the verbs that follow until interrupted (`watch`, `events --tail`): both
//! exit 0 on SIGINT and leave what they printed. `events --tail` also ends, exit 0, once
//! its reader is gone ([`stdout_closed`]), even while nothing new is written: the remote
//! end of `monitor --host` must not outlive a dropped ssh link (docs/operations.md,
//! "`monitor`").

/// The SIGINT handler could not be installed (the verb exits 1).
#[derive(Debug, thiserror::Error)]
#[error("cannot handle SIGINT: {0}")]
pub(crate) struct NoInterrupt(std::io::Error);

/// A SIGINT (Ctrl-C) listener, registered now (not at first poll).
///
/// Errors: [`NoInterrupt`] when the handler cannot be installed.
pub(crate) fn interrupt_signal() -> Result<tokio::signal::unix::Signal, NoInterrupt> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).map_err(NoInterrupt)
}

/// Whether standard output leads nowhere any more: the read end of its pipe is closed
/// (`POLLERR`) or its socket peer hung up (`POLLHUP`), as when the ssh connection carrying
/// it dropped and sshd closed the session's descriptors (poll(2)). A terminal or file never
/// reports either.
pub(crate) fn stdout_closed() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: poll(2) on one valid pollfd that outlives the call, with no wait.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n == 1 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}
