//! What leaves the machine for the operator's own systems, sent beside the loop and never
//! holding it up.
//!
//! - [`notify`]: `serve`'s webhooks, sent from a thread of their own with retries;
//!   [`notify_http`]: one POST; [`notify_text`]: the chat body's sentence.
//! - [`round_trace`]: each round as an OpenTelemetry trace, exported in the background.

pub(crate) mod notify;
pub(crate) mod notify_http;
pub(crate) mod notify_text;
pub(crate) mod round_trace;
