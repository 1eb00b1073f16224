//! Pins: a host's executable resolved, hashed from an open descriptor and compared with its
//! `[plugins.pin]` line (`docs/security.md`, "Launch of a host, in execution order"). Used
//! by the host manager before every launch, and by `doctor`, `peek` and `plugin check`,
//! which report the status without launching anything.

use agent_runner_plugin_host::host::pin::{open_and_hash, PinError, Sha256Pin};
use agent_runner_plugin_host::host::resolve::{resolve_executable, ResolveError};
use std::path::{Path, PathBuf};

use crate::config::{Config, HostConfig};

/// A host's pin status (doctor's `verified` / `mismatch` / `unpinned`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PinStatus {
    /// The configured pin matches the file.
    Verified,
    /// A pin is configured and differs.
    Mismatch {
        /// The configured pin.
        expected: Sha256Pin,
    },
    /// No pin is configured.
    Unpinned,
}

impl PinStatus {
    /// The doctor/peek spelling.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            PinStatus::Verified => "verified",
            PinStatus::Mismatch { .. } => "mismatch",
            PinStatus::Unpinned => "unpinned",
        }
    }
}

/// A host executable resolved, hashed from an open descriptor, and compared to its pin.
pub(crate) struct CheckedHost {
    /// The resolved executable (canonical).
    pub path: PathBuf,
    /// Its sha256.
    pub actual: Sha256Pin,
    /// Against `[plugins.pin]`.
    pub status: PinStatus,
    /// The open, hashed executable (what a launch executes).
    pub exe: agent_runner_plugin_host::host::pin::VerifiedExecutable,
}

/// A host's executable that cannot be checked. Display: `host <name>: <why>`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UncheckedHost {
    /// `command[0]` cannot be resolved to an executable.
    #[error("host {host}: {source}")]
    Resolve {
        /// The host's name.
        host: String,
        /// Why.
        source: ResolveError,
    },
    /// The executable cannot be opened or read to be hashed.
    #[error("host {host}: {source}")]
    Hash {
        /// The host's name.
        host: String,
        /// Why.
        source: PinError,
    },
}

/// Resolves `command[0]` of `cfg` (relative to the config file's directory, or on PATH),
/// hashes it and checks it against `[plugins.pin]`.
///
/// Errors: [`UncheckedHost`], naming the host and the path, when it cannot be resolved or
/// read.
pub(crate) fn check_pin(config: &Config, cfg: &HostConfig) -> Result<CheckedHost, UncheckedHost> {
    let base = config.path.parent().unwrap_or(Path::new("/"));
    let path = resolve_executable(&cfg.command[0], base, std::env::var_os("PATH").as_deref())
        .map_err(|source| UncheckedHost::Resolve {
            host: cfg.name.clone(),
            source,
        })?;
    let exe = open_and_hash(&path).map_err(|source| UncheckedHost::Hash {
        host: cfg.name.clone(),
        source,
    })?;
    let actual = exe.sha256;
    let status = match config.plugins.pins.get(&cfg.name) {
        None => PinStatus::Unpinned,
        Some(pin) if *pin == actual => PinStatus::Verified,
        Some(pin) => PinStatus::Mismatch { expected: *pin },
    };
    Ok(CheckedHost {
        path,
        actual,
        status,
        exe,
    })
}
