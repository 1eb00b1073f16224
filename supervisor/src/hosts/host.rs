//! One running host process: launched confined through `agent-runner-plugin-host`, spoken
//! to with jsonrpsee's client over [`super::transport`], its stderr forwarded to our log.

use agent_runner_plugin_host::common::notify::DenialListener;
use agent_runner_plugin_host::host::launch::{self, LaunchSpec};
use agent_runner_protocol::limits::{MAX_STDERR_LINES_PER_S, MAX_STDERR_LINE_CHARS};
use agent_runner_protocol::line::{BoundedLines, LongLines};
use agent_runner_protocol::redact::redact;
use jsonrpsee::core::client::{Client, ClientBuilder, ClientT, Error as RpcError};
use jsonrpsee::core::traits::ToRpcParams;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr};

use super::call_failure::{CallFailure, ErrorType};
use super::cause::{self, Bounds, Deadline, InFlight};
use super::transport::{line_transport, ViolationSlot};

/// How long a host has to exit after `shutdown` and stdin EOF (`docs/protocol.md` §2).
pub(crate) const EXIT_GRACE: Duration =
    Duration::from_secs(agent_runner_protocol::limits::EXIT_AFTER_EOF_S);
/// How long we wait to learn how a host whose pipe broke ended.
const REAP_WAIT: Duration = Duration::from_millis(500);
/// Stderr lines of a host kept for the `hook_failed` event of a failure that ends it
/// (docs/protocol.md §6).
pub(super) const TAIL_LINES: usize = 5;

/// The last lines a host wrote on stderr (each capped at [`MAX_STDERR_LINE_CHARS`] and
/// redacted by [`read_stderr_lines`]), at most `cap` of them. Shared by serve (for
/// `hook_failed`) and `plugin check` (for its report).
#[derive(Clone, Debug)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    cap: usize,
}

impl StderrTail {
    /// An empty tail keeping `cap` lines.
    pub(crate) fn new(cap: usize) -> Self {
        StderrTail {
            lines: Arc::new(Mutex::new(VecDeque::with_capacity(cap))),
            cap,
        }
    }

    /// Appends `line`, dropping the oldest beyond the cap.
    pub(crate) fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() == self.cap {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines, oldest first, blank lines left out.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|l| !l.trim().is_empty())
            .cloned()
            .collect()
    }
}

/// A host process and its JSON-RPC client.
pub(super) struct RunningHost {
    name: String,
    child: Child,
    pgid: u32,
    client: Client,
    violation: ViolationSlot,
    /// The seccomp user-notification listener (when seccomp is applied): names the system
    /// call that got the host killed.
    denials: Option<DenialListener>,
    /// The last stderr lines, and the task filling it (done once stderr closed).
    stderr: StderrTail,
    stderr_reader: tokio::task::JoinHandle<()>,
    /// Measures the state directory while the host lives (see [`super::write_watch`]).
    write_watch: Option<super::write_watch::WriteWatch>,
    /// The bounds of its table, named when one ended it.
    bounds: Bounds,
    /// A second descriptor of the host's stdin, held until [`Self::shutdown`]: when the
    /// client stops because the host closed its stdout, the client's end of the pipe
    /// closes, and without this one the host would read end-of-file and exit; then a live
    /// host that closed its stdout would pass for one that exited (docs/protocol.md §6).
    stdin_hold: Option<std::os::fd::OwnedFd>,
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
    /// Starts the host described by `spec` (its pid is the process group id), with the
    /// `bounds` of its table.
    pub(super) fn start(spec: &LaunchSpec, bounds: Bounds) -> Result<Self, CallFailure> {
        let (mut child, denials) = launch::spawn_with_listener(spec).map_err(|e| {
            CallFailure::new(
                ErrorType::Crashed,
                format!("host could not be launched: {e}"),
            )
        })?;
        let pgid = child.id().unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(CallFailure::new(
                ErrorType::Crashed,
                "host could not be launched: its stdin, stdout or stderr pipe is missing".into(),
            ));
        };
        let stdin_hold = std::os::fd::AsFd::as_fd(&stdin).try_clone_to_owned().ok();
        let tail = StderrTail::new(TAIL_LINES);
        let stderr_reader = tokio::spawn(forward_stderr(spec.name.clone(), stderr, tail.clone()));
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
            stderr: tail,
            stderr_reader,
            write_watch: None,
            bounds,
            stdin_hold,
        })
    }

    /// Ends the host after `failure` (one that [`ErrorType::ends_host`]): kills its group,
    /// reads its stderr to the end (waiting at most [`REAP_WAIT`] for the pipe to drain)
    /// and returns `failure` with the last lines attached and, when they say memory ran
    /// out, `memory_max_mb` named ([`Bounds::stderr_cause`]).
    pub(super) async fn end(mut self, failure: CallFailure) -> CallFailure {
        let _ = launch::kill_group(self.pgid);
        let _ = self.child.wait().await;
        let _ = tokio::time::timeout(REAP_WAIT, &mut self.stderr_reader).await;
        let tail = self.stderr.lines();
        let failure = match self.bounds.stderr_cause(&tail) {
            Some(cause) => failure.with_cause(&cause),
            None => failure,
        };
        failure.with_stderr_tail(tail)
    }

    /// Keeps `watch` running for as long as this host lives.
    pub(super) fn watch_writes(&mut self, watch: super::write_watch::WriteWatch) {
        self.write_watch = Some(watch);
    }

    /// The host's pid.
    pub(super) fn pid(&self) -> u32 {
        self.pgid
    }

    /// Sends `call` with `params` and waits at most `deadline` for the result.
    ///
    /// Errors are classified into the failure taxonomy, their messages naming `call`;
    /// after any error but `rpc_error` and `invalid_result` the host is dead or must be
    /// killed (the caller does that with [`Self::end`]).
    pub(super) async fn call(
        &mut self,
        call: &InFlight,
        params: Option<Value>,
        deadline: &Deadline,
    ) -> Result<Value, CallFailure> {
        let result = tokio::time::timeout(
            deadline.after,
            self.client.request::<Value, _>(call.method, Params(params)),
        )
        .await;
        match result {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(RpcError::Call(err))) => Err(CallFailure::new(
                ErrorType::RpcError,
                format!("error {}: {}", err.code(), redact(err.message())),
            )
            .with_rpc(err.code(), err.data().map(|d| d.get().to_owned()))),
            Ok(Err(RpcError::ParseError(err))) => Err(CallFailure::new(
                ErrorType::InvalidResult,
                format!("{call} result: {err}"),
            )),
            Ok(Err(_)) => Err(self.diagnose_broken_pipe(call).await),
            Err(_) => Err(CallFailure::new(ErrorType::Timeout, deadline.missed(call))),
        }
    }

    /// The client stopped during `call`: a protocol violation, stdout closed by a live
    /// host, or the host's end (an exit, a signal, a confinement kill).
    async fn diagnose_broken_pipe(&mut self, call: &InFlight) -> CallFailure {
        if let Some(violation) = self
            .violation
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            return CallFailure::new(
                ErrorType::ProtocolViolation,
                format!("in answer to {call}: {violation}"),
            );
        }
        match tokio::time::timeout(REAP_WAIT, self.child.wait()).await {
            Ok(Ok(status)) => self.ended(call, status),
            _ => CallFailure::new(
                ErrorType::ProtocolViolation,
                format!("host closed its stdout before answering {call} but kept running; killed"),
            ),
        }
    }

    /// The failure of a host that ended with `status` while answering `call`.
    fn ended(&mut self, call: &InFlight, status: std::process::ExitStatus) -> CallFailure {
        // The listener queues the denial before it kills the host, so after the reap it
        // is there whenever the filter stopped the host.
        if let Some(denied) = self.denials.as_mut().and_then(DenialListener::try_denial) {
            return CallFailure::new(
                ErrorType::KilledBySandbox,
                format!(
                    "killed by the sandbox before answering {call}: {}",
                    cause::sandbox_denial(denied.name)
                ),
            )
            .with_signal(libc::SIGSYS)
            .with_syscall(denied.name);
        }
        match status.signal() {
            // The filter's architecture / x32 guard kills without a notification.
            Some(libc::SIGSYS) if self.denials.is_some() => CallFailure::new(
                ErrorType::KilledBySandbox,
                format!("killed by the seccomp filter (SIGSYS) before answering {call}: a foreign-architecture or x32 system call"),
            )
            .with_signal(libc::SIGSYS),
            Some(signal) => {
                let failure = CallFailure::new(
                    ErrorType::Crashed,
                    format!("host {} before answering {call}", cause::ending(status)),
                )
                .with_signal(signal);
                match self.bounds.signal_cause(signal) {
                    Some(why) => failure.with_cause(&why),
                    None => failure,
                }
            }
            None => CallFailure::new(
                ErrorType::Crashed,
                format!("host {} before answering {call}", cause::ending(status)),
            ),
        }
    }

    /// Kills the host's whole process group and reaps it.
    pub(super) async fn kill(mut self) {
        let _ = launch::kill_group(self.pgid);
        let _ = self.child.wait().await;
    }

    /// `shutdown`, stdin EOF, [`EXIT_GRACE`] to exit, then the group is killed regardless
    /// (nothing the host started survives it).
    pub(super) async fn shutdown(mut self) {
        let _ = tokio::time::timeout(
            EXIT_GRACE,
            self.client
                .request::<Value, _>(agent_runner_protocol::methods::SHUTDOWN, Params(None)),
        )
        .await;
        drop(self.client); // closes the host's stdin, with the held descriptor
        drop(self.stdin_hold.take());
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

/// Forwards a host's stderr to our log line by line, tagged with its name, keeping the
/// last lines in `tail`.
async fn forward_stderr(host: String, stderr: ChildStderr, tail: StderrTail) {
    read_stderr_lines(stderr, |line| {
        tracing::info!(target: "host", host = %host, "{line}");
        tail.push(line);
    })
    .await;
}

/// Reads a host's stderr until it closes and hands each line to `on_line`, bounded
/// (docs/protocol.md §1):
///
/// * a line is cut at [`MAX_STDERR_LINE_CHARS`] characters and marked
///   `… [line truncated: N bytes]`; the rest of it is read and thrown away, never kept;
/// * at most [`MAX_STDERR_LINES_PER_S`] lines per second are handed on; the lines beyond
///   are counted and reported as one `[N stderr lines dropped: more than M per second]`
///   record, with the next line handed on or when stderr closes;
/// * terminal control sequences (colour codes, cursor moves) and other control characters
///   are removed, then secrets are redacted.
pub(crate) async fn read_stderr_lines(stderr: ChildStderr, mut on_line: impl FnMut(String)) {
    let mut reader = BufReader::new(stderr);
    // Up to 4 bytes per character: the framer cuts a longer line into pieces of exactly
    // `max` bytes; the first piece is kept, the others only counted.
    let max = 4 * MAX_STDERR_LINE_CHARS;
    let mut lines = BoundedLines::new(max, LongLines::Split);
    // The first piece of a line longer than `max` and the line's bytes so far.
    let mut long: Option<(Vec<u8>, usize)> = None;
    let mut limit = RateLimit::new();
    loop {
        let found = match reader.fill_buf().await {
            Err(_) => None,
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
            break;
        }
        let piece = lines.line();
        match long.as_mut() {
            Some((_, total)) if piece.len() == max => *total += piece.len(),
            None if piece.len() == max => long = Some((piece.to_vec(), piece.len())),
            Some(_) => {
                let (head, total) = long.take().expect("matched Some");
                limit.hand_on(&head, total + piece.len(), &mut on_line);
            }
            None => limit.hand_on(piece, piece.len(), &mut on_line),
        }
    }
    if let Some((head, total)) = long {
        limit.hand_on(&head, total, &mut on_line);
    }
    limit.report_dropped(&mut on_line);
}

/// The per-second bound of [`read_stderr_lines`] and the lines it dropped.
struct RateLimit {
    window: tokio::time::Instant,
    in_window: u32,
    dropped: u64,
}

impl RateLimit {
    fn new() -> Self {
        RateLimit {
            window: tokio::time::Instant::now(),
            in_window: 0,
            dropped: 0,
        }
    }

    /// Hands on one line (`kept`: its first bytes; `total`: its length in bytes without
    /// the newline) cleaned, capped, marked when cut and redacted, unless this second's
    /// [`MAX_STDERR_LINES_PER_S`] are used up (then it is counted as dropped).
    fn hand_on(&mut self, kept: &[u8], total: usize, on_line: &mut impl FnMut(String)) {
        let now = tokio::time::Instant::now();
        if now.duration_since(self.window) >= Duration::from_secs(1) {
            self.window = now;
            self.in_window = 0;
            self.report_dropped(on_line);
        }
        if self.in_window >= MAX_STDERR_LINES_PER_S {
            self.dropped += 1;
            return;
        }
        self.in_window += 1;
        let text = strip_control(String::from_utf8_lossy(kept).trim_end());
        let capped = agent_runner_protocol::limits::truncate_chars(&text, MAX_STDERR_LINE_CHARS);
        let line = if capped.len() < text.len() || total > kept.len() {
            format!("{capped}… [line truncated: {total} bytes]")
        } else {
            capped.to_owned()
        };
        on_line(redact(&line));
    }

    /// Hands on the "lines dropped" record when lines were dropped, and resets the count.
    fn report_dropped(&mut self, on_line: &mut impl FnMut(String)) {
        if self.dropped > 0 {
            on_line(format!(
                "[{} stderr lines dropped: more than {MAX_STDERR_LINES_PER_S} per second]",
                self.dropped
            ));
            self.dropped = 0;
        }
    }
}

/// `text` without terminal control sequences (`ESC [ … final-byte`, `ESC ] … BEL`) and
/// without other control characters (tab is kept), so a host cannot colour, move the
/// cursor of, or retitle the terminal reading our log.
fn strip_control(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                Some('[') => {
                    chars.next();
                    // Parameters and intermediates, then one final byte in @..=~.
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    chars.next();
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {
                    chars.next();
                }
            },
            '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::strip_control;

    #[test]
    fn control_sequences_are_removed() {
        assert_eq!(strip_control("\u{1b}[31mred\u{1b}[0m plain"), "red plain");
        assert_eq!(strip_control("a\u{1b}]0;title\u{7}b"), "ab");
        assert_eq!(strip_control("a\u{1b}]0;t\u{1b}\\b"), "ab");
        assert_eq!(strip_control("tab\there\rback\u{8}"), "tab\thereback");
        assert_eq!(strip_control("héllo"), "héllo");
    }
}
