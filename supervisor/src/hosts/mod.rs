//! Third-party plugin hosts: pin check, confined launch, `initialize`, hook calls,
//! failures and restarts, shutdown (`docs/design-notes.md`, "Host lifecycle";
//! `docs/protocol.md` §2–§6).
//!
//! The manager owns every host of one supervisor run. A host that crashes, hangs, breaks
//! the protocol or is killed by the sandbox is killed with its process group, recorded as
//! `hook_failed`, and started again for a later call after a backoff; after
//! [`MAX_CONSECUTIVE_FAILURES`] failures in a row it is disabled for the rest of the run.

pub mod builtin;
pub(crate) mod cause;
pub(crate) mod declarations;
mod failure;
mod host;
mod launch;
pub(crate) mod pins;
mod report;
pub mod sandbox;
mod stats;
mod transport;
mod write_watch;

pub(crate) use pins::{check_pin, PinStatus};
use stats::CallHistogram;
pub(crate) use stats::CallStats;

use agent_runner_plugin_host::launch::LaunchSpec;
use agent_runner_protocol::redact::redact_and_cap;
use agent_runner_protocol::{
    check_host_events, decode_initialize_result, methods, Family, HookName, HostEvent,
    InitializeParams, InitializeResult, PROTOCOL_VERSION,
};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{Config, HostConfig};
use crate::hosts::sandbox::SandboxGate;
use crate::record::events::{Event, EventLog};
use cause::{Bounds, Deadline, InFlight};
use declarations::Declarations;
pub(crate) use declarations::{declaration_problems, DeclarationProblem, BUILTIN_DIRTY_HANDLER};
pub use failure::{CallFailure, ErrorType};
use host::RunningHost;
pub(crate) use host::{read_stderr_lines, StderrTail, EXIT_GRACE};
pub(crate) use launch::{host_initialize_params, initialize_params, launch_spec, state_dir};

/// Consecutive failed calls after which a host is disabled for the rest of the run.
pub(crate) const MAX_CONSECUTIVE_FAILURES: u32 = 5;
/// Longest wait before a failed host is started again.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// What a host declared in `initialize` besides its hooks (`docs/protocol.md` §3).
#[derive(Clone, Debug, Default)]
pub struct Declared {
    /// Event kinds it may emit, without the `<host>.` prefix.
    pub event_kinds: Vec<String>,
    /// Paths relative to `work_dir` it owns.
    pub owned_paths: Vec<String>,
}

/// A registered hook: which host serves it.
#[derive(Clone, Debug)]
pub struct HookRef {
    /// Index of the serving host in the manager.
    host: usize,
    /// The hook's name.
    pub name: HookName,
    /// Its family.
    pub family: Family,
    /// Dirty handlers: lower runs first.
    pub priority: i64,
}

/// One call of a [`HostManager::call_all`] batch waiting for its host: position in the
/// batch, the call, params, its time bound.
type PendingCall = (usize, InFlight, Value, Deadline);

/// What a host is doing right now (peek/doctor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostState {
    /// Running and initialized.
    Running,
    /// Down after a failure; started again for a later call.
    Backoff,
    /// Disabled for the rest of the run.
    Disabled,
}

impl HostState {
    /// The `service.json` / `peek` spelling: `running`, `backoff`, `disabled`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HostState::Running => "running",
            HostState::Backoff => "backoff",
            HostState::Disabled => "disabled",
        }
    }
}

/// One host as status displays show it ([`HostManager::status`]).
#[derive(Clone, Debug)]
pub struct HostStatus {
    /// The host's name (`[plugins.hosts.<name>]`).
    pub name: String,
    /// What it is doing now.
    pub state: HostState,
    /// Its pid while running.
    pub pid: Option<u32>,
    /// Names of the hooks it registered.
    pub hooks: Vec<String>,
    /// Its call counters over this run.
    pub stats: CallStats,
    /// The family of each of its hooks, as `(family, hook)`.
    pub hook_families: Vec<(Family, String)>,
    /// What it declared besides hooks.
    pub declared: Declared,
}

struct ManagedHost {
    cfg: HostConfig,
    /// The built-in detector host ([`builtin`]): its hooks carry reserved names.
    builtin: bool,
    /// Its `[plugins.pin]` entry when it was admitted.
    pin: Option<agent_runner_plugin_host::pin::Sha256Pin>,
    spec: LaunchSpec,
    /// What `initialize` declared besides hooks (docs/protocol.md §3).
    declared: Declared,
    running: Option<RunningHost>,
    consecutive_failures: u32,
    next_start: Instant,
    disabled: bool,
    stats: CallStats,
    /// Set by the host's [`write_watch::WriteWatch`] when its state directory went over
    /// `state_max_mb`.
    write_breach: Arc<AtomicBool>,
}

/// What [`HostManager::reconcile`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reconciled {
    /// Hosts admitted anew (new, or their entry or pin changed), whether or not they
    /// passed their checks.
    pub started: Vec<String>,
    /// Hosts shut down for good (removed from the config or disabled).
    pub stopped: Vec<String>,
}

/// Every host of one supervisor run.
pub struct HostManager {
    hosts: Vec<ManagedHost>,
    hooks: Vec<HookRef>,
    events: EventLog,
    init: InitializeParams,
    /// Which executable runs the built-in detector host (kept for [`Self::reconcile`]).
    detectors: builtin::DetectorHost,
    /// Hook call durations by family, this run (`service.json`, `/metrics`).
    call_durations: std::collections::BTreeMap<Family, CallHistogram>,
}

impl HostManager {
    /// Checks every configured, enabled host's pin and starts the ones that pass.
    ///
    /// A host is refused (never launched) when its executable cannot be resolved or read,
    /// its pin mismatches (`plugin_checksum_mismatch`), it is unpinned under `require`
    /// (`plugin_sandbox_degraded`), or its `initialize` answer breaks the rules (wrong
    /// family, duplicate or built-in hook name: `plugin_builtin_name_squat`). Refusals
    /// are recorded; the supervisor goes on without that host.
    ///
    /// `detectors` says which executable runs the built-in detector host (started first,
    /// like the others): `serve` and `round` pass [`builtin::DetectorHost::OwnExecutable`].
    pub async fn boot(
        config: &Config,
        gate: &SandboxGate,
        events: &EventLog,
        detectors: &builtin::DetectorHost,
    ) -> HostManager {
        let mut manager = HostManager {
            hosts: Vec::new(),
            hooks: Vec::new(),
            events: events.clone(),
            init: initialize_params(
                &config.project,
                &config.runtime.work_dir,
                &config.runtime.log_dir,
                gate,
            ),
            detectors: detectors.clone(),
            call_durations: std::collections::BTreeMap::new(),
        };
        manager.add_builtin(config, gate).await;
        for cfg in &config.plugins.hosts {
            if config.plugins.disable.contains(&cfg.name) {
                tracing::info!(host = %cfg.name, "host disabled by [plugins] disable");
                continue;
            }
            manager.add(config, gate, cfg).await;
        }
        manager.sort_hooks();
        manager
    }

    /// Follows a re-read config (docs/configuration.md, "Config follows the file"): a host
    /// whose `[plugins.hosts.<name>]` entry and pin are unchanged keeps running with its
    /// hooks; a host whose entry or pin changed is shut down and admitted again (resolve,
    /// hash, pin check, launch, `initialize`), a new host is admitted, a removed or newly
    /// disabled one is shut down. The built-in detector host is restarted when its table
    /// ([`builtin::host_table`]: enabled detectors, `auth_fail_patterns`) changed, and shut
    /// down when every detector is disabled. Returns the names of the hosts (re)started and
    /// stopped.
    pub(crate) async fn reconcile(&mut self, config: &Config, gate: &SandboxGate) -> Reconciled {
        let mut old: Vec<Option<ManagedHost>> = std::mem::take(&mut self.hosts)
            .into_iter()
            .map(Some)
            .collect();
        let old_hooks = std::mem::take(&mut self.hooks);
        let mut done = Reconciled::default();
        let keep = |i: usize, host: ManagedHost, manager: &mut HostManager| {
            let now = manager.hosts.len();
            manager.hosts.push(host);
            manager.hooks.extend(
                old_hooks
                    .iter()
                    .filter(|h| h.host == i)
                    .cloned()
                    .map(|h| HookRef { host: now, ..h }),
            );
        };
        // The built-in detector host follows its table ([`builtin::host_table`]).
        let table = builtin::host_table(config, &self.detectors);
        let was_builtin = old
            .iter()
            .position(|h| h.as_ref().is_some_and(|h| h.builtin));
        match (was_builtin, &table) {
            (Some(i), Some(table)) if old[i].as_ref().is_some_and(|h| h.cfg.config == *table) => {
                if let Some(host) = old[i].take() {
                    keep(i, host, self);
                }
            }
            (was, table) => {
                if let Some(host) = was.and_then(|i| old[i].take()) {
                    if let Some(running) = host.running {
                        running.shutdown().await;
                    }
                    if table.is_none() {
                        done.stopped.push(host.cfg.name.clone());
                    }
                }
                if table.is_some() {
                    self.add_builtin(config, gate).await;
                    done.started
                        .push(crate::detectors::host::HOST_NAME.to_owned());
                }
            }
        }
        for cfg in &config.plugins.hosts {
            if config.plugins.disable.contains(&cfg.name) {
                continue;
            }
            let pin = config.plugins.pins.get(&cfg.name).copied();
            let same = old
                .iter()
                .position(|h| h.as_ref().is_some_and(|h| h.cfg == *cfg && h.pin == pin));
            match same.and_then(|i| old[i].take().map(|h| (i, h))) {
                Some((was, host)) => keep(was, host, self),
                None => {
                    if let Some(i) = old
                        .iter()
                        .position(|h| h.as_ref().is_some_and(|h| h.cfg.name == cfg.name))
                    {
                        if let Some(running) = old[i].take().and_then(|h| h.running) {
                            running.shutdown().await;
                        }
                    }
                    self.add(config, gate, cfg).await;
                    done.started.push(cfg.name.clone());
                }
            }
        }
        for host in old.into_iter().flatten() {
            done.stopped.push(host.cfg.name.clone());
            if let Some(running) = host.running {
                running.shutdown().await;
            }
        }
        self.sort_hooks();
        done
    }

    /// Admits, starts and registers one host (after recording why, refused or disabled
    /// when any step fails).
    async fn add(&mut self, config: &Config, gate: &SandboxGate, cfg: &HostConfig) {
        let Some(spec) = self.admit(config, gate, cfg) else {
            return;
        };
        let pin = config.plugins.pins.get(&cfg.name).copied();
        self.launch(cfg, pin, spec, false).await;
    }

    /// Admits, starts and registers the built-in detector host ([`builtin::admit`]),
    /// unless `config` or [`builtin::DetectorHost::Off`] leaves it out.
    async fn add_builtin(&mut self, config: &Config, gate: &SandboxGate) {
        if let Some((cfg, spec)) = builtin::admit(config, gate, &self.events, &self.detectors) {
            self.launch(&cfg, None, spec, true).await;
        }
    }

    /// Starts and registers one admitted host (disabled, after recording why, when its
    /// `initialize` fails).
    async fn launch(
        &mut self,
        cfg: &HostConfig,
        pin: Option<agent_runner_plugin_host::pin::Sha256Pin>,
        spec: LaunchSpec,
        builtin: bool,
    ) {
        self.hosts.push(ManagedHost {
            cfg: cfg.clone(),
            builtin,
            pin,
            spec,
            declared: Declared::default(),
            running: None,
            consecutive_failures: 0,
            next_start: Instant::now(),
            disabled: false,
            stats: CallStats::default(),
            write_breach: Arc::default(),
        });
        let index = self.hosts.len() - 1;
        match self.start(index).await {
            Ok(result) => self.register(index, result),
            Err(failure) => {
                self.record_failure(index, &cfg.name, "initialize", &failure);
                if failure.rpc.as_ref().is_some_and(|(code, _)| {
                    *code == agent_runner_protocol::error_codes::UNSUPPORTED_PROTOCOL_VERSION
                }) {
                    // Another protocol version: no restart can help (`docs/protocol.md` §3).
                    self.events.emit(Event::PluginRefused {
                        name: cfg.name.clone(),
                        reason: failure.message.clone(),
                    });
                }
                self.hosts[index].disabled = true;
            }
        }
    }

    fn sort_hooks(&mut self) {
        self.hooks.sort_by(|a, b| {
            a.priority
                .cmp(&b.priority)
                .then_with(|| a.name.cmp(&b.name))
        });
    }

    /// Resolves, hashes and pin-checks one host; `None` (after recording why) if refused.
    fn admit(&self, config: &Config, gate: &SandboxGate, cfg: &HostConfig) -> Option<LaunchSpec> {
        let checked = match check_pin(config, cfg) {
            Ok(checked) => checked,
            Err(err) => {
                tracing::error!(host = %cfg.name, "{err}");
                self.events.emit(Event::PluginRefused {
                    name: cfg.name.clone(),
                    reason: err.to_string(),
                });
                return None;
            }
        };
        match (&checked.status, gate.pins_required()) {
            (PinStatus::Mismatch { expected }, _) => {
                tracing::error!(host = %cfg.name, "pin mismatch: expected {expected}, found {}; host refused", checked.actual);
                self.events.emit(Event::PluginChecksumMismatch {
                    name: cfg.name.clone(),
                    expected: expected.to_string(),
                    actual: checked.actual.to_string(),
                    path: checked.path.clone(),
                });
                return None;
            }
            (PinStatus::Unpinned, true) => {
                tracing::error!(host = %cfg.name, "host is not pinned and sandbox = \"require\"; add `{} = \"{}\"` to [plugins.pin]", cfg.name, checked.actual);
                self.events.emit(Event::PluginSandboxDegraded {
                    requested: gate.requested.as_str().to_owned(),
                    achieved_tier: gate.applied.as_str().to_owned(),
                    reason: format!(
                        "host {} is not pinned; refused under sandbox = \"require\"",
                        cfg.name
                    ),
                    refused_boot: None,
                    name: Some(cfg.name.clone()),
                });
                return None;
            }
            _ => {}
        }
        Some(launch_spec(
            cfg,
            checked.exe,
            &config.runtime.work_dir,
            &config.runtime.log_dir,
            gate,
        ))
    }

    /// Launches host `index` and runs `initialize`; returns its validated result.
    async fn start(&mut self, index: usize) -> Result<InitializeResult, CallFailure> {
        let managed = &mut self.hosts[index];
        if !managed.spec.exe.unchanged_since_hash().unwrap_or(false) {
            return Err(CallFailure::new(
                ErrorType::Crashed,
                format!("{} changed on disk since it was hashed; restart agent-runner to re-check its pin", managed.spec.exe.path.display()),
            ));
        }
        let bounds = Bounds::of(&managed.cfg, managed.write_breach.clone());
        let mut running = RunningHost::start(&managed.spec, bounds)?;
        let params = host_initialize_params(&self.init, &managed.cfg, &managed.spec);
        let call = InFlight {
            method: methods::INITIALIZE,
            hook: None,
        };
        let result = running
            .call(&call, Some(params), &Deadline::initialize(&managed.cfg))
            .await;
        let value = match result {
            Ok(value) => value,
            Err(failure) if failure.error_type.ends_host() => {
                return Err(running.end(failure).await);
            }
            Err(failure) => {
                running.kill().await;
                return Err(version_refusal(failure));
            }
        };
        let result = match decode_initialize_result(value) {
            Ok(result) => result,
            Err(err) => {
                running.kill().await;
                return Err(CallFailure::new(
                    ErrorType::InvalidResult,
                    format!("initialize result {err}"),
                ));
            }
        };
        tracing::info!(host = %managed.cfg.name, pid = running.pid(), hooks = result.hooks.len(), "host started");
        running.watch_writes(write_watch::WriteWatch::start(
            write_watch::WatchSpec {
                host: managed.cfg.name.clone(),
                dir: managed.spec.state_dir.clone(),
                limit_bytes: managed.cfg.writes.state_max_mb.saturating_mul(1024 * 1024),
                pgid: running.pid(),
                breached: managed.write_breach.clone(),
            },
            self.events.clone(),
        ));
        managed.running = Some(running);
        Ok(result)
    }

    /// Registers the hooks, event kinds and owned paths host `index` declared, refusing
    /// the whole host if any declaration breaks the rules (docs/protocol.md §3).
    fn register(&mut self, index: usize, result: InitializeResult) {
        let name = self.hosts[index].cfg.name.clone();
        let builtin = self.hosts[index].builtin;
        let decls = result.hooks;
        let taken: Vec<HookName> = self.hooks.iter().map(|h| h.name.clone()).collect();
        let mut problems = declaration_problems(
            &decls,
            &result.event_kinds,
            &self.hosts[index].cfg.provides,
            &taken,
        );
        if builtin {
            // The built-in detector host declares exactly the reserved detector names.
            problems.retain(|p| !matches!(p, DeclarationProblem::BuiltinName(_)));
            if let Some(other) = decls
                .iter()
                .find(|d| !crate::detectors::names().any(|n| n == d.name.as_str()))
            {
                problems.insert(0, DeclarationProblem::NotADetector(other.name.to_string()));
            }
        }
        for problem in &problems {
            if let DeclarationProblem::BuiltinName(hook) = problem {
                self.events.emit(Event::PluginBuiltinNameSquat {
                    name: hook.clone(),
                    module_path: self.hosts[index].spec.exe.path.clone(),
                    host: name.clone(),
                });
            }
        }
        let problem = problems.first().map(|p| format!("{p}"));
        if let Some(reason) = problem {
            tracing::error!(host = %name, "host refused: {reason}");
            self.events.emit(Event::PluginRefused {
                name: name.clone(),
                reason,
            });
            self.hosts[index].disabled = true;
            if let Some(running) = self.hosts[index].running.take() {
                tokio::spawn(running.kill());
            }
            return;
        }
        self.hosts[index].declared = Declared {
            event_kinds: result.event_kinds,
            owned_paths: result.owned_paths,
        };
        for decl in decls {
            self.hooks.push(HookRef {
                host: index,
                priority: decl.priority.unwrap_or(0),
                name: decl.name,
                family: decl.family,
            });
        }
    }

    /// Whether `hook` is served by the built-in detector host ([`builtin`]), whose stops
    /// `[monitor] auto_stop_on`'s default covers ([`crate::config::MonitorConfig::stops_on`]).
    pub(crate) fn is_builtin(&self, hook: &HookRef) -> bool {
        self.hosts.get(hook.host).is_some_and(|h| h.builtin)
    }

    /// How long a call of `hook` may take (`timeout_s` of its host, else its family's
    /// default).
    pub(crate) fn call_timeout(&self, hook: &HookRef) -> Duration {
        self.hosts[hook.host].cfg.call_timeout(hook.family)
    }

    /// Registered hooks of `family`, in call order (dirty handlers by ascending priority).
    pub fn hooks(&self, family: Family) -> Vec<HookRef> {
        self.hooks
            .iter()
            .filter(|h| h.family == family && !self.hosts[h.host].disabled)
            .cloned()
            .collect()
    }

    /// Calls `hook` (its family's method, [`Family::method`]) with `params`; on failure records `hook_failed` (and
    /// `plugin_sandbox_kill` for a sandbox kill), kills the host when the failure ends it,
    /// and schedules its restart. `Ok(None)` means the host is backing off or disabled
    /// and was not asked.
    pub async fn call(
        &mut self,
        hook: &HookRef,
        params: Value,
    ) -> Result<Option<Value>, CallFailure> {
        let index = hook.host;
        if let Some(not_asked) = self.ready(hook).await {
            return not_asked;
        }
        let deadline = Deadline::call(&self.hosts[index].cfg, hook.family);
        let running = self.hosts[index]
            .running
            .as_mut()
            .expect("ready() started it");
        let started = Instant::now();
        let answer = running
            .call(&in_flight(hook), Some(params), &deadline)
            .await;
        self.settle(hook, started.elapsed(), answer).await
    }

    /// Makes the host of `hook` ready for a call: `None` when it is running (started now
    /// if needed), otherwise what the call comes to without asking it (`Ok(None)` while
    /// disabled or backing off, the start failure, recorded).
    async fn ready(&mut self, hook: &HookRef) -> Option<Result<Option<Value>, CallFailure>> {
        let index = hook.host;
        self.disable_on_write_breach(index);
        if self.hosts[index].disabled
            || Instant::now() < self.hosts[index].next_start && self.hosts[index].running.is_none()
        {
            return Some(Ok(None));
        }
        if self.hosts[index].running.is_none() {
            match self.start(index).await {
                Ok(result) => self.keep_first_declarations(index, &result),
                Err(failure) => {
                    self.note_failure(index, hook, &failure);
                    return Some(Err(failure));
                }
            }
        }
        None
    }

    /// A restarted host keeps the hooks, event kinds and owned paths of its first
    /// `initialize`; a new `initialize` that declares otherwise is recorded
    /// (`plugin_redeclaration_ignored`) and has no effect (docs/protocol.md §3, "A
    /// restarted host").
    fn keep_first_declarations(&mut self, index: usize, result: &InitializeResult) {
        let host = &self.hosts[index];
        let first = Declarations::new(
            self.hooks
                .iter()
                .filter(|h| h.host == index)
                .map(|h| (h.family, h.name.as_str(), h.priority)),
            &host.declared.event_kinds,
            &host.declared.owned_paths,
        );
        let now = Declarations::new(
            result
                .hooks
                .iter()
                .map(|d| (d.family, d.name.as_str(), d.priority.unwrap_or(0))),
            &result.event_kinds,
            &result.owned_paths,
        );
        let (changed, detail) = first.changed(&now);
        if changed.is_empty() {
            return;
        }
        tracing::warn!(host = %host.cfg.name, %detail, "restarted host declared otherwise; its first declarations stay");
        self.events.emit(Event::PluginRedeclarationIgnored {
            name: host.cfg.name.clone(),
            changed,
            detail: redact_and_cap(&detail),
        });
    }

    /// Books one answered or failed call of `hook` that took `elapsed`: counters, the
    /// failure record, and killing the host when the failure ends it.
    async fn settle(
        &mut self,
        hook: &HookRef,
        elapsed: Duration,
        answer: Result<Value, CallFailure>,
    ) -> Result<Option<Value>, CallFailure> {
        let index = hook.host;
        self.hosts[index].stats.record_call(elapsed);
        self.call_durations
            .entry(hook.family)
            .or_default()
            .observe(elapsed);
        match answer {
            Ok(value) => {
                self.hosts[index].consecutive_failures = 0;
                Ok(Some(value))
            }
            Err(mut failure) => {
                if failure.error_type.ends_host() {
                    if let Some(running) = self.hosts[index].running.take() {
                        failure = running.end(failure).await;
                    }
                }
                self.note_failure(index, hook, &failure);
                self.disable_on_write_breach(index);
                Err(failure)
            }
        }
    }

    /// Calls every hook of `calls` (each with its family's method and its params), hosts
    /// concurrently and each host's calls in order, one request in flight per host
    /// (docs/protocol.md §1). Results come back in the order of `calls`, booked as
    /// [`HostManager::call`] books them. A graceful stop abandons the batch: every host
    /// with a call in flight is killed (it starts again later) and `None` is returned.
    pub(crate) async fn call_all(
        &mut self,
        calls: Vec<(HookRef, Value)>,
        stop: &mut crate::record::stop::StopWatch,
    ) -> Option<Vec<Result<Option<Value>, CallFailure>>> {
        let mut results: Vec<Option<Result<Option<Value>, CallFailure>>> =
            calls.iter().map(|_| None).collect();
        // Per host: the running process (taken out while its calls are in flight) and
        // its calls as (position in `calls`, method, params, timeout).
        let mut batches: Vec<(usize, RunningHost, Vec<PendingCall>)> = Vec::new();
        for (i, (hook, params)) in calls.iter().enumerate() {
            let deadline = Deadline::call(&self.hosts[hook.host].cfg, hook.family);
            if let Some(batch) = batches.iter_mut().find(|b| b.0 == hook.host) {
                batch.2.push((i, in_flight(hook), params.clone(), deadline));
                continue;
            }
            if let Some(not_asked) = self.ready(hook).await {
                results[i] = Some(not_asked);
                continue;
            }
            let running = self.hosts[hook.host]
                .running
                .take()
                .expect("ready() started it");
            batches.push((
                hook.host,
                running,
                vec![(i, in_flight(hook), params.clone(), deadline)],
            ));
        }
        let flights = batches.iter_mut().map(|(_, running, batch)| async move {
            let mut answers = Vec::with_capacity(batch.len());
            for (i, call, params, deadline) in batch.drain(..) {
                let started = Instant::now();
                let answer = running.call(&call, Some(params), &deadline).await;
                let ends = answer.as_ref().is_err_and(|f| f.error_type.ends_host());
                answers.push((i, started.elapsed(), answer));
                if ends {
                    break; // the rest of this host's calls are not asked
                }
            }
            answers
        });
        let answers = tokio::select! {
            answers = futures_util::future::join_all(flights) => Some(answers),
            _ = crate::record::stop::reached(stop, crate::record::stop::StopLevel::Graceful) => None,
        };
        let Some(answers) = answers else {
            for (_, running, _) in batches {
                running.kill().await;
            }
            return None;
        };
        for (index, running, _) in batches {
            self.hosts[index].running = Some(running);
        }
        for (i, elapsed, answer) in answers.into_iter().flatten() {
            results[i] = Some(self.settle(&calls[i].0, elapsed, answer).await);
        }
        Some(results.into_iter().map(|r| r.unwrap_or(Ok(None))).collect())
    }

    /// Records the `events` a result of `hook` carried (docs/protocol.md §5.7), each as
    /// `<host>.<kind>` with its fields plus `host` and `hook`. Events breaking the rules
    /// (undeclared kind, too many, too large) make the call's result invalid: nothing is
    /// recorded and the failure is booked as `invalid_result`.
    pub(crate) fn record_host_events(&mut self, hook: &HookRef, events: Vec<HostEvent>) -> bool {
        let host = &self.hosts[hook.host];
        if let Err(err) = check_host_events(&events, &host.declared.event_kinds) {
            self.invalid_result(hook, format!("{} result {err}", hook.family.method()));
            return false;
        }
        for event in events {
            let mut fields = event.fields;
            fields.insert("host".into(), Value::from(host.cfg.name.as_str()));
            fields.insert("hook".into(), Value::from(hook.name.as_str()));
            self.events
                .emit_host_event(&format!("{}.{}", host.cfg.name, event.kind), fields);
        }
        true
    }

    /// The config table of the host serving `hook` (what `initialize` sent it).
    pub(crate) fn host_config(&self, hook: &HookRef) -> &serde_json::Map<String, Value> {
        &self.hosts[hook.host].cfg.config
    }

    /// The paths (relative to `work_dir`) owned by registered hosts, sorted, without
    /// duplicates (docs/protocol.md §5.8).
    pub(crate) fn owned_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self
            .hosts
            .iter()
            .flat_map(|h| h.declared.owned_paths.iter())
            .map(|p| p.trim_end_matches('/').to_owned())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    /// [`HostManager::call`] raced against a graceful stop: when the stop arrives first the
    /// call is abandoned, the host killed (it starts again on a later call) and `None`
    /// returned, so a hung hook never holds a stop for longer than the kill takes.
    pub(crate) async fn call_unless_stopped(
        &mut self,
        hook: &HookRef,
        params: Value,
        stop: &mut crate::record::stop::StopWatch,
    ) -> Option<Result<Option<Value>, CallFailure>> {
        tokio::select! {
            result = self.call(hook, params) => return Some(result),
            _ = crate::record::stop::reached(stop, crate::record::stop::StopLevel::Graceful) => {}
        }
        if let Some(running) = self.hosts[hook.host].running.take() {
            running.kill().await;
        }
        None
    }

    /// Records a failure that happened outside a call's own result (e.g. a result that
    /// failed validation in the caller).
    pub(crate) fn invalid_result(&mut self, hook: &HookRef, message: String) {
        let failure = CallFailure::new(ErrorType::InvalidResult, message);
        self.note_failure(hook.host, hook, &failure);
    }

    fn note_failure(&mut self, index: usize, hook: &HookRef, failure: &CallFailure) {
        self.record_failure(index, hook.name.as_str(), hook.family.as_str(), failure);
    }

    fn record_failure(
        &mut self,
        index: usize,
        hook_name: &str,
        hook_kind: &str,
        failure: &CallFailure,
    ) {
        let managed = &mut self.hosts[index];
        managed.stats.record_failure(format!(
            "{}: {}",
            failure.error_type.as_str(),
            failure.message
        ));
        if failure.error_type == ErrorType::KilledBySandbox {
            self.events.emit(Event::PluginSandboxKill {
                hook: hook_name.to_owned(),
                host: managed.cfg.name.clone(),
                signal: failure.signal,
                syscall: failure.syscall.map(str::to_owned),
            });
        }
        self.events.emit(Event::HookFailed {
            hook_name: hook_name.to_owned(),
            hook_kind: hook_kind.to_owned(),
            host: managed.cfg.name.clone(),
            error_type: failure.error_type.as_str().to_owned(),
            error_message: failure.message.clone(),
            stderr_tail: failure.stderr_tail.clone(),
        });
        tracing::warn!(host = %managed.cfg.name, hook = hook_name, error_type = failure.error_type.as_str(), "{}", failure.message);
        managed.consecutive_failures += 1;
        let n = managed.consecutive_failures;
        managed.next_start = Instant::now() + backoff(n);
        if n >= MAX_CONSECUTIVE_FAILURES && !managed.disabled {
            managed.disabled = true;
            self.events.emit(Event::PluginDisabled {
                name: managed.cfg.name.clone(),
                consecutive_failures: n,
                reason: format!("{n} consecutive failed calls; disabled for the rest of this run"),
            });
        }
    }

    /// Disables host `index` (`plugin_disabled`) once its state directory went over its
    /// limit (the watch has killed it and recorded `plugin_write_limit`).
    fn disable_on_write_breach(&mut self, index: usize) {
        let managed = &mut self.hosts[index];
        if managed.disabled || !managed.write_breach.load(Ordering::SeqCst) {
            return;
        }
        managed.disabled = true;
        managed.running = None;
        self.events.emit(Event::PluginDisabled {
            name: managed.cfg.name.clone(),
            consecutive_failures: managed.consecutive_failures,
            reason: format!(
                "its state directory went over state_max_mb = {} MiB; disabled for the rest of this run",
                managed.cfg.writes.state_max_mb
            ),
        });
    }

    /// Each host's name, state and pid (for status displays).
    pub(crate) fn states(&self) -> Vec<(String, HostState, Option<u32>)> {
        self.hosts
            .iter()
            .map(|h| {
                let state = if h.disabled {
                    HostState::Disabled
                } else if h.running.is_some() {
                    HostState::Running
                } else {
                    HostState::Backoff
                };
                (
                    h.cfg.name.clone(),
                    state,
                    h.running.as_ref().map(RunningHost::pid),
                )
            })
            .collect()
    }

    /// The durations of this run's hook calls, per family (for `service.json`).
    pub fn call_durations(&self) -> &std::collections::BTreeMap<Family, CallHistogram> {
        &self.call_durations
    }

    /// Each host's state, pid, registered hook names and call counters (for
    /// `service.json` and `peek`).
    pub fn status(&self) -> Vec<HostStatus> {
        self.states()
            .into_iter()
            .zip(&self.hosts)
            .enumerate()
            .map(|(index, ((name, state, pid), host))| HostStatus {
                name,
                state,
                pid,
                hooks: self
                    .hooks
                    .iter()
                    .filter(|h| h.host == index)
                    .map(|h| h.name.as_str().to_owned())
                    .collect(),
                stats: host.stats.clone(),
                hook_families: self
                    .hooks
                    .iter()
                    .filter(|h| h.host == index)
                    .map(|h| (h.family, h.name.as_str().to_owned()))
                    .collect(),
                declared: host.declared.clone(),
            })
            .collect()
    }

    /// Shuts every host down (`shutdown`, EOF, grace, group kill), concurrently.
    pub async fn shutdown(self) {
        let stops: Vec<_> = self
            .hosts
            .into_iter()
            .filter_map(|h| h.running)
            .map(|r| tokio::spawn(r.shutdown()))
            .collect();
        for stop in stops {
            let _ = stop.await;
        }
    }
}

/// The call of `hook`: its family's method and its name.
fn in_flight(hook: &HookRef) -> InFlight {
    InFlight {
        method: hook.family.method(),
        hook: Some(hook.name.as_str().to_owned()),
    }
}

/// Wait before restart number `failures`: none after the first failure, then 1 s, 2 s,
/// 4 s… up to [`MAX_BACKOFF`].
fn backoff(failures: u32) -> Duration {
    match failures {
        0 | 1 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 2).min(6)).min(MAX_BACKOFF),
    }
}

/// A host whose `initialize` got -32001 speaks another protocol version: say both sides.
fn version_refusal(failure: CallFailure) -> CallFailure {
    match &failure.rpc {
        Some((code, data))
            if *code == agent_runner_protocol::error_codes::UNSUPPORTED_PROTOCOL_VERSION =>
        {
            CallFailure::new(
                ErrorType::RpcError,
                format!(
                "host does not speak protocol version {PROTOCOL_VERSION} (it supports {}); refused",
                data.as_deref().unwrap_or("unknown versions")
            ),
            )
            .with_rpc(*code, data.clone())
        }
        _ => failure,
    }
}
