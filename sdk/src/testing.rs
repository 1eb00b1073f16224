//! Drive a host executable over pipes from tests, the way the supervisor does: one JSON-RPC
//! object per line on its stdin, one per line back on its stdout (`docs/protocol.md` §1).
//!
//! ```no_run
//! use agent_runner_sdk::testing::{context, initialize_params, HostProcess};
//! use agent_runner_sdk::serde_json::json;
//! use std::process::Command;
//! use std::time::Duration;
//!
//! let mut host = HostProcess::spawn(Command::new("target/debug/my-host")).unwrap();
//! let init = host.call("initialize", initialize_params("/tmp/w", json!({}))).unwrap();
//! assert_eq!(init["result"]["protocol_version"], 1);
//! let reply = host
//!     .call(
//!         "spawn_hook/before_spawn",
//!         json!({"hook": "my_hook", "ctx": context("/tmp/w", 1),
//!                "spawn": {"argv": ["agent"], "env_names": []}}),
//!     )
//!     .unwrap();
//! assert_eq!(reply["result"]["action"], "proceed");
//! assert!(host.close_and_wait(Duration::from_secs(2)).unwrap().unwrap().success());
//! ```

use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long [`HostProcess::call`] waits for a response.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// A host process with piped stdin, stdout and stderr. stdout is read line by line on a
/// background thread (so reads can time out); stderr is collected in the background.
/// Dropping it kills the process if it still runs.
pub struct HostProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout_lines: Receiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    next_id: u64,
}

impl HostProcess {
    /// Starts `command` with all three standard streams piped.
    ///
    /// Errors: the spawn error of `command`.
    pub fn spawn(mut command: Command) -> io::Result<Self> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
        let (tx, stdout_lines) = mpsc::channel();
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx
                            .send(String::from_utf8_lossy(&line).into_owned())
                            .is_err()
                        {
                            break;
                        }
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&stderr);
        thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = stderr_pipe.read(&mut chunk) {
                sink.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(&chunk[..n]);
            }
        });
        Ok(HostProcess {
            child,
            stdin,
            stdout_lines,
            stderr,
            next_id: 1,
        })
    }

    /// Writes `bytes` to the host's stdin as they are (no newline added).
    ///
    /// Errors: stdin already closed, or the write failed (the host exited).
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "stdin was closed"))?;
        stdin.write_all(bytes)?;
        stdin.flush()
    }

    /// Sends `message` as one line (serialized compactly, `\n` appended).
    pub fn send(&mut self, message: &Value) -> io::Result<()> {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.send_raw(&line)
    }

    /// The next line the host wrote on stdout, newline included, or `None` if none arrived
    /// within `timeout` (or stdout closed).
    pub fn read_line(&self, timeout: Duration) -> Option<String> {
        self.stdout_lines.recv_timeout(timeout).ok()
    }

    /// The next stdout line parsed as JSON, waiting up to `timeout`.
    ///
    /// Errors: `TimedOut` when no line arrived, `InvalidData` when the line is not a JSON
    /// object terminated by `\n`.
    pub fn read_message(&self, timeout: Duration) -> io::Result<Value> {
        let line = self.read_line(timeout).ok_or_else(|| {
            io::Error::new(io::ErrorKind::TimedOut, "no line from the host on stdout")
        })?;
        let body = line.strip_suffix('\n').ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unterminated line {line:?}"),
            )
        })?;
        let value: Value = serde_json::from_str(body)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{e}: {body:?}")))?;
        if !value.is_object() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not an object: {body}"),
            ));
        }
        Ok(value)
    }

    /// Sends a request with the next integer id and returns the whole response object
    /// (`{"jsonrpc": "2.0", "id": .., "result": ..}` or `.. "error": ..`), waiting up to
    /// [`CALL_TIMEOUT`].
    ///
    /// Errors: as [`HostProcess::read_message`], and `InvalidData` when the response's id
    /// is not the request's.
    pub fn call(&mut self, method: &str, params: Value) -> io::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let response = self.read_message(CALL_TIMEOUT)?;
        if response["id"] != json!(id) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("response id does not match request id {id}: {response}"),
            ));
        }
        Ok(response)
    }

    /// Closes the host's stdin (end-of-file for the host).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits up to `timeout` for the host to exit; `None` if it still runs.
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Closes stdin, then waits up to `timeout` for the exit (`docs/protocol.md` §1: a host
    /// exits within 2 s of end-of-file); `None` if it still runs.
    pub fn close_and_wait(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        self.close_stdin();
        self.wait_timeout(timeout)
    }

    /// Everything the host wrote on stderr so far (lossy UTF-8).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }

    /// Waits up to `timeout` until the host's stderr contains `needle`; returns whether
    /// it did.
    pub fn wait_for_stderr(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.stderr().contains(needle) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// The host's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `initialize` params of protocol version 1 for a host named `test-host` in `work_dir`
/// with this `config` table (state and log dirs are `work_dir` too, sandbox `off`).
pub fn initialize_params(work_dir: &str, config: Value) -> Value {
    json!({
        "protocol_version": 1,
        "supervisor": {"name": "agent-runner", "version": "0.1.0"},
        "host": "test-host",
        "project": "test-project",
        "work_dir": work_dir,
        "log_dir": work_dir,
        "state_dir": work_dir,
        "config": config,
        "sandbox": {"requested": "off", "achieved_tier": "unconfined",
                    "landlock_abi": null, "seccomp": false}
    })
}

/// A hook-call context (`ctx`, `docs/protocol.md` §4) for round `round_num` in `work_dir`.
pub fn context(work_dir: &str, round_num: u64) -> Value {
    json!({
        "work_dir": work_dir, "log_dir": work_dir, "project": "test-project",
        "round_num": round_num, "phase": null, "agent_name": "claude",
        "agent_binary": "claude", "agent_log_path": null, "dry_run": false,
        "vcs": {"dirty_action": "stash", "stash_idempotency_s": 5}
    })
}
