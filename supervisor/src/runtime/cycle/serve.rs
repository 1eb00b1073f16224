//! Boot (config → sandbox gate → lock → hosts) and the loop: rounds back to back with
//! `restart_delay_s` between them, until `max_rounds`, `--once`, `max_duration_s`, the
//! goal reached (`[goal] stop_when`), the stop file, the crash-loop breaker, or a stop
//! signal; `max_rounds_per_hour` pauses it ([`crate::runtime::cycle::bounds`]). Before every round the config is re-read
//! ([`crate::runtime::cycle::config_follow`]; SIGHUP re-reads it at once between rounds and never
//! ends the process). The first SIGTERM/SIGINT (or `agent-runner stop`)
//! lets the running round finish within its budget and starts no new one; a second (or
//! `agent-runner kill`) terminates the agent. Every wait (restart delay, defer, skip idle,
//! a hook call) ends at once on a stop.
//!
//! Crash-loop breaker (docs/operations.md, "The crash-loop breaker"): a failed round — the
//! agent ended unclean (non-zero exit, a signal, the budget) whatever it printed, or a
//! post-round hook diagnosed a failure (usage or rate limit, overload, network), or the
//! round could not start at all (agent not found, prompt unreadable) — counts;
//! [`CRASH_LOOP_LIMIT`] of them in a row stop `serve` with a `crash_loop` event (the reason
//! and the last lines of the last round's log) and exit 75. Any other round resets the
//! count. (A clean, silent, instant exit, like the benchmark's `true`, is a valid round.)
//! Diagnosed failures are also backed off ([`crate::runtime::cycle::transient`]), so a loop that
//! burns money stops after a few minutes of growing waits.

use agent_runner_plugin_host::common::probe::probe;
use agent_runner_protocol::{LastRound, ProjectState};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

use crate::budget::spend::Ledger;
use crate::config::{self, ConfigError};
use crate::hosts::sandbox::{SandboxGate, SandboxRefused};
use crate::hosts::HostManager;
use crate::record::events::{Event, EventLog};
use crate::record::service::{BackOffDoc, ServiceFile, ServiceState};
use crate::record::state::{self, LockError, ProjectLock};
use crate::record::status::Snapshot;
use crate::record::stop::{reached, sleep_unless, StopLevel, StopWatch};
use crate::runtime::agent::sandbox::{AgentSandboxGate, AgentSandboxRefused};
use crate::runtime::cycle::agent_done;
use crate::runtime::cycle::backoff::{self, Plan, WaitEnd};
use crate::runtime::cycle::config_follow::{ConfigFollower, Trigger};
use crate::runtime::cycle::log_views;
use crate::runtime::cycle::round::{Attempt, Git, Ran, RoundError, Runner};
use crate::runtime::cycle::schedule_gate;
use crate::runtime::cycle::transient::{self, Step, Transients};
use crate::runtime::cycle::tree_lock;
use crate::runtime::git::attribution::OwnFiles;
use crate::runtime::git::repo::Repo;
use crate::runtime::steps::serve_startup;
use crate::runtime::steps::spawn_gate::Verdict;

/// The shortest wait before spawn hooks are asked again after a defer, so a `defer_s = 0`
/// answer cannot spin (the reference system re-asks ~4×/s).
pub(crate) const MIN_REASK: Duration = Duration::from_secs(1);

/// Failed rounds in a row that stop `serve` (exit 75, `crash_loop`), as the reference
/// system's crash loop.
pub(crate) const CRASH_LOOP_LIMIT: u32 = 5;

/// A clean round shorter than this that changed nothing (no dirt left, `HEAD` unmoved) and
/// reported no usage, of a preset's CLI, did nothing (`stalled_no_progress`, the reference
/// system's rule: some CLIs exit 0 on a provider failure they do not print in a form a
/// detector reads). For a CLI whose usage no detector reads (kimi) the tree alone tells;
/// an agent no built-in detector knows (a script of the operator's) is not judged.
pub(crate) const STALL_FAST: Duration = Duration::from_secs(30);

/// Such rounds in a row that stop `serve` (exit 75, `stalled_no_progress`).
pub(crate) const STALL_LIMIT: u32 = 5;

/// Rounds ended by memory in a row (the in-round floor, an OOM kill in the round's cgroup)
/// that stop `serve` (exit 71, `mem_loop`; exit 70, `mem_loop_persistent`, when it is the
/// [`crate::record::mem_loops::PERSISTENT_AT`]-th within its window), as the reference
/// system's memory loop. Such a round is not a failure of the agent: it resets the
/// crash-loop count.
pub(crate) const MEM_LOOP_LIMIT: u32 = 5;

/// Round attempts in a row that the environment failed ([`RoundError::is_environmental`])
/// that stop `serve` (exit 76, `environment_unusable`); between them `serve` waits
/// [`environment_wait`].
pub(crate) const ENVIRONMENT_LIMIT: u32 = 5;

/// The longest wait between two attempts the environment failed.
const ENVIRONMENT_MAX_WAIT: Duration = Duration::from_secs(300);

/// The wait after the `failures`-th attempt in a row the environment failed:
/// `restart_delay_s` (at least 1 s), doubled on each repeat, at most
/// [`ENVIRONMENT_MAX_WAIT`] (10 s, 20 s, 40 s, 80 s with the default delay: `serve` gives up
/// after about 2.5 minutes).
fn environment_wait(restart_delay: Duration, failures: u32) -> Duration {
    let base = restart_delay.max(Duration::from_secs(1));
    base.saturating_mul(1 << failures.saturating_sub(1).min(16))
        .min(ENVIRONMENT_MAX_WAIT)
}

/// Lines of the last failed round's log the `crash_loop` event carries.
const CRASH_LOOP_TAIL_LINES: usize = 10;

/// At most this many characters of them (the end kept).
const CRASH_LOOP_TAIL_CHARS: usize = 2000;

/// A booted supervisor: the lock held, hosts running.
pub(crate) struct Booted {
    /// Runs the rounds.
    pub runner: Runner,
    /// What `status` reports, kept current by [`serve`].
    pub status: watch::Sender<Snapshot>,
    /// The sandbox gate of this boot (reported in `service.json`).
    pub gate: SandboxGate,
    /// Re-reads the config before each round and on SIGHUP.
    pub follow: ConfigFollower,
    /// `<log_dir>/agent-runner.lock.holder` while the lock is held (dropped before it).
    _holder: Option<log_views::ViewFile>,
    /// The work tree's own lock, by its identity ([`tree_lock`]).
    _tree_lock: tree_lock::TreeLock,
    _lock: ProjectLock,
}

/// Why `serve` or `round` could not boot.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BootError {
    /// The config is bad, or `runtime.work_dir` is not in a git working tree.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `sandbox = "require"` on a kernel that cannot honour it.
    #[error(transparent)]
    Sandbox(SandboxRefused),
    /// `[agent.sandbox] mode = "require"` on a machine that cannot honour it.
    #[error(transparent)]
    AgentSandbox(AgentSandboxRefused),
    /// The `plugin-host` launcher is missing, unusable or of another build: nothing could
    /// be launched (docs/security.md "The launcher").
    #[error(transparent)]
    Launcher(#[from] agent_runner_plugin_host::LauncherError),
    /// The SIGHUP handler could not be installed.
    #[error("cannot install the SIGHUP handler: {0}")]
    Hangup(std::io::Error),
    /// Another supervisor holds the project lock (or the lock file cannot be used).
    #[error(transparent)]
    Lock(#[from] LockError),
    /// Another supervisor holds the work tree, or the record is another tree's.
    #[error(transparent)]
    TreeLock(#[from] tree_lock::TreeLockError),
}

impl BootError {
    /// The state dir or the work tree could not be used (not: held by another supervisor):
    /// the CLI exits 76, which the systemd unit restarts (docs/operations.md, "Leaving it
    /// unattended").
    pub(crate) fn is_environmental(&self) -> bool {
        matches!(
            self,
            BootError::Lock(LockError::Io { .. })
                | BootError::TreeLock(tree_lock::TreeLockError::Io { .. })
        )
    }
}

/// `environment_unusable` (stage `boot`) for an environmental boot failure, which it
/// returns.
fn unusable_at_boot(events: &EventLog, err: BootError) -> BootError {
    if err.is_environmental() {
        events.emit(Event::EnvironmentUnusable {
            stage: "boot".to_owned(),
            error: err.to_string(),
            consecutive_failures: 1,
            threshold: 1,
            rounds_completed: 0,
        });
    }
    err
}

/// Everything before the first round: config, gate, lock, git check, hosts. `job`
/// (`serve --job`) also needs a goal that can end the run: `[goal] stop_when =
/// "all_satisfied"`.
///
/// Errors: [`BootError`]; the CLI exits 78 for config and gate problems (and for `job`
/// without such a goal), 76 when the state dir or work tree cannot be used
/// ([`BootError::is_environmental`]), 1 for the others (another supervisor holds the lock,
/// typically).
pub(crate) async fn boot(config_path: &Path, job: bool) -> Result<Booted, BootError> {
    boot_with(config_path, job, false).await
}

/// [`boot`] for `serve`: its events also go to `[notify]`'s webhooks
/// ([`crate::runtime::outward::notify`]; `round` sends none). A webhook whose URL cannot be read
/// (`url_env` unset) is a config error (exit 78).
///
/// Errors: as [`boot`].
pub(crate) async fn boot_serve(config_path: &Path, job: bool) -> Result<Booted, BootError> {
    boot_with(config_path, job, true).await
}

async fn boot_with(config_path: &Path, job: bool, notify: bool) -> Result<Booted, BootError> {
    let config = config::load(config_path)?;
    if job {
        job_goal(&config)?;
    }
    // First, before anything slow: one tree, one supervisor, the first started
    // ([`tree_lock::lock`]). An environmental failure here is told at the first step
    // that has an event log, below.
    let tree_lock = tree_lock::lock(&config.runtime.work_dir);
    if let Err(tree_lock::TreeLockError::Held { work_dir, .. }) = tree_lock {
        let holder = state::lock_holder(&config.runtime.state_dir);
        return Err(tree_lock::TreeLockError::Held { work_dir, holder }.into());
    }
    // An agent that will fail every round on this machine (claude's bypass flag as root):
    // refused here with doctor's finding and fix, not found out round after round.
    let (unmet, _) = crate::runtime::agent::preconditions::on_this_machine(&config);
    if let Some((reason, fix)) = unmet.into_iter().next() {
        return Err(BootError::Config(ConfigError::Key {
            path: config.path.clone(),
            key: "agent.command".to_owned(),
            message: format!("{reason}; {fix} (`agent-runner doctor` checks this)"),
        }));
    }
    // A prompt no argument can carry: the agent would never start, round after round.
    if let Some((reason, fix)) = crate::runtime::agent::prompt::undeliverable_now(&config)
        .into_iter()
        .next()
    {
        return Err(BootError::Config(ConfigError::Key {
            path: config.path.clone(),
            key: "prompt.files".to_owned(),
            message: format!("{reason}; {fix} (`agent-runner doctor` checks this)"),
        }));
    }
    let follow = ConfigFollower::new(&config).map_err(BootError::Hangup)?;
    if let Err(e) = crate::runtime::agent::process::become_subreaper() {
        tracing::warn!("cannot become a child subreaper ({e}); processes that leave the agent's group may survive a round");
    }
    // Before any host starts: on cgroup v2 the supervisor may move itself into a leaf.
    let cgroups = crate::runtime::machine::round_cgroup::prepare(
        config.monitor.host_health.memory.round_cgroup,
    );
    // git finds the repository while the rest boots (after the move above: a child left
    // in the supervisor's cgroup would keep it from enabling `memory` for the rounds');
    // checked below, before anything is written.
    let tree = Repo::new(&config.runtime.work_dir, OwnFiles::default())
        .with_listing_kept_in(&config.runtime.state_dir);
    tree.discover_ahead();
    // Webhooks whose URL cannot be read are refused before anything runs (exit 78); from
    // here on every event the record takes is also offered to them.
    let mut events = EventLog::new(&config.runtime.state_dir)
        .linked_in(crate::record::agent_changes::held_log_dir(&config));
    let notifier = if notify {
        let targets = crate::runtime::outward::notify::resolve_here(&config)?;
        let notifier = crate::runtime::outward::notify::Notifier::new(&config, targets, &events);
        events = events.tapped(notifier.tap());
        Some(notifier)
    } else {
        None
    };
    let caps = probe();
    let gate = match SandboxGate::evaluate(config.plugins.sandbox, caps.clone()) {
        Ok(gate) => gate,
        Err(refused) => {
            events.emit(Event::PluginSandboxDegraded {
                requested: config.plugins.sandbox.as_str().to_owned(),
                achieved_tier: caps.tier().as_str().to_owned(),
                reason: refused.to_string(),
                refused_boot: Some(true),
                name: None,
            });
            return Err(BootError::Sandbox(refused));
        }
    };
    if let Some(shortfall) = gate.shortfall() {
        tracing::warn!(
            "sandbox = \"prefer\": hosts run at tier `{}` ({shortfall})",
            gate.applied.as_str()
        );
        events.emit(Event::PluginSandboxDegraded {
            requested: gate.requested.as_str().to_owned(),
            achieved_tier: gate.applied.as_str().to_owned(),
            reason: shortfall.to_string(),
            refused_boot: None,
            name: None,
        });
    }
    let agent_sandbox = match AgentSandboxGate::evaluate(&config.agent_sandbox, &caps) {
        Ok(gate) => gate,
        Err(refused) => {
            events.emit(Event::AgentSandboxDegraded {
                requested: config.agent_sandbox.mode.as_str().to_owned(),
                achieved_tier: caps.tier().as_str().to_owned(),
                reason: refused.missing.clone(),
                refused_boot: Some(true),
            });
            return Err(BootError::AgentSandbox(refused));
        }
    };
    if let Some(shortfall) = agent_sandbox.shortfall(&caps) {
        tracing::warn!("[agent.sandbox] mode = \"prefer\": the agent runs without {shortfall}");
        events.emit(Event::AgentSandboxDegraded {
            requested: agent_sandbox.requested.as_str().to_owned(),
            achieved_tier: agent_sandbox.applied.as_str().to_owned(),
            reason: shortfall,
            refused_boot: None,
        });
    }
    // Hosts, the agent and goal checks all start through the launcher: none without it.
    agent_runner_plugin_host::Launcher::get()?;
    // Refused before anything is written: no lock, no log-dir views, no record.
    if let Some(message) = crate::record::agent_changes::config_refusal(&config.path) {
        return Err(BootError::Config(ConfigError::Untrusted {
            path: config.path.clone(),
            message,
        }));
    }
    let git = match tree.not_a_work_tree().await {
        None => Git::WorkTree,
        Some(outside) if outside.outside_git => {
            without_git(&config)?;
            tracing::warn!("{outside}");
            Git::Absent
        }
        Some(refusal) => {
            return Err(BootError::Config(ConfigError::Key {
                path: config.path.clone(),
                key: "runtime.work_dir".to_owned(),
                message: refusal.to_string(),
            }))
        }
    };
    let lock = ProjectLock::acquire(&config.runtime.state_dir)
        .map_err(|e| unusable_at_boot(&events, e.into()))?;
    let tree_lock = tree_lock
        .and_then(|held| {
            tree_lock::claim_record(&config.runtime.work_dir, &config.runtime.state_dir)
                .map(|()| held)
        })
        .map_err(|e| unusable_at_boot(&events, e.into()))?;
    let holder = log_views::hold(&crate::record::agent_changes::held_log_dir(&config));
    crate::record::state::prepare(&config, &events);
    let hosts = HostManager::boot(
        &config,
        &gate,
        &events,
        &crate::hosts::builtin::DetectorHost::OwnExecutable,
    )
    .await;
    let mut snapshot = Snapshot::booting();
    snapshot.update("waiting", None, &hosts);
    let mut runner = Runner::new(config, events, hosts, (tree, git), cgroups, agent_sandbox);
    runner.notifier = notifier;
    Ok(Booted {
        runner,
        status: watch::channel(snapshot).0,
        gate,
        follow,
        _holder: holder,
        _tree_lock: tree_lock,
        _lock: lock,
    })
}

/// `serve --job` ends 0 only when the goal is reached, so it needs `[goal] stop_when =
/// "all_satisfied"` (docs/operations.md, "Running as a Job"). Errors: a
/// [`ConfigError::Key`] naming `goal.stop_when` (exit 78).
fn job_goal(config: &config::Config) -> Result<(), ConfigError> {
    let reachable = config
        .goal
        .as_ref()
        .is_some_and(|g| g.stop_when == config::StopWhen::AllSatisfied);
    if reachable {
        return Ok(());
    }
    Err(ConfigError::Key {
        path: config.path.clone(),
        key: "goal.stop_when".to_owned(),
        message: "serve --job ends 0 only when the goal is reached: set [goal] stop_when = \"all_satisfied\" with at least one [[goal.checks]] entry".to_owned(),
    })
}

/// A work dir outside git runs as the reference system runs it (docs/operations.md,
/// "Without git"): nothing is stashed or committed there, so a `dirty_action` written as
/// `stash` or `auto_commit` is a config error naming the key, rather than a promise no
/// round keeps.
///
/// Errors: [`BootError::Config`] (exit 78), key `vcs.dirty_action`.
fn without_git(config: &config::Config) -> Result<(), BootError> {
    let vcs = &config.vcs;
    if vcs.dirty_action_written && vcs.dirty_action != crate::config::DirtyAction::Ignore {
        return Err(BootError::Config(ConfigError::Key {
            path: config.path.clone(),
            key: "vcs.dirty_action".to_owned(),
            message: format!(
                "`{}` needs git, and {} is not inside a git working tree: run `git init` there, or write dirty_action = \"ignore\" (the default outside git)",
                vcs.dirty_action.as_str(),
                config.runtime.work_dir.display()
            ),
        }));
    }
    Ok(())
}

/// The first 200 characters of the stop file (lossy UTF-8), read without blocking and only
/// from a regular file; empty otherwise (`stop_file_detected.content`). A stop file that is
/// a symbolic link still stops `serve` but is never read through: an agent that can write
/// where the stop file goes would otherwise copy the file of its choice (a key) into the
/// record (docs/security.md, "The supervisor is not the agent's deputy").
fn stop_file_content(file: &std::path::Path) -> String {
    crate::tree_file::head_chars(file, crate::tree_file::Symlink::Refuse, 200)
}

/// How `serve` was asked to run.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ServeOptions {
    /// Stop after this many completed rounds (overrides `[runtime] max_rounds`).
    pub max_rounds: Option<u64>,
    /// Stop after one completed round.
    pub once: bool,
    /// Start rounds whatever `[schedule]` says (`--ignore-schedule`).
    pub ignore_schedule: bool,
    /// `--job`: exit 0 only when the goal is reached; a drain by a stop exits
    /// [`crate::exit::DRAINED`], any other end that would be 0
    /// [`crate::exit::GOAL_NOT_REACHED`] (docs/operations.md, "Running as a Job").
    pub job: bool,
}

/// How `serve` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ServeEnd {
    /// Rounds completed in this run.
    pub completed: u64,
    /// The exit code: 0; 75 after a crash loop, a stall or a transient failure under
    /// `transient_error_action = "stop"`; 77 on an honoured post-round stop (login); 71
    /// after a memory loop, 70 after a memory loop again across restarts; 76 when the
    /// environment stayed unusable; 78 for a startup hook or a stale `.agent-done`; 80 when
    /// a `[budget]` total cap is reached. Under
    /// `--job`, 0 only with the goal reached: 143 for a drain, 79 for the other ends.
    pub code: u8,
}

/// Runs rounds until stopped. Keeps `status` (the control socket's answer) and
/// `service.json` up to date at each step (boot, round start and end, defer, stopping,
/// exit).
pub(crate) async fn serve(
    booted: &mut Booted,
    options: ServeOptions,
    stop: &mut StopWatch,
) -> ServeEnd {
    let service = ServiceFile::new(&booted.runner.config, booted.gate.info());
    let Booted {
        runner,
        status,
        gate,
        follow,
        ..
    } = booted;
    // Sessions live as long as this serve (`round` alone never resumes one).
    runner.resume_sessions();
    let max_rounds = if options.once {
        Some(1)
    } else {
        options.max_rounds.or(runner.config.runtime.max_rounds)
    };
    let mut serving = Serving {
        transients: Transients::new(&runner.config),
        runner,
        status,
        gate,
        follow,
        service,
        max_rounds,
        completed: 0,
        failures: 0,
        last_failure: None,
        stalls: 0,
        last_stall_lines: Vec::new(),
        mem_ends: 0,
        last_mem_end: None,
        env_failures: 0,
        code: crate::exit::OK,
        started: Instant::now(),
        goal_met: false,
        drained: false,
        budget: None,
    };
    serving
        .service
        .update(ServiceState::Idle, None, &serving.runner.hosts);
    if serving.clear_agent_done() && serving.start_up(stop).await {
        serving.run_rounds(options, stop).await;
    }
    let code = if options.job {
        serving.job_code()
    } else {
        serving.code
    };
    let runner = &serving.runner;
    refresh_summary(&runner.config.runtime.state_dir);
    serving
        .status
        .send_modify(|s| s.update("stopping", None, &runner.hosts));
    serving
        .service
        .update(ServiceState::Stopped, None, &runner.hosts);
    ServeEnd {
        completed: serving.completed,
        code,
    }
}

/// One `serve` under way: the booted parts it uses, `service.json`, the back-off episode
/// and the counts that end it.
struct Serving<'a> {
    runner: &'a mut Runner,
    status: &'a watch::Sender<Snapshot>,
    gate: &'a SandboxGate,
    follow: &'a mut ConfigFollower,
    service: ServiceFile,
    transients: Transients,
    /// `--max-rounds`, `--once` or `[runtime] max_rounds`.
    max_rounds: Option<u64>,
    /// Rounds completed in this run.
    completed: u64,
    /// Failed rounds in a row (crash-loop breaker).
    failures: u32,
    /// The last of them: why it failed, and its log's last lines.
    last_failure: Option<(String, Vec<String>)>,
    /// Fast clean rounds in a row that did nothing (`stalled_no_progress`).
    stalls: u32,
    /// The last lines of the last of them.
    last_stall_lines: Vec<String>,
    /// Rounds ended by memory in a row (`mem_loop`).
    mem_ends: u32,
    /// The last of them: how it ended, its agent's exit code, its log's last lines.
    last_mem_end: Option<(String, Option<i32>, Vec<String>)>,
    /// Round attempts in a row the environment failed (`environment_unusable`).
    env_failures: u32,
    /// The exit code so far.
    code: u8,
    /// When this serve began (`max_duration_s`).
    started: Instant,
    /// The goal was reached (`goal_reached`).
    goal_met: bool,
    /// A stop ended the loop (`serve_stopping` with `signal`) before a bound was reached.
    drained: bool,
    /// The record's spend while `[budget]` sets a cap ([`crate::budget`]).
    budget: Option<Ledger>,
}

/// What the loop does after a round attempt.
enum Flow {
    /// `serve` ends.
    Stop,
    /// Straight to the loop's checks, no pause.
    Again,
    /// Pause this long, then the loop's checks.
    Pause(Duration),
}

impl Serving<'_> {
    /// The exit of `serve --job` ([`ServeOptions::job`]): the code so far when it is not
    /// 0, else 0 with the goal reached, [`crate::exit::DRAINED`] after a stop,
    /// [`crate::exit::GOAL_NOT_REACHED`] otherwise; the last two said on stderr.
    fn job_code(&self) -> u8 {
        if self.code != crate::exit::OK || self.goal_met {
            return self.code;
        }
        let (code, why) = if self.drained {
            (crate::exit::DRAINED, "drained by a stop")
        } else {
            (crate::exit::GOAL_NOT_REACHED, "ended")
        };
        eprintln!(
            "agent-runner: serve --job {why} before the goal was reached (exit {code}: the Job {})",
            crate::exit::JobAction::of(code).describe()
        );
        code
    }

    /// Removes the `.agent-done` an earlier run left ([`agent_done`]); `false` (exit 78,
    /// `serve_stopping` with `agent_done_stale`) when it cannot: it would end this run
    /// before its first round.
    fn clear_agent_done(&mut self) -> bool {
        let log_dir = self.runner.log_dir();
        let Err(e) = agent_done::clear_stale(log_dir) else {
            return true;
        };
        let message = format!(
            "cannot remove the stale {}/{}: {e}; remove it, then start serve again",
            log_dir.shown().display(),
            agent_done::SENTINEL
        );
        self.stopping("agent_done_stale", None, &message);
        self.code = crate::exit::CONFIG;
        false
    }

    /// The serve-startup hooks (docs/protocol.md §5.5); `false` (exit 78,
    /// `serve_stopping` with `serve_startup_hook_failed`) when one failed.
    async fn start_up(&mut self, stop: &mut StopWatch) -> bool {
        let runner = &mut *self.runner;
        let Err(failed) =
            serve_startup::run(&mut runner.hosts, &runner.config, &runner.events, stop).await
        else {
            return true;
        };
        eprintln!(
            "agent-runner: {failed}\nagent-runner: serve stops before the first round (exit 78)"
        );
        runner.events.emit(Event::ServeStopping {
            reason: "serve_startup_hook_failed".into(),
            rounds_completed: 0,
            hook: None,
            message: None,
        });
        self.code = crate::exit::CONFIG;
        false
    }

    /// Rounds back to back until one of the loop's checks or a round's outcome ends
    /// `serve`.
    async fn run_rounds(&mut self, options: ServeOptions, stop: &mut StopWatch) {
        loop {
            refresh_summary(&self.runner.config.runtime.state_dir);
            if *stop.borrow() >= StopLevel::Graceful {
                self.service
                    .update(ServiceState::Stopping, None, &self.runner.hosts);
                self.runner.events.emit(Event::ServeStopping {
                    reason: "signal".to_owned(),
                    rounds_completed: self.completed,
                    hook: None,
                    message: None,
                });
                // A stop that comes once a bound is reached changes nothing: the run ended
                // at its bound.
                self.drained = !self.bound_reached();
                return;
            }
            self.follow
                .refresh(self.runner, self.gate, Trigger::Round)
                .await;
            // The back-off settings follow the file; the episode under way goes on.
            self.transients.follow(&self.runner.config);
            if self.must_end() {
                return;
            }
            match budget_gate(
                self.runner,
                &mut self.budget,
                (&mut self.service, self.status),
                Waits {
                    stop: &mut *stop,
                    follow: &mut *self.follow,
                    gate: self.gate,
                },
            )
            .await
            {
                BudgetGate::Run => {
                    // What the round may spend, watched while it runs.
                    self.runner.round_cap = self.budget.as_ref().map(|ledger| {
                        crate::budget::round_cap(
                            &self.runner.config.budget,
                            ledger,
                            jiff::Timestamp::now(),
                        )
                    });
                }
                BudgetGate::Again => continue,
                BudgetGate::Exhausted => {
                    self.code = crate::exit::BUDGET_EXHAUSTED;
                    return;
                }
            }
            if !rate_ceiling(
                self.runner,
                &mut self.service,
                self.status,
                stop,
                self.follow,
                self.gate,
            )
            .await
            {
                continue;
            }
            if !options.ignore_schedule
                && !schedule_gate(
                    self.runner,
                    &mut self.service,
                    self.status,
                    stop,
                    self.follow,
                    self.gate,
                )
                .await
            {
                continue;
            }
            let attempt = self.attempt(stop).await;
            let flow = self.after_attempt(attempt, stop).await;
            self.rounds_over_budget();
            let wait = match flow {
                Flow::Stop => return,
                Flow::Again => continue,
                Flow::Pause(wait) => wait,
            };
            refresh_summary(&self.runner.config.runtime.state_dir);
            pause(stop, self.follow, self.runner, self.gate, wait).await;
        }
    }

    /// Whether `max_rounds` or `max_duration_s` is reached (no event: [`Self::must_end`]
    /// records it when it ends the loop).
    fn bound_reached(&self) -> bool {
        self.max_rounds.is_some_and(|max| self.completed >= max)
            || self
                .runner
                .config
                .runtime
                .max_duration
                .is_some_and(|max| self.started.elapsed() >= max)
    }

    /// The checks before a round that end `serve`: the stop file, the crash-loop breaker,
    /// `max_rounds` (each with its event).
    fn must_end(&mut self) -> bool {
        let runner = &*self.runner;
        let completed = self.completed;
        if let Some(reason) = agent_done::reason(runner.log_dir()) {
            runner.events.emit(Event::AgentSelfTerminated {
                reason: reason.clone(),
                rounds_completed: completed,
            });
            eprintln!(
                "agent-runner: the agent wrote {}/{} ({reason:?}); stopping",
                runner.config.runtime.log_dir.display(),
                agent_done::SENTINEL
            );
            return true;
        }
        if let Some(file) = runner
            .config
            .runtime
            .stop_file
            .as_ref()
            .filter(|f| f.exists())
        {
            runner.events.emit(Event::StopFileDetected {
                path: file.clone(),
                stop_file: file.display().to_string(),
                content: stop_file_content(file),
                rounds_completed: completed,
            });
            eprintln!(
                "agent-runner: stop file {} exists; stopping",
                file.display()
            );
            return true;
        }
        if self.mem_ends >= MEM_LOOP_LIMIT {
            self.mem_loop();
            return true;
        }
        if self.failures >= CRASH_LOOP_LIMIT {
            let (reason, last_lines) = self.last_failure.clone().unwrap_or_default();
            runner.events.emit(Event::CrashLoop {
                consecutive_failures: self.failures,
                threshold: CRASH_LOOP_LIMIT,
                rounds_completed: completed,
                reason: reason.clone(),
                last_lines: last_lines.clone(),
            });
            eprintln!(
                "agent-runner: {} rounds failed in a row; stopping (crash loop). The last: {reason}",
                self.failures
            );
            for line in &last_lines {
                eprintln!("  | {line}");
            }
            self.code = crate::exit::TEMPFAIL;
            return true;
        }
        if self.stalls >= STALL_LIMIT {
            runner.events.emit(Event::StalledNoProgress {
                consecutive_rounds: self.stalls,
                threshold: STALL_LIMIT,
                fast_s: STALL_FAST.as_secs(),
                rounds_completed: completed,
                last_lines: self.last_stall_lines.clone(),
            });
            eprintln!(
                "agent-runner: {} rounds in a row exited 0 within {} s having changed nothing and reported no usage; stopping (stalled_no_progress)",
                self.stalls,
                STALL_FAST.as_secs()
            );
            self.code = crate::exit::TEMPFAIL;
            return true;
        }
        if let Some(max) = self.max_rounds.filter(|max| completed >= *max) {
            runner.events.emit(Event::MaxRoundsReached {
                rounds_completed: completed,
                max_rounds: max,
            });
            return true;
        }
        let elapsed = self.started.elapsed();
        if let Some(max) = runner.config.runtime.max_duration.filter(|m| elapsed >= *m) {
            runner.events.emit(Event::MaxDurationReached {
                elapsed_s: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
                max_duration_s: max.as_secs(),
                rounds_completed: completed,
            });
            eprintln!(
                "agent-runner: serve ran {} s, [runtime] max_duration_s is {}; stopping",
                elapsed.as_secs(),
                max.as_secs()
            );
            return true;
        }
        false
    }

    /// `mem_loop` (exit 71) or, when it is the
    /// [`crate::record::mem_loops::PERSISTENT_AT`]-th within
    /// [`crate::record::mem_loops::WINDOW`] (remembered across restarts in the state dir),
    /// `mem_loop_persistent` (exit 70).
    fn mem_loop(&mut self) {
        use crate::record::mem_loops;
        let runner = &*self.runner;
        let (reason, exit_code, last_lines) = self.last_mem_end.clone().unwrap_or_default();
        let loops = match mem_loops::record(&runner.config.runtime.state_dir, SystemTime::now()) {
            Ok(n) => n,
            Err((n, e)) => {
                tracing::warn!("cannot record the memory loop in {}: {e}", mem_loops::FILE);
                n
            }
        };
        if loops >= mem_loops::PERSISTENT_AT {
            runner.events.emit(Event::MemLoopPersistent {
                consecutive: loops,
                threshold: mem_loops::PERSISTENT_AT,
                window_s: mem_loops::WINDOW.as_secs(),
                exit_code,
                rounds_completed: self.completed,
                reason: reason.clone(),
                last_lines: last_lines.clone(),
            });
            eprintln!(
                "agent-runner: {} rounds in a row ended by memory, the {loops}th such loop within {} s; stopping for good (mem_loop_persistent, exit 70). The last: {reason}",
                self.mem_ends,
                mem_loops::WINDOW.as_secs()
            );
            self.code = crate::exit::MEM_LOOP_PERSISTENT;
        } else {
            runner.events.emit(Event::MemLoop {
                consecutive: self.mem_ends,
                threshold: MEM_LOOP_LIMIT,
                exit_code,
                rounds_completed: self.completed,
                reason: reason.clone(),
                last_lines: last_lines.clone(),
            });
            eprintln!(
                "agent-runner: {} rounds in a row ended by memory; stopping (mem_loop, exit 71: a new start may find memory free). The last: {reason}",
                self.mem_ends
            );
            self.code = crate::exit::MEM_LOOP;
        }
        for line in &last_lines {
            eprintln!("  | {line}");
        }
    }

    /// `[goal] stop_when = "all_satisfied"` and every check passed after `ran`:
    /// `goal_reached`, and `serve` ends with exit 0.
    fn goal_reached(&self, ran: &Ran) -> bool {
        let Some(goal) = &self.runner.config.goal else {
            return false;
        };
        let reached = goal.stop_when == crate::config::StopWhen::AllSatisfied
            && ran.goal.as_ref().is_some_and(|g| g.all_satisfied());
        if reached {
            self.runner.events.emit(Event::GoalReached {
                round_num: ran.round_num,
                checks: goal.checks.iter().map(|c| c.name.clone()).collect(),
                rounds_completed: self.completed,
            });
            eprintln!(
                "agent-runner: every [goal] check passed after round {}; stopping ([goal] stop_when = \"all_satisfied\")",
                ran.round_num
            );
        }
        reached
    }

    /// One round attempt, `status` and `service.json` saying so.
    async fn attempt(&mut self, stop: &mut StopWatch) -> Result<Attempt, RoundError> {
        let runner = &mut *self.runner;
        let next = state::peek_next_round(&runner.config.runtime.state_dir).ok();
        self.status
            .send_modify(|s| s.update("round", next, &runner.hosts));
        self.service.update(
            ServiceState::Running,
            Some(ServiceFile::round_starting(next.unwrap_or(0), None)),
            &runner.hosts,
        );
        let attempt = runner.attempt(stop, None).await;
        self.status
            .send_modify(|s| s.update("waiting", None, &runner.hosts));
        // A deferral (a spawn hook's or host health's) is published once its event and the
        // summary are written, so whoever sees `deferred` in service.json sees the record
        // of it too.
        if !matches!(
            attempt,
            Ok(Attempt::NotStarted(Verdict::Defer { .. }) | Attempt::Unhealthy(_))
        ) {
            self.service.update(ServiceState::Idle, None, &runner.hosts);
        }
        attempt
    }

    /// What the loop does after `attempt`.
    async fn after_attempt(
        &mut self,
        attempt: Result<Attempt, RoundError>,
        stop: &mut StopWatch,
    ) -> Flow {
        let restart_delay = self.runner.config.runtime.restart_delay;
        match attempt {
            Ok(Attempt::Ran(ran)) => self.after_round(*ran, stop).await,
            Ok(Attempt::NotStarted(Verdict::Defer {
                hook,
                defer_s,
                reason,
            })) => {
                self.deferred(hook.to_string(), defer_s, reason, stop).await;
                Flow::Again
            }
            Ok(Attempt::NotStarted(Verdict::Skip { .. })) => Flow::Pause(restart_delay),
            // Recorded by the runner (round_deferred once, round_resumed when it clears).
            Ok(Attempt::Unhealthy(_)) => {
                refresh_summary(&self.runner.config.runtime.state_dir);
                self.service
                    .update(ServiceState::Deferred, None, &self.runner.hosts);
                Flow::Pause(restart_delay)
            }
            Ok(Attempt::NotStarted(Verdict::Proceed)) => {
                unreachable!("proceed always runs the agent")
            }
            Ok(Attempt::Stopped) => Flow::Again,
            Err(err) if err.is_environmental() => self.environment_failed(&err),
            Err(err) => {
                self.env_failures = 0;
                self.failures += 1;
                self.last_failure = Some((format!("the round could not start: {err}"), Vec::new()));
                eprintln!("agent-runner: {err}");
                self.runner.events.emit(Event::RoundError {
                    error: err.to_string(),
                });
                if self.failures >= CRASH_LOOP_LIMIT {
                    return Flow::Again;
                }
                Flow::Pause(restart_delay)
            }
        }
    }

    /// `budget_round_exceeded` for each round recorded since the last look whose cost
    /// passed `[budget] round_usd` (the rounds are taken whether or not it is set, so
    /// none piles up).
    fn rounds_over_budget(&mut self) {
        let Some(ledger) = self.budget.as_mut() else {
            return;
        };
        ledger.catch_up();
        let rounds = ledger.take_rounds();
        let Some(cap) = self.runner.config.budget.round_usd else {
            return;
        };
        for round in rounds.into_iter().filter(|r| r.usd > cap) {
            self.runner.events.emit(Event::BudgetRoundExceeded {
                round_num: round.round_num,
                cost_usd: round.usd,
                cap,
            });
        }
    }

    /// An attempt the environment failed: `round_error`; a wait that doubles each time,
    /// or, the [`ENVIRONMENT_LIMIT`]-th time in a row, `environment_unusable` and exit 76.
    /// The crash-loop count starts again: the agent did not fail.
    fn environment_failed(&mut self, err: &RoundError) -> Flow {
        self.env_failures += 1;
        self.failures = 0;
        self.last_failure = None;
        eprintln!("agent-runner: {err}");
        let events = &self.runner.events;
        events.emit(Event::RoundError {
            error: err.to_string(),
        });
        if self.env_failures >= ENVIRONMENT_LIMIT {
            events.emit(Event::EnvironmentUnusable {
                stage: "round".to_owned(),
                error: err.to_string(),
                consecutive_failures: self.env_failures,
                threshold: ENVIRONMENT_LIMIT,
                rounds_completed: self.completed,
            });
            eprintln!(
                "agent-runner: {} round attempts in a row failed on the state or log dir; stopping (environment_unusable, exit 76)",
                self.env_failures
            );
            self.code = crate::exit::ENVIRONMENT;
            return Flow::Stop;
        }
        Flow::Pause(environment_wait(
            self.runner.config.runtime.restart_delay,
            self.env_failures,
        ))
    }

    /// After a round that ran: the transient-failure step, the crash-loop count, the
    /// detectors, and a back-off when one is due.
    async fn after_round(&mut self, ran: Ran, stop: &mut StopWatch) -> Flow {
        self.completed += 1;
        self.env_failures = 0;
        let round_num = ran.round_num;
        let clean = ran.exit.is_clean();
        // A round that failed while its sandbox refused the agent's connects failed on the
        // sandbox, not on the provider's network: no outage back-off, and it counts for
        // the crash-loop breaker with the fix in its reason.
        let sandboxed = sandbox_failure(&ran);
        let decision = if sandboxed.is_some() {
            &crate::runtime::steps::post_round::Decision::Continue
        } else {
            &ran.post_round
        };
        let step = self
            .transients
            .after_round(&self.runner.events, decision, round_num, clean);
        if let Some(sentence) = &sandboxed {
            eprintln!("agent-runner: round {round_num}: {sentence}");
        }
        // Any failed round counts, printed output or not: real CLIs print a line when they
        // fail. An operator's stop is not a failure of the agent, nor is an end by memory
        // (the memory loop counts those).
        let mem_ended = ran.exit.ended_by_memory();
        let failed = !mem_ended
            && (step.diagnosed()
                || sandboxed.is_some()
                || (!clean
                    && ran.exit.cause != crate::runtime::agent::process::ExitCause::Stopped));
        if mem_ended {
            self.mem_ends += 1;
            let (reason, last_lines) = failure_of(&ran, &step);
            self.last_mem_end = Some((reason, ran.exit.exit_code, last_lines));
        } else {
            self.mem_ends = 0;
        }
        if failed {
            self.failures += 1;
            let (mut reason, lines) = failure_of(&ran, &step);
            if let Some(sentence) = &sandboxed {
                reason.push_str(&format!("; {sentence}"));
            }
            self.last_failure = Some((reason, lines));
        } else {
            self.failures = 0;
            self.last_failure = None;
        }
        let stalled = clean
            && !failed
            && ran.exit.duration < STALL_FAST
            && ran.preset_cli
            && !ran.usage_reported
            && !ran.tree_changed;
        if stalled {
            self.stalls += 1;
            self.last_stall_lines = last_lines(&ran.log_path);
        } else {
            self.stalls = 0;
        }
        if let Step::Stop {
            reason,
            hook,
            code,
            message,
        } = &step
        {
            if *reason == transient::STOP_REASON {
                // The reference system's record of the same stop (docs/reference-system.md,
                // "Self-termination").
                self.runner.events.emit(Event::AgentSelfTerminated {
                    reason: "rate_limit".to_owned(),
                    rounds_completed: self.completed,
                });
            }
            self.stopping(reason, Some(hook.clone()), message);
            self.code = *code;
            return Flow::Stop;
        }
        if self.poll_detectors(&ran, stop).await {
            return Flow::Stop;
        }
        if self.goal_reached(&ran) {
            self.goal_met = true;
            return Flow::Stop;
        }
        if self.max_rounds.is_some_and(|max| self.completed >= max)
            || self.mem_ends >= MEM_LOOP_LIMIT
            || self.failures >= CRASH_LOOP_LIMIT
            || self.stalls >= STALL_LIMIT
        {
            return Flow::Again;
        }
        if let Step::BackOff {
            plan,
            kind,
            since_round,
        } = &step
        {
            self.back_off(round_num, plan, kind.as_str(), *since_round, stop)
                .await;
            return Flow::Again;
        }
        Flow::Pause(self.runner.config.runtime.restart_delay)
    }

    /// `serve_stopping` for `reason`, its message on stderr.
    fn stopping(&self, reason: &str, hook: Option<String>, message: &str) {
        self.runner.events.emit(Event::ServeStopping {
            reason: reason.to_owned(),
            rounds_completed: self.completed,
            hook,
            message: Some(message.to_owned()),
        });
        eprintln!("agent-runner: {message}");
    }

    /// The detectors after a round (docs/protocol.md §5.6); `true` when one in
    /// `[monitor] auto_stop_on` stops `serve` (exit 75).
    async fn poll_detectors(&mut self, ran: &Ran, stop: &mut StopWatch) -> bool {
        let state = ProjectState {
            rounds_completed: self.completed,
            last_round: Some(LastRound {
                round_num: ran.round_num,
                exit_code: ran.exit.exit_code,
                exit_cause: ran.exit.cause.as_str().to_owned(),
                duration_s: ran.exit.duration.as_secs_f64(),
                dirty_outcome: ran.dirty.as_ref().map(|d| d.as_str().to_owned()),
            }),
        };
        let Some(auto) = self
            .runner
            .poll_detectors(ran.round_num, &state, stop)
            .await
        else {
            return false;
        };
        eprintln!(
            "agent-runner: detector `{}` asked to stop ([monitor] auto_stop_on): {}",
            auto.hook, auto.message
        );
        self.runner.events.emit(Event::ServeStopping {
            reason: "auto_stop".into(),
            rounds_completed: self.completed,
            hook: Some(auto.hook.to_string()),
            message: Some(auto.message),
        });
        self.code = crate::exit::TEMPFAIL;
        true
    }

    /// Waits out a back-off after round `round_num` ([`back_off`]).
    async fn back_off(
        &mut self,
        round_num: u64,
        plan: &Plan,
        kind: &str,
        since_round: u64,
        stop: &mut StopWatch,
    ) {
        let config = &self.runner.config;
        let phase = config.phase_for_round(round_num).unwrap_or("");
        let agent = config.profile(Some(phase)).agent;
        let first = &agent.command[0];
        let doc = BackOffDoc {
            until: crate::record::events::timestamp(plan.until),
            kind: kind.to_owned(),
            agent: agent
                .cli
                .name
                .unwrap_or_else(|| first.rsplit('/').next().unwrap_or(first))
                .to_owned(),
            since_round,
            phase: phase.to_owned(),
        };
        let waits = Waits {
            stop,
            follow: &mut *self.follow,
            gate: self.gate,
        };
        back_off(
            self.runner,
            &mut self.service,
            self.status,
            waits,
            plan,
            doc,
        )
        .await;
    }

    /// A spawn hook deferred the round: `round_deferred`, `service.json` saying so, the
    /// wait (at least [`MIN_REASK`], a stop ends it), `round_resumed`.
    async fn deferred(&mut self, hook: String, defer_s: u64, reason: String, stop: &mut StopWatch) {
        let runner = &*self.runner;
        runner.events.emit(Event::RoundDeferred {
            severity: "info".to_owned(),
            signal: hook,
            message: reason,
            defer_s,
        });
        refresh_summary(&runner.config.runtime.state_dir);
        self.service
            .update(ServiceState::Deferred, None, &runner.hosts);
        let started = Instant::now();
        sleep_unless(
            stop,
            StopLevel::Graceful,
            Duration::from_secs(defer_s).max(MIN_REASK),
        )
        .await;
        runner.events.emit(Event::RoundResumed {
            deferred_for_s: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        });
    }
}

/// What a long wait between rounds listens to: a stop (and the stop file), and SIGHUP,
/// which re-reads the config at once (docs/configuration.md, "Config follows the file").
struct Waits<'a> {
    stop: &'a mut StopWatch,
    follow: &'a mut ConfigFollower,
    gate: &'a SandboxGate,
}

/// How a [`wait_out`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Woken {
    /// [`backoff::wait`] ended (elapsed, stop, stop file).
    End(WaitEnd),
    /// SIGHUP: the config was re-read.
    Hangup,
}

impl Woken {
    /// The resume event's `reason`: `elapsed` (the caller's word for a wait that ran its
    /// course), `stop`, `stop_file` or `sighup`.
    fn reason(self, elapsed: &str) -> String {
        match self {
            Woken::End(WaitEnd::Elapsed) => elapsed,
            Woken::End(WaitEnd::Stopped) => "stop",
            Woken::End(WaitEnd::StopFile) => "stop_file",
            Woken::Hangup => "sighup",
        }
        .to_owned()
    }
}

/// Waits out `plan` ([`backoff::wait`]: a stop or the stop file ends it within a tick);
/// a SIGHUP re-reads the config at once and then goes on waiting unless `end_on_hangup`.
async fn wait_out(
    runner: &mut Runner,
    waits: &mut Waits<'_>,
    plan: &Plan,
    end_on_hangup: bool,
) -> Woken {
    loop {
        let stop_file = runner.config.runtime.stop_file.clone();
        let woken = tokio::select! {
            end = backoff::wait(plan, waits.stop, stop_file.as_deref()) => Woken::End(end),
            () = waits.follow.hangup() => Woken::Hangup,
        };
        if woken == Woken::Hangup {
            waits
                .follow
                .refresh(runner, waits.gate, Trigger::Hangup)
                .await;
            if !end_on_hangup {
                continue;
            }
        }
        return woken;
    }
}

/// Waits out a back-off, `status` and `service.json` saying "backing off until <time>
/// (<kind>)"; a stop or the stop file ends it within [`crate::runtime::cycle::backoff::TICK`]
/// (the loop's own checks then stop serve); a SIGHUP re-reads the config and the wait
/// goes on.
async fn back_off(
    runner: &mut Runner,
    service: &mut ServiceFile,
    status: &watch::Sender<Snapshot>,
    mut waits: Waits<'_>,
    plan: &Plan,
    doc: BackOffDoc,
) {
    // Published once the summary holds the back-off's events (as a deferral is).
    refresh_summary(&runner.config.runtime.state_dir);
    status.send_modify(|s| s.update(&doc.describe(), None, &runner.hosts));
    service.backing_off(doc, &runner.hosts);
    let end = wait_out(runner, &mut waits, plan, false).await;
    tracing::info!(?end, "back-off over");
    status.send_modify(|s| s.update("waiting", None, &runner.hosts));
    service.update(ServiceState::Idle, None, &runner.hosts);
}

/// Longest single pause when no schedule window opens within eight days: the schedule is
/// looked at again after it.
const SCHEDULE_RECHECK: Duration = Duration::from_secs(3600);

/// `[schedule]` before a round (docs/configuration.md "[schedule]"): `true` when the next
/// round's phase may start now. Otherwise either passes the round over
/// (`phase_policy = "skip"` while another phase is open: `schedule_phase_skipped`) or
/// waits until the schedule opens (`schedule_paused` … `schedule_resumed`; a stop, SIGTERM
/// or the stop file ends the wait within a tick, a SIGHUP re-reads the config and ends it
/// so the new `[schedule]` is looked at), and returns `false` so the loop looks again:
/// after a clock jump one round at most starts, never a burst.
async fn schedule_gate(
    runner: &mut Runner,
    service: &mut ServiceFile,
    status: &watch::Sender<Snapshot>,
    stop: &mut StopWatch,
    follow: &mut ConfigFollower,
    gate: &SandboxGate,
) -> bool {
    let config = &runner.config;
    let state_dir = &config.runtime.state_dir;
    let next = state::peek_next_round(state_dir).unwrap_or(1);
    let now = jiff::Timestamp::now();
    let look = schedule_gate::look(config, next, now);
    let (phase, schedule) = (look.phase, look.schedule);
    let until = match look.verdict {
        schedule_gate::Verdict::Run => return true,
        schedule_gate::Verdict::PassOver { opens } => {
            if let Ok(round_num) = state::next_round(state_dir) {
                runner.events.emit(Event::SchedulePhaseSkipped {
                    round_num,
                    phase: phase.unwrap_or("").to_owned(),
                    until: opens.map(|t| t.to_string()),
                });
            }
            return false;
        }
        schedule_gate::Verdict::Pause { until } => until,
    };
    let wait = until
        .and_then(|t| t.duration_since(now).try_into().ok())
        .map(|d: Duration| d.max(Duration::from_secs(1)))
        .unwrap_or(SCHEDULE_RECHECK);
    let plan = Plan::fixed(wait);
    let until_text = crate::record::events::timestamp(plan.until);
    runner.events.emit(Event::SchedulePaused {
        phase: phase.map(str::to_owned),
        until: until_text.clone(),
        timezone: schedule.zone_name.clone(),
    });
    let state = format!("paused by schedule until {until_text}");
    let mut waits = Waits { stop, follow, gate };
    paused(
        runner,
        (service, status),
        &mut waits,
        &plan,
        &state,
        |paused_for_s, woken| Event::ScheduleResumed {
            paused_for_s,
            reason: woken.reason("schedule"),
        },
    )
    .await;
    false
}

/// `[runtime] max_rounds_per_hour` before a round: `true` when a round may start now.
/// Otherwise waits until the oldest of the last hour's rounds leaves the window
/// (`rate_ceiling_paused` … `rate_ceiling_resumed`; a stop, SIGTERM or the stop file ends
/// the wait within a tick, a SIGHUP re-reads the config and ends it so a new ceiling is
/// looked at) and returns `false` so the loop looks again.
async fn rate_ceiling(
    runner: &mut Runner,
    service: &mut ServiceFile,
    status: &watch::Sender<Snapshot>,
    stop: &mut StopWatch,
    follow: &mut ConfigFollower,
    gate: &SandboxGate,
) -> bool {
    let Some(max) = runner.config.runtime.max_rounds_per_hour else {
        return true;
    };
    let state_dir = runner.config.runtime.state_dir.clone();
    let Some(ceiling) = crate::runtime::cycle::bounds::ceiling(&state_dir, max, SystemTime::now())
    else {
        return true;
    };
    let plan = Plan::fixed(ceiling.wait);
    runner.events.emit(Event::RateCeilingPaused {
        rounds_last_hour: ceiling.rounds_last_hour,
        max_rounds_per_hour: max,
        resume_in_s: (ceiling.wait.as_secs_f64() * 10.0).round() / 10.0,
    });
    let until_text = crate::record::events::timestamp(plan.until);
    let state = format!("paused by max_rounds_per_hour until {until_text}");
    let mut waits = Waits { stop, follow, gate };
    paused(
        runner,
        (service, status),
        &mut waits,
        &plan,
        &state,
        |paused_for_s, woken| Event::RateCeilingResumed {
            paused_for_s,
            reason: woken.reason("elapsed"),
        },
    )
    .await;
    false
}

/// What [`budget_gate`] says of the next round.
enum BudgetGate {
    /// It may start.
    Run,
    /// A pause ended: the loop looks again.
    Again,
    /// A `total_*` cap is reached: `serve` ends (exit 80).
    Exhausted,
}

/// Longest single wait of a budget pause: the record is read again after it, so a
/// `budget reset` ends the pause within it.
const BUDGET_RECHECK: Duration = Duration::from_secs(5);

/// `[budget]` before a round ([`crate::budget::look`], spend from the record): a `total_*`
/// cap reached records `budget_exhausted` and ends `serve`; a `daily_*` cap reached waits
/// until the next day (`budget_paused` … `budget_resumed`, looking at the record every
/// [`BUDGET_RECHECK`] so a reset or a cap raised by SIGHUP ends it; a stop, SIGTERM or the
/// stop file ends it within a tick) and returns [`BudgetGate::Again`].
async fn budget_gate(
    runner: &mut Runner,
    ledger: &mut Option<Ledger>,
    (service, status): (&mut ServiceFile, &watch::Sender<Snapshot>),
    mut waits: Waits<'_>,
) -> BudgetGate {
    let look = |runner: &Runner, ledger: &mut Option<Ledger>| {
        let budget = &runner.config.budget;
        if !budget.any_cap() {
            *ledger = None;
            return crate::budget::Verdict::Run;
        }
        let state_dir = &runner.config.runtime.state_dir;
        let mut current = match ledger.take() {
            Some(l) => l.follow(budget),
            None => Ledger::open(state_dir, budget),
        };
        current.catch_up();
        let verdict = crate::budget::look(budget, &current, jiff::Timestamp::now());
        *ledger = Some(current);
        verdict
    };
    let (reached, until) = match look(runner, ledger) {
        crate::budget::Verdict::Run => return BudgetGate::Run,
        crate::budget::Verdict::Exhausted(reached) => {
            runner.events.emit(Event::BudgetExhausted {
                scope: reached.scope.to_owned(),
                spent: reached.spent,
                cap: reached.cap,
            });
            eprintln!(
                "agent-runner: [budget] {} reached ({} spent of {}); stopping (budget_exhausted, exit 80). Raise the cap or run `agent-runner budget reset`",
                reached.scope, reached.spent, reached.cap
            );
            return BudgetGate::Exhausted;
        }
        crate::budget::Verdict::Pause { reached, until } => (reached, until),
    };
    let timezone = runner.config.budget.zone().1;
    let until_text = until.round(jiff::Unit::Second).unwrap_or(until).to_string();
    runner.events.emit(Event::BudgetPaused {
        scope: reached.scope.to_owned(),
        spent: reached.spent,
        cap: reached.cap,
        until: until_text.clone(),
        timezone,
    });
    refresh_summary(&runner.config.runtime.state_dir);
    let state = format!("paused by [budget] {} until {until_text}", reached.scope);
    status.send_modify(|s| s.update(&state, None, &runner.hosts));
    service.update(ServiceState::Paused, None, &runner.hosts);
    let started = Instant::now();
    let reason = loop {
        let left = until
            .duration_since(jiff::Timestamp::now())
            .try_into()
            .unwrap_or(Duration::ZERO);
        let slice = left.clamp(Duration::from_millis(100), BUDGET_RECHECK);
        match wait_out(runner, &mut waits, &Plan::fixed(slice), true).await {
            woken @ Woken::End(WaitEnd::Stopped | WaitEnd::StopFile) => {
                break woken.reason("next_day")
            }
            Woken::End(WaitEnd::Elapsed) | Woken::Hangup => {}
        }
        if let crate::budget::Verdict::Pause { .. } = look(runner, ledger) {
            continue;
        }
        break if jiff::Timestamp::now() >= until {
            "next_day".to_owned()
        } else {
            "reset".to_owned()
        };
    };
    let paused_for_s = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    runner.events.emit(Event::BudgetResumed {
        paused_for_s,
        reason,
    });
    status.send_modify(|s| s.update("waiting", None, &runner.hosts));
    service.update(ServiceState::Idle, None, &runner.hosts);
    BudgetGate::Again
}

/// Waits out a pause of serve's own (the schedule's, the rate ceiling's) whose start event
/// the caller has recorded: the summary is refreshed, status and `service.json` say `state`
/// (paused) until it ends, then the event `resumed` builds from the seconds paused (one
/// decimal) and how it ended is recorded, and both say idle again. A SIGHUP ends the pause
/// so the caller looks at the re-read config.
async fn paused(
    runner: &mut Runner,
    (service, status): (&mut ServiceFile, &watch::Sender<Snapshot>),
    waits: &mut Waits<'_>,
    plan: &Plan,
    state: &str,
    resumed: impl FnOnce(f64, Woken) -> Event,
) {
    refresh_summary(&runner.config.runtime.state_dir);
    status.send_modify(|s| s.update(state, None, &runner.hosts));
    service.update(ServiceState::Paused, None, &runner.hosts);
    let started = Instant::now();
    let woken = wait_out(runner, waits, plan, true).await;
    let paused_for_s = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    runner.events.emit(resumed(paused_for_s, woken));
    status.send_modify(|s| s.update("waiting", None, &runner.hosts));
    service.update(ServiceState::Idle, None, &runner.hosts);
}

/// Waits `wait` between rounds: ends early on a stop; a SIGHUP re-reads the config at once
/// and the wait goes on.
async fn pause(
    stop: &mut StopWatch,
    follow: &mut ConfigFollower,
    runner: &mut Runner,
    gate: &SandboxGate,
    wait: Duration,
) {
    let until = tokio::time::Instant::now() + wait;
    loop {
        let hangup = tokio::select! {
            _ = tokio::time::sleep_until(until) => false,
            _ = reached(stop, StopLevel::Graceful) => false,
            _ = follow.hangup() => true,
        };
        if !hangup {
            return;
        }
        follow.refresh(runner, gate, Trigger::Hangup).await;
    }
}

/// Brings the record's summary up to date for the read-only views (`serve` and `round` are
/// its only writers: docs/operations.md "Reading the record"): at boot, before every wait
/// and at the end, so it is current whenever the loop is idle or a `round` has ended. A failure is logged, never raised:
/// readers do without the summary.
fn refresh_summary(state_dir: &Path) {
    if let Err(err) = crate::record::events::recent::refresh_summary(state_dir) {
        tracing::warn!(
            "cannot write {}: {err}",
            crate::record::events::summary::SUMMARY_FILE
        );
    }
}

/// Shuts the hosts down, flushes the notifications (up to `[notify] flush_s`) and releases
/// the lock.
pub(crate) async fn shutdown(mut booted: Booted) {
    booted.runner.flush_traces();
    booted.runner.hosts.shutdown().await;
    if let Some(mut notifier) = booted.runner.notifier.take() {
        notifier.finish();
    }
    // `round` ends here too: its look-ups are then as cheap as after a `serve`.
    refresh_summary(&booted.runner.config.runtime.state_dir);
}

/// Why `ran` failed, in a line, and its log's last lines (redacted), for `crash_loop` and
/// `mem_loop`.
fn failure_of(ran: &Ran, step: &Step) -> (String, Vec<String>) {
    let exit = &ran.exit;
    let mut reason = match (exit.cause, exit.exit_code, exit.signal) {
        _ if exit.oom_killed => "OOM kill in the round's cgroup (signal 9)".to_owned(),
        (crate::runtime::agent::process::ExitCause::Exited, Some(code), _) => {
            format!("exit {code}")
        }
        (cause, _, Some(signal)) => format!("{} (signal {signal})", cause.as_str()),
        (cause, _, None) => cause.as_str().to_owned(),
    };
    reason = format!(
        "round {}: {reason} after {:.1} s",
        ran.round_num,
        exit.duration.as_secs_f64()
    );
    if let Some(diagnosis) = step.diagnosis() {
        reason.push_str(&format!("; {diagnosis}"));
    }
    (reason, last_lines(&ran.log_path))
}

/// When `ran` failed on its sandbox — it ended unclean or a detector called it a network
/// failure, and its sandbox refused connects (its own endpoint, read from its variables
/// and config files, that the sandbox refuses; and those observed, `agent_egress_refused`,
/// the most frequent first) — their sentences (at most three), else `None`.
pub(crate) fn sandbox_failure(ran: &Ran) -> Option<String> {
    use crate::runtime::steps::post_round::Decision;
    let network = matches!(
        &ran.post_round,
        Decision::BackOff { kind, .. } if *kind == agent_runner_protocol::ErrorKind::Network
    );
    let failed = network
        || (!ran.exit.is_clean()
            && ran.exit.cause != crate::runtime::agent::process::ExitCause::Stopped);
    if !failed {
        return None;
    }
    let mut sentences = ran.endpoints_refused.clone();
    sentences.extend(ran.egress_refused.iter().map(|(r, _)| r.sentence()));
    sentences.truncate(3);
    (!sentences.is_empty()).then(|| sentences.join("; "))
}

/// The last lines of a round log (redacted), for `crash_loop` and `stalled_no_progress`.
fn last_lines(log: &Path) -> Vec<String> {
    crate::runtime::cycle::round::log_tail(log, CRASH_LOOP_TAIL_LINES, CRASH_LOOP_TAIL_CHARS)
        .lines()
        .map(str::to_owned)
        .collect()
}
