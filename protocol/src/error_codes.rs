//! JSON-RPC error codes used by protocol v1 (`docs/protocol.md` §6; the -327xx codes are the
//! JSON-RPC 2.0 specification's own).

/// Invalid JSON was received.
pub const PARSE_ERROR: i32 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i32 = -32600;
/// The method does not exist or is not provided by this host.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i32 = -32602;
/// Internal error of the host.
pub const INTERNAL_ERROR: i32 = -32603;
/// The hook itself failed (application error).
pub const HOOK_FAILED: i32 = -32000;
/// The host does not speak the requested protocol version; `data` is
/// `{"supported": [..]}`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32001;
