//! Wire types of the agent-runner plugin host protocol, version 1.
//!
//! A *host* is an executable, in any language, that provides hooks. The supervisor talks to
//! it with JSON-RPC 2.0 objects, one per line, on the host's stdin/stdout
//! (`docs/protocol.md`).
//!
//! This crate owns the wire format and nothing else: message types (serde), method names,
//! limits, error codes, validation and redaction, and the one mark hosts read outside the
//! wire (`reflog`: how the supervisor's own commits show in `.git`). It does no I/O.
//! Decoding is strict: unknown fields, wrong types and out-of-range values are rejected
//! with an [`InvalidMessage`] naming the field.

pub mod error_codes;
mod family;
pub mod limits;
pub mod line;
pub mod methods;
pub mod printable;
pub mod redact;
pub mod reflog;
pub mod schema;
pub mod tail;
mod types;
pub mod validate;

pub use family::{Family, FamilySpec};
pub use types::*;
pub use validate::{
    check_host_events, decode, decode_detection, decode_dirty_result, decode_enrichment,
    decode_initialize_result, decode_observation, decode_post_round_result, decode_response,
    decode_round_decision, decode_spawn_decision, decode_startup_result, EnvelopeError,
    InvalidMessage, Response,
};

/// The protocol version this crate implements (`initialize.protocol_version`).
pub const PROTOCOL_VERSION: u32 = 1;
