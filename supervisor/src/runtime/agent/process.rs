//! The agent process of one round: started in its own process group, prompt by argv or
//! stdin, stdout+stderr merged through one pipe into the round log (at most
//! `[runtime] round_log_max_bytes` of it, then a marker line), bounded by the round budget. When the
//! budget runs out (or an immediate stop arrives) the whole group gets the agent's stop
//! signal (SIGTERM, or its CLI's cooperative one), then SIGKILL after its grace
//! ([`crate::runtime::agent::cooperative`]). Whatever the agent left running in its group is killed
//! when it exits.
//!
//! Descendants that left the group (`setsid`, double fork) are caught too: the supervisor
//! is a child subreaper ([`become_subreaper`]), so every orphaned descendant is reparented
//! to it; after the agent is gone, [`reap_orphans`] SIGKILLs and reaps every child of the
//! supervisor that is not a plugin host, until none is left. No zombie remains.
//!
//! The agent's own process is signalled by its pid as well as by its group, so an agent
//! that moves itself into another group (`setpgid` into the supervisor's) is still ended by
//! the budget, a stop and the kill that follows.
//!
//! The agent is started by the `plugin-host` launcher (docs/security.md "The launcher"),
//! which applies in the agent's own process what the round asks for: the round's cgroup,
//! the guard of its process group, `PR_SET_PDEATHSIG`, the egress bridge and the agent's
//! confinement ([`crate::runtime::agent::sandbox`]); then it runs the agent by the path
//! found on `PATH`. If the supervisor itself dies (even by SIGKILL) the agent dies with it:
//! the agent's process has `PR_SET_PDEATHSIG` = SIGKILL, and a guard process, forked into
//! the group before the agent's exec, waits for the end of a pipe only the supervisor holds
//! and then SIGKILLs its own group. A descendant that
//! left the agent's process group (`setsid`, `setpgid`) while its parent lives on is out of
//! their reach when the supervisor is killed: under the systemd unit, the unit's control
//! group ends it (docs/operations.md, "Leaving it unattended").

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

use agent_runner_plugin_host::agent::confine::AgentConfinement;
use agent_runner_plugin_host::agent::policy::denial_target;
use agent_runner_plugin_host::common::program::Program;
use agent_runner_plugin_host::Observed;

use crate::record::stop::{reached, StopLevel, StopWatch};
use crate::runtime::agent::environment::AllowList;
use crate::runtime::machine::processes::own_children;

/// What to run.
#[derive(Debug)]
pub(crate) struct AgentSpec {
    /// Full argv; `argv[0]` is looked up on PATH.
    pub argv: Vec<String>,
    /// Variables set over the inherited environment.
    pub env: Vec<(String, String)>,
    /// What of the supervisor's environment the agent inherits: what the allow-list passes
    /// ([`crate::runtime::agent::environment`]); `None`: all of it (`mode = "off"`).
    pub inherit: Option<AllowList>,
    /// Working directory.
    pub work_dir: PathBuf,
    /// The round log receiving stdout and stderr.
    pub log: File,
    /// At most this many bytes of output go to the round log; the rest is discarded after
    /// a marker line ([`CappedLog`]).
    pub log_cap: u64,
    /// Written to stdin (then closed) for stdin delivery; `None` gives `/dev/null`.
    pub stdin_prompt: Option<String>,
    /// Wall-clock budget.
    pub budget: Duration,
    /// The signal that ends it and the grace before SIGKILL
    /// ([`crate::runtime::agent::cooperative`]).
    pub stop_signal: crate::runtime::agent::cooperative::StopSignal,
    /// The in-round host-health floor; it ends the round on sustained critical pressure.
    pub floor: Option<crate::runtime::machine::host_health::Floor>,
    /// Pids of the supervisor's own children that must survive the round (plugin hosts).
    pub spare: Vec<u32>,
    /// Result grace, when `max_grace_after_result_s` and `terminal_marker` are set.
    pub grace: Option<crate::runtime::agent::grace::Grace>,
    /// The in-round heartbeat, when `[monitor] round_progress_interval_s` > 0; it beats
    /// while the agent is waited on and stops when the agent is done.
    pub progress: Option<crate::runtime::agent::round_progress::Heartbeat>,
    /// `cgroup.procs` of the round's cgroup (close-on-exec), which the agent joins before
    /// its exec ([`crate::runtime::machine::round_cgroup`]); `None`: the supervisor's own cgroup.
    pub cgroup_procs: Option<OwnedFd>,
    /// With `[agent.sandbox] allow_hosts`: the agent's network namespace and forwarder,
    /// entered before its exec ([`agent_runner_plugin_host::agent::egress_bridge`]); the
    /// supervisor's end is served by [`crate::runtime::egress::proxy`].
    pub egress: Option<agent_runner_plugin_host::agent::egress_bridge::EgressBridge>,
    /// Resolves when the round's running spend crossed a `[budget]` cap: the agent is then
    /// ended as the time budget ends it ([`crate::runtime::agent::usage_watch`]); a sender
    /// dropped unsent never ends it.
    pub budget_stop: Option<tokio::sync::oneshot::Receiver<()>>,
    /// The agent's confinement, applied between fork and exec after every other step (the
    /// network namespace above included) ([`crate::runtime::agent::sandbox`]); `None`:
    /// unconfined (`[agent.sandbox] mode = "off"`).
    pub confinement: Option<AgentConfinement>,
}

/// How the agent's run ended (`agent_exit.exit_cause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExitCause {
    /// It exited by itself.
    Exited,
    /// A signal ended it (not ours).
    Signaled,
    /// The budget ran out and we terminated it.
    Timeout,
    /// An immediate stop (second signal) terminated it.
    Stopped,
    /// It printed its result and lingered past `max_grace_after_result_s`; we ended it.
    GraceKill,
    /// Sustained critical host pressure ended it (`round_mem_terminated`).
    HostPressure,
    /// Its running spend crossed a `[budget]` cap (`budget_round_stopped`,
    /// [`crate::runtime::agent::usage_watch`]).
    Budget,
}

impl ExitCause {
    /// The event spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ExitCause::Exited => "exited",
            ExitCause::Signaled => "signaled",
            ExitCause::Timeout => "timeout",
            ExitCause::Stopped => "stopped",
            ExitCause::GraceKill => "grace_kill",
            ExitCause::HostPressure => "host_pressure",
            ExitCause::Budget => "budget",
        }
    }
}

/// The outcome of one agent run.
#[derive(Clone, Debug)]
pub(crate) struct AgentExit {
    /// Exit code when it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
    /// Wall time from spawn to reap.
    pub duration: Duration,
    /// Why it ended.
    pub cause: ExitCause,
    /// What the round log received.
    pub log: CappedLog,
    /// The system calls the agent's seccomp filter denied, by name with the refused
    /// argument (`ptrace`, `socket(AF_UNIX)`: `agent::policy::denial_target`), one entry
    /// per call (docs/security.md, "Denials told, not silent"); empty when seccomp is not
    /// applied.
    pub seccomp_denials: Vec<String>,
    /// The TCP connects of the agent that Landlock refused, as the seccomp observer saw
    /// them (docs/security.md "Denials told, not silent"), one entry per call.
    pub landlock_connects: Vec<std::net::SocketAddr>,
    /// The writes of the agent that Landlock refused, as the seccomp observer saw them:
    /// (the call's name, the path), one entry per path of a call.
    pub landlock_writes: Vec<(&'static str, PathBuf)>,
    /// The reads of credential stores that Landlock refused, as the seccomp observer saw
    /// them: the path as the agent named it, made absolute.
    pub landlock_reads: Vec<PathBuf>,
    /// The kernel's OOM killer ended the agent inside the round's cgroup (set after the
    /// round from the cgroup's `oom_kill` count: [`crate::runtime::machine::round_cgroup`]).
    pub oom_killed: bool,
    /// The in-round floor nudged the agent (`pressure.in_round_nudge`).
    pub memory_nudged: bool,
}

/// What the copier wrote to the round log: the agent's bytes kept, and those discarded
/// once the cap was reached (after the marker line [`cap_marker`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CappedLog {
    /// Agent output bytes written to the log.
    pub kept: u64,
    /// Agent output bytes discarded past the cap.
    pub discarded: u64,
}

/// The line written to a round log when its cap is reached.
pub(crate) fn cap_marker(cap: u64) -> String {
    format!("\n[agent-runner: round log cap of {cap} bytes reached ([runtime] round_log_max_bytes); further output is discarded]\n")
}

/// How long the copier may still drain the pipe after the agent and its group are gone
/// (a descendant out of reach may hold the pipe open; its output is then not logged).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Copies the agent's merged output from `pipe` into `log` until every writer closed the
/// pipe: the first `cap` bytes, then the marker, then nothing but counting.
fn copy_capped(pipe: OwnedFd, mut log: File, cap: u64) -> CappedLog {
    use std::io::{Read, Write};
    let mut pipe = File::from(pipe);
    let mut counts = CappedLog::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let room = cap.saturating_sub(counts.kept) as usize;
        let keep = n.min(room);
        if keep > 0 && log.write_all(&buf[..keep]).is_ok() {
            counts.kept += keep as u64;
        }
        if keep < n {
            if counts.discarded == 0 {
                let _ = log.write_all(cap_marker(cap).as_bytes());
            }
            counts.discarded += (n - keep) as u64;
        }
    }
    counts
}

impl AgentExit {
    /// A clean exit: status 0, by itself; or ended after printing its result
    /// ([`ExitCause::GraceKill`]): its work is done.
    pub(crate) fn is_clean(&self) -> bool {
        self.cause == ExitCause::GraceKill
            || self.cause == ExitCause::Exited && self.exit_code == Some(0)
    }

    /// Ended by memory: the in-round memory floor ([`ExitCause::HostPressure`]), its nudge,
    /// or an OOM kill in the round's cgroup. What `mem_loop` counts (docs/operations.md, "Memory
    /// loops").
    pub(crate) fn ended_by_memory(&self) -> bool {
        self.cause == ExitCause::HostPressure || self.oom_killed || self.memory_nudged
    }
}

/// Spawns the agent and waits for it under its budget and the stop watch.
///
/// Errors: the agent could not be started (not found, not executable).
pub(crate) async fn run(spec: AgentSpec, stop: &mut StopWatch) -> std::io::Result<AgentExit> {
    // stdout and stderr share one pipe; a copier thread caps what reaches the round log.
    let (pipe, out) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let err = out.try_clone()?;
    let env = environment_with(&spec.env, spec.inherit.as_ref());
    let path = find_on_path(&spec.argv[0], env_var(&env, "PATH"), &spec.work_dir);
    let mut program = Program::new("agent", path, &spec.argv, &env)?;
    if let Some(procs) = spec.cgroup_procs {
        program.join_cgroup(procs);
    }
    let guard = program.group_guard()?;
    if let Some(bridge) = spec.egress {
        let (forwarder, ids, ports) = bridge.into_parts();
        program.egress(forwarder, ids, ports);
    }
    let confinement = spec.confinement;
    if let Some(confinement) = &confinement {
        let fds = confinement.fill_plan(program.plan_mut());
        program.pass(fds);
    }
    let (mut cmd, pending) = program.command().map_err(std::io::Error::other)?;
    cmd.current_dir(&spec.work_dir)
        .process_group(0)
        .stdin(if spec.stdin_prompt.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    let started = Instant::now();
    let mut child = spawn_launched(cmd, pending, confinement.as_ref())?;
    // The launcher holds what it was given; our copies go (the bridge's forwarder end
    // among them, so the proxy sees the end when the forwarder ends).
    drop(program);
    // The launcher sent the agent's seccomp listener before its exec. Without it the kernel
    // fails every notified call with ENOSYS, every connect among them: the agent is ended
    // and the spawn fails, naming why.
    let mut denials = match confinement
        .as_ref()
        .map(|c| c.denial_listener(child.id().unwrap_or(0)))
    {
        Some(Err(e)) => {
            let pgid = Pid::from_raw(child.id().map(|id| id as i32).unwrap_or(0));
            let _ = killpg(pgid, Signal::SIGKILL);
            let _ = child.wait().await;
            return Err(std::io::Error::new(
                e.kind(),
                format!("the agent's seccomp listener was not received: {e}"),
            ));
        }
        Some(Ok(listener)) => listener,
        None => None,
    };
    let (log, cap) = (spec.log, spec.log_cap);
    // A plain thread, not the runtime's blocking pool: one stuck on a pipe a stray
    // descendant holds must not hold up the supervisor's exit.
    let (done, copier) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || done.send(copy_capped(pipe, log, cap)));
    let pgid = Pid::from_raw(child.id().map(|id| id as i32).unwrap_or(0));
    if let (Some(prompt), Some(mut stdin)) = (spec.stdin_prompt, child.stdin.take()) {
        tokio::spawn(async move {
            // An agent that exits without reading its prompt closes the pipe: not an error.
            let _ = stdin.write_all(prompt.as_bytes()).await;
        });
    }
    let mut cause = None;
    let agent_pid = child.id().unwrap_or(0);
    let over_budget = async {
        let crossed = match spec.budget_stop {
            Some(crossed) => crossed.await.is_ok(),
            None => false,
        };
        if !crossed {
            std::future::pending::<()>().await;
        }
    };
    let grace = async {
        match &spec.grace {
            // The group guard is a fork of the launcher: its executable is the launcher's.
            Some(grace) => {
                let guard_exe = agent_runner_plugin_host::Launcher::get()
                    .ok()
                    .and_then(|l| l.path().canonicalize().ok());
                grace.due(agent_pid, guard_exe).await
            }
            None => std::future::pending().await,
        }
    };
    let heartbeat = async {
        match &spec.progress {
            Some(heartbeat) => heartbeat.beat(started).await,
            None => std::future::pending().await,
        }
    };
    let status = tokio::select! {
        status = child.wait() => status?,
        never = heartbeat => match never {},
        _ = grace => { cause = Some(ExitCause::GraceKill); terminate(&mut child, pgid, spec.stop_signal).await? }
        _ = tokio::time::sleep(spec.budget) => { cause = Some(ExitCause::Timeout); terminate(&mut child, pgid, spec.stop_signal).await? }
        _ = reached(stop, StopLevel::Immediate) => { cause = Some(ExitCause::Stopped); terminate(&mut child, pgid, spec.stop_signal).await? }
        _ = breached(spec.floor.as_ref(), pgid.as_raw() as u32) => { cause = Some(ExitCause::HostPressure); terminate(&mut child, pgid, spec.stop_signal).await? }
        _ = over_budget => { cause = Some(ExitCause::Budget); terminate(&mut child, pgid, spec.stop_signal).await? }
    };
    // Reap what the agent left behind in its group (the guard process included), then
    // what left the group (reparented to us, the subreaper, as their parents died).
    let _ = killpg(pgid, Signal::SIGKILL);
    reap_orphans(&spec.spare).await;
    drop(guard);
    let duration = started.elapsed();
    let log = match tokio::time::timeout(DRAIN_GRACE, copier).await {
        Ok(Ok(counts)) => counts,
        _ => {
            tracing::warn!("agent output still open after the agent's end; the round log may miss its last bytes");
            CappedLog::default()
        }
    };
    // Every process under the filter is gone: each denial was queued before its answer.
    let mut seccomp_denials = Vec::new();
    let mut landlock_connects = Vec::new();
    let mut landlock_writes = Vec::new();
    let mut landlock_reads = Vec::new();
    if let Some(listener) = denials.as_mut() {
        while let Some(d) = listener.try_denial() {
            seccomp_denials.push(denial_target(d.nr, &d.args));
        }
        // The listener queues only what Landlock refuses.
        while let Some(o) = listener.try_observed() {
            match o {
                Observed::Connect { address, .. } => landlock_connects.push(address),
                Observed::Write { call, path, .. } => landlock_writes.push((call, path)),
                Observed::Read { path, .. } => landlock_reads.push(path),
            }
        }
    }
    let cause = cause.unwrap_or(if status.signal().is_some() {
        ExitCause::Signaled
    } else {
        ExitCause::Exited
    });
    Ok(AgentExit {
        exit_code: status.code(),
        signal: status.signal(),
        duration,
        cause,
        log,
        seccomp_denials,
        landlock_connects,
        landlock_writes,
        landlock_reads,
        oom_killed: false,
        memory_nudged: spec
            .floor
            .as_ref()
            .is_some_and(|f| f.nudged.load(std::sync::atomic::Ordering::Relaxed)),
    })
}

/// Resolves when `floor` calls for the end of the round; never without a floor.
async fn breached(floor: Option<&crate::runtime::machine::host_health::Floor>, pid: u32) {
    match floor {
        Some(floor) => floor.breached(pid).await,
        None => std::future::pending().await,
    }
}

/// Makes this process a child subreaper (`PR_SET_CHILD_SUBREAPER`): orphaned descendants
/// are reparented to it instead of to init, so [`reap_orphans`] can find them. Called once
/// at boot by `serve` and `round`.
///
/// Errors: the `prctl` failed (the reaper then only sees the agent's own group).
pub(crate) fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes one integer argument and touches no memory of
    // ours.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Longest time [`reap_orphans`] keeps killing newly reparented descendants.
const REAP_DEADLINE: Duration = Duration::from_secs(5);

/// SIGKILLs (with their process groups when they lead one) and reaps every child of this
/// process not in `spare`, again and again as their own orphans are reparented here, until
/// none is left or [`REAP_DEADLINE`] passes. Only the pids found are waited for, so the
/// exit statuses of the hosts (tokio's children) are never taken.
pub(crate) async fn reap_orphans(spare: &[u32]) {
    let deadline = Instant::now() + REAP_DEADLINE;
    // SIGCHLD wakes the wait below as soon as a killed child can be reaped (a death before
    // this listener exists is seen by the first `waitpid`).
    let mut child_exited =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok();
    loop {
        let children: Vec<(u32, u32)> = own_children()
            .into_iter()
            .filter(|(pid, _)| !spare.contains(pid))
            .collect();
        if children.is_empty() || Instant::now() >= deadline {
            return;
        }
        let own_group = nix::unistd::getpgrp().as_raw() as u32;
        for &(pid, pgrp) in &children {
            if pgrp == pid && pgrp != own_group {
                let _ = killpg(Pid::from_raw(pgrp as i32), Signal::SIGKILL);
            }
            let _ = nix::sys::signal::kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        for &(pid, _) in &children {
            let pid = Pid::from_raw(pid as i32);
            loop {
                use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
                match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) if Instant::now() < deadline => {
                        // A SIGKILLed process is reapable within milliseconds: wait for
                        // SIGCHLD, polling every 2 ms should it be missed.
                        let poll = Duration::from_millis(2);
                        match child_exited.as_mut() {
                            Some(sig) => {
                                let _ = tokio::time::timeout(poll, sig.recv()).await;
                            }
                            None => tokio::time::sleep(poll).await,
                        }
                    }
                    _ => break,
                }
            }
        }
    }
}

/// `stop.signal` to the agent's process group and to the agent's own pid (it may have left
/// the group), then SIGKILL to both after `stop.grace`. The pid cannot name another process
/// meanwhile: the agent is our child, not yet reaped.
async fn terminate(
    child: &mut tokio::process::Child,
    pgid: Pid,
    stop: crate::runtime::agent::cooperative::StopSignal,
) -> std::io::Result<std::process::ExitStatus> {
    let signal_both = |signal| {
        if pgid.as_raw() > 0 {
            let _ = killpg(pgid, signal);
            // The leader once more only when it has left its group. Sent to both every
            // time, a cooperative agent that had already begun draining got its stop signal
            // twice (a second Ctrl-C reads as "stop now"; cooperative_stop caught it under
            // load).
            if nix::unistd::getpgid(Some(pgid)).is_ok_and(|group| group != pgid) {
                let _ = nix::sys::signal::kill(pgid, signal);
            }
        }
    };
    signal_both(stop.signal);
    match tokio::time::timeout(stop.grace, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            signal_both(Signal::SIGKILL);
            child.wait().await
        }
    }
}

/// Spawns `cmd`, a launcher's command for a program ([`Program::command`]), killed on drop,
/// root's PID namespace of `confinement` armed for it (this thread's next child only, and
/// no other fork on this thread in between), and returns it once the launcher executed the
/// program. `cmd` is dropped here, so the pipe ends it held close in this process.
///
/// Errors: the spawn's, or the launcher's failure (its step and message, with the kind of
/// its errno).
pub(crate) fn spawn_launched(
    cmd: std::process::Command,
    pending: agent_runner_plugin_host::common::launcher::Pending,
    confinement: Option<&AgentConfinement>,
) -> std::io::Result<tokio::process::Child> {
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    let pid_namespace = match confinement {
        Some(c) => c.pid_namespace_for_next_child()?,
        None => None,
    };
    let spawned = cmd.spawn();
    drop(pid_namespace);
    let child = spawned?;
    drop(cmd);
    pending.confirm().map_err(|failure| {
        let kind = failure.errno.map_or(std::io::ErrorKind::Other, |e| {
            std::io::Error::from_raw_os_error(e).kind()
        });
        std::io::Error::new(kind, failure.to_string())
    })?;
    Ok(child)
}

/// This process's environment, only what `inherit` passes of it when given (all of it
/// otherwise), with `overrides` set over it (the later of two entries of one name wins;
/// an override always passes), as the agent gets it.
pub(crate) fn environment_with(
    overrides: &[(String, String)],
    inherit: Option<&AllowList>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| inherit.is_none_or(|list| list.passes(k)))
        .collect();
    for (key, value) in overrides {
        env.retain(|(k, _)| k.as_os_str() != key.as_str());
        env.push((key.into(), value.into()));
    }
    env
}

/// The value of `name` in `env`.
fn env_var(env: &[(OsString, OsString)], name: &str) -> Option<OsString> {
    env.iter()
        .find(|(k, _)| k.as_os_str() == name)
        .map(|(_, v)| v.clone())
}

/// `argv0` as the exec will find it: a path with a slash against `work_dir` (the agent's
/// cwd), a bare name on `path` (the first executable file); unchanged when not found (the
/// exec then fails with its own error).
pub(crate) fn find_on_path(argv0: &str, path: Option<OsString>, work_dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    if argv0.contains('/') {
        return work_dir.join(argv0);
    }
    let path = path.unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(argv0))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| PathBuf::from(argv0))
}
