//! The host `plugin check` runs, made ready ([`Prepared`]) from a [`Target`]: launched
//! exactly as serve launches it.

use agent_runner_plugin_host::common::probe::probe;
use agent_runner_plugin_host::host::pin::open_and_hash;
use agent_runner_plugin_host::host::resolve::resolve_executable;
use agent_runner_protocol::{Family, InitializeParams};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::{self, HostConfig, SandboxMode};
use crate::exit::CliError;
use crate::hosts::sandbox::SandboxGate;
use crate::hosts::{self, PinStatus};

/// What to check.
#[derive(Debug)]
pub(crate) enum Target {
    /// `[plugins.hosts.NAME]` of the config at `config`.
    Configured {
        /// The config file.
        config: PathBuf,
        /// The host's name.
        name: String,
    },
    /// A command line, outside any config.
    Command {
        /// `command[0]` and its arguments.
        command: Vec<String>,
        /// The families the host may declare (`--provides`); empty means every family.
        provides: Vec<Family>,
    },
}

/// Why `plugin check` launches no host (its `launch` rule fails with this as the detail).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotLaunched {
    /// The configured host's `command` did not resolve or could not be hashed.
    #[error("{source}; fix `command` of [plugins.hosts.{name}]")]
    Unchecked {
        /// The host's name.
        name: String,
        /// Why (boxed: it is large and rare).
        source: Box<hosts::pins::UncheckedHost>,
    },
    /// `[plugins.pin]` names another sha256 than the executable's.
    #[error("pin mismatch: [plugins.pin] {name} = {expected} but {} has sha256 {actual}; if you trust this build, pin it: {name} = \"{actual}\"", path.display())]
    PinMismatch {
        /// The host's name.
        name: String,
        /// The pinned sha256.
        expected: String,
        /// The executable.
        path: PathBuf,
        /// Its sha256.
        actual: String,
    },
    /// No pin, and `sandbox = "require"`: serve would refuse it.
    #[error("not pinned and sandbox = \"require\": serve would refuse it; add {name} = \"{actual}\" to [plugins.pin]")]
    Unpinned {
        /// The host's name.
        name: String,
        /// The executable's sha256.
        actual: String,
    },
    /// A command's program was not found or is no executable.
    #[error(transparent)]
    Resolve(#[from] agent_runner_plugin_host::host::resolve::ResolveError),
    /// A command's program could not be opened and hashed.
    #[error(transparent)]
    Pin(#[from] agent_runner_plugin_host::host::pin::PinError),
}

/// A host ready to be launched, and what it needs to be checked.
pub(crate) struct Prepared {
    /// Its configuration (synthesized for a command).
    pub cfg: HostConfig,
    /// The launch, or why there is none (a `launch` failure).
    pub spec: Result<agent_runner_plugin_host::host::launch::LaunchSpec, NotLaunched>,
    /// The `initialize` params shared by the hosts of this config.
    pub init: InitializeParams,
    /// The confinement tier applied.
    pub tier: &'static str,
    /// `verified`, `unpinned` or `mismatch`.
    pub pin: &'static str,
    /// The resolved executable, if it resolved.
    pub path: Option<PathBuf>,
    /// Keeps the temporary work/log dir of a command check alive.
    _tmp: Option<tempfile::TempDir>,
}

pub(super) fn prepare_configured(path: &Path, name: &str) -> Result<Prepared, CliError> {
    let config = config::load(path)?;
    let Some(cfg) = config
        .plugins
        .hosts
        .iter()
        .find(|h| h.name == name)
        .cloned()
    else {
        let known: Vec<&str> = config
            .plugins
            .hosts
            .iter()
            .map(|h| h.name.as_str())
            .collect();
        return Err(CliError::config(format!(
            "{}: no [plugins.hosts.{name}] table (hosts: {}); to check a host not yet in \
             the config, run `agent-runner plugin check --provides FAMILY -- PATH [ARGS…]`",
            path.display(),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )));
    };
    let gate = SandboxGate::evaluate(config.plugins.sandbox, probe())?;
    let init = hosts::initialize_params(
        &config.project,
        &config.runtime.work_dir,
        &config.runtime.log_dir,
        &gate,
    );
    let mut pin = "unpinned";
    let mut resolved = None;
    let spec = match hosts::check_pin(&config, &cfg) {
        Err(source) => Err(NotLaunched::Unchecked {
            name: name.to_owned(),
            source: Box::new(source),
        }),
        Ok(checked) => {
            pin = checked.status.as_str();
            resolved = Some(checked.path.clone());
            match (&checked.status, gate.pins_required()) {
                (PinStatus::Mismatch { expected }, _) => Err(NotLaunched::PinMismatch {
                    name: name.to_owned(),
                    expected: expected.to_string(),
                    path: checked.path.clone(),
                    actual: checked.actual.to_string(),
                }),
                (PinStatus::Unpinned, true) => Err(NotLaunched::Unpinned {
                    name: name.to_owned(),
                    actual: checked.actual.to_string(),
                }),
                _ => {
                    std::fs::create_dir_all(&config.runtime.log_dir).map_err(|e| {
                        CliError::failure(format!(
                            "cannot create {}: {e}",
                            config.runtime.log_dir.display()
                        ))
                    })?;
                    Ok(hosts::launch_spec(
                        &cfg,
                        checked.exe,
                        &config.runtime.work_dir,
                        &config.runtime.log_dir,
                        &gate,
                    ))
                }
            }
        }
    };
    Ok(Prepared {
        cfg,
        spec,
        init,
        tier: gate.applied.as_str(),
        pin,
        path: resolved,
        _tmp: None,
    })
}

pub(super) fn prepare_command(
    command: &[String],
    provides: &[Family],
) -> Result<Prepared, CliError> {
    let Some(program) = command.first() else {
        return Err(CliError {
            code: crate::exit::USAGE,
            message: "plugin check: give a host NAME or `-- COMMAND [ARGS…]`".into(),
        });
    };
    let tmp = tempfile::Builder::new()
        .prefix("agent-runner-plugin-check-")
        .tempdir()
        .map_err(|e| CliError::failure(format!("cannot create a temporary directory: {e}")))?;
    let work_dir = tmp.path().join("work");
    let log_dir = tmp.path().join("logs");
    for dir in [&work_dir, &log_dir] {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::failure(format!("cannot create {}: {e}", dir.display())))?;
    }
    let name = host_name_of(program);
    let provides: BTreeSet<Family> = if provides.is_empty() {
        Family::ALL.iter().copied().collect()
    } else {
        provides.iter().copied().collect()
    };
    let cfg = HostConfig {
        name: name.clone(),
        command: command.to_vec(),
        provides,
        timeout: None,
        init_timeout: Duration::from_secs(agent_runner_protocol::limits::DEFAULT_INIT_TIMEOUT_S),
        memory_max_mb: agent_runner_plugin_host::host::launch::DEFAULT_MEMORY_MAX_MB,
        read_paths: Vec::new(),
        writes: Default::default(),
        config: Default::default(),
    };
    // Best tier available; unpinned hosts are allowed (nothing is trusted here).
    let gate = SandboxGate::evaluate(SandboxMode::Prefer, probe())?;
    let init = hosts::initialize_params(&name, &work_dir, &log_dir, &gate);
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut resolved = None;
    let spec = resolve_executable(program, &cwd, std::env::var_os("PATH").as_deref())
        .map_err(NotLaunched::from)
        .and_then(|path| {
            resolved = Some(path.clone());
            open_and_hash(&path).map_err(NotLaunched::from)
        })
        .map(|exe| hosts::launch_spec(&cfg, exe, &work_dir, &log_dir, &gate));
    Ok(Prepared {
        cfg,
        spec,
        init,
        tier: gate.applied.as_str(),
        pin: "unpinned",
        path: resolved,
        _tmp: Some(tmp),
    })
}

/// A host name for a bare command: its file name, lowercased, other characters as `-`.
fn host_name_of(program: &str) -> String {
    let stem = Path::new(program)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    if name.is_empty() {
        "host".into()
    } else {
        name
    }
}
