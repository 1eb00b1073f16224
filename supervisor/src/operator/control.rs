//! Controlling a running `serve`: `status`, `stop` (graceful: no new round, the current one
//! finishes), `kill` (terminate the agent now; hosts are shut down on the way out) and
//! `start` (`serve` detached, refused while one runs).
//!
//! `serve` listens on a local socket, `<log_dir>/control.sock` (one JSON request line
//! `{"cmd": "status"|"stop"|"kill"}`, one JSON answer line). When the socket does not answer
//! (an older or wedged supervisor, a path too long for a socket) the verbs fall back on the
//! project lock: its holder's pid is signalled (SIGTERM: graceful; a second SIGTERM:
//! immediate) and `status` is read from the lock and `state.json`.

use interprocess::local_socket::tokio::prelude::*;
use interprocess::local_socket::{GenericFilePath, ListenerOptions};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;

use crate::exit::{self, CliError};
use crate::hosts::{HostManager, HostState};
use crate::runtime::events::timestamp;
use crate::runtime::state::{lock_holder, read_round_state, LOCK_FILE};
use crate::runtime::stop::{raise, StopLevel, StopSender};

/// Name of the control socket in `log_dir`.
pub const SOCKET_FILE: &str = "control.sock";

/// How long a client waits for the socket to answer before falling back.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(2);

/// What `serve` publishes for `status`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Snapshot {
    /// The supervisor's pid.
    pub pid: u32,
    /// When it booted (UTC, RFC 3339).
    pub started_at: String,
    /// Seconds since the Unix epoch at boot.
    pub started_unix_s: u64,
    /// `starting`, `round` (an attempt is under way), `waiting` (between rounds) or
    /// `stopping`.
    pub state: String,
    /// The round running now, or the last one handed out.
    pub current_round: Option<u64>,
    /// The hosts: name, `running`/`backoff`/`disabled`, pid.
    pub hosts: Vec<Value>,
}

impl Snapshot {
    /// The snapshot of a supervisor booting now.
    pub fn booting() -> Self {
        let now = SystemTime::now();
        Snapshot {
            pid: std::process::id(),
            started_at: timestamp(now),
            started_unix_s: unix_s(now),
            state: "starting".into(),
            current_round: None,
            hosts: Vec::new(),
        }
    }

    /// Updates the state, round and hosts.
    pub fn update(&mut self, state: &str, current_round: Option<u64>, hosts: &HostManager) {
        self.state = state.to_owned();
        if current_round.is_some() {
            self.current_round = current_round;
        }
        self.hosts = hosts
            .states()
            .into_iter()
            .map(|(name, state, pid)| {
                let state = match state {
                    HostState::Running => "running",
                    HostState::Backoff => "backoff",
                    HostState::Disabled => "disabled",
                };
                json!({"name": name, "state": state, "pid": pid})
            })
            .collect();
    }
}

fn unix_s(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The listening control socket; removed when dropped.
pub struct ControlServer {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds `<log_dir>/control.sock` (replacing a stale one: the caller holds the project
/// lock) and answers requests until dropped.
///
/// Errors: the socket cannot be bound (the caller carries on; clients fall back).
pub fn listen(
    log_dir: &Path,
    stop: StopSender,
    snapshot: watch::Receiver<Snapshot>,
) -> std::io::Result<ControlServer> {
    let path = log_dir.join(SOCKET_FILE);
    let _ = std::fs::remove_file(&path);
    let name = path.as_path().to_fs_name::<GenericFilePath>()?;
    let listener = ListenerOptions::new().name(name).create_tokio()?;
    let task = tokio::spawn(async move {
        loop {
            let Ok(conn) = listener.accept().await else {
                continue;
            };
            let stop = stop.clone();
            let snapshot = snapshot.clone();
            tokio::spawn(async move {
                let _ = answer(conn, &stop, &snapshot).await;
            });
        }
    });
    Ok(ControlServer { path, task })
}

async fn answer(
    conn: LocalSocketStream,
    stop: &StopSender,
    snapshot: &watch::Receiver<Snapshot>,
) -> std::io::Result<()> {
    let mut line = String::new();
    BufReader::new(&conn).read_line(&mut line).await?;
    let request: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    let pid = std::process::id();
    let reply = match request["cmd"].as_str() {
        Some("status") => {
            let snap = snapshot.borrow().clone();
            let uptime = unix_s(SystemTime::now()).saturating_sub(snap.started_unix_s);
            let mut value = json!(snap);
            value["running"] = json!(true);
            value["uptime_s"] = json!(uptime);
            value["source"] = json!("socket");
            value
        }
        Some("stop") => {
            raise(stop, StopLevel::Graceful);
            json!({"ok": true, "pid": pid, "level": "graceful"})
        }
        Some("kill") => {
            raise(stop, StopLevel::Immediate);
            json!({"ok": true, "pid": pid, "level": "immediate"})
        }
        _ => json!({"ok": false, "error": "expected {\"cmd\": \"status\"|\"stop\"|\"kill\"}"}),
    };
    let mut send = &conn;
    send.write_all(format!("{reply}\n").as_bytes()).await?;
    send.flush().await
}

/// Sends one request to the socket in `log_dir`; `None` when it does not answer in time.
async fn request(log_dir: &Path, cmd: &str) -> Option<Value> {
    let path = log_dir.join(SOCKET_FILE);
    let exchange = async {
        let name = path.as_path().to_fs_name::<GenericFilePath>().ok()?;
        let conn = LocalSocketStream::connect(name).await.ok()?;
        let mut send = &conn;
        send.write_all(format!("{}\n", json!({"cmd": cmd})).as_bytes())
            .await
            .ok()?;
        let mut line = String::new();
        BufReader::new(&conn).read_line(&mut line).await.ok()?;
        serde_json::from_str::<Value>(&line).ok()
    };
    tokio::time::timeout(SOCKET_TIMEOUT, exchange)
        .await
        .ok()
        .flatten()
}

/// `status [--json]`: exit 0 when a supervisor runs, 1 when none does.
///
/// Errors: exit 78 for a bad config.
pub async fn status(config_path: &Path, as_json: bool) -> Result<u8, CliError> {
    let config = crate::config::load(config_path)?;
    let log_dir = &config.runtime.log_dir;
    let report = match request(log_dir, "status").await {
        Some(value) => value,
        None => fallback_status(log_dir),
    };
    let running = report["running"].as_bool().unwrap_or(false);
    if as_json {
        println!("{report}");
    } else if running {
        println!(
            "running: pid {}, round {}, state {}, up {} s",
            report["pid"],
            report["current_round"],
            report["state"].as_str().unwrap_or("?"),
            report["uptime_s"]
        );
        for host in report["hosts"].as_array().into_iter().flatten() {
            println!(
                "  host {}: {} (pid {})",
                host["name"].as_str().unwrap_or("?"),
                host["state"].as_str().unwrap_or("?"),
                host["pid"]
            );
        }
    } else {
        println!("not running (last round {})", report["current_round"]);
    }
    Ok(if running { exit::OK } else { exit::FAILURE })
}

/// Status from the lock and `state.json` when the socket does not answer.
fn fallback_status(log_dir: &Path) -> Value {
    let round = read_round_state(log_dir).ok().map(|s| s.last_round);
    match lock_holder(log_dir) {
        Some(pid) => {
            let started = std::fs::metadata(log_dir.join(LOCK_FILE))
                .and_then(|m| m.modified())
                .ok();
            json!({"running": true, "pid": pid, "state": "unknown", "current_round": round,
                   "started_at": started.map(timestamp),
                   "uptime_s": started.map(|s| unix_s(SystemTime::now()).saturating_sub(unix_s(s))),
                   "hosts": [], "source": "lock"})
        }
        None => json!({"running": false, "pid": null, "current_round": round, "source": "lock"}),
    }
}

/// `stop` (graceful) or `kill` (immediate): exit 0 when a supervisor was told, 1 when none
/// runs.
///
/// Errors: exit 78 for a bad config.
pub async fn stop(config_path: &Path, level: StopLevel, as_json: bool) -> Result<u8, CliError> {
    let config = crate::config::load(config_path)?;
    let log_dir = &config.runtime.log_dir;
    let cmd = if level == StopLevel::Immediate {
        "kill"
    } else {
        "stop"
    };
    let report = match request(log_dir, cmd).await {
        Some(value) => value,
        None => match lock_holder(log_dir) {
            None => {
                return Err(CliError::failure(format!(
                    "no agent-runner supervises this project (no lock holder in {})",
                    log_dir.display()
                )))
            }
            Some(pid) => {
                let target = Pid::from_raw(pid as i32);
                let _ = kill(target, Signal::SIGTERM);
                if level == StopLevel::Immediate {
                    // The second signal raises the stop to immediate.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    let _ = kill(target, Signal::SIGTERM);
                }
                json!({"ok": true, "pid": pid, "level": cmd, "source": "signal"})
            }
        },
    };
    if as_json {
        println!("{report}");
    } else {
        println!(
            "agent-runner (pid {}): {}",
            report["pid"],
            if cmd == "kill" {
                "terminating the agent now"
            } else {
                "stopping after the current round"
            }
        );
    }
    Ok(exit::OK)
}

/// `start`: runs `serve` detached (its own session; output in `<log_dir>/serve.out`) and
/// returns once it holds the project lock. Refused (exit 1) while a supervisor runs.
///
/// Errors: 78 for a bad config; 1 when one runs, or when `serve` exits during start-up
/// (its exit code and output are reported).
pub async fn start(config_path: &Path, as_json: bool) -> Result<u8, CliError> {
    use std::os::unix::process::CommandExt;
    let config = crate::config::load(config_path)?;
    let log_dir = &config.runtime.log_dir;
    if let Some(pid) = lock_holder(log_dir) {
        return Err(CliError::failure(format!(
            "another agent-runner (pid {pid}) already supervises this project"
        )));
    }
    std::fs::create_dir_all(log_dir)
        .map_err(|e| CliError::failure(format!("cannot create {}: {e}", log_dir.display())))?;
    let out_path = log_dir.join("serve.out");
    let out = std::fs::File::create(&out_path)
        .map_err(|e| CliError::failure(format!("cannot create {}: {e}", out_path.display())))?;
    let err = out
        .try_clone()
        .map_err(|e| CliError::failure(e.to_string()))?;
    let exe = std::env::current_exe().map_err(|e| CliError::failure(e.to_string()))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--config")
        .arg(&config.path)
        .arg("serve")
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err);
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| CliError::failure(format!("cannot start serve: {e}")))?;
    let pid = child.id();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if lock_holder(log_dir) == Some(pid) {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let output = std::fs::read_to_string(&out_path).unwrap_or_default();
            return Err(CliError::failure(format!(
                "serve exited during start-up ({status}): {}",
                output.trim()
            )));
        }
        if std::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if as_json {
        println!(
            "{}",
            json!({"started": true, "pid": pid, "output": out_path})
        );
    } else {
        println!(
            "agent-runner serve started (pid {pid}); output in {}",
            out_path.display()
        );
    }
    Ok(exit::OK)
}
