//! From the raw shape to a typed [`Config`]: vocabulary checks, defaults, absolute paths.

use agent_runner_plugin_host::pin::Sha256Pin;
use agent_runner_protocol::limits::{
    DEFAULT_DIRTY_HANDLER_TIMEOUT_S, DEFAULT_INIT_TIMEOUT_S, DEFAULT_SPAWN_HOOK_TIMEOUT_S,
};
use agent_runner_protocol::{Family, HookName};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::raw::{RawConfig, RawHost};
use super::{ConfigError, SCHEMA_VERSION};

/// The whole configuration, validated, with absolute paths.
#[derive(Clone, Debug)]
pub struct Config {
    /// Absolute path of the config file.
    pub path: PathBuf,
    /// The project's name: the last component of `work_dir`.
    pub project: String,
    /// `[agent]`.
    pub agent: AgentConfig,
    /// `[runtime]`.
    pub runtime: RuntimeConfig,
    /// `[prompt] file`, absolute.
    pub prompt_file: PathBuf,
    /// `[vcs]`.
    pub vcs: VcsConfig,
    /// `[plugins]`.
    pub plugins: PluginsConfig,
}

/// How the prompt reaches the agent (`[agent] prompt_delivery`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptDelivery {
    /// `{prompt}` in `prompt_arg_template` is replaced by the prompt text.
    Argv,
    /// The prompt is written to the agent's stdin, which is then closed.
    Stdin,
}

/// `[agent]`.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// The agent's argv before the prompt arguments; `command[0]` is the executable.
    pub command: Vec<String>,
    /// Arguments appended after `command`; with argv delivery one contains `{prompt}`.
    pub prompt_arg_template: Vec<String>,
    /// Display name (`ctx.agent_name`).
    pub name: Option<String>,
    /// Extra environment variables for the agent (never sent to hosts).
    pub env: BTreeMap<String, String>,
    /// How the prompt is delivered.
    pub delivery: PromptDelivery,
}

/// `[runtime]`.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// The git working tree the agent works in (absolute, existing).
    pub work_dir: PathBuf,
    /// Events, round logs, state and host state dirs (absolute; created on first write).
    pub log_dir: PathBuf,
    /// Wall-clock budget of one round (default 1800 s).
    pub round_budget: Duration,
    /// Pause between rounds under `serve` (default 3 s, at least 1 s).
    pub restart_delay: Duration,
    /// Stop `serve` after this many completed rounds.
    pub max_rounds: Option<u64>,
}

/// What the built-in dirty handler does (`[vcs] dirty_action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirtyAction {
    /// `git stash push -u`, SHA-locked and idempotent (default).
    Stash,
    /// Leave the tree dirty.
    Ignore,
    /// Commit everything with subject `agent-runner auto-commit: R<N> <phase>`.
    AutoCommit,
}

impl DirtyAction {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DirtyAction::Stash => "stash",
            DirtyAction::Ignore => "ignore",
            DirtyAction::AutoCommit => "auto_commit",
        }
    }
}

/// `[vcs]`.
#[derive(Clone, Debug)]
pub struct VcsConfig {
    /// The built-in default dirty handler's action.
    pub dirty_action: DirtyAction,
    /// A stash within this long of the previous one is skipped (default 5 s).
    pub stash_idempotency: Duration,
}

/// `[plugins] sandbox`: how much confinement third-party hosts must get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SandboxMode {
    /// Landlock and seccomp must both engage and every host must be pinned, or nothing
    /// starts (exit 78).
    Require,
    /// Run at the best tier the kernel offers; announce a shortfall once (default).
    Prefer,
    /// Run hosts unconfined (not for production).
    Off,
}

impl SandboxMode {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Require => "require",
            SandboxMode::Prefer => "prefer",
            SandboxMode::Off => "off",
        }
    }
}

/// One `[plugins.hosts.<name>]` table.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// The table's key: the host's name, used by pins, `disable`, events.
    pub name: String,
    /// `command[0]` is the pinned executable (relative to the config dir, or on PATH).
    pub command: Vec<String>,
    /// The hook families this host may declare.
    pub provides: BTreeSet<Family>,
    /// Per-call timeout; `None` means the family default (10 s spawn hook, 60 s dirty).
    pub timeout: Option<Duration>,
    /// How long `initialize` may take (default 5 s).
    pub init_timeout: Duration,
    /// Address-space limit of the host process, MiB (default 1024).
    pub memory_max_mb: u64,
    /// The free `config` table, passed verbatim in `initialize`.
    pub config: serde_json::Map<String, serde_json::Value>,
}

impl HostConfig {
    /// The call timeout for a hook of `family`.
    pub fn call_timeout(&self, family: Family) -> Duration {
        self.timeout.unwrap_or(Duration::from_secs(match family {
            Family::SpawnHook => DEFAULT_SPAWN_HOOK_TIMEOUT_S,
            Family::DirtyHandler => DEFAULT_DIRTY_HANDLER_TIMEOUT_S,
        }))
    }
}

/// `[plugins]`.
#[derive(Clone, Debug)]
pub struct PluginsConfig {
    /// Requested confinement.
    pub sandbox: SandboxMode,
    /// Hook names whose non-proceed verdicts are honoured.
    pub spawn_override_allow: Vec<HookName>,
    /// Host names not to start.
    pub disable: Vec<String>,
    /// Host name → expected sha256 of `command[0]`.
    pub pins: BTreeMap<String, Sha256Pin>,
    /// Configured hosts, in name order.
    pub hosts: Vec<HostConfig>,
}

/// Default memory limit of a host (MiB).
pub const DEFAULT_HOST_MEMORY_MB: u64 = 1024;

pub(super) fn resolve(path: &Path, raw: RawConfig) -> Result<Config, ConfigError> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let err = |key: &str, message: String| ConfigError::Key {
        path: path.clone(),
        key: key.to_owned(),
        message,
    };
    match raw.schema_version {
        Some(SCHEMA_VERSION) => {}
        None => {
            return Err(err(
                "schema_version",
                format!("missing; add `schema_version = {SCHEMA_VERSION}` at the top of the file"),
            ))
        }
        Some(other) => {
            return Err(err(
                "schema_version",
                format!("{other} is not supported; this agent-runner reads schema_version = {SCHEMA_VERSION}"),
            ))
        }
    }
    let base = path.parent().map(Path::to_owned).unwrap_or_default();

    // [runtime]
    let work_dir = base.join(raw.runtime.work_dir.as_deref().unwrap_or("."));
    let work_dir = work_dir.canonicalize().map_err(|e| {
        err(
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
    let log_dir_text = raw
        .runtime
        .log_dir
        .as_deref()
        .unwrap_or("~/.agent-runner/{project}/logs");
    let log_dir = expand_path(log_dir_text, &base, &project)
        .map_err(|message| err("runtime.log_dir", message))?;
    let round_budget_s = raw.runtime.round_budget_s.unwrap_or(1800);
    if round_budget_s == 0 {
        return Err(err(
            "runtime.round_budget_s",
            "must be at least 1 (seconds)".into(),
        ));
    }
    let restart_delay_s = raw.runtime.restart_delay_s.unwrap_or(3);
    if restart_delay_s < 1 {
        return Err(err(
            "runtime.restart_delay_s",
            "must be at least 1 (seconds)".into(),
        ));
    }

    // [agent]
    if raw.agent.command.is_empty() || raw.agent.command[0].is_empty() {
        return Err(err(
            "agent.command",
            "expected a non-empty list, e.g. [\"claude\"]".into(),
        ));
    }
    let delivery = match raw.agent.prompt_delivery.as_deref() {
        None | Some("argv") => PromptDelivery::Argv,
        Some("stdin") => PromptDelivery::Stdin,
        Some(other) => {
            return Err(err(
                "agent.prompt_delivery",
                format!("{other:?}; expected \"argv\" or \"stdin\""),
            ))
        }
    };
    let template = raw
        .agent
        .prompt_arg_template
        .unwrap_or_else(|| match delivery {
            PromptDelivery::Argv => vec!["{prompt}".to_owned()],
            PromptDelivery::Stdin => Vec::new(),
        });
    let has_placeholder = template.iter().any(|a| a.contains("{prompt}"));
    match (delivery, has_placeholder) {
        (PromptDelivery::Argv, false) => {
            return Err(err(
                "agent.prompt_arg_template",
                "must contain \"{prompt}\" when prompt_delivery = \"argv\"".into(),
            ))
        }
        (PromptDelivery::Stdin, true) => {
            return Err(err(
                "agent.prompt_arg_template",
                "must not contain \"{prompt}\" when prompt_delivery = \"stdin\"".into(),
            ))
        }
        _ => {}
    }

    // [prompt]
    let prompt_file = base.join(raw.prompt.file.as_deref().unwrap_or("./prompts/main.md"));
    if !prompt_file.is_file() {
        return Err(err(
            "prompt.file",
            format!(
                "{} does not exist; expected a readable prompt file",
                prompt_file.display()
            ),
        ));
    }

    // [vcs]
    let dirty_action = match raw.vcs.dirty_action.as_deref() {
        None | Some("stash") => DirtyAction::Stash,
        Some("ignore") => DirtyAction::Ignore,
        Some("auto_commit") => DirtyAction::AutoCommit,
        Some(other) => {
            return Err(err(
                "vcs.dirty_action",
                format!("{other:?}; expected \"stash\", \"ignore\" or \"auto_commit\""),
            ))
        }
    };

    // [plugins]
    let sandbox = match raw.plugins.sandbox.as_deref() {
        None | Some("prefer") => SandboxMode::Prefer,
        Some("require") => SandboxMode::Require,
        Some("off") => SandboxMode::Off,
        Some(other) => {
            return Err(err(
                "plugins.sandbox",
                format!("{other:?}; expected \"require\", \"prefer\" or \"off\""),
            ))
        }
    };
    let mut spawn_override_allow = Vec::new();
    for (i, name) in raw.plugins.spawn_override_allow.into_iter().enumerate() {
        spawn_override_allow.push(
            HookName::try_from(name)
                .map_err(|m| err(&format!("plugins.spawn_override_allow[{i}]"), m))?,
        );
    }
    let mut pins = BTreeMap::new();
    for (name, text) in raw.plugins.pin {
        let pin: Sha256Pin = text
            .parse()
            .map_err(|e| err(&format!("plugins.pin.{name}"), format!("{text:?}: {e}")))?;
        pins.insert(name, pin);
    }
    let mut hosts = Vec::new();
    for (name, host) in raw.plugins.hosts {
        hosts.push(
            resolve_host(&name, host)
                .map_err(|(key, message)| err(&format!("plugins.hosts.{name}.{key}"), message))?,
        );
    }

    Ok(Config {
        project,
        agent: AgentConfig {
            command: raw.agent.command,
            prompt_arg_template: template,
            name: raw.agent.name,
            env: raw.agent.env,
            delivery,
        },
        runtime: RuntimeConfig {
            work_dir,
            log_dir,
            round_budget: Duration::from_secs(round_budget_s),
            restart_delay: Duration::from_secs(restart_delay_s),
            max_rounds: raw.runtime.max_rounds,
        },
        prompt_file,
        vcs: VcsConfig {
            dirty_action,
            stash_idempotency: Duration::from_secs(raw.vcs.stash_idempotency_s.unwrap_or(5)),
        },
        plugins: PluginsConfig {
            sandbox,
            spawn_override_allow,
            disable: raw.plugins.disable,
            pins,
            hosts,
        },
        path,
    })
}

fn resolve_host(name: &str, raw: RawHost) -> Result<HostConfig, (&'static str, String)> {
    if HookName::try_from(name.to_owned()).is_err() {
        return Err((
            "command",
            format!("host name {name:?} must match ^[a-z0-9][a-z0-9_-]{{0,63}}$"),
        ));
    }
    if raw.command.is_empty() || raw.command[0].is_empty() {
        return Err((
            "command",
            "expected a non-empty list; command[0] is the host executable".into(),
        ));
    }
    let mut provides = BTreeSet::new();
    for family in &raw.provides {
        provides.insert(match family.as_str() {
            "spawn_hook" => Family::SpawnHook,
            "dirty_handler" => Family::DirtyHandler,
            other => {
                return Err((
                    "provides",
                    format!("{other:?}; expected \"spawn_hook\" or \"dirty_handler\""),
                ))
            }
        });
    }
    if provides.is_empty() {
        return Err((
            "provides",
            "expected a non-empty list of \"spawn_hook\" / \"dirty_handler\"".into(),
        ));
    }
    let positive = |key: &'static str, v: Option<u64>| match v {
        Some(0) => Err((key, "must be at least 1".to_owned())),
        other => Ok(other),
    };
    Ok(HostConfig {
        name: name.to_owned(),
        command: raw.command,
        provides,
        timeout: positive("timeout_s", raw.timeout_s)?.map(Duration::from_secs),
        init_timeout: Duration::from_secs(
            positive("init_timeout_s", raw.init_timeout_s)?.unwrap_or(DEFAULT_INIT_TIMEOUT_S),
        ),
        memory_max_mb: positive("memory_max_mb", raw.memory_max_mb)?
            .unwrap_or(DEFAULT_HOST_MEMORY_MB),
        config: raw.config,
    })
}

/// Expands `~` (the user's home) and `{project}`; a relative result is taken relative to
/// the config file's directory.
fn expand_path(text: &str, base: &Path, project: &str) -> Result<PathBuf, String> {
    let text = text.replace("{project}", project);
    let expanded = if text == "~" || text.starts_with("~/") {
        let home =
            std::env::var_os("HOME").ok_or("uses ~ but HOME is not set; give an absolute path")?;
        PathBuf::from(home).join(text.trim_start_matches('~').trim_start_matches('/'))
    } else {
        PathBuf::from(text)
    };
    Ok(normalize(&base.join(expanded)))
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
