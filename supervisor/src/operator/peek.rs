//! `peek`: one look at a project, for a person (a short summary) or a script (`--json`,
//! the reference system's document plus our `hosts` block; schema in
//! `docs/schema/peek.schema.json`, fields in `docs/operations.md`).
//!
//! Read-only: it reads the config, `service.json`, the lock file's pid, the state files,
//! the tail of the event record and round logs, and hashes host executables for their pin
//! status. It never writes, never takes the lock, never starts a host, and works when
//! `log_dir` does not exist yet.

use agent_runner_plugin_host::probe::probe;
use agent_runner_protocol::Family;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use crate::config::Config;
use crate::exit::CliError;
use crate::hosts::check_pin;
use crate::hosts::sandbox::SandboxGate;
use crate::operator::event_read;
use crate::operator::install::{unit_name, Scope};
use crate::operator::round_history::{self, RoundView};
use crate::operator::service::{self, ServiceDoc};
use crate::operator::system_metrics;
use crate::runtime::events::{Event, Recorded};
use crate::runtime::state::{self, OrphanState, RoundState};

/// The document's `schema_version`: the reference system's (`"2.2"`), whose every key this
/// document carries with its type (a superset: ours are added under keys it does not use;
/// docs/operations.md). Fields are only added within a version.
pub const SCHEMA_VERSION: &str = "2.2";

/// How much of the end of the event record one look reads.
pub const EVENT_TAIL_BYTES: u64 = 1 << 20;
/// Recent events shown by default (`--events N` changes it).
pub const DEFAULT_EVENTS: usize = 20;
/// Completed rounds listed in `recent_rounds`.
pub const RECENT_ROUNDS: usize = 10;
/// `hook_failed` events listed in `recent_hook_failures`.
pub const RECENT_HOOK_FAILURES: usize = 10;
/// The end of a round log shown as `log_tail`, in bytes.
pub const LOG_TAIL_BYTES: usize = 4096;

/// Which round `--round` asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundSel {
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
pub struct PeekOptions {
    /// Add a `round` block for this round.
    pub round: Option<RoundSel>,
    /// How many recent events to include (`None`: [`DEFAULT_EVENTS`]).
    pub events: Option<usize>,
}

/// Everything a look found (the JSON document, plus what the human form needs).
pub struct Snapshot {
    /// The document.
    pub doc: Value,
    /// The round `--round` resolved to, and its log file.
    pub round_log: Option<(u64, Option<std::path::PathBuf>)>,
}

/// Takes one look at the project of `config`.
pub fn snapshot(config: &Config, options: &PeekOptions) -> Snapshot {
    let now = SystemTime::now();
    let log_dir = &config.runtime.log_dir;
    let batch = event_read::tail(log_dir, EVENT_TAIL_BYTES).unwrap_or_default();
    let events = &batch.events;
    let live = service::live_supervisor(log_dir);
    let service_doc = service::read(log_dir);
    let current_doc = service_doc.as_ref().filter(|d| Some(d.pid) == live);
    let rounds = round_history::rounds(events);

    let running_round = live.and_then(|_| rounds.values().next_back().filter(|r| !r.ended));
    let current_round = running_round.map(|r| {
        let tail = r
            .log_path
            .as_deref()
            .and_then(|p| round_history::tail_text(Path::new(p), LOG_TAIL_BYTES));
        r.to_json(now, tail, events)
    });
    let completed: Vec<&RoundView> = rounds
        .values()
        .filter(|r| running_round.is_none_or(|c| c.round_num != r.round_num))
        .collect();
    let recent_rounds: Vec<Value> = completed
        .iter()
        .skip(completed.len().saturating_sub(RECENT_ROUNDS))
        .map(|r| r.to_json(now, None, &[]))
        .collect();
    let last_done = completed.iter().rev().find(|r| r.ended);

    let round_state: RoundState = state::read_json(&log_dir.join(state::STATE_FILE))
        .ok()
        .flatten()
        .unwrap_or_default();
    let orphan: Option<OrphanState> = state::read_json(&log_dir.join(state::ORPHAN_FILE))
        .ok()
        .flatten();

    let n_events = options.events.unwrap_or(DEFAULT_EVENTS);
    let recent_events = &events[events.len().saturating_sub(n_events)..];
    let hook_failures: Vec<&Recorded> = events
        .iter()
        .filter(|e| matches!(e.event, Some(Event::HookFailed { .. })))
        .collect();
    let recent_hook_failures =
        &hook_failures[hook_failures.len().saturating_sub(RECENT_HOOK_FAILURES)..];

    let caps = probe();
    let gate = SandboxGate::evaluate(config.plugins.sandbox, caps.clone()).ok();
    let (pins, hosts) = hosts_block(config, service_doc.as_ref(), current_doc.is_some());
    let covers = crate::operator::doctor::covered_families(&hosts, gate.as_ref());
    let sandbox =
        crate::operator::doctor::sandbox_block(Some(config), &caps, gate.as_ref(), covers);

    let mut round_log = None;
    let mut doc = json!({
        "schema_version": SCHEMA_VERSION,
        "project": config.project,
        "config": config.path,
        "log_dir": log_dir,
        "status": {
            "round_num": round_state.last_round,
            "running": running_round.is_some(),
            "last_completed_at": last_done.and_then(|r| r.ended_at.clone()),
            "last_exit_code": last_done.and_then(|r| r.exit_code),
            "last_duration_s": last_done.and_then(|r| r.duration_s),
            "phase_index": 0,
        },
        "plugins": plugins_block(config, &hosts, sandbox, pins),
        "current_round": current_round,
        "recent_rounds": recent_rounds,
        "orphan": orphan,
        "system": system_metrics::snapshot(log_dir, &config.agent.command[0]),
        "service": service_block(config, live, current_doc, service_doc.as_ref(), now),
        "recent_events": recent_events,
        "recent_hook_failures": recent_hook_failures,
        "defenses": crate::operator::defenses::list(config, gate.as_ref()),
        // The reference system's transient-error blips, cgroup growth warnings and
        // `[schedule]`: this build has none of them (docs/operations.md).
        "recent_blips": [],
        "recent_cgroup_growth_warnings": [],
        "schedule": null,
        "hosts": hosts,
        "skipped_event_lines": batch.skipped,
    });
    if let Some(sel) = options.round {
        let num = match sel {
            RoundSel::Num(n) => Some(n),
            RoundSel::Latest => rounds
                .keys()
                .next_back()
                .copied()
                .max(round_history::latest_logged_round(log_dir)),
        };
        let view = num.map(|n| {
            rounds.get(&n).cloned().unwrap_or(RoundView {
                round_num: n,
                ..RoundView::default()
            })
        });
        let block = view.map(|mut view| {
            let file = view
                .log_path
                .clone()
                .map(std::path::PathBuf::from)
                .filter(|p| p.is_file())
                .or_else(|| round_history::log_file(log_dir, view.round_num));
            if view.log_path.is_none() {
                view.log_path = file.as_ref().map(|p| p.display().to_string());
            }
            let tail = file
                .as_deref()
                .and_then(|p| round_history::tail_text(p, LOG_TAIL_BYTES));
            round_log = Some((view.round_num, file));
            view.to_json(now, tail, events)
        });
        doc["round"] = block.unwrap_or(Value::Null);
    }
    Snapshot { doc, round_log }
}

/// The `plugins` block: the reference system's keys (`event_kinds`, one list of hook
/// names per family registry — `context_enrichers`, `pre_round_hooks`,
/// `post_round_hooks`, `detectors` — `owned_paths`, `disabled`, `sandbox`, `pins`,
/// `spawn_override_allow`) plus our families it has no registry list for
/// (`spawn_hooks`, `dirty_handlers`, `serve_startup_hooks`). Hooks, event kinds and owned
/// paths are those the enabled hosts declared to the last `serve` (`service.json`).
fn plugins_block(
    config: &Config,
    hosts: &[Value],
    sandbox: Map<String, Value>,
    pins: Map<String, Value>,
) -> Value {
    let enabled = || hosts.iter().filter(|h| h["disabled"] == false);
    let gather = |key: &str| -> Vec<String> {
        let mut items: Vec<String> = enabled()
            .flat_map(|h| h[key].as_array().cloned().unwrap_or_default())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        items.sort();
        items.dedup();
        items
    };
    let mut block = Map::new();
    block.insert("event_kinds".into(), json!(gather("event_kinds")));
    // post_round_hooks: the reference system's key; that family is not in this build yet.
    block.insert("post_round_hooks".into(), json!([]));
    for family in Family::ALL {
        let mut names: Vec<String> = enabled()
            .flat_map(|h| {
                h["families"][family.as_str()]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        names.sort();
        block.insert(family.registry_key().into(), json!(names));
    }
    block.insert("owned_paths".into(), json!(gather("owned_paths")));
    block.insert("disabled".into(), json!(config.plugins.disable));
    block.insert("sandbox".into(), Value::Object(sandbox));
    block.insert("pins".into(), Value::Object(pins));
    block.insert(
        "spawn_override_allow".into(),
        json!(config
            .plugins
            .spawn_override_allow
            .iter()
            .map(|h| h.as_str())
            .collect::<Vec<_>>()),
    );
    Value::Object(block)
}

/// `plugins.pins` (`name: verified|mismatch|unpinned|unresolvable`) and the `hosts` block.
fn hosts_block(
    config: &Config,
    service_doc: Option<&ServiceDoc>,
    live: bool,
) -> (Map<String, Value>, Vec<Value>) {
    let mut pins = Map::new();
    let mut hosts = Vec::new();
    for cfg in &config.plugins.hosts {
        let checked = check_pin(config, cfg);
        let pin_status = match &checked {
            Ok(c) => c.status.as_str(),
            Err(_) => "unresolvable",
        };
        pins.insert(cfg.name.clone(), json!(pin_status));
        let disabled = config.plugins.disable.contains(&cfg.name);
        let seen = service_doc.and_then(|d| d.hosts.iter().find(|h| h.name == cfg.name));
        let state = match (disabled, seen, live) {
            (true, _, _) => "disabled".to_owned(),
            (false, Some(h), true) => h.state.clone(),
            (false, None, true) => "refused".to_owned(),
            (false, _, false) => "stopped".to_owned(),
        };
        hosts.push(json!({
            "name": cfg.name,
            "state": state,
            "disabled": disabled,
            "pid": seen.filter(|_| live).and_then(|h| h.pid),
            "hooks": seen.map(|h| h.hooks.clone()).unwrap_or_default(),
            "families": seen.map(|h| json!(h.families)).unwrap_or_else(|| json!({})),
            "event_kinds": seen.map(|h| h.event_kinds.clone()).unwrap_or_default(),
            "owned_paths": seen.map(|h| h.owned_paths.clone()).unwrap_or_default(),
            "provides": cfg.provides.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
            "calls": seen.map_or(0, |h| h.calls),
            "failures": seen.map_or(0, |h| h.failures),
            "last_error": seen.and_then(|h| h.last_error.clone()),
            "call_latency_p50_ms": seen.and_then(|h| h.call_latency_p50_ms),
            "pin_status": pin_status,
            "sha256": checked.as_ref().ok().map(|c| c.actual.to_string()),
            "executable": checked.as_ref().ok().map(|c| c.path.display().to_string()),
            "error": checked.as_ref().err(),
        }));
    }
    (pins, hosts)
}

/// The reference system's `service` block (`mode`, `active`, `pid`, `uptime_s`,
/// `unit_file`, `rate_limit`, `system_managed`) plus ours: `state` (from `service.json`
/// when its writer is the live supervisor; `round` when a one-off `round` holds the lock;
/// `stopped` otherwise), `stale` (a `service.json` left by a supervisor that died without
/// marking it stopped), `updated_at`, `serve_current_round`.
fn service_block(
    config: &Config,
    live: Option<u32>,
    current: Option<&ServiceDoc>,
    last: Option<&ServiceDoc>,
    now: SystemTime,
) -> Value {
    let name = unit_name(config);
    let user_unit = Scope::User.unit_dir().join(&name);
    let system_unit = Scope::System.unit_dir().join(&name);
    let user_installed = user_unit.is_file();
    let system_installed = system_unit.is_file();
    let mode = if user_installed {
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
    let state = match (live, current) {
        (Some(_), Some(doc)) => doc.state.as_str(),
        (Some(_), None) => "round",
        (None, _) => "stopped",
    };
    let stale = live.is_none() && last.is_some_and(|d| d.state != service::ServiceState::Stopped);
    json!({
        "mode": mode,
        "active": live.is_some(),
        "pid": live,
        "uptime_s": uptime_s,
        "unit_file": if user_installed { Some(user_unit) } else if system_installed { Some(system_unit) } else { None },
        "rate_limit": null,
        "system_managed": system_installed,
        "state": state,
        "stale": stale,
        "updated_at": last.map(|d| d.updated_at.clone()),
        "serve_current_round": current.and_then(|d| d.current_round.clone()),
    })
}

/// What the `peek` verb prints.
#[derive(Clone, Debug, Default)]
pub struct PeekOutput {
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
pub fn run(config_path: &Path, output: &PeekOutput) -> Result<u8, CliError> {
    let config = crate::config::load(config_path)?;
    let mut options = output.options.clone();
    if output.log && options.round.is_none() {
        options.round = Some(RoundSel::Latest);
    }
    let snap = snapshot(&config, &options);
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
        let mut log = std::fs::File::open(&file)
            .map_err(|e| CliError::failure(format!("cannot read {}: {e}", file.display())))?;
        let _ = std::io::copy(&mut log, &mut stdout);
        return Ok(crate::exit::OK);
    }
    if let Some(path) = &output.select {
        let value = select(&snap.doc, path).ok_or_else(|| {
            CliError::failure(format!(
                "peek --select: no value at `{path}` (top-level keys: {})",
                snap.doc
                    .as_object()
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
            serde_json::to_string_pretty(&snap.doc).unwrap_or_default()
        );
    } else {
        let text = crate::operator::peek_render::render(
            &snap.doc,
            crate::operator::peek_render::use_colour(),
            output.options.events.is_some(),
        );
        let _ = write!(stdout, "{text}");
    }
    Ok(crate::exit::OK)
}

/// The value at dotted `path` (`plugins.sandbox.achieved_tier`; array elements by index,
/// `recent_rounds.0.exit_code`), `None` if there is none.
pub fn select<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
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
}
