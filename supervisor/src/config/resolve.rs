//! From the raw shape to a typed [`Config`]: vocabulary checks, defaults, absolute paths.

use agent_runner_plugin_host::common::credentials::{covers_protected, CREDENTIAL_PATHS};
use agent_runner_plugin_host::host::pin::Sha256Pin;
use agent_runner_protocol::limits::MAX_HOST_CONFIG_BYTES;
use agent_runner_protocol::{Family, HookName};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::bad_path::{BadPath, HomeNotSet};
use super::keys::Bad;
pub use super::raw::{AgentConfig, HostConfig, PromptConfig};
use super::raw::{
    AgentHand, HostHand, PhasesHand, PluginsHand, PromptHand, RawAgent, RawConfig, RawHost,
    RawPhase, RawPhases, RawPlugins, RawPrompt, RawRuntime, RawSchedule, RawVcs, RuntimeHand,
    VcsHand,
};
use super::raw::{
    PhaseOverride, PhasesConfig, PluginsConfig, RuntimeConfig, VcsConfig, WriteLimits,
};
use super::vocabulary::{ContextInjection, PromptDelivery};
use super::{ConfigError, SCHEMA_VERSION};
use crate::config::schedule::{Schedule, Window};

/// The whole configuration, validated, with absolute paths.
#[derive(Clone, Debug)]
pub struct Config {
    /// Absolute path of the config file.
    pub path: PathBuf,
    /// The project's name: the last component of `work_dir`.
    pub project: String,
    /// `[agent]`.
    pub agent: AgentConfig,
    /// `[agent.sandbox]`: the agent's own confinement (every phase).
    pub agent_sandbox: super::AgentSandboxConfig,
    /// `[runtime]`.
    pub runtime: RuntimeConfig,
    /// `[prompt]`.
    pub prompt: PromptConfig,
    /// `[vcs]`.
    pub vcs: VcsConfig,
    /// `[plugins]`.
    pub plugins: PluginsConfig,
    /// `[phases]`.
    pub phases: PhasesConfig,
    /// `[monitor]` (host health, detectors, the ssh relay, login stops).
    pub monitor: super::MonitorConfig,
    /// `[schedule]`: when rounds may start (no windows: always).
    pub schedule: Schedule,
    /// `[goal]`: objective checks after each round and the lessons ledger; `None` without
    /// the table.
    pub goal: Option<super::GoalConfig>,
    /// `[budget]`: caps on money and tokens (none without the table).
    pub budget: super::budget::BudgetConfig,
    /// `[telemetry]` and the standard `OTEL_*` variables: where each round's trace goes.
    pub telemetry: super::telemetry::TelemetryConfig,
    /// `[notify]`: webhooks told of the events that need a person (none without the
    /// table).
    pub notify: super::NotifyConfig,
    /// Lines printed once by [`super::load`] (today: the startup check skipped by its
    /// environment variable).
    pub warnings: Vec<String>,
}

/// What one round runs with once its phase is known.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Profile<'a> {
    /// The agent.
    pub agent: &'a AgentConfig,
    /// The round budget.
    pub round_budget: Duration,
    /// The prompt files.
    pub prompt_files: &'a [PathBuf],
    /// When rounds of this phase may start.
    pub schedule: &'a Schedule,
    /// Its pre-round hooks are not asked (`disable_pre_round_hooks`).
    pub disable_pre_round_hooks: bool,
}

impl Config {
    /// The phase of round `round_num` (1-based): `list[(round_num - 1) % len]`, or `None`
    /// without phases.
    pub(crate) fn phase_for_round(&self, round_num: u64) -> Option<&str> {
        let len = self.phases.list.len() as u64;
        (len > 0).then(|| self.phases.list[(round_num.saturating_sub(1) % len) as usize].as_str())
    }

    /// The profile of `phase`: the base config with that phase's overrides applied.
    /// A phase without a table (or `None`) gets the base config.
    pub(crate) fn profile<'a>(&'a self, phase: Option<&'a str>) -> Profile<'a> {
        let over = phase.and_then(|p| self.phases.overrides.get(p));
        Profile {
            agent: over.and_then(|o| o.agent.as_ref()).unwrap_or(&self.agent),
            round_budget: over
                .and_then(|o| o.round_budget)
                .unwrap_or(self.runtime.round_budget),
            prompt_files: over
                .and_then(|o| o.prompt_files.as_deref())
                .unwrap_or(&self.prompt.files),
            schedule: over
                .and_then(|o| o.schedule.as_ref())
                .unwrap_or(&self.schedule),
            disable_pre_round_hooks: over
                .and_then(|o| o.disable_pre_round_hooks)
                .unwrap_or(self.runtime.disable_pre_round_hooks),
        }
    }
}

impl HostConfig {
    /// The call timeout for a hook of `family`.
    pub(crate) fn call_timeout(&self, family: Family) -> Duration {
        self.timeout
            .unwrap_or(Duration::from_secs(family.spec().default_timeout_s))
    }
}

/// The `(key, message)` of a bad key.
fn bad(key: impl Into<String>, message: impl Into<String>) -> Bad {
    (key.into(), message.into())
}

/// Resolves the whole file, table by table, in the order its keys are checked (the first
/// bad key is the one reported).
///
/// Errors: [`ConfigError::Key`] naming `path`, the dotted key and the expected value.
pub(super) fn resolve(path: &Path, raw: RawConfig) -> Result<Config, ConfigError> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let at = |(key, message): Bad| ConfigError::Key {
        path: path.clone(),
        key,
        message,
    };
    check_schema_version(raw.schema_version).map_err(at)?;
    let base = path.parent().map(Path::to_owned).unwrap_or_default();
    let places = resolve_places(&base, &raw.runtime).map_err(at)?;
    let numbers = resolve_numbers(&raw.runtime, &raw.vcs).map_err(at)?;
    let agent_sandbox = {
        let expand = |text: &str| -> Result<PathBuf, BadPath> {
            Ok(expand_path(text, &places.work_dir, &places.project)?)
        };
        super::agent_sandbox::resolve(
            &raw.agent.sandbox,
            &super::agent_sandbox::Protected {
                config_path: &path,
                log_dir: &places.log_dir,
                state_dir: &places.state_dir,
                expand: &expand,
            },
        )
        .map_err(at)?
    };
    confined_state_dir(&agent_sandbox, &places).map_err(at)?;
    let mut agent_writable = vec![places.work_dir.clone()];
    agent_writable.extend(agent_sandbox.write_paths.iter().cloned());
    let agent = resolve_agent(raw.agent, &places.work_dir, &agent_writable).map_err(at)?;
    let prompt = resolve_prompt(raw.prompt, &places).map_err(at)?;
    let base_zone = raw.schedule.as_ref().and_then(|s| s.timezone.clone());
    let schedule = resolve_schedule(raw.schedule.unwrap_or_default(), None)
        .map_err(|(k, m)| at(bad(format!("schedule.{k}"), m)))?;
    let phases =
        resolve_phases(raw.phases, &places, &agent_writable, base_zone.as_deref()).map_err(at)?;
    let mut warnings = Vec::new();
    if startup_check_skipped() {
        warnings.push(format!(
            "{SKIP_STARTUP_CHECK_ENV} is set: the phase run_windows overlap check is skipped \
             (sandbox, pin and every other check still run)"
        ));
    } else {
        refuse_overlapping_windows(&phases.list, &phases.overrides).map_err(at)?;
    }
    let runtime = resolve_runtime(raw.runtime, &places, &numbers).map_err(at)?;
    let vcs = resolve_vcs(&raw.vcs).map_err(at)?;
    let plugins = resolve_plugins(
        raw.plugins,
        raw.plugin_tables,
        &path,
        &places,
        &mut warnings,
    )
    .map_err(at)?;
    let monitor = super::monitor::resolve(raw.monitor, runtime.round_budget).map_err(at)?;
    let goal = raw
        .goal
        .map(|goal| resolve_goal(goal, &places, &prompt, &phases))
        .transpose()
        .map_err(at)?;
    let budget = super::budget::resolve(raw.budget).map_err(at)?;
    let (telemetry, told) =
        super::telemetry::resolve(raw.telemetry, |v| std::env::var(v).ok()).map_err(at)?;
    warnings.extend(told);
    let notify = super::notify::resolve(raw.notify).map_err(at)?;
    Ok(Config {
        budget,
        telemetry,
        notify,
        agent_sandbox,
        project: places.project,
        agent,
        runtime,
        prompt,
        vcs,
        plugins,
        phases,
        schedule,
        monitor,
        goal,
        warnings,
        path,
    })
}

/// `[goal]` ([`super::goal::resolve`]) against the prompt files of every phase. (The
/// reference system warns when the checks' worst case reaches its fast-spin window; here a
/// round's duration for the breakers is the agent's alone, so checks cannot delay them.)
fn resolve_goal(
    raw: super::goal::RawGoal,
    places: &Places,
    prompt: &PromptConfig,
    phases: &PhasesConfig,
) -> Result<super::GoalConfig, Bad> {
    let expand = |text: &str| -> Result<PathBuf, BadPath> {
        Ok(expand_path(text, &places.work_dir, &places.project)?)
    };
    let prompt_files: Vec<(String, &[PathBuf])> = if phases.list.is_empty() {
        vec![("prompt".to_owned(), &prompt.files[..])]
    } else {
        phases
            .list
            .iter()
            .map(|name| {
                match phases
                    .overrides
                    .get(name)
                    .and_then(|o| o.prompt_files.as_deref())
                {
                    Some(files) => (format!("phases.{name}.prompt"), files),
                    None => ("prompt".to_owned(), &prompt.files[..]),
                }
            })
            .collect()
    };
    super::goal::resolve(
        raw,
        &super::goal::Places {
            work_dir: &places.work_dir,
            log_dir: &places.log_dir,
            expand: &expand,
            prompt_files,
        },
    )
}

/// `schema_version`: present and the one this build reads ([`SCHEMA_VERSION`]).
fn check_schema_version(version: Option<i64>) -> Result<(), Bad> {
    match version {
        Some(SCHEMA_VERSION) => Ok(()),
        None => Err(bad(
            "schema_version",
            format!("missing; add `schema_version = {SCHEMA_VERSION}` at the top of the file"),
        )),
        Some(other) => Err(bad(
            "schema_version",
            format!("{other} is not supported; this agent-runner reads schema_version = {SCHEMA_VERSION}"),
        )),
    }
}

/// Where the project lives and where the supervisor writes: `[runtime]` `work_dir`,
/// `log_dir`, `state_dir`, absolute.
struct Places {
    /// The existing work dir, canonical.
    work_dir: PathBuf,
    /// Its last component.
    project: String,
    log_dir: PathBuf,
    state_dir: PathBuf,
}

/// `[runtime]` `work_dir` (relative to the config's directory `base`, existing), `log_dir`
/// and `state_dir` (default: [`crate::config::state_dir::default_for`]).
fn resolve_places(base: &Path, raw: &RawRuntime) -> Result<Places, Bad> {
    let work_dir = base.join(raw.work_dir()?);
    let work_dir = work_dir.canonicalize().map_err(|e| {
        bad(
            "runtime.work_dir",
            format!(
                "{}: {e}; expected an existing directory",
                work_dir.display()
            ),
        )
    })?;
    let project = work_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "project".to_owned());
    let mut log_dir = expand_key("runtime.log_dir", &raw.log_dir()?, &work_dir, &project)?;
    if raw.log_dir.is_none() && raw.state_dir.is_none() {
        // The default, shared by every tree of this folder name: each tree its own record.
        let key = crate::config::state_dir::key(&work_dir);
        let keyed_text = raw
            .log_dir()?
            .replace("{project}", &format!("{{project}}-{key}"));
        let keyed = expand_key("runtime.log_dir", &keyed_text, &work_dir, &project)?;
        log_dir = crate::config::state_dir::own_default(&work_dir, log_dir, keyed);
    }
    let state_dir = match raw.state_dir.as_deref() {
        Some(text) => expand_key("runtime.state_dir", text, &work_dir, &project)?,
        None => crate::config::state_dir::default_for(&work_dir, &log_dir, &project),
    };
    Ok(Places {
        work_dir,
        project,
        log_dir,
        state_dir,
    })
}

/// A confined agent may write its whole work tree (Landlock grants add up: no rule can
/// take a subdirectory back), so a `state_dir` inside the tree would hand it the lock, the
/// events, the round counter, the memory-loop counter and the session ids
/// (docs/security.md, "Attacked again: codex's bypass, `upgrade`, what the agent
/// reaches"). Refused under `prefer` and `require`; under `off` `doctor` warns.
fn confined_state_dir(sandbox: &super::AgentSandboxConfig, places: &Places) -> Result<(), Bad> {
    // Where it resolves, when it exists (a link from outside into the tree).
    let state_dir = places
        .state_dir
        .canonicalize()
        .unwrap_or_else(|_| places.state_dir.clone());
    if sandbox.mode == super::SandboxMode::Off
        || !crate::config::state_dir::in_tree(&places.work_dir, &state_dir)
    {
        return Ok(());
    }
    Err(bad(
        "runtime.state_dir",
        format!(
            "{} lies inside the work tree, which the confined agent ([agent.sandbox] mode = \"{}\") may write: it could forge the lock, events and counters; expected a directory outside the work tree (remove the key: the default is outside)",
            places.state_dir.display(),
            sandbox.mode.as_str()
        ),
    ))
}

/// [`expand_path`] of the value of `key`.
fn expand_key(key: &str, text: &str, work_dir: &Path, project: &str) -> Result<PathBuf, Bad> {
    expand_path(text, work_dir, project).map_err(|e| bad(key, e.to_string()))
}

/// The numbers other keys are checked against.
struct Numbers {
    restart_delay_s: u64,
}

/// `[vcs] git_timeout_s`, `[runtime]` `round_log_max_bytes`, `round_budget_s` and
/// `restart_delay_s` checked before every other table (the first bad key is the one
/// reported); `restart_delay_s` bounds `transient_backoff_cap_s`.
fn resolve_numbers(runtime: &RawRuntime, vcs: &RawVcs) -> Result<Numbers, Bad> {
    vcs.git_timeout_s()?;
    runtime.round_log_max_bytes()?;
    runtime.round_budget_s()?;
    Ok(Numbers {
        restart_delay_s: runtime.restart_delay_s()?,
    })
}

/// `[prompt]`: `file` or `files` (default `./prompts/main.md`), the separator, front
/// matter and how the round context is injected.
fn resolve_prompt(raw: RawPrompt, places: &Places) -> Result<PromptConfig, Bad> {
    let files = match (raw.file.clone(), raw.files.clone()) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "prompt.files",
                "`file` and `files` are exclusive; keep one",
            ))
        }
        (Some(file), None) => vec![file],
        (None, Some(files)) if files.is_empty() => {
            return Err(bad(
                "prompt.files",
                "expected a non-empty list of prompt files",
            ))
        }
        (None, Some(files)) => files,
        (None, None) => vec![raw.file()?],
    };
    let key = if files.len() == 1 {
        "prompt.file"
    } else {
        "prompt.files"
    };
    let files = resolve_prompt_files(&files, &places.work_dir, &places.project)
        .map_err(|m| bad(key, m.to_string()))?;
    let mode = raw.context_injection_mode()?;
    let injection = if raw.inject_context()? {
        mode
    } else {
        ContextInjection::None
    };
    raw.resolve_with(PromptHand { files, injection })
}

/// `[phases]`: `phase_policy`, the `list` of names and one override per
/// `[phases.<name>]` table (its `schedule.timezone` defaulting to `base_zone`).
fn resolve_phases(
    raw: RawPhases,
    places: &Places,
    agent_writable: &[PathBuf],
    base_zone: Option<&str>,
) -> Result<PhasesConfig, Bad> {
    let list = raw.keys.list();
    for (i, name) in list.iter().enumerate() {
        if name.trim().is_empty() {
            return Err(bad(
                format!("phases.list[{i}]"),
                "expected a non-empty phase name",
            ));
        }
    }
    let mut overrides = BTreeMap::new();
    for (name, phase) in raw.overrides {
        if !list.contains(&name) {
            return Err(bad(
                format!("phases.{name}"),
                format!("phase {name:?} has a table but is not in phases.list {list:?}"),
            ));
        }
        let over = resolve_phase(phase, places, agent_writable, base_zone)
            .map_err(|(k, m)| bad(format!("phases.{name}.{k}"), m))?;
        overrides.insert(name, over);
    }
    raw.keys.resolve_with(PhasesHand { overrides })
}

/// The reference system's escape hatch from its boot checks (docs/reference-system.md,
/// "AGENT_RUNNER_SKIP_STARTUP_CHECK"): set to `1`, `true`, `yes` or `on` (any case).
pub(crate) const SKIP_STARTUP_CHECK_ENV: &str = "AGENT_RUNNER_SKIP_STARTUP_CHECK";

/// Whether [`SKIP_STARTUP_CHECK_ENV`] asks to skip the checks the reference system counts
/// as its boot battery. Only the phase-window overlap check is one here; checks that keep
/// hosts confined or rounds safe (sandbox, pins, config keys, git) are never skipped.
fn startup_check_skipped() -> bool {
    std::env::var(SKIP_STARTUP_CHECK_ENV)
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
}

/// Two phases that each set their own `[agent]` and their own `run_windows` must not both
/// be open at one minute (after their own `pause_windows`), or which agent runs would
/// hang on the rotation alone: the reference system refuses this at boot with exit 78
/// (docs/reference-system.md). Pairs in different zones are not compared. Errors: the
/// later phase's `schedule.run_windows`, naming both phases and windows.
fn refuse_overlapping_windows(
    list: &[String],
    overrides: &BTreeMap<String, PhaseOverride>,
) -> Result<(), Bad> {
    let candidates: Vec<(&String, &Schedule)> = list
        .iter()
        .filter_map(|name| {
            let over = overrides.get(name)?;
            over.agent.as_ref()?;
            let schedule = over.schedule.as_ref()?;
            (!schedule.run.is_empty()).then_some((name, schedule))
        })
        .collect();
    for (i, (a, sa)) in candidates.iter().enumerate() {
        for (b, sb) in &candidates[i + 1..] {
            if let Some((wa, wb)) = sa.run_window_overlap(sb) {
                return Err(bad(
                    format!("phases.{b}.schedule.run_windows"),
                    format!(
                        "phases {a:?} and {b:?} both override [agent] and their run_windows \
                         overlap ({:?} vs {:?}); expected disjoint windows, or a \
                         pause_window that carves out the overlap",
                        wa.label, wb.label
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// One `[phases.<name>]` table. Errors: the key under the table and what is wrong.
fn resolve_phase(
    phase: RawPhase,
    places: &Places,
    agent_writable: &[PathBuf],
    base_zone: Option<&str>,
) -> Result<PhaseOverride, Bad> {
    let prompt_files = match phase.prompt_files {
        None => None,
        Some(files) if files.is_empty() => {
            return Err(bad("prompt.files", "expected a non-empty list"))
        }
        Some(files) => Some(
            resolve_prompt_files(&files, &places.work_dir, &places.project)
                .map_err(|m| bad("prompt.files", m.to_string()))?,
        ),
    };
    let agent = match phase.agent {
        None => None,
        Some(a) => Some(resolve_agent(a, &places.work_dir, agent_writable)?),
    };
    let schedule = match phase.schedule {
        None => None,
        Some(raw) => Some(
            resolve_schedule(raw, base_zone).map_err(|(k, m)| bad(format!("schedule.{k}"), m))?,
        ),
    };
    Ok(PhaseOverride {
        round_budget: phase.round_budget_s.map(Duration::from_secs),
        prompt_files,
        agent,
        schedule,
        disable_pre_round_hooks: phase.disable_pre_round_hooks,
    })
}

/// The rest of `[runtime]`, after [`resolve_places`] and [`resolve_numbers`]: the paths
/// and the back-off cap by hand, every other key by its definition.
fn resolve_runtime(
    raw: RawRuntime,
    places: &Places,
    numbers: &Numbers,
) -> Result<RuntimeConfig, Bad> {
    let expand = |key: &str, text: Option<&str>| {
        text.map(|t| expand_key(key, t, &places.work_dir, &places.project))
            .transpose()
    };
    let stop_file = expand("runtime.stop_file", raw.stop_file()?.as_deref())?;
    let transient_backoff_cap = resolve_backoff_cap(&raw, numbers.restart_delay_s)?;
    let narrative_file = expand("runtime.narrative_file", raw.narrative_file()?.as_deref())?;
    raw.resolve_with(RuntimeHand {
        work_dir: places.work_dir.clone(),
        log_dir: places.log_dir.clone(),
        state_dir: places.state_dir.clone(),
        stop_file,
        transient_backoff_cap,
        narrative_file,
    })
}

/// `[runtime] transient_backoff_cap_s`: between `restart_delay_s` and a day.
fn resolve_backoff_cap(raw: &RawRuntime, restart_delay_s: u64) -> Result<Duration, Bad> {
    let cap_s = raw.transient_backoff_cap_s()?;
    if cap_s < restart_delay_s || cap_s > 86_400 {
        return Err(bad(
            "runtime.transient_backoff_cap_s",
            format!(
                "{cap_s} must lie between restart_delay_s ({restart_delay_s}) and 86400 (seconds)"
            ),
        ));
    }
    Ok(Duration::from_secs(cap_s))
}

/// `[vcs]`: its keys by their definitions.
fn resolve_vcs(raw: &RawVcs) -> Result<VcsConfig, Bad> {
    raw.resolve_with(VcsHand {
        dirty_action_written: raw.dirty_action.is_some(),
    })
}

/// `[plugins]`: the sandbox mode, `spawn_override_allow`, pins and hosts (each host's
/// config from `[plugins.<name>]` or `[plugins.hosts.<name>.config]`). Tables and
/// `disable` names that match no host become `warnings`.
fn resolve_plugins(
    raw: RawPlugins,
    mut plugin_tables: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    config_path: &Path,
    places: &Places,
    warnings: &mut Vec<String>,
) -> Result<PluginsConfig, Bad> {
    let disable = raw.disable();
    let mut spawn_override_allow = Vec::new();
    for (i, name) in raw.spawn_override_allow().into_iter().enumerate() {
        spawn_override_allow.push(
            HookName::try_from(name)
                .map_err(|m| bad(format!("plugins.spawn_override_allow[{i}]"), m))?,
        );
    }
    let mut pins = BTreeMap::new();
    for (name, text) in raw.pin() {
        let pin: Sha256Pin = text
            .parse()
            .map_err(|e| bad(format!("plugins.pin.{name}"), format!("{text:?}: {e}")))?;
        pins.insert(name, pin);
    }
    let mut hosts = Vec::new();
    for (name, mut host) in raw.hosts() {
        if let Some(table) = plugin_tables.remove(&name) {
            if host.config.as_ref().is_some_and(|c| !c.is_empty()) {
                return Err(bad(
                    format!("plugins.{name}"),
                    format!("host {name:?} has both [plugins.{name}] and [plugins.hosts.{name}.config]; keep one"),
                ));
            }
            host.config = Some(table);
        }
        hosts.push(
            resolve_host(&name, host, config_path, places)
                .map_err(|(key, message)| bad(format!("plugins.hosts.{name}.{key}"), message))?,
        );
    }
    warn_unmatched(&plugin_tables, &disable, &hosts, warnings);
    raw.resolve_with(PluginsHand {
        spawn_override_allow,
        pins,
        hosts,
    })
}

/// A warning for each `[plugins.<name>]` table left without a host and each `disable`
/// name that is neither a host nor a built-in detector.
fn warn_unmatched(
    plugin_tables: &BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    disable: &[String],
    hosts: &[HostConfig],
    warnings: &mut Vec<String>,
) {
    let host_names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    for name in plugin_tables.keys() {
        warnings.push(format!(
            "config table `plugins.{name}` is a plugin's config but no [plugins.hosts.{name}] is configured; it is ignored"
        ));
    }
    for name in disable.iter().filter(|n| {
        !host_names.contains(&n.as_str()) && !crate::detectors::host::is_disable_name(n)
    }) {
        warnings.push(format!(
            "`plugins.disable` names {name:?}, which is not a configured host (hosts: {host_names:?}) nor a built-in detector; disable keys on host and detector names"
        ));
    }
}

/// Validates one `[agent]` table (the base one, or a phase's merged one), its CLI worked
/// out against `work_dir` (the agent's cwd) and `agent_writable` (where a wrapper script is
/// not read: [`crate::config::agent_cli`]). Errors: the key (`agent.…`) and the message.
fn resolve_agent(
    raw: RawAgent,
    work_dir: &Path,
    agent_writable: &[PathBuf],
) -> Result<AgentConfig, Bad> {
    if raw.command.is_empty() || raw.command[0].is_empty() {
        return Err(bad(
            "agent.command",
            "expected a non-empty list, e.g. [\"claude\"]",
        ));
    }
    let delivery = raw.prompt_delivery()?;
    let session_resume = raw.session_resume()?;
    let session_bounds = crate::config::session_resume::SessionBounds {
        max_rounds: raw.session_max_rounds()?,
        max_tokens: raw.session_max_tokens()?,
        max_age: Duration::from_secs(raw.session_max_hours()?.saturating_mul(3600)),
    };
    let env = raw.env();
    let cli_key = raw.cli()?;
    let command =
        expand_command(raw.command.clone()).map_err(|e| bad("agent.command", e.to_string()))?;
    let path = env
        .get("PATH")
        .map(std::ffi::OsString::from)
        .or_else(|| std::env::var_os("PATH"));
    let cli = crate::config::agent_cli::identify(
        &command,
        cli_key,
        &crate::config::agent_cli::Places {
            work_dir,
            path: path.as_deref(),
            agent_writable,
        },
    );
    let template = raw
        .prompt_arg_template
        .clone()
        .unwrap_or_else(|| match delivery {
            PromptDelivery::Argv => vec!["{prompt}".to_owned()],
            PromptDelivery::Stdin => Vec::new(),
        });
    let has_placeholder = template.iter().any(|a| a.contains("{prompt}"));
    match (delivery, has_placeholder) {
        (PromptDelivery::Argv, false) => {
            return Err(bad(
                "agent.prompt_arg_template",
                "must contain \"{prompt}\" when prompt_delivery = \"argv\"",
            ))
        }
        (PromptDelivery::Stdin, true) => {
            return Err(bad(
                "agent.prompt_arg_template",
                "must not contain \"{prompt}\" when prompt_delivery = \"stdin\"",
            ))
        }
        _ => {}
    }
    if raw.exec_prefix().first().is_some_and(String::is_empty) {
        return Err(bad(
            "agent.exec_prefix",
            "exec_prefix[0] is the program run before the agent's command; it must not be empty",
        ));
    }
    super::session_resume::check_static(cli.name, &command, &template, session_resume)
        .map_err(|e| bad("agent.command", e.to_string()))?;
    let allow_hosts = match raw.sandbox.allow_hosts()? {
        None => None,
        Some(list) => Some(
            crate::config::allow_hosts::AllowHosts::parse(&list)
                .map_err(|e| bad("agent.sandbox.allow_hosts", format!("{e}; expected a list of host names, `*.domain` or IP addresses, each optionally with `:port`")))?,
        ),
    };
    raw.resolve_with(AgentHand {
        command,
        prompt_arg_template: template,
        cli,
        session_bounds,
        allow_hosts,
    })
}

/// Resolves one `[schedule]` table (`timezone` defaulting to `inherited`, then the
/// system's zone). Errors: the key under the table and what is wrong.
fn resolve_schedule(
    raw: RawSchedule,
    inherited: Option<&str>,
) -> Result<Schedule, (String, String)> {
    let (run_windows, pause_windows) = (raw.run_windows(), raw.pause_windows());
    let (zone, zone_name) = match raw.timezone.as_deref().or(inherited) {
        Some(name) => (
            jiff::tz::TimeZone::get(name).map_err(|e| {
                (
                    "timezone".to_owned(),
                    format!("{name:?} is not a known IANA time zone ({e}); e.g. \"Europe/Berlin\" or \"UTC\""),
                )
            })?,
            name.to_owned(),
        ),
        // A schedule without windows is never consulted: its zone stays unasked (finding
        // the system zone's name walks the zoneinfo directory, ~1 ms of every start).
        None if run_windows.is_empty() && pause_windows.is_empty() => {
            (jiff::tz::TimeZone::UTC, "UTC".to_owned())
        }
        None => {
            let zone = jiff::tz::TimeZone::system();
            let name = zone.iana_name().unwrap_or("local").to_owned();
            (zone, name)
        }
    };
    let windows = |key: &str, list: &[String]| {
        list.iter()
            .enumerate()
            .map(|(i, w)| Window::parse(w).map_err(|e| (format!("{key}[{i}]"), e.to_string())))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(Schedule {
        run: windows("run_windows", &run_windows)?,
        pause: windows("pause_windows", &pause_windows)?,
        zone,
        zone_name,
    })
}

/// Expands and resolves prompt files against `work_dir`; the first must be a readable file.
///
/// Errors: [`BadPath::Home`], [`BadPath::NoPromptFile`].
fn resolve_prompt_files(
    files: &[String],
    work_dir: &Path,
    project: &str,
) -> Result<Vec<PathBuf>, BadPath> {
    let mut out = Vec::with_capacity(files.len());
    for text in files {
        out.push(expand_path(text, work_dir, project)?);
    }
    let what = match std::fs::metadata(&out[0]) {
        Ok(meta) if meta.is_file() => return Ok(out),
        Ok(meta) if meta.is_dir() => "is a directory",
        Ok(_) => "is not a regular file (a FIFO, a socket or a device)",
        Err(_) => "does not exist",
    };
    Err(BadPath::NoPromptFile {
        path: out[0].clone(),
        what,
    })
}

/// `read_paths` of a host: `~` and `{project}` expanded, relative to `work_dir`, made
/// canonical. Refused when a path does not exist, or when it covers without naming it the
/// config file, `log_dir`, the state dir (control socket, lock, events, state files:
/// docs/operations.md, "State dir") or one of the user's credential paths
/// ([`CREDENTIAL_PATHS`]): docs/configuration.md, docs/security.md.
///
/// Errors: [`BadPath::Home`], [`BadPath::Missing`], [`BadPath::Covers`].
fn resolve_read_paths(
    texts: &[String],
    config_path: &Path,
    places: &Places,
) -> Result<Vec<PathBuf>, BadPath> {
    let mut protected = vec![config_path.to_owned(), places.log_dir.to_owned()];
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        protected.extend(CREDENTIAL_PATHS.iter().map(|(rel, _)| home.join(rel)));
    }
    // Last, so a grant of the whole home is refused naming a credential path first.
    protected.push(places.state_dir.to_owned());
    // Resolved once for every text, and not at all when there is none.
    let mut canonical_protected: Option<Vec<PathBuf>> = None;
    let mut out = Vec::with_capacity(texts.len());
    for text in texts {
        let path = expand_path(text, &places.work_dir, &places.project)?;
        let path = path.canonicalize().map_err(|source| BadPath::Missing {
            text: text.clone(),
            path: path.clone(),
            source,
        })?;
        let canonical_protected = canonical_protected.get_or_insert_with(|| {
            protected
                .iter()
                .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
                .collect()
        });
        if let Some(hit) = covers_protected(&path, canonical_protected) {
            return Err(BadPath::Covers {
                text: text.clone(),
                protected: hit.to_owned(),
                who: "a host",
                verb: "read",
                hint: " (a protected path itself may be named exactly)",
            });
        }
        out.push(path);
    }
    Ok(out)
}

/// One `[plugins.hosts.<name>]` table. Errors: the key under the table and what is wrong.
fn resolve_host(
    name: &str,
    raw: RawHost,
    config_path: &Path,
    places: &Places,
) -> Result<HostConfig, Bad> {
    if name == crate::detectors::host::HOST_NAME {
        return Err(bad(
            "command",
            format!("host name {name:?} belongs to the built-in detector host; pick another name"),
        ));
    }
    if HookName::try_from(name.to_owned()).is_err() {
        return Err(bad(
            "command",
            format!("host name {name:?} must match ^[a-z0-9][a-z0-9_-]{{0,63}}$"),
        ));
    }
    if raw.command.is_empty() || raw.command[0].is_empty() {
        return Err(bad(
            "command",
            "expected a non-empty list; command[0] is the host executable",
        ));
    }
    // The definitions' keys are `plugins.hosts.<name>.<key>`: the caller adds the prefix.
    let under = |(key, message): Bad| {
        let key = key.trim_start_matches("plugins.hosts.<name>.").to_owned();
        (key, message)
    };
    let writes = WriteLimits {
        file_max_mb: raw.file_max_mb().map_err(under)?,
        tmp_max_mb: raw.tmp_max_mb().map_err(under)?,
        state_max_mb: raw.state_max_mb().map_err(under)?,
    };
    let read_paths = resolve_read_paths(&raw.read_paths(), config_path, places)
        .map_err(|m| bad("read_paths", m.to_string()))?;
    let command = expand_command(raw.command.clone()).map_err(|e| bad("command", e.to_string()))?;
    let mut provides = BTreeSet::new();
    for family in &raw.provides {
        let Some(family) = Family::parse(family) else {
            return Err(bad(
                "provides",
                format!("{family:?}; expected {}", Family::spelled("\"", " or ")),
            ));
        };
        provides.insert(family);
    }
    if provides.is_empty() {
        return Err(bad(
            "provides",
            format!(
                "expected a non-empty list of {}",
                Family::spelled("\"", " / ")
            ),
        ));
    }
    let bytes = serde_json::to_string(&raw.config()).map_or(0, |s| s.len());
    if bytes > MAX_HOST_CONFIG_BYTES {
        return Err(bad(
            "config",
            format!(
                "the table takes {bytes} bytes as JSON; at most {MAX_HOST_CONFIG_BYTES} \
                 (it travels in one initialize line); keep large data in a file under read_paths"
            ),
        ));
    }
    raw.resolve_with(HostHand {
        command,
        provides,
        read_paths,
        name: name.to_owned(),
        writes,
    })
    .map_err(under)
}

/// Why `command[0]` could not be expanded. Display is the message after the key `command`.
#[derive(Debug, thiserror::Error)]
enum BadCommand {
    /// It starts with `~` and `HOME` is not set.
    #[error("command[0] {0}")]
    Home(#[from] HomeNotSet),
    /// `HOME` expanded into it is not UTF-8.
    #[error("command[0]: HOME is not valid UTF-8")]
    HomeNotUtf8,
}

/// Expands `~` (the user's home) and `{project}`; a relative result is taken relative to
/// `base` (`work_dir`, as the reference system does).
fn expand_path(text: &str, base: &Path, project: &str) -> Result<PathBuf, HomeNotSet> {
    let expanded = expand_home(&text.replace("{project}", project))?;
    Ok(normalize(&base.join(expanded)))
}

/// Expands a leading `~` or `~/` to `HOME` (the one place the config's paths, and
/// `command[0]` of `[agent]` and of each host, get their `~`); other text is returned as
/// it is, `~user` included.
fn expand_home(text: &str) -> Result<PathBuf, HomeNotSet> {
    if text == "~" || text.starts_with("~/") {
        let home = std::env::var_os("HOME").ok_or(HomeNotSet)?;
        Ok(PathBuf::from(home).join(text.trim_start_matches('~').trim_start_matches('/')))
    } else {
        Ok(PathBuf::from(text))
    }
}

/// `command` with `~` expanded in `command[0]` (the executable; the other words are
/// arguments, passed as written).
///
/// Errors: [`BadCommand`], for the key `command`.
fn expand_command(mut command: Vec<String>) -> Result<Vec<String>, BadCommand> {
    if let Some(first) = command.first_mut() {
        let path = expand_home(first)?;
        *first = path
            .into_os_string()
            .into_string()
            .map_err(|_| BadCommand::HomeNotUtf8)?;
    }
    Ok(command)
}

/// Removes `.` components and resolves `..` lexically (the path may not exist yet).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod prompt_file_tests {
    use super::*;

    #[test]
    fn a_first_prompt_file_that_is_no_file_is_named_for_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("main.md");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let refused = resolve_prompt_files(&["main.md".into()], dir.path(), "p").unwrap_err();
        assert!(
            refused.to_string().contains("is not a regular file"),
            "{refused}"
        );
        let missing = resolve_prompt_files(&["gone.md".into()], dir.path(), "p").unwrap_err();
        assert!(missing.to_string().contains("does not exist"), "{missing}");
    }
}
