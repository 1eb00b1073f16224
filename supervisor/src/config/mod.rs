//! `agent-runner.toml`: loaded once, validated strictly, resolved to absolute paths.
//!
//! Keys and defaults follow the reference system (`docs/reference-system.md`, "Config"), plus
//! our `[plugins.hosts.<name>]` tables. Every error names the file, the key and what was
//! expected, and maps to exit 78 ([`crate::exit::CONFIG`]).

pub(crate) mod agent_cli;
mod agent_sandbox;
pub mod allow_hosts;
mod bad_path;
pub(crate) mod budget;
#[cfg(test)]
mod cases;
#[cfg(test)]
mod doc_tables;
mod error;
mod goal;
pub(crate) mod keys;
mod manual;
mod monitor;
pub(crate) mod notify;
mod raw;
mod resolve;
pub(crate) mod schedule;
pub(crate) mod session_resume;
pub(crate) mod state_dir;
pub(crate) mod telemetry;
pub(crate) mod vocabulary;

pub use agent_sandbox::AgentSandboxConfig;
pub use error::ConfigError;
pub(crate) use error::SCHEMA_VERSION;
pub(crate) use goal::CHECK_KILL_GRACE;
pub use goal::{GoalCheck, GoalConfig};
pub(crate) use manual::man_section;
pub(crate) use monitor::{auto_stop_names, RoundCgroupMode};
pub use monitor::{HostHealthConfig, MonitorConfig};
pub use notify::{NotifyConfig, Webhook};
pub(crate) use raw::{DEFAULT_GIT_TIMEOUT_S, DEFAULT_HOST_MEMORY_MB, TABLES};
pub use resolve::{AgentConfig, Config, HostConfig, PromptConfig};
pub use vocabulary::{
    BrokerMode, ContextInjection, DirtyAction, NotifyFormat, PhasePolicy, PromptDelivery,
    SandboxMode, StopWhen, TransientAction,
};

use std::path::Path;

/// The config file name looked up when `--config` is not given.
pub(crate) const DEFAULT_CONFIG_FILE: &str = "agent-runner.toml";

/// Reads, parses, validates and resolves the config at `path`. Each of its
/// [`Config::warnings`] (reference-system keys this build ignores) goes to stderr, once
/// per process.
///
/// Errors: [`ConfigError`] naming the file, the key and the expected value; an unknown
/// key's message carries a did-you-mean suggestion when one is close.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    static WARNED: std::sync::Once = std::sync::Once::new();
    let text =
        crate::tree_file::read_regular_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
    let config = parse_str(path, &text)?;
    WARNED.call_once(|| {
        for warning in &config.warnings {
            eprintln!(
                "agent-runner: warning: {}: {warning}",
                config.path.display()
            );
        }
    });
    Ok(config)
}

/// Parses, validates and resolves config `text` as if read from `path` (relative paths
/// resolve against its directory; the prompt file and work dir are checked on disk).
/// Warnings are left in [`Config::warnings`]; [`load`] prints them once.
///
/// Errors: [`ConfigError`] naming `path`, the key and the expected value.
pub fn parse_str(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let raw = raw::parse(path, text)?;
    resolve::resolve(path, raw)
}
