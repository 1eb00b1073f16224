//! A config that cannot be used ([`ConfigError`]), and the one `schema_version` this build
//! reads.

use std::path::PathBuf;

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
    /// The file is one an agent changed while it ran, not saved by anyone since
    /// ([`crate::record::agent_changes::config_refusal`]).
    #[error("config error in {}: untrusted: {message}", path.display())]
    Untrusted {
        /// The config path.
        path: PathBuf,
        /// What happened and how to use the file.
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
