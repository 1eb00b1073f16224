//! A small line-based JSON-RPC client for `plugin check`: unlike the serve path (jsonrpsee,
//! which stops at the first stray byte), it keeps going after a violation so that every
//! rule can be judged, and it records what it saw. Framing follows `docs/protocol.md` §1 with
//! the limit of [`MAX_LINE_BYTES`].

use agent_runner_plugin_host::common::notify::DenialListener;
use agent_runner_plugin_host::host::launch::{self, LaunchError, LaunchSpec};
use agent_runner_protocol::limits::MAX_LINE_BYTES;
use agent_runner_protocol::line::{BoundedLines, Found, LongLines};
use agent_runner_protocol::redact::{quote, redact};
use agent_runner_protocol::{decode_response, EnvelopeError, Response};
use serde_json::{json, Value};
use std::process::ExitStatus;

use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use crate::hosts::{cause, read_stderr_lines, StderrTail};

/// Host stderr lines kept for the report (the last ones).
pub(super) const KEPT_STDERR_LINES: usize = 20;

/// One line the host wrote on stdout.
enum StdoutLine {
    /// A complete line, newline stripped.
    Line(Vec<u8>),
    /// A line over the limit (its first bytes) or unterminated at end of stdout.
    Broken(String),
}

/// A response to one request.
#[derive(Debug)]
pub(super) enum Reply {
    /// `result`.
    Result(Value),
    /// `error`: code, message.
    Error(i64, String),
}

/// Why a request got no response.
#[derive(Debug)]
pub(super) enum NoReply {
    /// Nothing within the deadline.
    Timeout,
    /// stdout closed (the host exited or closed it).
    Closed,
    /// Writing the request failed (the host is gone).
    Write(String),
    /// The host answered, but not with a valid response to this request (a wrong or
    /// mistyped `id`, an unknown envelope member, an overlong line): what was seen. Serve
    /// records the same as a `protocol_violation`.
    Rejected(String),
}

/// Why [`HostWire::start`] could not start the host.
#[derive(Debug, thiserror::Error)]
pub(super) enum StartError {
    /// The launch failed: its message, unchanged.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// The started host lacked a stdin, stdout or stderr pipe (it is killed on drop).
    #[error("host pipes missing")]
    PipesMissing,
}

/// A running host under check.
pub(super) struct HostWire {
    child: Child,
    pgid: u32,
    stdin: Option<ChildStdin>,
    stdout: mpsc::UnboundedReceiver<StdoutLine>,
    stderr: StderrTail,
    /// The task keeping [`HostWire::stderr`]; it ends at the pipe's end of file.
    stderr_reader: tokio::task::JoinHandle<()>,
    denials: Option<DenialListener>,
    next_id: u64,
    status: Option<ExitStatus>,
    /// Non-protocol output seen on stdout after `initialize` was sent, quoted.
    pub stray: Vec<String>,
}

impl HostWire {
    /// Launches the host described by `spec`, confined as it says.
    ///
    /// # Errors
    /// [`StartError`]: the launch failed, or the host's pipes are missing.
    pub(super) fn start(spec: &LaunchSpec) -> Result<Self, StartError> {
        let (mut child, denials) = launch::spawn_with_listener(spec)?;
        let pgid = child.id().unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(StartError::PipesMissing);
        };
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(read_stdout(stdout, tx));
        let kept = StderrTail::new(KEPT_STDERR_LINES);
        let stderr_reader = tokio::spawn(keep_stderr(stderr, kept.clone()));
        Ok(HostWire {
            child,
            pgid,
            stdin: Some(stdin),
            stdout: rx,
            stderr: kept,
            stderr_reader,
            denials,
            next_id: 0,
            status: None,
            stray: Vec::new(),
        })
    }

    /// The first thing the host writes on stdout within `wait`, quoted; `None` if silent.
    pub(super) async fn first_output_within(&mut self, wait: Duration) -> Option<String> {
        match tokio::time::timeout(wait, self.stdout.recv()).await {
            Ok(Some(StdoutLine::Line(line))) => Some(quote(&line)),
            Ok(Some(StdoutLine::Broken(what))) => Some(what),
            Ok(None) | Err(_) => None,
        }
    }

    /// Sends request `method` with `params` (omitted when `None`) and waits up to `timeout`
    /// for the response with its id. Other lines meanwhile are recorded in [`Self::stray`].
    pub(super) async fn request(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Reply, NoReply> {
        self.next_id += 1;
        let id = self.next_id;
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            request["params"] = params;
        }
        let mut line = request.to_string();
        line.push('\n');
        let stdin = self.stdin.as_mut().ok_or(NoReply::Closed)?;
        let sent = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await
        };
        sent.await.map_err(|e| NoReply::Write(e.to_string()))?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let line = match tokio::time::timeout_at(deadline, self.stdout.recv()).await {
                Err(_) => return Err(NoReply::Timeout),
                Ok(None) => return Err(NoReply::Closed),
                Ok(Some(StdoutLine::Broken(what))) => {
                    self.stray.push(what.clone());
                    return Err(NoReply::Rejected(format!("it wrote {what}")));
                }
                Ok(Some(StdoutLine::Line(line))) => line,
            };
            match decode_response(&line, id) {
                Ok(Response::Result(value)) => return Ok(Reply::Result(value)),
                Ok(Response::Error { code, message, .. }) => {
                    return Ok(Reply::Error(code, redact(&message)))
                }
                Err(EnvelopeError::NotAResponse(_)) => self.stray.push(quote(&line)),
                Err(err) => return Err(NoReply::Rejected(format!("{err}: {}", quote(&line)))),
            }
        }
    }

    /// Closes the host's stdin (end-of-file).
    pub(super) fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits up to `wait` for the host to exit; whether it did. Stdout lines written
    /// meanwhile are recorded in [`Self::stray`].
    pub(super) async fn exited_within(&mut self, wait: Duration) -> bool {
        if self.status.is_some() {
            return true;
        }
        let deadline = tokio::time::Instant::now() + wait;
        let status = tokio::time::timeout_at(deadline, self.child.wait()).await;
        // Drain what it wrote before exiting (the reader ends at EOF of its stdout).
        while let Ok(Some(line)) =
            tokio::time::timeout(Duration::from_millis(50), self.stdout.recv()).await
        {
            match line {
                StdoutLine::Line(line) => self.stray.push(quote(&line)),
                StdoutLine::Broken(what) => self.stray.push(what),
            }
        }
        match status {
            Ok(Ok(status)) => {
                self.status = Some(status);
                true
            }
            _ => false,
        }
    }

    /// How the host ended, in serve's words (`crate::hosts::cause`), after
    /// [`Self::exited_within`] returned true: `exited with status 3`, `died of SIGSEGV`,
    /// `was killed by the sandbox: it called socket(), …`.
    pub(super) fn how_it_ended(&mut self) -> String {
        if let Some(denied) = self.denials.as_mut().and_then(DenialListener::try_denial) {
            return format!(
                "was killed by the sandbox: {}",
                cause::sandbox_denial(denied.name)
            );
        }
        match self.status {
            Some(status) => cause::ending(status),
            None => "is still running".into(),
        }
    }

    /// Live (non-zombie) processes of the host's process group other than the host
    /// itself while it runs: `(pid, command name)`. The host is the group's leader, or, for
    /// an unprivileged operator, the leader's child that is PID 1 of its own PID namespace
    /// (the leader is then the reaper, see `agent_runner_plugin_host::common::user_namespace`).
    pub(super) fn group_members(&self) -> Vec<(u32, String)> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut members = Vec::new();
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // "pid (comm) state ppid pgrp …": comm may contain spaces and parentheses.
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let comm = stat[open + 1..close].to_owned();
            let mut fields = stat[close + 1..].split_whitespace();
            let state = fields.next().unwrap_or("");
            let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
            let pgrp = fields.next().and_then(|p| p.parse::<u32>().ok());
            let is_host = pid == self.pgid
                || (ppid == Some(self.pgid) && namespace_init(pid) && self.pgid != 0);
            if pgrp == Some(self.pgid) && state != "Z" && !(is_host && self.status.is_none()) {
                members.push((pid, comm));
            }
        }
        members.sort();
        members
    }

    /// Kills the host's process group and reaps the host.
    pub(super) async fn kill(&mut self) {
        let _ = launch::kill_group(self.pgid);
        if self.status.is_none() {
            if let Ok(status) = self.child.wait().await {
                self.status = Some(status);
            }
        }
    }

    /// The last host stderr lines (redacted, capped).
    pub(super) fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lines()
    }

    /// The last host stderr lines once it has ended: first waits up to 100 ms for its
    /// stderr to reach end of file (longer only if something it started holds it open),
    /// so that a host that wrote before dying is not reported as silent.
    pub(super) async fn settled_stderr_tail(&mut self) -> Vec<String> {
        let _ = tokio::time::timeout(Duration::from_millis(100), &mut self.stderr_reader).await;
        self.stderr.lines()
    }
}

/// Whether process `pid` is PID 1 of its own PID namespace (the last `NSpid:` entry of
/// `/proc/<pid>/status` is 1; proc(5)).
fn namespace_init(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .and_then(|ids| ids.split_whitespace().last())
                .map(|id| id == "1")
        })
        .unwrap_or(false)
}

/// Reads stdout line by line (at most [`MAX_LINE_BYTES`] each) until EOF.
async fn read_stdout(stdout: tokio::process::ChildStdout, tx: mpsc::UnboundedSender<StdoutLine>) {
    let mut reader = BufReader::new(stdout);
    // A too-long line is reported once and its rest dropped; reading goes on.
    let mut lines = BoundedLines::new(MAX_LINE_BYTES, LongLines::Skip);
    loop {
        let found = match reader.fill_buf().await {
            Err(_) => return,
            Ok([]) => match lines.finish() {
                Some(found) => found,
                None => return,
            },
            Ok(buf) => {
                let (used, found) = lines.push(buf);
                reader.consume(used);
                match found {
                    Some(found) => found,
                    None => continue,
                }
            }
        };
        let message = match found {
            Found::Line => StdoutLine::Line(lines.line().to_vec()),
            Found::TooLong => StdoutLine::Broken(format!(
                "a line longer than {MAX_LINE_BYTES} bytes: {}",
                quote(lines.line())
            )),
            Found::Unterminated => StdoutLine::Broken(format!(
                "an unterminated line at end of stdout: {}",
                quote(lines.line())
            )),
        };
        if tx.send(message).is_err() {
            return;
        }
    }
}

/// Keeps the last [`KEPT_STDERR_LINES`] stderr lines, capped and redacted.
async fn keep_stderr(stderr: tokio::process::ChildStderr, kept: StderrTail) {
    read_stderr_lines(stderr, |line| kept.push(line)).await;
}
