//! `[agent] sandbox`: how much confinement the agent itself gets (docs/configuration.md
//! "[agent] sandbox", docs/security.md "The agent's confinement").
//!
//! Two spellings, the same setting:
//!
//! ```toml
//! [agent]
//! sandbox = "require"          # "off" | "prefer" | "require"
//! ```
//!
//! ```toml
//! [agent.sandbox]
//! mode = "require"
//! write_paths = ["~/.cache/pip"]   # written (and read) by the agent besides the tree
//! read_paths = ["/srv/datasets"]   # read by the agent besides the system and home
//! connect_ports = [8080]           # TCP ports besides 443
//! allow_hosts = ["api.anthropic.com"]  # egress by host name (crate::config::allow_hosts)
//! ```
//!
//! Absent: `off` (configs written before this key keep their behaviour); `init` writes
//! `"prefer"` for new projects.

use std::path::{Path, PathBuf};

use agent_runner_plugin_host::policy::{covers_protected, CREDENTIAL_PATHS};

use super::sandbox_mode::SandboxMode;
use super::vocabulary;

/// `[agent] sandbox` / `[agent.sandbox]`, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSandboxConfig {
    /// `mode` (or the plain string): off / prefer / require. Default off.
    pub mode: SandboxMode,
    /// `write_paths`: canonical, existing, none covering a credential store or the
    /// supervisor's state dir, log dir or config file.
    pub write_paths: Vec<PathBuf>,
    /// `read_paths`: canonical, existing, none covering a credential store or the state dir.
    pub read_paths: Vec<PathBuf>,
    /// `connect_ports`: TCP ports the agent may connect to besides
    /// [`agent_runner_plugin_host::agent_policy::DEFAULT_CONNECT_PORTS`].
    pub connect_ports: Vec<u16>,
}

impl Default for AgentSandboxConfig {
    fn default() -> Self {
        AgentSandboxConfig {
            mode: SandboxMode::Off,
            write_paths: Vec::new(),
            read_paths: Vec::new(),
            connect_ports: Vec::new(),
        }
    }
}

/// The keys of the `[agent.sandbox]` table.
const KEYS: &[&str] = &[
    "mode",
    "write_paths",
    "read_paths",
    "connect_ports",
    "allow_hosts",
];

/// The `allow_hosts` list of an `[agent.sandbox]` table (egress by host name, resolved with
/// the agent: [`crate::config::allow_hosts`]); `None` when absent or when `sandbox` is a
/// plain mode word.
///
/// Errors: `allow_hosts` is not a list of strings.
pub(super) fn allow_hosts(value: Option<&toml::Value>) -> Result<Option<Vec<String>>, String> {
    let Some(list) = value
        .and_then(|v| v.as_table())
        .and_then(|t| t.get("allow_hosts"))
    else {
        return Ok(None);
    };
    let expected = || "expected a list of host names (strings)".to_owned();
    list.as_array()
        .ok_or_else(expected)?
        .iter()
        .map(|h| h.as_str().map(str::to_owned).ok_or_else(expected))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// What the paths are checked against.
pub(super) struct Protected<'a> {
    /// The config file.
    pub config_path: &'a Path,
    /// `[runtime] log_dir`.
    pub log_dir: &'a Path,
    /// `[runtime] state_dir`.
    pub state_dir: &'a Path,
    /// Expands `~` and `{project}` and makes a path absolute against the work tree.
    pub expand: &'a dyn Fn(&str) -> Result<PathBuf, String>,
}

/// Resolves the value of `agent.sandbox` (absent: off). Errors: the dotted key under
/// `agent.sandbox` (or `agent.sandbox` itself) and what was expected.
pub(super) fn resolve(
    value: Option<&toml::Value>,
    places: &Protected<'_>,
) -> Result<AgentSandboxConfig, (String, String)> {
    let bad = |key: &str, m: String| {
        let key = if key.is_empty() {
            "agent.sandbox".to_owned()
        } else {
            format!("agent.sandbox.{key}")
        };
        (key, m)
    };
    let mode_word = |v: Option<&str>, key: &str| {
        vocabulary::parse(v, SandboxMode::Off).map_err(|e| bad(key, e.to_string()))
    };
    let table = match value {
        None => return Ok(AgentSandboxConfig::default()),
        Some(toml::Value::String(word)) => {
            return Ok(AgentSandboxConfig {
                mode: mode_word(Some(word), "")?,
                ..AgentSandboxConfig::default()
            })
        }
        Some(toml::Value::Table(table)) => table,
        Some(other) => {
            return Err(bad(
                "",
                format!(
                    "expected \"off\", \"prefer\" or \"require\", or a [agent.sandbox] table; found a {}",
                    other.type_str()
                ),
            ))
        }
    };
    if let Some(key) = table.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(bad(
            key,
            format!("unknown key; [agent.sandbox] has {}", KEYS.join(", ")),
        ));
    }
    let mode = match table.get("mode") {
        None => SandboxMode::Off,
        Some(toml::Value::String(word)) => mode_word(Some(word), "mode")?,
        Some(_) => {
            return Err(bad(
                "mode",
                "expected \"off\", \"prefer\" or \"require\"".into(),
            ))
        }
    };
    let strings = |key: &str| -> Result<Vec<String>, (String, String)> {
        match table.get(key) {
            None => Ok(Vec::new()),
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| bad(key, "expected a list of paths (strings)".into()))
                })
                .collect(),
            Some(_) => Err(bad(key, "expected a list of paths (strings)".into())),
        }
    };
    let write_paths =
        paths(&strings("write_paths")?, places, true).map_err(|m| bad("write_paths", m))?;
    let read_paths =
        paths(&strings("read_paths")?, places, false).map_err(|m| bad("read_paths", m))?;
    let connect_ports = match table.get("connect_ports") {
        None => Vec::new(),
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_integer()
                    .and_then(|n| u16::try_from(n).ok())
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        bad(
                            "connect_ports",
                            format!("{i} is not a TCP port; expected integers in 1..=65535"),
                        )
                    })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(bad(
                "connect_ports",
                "expected a list of TCP ports (integers in 1..=65535)".into(),
            ))
        }
    };
    Ok(AgentSandboxConfig {
        mode,
        write_paths,
        read_paths,
        connect_ports,
    })
}

/// Expanded, canonical, existing paths; refused when one covers (or, for writes, is or
/// lies in) a protected path: the credential stores, the state dir, and for writes also the
/// log dir and the config file.
fn paths(texts: &[String], places: &Protected<'_>, write: bool) -> Result<Vec<PathBuf>, String> {
    let mut protected: Vec<PathBuf> = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        protected.extend(CREDENTIAL_PATHS.iter().map(|(rel, _)| home.join(rel)));
    }
    protected.push(places.state_dir.to_owned());
    if write {
        protected.push(places.log_dir.to_owned());
        protected.push(places.config_path.to_owned());
    }
    let protected: Vec<PathBuf> = protected
        .iter()
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
        .collect();
    let mut out = Vec::with_capacity(texts.len());
    for text in texts {
        let path = (places.expand)(text)?;
        let path = path.canonicalize().map_err(|e| {
            format!(
                "{text:?} ({}): {e}; expected an existing file or directory",
                path.display()
            )
        })?;
        let inside = write
            .then(|| protected.iter().find(|p| path.starts_with(p)))
            .flatten();
        if let Some(hit) = covers_protected(&path, &protected).or(inside) {
            return Err(format!(
                "{text:?} covers {}, which the agent must not {}; name a narrower directory",
                hit.display(),
                if write { "write" } else { "read" }
            ));
        }
        out.push(path);
    }
    Ok(out)
}
