//! `agent-runner.toml`: loaded once, validated strictly, resolved to absolute paths.
//!
//! Keys and defaults follow the reference system (`docs/reference-system.md`, "Config"), plus
//! our `[plugins.hosts.<name>]` tables. Every error names the file, the key and what was
//! expected, and maps to exit 78 ([`crate::exit::CONFIG`]).

mod goal;
mod monitor;
mod raw;
mod resolve;
pub(crate) mod vocabulary;

pub(crate) use goal::CHECK_KILL_GRACE;
pub use goal::{GoalCheck, GoalConfig, StopWhen};
pub(crate) use monitor::{auto_stop_names, RoundCgroupMode};
pub use monitor::{HostHealthConfig, MonitorConfig};
pub use resolve::{
    AgentConfig, Config, ContextInjection, DirtyAction, HostConfig, PhasePolicy, PromptConfig,
    PromptDelivery, SandboxMode, TransientAction,
};
pub(crate) use resolve::{DEFAULT_GIT_TIMEOUT_S, DEFAULT_HOST_MEMORY_MB};

use std::path::{Path, PathBuf};

/// The config file name looked up when `--config` is not given.
pub(crate) const DEFAULT_CONFIG_FILE: &str = "agent-runner.toml";

/// The only `schema_version` this build reads.
pub(crate) const SCHEMA_VERSION: i64 = 1;

/// A config that cannot be used. Display: `config error in <file>: key `<key>`: <what>`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("config error: cannot read {}: {source}; run `agent-runner init` to create one or pass --config PATH", path.display())]
    Read {
        /// The config path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("config error in {}: invalid TOML: {message}", path.display())]
    Syntax {
        /// The config path.
        path: PathBuf,
        /// The parser's message (line and column included).
        message: String,
    },
    /// A key is missing, unknown, of the wrong type or out of range.
    #[error("config error in {}: key `{key}`: {message}", path.display())]
    Key {
        /// The config path.
        path: PathBuf,
        /// Dotted key path, e.g. `plugins.hosts.pause.command`.
        key: String,
        /// What was found and what is expected.
        message: String,
    },
}

/// Reads, parses, validates and resolves the config at `path`. Each of its
/// [`Config::warnings`] (reference-system keys this build ignores) goes to stderr, once
/// per process.
///
/// Errors: [`ConfigError`] naming the file, the key and the expected value; an unknown
/// key's message carries a did-you-mean suggestion when one is close.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    static WARNED: std::sync::Once = std::sync::Once::new();
    let text = crate::runtime::tree_file::read_regular_to_string(path).map_err(|source| {
        ConfigError::Read {
            path: path.to_owned(),
            source,
        }
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
