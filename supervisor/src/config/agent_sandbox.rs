//! `[agent.sandbox]`: how much confinement the agent itself gets (docs/configuration.md
//! "`[agent.sandbox]`", docs/security.md "The agent's confinement"); the keys are defined
//! in `config/raw.rs` (`RawAgentSandbox`), checked here.
//!
//! ```toml
//! [agent.sandbox]
//! mode = "require"
//! write_paths = ["~/.cache/pip"]   # written (and read) by the agent besides the tree
//! read_paths = ["/srv/datasets"]   # read by the agent besides the system and home
//! connect_ports = [8080]           # TCP ports besides 443
//! unix_sockets = true              # socket(AF_UNIX): gpg, the ssh agent, a database
//! user_namespaces = true           # new namespaces: Chromium's or bubblewrap's sandbox
//! host_network = true              # this machine's network (Landlock's port rule only)
//! pass_env = ["SSH_AUTH_SOCK"]     # variables inherited besides the allow-list
//! broker = "auto"                  # the provider key kept with the supervisor
//! allow_hosts = ["api.anthropic.com"]  # egress by host name (crate::config::allow_hosts)
//! ```
//!
//! Absent: `off` (configs written before this key keep their behaviour).

use std::path::{Path, PathBuf};

use agent_runner_plugin_host::agent::policy::AgentSeccompSwitches;
use agent_runner_plugin_host::common::credentials::{covers_protected, CREDENTIAL_PATHS};

use super::bad_path::BadPath;
use super::keys::Bad;
pub use super::raw::AgentSandboxConfig;
use super::raw::{AgentSandboxHand, RawAgentSandbox};

impl AgentSandboxConfig {
    /// What `unix_sockets` and `user_namespaces` lift from the agent's seccomp deny-list.
    pub fn seccomp_switches(&self) -> AgentSeccompSwitches {
        AgentSeccompSwitches {
            unix_sockets: self.unix_sockets,
            user_namespaces: self.user_namespaces,
        }
    }
}

impl Default for AgentSandboxConfig {
    /// Every key's default: `off`, no grants.
    fn default() -> Self {
        RawAgentSandbox::default()
            .resolve_with(AgentSandboxHand {
                write_paths: Vec::new(),
                read_paths: Vec::new(),
            })
            .expect("the defined defaults are in range")
    }
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
    pub expand: &'a dyn Fn(&str) -> Result<PathBuf, BadPath>,
}

/// Resolves `[agent.sandbox]` (`mode` and the grants; `allow_hosts` is the agent's,
/// `crate::config::allow_hosts`). Errors: the dotted key and what was expected.
pub(super) fn resolve(
    raw: &RawAgentSandbox,
    places: &Protected<'_>,
) -> Result<AgentSandboxConfig, Bad> {
    let bad = |key: &str, m: String| (format!("agent.sandbox.{key}"), m);
    let write_paths =
        paths(&raw.write_paths(), places, true).map_err(|m| bad("write_paths", m.to_string()))?;
    let read_paths =
        paths(&raw.read_paths(), places, false).map_err(|m| bad("read_paths", m.to_string()))?;
    let sandbox = raw.resolve_with(AgentSandboxHand {
        write_paths,
        read_paths,
    })?;
    if sandbox.host_network && raw.allow_hosts()?.is_some() {
        return Err(bad(
            "host_network",
            "true together with allow_hosts, which puts the agent in a network namespace of its own; expected false (or remove allow_hosts)".into(),
        ));
    }
    Ok(sandbox)
}

/// Expanded, canonical, existing paths; refused when one covers (or, for writes, is or
/// lies in) a protected path: the credential stores, the state dir, and for writes also the
/// log dir and the config file.
///
/// Errors: [`BadPath::Home`], [`BadPath::Missing`], [`BadPath::Covers`].
fn paths(texts: &[String], places: &Protected<'_>, write: bool) -> Result<Vec<PathBuf>, BadPath> {
    // Nothing to check: the protected paths are not resolved (each a path walk, two dozen
    // of them, at every config load).
    if texts.is_empty() {
        return Ok(Vec::new());
    }
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
        let path = path.canonicalize().map_err(|source| BadPath::Missing {
            text: text.clone(),
            path: path.clone(),
            source,
        })?;
        let inside = write
            .then(|| protected.iter().find(|p| path.starts_with(p)))
            .flatten();
        if let Some(hit) = covers_protected(&path, &protected).or(inside) {
            return Err(BadPath::Covers {
                text: text.clone(),
                protected: hit.to_owned(),
                who: "the agent",
                verb: if write { "write" } else { "read" },
                hint: "",
            });
        }
        out.push(path);
    }
    Ok(out)
}
