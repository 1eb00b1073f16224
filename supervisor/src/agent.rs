//! The agent process of one round: started in its own process group, prompt by argv or
//! stdin, stdout+stderr merged into the round log, bounded by the round budget. When the
//! budget runs out (or an immediate stop arrives) the whole group gets SIGTERM, then
//! SIGKILL after [`KILL_GRACE`]. Whatever the agent left running in its group is killed
//! when it exits.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::stop::{reached, StopLevel, StopWatch};

/// Time between SIGTERM and SIGKILL to the agent's process group.
pub const KILL_GRACE: Duration = Duration::from_secs(5);

/// What to run.
#[derive(Debug)]
pub struct AgentSpec {
    /// Full argv; `argv[0]` is looked up on PATH.
    pub argv: Vec<String>,
    /// Variables added to the supervisor's environment.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub work_dir: PathBuf,
    /// The round log receiving stdout and stderr.
    pub log: File,
    /// Written to stdin (then closed) for stdin delivery; `None` gives `/dev/null`.
    pub stdin_prompt: Option<String>,
    /// Wall-clock budget.
    pub budget: Duration,
}

/// How the agent's run ended (`agent_exit.exit_cause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCause {
    /// It exited by itself.
    Exited,
    /// A signal ended it (not ours).
    Signaled,
    /// The budget ran out and we terminated it.
    Timeout,
    /// An immediate stop (second signal) terminated it.
    Stopped,
}

impl ExitCause {
    /// The event spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ExitCause::Exited => "exited",
            ExitCause::Signaled => "signaled",
            ExitCause::Timeout => "timeout",
            ExitCause::Stopped => "stopped",
        }
    }
}

/// The outcome of one agent run.
#[derive(Clone, Debug)]
pub struct AgentExit {
    /// Exit code when it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
    /// Wall time from spawn to reap.
    pub duration: Duration,
    /// Why it ended.
    pub cause: ExitCause,
}

impl AgentExit {
    /// A clean exit: status 0, by itself.
    pub fn is_clean(&self) -> bool {
        self.cause == ExitCause::Exited && self.exit_code == Some(0)
    }
}

/// Spawns the agent and waits for it under its budget and the stop watch.
///
/// Errors: the agent could not be started (not found, not executable).
pub async fn run(spec: AgentSpec, stop: &mut StopWatch) -> std::io::Result<AgentExit> {
    let out = spec.log.try_clone()?;
    let mut cmd = Command::new(&spec.argv[0]);
    cmd.args(&spec.argv[1..])
        .current_dir(&spec.work_dir)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .process_group(0)
        .stdin(if spec.stdin_prompt.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(spec.log))
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    let pgid = Pid::from_raw(child.id().map(|id| id as i32).unwrap_or(0));
    if let (Some(prompt), Some(mut stdin)) = (spec.stdin_prompt, child.stdin.take()) {
        tokio::spawn(async move {
            // An agent that exits without reading its prompt closes the pipe: not an error.
            let _ = stdin.write_all(prompt.as_bytes()).await;
        });
    }
    let mut cause = None;
    let status = tokio::select! {
        status = child.wait() => status?,
        _ = tokio::time::sleep(spec.budget) => { cause = Some(ExitCause::Timeout); terminate(&mut child, pgid).await? }
        _ = reached(stop, StopLevel::Immediate) => { cause = Some(ExitCause::Stopped); terminate(&mut child, pgid).await? }
    };
    // Reap what the agent left behind in its group.
    let _ = killpg(pgid, Signal::SIGKILL);
    let cause = cause.unwrap_or(if status.signal().is_some() {
        ExitCause::Signaled
    } else {
        ExitCause::Exited
    });
    Ok(AgentExit {
        exit_code: status.code(),
        signal: status.signal(),
        duration: started.elapsed(),
        cause,
    })
}

async fn terminate(
    child: &mut tokio::process::Child,
    pgid: Pid,
) -> std::io::Result<std::process::ExitStatus> {
    let _ = killpg(pgid, Signal::SIGTERM);
    match tokio::time::timeout(KILL_GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            let _ = killpg(pgid, Signal::SIGKILL);
            child.wait().await
        }
    }
}
