//! Controlling a running `serve`: `status`, `stop` (graceful: no new round, the current one
//! finishes), `kill` (terminate the agent now; hosts are shut down on the way out) and
//! `start` (`serve` detached, refused while one runs).
//!
//! `serve` listens on a local socket, `<state_dir>/control.sock` (one JSON request line
//! `{"cmd": "status"|"stop"|"kill"}`, one JSON answer line). When the socket does not answer
//! (an older or wedged supervisor, a path too long for a socket) the verbs fall back on the
//! project lock: its holder's pid is signalled (SIGTERM: graceful; a second SIGTERM:
//! immediate) and `status` is read from the lock and `state.json`.

use interprocess::local_socket::tokio::prelude::*;
use interprocess::local_socket::{GenericFilePath, ListenerOptions};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;

use crate::exit::{self, CliError};
use crate::record::events::timestamp;
use crate::record::state::{lock_holder, read_round_state, LOCK_FILE};
use crate::record::status::{unix_s, Snapshot, StatusHost};
use crate::record::stop::{raise, StopLevel, StopSender};

/// Name of the control socket in `state_dir`.
pub(crate) const SOCKET_FILE: &str = "control.sock";

/// How long a client waits for the socket to answer before falling back.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(2);

/// `status --json` (schema: `docs/schema/status.schema.json`), also the socket's answer to
/// `{"cmd": "status"}`. From the socket every field is present; from the lock fallback
/// (`source: "lock"`) only what the lock and `state.json` tell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::record::schema_fields::require(s, &["pid", "current_round"]))]
pub(crate) struct StatusDoc {
    /// Whether a supervisor holds the project lock.
    pub running: bool,
    /// Its pid.
    pub pid: Option<u32>,
    /// `starting`, `round`, `waiting`, `stopping`; `unknown` from the lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The round running now, or the last one handed out (from the lock: the last started).
    pub current_round: Option<u64>,
    /// When it booted (UTC; from the lock: when the lock file was last written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// Seconds since the Unix epoch at boot (socket only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_s: Option<u64>,
    /// Seconds since boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_s: Option<u64>,
    /// Its hosts (empty from the lock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<StatusHost>>,
    /// `socket` or `lock`.
    pub source: String,
}

/// The answer to `stop` and `kill` (from the socket, or `source: "signal"` when the lock
/// holder was signalled instead).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StopReply {
    ok: bool,
    /// The supervisor told to stop.
    pub pid: u32,
    /// `graceful`/`immediate` from the socket, `stop`/`kill` from the signal fallback.
    level: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<String>,
    /// `kill` only: whether the supervisor still holds the lock after [`KILL_WAIT`] (the
    /// reference system's `active`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    active: Option<bool>,
}

/// How long `kill` waits for the supervisor to let go of the lock before it reports
/// `active`: the longest agent grace (12 s) and time to record the round's end.
const KILL_WAIT: Duration = Duration::from_secs(20);

/// The socket's answer to a request it does not understand.
#[derive(Serialize)]
struct ErrorReply {
    ok: bool,
    error: String,
}

/// A request on the socket.
#[derive(Serialize, Deserialize)]
struct Request {
    cmd: String,
}

/// What `start --json` prints.
#[derive(Serialize)]
struct StartReply<'a> {
    started: bool,
    pid: u32,
    output: &'a Path,
}

/// The listening control socket; removed when dropped.
pub(crate) struct ControlServer {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds `<state_dir>/control.sock` (replacing a stale one: the caller holds the project
/// lock) and answers requests until dropped.
///
/// Errors: the socket cannot be bound (the caller carries on; clients fall back).
pub(crate) fn listen(
    state_dir: &Path,
    stop: StopSender,
    snapshot: watch::Receiver<Snapshot>,
) -> std::io::Result<ControlServer> {
    let path = state_dir.join(SOCKET_FILE);
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
    let host_pids: Vec<u32> = snapshot
        .borrow()
        .hosts
        .iter()
        .filter_map(|h| h.pid)
        .collect();
    let peer = conn
        .peer_creds()
        .ok()
        .and_then(|c| c.pid())
        .map(|p| p as u32);
    if let Some(reason) = super::peer_check::refusal(peer, &host_pids) {
        tracing::warn!(%reason, "control socket: peer refused");
        let mut send = &conn;
        let reply = serde_json::to_string(&ErrorReply {
            ok: false,
            error: format!("refused: {reason}"),
        })?;
        send.write_all(format!("{reply}\n").as_bytes()).await?;
        return send.flush().await;
    }
    let mut line = String::new();
    BufReader::new(&conn).read_line(&mut line).await?;
    let request: Option<Request> = serde_json::from_str(&line).ok();
    let pid = std::process::id();
    let stopped = |level: &str| StopReply {
        ok: true,
        pid,
        level: level.to_owned(),
        source: None,
        active: None,
    };
    let reply = match request.as_ref().map(|r| r.cmd.as_str()) {
        Some("status") => {
            let snap = snapshot.borrow().clone();
            let uptime = unix_s(SystemTime::now()).saturating_sub(snap.started_unix_s);
            serde_json::to_string(&StatusDoc {
                running: true,
                pid: Some(snap.pid),
                state: Some(snap.state),
                current_round: snap.current_round,
                started_at: Some(snap.started_at),
                started_unix_s: Some(snap.started_unix_s),
                uptime_s: Some(uptime),
                hosts: Some(snap.hosts),
                source: "socket".to_owned(),
            })
        }
        Some("stop") => {
            raise(stop, StopLevel::Graceful);
            serde_json::to_string(&stopped("graceful"))
        }
        Some("kill") => {
            raise(stop, StopLevel::Immediate);
            serde_json::to_string(&stopped("immediate"))
        }
        _ => serde_json::to_string(&ErrorReply {
            ok: false,
            error: "expected {\"cmd\": \"status\"|\"stop\"|\"kill\"}".into(),
        }),
    }?;
    let mut send = &conn;
    send.write_all(format!("{reply}\n").as_bytes()).await?;
    send.flush().await
}

/// Sends one request to the socket in `state_dir`; `None` when it does not answer in time or
/// answers something other than a `T`.
pub(crate) async fn request<T: DeserializeOwned>(state_dir: &Path, cmd: &str) -> Option<T> {
    let path = state_dir.join(SOCKET_FILE);
    let exchange = async {
        let name = path.as_path().to_fs_name::<GenericFilePath>().ok()?;
        let conn = LocalSocketStream::connect(name).await.ok()?;
        let mut send = &conn;
        let request = serde_json::to_string(&Request {
            cmd: cmd.to_owned(),
        })
        .ok()?;
        send.write_all(format!("{request}\n").as_bytes())
            .await
            .ok()?;
        let mut line = String::new();
        BufReader::new(&conn).read_line(&mut line).await.ok()?;
        serde_json::from_str::<T>(&line).ok()
    };
    tokio::time::timeout(SOCKET_TIMEOUT, exchange)
        .await
        .ok()
        .flatten()
}

/// `status [--json]`: exit 0 when a supervisor runs, 1 when none does.
///
/// Errors: exit 78 for a bad config.
pub(crate) async fn status(config_path: &Path, as_json: bool) -> Result<u8, CliError> {
    let config = crate::config::load(config_path)?;
    let state_dir = &config.runtime.state_dir;
    let report = match request::<StatusDoc>(state_dir, "status").await {
        Some(doc) => doc,
        None => fallback_status(state_dir),
    };
    if as_json {
        println!("{}", serde_json::to_string(&report).unwrap_or_default());
    } else if report.running {
        println!(
            "running: pid {}, round {}, state {}, up {} s",
            or_null(report.pid),
            or_null(report.current_round),
            report.state.as_deref().unwrap_or("?"),
            or_null(report.uptime_s)
        );
        for host in report.hosts.iter().flatten() {
            println!(
                "  host {}: {} (pid {})",
                host.name,
                host.state,
                or_null(host.pid)
            );
        }
    } else {
        println!("not running (last round {})", or_null(report.current_round));
    }
    Ok(if report.running {
        exit::OK
    } else {
        exit::FAILURE
    })
}

/// `value` as JSON would print it: the number, or `null`.
fn or_null<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

/// Status from the lock and `state.json` when the socket does not answer.
fn fallback_status(state_dir: &Path) -> StatusDoc {
    let round = read_round_state(state_dir).ok().map(|s| s.last_round);
    match lock_holder(state_dir) {
        Some(pid) => {
            let started = std::fs::metadata(state_dir.join(LOCK_FILE))
                .and_then(|m| m.modified())
                .ok();
            StatusDoc {
                running: true,
                pid: Some(pid),
                state: Some("unknown".to_owned()),
                current_round: round,
                started_at: started.map(timestamp),
                started_unix_s: None,
                uptime_s: started.map(|s| unix_s(SystemTime::now()).saturating_sub(unix_s(s))),
                hosts: Some(Vec::new()),
                source: "lock".to_owned(),
            }
        }
        None => StatusDoc {
            running: false,
            pid: None,
            state: None,
            current_round: round,
            started_at: None,
            started_unix_s: None,
            uptime_s: None,
            hosts: None,
            source: "lock".to_owned(),
        },
    }
}

/// `stop` (graceful) or `kill` (immediate): exit 0 when a supervisor was told, 1 when none
/// runs.
///
/// Errors: exit 78 for a bad config.
pub(crate) async fn stop(
    config_path: &Path,
    level: StopLevel,
    as_json: bool,
) -> Result<u8, CliError> {
    let config = crate::config::load(config_path)?;
    let mut report = ask_stop(&config.runtime.state_dir, level).await?;
    if level == StopLevel::Immediate {
        let state_dir = &config.runtime.state_dir;
        let deadline = tokio::time::Instant::now() + KILL_WAIT;
        let held = || lock_holder(state_dir) == Some(report.pid);
        while held() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        report.active = Some(held());
    }
    if as_json {
        println!("{}", serde_json::to_string(&report).unwrap_or_default());
    } else {
        println!(
            "agent-runner (pid {}): {}",
            report.pid,
            if level == StopLevel::Immediate {
                "terminating the agent now"
            } else {
                "stopping after the current round"
            }
        );
    }
    Ok(exit::OK)
}

/// No supervisor holds the project lock in `state_dir` (`stop`, `kill` exit 1).
#[derive(Debug, thiserror::Error)]
#[error("no agent-runner supervises this project (no lock holder in {})", state_dir.display())]
pub(crate) struct NotRunning {
    /// The state dir looked in.
    pub state_dir: std::path::PathBuf,
}

/// Asks the supervisor whose state dir is `state_dir` to stop at `level`: over the control socket, else by
/// SIGTERM to the lock holder (what `stop`, `kill` and `monitor`'s `auto_stop_on` use).
///
/// Errors: [`NotRunning`], no supervisor holds the lock.
pub(crate) async fn ask_stop(state_dir: &Path, level: StopLevel) -> Result<StopReply, NotRunning> {
    let cmd = if level == StopLevel::Immediate {
        "kill"
    } else {
        "stop"
    };
    let report = match request::<StopReply>(state_dir, cmd).await {
        Some(reply) => reply,
        None => match lock_holder(state_dir) {
            None => {
                return Err(NotRunning {
                    state_dir: state_dir.to_owned(),
                })
            }
            Some(pid) => {
                let target = Pid::from_raw(pid as i32);
                let _ = kill(target, Signal::SIGTERM);
                if level == StopLevel::Immediate {
                    // The second signal raises the stop to immediate.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    let _ = kill(target, Signal::SIGTERM);
                }
                StopReply {
                    ok: true,
                    pid,
                    level: cmd.to_owned(),
                    source: Some("signal".to_owned()),
                    active: None,
                }
            }
        },
    };
    Ok(report)
}

/// `restart [--force]`: asks the running supervisor to stop (graceful, or immediate with
/// `force`), waits until it has released the project lock (at most the round budget plus
/// the agent's grace and a minute: [`restart_wait`]), then [`start`]s `serve`. With none
/// running it only starts one.
///
/// Errors: 78 for a bad config; 1 when the supervisor does not end in time or `start`
/// fails.
pub(crate) async fn restart(
    config_path: &Path,
    force: bool,
    as_json: bool,
) -> Result<u8, CliError> {
    let config = crate::config::load(config_path)?;
    let state_dir = &config.runtime.state_dir;
    let level = if force {
        StopLevel::Immediate
    } else {
        StopLevel::Graceful
    };
    if let Ok(report) = ask_stop(state_dir, level).await {
        if !as_json {
            println!(
                "agent-runner (pid {}): {}",
                report.pid,
                if force {
                    "terminating the agent now"
                } else {
                    "stopping after the current round"
                }
            );
        }
        let wait = restart_wait(&config, force);
        let deadline = std::time::Instant::now() + wait;
        while lock_holder(state_dir).is_some() {
            if std::time::Instant::now() >= deadline {
                return Err(CliError::failure(format!(
                    "agent-runner (pid {}) did not end within {} s; not started again (try `restart --force`)",
                    report.pid,
                    wait.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    start(config_path, as_json).await
}

/// How long `restart` waits for the running supervisor to end: the round budget (a
/// graceful stop lets the round finish; not with `force`), the agent's stop grace, and a
/// minute for the dirty tree, hooks and shutdown.
pub(crate) fn restart_wait(config: &crate::config::Config, force: bool) -> Duration {
    let round = if force {
        Duration::ZERO
    } else {
        config.runtime.round_budget
    };
    round
        + crate::runtime::agent::cooperative::stop_signal(&config.agent).grace
        + Duration::from_secs(60)
}

/// `start`: runs `serve` detached (its own session; output in `<state_dir>/serve.out`) and
/// returns once it holds the project lock. Refused (exit 1) while a supervisor runs.
///
/// Errors: 78 for a bad config; 1 when one runs, or when `serve` exits during start-up
/// (its exit code and output are reported).
pub(crate) async fn start(config_path: &Path, as_json: bool) -> Result<u8, CliError> {
    let config = crate::config::load(config_path)?;
    let exe = std::env::current_exe().map_err(|e| CliError::failure(e.to_string()))?;
    let pid = spawn_serve(&config, &exe).await?;
    let out_path = config.runtime.state_dir.join(SERVE_OUT);
    if as_json {
        println!(
            "{}",
            serde_json::to_string(&StartReply {
                started: true,
                pid,
                output: &out_path,
            })
            .unwrap_or_default()
        );
    } else {
        println!(
            "agent-runner serve started (pid {pid}); output in {}",
            out_path.display()
        );
    }
    Ok(exit::OK)
}

/// Where a detached `serve` writes its output, in `state_dir`.
pub(crate) const SERVE_OUT: &str = "serve.out";

/// Runs `exe --config <config> serve` detached (its own session; output in
/// `<state_dir>/serve.out`) and returns its pid once it holds the project lock (or after
/// 30 s of trying). What `start` does, with the binary named (`upgrade` starts the
/// installed path, not its own, replaced, executable).
///
/// Errors (exit 1): a supervisor already runs; the state dir or output file cannot be
/// made; `serve` cannot be started or exits during start-up (its status and output are
/// in the message).
pub(crate) async fn spawn_serve(
    config: &crate::config::Config,
    exe: &Path,
) -> Result<u32, CliError> {
    use std::os::unix::process::CommandExt;
    let state_dir = &config.runtime.state_dir;
    if let Some(pid) = lock_holder(state_dir) {
        return Err(CliError::failure(format!(
            "another agent-runner (pid {pid}) already supervises this project"
        )));
    }
    std::fs::create_dir_all(state_dir)
        .map_err(|e| CliError::failure(format!("cannot create {}: {e}", state_dir.display())))?;
    let out_path = state_dir.join(SERVE_OUT);
    let out = std::fs::File::create(&out_path)
        .map_err(|e| CliError::failure(format!("cannot create {}: {e}", out_path.display())))?;
    let err = out
        .try_clone()
        .map_err(|e| CliError::failure(e.to_string()))?;
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
        if lock_holder(state_dir) == Some(pid) {
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
    Ok(pid)
}
