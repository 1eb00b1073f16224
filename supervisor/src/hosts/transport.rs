//! A newline-delimited stdio transport for jsonrpsee's async client (jsonrpsee ships none;
//! `docs/design-notes.md`, "Implementation notes"). One JSON-RPC message per line, lines
//! capped at [`MAX_LINE_BYTES`]. Every line on the host's stdout must be the response to the
//! request in flight, as [`decode_response`] (shared with `plugin check`) decides: anything
//! else — stray output, a wrong or mistyped `id`, an unknown envelope member — is a protocol
//! violation: the receiver records what it saw (quoted, redacted) in a [`ViolationSlot`]
//! and fails, which ends the client; the host manager then kills the host.

use agent_runner_protocol::limits::MAX_LINE_BYTES;
use agent_runner_protocol::line::{BoundedLines, Found, LongLines};
use agent_runner_protocol::redact::quote;
use agent_runner_protocol::{decode_response, EnvelopeError};
use jsonrpsee::core::client::{ReceivedMessage, TransportReceiverT, TransportSenderT};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

/// Where the receiver leaves the description of a protocol violation.
pub(super) type ViolationSlot = Arc<Mutex<Option<String>>>;

/// The id of the last request sent (jsonrpsee numbers them; one is in flight at a time).
type InFlight = Arc<Mutex<Option<u64>>>;

/// Why the transport stopped.
#[derive(Debug, thiserror::Error)]
pub(super) enum TransportError {
    /// Reading or writing the pipe failed.
    #[error("host pipe: {0}")]
    Io(#[from] std::io::Error),
    /// The host closed its stdout.
    #[error("host closed its stdout")]
    Closed,
    /// The host broke the framing or wrote a non-response (recorded in the slot).
    #[error("protocol violation: {0}")]
    Violation(String),
}

/// Writes requests to the host's stdin.
pub(super) struct LineSender {
    stdin: ChildStdin,
    in_flight: InFlight,
}

/// Reads responses from the host's stdout.
pub(super) struct LineReceiver {
    stdout: BufReader<ChildStdout>,
    lines: BoundedLines,
    violation: ViolationSlot,
    in_flight: InFlight,
}

/// Wraps a host's pipes; returns the two halves and the slot a violation lands in.
pub(super) fn line_transport(
    stdin: ChildStdin,
    stdout: ChildStdout,
) -> (LineSender, LineReceiver, ViolationSlot) {
    let slot = ViolationSlot::default();
    let in_flight = InFlight::default();
    (
        LineSender {
            stdin,
            in_flight: in_flight.clone(),
        },
        LineReceiver {
            stdout: BufReader::with_capacity(MAX_LINE_BYTES, stdout),
            // A too-long line ends the conversation: nothing after it is read.
            lines: BoundedLines::new(MAX_LINE_BYTES, LongLines::Skip),
            violation: slot.clone(),
            in_flight,
        },
        slot,
    )
}

impl TransportSenderT for LineSender {
    type Error = TransportError;

    async fn send(&mut self, mut msg: String) -> Result<(), Self::Error> {
        let id = serde_json::from_str::<serde_json::Value>(&msg)
            .ok()
            .and_then(|v| v.get("id").and_then(serde_json::Value::as_u64));
        *self.in_flight.lock().unwrap_or_else(|p| p.into_inner()) = id;
        msg.push('\n');
        self.stdin.write_all(msg.as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(())
    }
}

impl LineReceiver {
    fn violate(&self, what: String) -> TransportError {
        *self.violation.lock().unwrap_or_else(|p| p.into_inner()) = Some(what.clone());
        TransportError::Violation(what)
    }

    /// Reads one line of at most [`MAX_LINE_BYTES`] bytes (newline included).
    async fn read_line(&mut self) -> Result<Vec<u8>, TransportError> {
        loop {
            let buf = self.stdout.fill_buf().await?;
            let (used, found) = if buf.is_empty() {
                (0, Some(self.lines.finish().ok_or(TransportError::Closed)?))
            } else {
                self.lines.push(buf)
            };
            self.stdout.consume(used);
            match found {
                None => {}
                Some(Found::Line) => return Ok(self.lines.line().to_vec()),
                Some(Found::TooLong) => {
                    return Err(self.violate(format!(
                        "line longer than {MAX_LINE_BYTES} bytes: {}",
                        quote(self.lines.line())
                    )))
                }
                Some(Found::Unterminated) => {
                    return Err(self.violate(format!(
                        "unterminated line at end of stdout: {}",
                        quote(self.lines.line())
                    )))
                }
            }
        }
    }
}

impl TransportReceiverT for LineReceiver {
    type Error = TransportError;

    async fn receive(&mut self) -> Result<ReceivedMessage, Self::Error> {
        let line = self.read_line().await?;
        let expected = *self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        let verdict = match expected {
            Some(id) => decode_response(&line, id).map(|_| ()),
            None => Err(EnvelopeError::NotAResponse(
                "output while no request was in flight".into(),
            )),
        };
        if let Err(err) = verdict {
            return Err(self.violate(format!("{err}: {}", quote(&line))));
        }
        String::from_utf8(line)
            .map(ReceivedMessage::Text)
            .map_err(|e| self.violate(format!("invalid UTF-8 on stdout: {e}")))
    }
}
