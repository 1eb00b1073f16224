//! `peek`: one look at a project, for a person (a short summary) or a script (`--json`,
//! the reference system's document plus our `hosts` block; schema in
//! `docs/schema/peek.schema.json`, fields in `docs/operations.md`).
//!
//! Read-only: it reads the config, `service.json`, the lock file's pid, the state files,
//! the tail of the event record and round logs, and hashes host executables for their pin
//! status. It never writes, never takes the lock, never starts a host, and works when
//! `log_dir` does not exist yet.

use agent_runner_plugin_host::common::probe::probe;
use agent_runner_protocol::Family;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::config::Config;
use crate::exit::CliError;
use crate::hosts::check_pin;
use crate::hosts::sandbox::SandboxGate;
use crate::operator::defenses::Defense;
use crate::operator::doctor::{
    agent_sandbox_block, covered_families, sandbox_block, AgentSandboxBlock, HostCover,
    SandboxBlock,
};
use crate::operator::install::{project_file, Scope};
use crate::operator::schedule_view::{self, PeekSchedule};
use crate::operator::system_metrics::{self, SystemMetrics};
use crate::record::events::recent::{
    self, Wanted, RECENT_BLIPS, RECENT_HOOK_FAILURES, RECENT_ROUNDS,
};
use crate::record::events::Recorded;
use crate::record::rounds::{self, RoundDoc, RoundView};
use crate::record::service::{self, CurrentRound, ServiceDoc};
use crate::record::state::{self, OrphanState, RoundState};
use crate::runtime::git::operation as git_operation;
use crate::runtime::machine::round_cgroup;

/// The document's `schema_version`: the newest of the reference system's (`"2.6"`, 0.3.14)
/// whose every key this document carries with its type. It also carries every key of
/// `"2.2"` (0.3.2), which 2.6 dropped with the reference's plugin layer, and ours under
/// keys neither uses (docs/reference-system.md, "peek's schema_version"). Fields are only
/// added within a version.
pub(crate) const SCHEMA_VERSION: &str = "2.6";

/// Recent events shown by default (`--events N` changes it).
pub(crate) const DEFAULT_EVENTS: usize = 20;
/// The end of a round log shown as `log_tail`, in bytes.
pub(crate) const LOG_TAIL_BYTES: usize = 4096;

/// Which round `--round` asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RoundSel {
    /// The newest round recorded.
    Latest,
    /// Round N.
    Num(u64),
}

impl std::str::FromStr for RoundSel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "latest" {
            return Ok(RoundSel::Latest);
        }
        s.parse()
            .map(RoundSel::Num)
            .map_err(|_| format!("expected a round number or `latest`, got {s:?}"))
    }
}

/// What one look shows.
#[derive(Clone, Debug, Default)]
pub(crate) struct PeekOptions {
    /// Add a `round` block for this round.
    pub round: Option<RoundSel>,
    /// How many recent events to include (`None`: [`DEFAULT_EVENTS`]).
    pub events: Option<usize>,
}

/// `peek --json` (schema: `docs/schema/peek.schema.json`, fields: `docs/operations.md`,
/// "peek --json"): the reference system's document (schemas 2.2 and 2.6, every key with its type),
/// then ours (`hosts`, `skipped_event_lines`, `round`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::record::schema_fields::require(s, &["current_round", "orphan", "schedule", "budget"]))]
pub(crate) struct PeekDoc {
    /// Always `2.6` ([`SCHEMA_VERSION`]), the newest reference schema whose every key it
    /// carries; fields are only added within a version.
    #[schemars(extend("const" = "2.6"))]
    pub schema_version: String,
    /// The project's name.
    pub project: String,
    /// The config file.
    pub config: PathBuf,
    /// The log dir.
    pub log_dir: PathBuf,
    /// The state dir: lock, events, state (docs/operations.md, "State dir").
    pub state_dir: PathBuf,
    /// Rounds at a glance.
    pub status: PeekStatus,
    /// Plugin settings and confinement.
    pub plugins: PeekPlugins,
    /// The agent's own confinement (`[agent.sandbox] mode`; shared with `doctor`).
    pub agent_sandbox: AgentSandboxBlock,
    /// The reference system's `brake` (its peek schema 2.5): the state of the `memory.high`
    /// soft brake, `"off"` (none configured), `"armed"` (configured, and the cgroup it is
    /// written to is ours to write) or `"inert(<reason>)"` (configured, but cannot be
    /// written). The reference's brake is written on its supervisor's own cgroup under
    /// memory pressure (`[monitor.host_health.brake]`, which this build accepts with a
    /// warning and ignores); ours is `memory.round_high_mb`, written on each round's own
    /// cgroup ([`brake_state`]; docs/operations.md, "Round cgroups").
    pub brake: String,
    /// The round running now (`null` when none).
    pub current_round: Option<RoundDoc>,
    /// The last completed rounds, oldest first.
    pub recent_rounds: Vec<RoundDoc>,
    /// The last stash the supervisor made.
    pub orphan: Option<OrphanState>,
    /// Ours: the git operation under way in the work tree now (`null` when none), during
    /// which the supervisor stashes and commits nothing (docs/operations.md, "Leaving it
    /// unattended").
    pub git_operation: Option<GitOperationDoc>,
    /// The machine.
    pub system: SystemMetrics,
    /// Whether and how `serve` runs.
    pub service: ServiceBlock,
    /// The last events (`--events N`), oldest first.
    pub recent_events: Vec<Recorded>,
    /// The last `hook_failed` events.
    pub recent_hook_failures: Vec<Recorded>,
    /// The loop's defenses in force (`operator::defenses`).
    pub defenses: Vec<Defense>,
    /// The last [`RECENT_BLIPS`] `agent_network_blip` events (a post-round hook diagnosed
    /// a network failure), oldest first: the reference system's network blips
    /// (docs/operations.md "peek --json").
    pub recent_blips: Vec<Recorded>,
    /// The reference system's cgroup growth warnings: always `[]` (this build records a
    /// round's peak memory after the round instead, `round_cgroup_memory`;
    /// `docs/operations.md`, "Round cgroups").
    pub recent_cgroup_growth_warnings: Vec<Value>,
    /// What `[schedule]` says of the next round now (`null` when no schedule sets a
    /// window): the reference system's `paused`, `resume_at`, `active_window`, `phase`,
    /// then ours (docs/operations.md "peek --json").
    pub schedule: Option<PeekSchedule>,
    /// `[budget]`: each cap against its spend (`null` when no cap is set; ours:
    /// docs/operations.md "Budget").
    pub budget: Option<crate::operator::budget::PeekBudget>,
    /// Every configured host.
    pub hosts: Vec<PeekHost>,
    /// Torn or non-JSON lines met in the events read.
    pub skipped_event_lines: usize,
    /// With `--round`: that round (`null` when no round is known); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<Option<RoundDoc>>,
}

/// `peek`'s `git_operation`: a rebase, merge, cherry-pick, revert, `am` or bisect under way.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct GitOperationDoc {
    /// `rebase`, `am`, `merge`, `cherry-pick`, `revert` or `bisect`.
    pub operation: String,
    /// The marker in the git dir that shows it.
    pub marker: PathBuf,
    /// What the operator does to end it.
    pub what_to_do: String,
}

/// `peek`'s `status`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct PeekStatus {
    /// The last round number that started (0 before the first).
    pub round_num: u64,
    /// Whether a round runs now.
    pub running: bool,
    /// When the last completed round ended.
    pub last_completed_at: Option<String>,
    /// Its agent's exit code.
    pub last_exit_code: Option<i64>,
    /// Its agent's duration, seconds.
    pub last_duration_s: Option<f64>,
    /// Always 0 (the reference system's field; phases rotate by round number here).
    pub phase_index: u64,
}

/// `peek`'s `plugins`: the reference system's keys (`event_kinds`, one list of hook names
/// per family registry, `owned_paths`, `disabled`, `sandbox`, `pins`,
/// `spawn_override_allow`), plus our families it has no registry list for (`spawn_hooks`,
/// `dirty_handlers`, `serve_startup_hooks`). Hooks, event kinds and owned paths are those
/// the enabled hosts declared to the last `serve` (`service.json`); lists are sorted.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct PeekPlugins {
    /// The event kinds hosts declared, as recorded: `<host>.<kind>`.
    pub event_kinds: Vec<String>,
    /// Spawn hooks (family `spawn_hook`).
    pub spawn_hooks: Vec<String>,
    /// Dirty handlers (family `dirty_handler`).
    pub dirty_handlers: Vec<String>,
    /// Pre-round hooks (family `pre_round`).
    pub pre_round_hooks: Vec<String>,
    /// Whether `disable_pre_round_hooks` holds for the next round (`[runtime]`, or its
    /// phase's): its pre-round hooks are then not asked (docs/configuration.md).
    pub pre_round_hooks_disabled: bool,
    /// Context enrichers (family `context_enricher`).
    pub context_enrichers: Vec<String>,
    /// Post-round hooks (family `post_round`): the hosts' and the built-in detectors left
    /// enabled (`[plugins] disable`).
    pub post_round_hooks: Vec<String>,
    /// Output watches (family `output_watch`, docs/protocol.md §5.10): the hosts' and the
    /// built-in ones of the enabled detectors whose CLI reports each model call; asked
    /// while a round runs, only while a `[budget]` cap is set.
    pub output_watches: Vec<String>,
    /// Serve-startup hooks (family `serve_startup`).
    pub serve_startup_hooks: Vec<String>,
    /// Detectors (family `detector`).
    pub detectors: Vec<String>,
    /// Paths the hosts own (relative to `work_dir`), kept out of dirty detection, stash
    /// and commit (`docs/protocol.md` §5.8).
    pub owned_paths: Vec<String>,
    /// `[plugins] disable`.
    pub disabled: Vec<String>,
    /// The sandbox block (shared with `doctor`).
    pub sandbox: SandboxBlock,
    /// Each host's pin status by name: `verified`, `mismatch`, `unpinned` or
    /// `unresolvable`.
    pub pins: BTreeMap<String, String>,
    /// `[plugins] spawn_override_allow`.
    pub spawn_override_allow: Vec<String>,
    /// The CLIs that finish their turn on a signal, and which (`claude`: `SIGINT`, …;
    /// the reference system's 2.3/2.6 key, [`crate::runtime::agent::cooperative`]).
    pub cooperative_stop: BTreeMap<String, String>,
    /// Seconds between the stop signal and SIGKILL for `[agent]`'s agent: its
    /// `sigterm_grace_s` when its CLI is cooperative, else 5 (the reference's 2.4 key).
    pub resolved_sigterm_grace_s: u64,
}

/// One host in `peek`'s `hosts`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct PeekHost {
    /// Its name.
    pub name: String,
    /// `running`, `backoff`, `disabled` (by config or after failures), `refused` or
    /// `stopped`.
    pub state: String,
    /// Listed in `[plugins] disable`.
    pub disabled: bool,
    /// Its pid while running.
    pub pid: Option<u32>,
    /// The hooks it registered.
    pub hooks: Vec<String>,
    /// Its hooks by family (wire spelling → hook names).
    pub families: BTreeMap<String, Vec<String>>,
    /// The event kinds it declared, as recorded: `<host>.<kind>`.
    pub event_kinds: Vec<String>,
    /// The paths it owns (relative to `work_dir`).
    pub owned_paths: Vec<String>,
    /// Its `provides`.
    pub provides: Vec<Family>,
    /// Hook calls this run.
    pub calls: u64,
    /// Failed calls and starts this run.
    pub failures: u64,
    /// The last failure.
    pub last_error: Option<String>,
    /// Median latency of recent calls, milliseconds.
    pub call_latency_p50_ms: Option<f64>,
    /// `verified`, `mismatch`, `unpinned` or `unresolvable`.
    #[schemars(extend("enum" = ["verified", "mismatch", "unpinned", "unresolvable"]))]
    pub pin_status: String,
    /// `sha256:<64 hex>` of its executable.
    #[schemars(regex(pattern = r"^sha256:[0-9a-f]{64}$"))]
    pub sha256: Option<String>,
    /// The resolved executable.
    pub executable: Option<String>,
    /// Why the executable cannot be resolved.
    pub error: Option<String>,
    /// Its extra read-only grants (`[plugins.hosts.<name>] read_paths`), canonical paths;
    /// empty when none.
    pub read_paths: Vec<std::path::PathBuf>,
    /// Its write limits and the state directory's current use.
    pub write_limits: crate::operator::doctor::HostWriteLimits,
}

/// `peek`'s `service`: the reference system's `mode`, `active`, `pid`, `uptime_s`,
/// `unit_file`, `rate_limit`, `system_managed`, then ours.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct ServiceBlock {
    /// `systemd_user` (our user unit is installed and systemd runs), `pid_file` or `none`.
    pub mode: String,
    /// Whether a supervisor holds the project lock.
    pub active: bool,
    /// Its pid.
    pub pid: Option<u32>,
    /// Seconds since the running `serve` booted, to 0.1 s.
    pub uptime_s: Option<f64>,
    /// The installed systemd unit, if any.
    pub unit_file: Option<PathBuf>,
    /// During a back-off after a diagnosed transient failure, the reference system's
    /// throttle object; `null` otherwise.
    pub rate_limit: Option<RateLimit>,
    /// Whether a system-wide unit is installed and systemd runs.
    pub system_managed: bool,
    /// From `service.json` when its writer is the live supervisor; `round` when a one-off
    /// `round` holds the lock; `stopped` otherwise.
    pub state: String,
    /// A `service.json` left by a supervisor that died without marking it stopped.
    pub stale: bool,
    /// When `service.json` was last written.
    pub updated_at: Option<String>,
    /// The round the running `serve` is attempting.
    pub serve_current_round: Option<CurrentRound>,
}

/// `service.rate_limit`: the back-off under way, in the reference system's shape.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct RateLimit {
    /// When the back-off ends, seconds since the Unix epoch.
    pub throttled_until_epoch: Option<u64>,
    /// The diagnosis (`usage_limit`, `rate_limit`, `overloaded`, `network`, …).
    pub limit_type: String,
    /// The agent's executable (basename).
    pub agent: String,
    /// The first round of the episode.
    pub since_round: u64,
    /// The phase (`""` without phases).
    pub phase: String,
    /// Every agent backing off (one: a project runs one agent).
    pub throttled_agents: Vec<String>,
}

fn rate_limit(back_off: &service::BackOffDoc) -> RateLimit {
    RateLimit {
        throttled_until_epoch: humantime::parse_rfc3339_weak(back_off.until.trim_end_matches('Z'))
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs()),
        limit_type: back_off.kind.clone(),
        agent: back_off.agent.clone(),
        since_round: back_off.since_round,
        phase: back_off.phase.clone(),
        throttled_agents: vec![back_off.agent.clone()],
    }
}

/// Everything a look found (the document, plus what the human form needs).
pub(crate) struct Snapshot {
    /// The document.
    pub doc: PeekDoc,
    /// The round `--round` resolved to, and its log file.
    pub round_log: Option<(u64, Option<std::path::PathBuf>)>,
}

/// Takes one look at the project of `config`.
pub(crate) fn snapshot(config: &Config, options: &PeekOptions) -> Snapshot {
    let now = SystemTime::now();
    let log_dir = &config.runtime.log_dir;
    let state_dir = &config.runtime.state_dir;
    let n_events = options.events.unwrap_or(DEFAULT_EVENTS);
    let recent = recent::scan(
        state_dir,
        Wanted {
            events: n_events,
            // The running round, if any, and the completed ones listed.
            rounds: RECENT_ROUNDS + 1,
            hook_failures: RECENT_HOOK_FAILURES,
            blips: RECENT_BLIPS,
            round: match options.round {
                Some(RoundSel::Num(n)) => Some(n),
                _ => None,
            },
        },
    );
    let round_events = &recent.round_events;
    let live = service::live_supervisor(state_dir);
    let service_doc = service::read(state_dir);
    let current_doc = service_doc.as_ref().filter(|d| Some(d.pid) == live);
    let rounds = rounds::rounds(round_events);

    let running_round = live.and_then(|_| rounds.values().next_back().filter(|r| !r.ended));
    let current_round = running_round.map(|r| {
        let tail = r
            .log_path
            .as_deref()
            .and_then(|p| rounds::tail_text(Path::new(p), LOG_TAIL_BYTES));
        r.to_doc(now, tail, round_events)
    });
    let completed: Vec<&RoundView> = rounds
        .values()
        .filter(|r| running_round.is_none_or(|c| c.round_num != r.round_num))
        .collect();
    let recent_rounds: Vec<RoundDoc> = completed
        .iter()
        .skip(completed.len().saturating_sub(RECENT_ROUNDS))
        .map(|r| r.to_doc(now, None, &[]))
        .collect();
    let last_done = completed.iter().rev().find(|r| r.ended);

    let round_state: RoundState = state::read_json(&state_dir.join(state::STATE_FILE))
        .ok()
        .flatten()
        .unwrap_or_default();
    let orphan: Option<OrphanState> = state::read_json(&state_dir.join(state::ORPHAN_FILE))
        .ok()
        .flatten();
    // What the next round runs with (its phase's overrides).
    let next = config.profile(config.phase_for_round(round_state.last_round + 1));

    let caps = probe();
    let gate = SandboxGate::evaluate(config.plugins.sandbox, caps.clone()).ok();
    let (pins, hosts) = hosts_block(config, service_doc.as_ref(), current_doc.is_some());
    let covers = covered_families(
        hosts.iter().map(|h| HostCover {
            disabled: h.disabled,
            pin_status: &h.pin_status,
            provides: &h.provides,
        }),
        gate.as_ref(),
    );
    let sandbox = sandbox_block(Some(config), &caps, gate.as_ref(), covers);

    let mut round_log = None;
    let round = options.round.map(|sel| {
        let num = match sel {
            RoundSel::Num(n) => Some(n),
            RoundSel::Latest => rounds
                .keys()
                .next_back()
                .copied()
                .max(rounds::latest_logged_round(log_dir)),
        };
        let view = num.map(|n| {
            rounds.get(&n).cloned().unwrap_or(RoundView {
                round_num: n,
                ..RoundView::default()
            })
        });
        view.map(|mut view| {
            let file = view
                .log_path
                .clone()
                .map(PathBuf::from)
                .filter(|p| p.is_file())
                .or_else(|| rounds::log_file(log_dir, view.round_num));
            if view.log_path.is_none() {
                view.log_path = file.as_ref().map(|p| p.display().to_string());
            }
            let tail = file
                .as_deref()
                .and_then(|p| rounds::tail_text(p, LOG_TAIL_BYTES));
            round_log = Some((view.round_num, file));
            view.to_doc(now, tail, round_events)
        })
    });
    let doc = PeekDoc {
        schema_version: SCHEMA_VERSION.to_owned(),
        project: config.project.clone(),
        config: config.path.clone(),
        log_dir: log_dir.clone(),
        state_dir: state_dir.clone(),
        status: PeekStatus {
            round_num: round_state.last_round,
            running: running_round.is_some(),
            last_completed_at: last_done.and_then(|r| r.ended_at.clone()),
            last_exit_code: last_done.and_then(|r| r.exit_code),
            last_duration_s: last_done.and_then(|r| r.duration_s),
            phase_index: 0,
        },
        plugins: plugins_block(config, &hosts, sandbox, pins, next.disable_pre_round_hooks),
        agent_sandbox: agent_sandbox_block(config, &caps),
        brake: brake_state(&config.monitor.host_health),
        current_round,
        recent_rounds,
        orphan,
        git_operation: git_operation::in_progress(&config.runtime.work_dir).map(|found| {
            GitOperationDoc {
                operation: found.operation.name().to_owned(),
                marker: found.marker,
                what_to_do: found.operation.what_to_do(),
            }
        }),
        system: system_metrics::snapshot(log_dir, &config.agent.command[0]),
        service: service_block(config, live, current_doc, service_doc.as_ref(), now),
        recent_events: recent.events,
        recent_hook_failures: recent.hook_failures,
        defenses: crate::operator::defenses::list(config, gate.as_ref()),
        recent_blips: recent.blips,
        recent_cgroup_growth_warnings: Vec::new(),
        schedule: schedule_view::of(
            config,
            round_state.last_round + 1,
            jiff::Timestamp::try_from(now).unwrap_or_else(|_| jiff::Timestamp::now()),
        ),
        budget: crate::operator::budget::peek(
            config,
            jiff::Timestamp::try_from(now).unwrap_or_else(|_| jiff::Timestamp::now()),
        ),
        hosts,
        skipped_event_lines: recent.skipped,
        round,
    };
    Snapshot { doc, round_log }
}

/// The `plugins` block of `config`, its `hosts` (from [`hosts_block`]), `sandbox`, `pins`
/// and whether the next round's pre-round hooks are disabled: hook names, event kinds and
/// owned paths of the enabled hosts.
/// [`PeekDoc::brake`] from `cfg` and the live cgroup facts: `off` without
/// `memory.round_high_mb` (the static brake on each round's cgroup) and without
/// `brake.memory_high` (the soft brake on the supervisor's cgroup under pressure); else `armed` when rounds get cgroups of their own
/// ([`round_cgroup::delegation`]), or `inert(round_cgroup off)`, `inert(no memory cgroup)`
/// (no memory controller for this process) or `inert(undelegated)`.
fn brake_state(cfg: &crate::config::HostHealthConfig) -> String {
    if cfg.memory.round_high_mb.is_none() && !cfg.brake.memory_high {
        return "off".to_owned();
    }
    if cfg.memory.round_cgroup == crate::config::RoundCgroupMode::Off {
        return "inert(round_cgroup off)".to_owned();
    }
    if agent_runner_plugin_host::common::cgroup::own_cgroup("memory").is_none() {
        return "inert(no memory cgroup)".to_owned();
    }
    match round_cgroup::delegation(cfg.memory.round_cgroup) {
        Ok(_) => "armed".to_owned(),
        Err(_) => "inert(undelegated)".to_owned(),
    }
}

fn plugins_block(
    config: &Config,
    hosts: &[PeekHost],
    sandbox: SandboxBlock,
    pins: BTreeMap<String, String>,
    pre_round_hooks_disabled: bool,
) -> PeekPlugins {
    let enabled = || hosts.iter().filter(|h| !h.disabled);
    let sorted = |items: Vec<String>| {
        let mut items = items;
        items.sort();
        items.dedup();
        items
    };
    let hooks = |family: Family| {
        sorted(
            enabled()
                .flat_map(|h| h.families.get(family.as_str()).cloned().unwrap_or_default())
                .collect(),
        )
    };
    PeekPlugins {
        event_kinds: sorted(enabled().flat_map(|h| h.event_kinds.clone()).collect()),
        spawn_hooks: hooks(Family::SpawnHook),
        dirty_handlers: hooks(Family::DirtyHandler),
        pre_round_hooks: hooks(Family::PreRound),
        pre_round_hooks_disabled,
        context_enrichers: hooks(Family::ContextEnricher),
        // The built-in detector host declares exactly the enabled detectors of the
        // configured agents' CLIs.
        post_round_hooks: sorted(
            hooks(Family::PostRound)
                .into_iter()
                .chain(
                    crate::hosts::builtin::applicable_detectors(config)
                        .into_iter()
                        .map(str::to_owned),
                )
                .collect(),
        ),
        output_watches: sorted(
            hooks(Family::OutputWatch)
                .into_iter()
                .chain(crate::hosts::builtin::applicable_watches(config))
                .collect(),
        ),
        serve_startup_hooks: hooks(Family::ServeStartup),
        detectors: hooks(Family::Detector),
        owned_paths: sorted(enabled().flat_map(|h| h.owned_paths.clone()).collect()),
        disabled: config.plugins.disable.clone(),
        sandbox,
        pins,
        spawn_override_allow: config
            .plugins
            .spawn_override_allow
            .iter()
            .map(|h| h.to_string())
            .collect(),
        cooperative_stop: crate::runtime::agent::cooperative::COOPERATIVE
            .iter()
            .map(|(name, signal)| ((*name).to_owned(), signal.as_str().to_owned()))
            .collect(),
        resolved_sigterm_grace_s: crate::runtime::agent::cooperative::stop_signal(&config.agent)
            .grace
            .as_secs(),
    }
}

/// `plugins.pins` (`name: verified|mismatch|unpinned|unresolvable`) and the `hosts` block.
fn hosts_block(
    config: &Config,
    service_doc: Option<&ServiceDoc>,
    live: bool,
) -> (BTreeMap<String, String>, Vec<PeekHost>) {
    let mut pins = BTreeMap::new();
    let mut hosts = Vec::new();
    for cfg in &config.plugins.hosts {
        let checked = check_pin(config, cfg);
        let pin_status = match &checked {
            Ok(c) => c.status.as_str(),
            Err(_) => "unresolvable",
        };
        pins.insert(cfg.name.clone(), pin_status.to_owned());
        let disabled = config.plugins.disable.contains(&cfg.name);
        let seen = service_doc.and_then(|d| d.hosts.iter().find(|h| h.name == cfg.name));
        let state = match (disabled, seen, live) {
            (true, _, _) => "disabled".to_owned(),
            (false, Some(h), true) => h.state.clone(),
            (false, None, true) => "refused".to_owned(),
            (false, _, false) => "stopped".to_owned(),
        };
        hosts.push(PeekHost {
            name: cfg.name.clone(),
            state,
            disabled,
            pid: seen.filter(|_| live).and_then(|h| h.pid),
            hooks: seen.map(|h| h.hooks.clone()).unwrap_or_default(),
            families: seen.map(|h| h.families.clone()).unwrap_or_default(),
            event_kinds: seen.map(|h| h.event_kinds.clone()).unwrap_or_default(),
            owned_paths: seen.map(|h| h.owned_paths.clone()).unwrap_or_default(),
            provides: cfg.provides.iter().copied().collect(),
            calls: seen.map_or(0, |h| h.calls),
            failures: seen.map_or(0, |h| h.failures),
            last_error: seen.and_then(|h| h.last_error.clone()),
            call_latency_p50_ms: seen.and_then(|h| h.call_latency_p50_ms),
            pin_status: pin_status.to_owned(),
            sha256: checked.as_ref().ok().map(|c| c.actual.to_string()),
            executable: checked.as_ref().ok().map(|c| c.path.display().to_string()),
            error: checked.as_ref().err().map(ToString::to_string),
            read_paths: cfg.read_paths.clone(),
            write_limits: crate::operator::doctor::HostWriteLimits::of(config, cfg),
        });
    }
    (pins, hosts)
}

/// The `service` block; `state` comes from `service.json` when its writer is the live
/// supervisor (during a back-off: `backing off until <time> (<kind>)`, with `rate_limit`
/// filled), `stale` marks one left by a supervisor that died without marking it stopped.
fn service_block(
    config: &Config,
    live: Option<u32>,
    current: Option<&ServiceDoc>,
    last: Option<&ServiceDoc>,
    now: SystemTime,
) -> ServiceBlock {
    let user_unit = project_file(config, Scope::User);
    let system_unit = project_file(config, Scope::System);
    let user_installed = user_unit.is_file();
    let system_installed = system_unit.is_file();
    // An installed unit manages nothing where systemd is not running (most containers).
    let systemd = crate::operator::install::systemd_running();
    let mode = if user_installed && systemd {
        "systemd_user"
    } else if live.is_some() {
        "pid_file"
    } else {
        "none"
    };
    let uptime_s = current
        .and_then(|d| humantime::parse_rfc3339_weak(d.started_at.trim_end_matches('Z')).ok())
        .and_then(|t| now.duration_since(t).ok())
        .map(|d| (d.as_secs_f64() * 10.0).round() / 10.0);
    let back_off = current.and_then(|d| d.back_off.as_ref());
    let state = match (live, current, back_off) {
        (Some(_), Some(doc), Some(b)) if doc.state == service::ServiceState::BackingOff => {
            b.describe()
        }
        (Some(_), Some(doc), _) => doc.state.as_str().to_owned(),
        (Some(_), None, _) => "round".to_owned(),
        (None, _, _) => "stopped".to_owned(),
    };
    let stale = live.is_none() && last.is_some_and(|d| d.state != service::ServiceState::Stopped);
    ServiceBlock {
        mode: mode.to_owned(),
        active: live.is_some(),
        pid: live,
        uptime_s,
        unit_file: if user_installed {
            Some(user_unit)
        } else if system_installed {
            Some(system_unit)
        } else {
            None
        },
        rate_limit: back_off.map(rate_limit),
        system_managed: system_installed && systemd,
        state: state.to_owned(),
        stale,
        updated_at: last.map(|d| d.updated_at.clone()),
        serve_current_round: current.and_then(|d| d.current_round.clone()),
    }
}

/// What the `peek` verb prints.
#[derive(Clone, Debug, Default)]
pub(crate) struct PeekOutput {
    /// The look itself.
    pub options: PeekOptions,
    /// The JSON document instead of the summary.
    pub json: bool,
    /// Print the round log of `--round` (default: the latest) and nothing else.
    pub log: bool,
    /// Print only the value at this dotted path.
    pub select: Option<String>,
}

/// Runs the `peek` verb for the config at `config_path`; returns the exit code.
///
/// Errors: 78 for a config that cannot be loaded; 1 for a `--select` path that does not
/// exist or a `--log` round without a log.
pub(crate) fn run(config_path: &Path, output: &PeekOutput) -> Result<u8, CliError> {
    let config = crate::config::load(config_path)?;
    let mut options = output.options.clone();
    if output.log && options.round.is_none() {
        options.round = Some(RoundSel::Latest);
    }
    let snap = snapshot(&config, &options);
    let doc = serde_json::to_value(&snap.doc).unwrap_or_default();
    let mut stdout = std::io::stdout().lock();
    if output.log {
        let (num, file) = snap
            .round_log
            .ok_or_else(|| CliError::failure("no round has run yet: there is no round log"))?;
        let file = file.ok_or_else(|| {
            CliError::failure(format!(
                "round R{num} has no log in {}",
                config.runtime.log_dir.join("rounds").display()
            ))
        })?;
        let mut log = crate::tree_file::open_regular(&file, crate::tree_file::Symlink::Refuse)
            .map_err(|e| CliError::failure(format!("cannot read {}: {e}", file.display())))?;
        // The log file keeps the agent's bytes; what reaches the terminal has its escapes
        // (title, OSC 52 clipboard, clear screen) shown as text, by the rule of `printable`.
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut log, &mut bytes)
            .map_err(|e| CliError::failure(format!("cannot read {}: {e}", file.display())))?;
        let text = String::from_utf8_lossy(&bytes);
        let _ =
            stdout.write_all(agent_runner_protocol::printable::printable(&text, true).as_bytes());
        return Ok(crate::exit::OK);
    }
    if let Some(path) = &output.select {
        let value = select(&doc, path).ok_or_else(|| {
            CliError::failure(format!(
                "peek --select: no value at `{path}` (top-level keys: {})",
                doc.as_object()
                    .map(|m| m.keys().cloned().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            ))
        })?;
        let text = match value {
            Value::String(text) => text.clone(),
            other if output.json => serde_json::to_string_pretty(other).unwrap_or_default(),
            other => other.to_string(),
        };
        let _ = writeln!(stdout, "{text}");
        return Ok(crate::exit::OK);
    }
    if output.json {
        let _ = writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        );
    } else {
        let text = crate::operator::peek_render::render(
            &doc,
            crate::operator::peek_render::use_colour(),
            output.options.events.is_some(),
        );
        let _ = write!(stdout, "{text}");
    }
    Ok(crate::exit::OK)
}

/// The value at dotted `path` (`plugins.sandbox.achieved_tier`; array elements by index,
/// `recent_rounds.0.exit_code`), `None` if there is none.
pub(crate) fn select<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .filter(|p| !p.is_empty())
        .try_fold(doc, |v, key| match v {
            Value::Object(map) => map.get(key),
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn select_walks_objects_and_arrays() {
        let doc = json!({"plugins": {"pins": {"p": "verified"}}, "rounds": [{"n": 1}, {"n": 2}]});
        assert_eq!(select(&doc, "plugins.pins.p"), Some(&json!("verified")));
        assert_eq!(select(&doc, "rounds.1.n"), Some(&json!(2)));
        assert_eq!(select(&doc, "plugins"), doc.get("plugins"));
        assert_eq!(select(&doc, "rounds.x"), None);
        assert_eq!(select(&doc, "plugins.pins.q"), None);
        assert_eq!("latest".parse::<RoundSel>(), Ok(RoundSel::Latest));
        assert_eq!("7".parse::<RoundSel>(), Ok(RoundSel::Num(7)));
        assert!("x".parse::<RoundSel>().is_err());
    }

    #[test]
    fn plugins_block_has_a_list_for_every_family_registry() {
        let schema = schemars::schema_for!(PeekPlugins);
        let properties = schema.get("properties").and_then(Value::as_object).unwrap();
        for family in Family::ALL {
            assert!(
                properties.contains_key(family.registry_key()),
                "plugins has no {:?} list",
                family.registry_key()
            );
        }
    }
}
