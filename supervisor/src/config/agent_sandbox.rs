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
use super::raw::RawAgentSandbox;
use super::vocabulary::{BrokerMode, SandboxMode};

/// `[agent.sandbox]`'s mode and grants, resolved.
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
    /// [`agent_runner_plugin_host::agent::policy::DEFAULT_CONNECT_PORTS`].
    pub connect_ports: Vec<u16>,
    /// `unix_sockets`: `socket(AF_UNIX)` allowed to the agent. Default false.
    pub unix_sockets: bool,
    /// `user_namespaces`: new namespaces allowed to the agent. Default false.
    pub user_namespaces: bool,
    /// `host_network`: the agent keeps this machine's network namespace (Landlock's port
    /// rule only) instead of its own behind the egress proxy. Default false.
    pub host_network: bool,
    /// `pass_env`: variable names the confined agent inherits besides the allow-list
    /// (`crate::runtime::agent_environment`).
    pub pass_env: Vec<String>,
    /// `broker`: whether the provider key is kept out of the agent's sandbox
    /// (`crate::runtime::key_broker`). Default auto.
    pub broker: BrokerMode,
}

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
    fn default() -> Self {
        AgentSandboxConfig {
            mode: SandboxMode::Off,
            write_paths: Vec::new(),
            read_paths: Vec::new(),
            connect_ports: Vec::new(),
            unix_sockets: false,
            user_namespaces: false,
            host_network: false,
            pass_env: Vec::new(),
            broker: BrokerMode::Auto,
        }
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
    let mode = raw.mode()?;
    let write_paths =
        paths(&raw.write_paths(), places, true).map_err(|m| bad("write_paths", m.to_string()))?;
    let read_paths =
        paths(&raw.read_paths(), places, false).map_err(|m| bad("read_paths", m.to_string()))?;
    let connect_ports = raw.connect_ports();
    if connect_ports.contains(&0) {
        return Err(bad(
            "connect_ports",
            "0 is not a TCP port; expected integers in 1..=65535".into(),
        ));
    }
    let pass_env = raw.pass_env();
    if let Some(name) = pass_env
        .iter()
        .find(|n| n.is_empty() || n.contains(['=', '\0']))
    {
        return Err(bad(
            "pass_env",
            format!("{name:?} is not a variable name; expected names without `=` or NUL"),
        ));
    }
    let host_network = raw.host_network()?;
    if host_network && raw.allow_hosts()?.is_some() {
        return Err(bad(
            "host_network",
            "true together with allow_hosts, which puts the agent in a network namespace of its own; expected false (or remove allow_hosts)".into(),
        ));
    }
    Ok(AgentSandboxConfig {
        mode,
        write_paths,
        read_paths,
        connect_ports,
        unix_sockets: raw.unix_sockets()?,
        user_namespaces: raw.user_namespaces()?,
        host_network,
        pass_env,
        broker: raw.broker()?,
    })
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
