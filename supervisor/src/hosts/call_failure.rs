//! How a hook call fails: the taxonomy ([`ErrorType`], `hook_failed.error_type`) and the
//! failure itself ([`CallFailure`]), its message redacted and capped.

use agent_runner_protocol::redact::redact_and_cap;

/// The failure taxonomy of a hook call (`hook_failed.error_type`, `docs/protocol.md`
/// §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorType {
    /// The host answered with a JSON-RPC error object.
    RpcError,
    /// The result broke the contract (shape, vocabulary, range).
    InvalidResult,
    /// No answer within the timeout.
    Timeout,
    /// The host died (exit or a signal other than the sandbox's).
    Crashed,
    /// The seccomp filter killed the host.
    KilledBySandbox,
    /// Non-protocol bytes on stdout, an oversize line, stdout closed while alive.
    ProtocolViolation,
}

impl ErrorType {
    /// The event spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ErrorType::RpcError => "rpc_error",
            ErrorType::InvalidResult => "invalid_result",
            ErrorType::Timeout => "timeout",
            ErrorType::Crashed => "crashed",
            ErrorType::KilledBySandbox => "killed_by_sandbox",
            ErrorType::ProtocolViolation => "protocol_violation",
        }
    }

    /// Whether the host process must be killed after this failure.
    pub(super) fn ends_host(self) -> bool {
        !matches!(self, ErrorType::RpcError | ErrorType::InvalidResult)
    }
}

/// A failed call: its type and a redacted, capped message.
#[derive(Clone, Debug)]
pub struct CallFailure {
    /// The taxonomy entry.
    pub error_type: ErrorType,
    /// What happened, for `hook_failed.error_message`.
    pub message: String,
    /// The signal that ended the host, when one did.
    pub signal: Option<i32>,
    /// The JSON-RPC error code and data, for `rpc_error`.
    pub rpc: Option<(i32, Option<String>)>,
    /// The system call the sandbox denied, for `killed_by_sandbox`.
    pub syscall: Option<&'static str>,
    /// The last lines of the host's stderr, for a failure that ended the host
    /// (`hook_failed.stderr_tail`, docs/protocol.md §6); empty otherwise.
    pub stderr_tail: Vec<String>,
}

impl CallFailure {
    pub(super) fn new(error_type: ErrorType, message: String) -> Self {
        CallFailure {
            error_type,
            message: redact_and_cap(&message),
            signal: None,
            rpc: None,
            syscall: None,
            stderr_tail: Vec::new(),
        }
    }

    /// Adds what caused the failure, when more is known than its kind: `; <cause>`.
    pub(super) fn with_cause(mut self, cause: &str) -> Self {
        self.message = redact_and_cap(&format!("{}; {cause}", self.message));
        self
    }

    /// Attaches the host's last stderr lines and names the last one in the message, so the
    /// operator reads the host's own words ("openssl.cnf: Permission denied"), not only
    /// its exit status.
    pub(super) fn with_stderr_tail(mut self, tail: Vec<String>) -> Self {
        if let Some(last) = tail.last() {
            self.message = redact_and_cap(&format!("{}; its stderr ends: {last}", self.message));
        }
        self.stderr_tail = tail;
        self
    }

    pub(super) fn with_syscall(mut self, name: &'static str) -> Self {
        self.syscall = Some(name);
        self
    }

    pub(super) fn with_signal(mut self, signal: i32) -> Self {
        self.signal = Some(signal);
        self
    }

    pub(super) fn with_rpc(mut self, code: i32, data: Option<String>) -> Self {
        self.rpc = Some((code, data));
        self
    }
}
