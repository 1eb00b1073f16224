//! One hook call as a round's trace shows it (docs/operations.md, "Traces"): kept by
//! the host manager while a trace wants them (`HostManager::trace_calls`).

use std::time::{Duration, SystemTime};

/// Calls kept at most between two looks of a round's trace (`HostManager::take_calls`): the rest
/// are not kept.
pub(crate) const MAX_CALLS_KEPT: usize = 256;

/// One hook call as a round's trace shows it (docs/operations.md, "Traces").
#[derive(Clone, Debug)]
pub(crate) struct CallRecord {
    /// The host's name (`[plugins.hosts.<name>]`).
    pub host: String,
    /// The hook's name.
    pub hook: String,
    /// The protocol method called (`after_round`, …).
    pub method: &'static str,
    /// When the call was sent (wall clock).
    pub started: SystemTime,
    /// How long it took to its answer or failure.
    pub elapsed: Duration,
    /// Its failure (`<error type>: <message>`, redacted); `None`: answered.
    pub failure: Option<String>,
}
