//! Ctrl-C for the verbs that follow until interrupted (`watch`, `events --tail`): both
//! exit 0 on SIGINT and leave what they printed.

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
