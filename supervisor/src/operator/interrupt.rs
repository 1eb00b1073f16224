//! Ctrl-C for the verbs that follow until interrupted (`watch`, `events --tail`): both
//! exit 0 on SIGINT and leave what they printed.

use crate::exit::CliError;

/// A SIGINT (Ctrl-C) listener, registered now (not at first poll).
///
/// Errors: 1 when the handler cannot be installed.
pub fn interrupt_signal() -> Result<tokio::signal::unix::Signal, CliError> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| CliError::failure(format!("cannot handle SIGINT: {e}")))
}
