//! One round (`docs/design-notes.md`, "One round", steps 2–6): phase and profile, prompt
//! and argv, spawn hooks, the agent under its budget, the dirty tree, and the events of
//! each step: `round_start`, `agent_spawn`, `agent_exit`, the post-round hooks' records
//! (`plugin_post_round_decision`, …), `dirty_detected` and the dirty outcome, `round_end`.
//!
//! The phase of round N is `[phases] list[(N-1) % len]` unless `round --phase` names one;
//! it selects the per-phase overrides (budget, prompt files, agent) and reaches the agent
//! (`AGENT_RUNNER_PHASE`, the round context), the hosts (`ctx.phase`), `round_start.phase`
//! and the auto-commit subject.

use crate::record::agent_changes::{self, AgentChanges, Change, Kind};
use crate::runtime::cycle::config_path::{self, AgentRan};
use agent_runner_protocol::limits::{
    fit_list, fit_text, MAX_CONTEXT_TEXT_BYTES, MAX_ENV_NAMES_BYTES, MAX_LOG_TAIL_BYTES,
    MAX_SPAWN_ARGV_BYTES,
};
use agent_runner_protocol::{Context, Family, ProjectState, SpawnView, VcsContext};
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::config::{Config, ContextInjection, PromptDelivery};
use crate::held_dir::HeldDir;
use crate::hosts::HostManager;
use crate::record::events::{timestamp, Event, EventLog, RoundEnd, RoundOutcome};
use crate::record::retention;
use crate::record::state;
use crate::record::stop::{StopLevel, StopWatch};
use crate::runtime::agent::environment::AllowList;
use crate::runtime::agent::grace::Grace;
use crate::runtime::agent::process::{self as agent, AgentExit, AgentSpec};
use crate::runtime::agent::prompt::{agent_argv, assemble, spawn_view_argv};
use crate::runtime::agent::round_context::{self, RoundContext, CONTEXT_FILE_ENV};
use crate::runtime::agent::sandbox::AgentSandboxGate;
use crate::runtime::agent::sandbox_denials::DenialTally;
use crate::runtime::agent::sessions::{Resume, Sessions};
use crate::runtime::cycle::config_digest;
use crate::runtime::cycle::substrate;
use crate::runtime::egress::key_broker;
use crate::runtime::egress::proxy as egress_proxy;
use crate::runtime::egress::refusals::{EgressRefusal, EgressTally};
use crate::runtime::egress::upstream_proxy::UpstreamProxies;
use crate::runtime::git::attribution::{self, Baseline, OwnFiles};
use crate::runtime::git::config_watch::{self as git_config_watch, ConfigBefore};
use crate::runtime::git::exec_surface;
use crate::runtime::git::index_file::Marks;
use crate::runtime::git::operation as git_operation;
use crate::runtime::git::repo::{GitError, Look, Repo};
use crate::runtime::git::stash_journal;
use crate::runtime::machine::host_health::{self, Floor, Pressure, Reading};
use crate::runtime::machine::round_cgroup::{self, Delegation, RoundCgroup};
use crate::runtime::steps::detect_hooks::{self, AutoStop};
use crate::runtime::steps::dirty::{self, DirtyRound, Outcome};
use crate::runtime::steps::post_round::{self, Decision, Judged};
use crate::runtime::steps::pre_round;
use crate::runtime::steps::spawn_gate::{self, Verdict};
use crate::tree_file;
use std::os::unix::fs::OpenOptionsExt;

/// Lines of the round log that `round_end.log_tail` carries after a failed agent run.
pub(crate) const TAIL_LINES: usize = 5;
/// At most this many characters of them (the end is kept).
pub(crate) const TAIL_CHARS: usize = 500;

/// The last `lines` lines of the round log at `path`, redacted, at most `chars`
/// characters (the end kept); empty when it cannot be read.
pub(crate) fn log_tail(path: &std::path::Path, lines: usize, chars: usize) -> String {
    let text = crate::record::rounds::tail_text(path, 64 * 1024).unwrap_or_default();
    let text = text.trim_end();
    let start = text
        .rmatch_indices('\n')
        .nth(lines.saturating_sub(1))
        .map_or(0, |(i, _)| i + 1);
    let tail = agent_runner_protocol::redact::redact(&text[start..]);
    let skip = tail.chars().count().saturating_sub(chars);
    tail.chars().skip(skip).collect()
}

/// What an attempt at a round came to.
#[derive(Debug)]
pub(crate) enum Attempt {
    /// The agent ran.
    Ran(Box<Ran>),
    /// Spawn hooks deferred or skipped the round; no agent started.
    NotStarted(Verdict),
    /// A stop arrived while the spawn hooks were being asked; no agent started.
    Stopped,
    /// The host-health gate found a critical reading; no hook was asked, no agent started.
    Unhealthy(Pressure),
}

/// A round whose agent ran.
#[derive(Debug)]
pub(crate) struct Ran {
    /// The round's number.
    pub round_num: u64,
    /// Its round log.
    pub log_path: PathBuf,
    /// How the agent ended.
    pub exit: AgentExit,
    /// What happened to a dirty tree (`None`: clean, or the agent did not exit cleanly).
    pub dirty: Option<Outcome>,
    /// What the post-round hooks made of the round.
    pub post_round: Decision,
    /// Whether a post-round hook reported the round's token usage.
    pub usage_reported: bool,
    /// The round's own usage as the first hook that reported it was recorded.
    pub usage: Option<agent_runner_protocol::TokenUsage>,
    /// Whether the built-in detector of a preset's CLI was asked.
    pub preset_cli: bool,
    /// Whether the round changed the tree: left it dirty, or moved `HEAD`.
    pub tree_changed: bool,
    /// What the `[goal]` checks found after the agent exited (`None` without `[goal]`).
    pub goal: Option<crate::runtime::steps::goal::Checked>,
    /// The connects the agent's sandbox refused, each once with its count, most frequent
    /// first (`agent_egress_refused`).
    pub egress_refused: Vec<(EgressRefusal, u64)>,
    /// When the agent did not exit cleanly or a detector read a network failure: its endpoints (read from its variables and
    /// config files) the sandbox refuses and no observed refusal already names, one
    /// sentence each ([`crate::runtime::agent::endpoint`]); empty otherwise.
    pub endpoints_refused: Vec<String>,
}

/// Why a round could not run. Each is reported to the operator: `serve` records it as
/// `round_error` and goes on, `round` exits 1 with it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RoundError {
    /// `state.json` could not be read.
    #[error("cannot read round state in {}: {source}", dir.display())]
    ReadState {
        /// The state dir.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The round's number could not be recorded in `state.json`.
    #[error("cannot record round state in {}: {source}", dir.display())]
    RecordState {
        /// The state dir.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The round context could not be rendered as JSON for the prompt.
    #[error("cannot render the round context: {0}")]
    RenderContext(serde_json::Error),
    /// A prompt file could not be read.
    #[error("cannot read prompt: {0}")]
    Prompt(std::io::Error),
    /// `<log_dir>/rounds` could not be created.
    #[error("cannot create {}: {source}", dir.display())]
    CreateRoundsDir {
        /// `<log_dir>/rounds`.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The round log could not be created.
    #[error("cannot create round log {}: {source}", path.display())]
    CreateLog {
        /// The round log's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The agent could not be started (not found, not executable, ...).
    #[error("cannot start agent {command:?}: {source}")]
    StartAgent {
        /// The agent's `command[0]`.
        command: String,
        /// Why.
        source: std::io::Error,
    },
}

impl RoundError {
    /// A failure of the environment rather than of the agent or the config: the state dir
    /// or the log dir cannot be read or written (disk full, a read-only or vanished
    /// mount). `serve` retries these after growing waits and gives up with exit 76
    /// (`environment_unusable`, docs/operations.md "Leaving it unattended"); they never
    /// count toward the crash-loop breaker.
    pub(crate) fn is_environmental(&self) -> bool {
        matches!(
            self,
            RoundError::ReadState { .. }
                | RoundError::RecordState { .. }
                | RoundError::CreateRoundsDir { .. }
                | RoundError::CreateLog { .. }
        )
    }
}

/// What the agent of a round is started with, once the spawn hooks let it.
struct Launch {
    /// The agent's argv.
    argv: Vec<String>,
    /// The prompt, when it is delivered on stdin.
    stdin_prompt: Option<String>,
    /// The variables the agent gets on top of what it inherits of the supervisor's
    /// environment ([`AllowList`]).
    env: Vec<(String, String)>,
    /// `terminal_marker` of the round's agent.
    marker: String,
    /// The round's budget.
    budget: std::time::Duration,
    /// How the agent is ended (its CLI's cooperative signal and grace).
    stop_signal: crate::runtime::agent::cooperative::StopSignal,
    /// The round's agent CLI ([`crate::config::AgentConfig::cli`]).
    cli: Option<&'static str>,
    /// What the round does about its phase's agent session (`serve` only).
    resume: Option<Resume>,
    /// The CLI's own sandbox, replaced in `argv` by ours (`agent_own_sandbox_replaced`).
    own_sandbox: Option<crate::runtime::agent::own_sandbox::Replaced>,
}

/// Why a round that ran failed, for its span's error status (docs/operations.md "Traces"):
/// its agent's end, or the post-round verdict that backs off or stops (hook and kind only:
/// a detector's message quotes the agent's output, which never leaves the machine).
/// `None`: it did not fail.
fn trace_failure(ran: &Ran) -> Option<String> {
    let exit = &ran.exit;
    if !exit.is_clean() && exit.cause != agent::ExitCause::Stopped {
        return Some(match (exit.cause, exit.exit_code, exit.signal) {
            (agent::ExitCause::Exited, Some(code), _) => format!("the agent exited {code}"),
            (_, _, Some(signal)) => format!(
                "the agent ended by signal {signal} ({})",
                exit.cause.as_str()
            ),
            (cause, _, _) => format!("the agent ended: {}", cause.as_str()),
        });
    }
    match &ran.post_round {
        Decision::BackOff { hook, kind, .. } => {
            Some(format!("{hook} backs off: {}", kind.as_str()))
        }
        Decision::Stop { hook, kind, .. } => Some(format!("{hook} stops serve: {}", kind.as_str())),
        Decision::Continue => None,
    }
}

/// Whether the work dir was a git working tree when the supervisor started; fixed for its
/// life: a `.git` that appears while serving is adopted at the next start, never in the
/// middle of a run (docs/operations.md, "Without git").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Git {
    /// A git working tree: dirt is stashed or committed, `HEAD` recorded.
    WorkTree,
    /// In no repository: no git runs, nothing is stashed or committed, `git_head` is null.
    Absent,
}

/// Runs rounds of one project: the loaded config, its hosts and its event log.
pub(crate) struct Runner {
    /// The configuration (re-read before each round by `serve`).
    pub config: Config,
    /// When the last agent ran and what it could write (what a config reload asks:
    /// `config_follow`).
    pub agent_ran: Option<AgentRan>,
    /// What the key broker read the provider billing in the last round's answers (taken by
    /// the post-round record of its usage).
    billed: crate::budget::billed::Billed,
    /// Where the prompt files resolved at boot and at each applied reload.
    prompt_links: crate::tree_file::KnownLinks,
    /// The log dir as it resolved at boot (the same for the whole run: a reload keeps it).
    log_dir: HeldDir,
    /// The operator's record.
    pub events: EventLog,
    /// Third-party hosts.
    pub hosts: HostManager,
    /// `serve`'s notifications (`[notify]`); `None` for `round`.
    pub notifier: Option<crate::runtime::outward::notify::Notifier>,
    repo: Repo,
    /// Whether `repo` is a git working tree at all.
    git: Git,
    /// Since when the host-health gate has been deferring rounds.
    unhealthy_since: Option<std::time::Instant>,
    /// The delegated cgroup rounds get children of; `None`: rounds run in the supervisor's.
    cgroups: Option<Delegation>,
    /// The agent sessions rounds resume; `None` (`round`): every round starts a new one.
    sessions: Option<Sessions>,
    /// The last usage each session reported, so a round's is its own.
    session_usage: crate::runtime::agent::session_usage::SessionUsage,
    /// The agent's sandbox gate of this boot.
    agent_sandbox: AgentSandboxGate,
    /// The goal checks' files as they were before the first round's agent ran (a check
    /// whose files differ from them does not count: [`crate::runtime::steps::goal::Fingerprints`]).
    check_files: crate::runtime::steps::goal::Fingerprints,
    /// What agents changed that stays refused across boots (a prompt link, a rewritten
    /// check file): loaded at boot, added to after each round.
    agent_changes: AgentChanges,
    /// The config's path as it was just before the agent ran
    /// ([`config_path::path_entries`]).
    config_entries: Vec<config_path::Entry>,
    /// The repository's config files before the last round (docs/security.md, "What runs
    /// later: the watched tier").
    config_before: ConfigBefore,
    /// Writes to the state dir left to the runtime's blocking pool while git runs
    /// ([`Runner::settle`] waits for them before the round's end is told and before the
    /// next round reads the state dir).
    writes_behind: Vec<tokio::task::JoinHandle<()>>,
    /// The exporter of each round's trace (`[telemetry]`); `None`: no traces.
    traces: Option<crate::runtime::outward::round_trace::Traces>,
    /// The span of the round under way, from its start to the attempt's end.
    round_span: Option<crate::runtime::outward::round_trace::RoundSpan>,
    /// What the next round may spend (`serve` sets it from the record before each round
    /// while a `[budget]` cap is set); `None`: its spend is not watched while it runs.
    pub round_cap: Option<crate::budget::RoundCap>,
}

/// Every prompt file of `config`, each phase's too: where they resolve is learnt at boot,
/// and for files a reload adds, when it applies ([`crate::tree_file::KnownLinks`]).
fn prompt_files(config: &Config) -> Vec<PathBuf> {
    let phases = config.phases.overrides.values();
    config
        .prompt
        .files
        .iter()
        .chain(phases.flat_map(|o| o.prompt_files.iter().flatten()))
        .cloned()
        .collect()
}

/// The work tree as rounds see it under `config`: the supervisor's own files and the paths
/// `hosts` declared (`owned_paths`) are never dirt; each git command is bounded by
/// `[vcs] git_timeout_s`.
fn repo_for(config: &Config, hosts: &HostManager, tree: Repo) -> Repo {
    tree.with_own(OwnFiles::of(config).with_host_paths(hosts.owned_paths()))
        .with_timeout(config.vcs.git_timeout)
}

impl Runner {
    /// A runner over `config` with `hosts` already booted, on `tree` (the work dir's repo,
    /// pinned when it is one, and whether it is one: [`Repo::not_a_work_tree`]); each round
    /// gets a child of `cgroups` when there is one ([`round_cgroup::prepare`]).
    pub(crate) fn new(
        config: Config,
        events: EventLog,
        hosts: HostManager,
        (tree, git): (Repo, Git),
        cgroups: Option<Delegation>,
        agent_sandbox: AgentSandboxGate,
    ) -> Self {
        let repo = repo_for(&config, &hosts, tree);
        // Placeholders of the protected paths a crashed round left in the tree, removed
        // while still empty before anything looks at it.
        for path in
            agent_runner_plugin_host::agent::protected::remove_leftovers(&config.runtime.state_dir)
        {
            tracing::info!(
                "removed the placeholder {} a crashed round left",
                path.display()
            );
        }
        let state_dir = config.runtime.state_dir.clone();
        let mut agent_changes = AgentChanges::load(&state_dir);
        agent_changes.forget_changed(&state_dir, Kind::PromptLink);
        agent_changes.forget_changed(&state_dir, Kind::GoalCheck);
        let mut prompt_links = crate::tree_file::KnownLinks::of(&prompt_files(&config));
        for path in prompt_files(&config) {
            if let Some(change) = agent_changes.held(Kind::PromptLink, &path) {
                prompt_links.refuse(
                    &path,
                    format!(
                        "{} leads elsewhere through a symbolic link an agent made in round {} (refused then, and at every start since while it is unchanged): never followed; remove or replace the link (to use it as it is, remove its entry from {})",
                        path.display(),
                        change.round_num,
                        state_dir.join(agent_changes::FILE).display()
                    ),
                );
            }
        }
        let check_files = crate::runtime::steps::goal::Fingerprints::holding(&agent_changes);
        agent_changes.forget_changed(&state_dir, Kind::LogDir);
        let log_dir = agent_changes::held_log_dir(&config);
        let mut hosts = hosts;
        let traces = crate::runtime::outward::round_trace::Traces::start(
            &config.telemetry,
            &config.project,
            &events,
        );
        hosts.trace_calls(traces.is_some());
        Runner {
            traces,
            round_span: None,
            log_dir,
            config,
            events,
            hosts,
            notifier: None,
            repo,
            git,
            unhealthy_since: None,
            agent_ran: None,
            billed: Default::default(),
            prompt_links,
            cgroups,
            sessions: None,
            session_usage: Default::default(),
            agent_sandbox,
            check_files,
            agent_changes,
            config_entries: Vec::new(),
            config_before: ConfigBefore::default(),
            writes_behind: Vec::new(),
            round_cap: None,
        }
    }

    /// The log dir as it resolved at boot: views, round logs and the agent's sentinel are
    /// reached through it ([`HeldDir`]).
    pub(crate) fn log_dir(&self) -> &HeldDir {
        &self.log_dir
    }

    /// Later rounds resume their phase's agent session where the CLI can (`serve`:
    /// [`crate::runtime::agent::sessions`]).
    pub(crate) fn resume_sessions(&mut self) {
        self.sessions.get_or_insert_with(Sessions::default);
    }

    /// Runs later rounds with `config` (a re-read of the same file: same work dir, log dir
    /// and state dir), after `hosts` followed it. The own files are recomputed (prompt
    /// files may have moved, hosts may own other paths).
    pub(crate) fn replace_config(&mut self, config: Config) {
        self.repo = repo_for(&config, &self.hosts, self.repo.clone());
        self.prompt_links.learn_new(&prompt_files(&config));
        self.config = config;
    }

    fn context(&self, round_num: u64, phase: Option<&str>, log_path: Option<String>) -> Context {
        let cfg = &self.config;
        let agent = cfg.profile(phase).agent;
        // Every text capped so that no request line can exceed the limit (docs/protocol.md §7).
        let fit = |text: &str| fit_text(text, MAX_CONTEXT_TEXT_BYTES);
        Context {
            work_dir: fit(&cfg.runtime.work_dir.display().to_string()),
            log_dir: fit(&cfg.runtime.log_dir.display().to_string()),
            project: fit(&cfg.project),
            round_num,
            phase: phase.map(fit),
            agent_name: agent.name.as_deref().map(fit),
            agent_binary: Some(fit(&agent.command[0])),
            agent_log_path: log_path.as_deref().map(fit),
            dry_run: cfg.runtime.dry_run,
            vcs: Some(VcsContext {
                dirty_action: cfg.vcs.dirty_action.as_str().to_owned(),
                stash_idempotency_s: cfg.vcs.stash_idempotency.as_secs(),
            }),
        }
    }

    /// The round's watch on its log: result grace, when `max_grace_after_result_s` and the
    /// marker are set, and `stall`, the CLI's stall words when it has some; `None` when
    /// neither.
    fn grace(
        &self,
        marker: &[u8],
        stall: Option<crate::runtime::agent::grace::Stall>,
        round_num: u64,
        log_path: &Path,
    ) -> Option<Grace> {
        let after = self.config.runtime.max_grace_after_result;
        let marker = match after {
            Some(_) if !marker.is_empty() => marker.to_vec(),
            _ => Vec::new(),
        };
        if marker.is_empty() && stall.is_none() {
            return None;
        }
        Some(Grace {
            marker,
            stall,
            after: after.unwrap_or_default(),
            // Validated when the config was loaded.
            ignore: self
                .config
                .runtime
                .grace_kill_ignore_patterns
                .iter()
                .filter_map(|p| regex::Regex::new(p).ok())
                .collect(),
            log_path: log_path.to_owned(),
            events: self.events.clone(),
            round_num,
        })
    }

    /// Prunes the agent's shadow home of what no later round needs once its round ended
    /// ([`crate::runtime::agent::home_prune`]), keeping every phase's live session;
    /// `agent_home_pruned` when something was removed or a planted link refused.
    fn prune_agent_home(&self, round_num: u64, phase: Option<&str>) {
        let Some(cli) = self.config.profile(phase).agent.cli.name else {
            return;
        };
        let live = self
            .sessions
            .as_ref()
            .map(Sessions::live_ids)
            .unwrap_or_default();
        let pruned =
            crate::runtime::agent::home_prune::prune(&self.config.runtime.state_dir, cli, &live);
        if pruned.removed > 0 || !pruned.refused.is_empty() {
            self.events.emit(Event::AgentHomePruned {
                round_num,
                cli: cli.to_owned(),
                removed: pruned.removed,
                bytes: pruned.bytes,
                refused: pruned.refused,
            });
        }
    }

    /// Whether round `round_num` is a fresh-eyes round: every `fresh_eyes_every_n`-th.
    fn fresh_eyes(&self, round_num: u64) -> bool {
        self.config
            .runtime
            .fresh_eyes_every_n
            .is_some_and(|n| round_num > 0 && round_num % n == 0)
    }

    /// Where the agent's protected paths lie: the repository's top and hooks as pinned at
    /// boot; outside git (or when it cannot be found) the work dir alone.
    async fn tree_roots(&self) -> crate::runtime::agent::sandbox::TreeRoots {
        if self.git != Git::WorkTree || !self.agent_sandbox.config_read_only() {
            return Default::default();
        }
        match self.repo.protected_roots().await {
            Some((root, hooks_dirs, repo_dirs)) => crate::runtime::agent::sandbox::TreeRoots {
                root: Some(root),
                hooks_dirs,
                repo_dirs,
            },
            None => Default::default(),
        }
    }

    /// One `git status` of the tree ([`Repo::look`]); outside git, an empty look and no
    /// git run.
    async fn look(&self) -> Result<Look, GitError> {
        match self.git {
            Git::WorkTree => self.repo.look().await,
            Git::Absent => Ok(Look::default()),
        }
    }

    /// `round_substrate_before` / `_after` when `substrate_fingerprint_paths` is set, with
    /// `head`, `HEAD` then.
    fn substrate(&self, round_num: u64, after: bool, head: &Option<String>) {
        // Always recorded, as the reference system does (`paths_hash` null without
        // patterns); `[goal]`'s treadmill advisory reads `HEAD` from them too.
        let patterns = &self.config.runtime.substrate_fingerprint_paths;
        let git_head = head.clone();
        let paths_hash = substrate::fingerprint(&self.config.runtime.work_dir, patterns);
        self.events.emit(if after {
            Event::RoundSubstrateAfter {
                round_num,
                git_head,
                paths_hash,
            }
        } else {
            Event::RoundSubstrateBefore {
                round_num,
                git_head,
                paths_hash,
            }
        });
    }

    /// The egress proxy's policy for the agent of `phase`: `allow_hosts`'s list; without it
    /// the open policy when the agent gets a network namespace of its own
    /// ([`AgentSandboxGate::own_network`]: `prefer` or `require`, no `host_network`);
    /// `None`: the agent keeps this machine's network.
    fn egress_policy(&self, phase: Option<&str>) -> Option<egress_proxy::Policy> {
        match &self.config.profile(phase).agent.allow_hosts {
            Some(allow) => Some(egress_proxy::Policy::Listed(allow.clone())),
            None => self
                .agent_sandbox
                .own_network()
                .then(|| egress_proxy::Policy::open(&self.config.agent_sandbox)),
        }
    }

    /// The variables the agent gets on top of what it inherits of the supervisor's
    /// environment ([`AllowList`]).
    fn agent_env(&self, round_num: u64, phase: Option<&str>) -> Vec<(String, String)> {
        let log_dir = &self.config.runtime.log_dir;
        let mut env: Vec<(String, String)> = self
            .config
            .profile(phase)
            .agent
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push(("AGENT_RUNNER_LOG_DIR".into(), log_dir.display().to_string()));
        env.push(("AGENT_RUNNER_ROUND_NUM".into(), round_num.to_string()));
        env.push(("AGENT_RUNNER_PHASE".into(), phase.unwrap_or("").to_owned()));
        let fresh = self.fresh_eyes(round_num);
        env.push((
            "AGENT_RUNNER_FRESH_EYES".into(),
            if fresh { "1" } else { "0" }.into(),
        ));
        if let Some(policy) = self.egress_policy(phase) {
            env.extend(egress_proxy::agent_env(&policy));
        }
        if let Some(file) = &self.config.runtime.narrative_file {
            env.push((
                "AGENT_RUNNER_NARRATIVE_FILE".into(),
                file.display().to_string(),
            ));
        }
        if self.config.prompt.injection == ContextInjection::File {
            env.push((
                CONTEXT_FILE_ENV.into(),
                log_dir
                    .join(round_context::CONTEXT_FILE)
                    .display()
                    .to_string(),
            ));
        }
        if let Some(span) = &self.round_span {
            let trace_env = span.agent_env(&env);
            env.extend(trace_env);
        }
        env
    }

    /// Attempts one round: checks host health (a critical reading defers the round:
    /// `round_deferred` once per episode, `round_resumed` when a later attempt finds the
    /// host healthy), asks the spawn hooks and, if they let it, runs the agent and
    /// handles the tree it left. `phase` overrides the rotation (`round --phase`).
    ///
    /// Errors: [`RoundError`]: the round state or prompt cannot be read, the round log
    /// cannot be created, or the agent cannot be started (all reported to the operator;
    /// `serve` keeps going).
    pub(crate) async fn attempt(
        &mut self,
        stop: &mut StopWatch,
        phase: Option<&str>,
    ) -> Result<Attempt, RoundError> {
        let began = SystemTime::now();
        // Calls since the last attempt (detector polls between rounds) are no round's.
        self.hosts.take_calls();
        let attempt = self.attempt_round(stop, phase, began).await;
        self.finish_trace(&attempt, began);
        attempt
    }

    /// Ends the span of the round the attempt ran, if it ran one (docs/operations.md
    /// "Traces"); an attempt that began at `began` and started no agent gets a
    /// `round_attempt` span saying why. Then tells what the exporter saw of its collector.
    fn finish_trace(&mut self, attempt: &Result<Attempt, RoundError>, began: SystemTime) {
        let Some(traces) = self.traces.as_mut() else {
            return;
        };
        let calls = self.hosts.take_calls();
        if self.round_span.is_none() {
            use crate::runtime::outward::round_trace::NotStarted;
            let mut not_started = match attempt {
                Ok(Attempt::Ran(_)) => None,
                Ok(Attempt::NotStarted(Verdict::Defer {
                    hook,
                    defer_s,
                    reason,
                })) => Some(NotStarted {
                    outcome: "deferred",
                    reason: format!("deferred {defer_s} s: {reason}"),
                    hook: Some(hook.to_string()),
                    ..Default::default()
                }),
                Ok(Attempt::NotStarted(Verdict::Skip { hook, reason })) => Some(NotStarted {
                    outcome: "skipped",
                    reason: reason.clone(),
                    hook: Some(hook.to_string()),
                    ..Default::default()
                }),
                Ok(Attempt::NotStarted(Verdict::Proceed)) => None,
                Ok(Attempt::Unhealthy(pressure)) => Some(NotStarted {
                    outcome: "unhealthy",
                    reason: format!(
                        "host health {} ({}): {}",
                        pressure.severity, pressure.signal, pressure.message
                    ),
                    ..Default::default()
                }),
                Ok(Attempt::Stopped) => Some(NotStarted {
                    outcome: "stopped",
                    reason: "a stop arrived before the agent started".to_owned(),
                    ..Default::default()
                }),
                Err(e) => Some(NotStarted {
                    outcome: "failed",
                    reason: e.to_string(),
                    failed: true,
                    ..Default::default()
                }),
            };
            if let Some(mut one) = not_started.take() {
                one.round_num = state::peek_next_round(&self.config.runtime.state_dir).ok();
                one.calls = calls;
                traces.not_started(began, one);
                traces.report(&self.events);
                return;
            }
        }
        if let Some(span) = self.round_span.take() {
            let mut ending = crate::runtime::outward::round_trace::RoundEnding {
                calls,
                ..Default::default()
            };
            match attempt {
                Ok(Attempt::Ran(ran)) => {
                    ending.usage = ran.usage.clone();
                    ending.exit = Some((ran.exit.exit_code, ran.exit.cause.as_str()));
                    ending.checks = ran
                        .goal
                        .as_ref()
                        .map(|g| g.timings.clone())
                        .unwrap_or_default();
                    ending.failure = trace_failure(ran);
                }
                Ok(_) => {}
                Err(e) => ending.failure = Some(e.to_string()),
            }
            traces.finish(span, ending);
        }
        traces.report(&self.events);
    }

    /// Sends the traces still queued (at most [`crate::runtime::outward::round_trace::FLUSH_AT_EXIT`])
    /// and stops the exporter: `serve` and `round` at their end.
    pub(crate) fn flush_traces(&mut self) {
        if let Some(traces) = self.traces.take() {
            traces.shutdown(&self.events);
        }
    }

    async fn attempt_round(
        &mut self,
        stop: &mut StopWatch,
        phase: Option<&str>,
        began: SystemTime,
    ) -> Result<Attempt, RoundError> {
        self.repo.stop_on(stop);
        // The last round's writes are done before this one reads the state dir.
        self.settle().await;
        if let Some(pressure) = self.health_gate() {
            return Ok(Attempt::Unhealthy(pressure));
        }
        let state_dir = self.config.runtime.state_dir.clone();
        let next = state::peek_next_round(&state_dir).map_err(|source| RoundError::ReadState {
            dir: state_dir.clone(),
            source,
        })?;
        let phase: Option<String> = phase
            .map(str::to_owned)
            .or_else(|| self.config.phase_for_round(next).map(str::to_owned));
        let phase = phase.as_deref();
        let started = timestamp(SystemTime::now());
        let ctx = self.context(next, phase, None);
        let round_ctx = match self.ask_pre_round(&ctx, next, &started, phase, stop).await {
            ControlFlow::Continue(round_ctx) => round_ctx,
            ControlFlow::Break(attempt) => return Ok(attempt),
        };
        let mut launch = self.launch(next, phase, &round_ctx)?;
        let resume = launch.resume.clone();
        if let ControlFlow::Break(attempt) = self.ask_spawn_gate(&ctx, &launch, phase, stop).await {
            return Ok(attempt);
        }
        // The round's number is taken, and made durable, on the runtime's blocking pool
        // while git looks at the tree: the two waits overlap (docs/performance.md,
        // "Processes of one round").
        let counter = {
            let state_dir = state_dir.clone();
            tokio::task::spawn_blocking(move || state::next_round(&state_dir))
        };
        // An exec-surface file an index flag hides is shown again before the look that
        // tells the operator's dirt (docs/security.md, "What hides a change").
        let (mut marks, unhidden) = self.unhide(None).await;
        // One `git status` before the agent tells HEAD and the operator's dirt, one after
        // it HEAD and the round's (docs/performance.md: git processes per round).
        let before = self.look().await;
        let head_before = before.as_ref().ok().and_then(|look| look.head.clone());
        let nested_before = before
            .as_ref()
            .map(|look| look.nested.clone())
            .unwrap_or_default();
        let round_num = counter
            .await
            .unwrap_or_else(|panicked| Err(std::io::Error::other(panicked)))
            .map_err(|source| RoundError::RecordState {
                dir: state_dir.clone(),
                source,
            })?;
        let (log_path, log) = self
            .start_round(
                round_num,
                &round_ctx,
                &started,
                phase,
                resume.as_ref(),
                &head_before,
            )
            .await?;
        if let Some(traces) = &self.traces {
            let agent = self.config.profile(phase).agent;
            let facts = crate::runtime::outward::round_trace::RoundFacts {
                round_num,
                phase: phase.map(str::to_owned),
                agent: agent
                    .name
                    .clone()
                    .or_else(|| agent.cli.name.map(str::to_owned))
                    .unwrap_or_else(|| {
                        let bin = agent.command.first().map(String::as_str).unwrap_or("");
                        bin.rsplit('/').next().unwrap_or(bin).to_owned()
                    }),
                provider: crate::runtime::outward::round_trace::provider_of(agent.cli.name),
                model: crate::runtime::outward::round_trace::model_of(&agent.command),
                conversation: resume.as_ref().filter(|r| r.resuming).map(|r| r.id.clone()),
            };
            let span = traces.begin(&facts, began);
            let trace_env = span.agent_env(&launch.env);
            launch.env.extend(trace_env);
            self.round_span = Some(span);
        }
        self.unhidden(round_num, unhidden);
        let baseline = self.baseline(round_num, before);
        let config_watched = self.record_config(round_num, &nested_before).await;
        self.config_entries = config_path::path_entries(&self.config.path);
        // What the checks run, as it was before any agent of this boot could change it.
        if let Some(goal) = &self.config.goal {
            self.check_files.add_new(goal);
        }
        let mut egress = EgressTally::default();
        let mut watched = crate::runtime::agent::usage_watch::Watched::default();
        let exit = self
            .run_agent(
                round_num,
                phase,
                launch,
                (&log_path, log),
                stop,
                (&mut egress, &mut watched),
            )
            .await;
        if let Some(sessions) = self.sessions.as_mut().filter(|_| resume.is_some()) {
            sessions.ended(
                phase.unwrap_or(""),
                exit.as_ref().is_ok_and(AgentExit::is_clean),
            );
        }
        self.prune_agent_home(round_num, phase);
        let exit = match exit {
            Ok(exit) => exit,
            Err(err) => {
                let reverted = self.revert_config(round_num, config_watched.as_ref()).await;
                self.revert_nested_configs(round_num, config_watched, &nested_before, reverted)
                    .await;
                return Err(err);
            }
        };
        let duration_s = (exit.duration.as_secs_f64() * 1000.0).round() / 1000.0;
        // `state.json`'s previous round, made durable while the checks and git run
        // (docs/performance.md, "Processes of one round"); waited for before `round_end`.
        let previous = state::PreviousRound {
            round_num,
            exit_code: exit.exit_code,
            exit_cause: exit.cause.as_str().to_owned(),
            duration_s,
        };
        let state_dir = self.config.runtime.state_dir.clone();
        self.write_behind(move || {
            if let Err(e) = state::record_round_end(&state_dir, previous) {
                tracing::warn!("cannot record the round's end in state.json: {e}");
            }
        });
        // Before the dirty tree is handled, so a check sees the round's edits; in a cgroup
        // with the round's memory bounds, as the agent was.
        let goal = match &self.config.goal {
            Some(goal) => {
                let cgroup = self.round_cgroup(round_num);
                let checked = crate::runtime::steps::goal::run_checks(
                    goal,
                    self.config.runtime.dry_run,
                    round_num,
                    &self.events,
                    &crate::runtime::steps::goal::CheckLaunch {
                        gate: &self.agent_sandbox,
                        config: &self.config,
                        env: self.agent_env(round_num, phase),
                        inherit: AllowList::of(&self.config, None),
                        tree: self.tree_roots().await,
                        cgroup: cgroup.as_ref(),
                    },
                    &self.check_files,
                )
                .await;
                if let Some(cgroup) = cgroup {
                    cgroup.finish().await;
                }
                Some(checked)
            }
            None => None,
        };
        self.hold_agent_changes(round_num);
        // After the checks, which run code the agent could have written with the tree
        // (and `.git/config`) theirs to write, as the agent's was; before the supervisor's
        // own git looks at the tree.
        let reverted = self.revert_config(round_num, config_watched.as_ref()).await;
        if let Some(changed) = self.repo.changed() {
            let set_aside = self.repo.set_aside_plants();
            self.events.emit(Event::GitRepositoryChanged {
                round_num,
                changed,
                set_aside,
            });
        }
        if let Some(before) = marks.take() {
            let (_, unhidden) = self.unhide(Some(&before)).await;
            self.unhidden(round_num, unhidden);
        }
        let after = self.look().await;
        // The nested repositories' configs after the look, which lists the untracked ones
        // (no git process more when there are none).
        let nested_after = after
            .as_ref()
            .map_or(&[][..], |look| look.nested.as_slice());
        self.revert_nested_configs(round_num, config_watched, nested_after, reverted)
            .await;
        let head_after = after.as_ref().ok().and_then(|look| look.head.clone());
        self.substrate(round_num, true, &head_after);
        if self.git == Git::WorkTree {
            let state_dir = &self.config.runtime.state_dir;
            stash_journal::check(state_dir, &self.repo, round_num, &self.events).await;
        }
        self.note_log_cap(round_num, &exit, &log_path);
        let consulted = self
            .judge(
                round_num,
                phase,
                (&exit, duration_s),
                &log_path,
                resume.as_ref(),
                stop,
            )
            .await;
        // The round's tokens as a post-round report counted them, else as the output watch
        // summed them (a round whose CLI printed no usage of its own: stopped for its
        // budget, or ended without its result record).
        let watched_tokens = watched.usage.as_ref().map(|(_, u, _)| {
            [
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens.unwrap_or(0),
                u.cache_write_tokens.unwrap_or(0),
            ]
            .iter()
            .fold(0u64, |sum, n| sum.saturating_add(*n))
        });
        let round_tokens = consulted
            .tokens
            .or(watched_tokens.filter(|_| !consulted.usage_reported));
        if let (Some(sessions), Some(resume), Some(tokens)) =
            (self.sessions.as_mut(), resume.as_ref(), round_tokens)
        {
            sessions.used(phase.unwrap_or(""), &resume.id, tokens);
        }
        if !consulted.usage_reported {
            self.record_watched(round_num, phase, watched);
        }
        self.exec_surface(
            round_num,
            (&baseline, began),
            &after,
            (&head_before, &head_after),
        )
        .await;
        let branch = after.as_ref().ok().and_then(|look| look.branch.clone());
        let dirty = if exit.is_clean() {
            self.handle_dirt(round_num, phase, &baseline, after, &log_path, stop)
                .await
        } else {
            None
        };
        // The agent's own commits count as a change too (aider commits its edits); outside
        // git no change can be seen, so none is ruled out (no stall is called).
        let tree_changed = self.git == Git::Absent || dirty.is_some() || head_after != head_before;
        self.settle().await;
        self.end_round(round_num, &exit, (dirty.as_ref(), branch), &log_path);
        crate::runtime::cycle::log_views::write_status(
            &self.log_dir,
            round_num,
            exit.exit_code,
            duration_s,
            phase,
        );
        let observed = egress.distinct();
        let network = matches!(
            &consulted.decision,
            Decision::BackOff { kind, .. } if *kind == agent_runner_protocol::ErrorKind::Network
        );
        let endpoints_refused = if exit.is_clean() && !network {
            Vec::new()
        } else {
            let abi = self.agent_sandbox.landlock_abi;
            let mut found = crate::runtime::agent::endpoint::refused_endpoints(
                &self.config,
                self.agent_sandbox.applied.as_str(),
                (abi > 0).then_some(abi),
            );
            found.retain(|e| !observed.iter().any(|(r, _)| e.starts_with(&r.sentence())));
            found
        };
        Ok(Attempt::Ran(Box::new(Ran {
            round_num,
            log_path,
            exit,
            dirty,
            post_round: consulted.decision,
            usage_reported: consulted.usage_reported,
            usage: consulted.usage,
            preset_cli: consulted.preset_cli,
            tree_changed,
            goal,
            egress_refused: observed,
            endpoints_refused,
        })))
    }

    /// The host-health gate: the critical reading that defers the round, if there is one
    /// (`round_deferred` at the start of an episode, `round_resumed` at its end).
    fn health_gate(&mut self) -> Option<Pressure> {
        let health = &self.config.monitor.host_health;
        if let Some(pressure) =
            host_health::assess(health, &Reading::take(&self.config.runtime.log_dir))
                .filter(|p| p.severity == "critical")
        {
            if self.unhealthy_since.is_none() {
                self.unhealthy_since = Some(std::time::Instant::now());
                self.events.emit(Event::RoundDeferred {
                    severity: pressure.severity.to_owned(),
                    signal: pressure.signal.to_owned(),
                    message: pressure.message.clone(),
                    defer_s: self.config.runtime.restart_delay.as_secs(),
                });
            }
            return Some(pressure);
        }
        if let Some(since) = self.unhealthy_since.take() {
            self.events.emit(Event::RoundResumed {
                deferred_for_s: (since.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            });
        }
        None
    }

    /// The pre-round hooks and context enrichers (docs/protocol.md §5.9): the round
    /// context with their enrichments merged, or the attempt's end (a stop, a skip).
    async fn ask_pre_round(
        &mut self,
        ctx: &Context,
        next: u64,
        started: &str,
        phase: Option<&str>,
        stop: &mut StopWatch,
    ) -> ControlFlow<Attempt, RoundContext> {
        let Some(pre) = pre_round::consult(
            &mut self.hosts,
            &self.config.plugins.spawn_override_allow,
            &self.events,
            ctx,
            self.config.profile(phase).disable_pre_round_hooks,
            stop,
        )
        .await
        else {
            return ControlFlow::Break(Attempt::Stopped);
        };
        if let Some((hook, reason)) = pre.skip {
            return ControlFlow::Break(Attempt::NotStarted(Verdict::Skip { hook, reason }));
        }
        let state_dir = &self.config.runtime.state_dir;
        let mut round_ctx = round_context::build(state_dir, &self.repo, next, started, phase).await;
        pre_round::merge(&mut round_ctx, pre);
        ControlFlow::Continue(round_ctx)
    }

    /// What the agent of round `next` is started with: the prompt (the round context
    /// prepended when `context_injection_mode = "prepend"`), argv and environment.
    fn launch(
        &self,
        next: u64,
        phase: Option<&str>,
        round_ctx: &RoundContext,
    ) -> Result<Launch, RoundError> {
        let profile = self.config.profile(phase);
        let prepend = (self.config.prompt.injection == ContextInjection::Prepend)
            .then(|| round_context::prepended(round_ctx))
            .transpose()
            .map_err(RoundError::RenderContext)?;
        let prompt = assemble(
            &self.config.prompt,
            profile.prompt_files,
            prepend.as_deref(),
            &self.prompt_links,
        )
        .map_err(RoundError::Prompt)?;
        if let Some((reason, fix)) =
            crate::runtime::agent::prompt::undeliverable(profile.agent, &prompt)
        {
            return Err(RoundError::Prompt(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{reason}; {fix}"),
            )));
        }
        let resume = self
            .sessions
            .as_ref()
            .and_then(|s| s.plan(profile.agent, phase.unwrap_or(""), self.fresh_eyes(next)));
        let resume_args = resume.as_ref().map(|r| r.args.as_slice()).unwrap_or(&[]);
        let mut env = self.agent_env(next, phase);
        env.extend(resume.iter().flat_map(Resume::env));
        let replaced = self.agent_sandbox.own_sandbox_replaced(profile.agent);
        let confined_agent;
        let (agent, own_sandbox) = match replaced {
            Some((command, replaced)) => {
                confined_agent = crate::config::AgentConfig {
                    command,
                    ..profile.agent.clone()
                };
                (&confined_agent, Some(replaced))
            }
            None => (profile.agent, None),
        };
        Ok(Launch {
            argv: agent_argv(agent, resume_args, &prompt, &self.config.runtime.work_dir),
            stdin_prompt: (profile.agent.delivery == PromptDelivery::Stdin).then_some(prompt),
            env,
            marker: profile.agent.terminal_marker.clone(),
            budget: profile.round_budget,
            stop_signal: crate::runtime::agent::cooperative::stop_signal(profile.agent),
            cli: profile.agent.cli.name,
            resume,
            own_sandbox,
        })
    }

    /// The spawn hooks (docs/protocol.md §5.1) on the spawn about to happen: go on, or the
    /// attempt's end (a stop, a defer, a skip).
    async fn ask_spawn_gate(
        &mut self,
        ctx: &Context,
        launch: &Launch,
        phase: Option<&str>,
        stop: &mut StopWatch,
    ) -> ControlFlow<Attempt> {
        let inherit = AllowList::of(&self.config, launch.cli);
        let env_names: BTreeSet<String> = std::env::vars_os()
            .filter(|(k, _)| inherit.as_ref().is_none_or(|list| list.passes(k)))
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .chain(launch.env.iter().map(|(k, _)| k.clone()))
            .collect();
        let env_names: Vec<String> = env_names.into_iter().collect();
        let spawn = SpawnView {
            argv: fit_list(
                &spawn_view_argv(self.config.profile(phase).agent),
                MAX_SPAWN_ARGV_BYTES,
            ),
            env_names: fit_list(&env_names, MAX_ENV_NAMES_BYTES),
        };
        let verdict = spawn_gate::consult(
            &mut self.hosts,
            &self.config.plugins.spawn_override_allow,
            &self.events,
            ctx,
            &spawn,
            stop,
        )
        .await;
        if *stop.borrow() >= StopLevel::Graceful {
            return ControlFlow::Break(Attempt::Stopped);
        }
        if verdict != Verdict::Proceed {
            return ControlFlow::Break(Attempt::NotStarted(verdict));
        }
        ControlFlow::Continue(())
    }

    /// Starts round `round_num` (its number already taken: [`state::next_round`]): the
    /// round context written, `round_start` (and `fresh_eyes_round_triggered`,
    /// `session_resumed`, `round_substrate_before`) recorded, `resume`'s id made the
    /// phase's session, old round logs pruned and the round's log created.
    async fn start_round(
        &mut self,
        round_num: u64,
        round_ctx: &RoundContext,
        started: &str,
        phase: Option<&str>,
        resume: Option<&Resume>,
        head: &Option<String>,
    ) -> Result<(PathBuf, File), RoundError> {
        let state_dir = &self.config.runtime.state_dir;
        if let Err(e) = round_context::write(&self.log_dir, round_ctx) {
            tracing::warn!("cannot write the round context: {e}");
        }
        if let Some(goal) = &self.config.goal {
            crate::runtime::steps::goal::assess(
                goal,
                state_dir,
                round_num,
                &self.events,
                &self.prompt_links,
            );
        }
        let label = config_digest::label(&self.config, phase, state_dir);
        let snapshot = label.snapshot;
        self.events.emit(Event::RoundStart {
            round_num,
            phase: phase.map(str::to_owned),
            config_digest: Some(label.digest),
            config_changed: Some(label.changed),
            config_prompt_files: snapshot.as_ref().map(|s| s.prompt_files.clone()),
            config_check_names: snapshot.as_ref().map(|s| s.check_names.clone()),
            config_vcs_dirty_action: snapshot.as_ref().map(|s| s.vcs_dirty_action.clone()),
            config_prompt_delivery: snapshot.map(|s| s.prompt_delivery),
        });
        if self.fresh_eyes(round_num) {
            self.events.emit(Event::FreshEyesRoundTriggered {
                round_num,
                every_n: self.config.runtime.fresh_eyes_every_n.unwrap_or(0),
            });
        }
        if let (Some(sessions), Some(resume)) = (self.sessions.as_mut(), resume) {
            sessions.started(phase.unwrap_or(""), resume);
            if let Some(renewal) = &resume.renewed {
                self.events.emit(Event::SessionRenewed {
                    session_id: resume.id.clone(),
                    old_session_id: renewal.old_id.clone(),
                    reason: renewal.reason.as_str().to_owned(),
                    rounds: renewal.rounds,
                    tokens: renewal.tokens,
                    age_s: renewal.age_s,
                    phase: phase.map(str::to_owned),
                    round_num,
                });
            }
            if resume.resuming {
                self.events.emit(Event::SessionResumed {
                    session_id: resume.id.clone(),
                    phase: phase.map(str::to_owned),
                    round_num,
                });
            }
        }
        self.substrate(round_num, false, head);
        let stamp: String = started[..19]
            .chars()
            .filter(|c| *c != '-' && *c != ':')
            .collect();
        // Through the log dir as it resolved at boot: a link the agent planted at the log
        // dir, above it, at `rounds` or at the new log's name is refused, never followed.
        let rounds = self
            .log_dir
            .child("rounds")
            .expect("`rounds` is one path component");
        let rounds_dir = rounds.shown().to_owned();
        let open = rounds
            .open()
            .map_err(|source| RoundError::CreateRoundsDir {
                dir: rounds_dir.clone(),
                source,
            })?;
        self.prune_round_logs(&rounds_dir, &open.at());
        let name = format!("R{round_num}-{stamp}.log");
        let log_path = rounds_dir.join(&name);
        let log = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(open.at().join(&name))
            .map_err(|source| RoundError::CreateLog {
                path: log_path.clone(),
                source,
            })?;
        Ok((log_path, log))
    }

    /// Runs the agent of round `round_num` under its budget, in a cgroup of its own when
    /// the supervisor's is delegated (`agent_spawn`, `agent_exit`, `round_cgroup_memory`,
    /// `round_oom_killed`; `agent_spawn_failed` and a `round_end` when it cannot start).
    /// The connects its sandbox refused are recorded in `egress` (and as
    /// `agent_egress_refused` events after `agent_exit`).
    /// While a `[budget]` cap is set, the output watches follow the round
    /// ([`crate::runtime::agent::usage_watch`]); what they saw goes to `watched`.
    async fn run_agent(
        &mut self,
        round_num: u64,
        phase: Option<&str>,
        launch: Launch,
        (log_path, log): (&Path, File),
        stop: &mut StopWatch,
        (egress, watched): (
            &mut EgressTally,
            &mut crate::runtime::agent::usage_watch::Watched,
        ),
    ) -> Result<AgentExit, RoundError> {
        let budget = launch.budget;
        let own_sandbox = launch.own_sandbox.clone();
        let mut spec = self.agent_spec(round_num, launch, log_path, log);
        let cli = self.config.profile(phase).agent.cli.name.unwrap_or("");
        let proxied = self.config.profile(phase).agent.allow_hosts.is_some();
        let agent_env = &self.config.profile(phase).agent.env;
        let upstream_proxies = || {
            UpstreamProxies::from_vars(|name| {
                agent_env
                    .get(name)
                    .cloned()
                    .or_else(|| std::env::var(name).ok())
            })
        };
        // The provider key kept with the supervisor: the agent gets placeholders and the
        // broker's base URLs (docs/security.md, "The key broker").
        let plan = key_broker::plan(&self.config, self.config.profile(phase).agent);
        let broker = key_broker::open(plan, proxied, upstream_proxies())
            .await
            .map_err(|source| self.spawn_failed(round_num, phase, source))?;
        // Behind the egress proxy the agent connects to its forwarder's port too; and to the
        // broker's ports, where it has them.
        let mut extra_ports = Vec::new();
        if self.egress_policy(phase).is_some() {
            extra_ports.push(agent_runner_plugin_host::agent::egress_bridge::PROXY_PORT);
        }
        if let Some(b) = &broker {
            extra_ports.extend(&b.ports);
            spec.env.extend(b.env.iter().cloned());
        }
        let proxy_port = extra_ports.as_slice();
        // Where the agent's CLI writes its reports: its own TMPDIR (ours when confined).
        let mut agent_tmp = spec
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "TMPDIR")
            .map(|(_, v)| PathBuf::from(v))
            .unwrap_or_else(std::env::temp_dir);
        let tree = self.tree_roots().await;
        let mut covered_links = Vec::new();
        match self.agent_sandbox.confinement(
            &self.config,
            &tree,
            cli,
            &spec.argv[0],
            &spec.env,
            proxy_port,
            self.egress_policy(phase).is_some(),
        ) {
            Ok(confinement) => {
                if let Some(c) = &confinement {
                    // A scan cut short is told once per round, before the spawn.
                    let scans = [
                        (
                            c.protected().scan_truncated,
                            "protected_copies",
                            agent_runner_plugin_host::agent::protected::SCAN_MAX_ENTRIES,
                        ),
                        (
                            c.withheld_truncated(),
                            "withheld_files",
                            agent_runner_plugin_host::agent::withheld_files::MAX_WITHHELD_FILES,
                        ),
                    ];
                    for (_, scan, limit) in scans.into_iter().filter(|(cut, ..)| *cut) {
                        self.events.emit(Event::AgentScanTruncated {
                            round_num,
                            scan: scan.to_owned(),
                            limit: limit as u64,
                        });
                    }
                    // A link at or on the way to a protected path is covered, never
                    // followed: recorded with the round's denials.
                    covered_links = c.protected().links();
                    spec.env
                        .push(("TMPDIR".to_owned(), c.tmp_dir().display().to_string()));
                    // What keeps the CLI's writes inside its shadow home (claude's
                    // CLAUDE_CONFIG_DIR); an operator's own value is left as it is.
                    for (name, value) in c.shadow_env() {
                        let named = spec.env.iter().any(|(k, _)| k == name)
                            || std::env::var_os(name).is_some();
                        if !named {
                            spec.env.push((name.clone(), value.clone()));
                        }
                    }
                    agent_tmp = c.tmp_dir().to_owned();
                }
                spec.confinement = confinement;
            }
            Err(e) => {
                let source = std::io::Error::other(e.to_string());
                return Err(self.spawn_failed(round_num, phase, source));
            }
        }
        let mut cgroup = self.round_cgroup(round_num);
        spec.cgroup_procs = cgroup.as_mut().and_then(RoundCgroup::take_procs);
        let mut refusals = None;
        if let Some(policy) = self.egress_policy(phase) {
            let handed = broker.as_ref().map(|b| (b.broker.clone(), b.ports.clone()));
            let (bridge, rx) = egress_proxy::open(policy, upstream_proxies(), handed)
                .map_err(|source| self.spawn_failed(round_num, phase, source))?;
            spec.egress = Some(bridge);
            refusals = Some(rx);
        }
        if let Some(r) = own_sandbox {
            self.events.emit(Event::AgentOwnSandboxReplaced {
                round_num,
                cli: r.cli,
                removed: r.removed,
                added: r.added,
                reason: r.reason.to_owned(),
            });
        }
        self.events.emit(Event::AgentSpawn {
            round_num,
            timeout_s: budget.as_secs(),
            log_path: log_path.to_owned(),
        });
        let spawned = SystemTime::now();
        let watched_broker = broker.as_ref().map(|b| b.broker.clone());
        let exit = match self.usage_watch(round_num, phase, log_path, watched_broker) {
            Some(watch) => {
                let (crossed, over_budget) = tokio::sync::oneshot::channel();
                spec.budget_stop = Some(over_budget);
                let (ended, agent_gone) = tokio::sync::oneshot::channel();
                let agent = async {
                    let exit = agent::run(spec, stop).await;
                    let _ = ended.send(());
                    exit
                };
                let (exit, seen) =
                    tokio::join!(agent, watch.run(&mut self.hosts, agent_gone, crossed));
                *watched = seen;
                exit
            }
            None => agent::run(spec, stop).await,
        };
        crate::runtime::agent::cli_reports::keep(
            self.config.profile(phase).agent.cli.name,
            &agent_tmp,
            spawned - std::time::Duration::from_secs(1),
            log_path,
        );
        let usage = match cgroup {
            Some(cg) => Some(cg.finish().await),
            None => None,
        };
        self.agent_ran = Some(AgentRan {
            from: spawned,
            to: SystemTime::now(),
            config_read_only: self.agent_sandbox.config_read_only(),
        });
        let mut exit = exit.map_err(|source| self.spawn_failed(round_num, phase, source))?;
        // The agent process itself killed by the kernel inside its cgroup (what
        // `round_oom_killed.agent_killed` says).
        exit.oom_killed = usage
            .as_ref()
            .is_some_and(|u| u.oom_kills > 0 && exit.signal == Some(libc::SIGKILL));
        self.record_exit(round_num, &exit, budget);
        if let Some(mut rx) = refusals {
            while let Ok(r) = rx.try_recv() {
                egress.record(r);
            }
        }
        self.billed = Default::default();
        if let Some(mut b) = broker {
            while let Ok(r) = b.refusals.try_recv() {
                egress.record(r);
            }
            self.billed = b.broker.take_billed();
        }
        // A port Landlock refuses is told with its fix (not behind `allow_hosts`, whose fix
        // is an entry the proxy's refusals and the endpoint's diagnosis name); an allowed
        // port out of the agent's own network namespace has no route, told as such.
        let own_network = self.egress_policy(phase).is_some();
        let open_ports: Vec<u16> = agent_runner_plugin_host::agent::policy::DEFAULT_CONNECT_PORTS
            .iter()
            .chain(&self.config.agent_sandbox.connect_ports)
            .chain(proxy_port)
            .copied()
            .collect();
        for address in &exit.landlock_connects {
            if !open_ports.contains(&address.port()) {
                if self.config.profile(phase).agent.allow_hosts.is_none() {
                    egress.record(EgressRefusal::landlock(
                        &address.ip().to_string(),
                        address.port(),
                    ));
                }
            } else if own_network && !address.ip().is_loopback() {
                egress.record(EgressRefusal::unrouted(*address));
            }
        }
        for event in egress.events(round_num) {
            self.events.emit(event);
        }
        let mut tally = DenialTally::default();
        for target in &exit.seccomp_denials {
            tally.add("seccomp", target.clone(), "syscall");
        }
        for (call, path) in &exit.landlock_writes {
            tally.add("landlock", path.display().to_string(), call);
        }
        for path in &exit.landlock_reads {
            tally.add("landlock", path.display().to_string(), "read");
        }
        for link in &covered_links {
            tally.add("protected_paths", link.display().to_string(), "link");
        }
        for event in tally.into_events(round_num) {
            self.events.emit(event);
        }
        if let Some(usage) = usage {
            let agent = &self.config.profile(phase).agent.command[0];
            self.record_cgroup(round_num, agent, &exit, usage);
        }
        Ok(exit)
    }

    /// The round's usage watch: `None` without a cap ([`Runner::round_cap`]) or without
    /// either an output watch that applies to the round's CLI (a built-in one only to its
    /// own CLI, as the built-in detectors) or the round's key `broker`, whose reading of
    /// what the provider billed counts too.
    fn usage_watch(
        &self,
        round_num: u64,
        phase: Option<&str>,
        log_path: &Path,
        broker: Option<std::sync::Arc<key_broker::KeyBroker>>,
    ) -> Option<crate::runtime::agent::usage_watch::UsageWatch> {
        let cap = self.round_cap.clone().filter(|c| c.any())?;
        let cli = self.config.profile(phase).agent.cli.name;
        let hooks: Vec<_> = self
            .hosts
            .hooks(Family::OutputWatch)
            .into_iter()
            .filter(|hook| {
                !self.hosts.is_builtin(hook)
                    || crate::detectors::DIALECTS.iter().any(|d| {
                        Some(d.binary) == cli
                            && crate::detectors::watch::watch_name(d) == hook.name.as_str()
                    })
            })
            .collect();
        if hooks.is_empty() && broker.is_none() {
            return None;
        }
        Some(crate::runtime::agent::usage_watch::UsageWatch {
            hooks,
            ctx: self.context(round_num, phase, Some(log_path.display().to_string())),
            log_path: log_path.to_owned(),
            cap,
            table: crate::budget::prices::PriceTable::new(&self.config.budget.prices),
            events: self.events.clone(),
            broker,
        })
    }

    /// `agent_usage_recorded` from what the output watches saw of round `round_num`, for a
    /// round no post-round hook reported usage for (an agent stopped for its budget before
    /// its CLI printed its final record): its spend still counts against the caps.
    fn record_watched(
        &self,
        round_num: u64,
        phase: Option<&str>,
        watched: crate::runtime::agent::usage_watch::Watched,
    ) {
        let Some((hook, usage, _)) = watched.usage else {
            return;
        };
        let agent = &self.config.profile(phase).agent;
        let binary = agent.command[0].rsplit('/').next().unwrap_or("");
        let model = usage
            .model
            .as_deref()
            .map(agent_runner_protocol::redact::redact_and_cap)
            .filter(|m| !m.is_empty());
        self.events.emit(Event::AgentUsageRecorded {
            round_num,
            hook: hook.to_string(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_tokens: usage.cache_read_tokens,
            cache_write_tokens: usage.cache_write_tokens,
            cost_usd: usage.cost_usd,
            agent: agent.cli.name.unwrap_or(binary).to_owned(),
            model: model.unwrap_or_else(|| "unknown".to_owned()),
            cached_tokens: usage.cache_read_tokens.unwrap_or(0),
            usage_scope: post_round::USAGE_SCOPE.to_owned(),
            from_session_totals: Vec::new(),
            source: "cli".into(),
            reported_cost_usd: None,
            reported_tokens: None,
            underreported: false,
        });
    }

    /// `agent_spawn_failed` and a `round_end` for an agent that could not start; the
    /// round's error.
    fn spawn_failed(
        &self,
        round_num: u64,
        phase: Option<&str>,
        source: std::io::Error,
    ) -> RoundError {
        let err = RoundError::StartAgent {
            command: self.config.profile(phase).agent.command[0].clone(),
            source,
        };
        self.events.emit(Event::AgentSpawnFailed {
            round_num,
            error: err.to_string(),
        });
        self.events.emit(Event::RoundEnd(RoundEnd::NotStarted {
            round_num,
            outcome: RoundOutcome::SpawnFailed,
        }));
        err
    }

    /// Records how the agent of round `round_num` ended: `agent_exit`, and after a budget
    /// kill `round_timeout_kill` (the reference system's kind).
    fn record_exit(&self, round_num: u64, exit: &AgentExit, budget: std::time::Duration) {
        self.events.emit(Event::AgentExit {
            round_num,
            exit_code: exit.exit_code,
            signal: exit.signal,
            duration_s: (exit.duration.as_secs_f64() * 1000.0).round() / 1000.0,
            timed_out: matches!(
                exit.cause,
                agent::ExitCause::Timeout | agent::ExitCause::GraceKill
            ),
            exit_cause: exit.cause.as_str().to_owned(),
        });
        if exit.cause == agent::ExitCause::Timeout {
            self.events.emit(Event::RoundTimeoutKill {
                round_num,
                reason: format!("exceeded round_budget_s={}", budget.as_secs()),
            });
        }
    }

    /// How the agent of round `round_num` runs: `launch`, its round log, the host-health
    /// floor, the hosts' pids spared by the orphan reaper, result grace (no cgroup yet).
    fn agent_spec(&self, round_num: u64, launch: Launch, log_path: &Path, log: File) -> AgentSpec {
        AgentSpec {
            log_cap: self.config.runtime.round_log_max_bytes,
            argv: launch.argv,
            env: launch.env,
            inherit: AllowList::of(&self.config, launch.cli),
            work_dir: self.config.runtime.work_dir.clone(),
            log,
            stdin_prompt: launch.stdin_prompt,
            budget: launch.budget,
            stop_signal: launch.stop_signal,
            floor: Some(Floor {
                cfg: self.config.monitor.host_health.clone(),
                events: self.events.clone(),
                round_num,
                brake: crate::runtime::machine::memory_brake::Brake::of(
                    &self.config.monitor.host_health,
                    self.cgroups.as_ref(),
                ),
                nudge_signal: launch.stop_signal.signal,
                nudged: Default::default(),
            }),
            spare: self
                .hosts
                .states()
                .into_iter()
                .filter_map(|(_, _, pid)| pid)
                .collect(),
            grace: self.grace(
                launch.marker.as_bytes(),
                crate::runtime::agent::grace::Stall::of(launch.cli, launch.stop_signal),
                round_num,
                log_path,
            ),
            progress: self.config.monitor.round_progress_interval.map(|every| {
                crate::runtime::agent::round_progress::Heartbeat {
                    every,
                    log_path: log_path.to_owned(),
                    events: self.events.clone(),
                    round_num,
                }
            }),
            cgroup_procs: None,
            egress: None,
            budget_stop: None,
            confinement: None,
        }
    }

    /// `round_log_capped` when the agent wrote more than `round_log_max_bytes`.
    fn note_log_cap(&self, round_num: u64, exit: &AgentExit, log_path: &Path) {
        if exit.log.discarded > 0 {
            self.events.emit(Event::RoundLogCapped {
                round_num,
                log_path: log_path.to_owned(),
                cap_bytes: self.config.runtime.round_log_max_bytes,
                discarded_bytes: exit.log.discarded,
            });
        }
    }

    /// After a clean exit: the files the round left dirty (`after`, what `baseline` found
    /// before it is the operator's) go to the dirty handlers, with the branch `after` saw;
    /// `None` when the round left none.
    async fn handle_dirt(
        &mut self,
        round_num: u64,
        phase: Option<&str>,
        baseline: &Baseline,
        after: Result<Look, GitError>,
        log_path: &Path,
        stop: &mut StopWatch,
    ) -> Option<Outcome> {
        if self.git == Git::Absent {
            return None;
        }
        let (files, branch) = match after {
            Ok(look) => (look.files, look.branch),
            Err(err) => {
                self.events.emit(Event::DirtyCheckFailed {
                    round_num,
                    error: err.to_string(),
                });
                return None;
            }
        };
        let split = baseline.split(&self.config.runtime.work_dir, files);
        for path in split.nested.iter().take(dirty::MAX_LISTED_FILES) {
            self.events.emit(dirty::submodule_skipped(round_num, path));
        }
        if split.round.is_empty() {
            return (!split.nested.is_empty()).then_some(Outcome::Ignored);
        }
        if let Some(found) = git_operation::in_progress(&self.config.runtime.work_dir) {
            self.events.emit(Event::GitOperationInProgress {
                round_num,
                operation: found.operation.name().to_owned(),
                marker: found.marker,
                file_count: split.round.len(),
                what_to_do: found.operation.what_to_do(),
            });
            return Some(Outcome::Ignored);
        }
        let ctx = self.context(round_num, phase, Some(log_path.display().to_string()));
        let round = DirtyRound {
            config: &self.config,
            repo: &self.repo,
            events: &self.events,
            ctx: &ctx,
            attribution: &split,
            branch,
        };
        Some(dirty::handle(&round, &mut self.hosts, &split.round, stop).await)
    }

    /// The repository's config files before the agent runs ([`ConfigBefore::record`]),
    /// and those of the repositories nested in the tree ([`ConfigBefore::record_nested`]:
    /// `untracked`, the untracked ones the `git status` before the round listed); `None`
    /// outside git or when git cannot tell (nothing is then reverted: the supervisor's own
    /// git still runs none of its programs).
    async fn record_config(
        &mut self,
        round_num: u64,
        untracked: &[Vec<u8>],
    ) -> Option<ConfigBefore> {
        if self.git != Git::WorkTree {
            return None;
        }
        self.settle().await;
        // A round whose supervisor was killed before it could revert: reverted now,
        // against its own record (kept in the state dir, out of the agent's reach).
        let pending = self
            .config
            .runtime
            .state_dir
            .join(git_config_watch::PENDING_FILE);
        if let Ok(Some(stale)) = state::read_json::<git_config_watch::Pending>(&pending) {
            let reverted = self
                .revert_config(stale.round_num, Some(&stale.before))
                .await;
            self.revert_nested_configs(stale.round_num, Some(stale.before), untracked, reverted)
                .await;
            // Its record renamed before this round's is written under the same name.
            self.settle().await;
        }
        if self.config_before.is_empty() {
            // This process's first round: the last round's record, kept in the state dir.
            self.config_before = ConfigBefore::last_seen(&self.config.runtime.state_dir);
        }
        match ConfigBefore::record(&self.repo, &self.config_before).await {
            Ok(mut record) => {
                if let Err(err) = record
                    .record_nested(&self.repo, &self.config_before, untracked)
                    .await
                {
                    tracing::warn!(
                        "cannot record the nested repositories' config before the round: {err}"
                    );
                }
                self.config_before = record.clone();
                let kept = git_config_watch::Pending {
                    round_num,
                    before: record.clone(),
                };
                if let Err(e) = state::write_json_atomic(&pending, &kept) {
                    tracing::warn!(
                        "cannot keep the repository's config before the round in {}: {e}",
                        pending.display()
                    );
                }
                Some(record)
            }
            Err(err) => {
                tracing::warn!("cannot record the repository's config before the round: {err}");
                None
            }
        }
    }

    /// Reverts the watched keys round `round_num` added or changed in the repository's
    /// config (`before`: [`Runner::record_config`]), one `git_config_reverted` each
    /// ([`Runner::tell_reverted`]). Returns whether the config could be checked.
    async fn revert_config(&self, round_num: u64, before: Option<&ConfigBefore>) -> bool {
        let Some(before) = before else { return false };
        match git_config_watch::revert(&self.repo, before).await {
            Ok(told) => {
                self.tell_reverted(round_num, told);
                true
            }
            Err(err) => {
                tracing::warn!(
                    "cannot check the repository's config after round {round_num}: {err}"
                );
                false
            }
        }
    }

    /// Reverts the watched keys round `round_num` added or changed in the config of the
    /// repositories nested in the tree ([`git_config_watch::revert_nested`]; `untracked`:
    /// those the `git status` after the round listed), one `git_config_reverted` each;
    /// then, when the top's was checked too (`top_reverted`), the record before the round
    /// is done with: kept as the next process's `last` (git_config_watch::SEEN_FILE).
    async fn revert_nested_configs(
        &mut self,
        round_num: u64,
        before: Option<ConfigBefore>,
        untracked: &[Vec<u8>],
        top_reverted: bool,
    ) {
        let Some(before) = before else { return };
        match git_config_watch::revert_nested(&self.repo, &before, untracked).await {
            Ok(told) => self.tell_reverted(round_num, told),
            Err(err) => tracing::warn!(
                "cannot check the nested repositories' config after round {round_num}: {err}"
            ),
        }
        if top_reverted {
            let state_dir = self.config.runtime.state_dir.clone();
            self.write_behind(move || {
                let pending = state_dir.join(git_config_watch::PENDING_FILE);
                if std::fs::rename(&pending, state_dir.join(git_config_watch::SEEN_FILE)).is_err() {
                    let _ = std::fs::remove_file(pending);
                }
            });
        }
    }

    /// One `git_config_reverted` for each of `told` (the first
    /// [`dirty::MAX_LISTED_FILES`], the last counting the rest).
    fn tell_reverted(&self, round_num: u64, told: Vec<git_config_watch::Reverted>) {
        let shown = told.len().min(dirty::MAX_LISTED_FILES);
        let more = told.len() - shown;
        for (i, r) in told.into_iter().take(shown).enumerate() {
            self.events.emit(Event::GitConfigReverted {
                round_num,
                key: r.key,
                scope: r.scope.to_owned(),
                file: r.file,
                value: r.value,
                action: r.action.to_owned(),
                why: r.why.to_owned(),
                error: r.error,
                more_keys: (i + 1 == shown && more > 0).then_some(more),
            });
        }
    }

    /// Keeps what round `round_num`'s agent (or its checks) changed that the supervisor
    /// refuses — the config replaced or written, the log dir or a prompt file that now
    /// leads elsewhere through a link, a check file rewritten — out of the agent's reach,
    /// so the next boot refuses it too ([`crate::record::agent_changes`]).
    fn hold_agent_changes(&mut self, round_num: u64) {
        // Held across boots only where the agent was confined: unconfined (`mode =
        // "off"`), it could rewrite the record as well, and every save of the operator's
        // during a round would be held.
        let confined = self.agent_ran.is_some_and(|ran| ran.config_read_only);
        if let Some(why) = config_path::agent_could_have(
            &self.config.path,
            &self.config.runtime.work_dir,
            &self.config_entries,
            self.agent_ran,
        )
        .filter(|_| confined)
        {
            tracing::warn!("round {round_num}: {why}: the config is untrusted until saved again, at every start too");
            agent_changes::hold_config(&self.config.path, round_num);
        }
        let state_dir = self.config.runtime.state_dir.clone();
        let log_dir = self.config.runtime.log_dir.clone();
        if self.log_dir.moved() && self.agent_changes.held(Kind::LogDir, &log_dir).is_none() {
            if let Some(left) = agent_changes::link_identity(&log_dir) {
                self.agent_changes.hold(
                    &state_dir,
                    Change {
                        kind: Kind::LogDir,
                        path: log_dir,
                        left,
                        round_num,
                    },
                );
            }
        }
        for path in prompt_files(&self.config) {
            if self.prompt_links.check(&path).is_ok()
                || self.agent_changes.held(Kind::PromptLink, &path).is_some()
            {
                continue;
            }
            if let Some(left) = agent_changes::link_identity(&path) {
                tracing::warn!(
                    "round {round_num}: {} now leads elsewhere through a link: refused from now on",
                    path.display()
                );
                self.agent_changes.hold(
                    &state_dir,
                    Change {
                        kind: Kind::PromptLink,
                        path,
                        left,
                        round_num,
                    },
                );
            }
        }
        let Some(goal) = &self.config.goal else {
            return;
        };
        let rewritten: Vec<PathBuf> = goal
            .checks
            .iter()
            .flat_map(|check| self.check_files.changed(check))
            .collect();
        for path in rewritten {
            let left = agent_changes::content_identity(&path);
            if self
                .agent_changes
                .held(Kind::GoalCheck, &path)
                .is_some_and(|c| c.left == left)
            {
                continue;
            }
            self.agent_changes.hold(
                &state_dir,
                Change {
                    kind: Kind::GoalCheck,
                    path,
                    left,
                    round_num,
                },
            );
        }
    }

    /// The index's marks ([`Repo::index_marks`]) with the flags that hide a file cleared
    /// ([`Repo::clear_hiding_flags`]: an exec-surface file's, and with `before` — the marks
    /// before the agent ran — any file's the round set), and the paths cleared. Outside
    /// git, or in a repository that changed since boot (its git is refused), none; a
    /// failure is logged (the look after it tells a broken index).
    async fn unhide(&self, before: Option<&Marks>) -> (Option<Marks>, Vec<String>) {
        if self.git == Git::Absent || self.repo.changed().is_some() {
            return (None, Vec::new());
        }
        let mut marks = match self.repo.index_marks().await {
            Ok(marks) => marks,
            Err(err) => {
                tracing::warn!("cannot read the index's flags: {err}");
                return (None, Vec::new());
            }
        };
        match self.repo.clear_hiding_flags(before, &mut marks).await {
            Ok(cleared) => (Some(marks), cleared),
            Err(err) => {
                tracing::warn!(
                    "cannot clear the index flags that hide files from git status: {err}"
                );
                (Some(marks), Vec::new())
            }
        }
    }

    /// `git_index_flags_cleared` for `paths` and an index set aside by the reads since the
    /// last call ([`Repo::take_index_set_aside`]), one event each (none: nothing recorded).
    fn unhidden(&self, round_num: u64, paths: Vec<String>) {
        for index_set_aside in self.repo.take_index_set_aside() {
            self.events.emit(Event::GitIndexFlagsCleared {
                round_num,
                path_count: 0,
                paths: Vec::new(),
                index_set_aside: Some(index_set_aside),
            });
        }
        if paths.is_empty() {
            return;
        }
        self.events.emit(Event::GitIndexFlagsCleared {
            round_num,
            path_count: paths.len(),
            paths: paths.into_iter().take(dirty::MAX_LISTED_FILES).collect(),
            index_set_aside: None,
        });
    }

    /// `exec_surface_changed` when round `round_num` changed files of the exec surface:
    /// the round's dirt among them (`after`, less what `baseline` holds as the
    /// operator's), what the agent's own commits changed (`heads`: `HEAD` before and
    /// after the agent), and the files at the top that changed since the round `began`
    /// but that git shows in neither ([`exec_surface::changed_unseen`]: ignored).
    async fn exec_surface(
        &self,
        round_num: u64,
        (baseline, began): (&Baseline, SystemTime),
        after: &Result<Look, GitError>,
        (head_before, head_after): (&Option<String>, &Option<String>),
    ) {
        let Ok(look) = after else { return };
        let work_dir = &self.config.runtime.work_dir;
        let mut paths = baseline
            .split(work_dir, exec_surface::of(&look.files))
            .round;
        let mut seen = look.files.clone();
        if let Some(head) = head_after
            .as_deref()
            .filter(|h| Some(*h) != head_before.as_deref())
        {
            match self
                .repo
                .changed_between(head_before.as_deref(), head)
                .await
            {
                Ok(committed) => {
                    paths.extend(exec_surface::of(&committed));
                    seen.extend(committed);
                }
                Err(err) => tracing::warn!("cannot list what the agent's commits changed: {err}"),
            }
        }
        paths.extend(exec_surface::changed_unseen(work_dir, began, &seen));
        paths.sort();
        paths.dedup();
        if paths.is_empty() {
            return;
        }
        let committed = self.config.vcs.commit_exec_surface;
        let whys = exec_surface::whys(&paths).join("; ");
        let what_to_do = if committed {
            format!("review them before the next push or before opening the tree in an editor ({whys}); `[vcs] commit_exec_surface = true` lets the supervisor's commit take them")
        } else {
            format!("review them before the next push or before opening the tree in an editor ({whys}); the supervisor's commit leaves those still uncommitted in the tree for you: `git diff`, then commit them yourself (`[vcs] commit_exec_surface = true` commits them with the rest)")
        };
        self.events.emit(Event::ExecSurfaceChanged {
            round_num,
            path_count: paths.len(),
            paths: paths.into_iter().take(dirty::MAX_LISTED_FILES).collect(),
            committed,
            what_to_do,
        });
    }

    /// Runs `write` (a write to the state dir, which logs its own failure) on the runtime's
    /// blocking pool, so its `fsync` and `rename` overlap the git process the loop waits
    /// on; [`Runner::settle`] waits for it.
    fn write_behind(&mut self, write: impl FnOnce() + Send + 'static) {
        self.writes_behind.push(tokio::task::spawn_blocking(write));
    }

    /// Waits for every write left to the blocking pool ([`Runner::write_behind`]).
    async fn settle(&mut self) {
        for write in std::mem::take(&mut self.writes_behind) {
            if let Err(e) = write.await {
                tracing::warn!("a write to the state dir did not finish: {e}");
            }
        }
    }

    /// Records `round_end` (the dirty outcome, the branch `HEAD` is on, the log's last
    /// lines after a failed run); `state.json`'s previous round is written before it.
    fn end_round(
        &self,
        round_num: u64,
        exit: &AgentExit,
        (dirty, branch): (Option<&Outcome>, Option<String>),
        log_path: &Path,
    ) {
        let failed = !exit.is_clean() && exit.cause != agent::ExitCause::Stopped;
        self.events.emit(Event::RoundEnd(RoundEnd::Ran {
            round_num,
            exit_code: exit.exit_code,
            exit_cause: exit.cause.as_str().to_owned(),
            dirty_outcome: dirty.map(|d| d.as_str().to_owned()),
            branch,
            log_tail: failed.then(|| log_tail(log_path, TAIL_LINES, TAIL_CHARS)),
        }));
    }

    /// The cgroup of round `round_num`, when the supervisor's cgroup is delegated; a
    /// failure to make it is logged and the round runs in the supervisor's cgroup.
    fn round_cgroup(&self, round_num: u64) -> Option<RoundCgroup> {
        let limits = round_cgroup::Limits::of(&self.config.monitor.host_health);
        match self.cgroups.as_ref()?.create(round_num, limits) {
            Ok(cg) => Some(cg),
            Err(e) => {
                tracing::warn!(
                    "round {round_num} runs in the supervisor's cgroup: cannot make its own: {e}"
                );
                None
            }
        }
    }

    /// `round_oom_killed` (when the kernel killed inside the round's cgroup) and
    /// `round_cgroup_memory` for a round that ran in its own cgroup.
    fn record_cgroup(
        &self,
        round_num: u64,
        agent: &str,
        exit: &AgentExit,
        usage: round_cgroup::Usage,
    ) {
        if usage.oom_kills > 0 {
            self.events.emit(Event::RoundOomKilled {
                round_num,
                agent: agent.to_owned(),
                agent_killed: exit.signal == Some(libc::SIGKILL),
                oom_kills: usage.oom_kills,
                max_bytes: usage.limits.max,
            });
        }
        self.events.emit(Event::RoundCgroupMemory {
            round_num,
            layout: usage.layout.as_str().to_owned(),
            cgroup: usage.dir.display().to_string(),
            peak_bytes: usage.peak_bytes,
            high_bytes: usage.limits.high,
            max_bytes: usage.limits.max,
        });
    }

    /// Asks the post-round hooks about the round that just ended (its log's last
    /// [`MAX_LOG_TAIL_BYTES`] bytes, read here as bytes only: parsing them is the confined
    /// detectors' job). `session`: the agent session the round started or resumed.
    async fn judge(
        &mut self,
        round_num: u64,
        phase: Option<&str>,
        (exit, duration_s): (&AgentExit, f64),
        log_path: &Path,
        session: Option<&Resume>,
        stop: &mut StopWatch,
    ) -> post_round::Consulted {
        let billed = std::mem::take(&mut self.billed);
        let billed = billed.seen().then(|| {
            billed.priced(&crate::budget::prices::PriceTable::new(
                &self.config.budget.prices,
            ))
        });
        if self.hosts.hooks(Family::PostRound).is_empty() && billed.is_none() {
            return post_round::Consulted {
                decision: Decision::Continue,
                usage_reported: false,
                tokens: None,
                usage: None,
                preset_cli: false,
            };
        }
        let log_tail = match read_end(log_path, MAX_LOG_TAIL_BYTES as u64) {
            Ok(bytes) => agent_runner_protocol::tail::log_tail(&bytes),
            Err(e) => {
                tracing::warn!("cannot read the end of {}: {e}", log_path.display());
                String::new()
            }
        };
        let ctx = self.context(round_num, phase, Some(log_path.display().to_string()));
        let outcome = agent_runner_protocol::RoundOutcome {
            round_num,
            phase: phase.map(str::to_owned),
            exit_code: exit.exit_code,
            signal: exit.signal,
            exit_cause: exit.cause.as_str().to_owned(),
            duration_s,
            timed_out: exit.cause == agent::ExitCause::Timeout,
        };
        let judged = Judged {
            ctx: &ctx,
            outcome: &outcome,
            log_tail: &log_tail,
            cli: self.config.profile(phase).agent.cli.name,
            session,
            billed: post_round::BrokerBill(billed),
        };
        post_round::consult(
            &mut self.hosts,
            &mut self.session_usage,
            &self.config.monitor,
            &self.config.plugins.spawn_override_allow,
            &self.events,
            &judged,
            stop,
        )
        .await
    }

    /// Polls the detectors after round `round_num` (docs/protocol.md §5.6) with the
    /// project's `state`; returns the alert that stops `serve`, if one does.
    pub(crate) async fn poll_detectors(
        &mut self,
        round_num: u64,
        state: &ProjectState,
        stop: &mut StopWatch,
    ) -> Option<AutoStop> {
        let phase = self.config.phase_for_round(round_num).map(str::to_owned);
        let ctx = self.context(round_num, phase.as_deref(), None);
        detect_hooks::poll(
            &mut self.hosts,
            &self.config.monitor,
            &self.events,
            &ctx,
            state,
            stop,
        )
        .await
    }

    /// The tree before the agent starts (`before`; docs/configuration.md, "Dirt
    /// attribution"): what is dirty then is the operator's, recorded as `dirty_before_round`, except a
    /// submodule with changes inside ([`attribution::nested_repository`]), which is
    /// nobody's. A failed look records nothing and attributes everything after the round
    /// to the round.
    fn baseline(&self, round_num: u64, before: Result<Look, GitError>) -> Baseline {
        match before.map(|look| look.files) {
            Ok(mut files) => {
                let work_dir = &self.config.runtime.work_dir;
                files.retain(|f| !attribution::nested_repository(work_dir, f));
                if !files.is_empty() {
                    self.events.emit(Event::DirtyBeforeRound {
                        round_num,
                        files: files.iter().take(dirty::MAX_LISTED_FILES).cloned().collect(),
                        file_count: files.len(),
                        reason: "dirty before the agent started: the operator's work, left alone unless the round changes it".to_owned(),
                    });
                }
                Baseline::take(
                    &self.config.runtime.work_dir,
                    &files,
                    &self.config.runtime.state_dir,
                )
            }
            Err(err) => {
                self.events.emit(Event::DirtyCheckFailed {
                    round_num,
                    error: err.to_string(),
                });
                Baseline::default()
            }
        }
    }

    /// Applies `round_log_retention` and `round_log_retention_bytes` before a new round
    /// log is created, keeping room for it (one log fewer; its cap of bytes fewer), to the
    /// round logs of `rounds_dir` (so named in events), reached by `at` (the open
    /// directory: [`crate::held_dir::OpenDir::at`]).
    fn prune_round_logs(&self, rounds_dir: &Path, at: &Path) {
        let rt = &self.config.runtime;
        let keep = rt.round_log_retention;
        let keep_bytes = (rt.round_log_retention_bytes > 0).then(|| {
            rt.round_log_retention_bytes
                .saturating_sub(rt.round_log_max_bytes)
        });
        if keep == 0 && keep_bytes.is_none() {
            return;
        }
        match retention::prune(at, (keep > 0).then(|| keep - 1), keep_bytes) {
            Ok(deleted) if deleted.is_empty() => {}
            Ok(deleted) => self.events.emit(Event::RoundLogsPruned {
                directory: rounds_dir.to_owned(),
                keep,
                deleted: deleted.len(),
                files: deleted
                    .iter()
                    .filter_map(|p| p.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .collect(),
            }),
            Err(e) => tracing::warn!("cannot prune round logs in {}: {e}", rounds_dir.display()),
        }
    }
}

/// The last `max` bytes of the file at `path`.
fn read_end(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let mut file = tree_file::open_regular(path, tree_file::Symlink::Refuse)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(max)))?;
    let mut bytes = Vec::with_capacity(max.min(len) as usize);
    file.take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}
