//! A host's life in the manager: admitted at boot (resolve, hash, pin check, launch,
//! `initialize`, its hooks registered), started again after a failure, shut down.

use agent_runner_plugin_host::host::launch::LaunchSpec;
use agent_runner_protocol::redact::redact_and_cap;
use agent_runner_protocol::{
    decode_initialize_result, methods, HookName, InitializeResult, PROTOCOL_VERSION,
};
use std::sync::Arc;
use std::time::Instant;

use super::builtin;
use super::call_failure::{CallFailure, ErrorType};
use super::cause::{Bounds, Deadline, InFlight};
use super::declarations::{declaration_problems, DeclarationProblem, Declarations};
use super::host::RunningHost;
use super::launch::{host_initialize_params, initialize_params, launch_spec};
use super::pins::{check_pin, PinStatus};
use super::stats::CallStats;
use super::write_watch;
use super::{Declared, HookRef, HostManager, ManagedHost};
use crate::config::{Config, HostConfig};
use crate::hosts::sandbox::SandboxGate;
use crate::record::events::{Event, EventLog};

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
            call_log: None,
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

    /// Admits, starts and registers one host (after recording why, refused or disabled
    /// when any step fails).
    pub(super) async fn add(&mut self, config: &Config, gate: &SandboxGate, cfg: &HostConfig) {
        let Some(spec) = self.admit(config, gate, cfg) else {
            return;
        };
        let pin = config.plugins.pins.get(&cfg.name).copied();
        self.launch(cfg, pin, spec, false).await;
    }

    /// Admits, starts and registers the built-in detector host ([`builtin::admit`]),
    /// unless `config` or [`builtin::DetectorHost::Off`] leaves it out.
    pub(super) async fn add_builtin(&mut self, config: &Config, gate: &SandboxGate) {
        if let Some((cfg, spec)) = builtin::admit(config, gate, &self.events, &self.detectors) {
            self.launch(&cfg, None, spec, true).await;
        }
    }

    /// Starts and registers one admitted host (disabled, after recording why, when its
    /// `initialize` fails).
    pub(super) async fn launch(
        &mut self,
        cfg: &HostConfig,
        pin: Option<agent_runner_plugin_host::host::pin::Sha256Pin>,
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

    pub(super) fn sort_hooks(&mut self) {
        self.hooks.sort_by(|a, b| {
            a.priority
                .cmp(&b.priority)
                .then_with(|| a.name.cmp(&b.name))
        });
    }

    /// Resolves, hashes and pin-checks one host; `None` (after recording why) if refused.
    pub(super) fn admit(
        &self,
        config: &Config,
        gate: &SandboxGate,
        cfg: &HostConfig,
    ) -> Option<LaunchSpec> {
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
    pub(super) async fn start(&mut self, index: usize) -> Result<InitializeResult, CallFailure> {
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
    pub(super) fn register(&mut self, index: usize, result: InitializeResult) {
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
            // The built-in detector host declares exactly the reserved detector and
            // output watch names.
            problems.retain(|p| !matches!(p, DeclarationProblem::BuiltinName(_)));
            if let Some(other) = decls.iter().find(|d| {
                !crate::detectors::names().any(|n| n == d.name.as_str())
                    && !crate::detectors::watch_names().any(|n| n == d.name.as_str())
            }) {
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

    /// A restarted host keeps the hooks, event kinds and owned paths of its first
    /// `initialize`; a new `initialize` that declares otherwise is recorded
    /// (`plugin_redeclaration_ignored`) and has no effect (docs/protocol.md §3, "A
    /// restarted host").
    pub(super) fn keep_first_declarations(&mut self, index: usize, result: &InitializeResult) {
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
