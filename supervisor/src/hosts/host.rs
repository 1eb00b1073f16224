//! One running host process: launched confined through `agent-runner-plugin-host`, spoken
//! to with jsonrpsee's client over [`super::transport`], its stderr forwarded to our log.

use agent_runner_plugin_host::launch::{self, LaunchSpec};
use agent_runner_plugin_host::notify::DenialListener;
use agent_runner_protocol::line::{BoundedLines, LongLines};
use agent_runner_protocol::redact::redact;
use jsonrpsee::core::client::{Client, ClientBuilder, ClientT, Error as RpcError};
use jsonrpsee::core::traits::ToRpcParams;
use serde_json::value::RawValue;
use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr};

use super::transport::{line_transport, ViolationSlot};
use super::{CallFailure, ErrorType};

/// Longest stderr line of a host kept in our log, in characters.
pub const MAX_STDERR_LINE_CHARS: usize = 1024;
/// How long a host has to exit after `shutdown` and stdin EOF (`docs/protocol.md` §2).
pub const EXIT_GRACE: Duration =
    Duration::from_secs(agent_runner_protocol::limits::EXIT_AFTER_EOF_S);
/// How long we wait to learn how a host whose pipe broke ended.
const REAP_WAIT: Duration = Duration::from_millis(500);

/// A host process and its JSON-RPC client.
pub struct RunningHost {
    name: String,
    child: Child,
    pgid: u32,
    client: Client,
    violation: ViolationSlot,
    /// The seccomp user-notification listener (when seccomp is applied): names the system
    /// call that got the host killed.
    denials: Option<DenialListener>,
    /// Measures the state directory while the host lives (see [`super::write_watch`]).
    write_watch: Option<super::write_watch::WriteWatch>,
}

/// JSON params already serialized.
struct Params(Option<Value>);

impl ToRpcParams for Params {
    fn to_rpc_params(self) -> Result<Option<Box<RawValue>>, serde_json::Error> {
        self.0
            .map(|v| serde_json::value::to_raw_value(&v))
            .transpose()
    }
}

impl RunningHost {
    /// Starts the host described by `spec` (its pid is the process group id).
    pub fn start(spec: &LaunchSpec) -> Result<Self, CallFailure> {
        let (mut child, denials) = launch::spawn_with_listener(spec)
            .map_err(|e| CallFailure::new(ErrorType::Crashed, e.to_string()))?;
        let pgid = child.id().unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(CallFailure::new(
                ErrorType::Crashed,
                "host pipes missing".into(),
            ));
        };
        tokio::spawn(forward_stderr(spec.name.clone(), stderr));
        let (sender, receiver, violation) = line_transport(stdin, stdout);
        let client = ClientBuilder::default()
            .request_timeout(Duration::from_secs(24 * 3600))
            .max_concurrent_requests(1)
            .build_with_tokio(sender, receiver);
        Ok(RunningHost {
            name: spec.name.clone(),
            child,
            pgid,
            client,
            violation,
            denials,
            write_watch: None,
        })
    }

    /// Keeps `watch` running for as long as this host lives.
    pub fn watch_writes(&mut self, watch: super::write_watch::WriteWatch) {
        self.write_watch = Some(watch);
    }

    /// The host's pid.
    pub fn pid(&self) -> u32 {
        self.pgid
    }

    /// Sends `method` with `params` and waits at most `timeout` for the result.
    ///
    /// Errors are classified into the failure taxonomy; after any error but `rpc_error`
    /// the host is dead or must be killed (the caller does that with [`Self::kill`]).
    pub async fn call(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Value, CallFailure> {
        let result = tokio::time::timeout(
            timeout,
            self.client.request::<Value, _>(method, Params(params)),
        )
        .await;
        match result {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(RpcError::Call(err))) => Err(CallFailure::new(
                ErrorType::RpcError,
                format!("error {}: {}", err.code(), redact(err.message())),
            )
            .with_rpc(err.code(), err.data().map(|d| d.get().to_owned()))),
            Ok(Err(RpcError::ParseError(err))) => {
                Err(CallFailure::new(ErrorType::InvalidResult, err.to_string()))
            }
            Ok(Err(_)) => Err(self.diagnose_broken_pipe().await),
            Err(_) => Err(CallFailure::new(
                ErrorType::Timeout,
                format!("no answer to {method} within {} s", timeout.as_secs_f32()),
            )),
        }
    }

    /// The client stopped: a protocol violation, a crash or a confinement kill.
    async fn diagnose_broken_pipe(&mut self) -> CallFailure {
        if let Some(violation) = self
            .violation
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            return CallFailure::new(ErrorType::ProtocolViolation, violation);
        }
        match tokio::time::timeout(REAP_WAIT, self.child.wait()).await {
            Ok(Ok(status)) => match (
                self.denials.as_mut().and_then(DenialListener::try_denial),
                status.signal(),
            ) {
                // The listener queues the denial before it kills the host, so after the
                // reap it is there whenever the filter stopped the host.
                (Some(denied), _) => CallFailure::new(
                    ErrorType::KilledBySandbox,
                    format!(
                        "killed by the sandbox: the host called {}(), which protocol v1 §6 forbids",
                        denied.name
                    ),
                )
                .with_signal(libc::SIGSYS)
                .with_syscall(denied.name),
                // The filter's architecture / x32 guard kills without a notification.
                (None, Some(libc::SIGSYS)) if self.denials.is_some() => CallFailure::new(
                    ErrorType::KilledBySandbox,
                    "killed by the seccomp filter (SIGSYS): foreign-architecture or x32 system call"
                        .into(),
                )
                .with_signal(libc::SIGSYS),
                (None, Some(sig)) => {
                    CallFailure::new(ErrorType::Crashed, format!("host died of signal {sig}"))
                        .with_signal(sig)
                }
                (None, None) => CallFailure::new(
                    ErrorType::Crashed,
                    format!(
                        "host exited with status {} during the call",
                        status.code().unwrap_or(-1)
                    ),
                ),
            },
            _ => CallFailure::new(
                ErrorType::ProtocolViolation,
                "host closed its stdout but kept running".into(),
            ),
        }
    }

    /// Kills the host's whole process group and reaps it.
    pub async fn kill(mut self) {
        let _ = launch::kill_group(self.pgid);
        let _ = self.child.wait().await;
    }

    /// `shutdown`, stdin EOF, [`EXIT_GRACE`] to exit, then the group is killed regardless
    /// (nothing the host started survives it).
    pub async fn shutdown(mut self) {
        let _ = tokio::time::timeout(
            EXIT_GRACE,
            self.client
                .request::<Value, _>(agent_runner_protocol::methods::SHUTDOWN, Params(None)),
        )
        .await;
        drop(self.client); // closes the host's stdin
        if tokio::time::timeout(EXIT_GRACE, self.child.wait())
            .await
            .is_err()
        {
            tracing::warn!(host = %self.name, "host did not exit within {} s of stdin EOF; killing it", EXIT_GRACE.as_secs());
        }
        let _ = launch::kill_group(self.pgid);
        let _ = self.child.wait().await;
    }
}

/// Forwards a host's stderr to our log line by line, tagged with its name.
async fn forward_stderr(host: String, stderr: ChildStderr) {
    read_stderr_lines(
        stderr,
        |line| tracing::info!(target: "host", host = %host, "{line}"),
    )
    .await;
}

/// Reads a host's stderr until it closes and hands each line to `on_line`, capped at
/// [`MAX_STDERR_LINE_CHARS`] characters and redacted. Reads are bounded, so a host writing
/// an endless line cannot grow our memory (the rest of it comes as further lines).
pub async fn read_stderr_lines(stderr: ChildStderr, mut on_line: impl FnMut(String)) {
    let mut reader = BufReader::new(stderr);
    // Up to 4 bytes per character: a longer line is cut into pieces, each a line.
    let mut lines = BoundedLines::new(4 * MAX_STDERR_LINE_CHARS, LongLines::Split);
    loop {
        let found = match reader.fill_buf().await {
            Err(_) => return,
            Ok([]) => lines.finish(),
            Ok(buf) => {
                let (used, found) = lines.push(buf);
                reader.consume(used);
                if found.is_none() {
                    continue;
                }
                found
            }
        };
        if found.is_none() {
            return;
        }
        let text = String::from_utf8_lossy(lines.line());
        let text =
            agent_runner_protocol::limits::truncate_chars(text.trim_end(), MAX_STDERR_LINE_CHARS);
        on_line(redact(text));
    }
}
