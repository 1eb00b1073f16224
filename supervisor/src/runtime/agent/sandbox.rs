//! The agent's sandbox gate: what `[agent.sandbox] mode` asks for against what this machine
//! offers, and the confinement of each round's agent built from it (docs/security.md
//! "The agent's confinement"). The same gate runs in `serve`, `round`, `doctor` and `peek`.
//!
//! - `require`: Landlock, seccomp and a PID namespace of the agent's own (root's, or a user
//!   namespace's for an unprivileged operator) must all engage, and a network namespace
//!   of its own unless `host_network` keeps this machine's ([`AgentNetworkGate`]), or
//!   nothing starts (exit 78 saying what is missing); a round whose confinement cannot be
//!   built does not start.
//! - `prefer`: the agent gets every layer this machine offers; a shortfall is announced
//!   once per boot (`agent_sandbox_degraded`).
//! - `off` (and a config without the key): the agent runs as before, unconfined.

use std::path::{Path, PathBuf};

use agent_runner_plugin_host::agent::confine::{
    agent_layers, AgentConfineError, AgentConfinement, AgentSandboxSpec, PidIsolation,
};
use agent_runner_plugin_host::agent::policy::{AgentPolicyInput, DEFAULT_CONNECT_PORTS};
use agent_runner_plugin_host::agent::protected::ProtectedRoots;
use agent_runner_plugin_host::common::layers::Layer;
use agent_runner_plugin_host::common::probe::{Capabilities, Tier};

use crate::config::{Config, SandboxMode};

/// Where a round's work tree lies, for its protected paths: the repository's top and hooks
/// directory as the supervisor's git pinned them ([`crate::runtime::git::repo::Repo::protected_roots`]);
/// outside git the work dir and no hooks.
#[derive(Clone, Debug, Default)]
pub(crate) struct TreeRoots {
    /// The work tree's root (`None`: the work dir).
    pub root: Option<PathBuf>,
    /// The repository's hooks directories.
    pub hooks_dirs: Vec<PathBuf>,
    /// The repository's `info`, `remotes` and `branches` directories (in the common dir).
    pub repo_dirs: Vec<PathBuf>,
}

/// The gate's verdict for this boot.
#[derive(Clone, Debug)]
pub(crate) struct AgentSandboxGate {
    /// What the config asked for.
    pub requested: SandboxMode,
    /// Landlock and seccomp as applied to the agent.
    pub applied: Tier,
    /// The kernel's Landlock ABI (0: none).
    pub landlock_abi: u32,
    /// How the agent gets its own PID namespace (`None` under `off`, or where impossible).
    pub isolation: PidIsolation,
    /// Why there is no PID namespace, when there is none.
    pub isolation_missing: Option<String>,
    /// Whether the agent gets a network namespace of its own without `allow_hosts`.
    pub network: AgentNetworkGate,
}

/// The agent's network without `allow_hosts` (docs/security.md, "The agent's network";
/// with `allow_hosts` the agent is always in its own namespace, behind the listed names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AgentNetworkGate {
    /// A network namespace of its own, out through the egress proxy in its open mode
    /// ([`crate::runtime::egress::proxy::Policy::Open`]).
    Own,
    /// This machine's network by `[agent.sandbox] host_network = true`: Landlock's port
    /// rule only.
    HostBySwitch,
    /// This machine's network because no namespace can be made here (`prefer`); why.
    HostUnavailable(String),
    /// `[agent.sandbox] mode = "off"`: unconfined.
    Off,
}

/// `[agent.sandbox] mode = "require"` on a machine that cannot honour it (exit 78 at boot;
/// doctor's failed `agent_sandbox` check).
#[derive(Clone, Debug, thiserror::Error)]
#[error("[agent.sandbox] mode = \"require\" but {missing}; the agent needs Landlock, seccomp, and PID and network namespaces of its own (root, or unprivileged user namespaces). Fix the machine, or set [agent.sandbox] mode = \"prefer\"")]
pub(crate) struct AgentSandboxRefused {
    /// What is missing and why.
    pub missing: String,
}

impl AgentSandboxGate {
    /// Evaluates `sandbox` (its `mode` and `host_network`) against the kernel's `caps` and
    /// this process's privileges; the network namespace is probed once per process
    /// ([`agent_runner_plugin_host::agent::egress_bridge::probe`]).
    ///
    /// Errors: [`AgentSandboxRefused`] under `require`, naming each missing layer.
    pub(crate) fn evaluate(
        sandbox: &crate::config::AgentSandboxConfig,
        caps: &Capabilities,
    ) -> Result<Self, AgentSandboxRefused> {
        let requested = sandbox.mode;
        let landlock_abi = caps.landlock_abi.unwrap_or(0);
        if requested == SandboxMode::Off {
            return Ok(AgentSandboxGate {
                requested,
                applied: Tier::Unconfined,
                landlock_abi,
                isolation: PidIsolation::None,
                isolation_missing: Some("[agent.sandbox] mode = \"off\"".into()),
                network: AgentNetworkGate::Off,
            });
        }
        let (isolation, isolation_missing) = PidIsolation::detect();
        let network = if sandbox.host_network {
            AgentNetworkGate::HostBySwitch
        } else {
            match agent_runner_plugin_host::agent::egress_bridge::probe() {
                Ok(()) => AgentNetworkGate::Own,
                Err(why) => AgentNetworkGate::HostUnavailable(why.to_string()),
            }
        };
        let gate = AgentSandboxGate {
            requested,
            applied: caps.tier(),
            landlock_abi,
            isolation,
            isolation_missing,
            network,
        };
        if requested == SandboxMode::Require {
            if let Some(missing) = gate.missing(caps) {
                return Err(AgentSandboxRefused { missing });
            }
        }
        Ok(gate)
    }

    /// What of the full confinement this machine lacks, in words; `None` when nothing.
    fn missing(&self, caps: &Capabilities) -> Option<String> {
        let mut missing = Vec::new();
        if self.applied != Tier::LandlockSeccomp {
            missing.push(format!(
                "the kernel offers only `{}` ({})",
                caps.tier().as_str(),
                caps.unconfined_reason
                    .as_deref()
                    .unwrap_or("unknown reason")
            ));
        }
        if self.isolation == PidIsolation::None {
            missing.push(format!(
                "no PID namespace (nor a mount namespace to make the config file and the protected paths read-only): {}",
                self.isolation_missing.as_deref().unwrap_or("unavailable")
            ));
        }
        if let AgentNetworkGate::HostUnavailable(why) = &self.network {
            missing.push(format!(
                "no network namespace (so TCP to 443 and connect_ports reaches any address, this machine's included, and UDP anywhere; set [agent.sandbox] host_network = true to accept that): {why}"
            ));
        }
        (!missing.is_empty()).then(|| missing.join("; "))
    }

    /// Whether the agent, without `allow_hosts`, runs in a network namespace of its own
    /// behind the egress proxy's open mode (docs/security.md, "The agent's network").
    pub(crate) fn own_network(&self) -> bool {
        self.network == AgentNetworkGate::Own
    }

    /// The `network` layer of `doctor` and `peek`: the agent's network without
    /// `allow_hosts`, on (its own namespace) or off with the reason.
    fn network_layer(&self) -> Layer {
        let (on, detail) = match &self.network {
            AgentNetworkGate::Own => (true, "a network namespace of its own (only loopback); out through the supervisor's egress proxy: host names on 443 and connect_ports, public addresses, never this machine, link-local, metadata or private addresses; connect_ports also forwarded to this machine's 127.0.0.1; no UDP (with allow_hosts: the listed hosts only)".to_owned()),
            AgentNetworkGate::HostBySwitch => (false, "[agent.sandbox] host_network = true: this machine's network, Landlock's port rule only (TCP to 443 and connect_ports at any address, this machine's included; UDP anywhere), unless allow_hosts is set".to_owned()),
            AgentNetworkGate::HostUnavailable(why) => (false, format!("no network namespace here ({why}): this machine's network, Landlock's port rule only, unless allow_hosts is set")),
            AgentNetworkGate::Off => (false, "[agent.sandbox] mode = \"off\"".to_owned()),
        };
        Layer {
            name: "network",
            on,
            detail,
        }
    }

    /// Whether the agent is confined at all (`prefer` or `require`).
    pub(crate) fn enabled(&self) -> bool {
        self.requested != SandboxMode::Off
    }

    /// Whether the config file is read-only to the agent in its own mount namespace (the
    /// read-only mount layer: the agent confined, with a namespace of its own), so it
    /// cannot write the file in place.
    pub(crate) fn config_read_only(&self) -> bool {
        self.enabled() && self.isolation != PidIsolation::None
    }

    /// Whether the agent's file system is confined by our Landlock (`prefer` on a machine
    /// without Landlock is not, even where seccomp engages): only then is a CLI's own
    /// sandbox, which cannot be built inside ours, replaced
    /// ([`crate::runtime::agent::own_sandbox`]). Without our Landlock the CLI keeps its own words,
    /// so it never runs with neither sandbox (docs/security.md, "A CLI's own sandbox under
    /// ours").
    pub(crate) fn confines(&self) -> bool {
        self.enabled() && self.applied.landlock()
    }

    /// `agent`'s command as the round runs it and what of the CLI's own sandbox was
    /// replaced; `None` when it runs as written (not confined by us, or nothing to replace).
    pub(crate) fn own_sandbox_replaced(
        &self,
        agent: &crate::config::AgentConfig,
    ) -> Option<(Vec<String>, crate::runtime::agent::own_sandbox::Replaced)> {
        self.confines()
            .then(|| {
                crate::runtime::agent::own_sandbox::confined_command(&agent.cli, &agent.command)
            })
            .flatten()
    }

    /// What is missing under `prefer`, if anything (announced once per boot).
    pub(crate) fn shortfall(&self, caps: &Capabilities) -> Option<String> {
        (self.requested == SandboxMode::Prefer)
            .then(|| self.missing(caps))
            .flatten()
    }

    /// The layers the agent gets under `sandbox`, on or off with the reason (doctor, peek).
    pub(crate) fn layers(&self, sandbox: &crate::config::AgentSandboxConfig) -> Vec<Layer> {
        if !self.enabled() {
            return vec![Layer {
                name: "agent_sandbox",
                on: false,
                detail:
                    "[agent.sandbox] mode = \"off\": the agent runs with every right of the operator"
                        .into(),
            }];
        }
        let mut layers = agent_layers(
            self.applied,
            self.landlock_abi,
            self.isolation,
            self.isolation_missing.as_deref(),
            sandbox.seccomp_switches(),
        );
        layers.push(self.network_layer());
        layers
    }

    /// The confinement of one round's agent running `argv0` (with `env` over the
    /// supervisor's environment) under `config`, also allowed to connect to `extra_ports`
    /// (the egress proxy's), in a network namespace of its own when `own_network` (its
    /// connects out of it told); `None` under `off`. Its TMPDIR is `<state_dir>/agent-tmp`,
    /// emptied first.
    ///
    /// Errors: a required path is missing, the kernel refused the ruleset, a descriptor
    /// could not be opened; the round does not start.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn confinement(
        &self,
        config: &Config,
        tree: &TreeRoots,
        cli: &str,
        argv0: &str,
        env: &[(String, String)],
        extra_ports: &[u16],
        own_network: bool,
    ) -> Result<Option<AgentConfinement>, AgentConfineError> {
        let mut connect_ports = DEFAULT_CONNECT_PORTS.to_vec();
        connect_ports.extend(&config.agent_sandbox.connect_ports);
        connect_ports.extend(extra_ports);
        self.confine(config, tree, cli, argv0, env, connect_ports, own_network)
    }

    /// The confinement of goal check `check` after a round (docs/security.md "Goal
    /// checks"): the agent's tier and policy, no CLI state of its own, TCP only to the
    /// check's own `connect_ports`; `None` under `off`.
    ///
    /// Errors: as [`AgentSandboxGate::confinement`].
    pub(crate) fn check_confinement(
        &self,
        config: &Config,
        tree: &TreeRoots,
        check: &crate::config::GoalCheck,
        env: &[(String, String)],
    ) -> Result<Option<AgentConfinement>, AgentConfineError> {
        self.confine(
            config,
            tree,
            "",
            &check.cmd[0],
            env,
            check.connect_ports.clone(),
            false,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn confine(
        &self,
        config: &Config,
        tree: &TreeRoots,
        cli: &str,
        argv0: &str,
        env: &[(String, String)],
        connect_ports: Vec<u16>,
        own_network: bool,
    ) -> Result<Option<AgentConfinement>, AgentConfineError> {
        if !self.enabled() {
            return Ok(None);
        }
        let var = |name: &str| {
            env.iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| std::ffi::OsString::from(v))
                .or_else(|| std::env::var_os(name))
        };
        let tmp_dir = tmp_dir(config);
        let _ = std::fs::remove_dir_all(&tmp_dir);
        if let Some(home) = var("HOME") {
            agent_runner_plugin_host::agent::policy::create_state(cli, Path::new(&home)).map_err(
                |source| AgentConfineError::Io {
                    what: format!("creating {cli}'s state in {}", Path::new(&home).display()),
                    source,
                },
            )?;
        }
        let sandbox = &config.agent_sandbox;
        let executable = crate::runtime::agent::process::find_on_path(
            argv0,
            var("PATH"),
            &config.runtime.work_dir,
        );
        let mut read_paths = sandbox.read_paths.clone();
        if let Some(shim) = shim(config, cli, &executable, &var) {
            read_paths.extend(shim.grants);
        }
        let spec = AgentSandboxSpec {
            policy: AgentPolicyInput {
                work_dir: config.runtime.work_dir.clone(),
                home: var("HOME").map(PathBuf::from),
                cli: cli.to_owned(),
                executable,
                tmp_dir,
                state_dir: config.runtime.state_dir.clone(),
                log_dir: config.runtime.log_dir.clone(),
                config_path: config.path.clone(),
                write_paths: sandbox.write_paths.clone(),
                read_paths,
                shadow: None,
            },
            connect_ports,
            own_network,
            tier: self.applied,
            switches: sandbox.seccomp_switches(),
            roots: ProtectedRoots {
                tree_root: tree
                    .root
                    .clone()
                    .unwrap_or_else(|| config.runtime.work_dir.clone()),
                work_dir: config.runtime.work_dir.clone(),
                hooks_dirs: tree.hooks_dirs.clone(),
                repo_dirs: tree.repo_dirs.clone(),
                config: config.path.clone(),
            },
        };
        AgentConfinement::build(&spec, self.isolation).map(Some)
    }
}

/// The version manager's shim the agent of `config` (CLI `cli`) runs as `executable`,
/// with `var` its environment: what the sandbox then also grants
/// ([`crate::runtime::agent::shims`]). Nothing is granted that holds or lies in the agent's
/// withheld credential stores or the state dir.
fn shim(
    config: &Config,
    cli: &str,
    executable: &Path,
    var: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<crate::runtime::agent::shims::Shim> {
    let mut refused = vec![config.runtime.state_dir.clone()];
    if let Some(home) = var("HOME") {
        refused.extend(
            agent_runner_plugin_host::agent::policy::withheld_in_home(Path::new(&home), cli)
                .into_iter()
                .map(|(p, _)| p),
        );
    }
    crate::runtime::agent::shims::find(executable, var("PATH").as_deref(), &refused)
}

/// The shim the agent of `config` starts through, if any, as its rounds will find it
/// (`doctor`'s `agent_shim`): `command[0]` on the agent's `PATH` (`[agent.env]` over the
/// supervisor's environment).
pub(crate) fn agent_shim(config: &Config) -> Option<crate::runtime::agent::shims::Shim> {
    let agent = &config.agent;
    let var = |name: &str| {
        agent
            .env
            .get(name)
            .map(std::ffi::OsString::from)
            .or_else(|| std::env::var_os(name))
    };
    let executable = crate::runtime::agent::process::find_on_path(
        &agent.command[0],
        var("PATH"),
        &config.runtime.work_dir,
    );
    shim(config, agent.cli.name.unwrap_or(""), &executable, &var)
}

/// The agent's private TMPDIR: `<state_dir>/agent-tmp` (the only part of the state dir
/// the agent reaches).
pub(crate) fn tmp_dir(config: &Config) -> PathBuf {
    config.runtime.state_dir.join("agent-tmp")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// codex's own sandbox is replaced only where our Landlock confines the agent's file
    /// system: never under `off`, nor under `prefer` on a machine without Landlock.
    #[test]
    fn a_cli_s_own_sandbox_is_replaced_only_when_ours_confines() {
        let command: Vec<String> = ["codex", "exec", "--sandbox", "workspace-write", "--json"]
            .map(str::to_owned)
            .to_vec();
        let codex = crate::config::AgentConfig {
            cli: crate::config::agent_cli::AgentCli::of(&command),
            command,
            prompt_arg_template: Vec::new(),
            name: None,
            env: Default::default(),
            delivery: crate::config::PromptDelivery::Argv,
            exec_prefix: Vec::new(),
            terminal_marker: String::new(),
            sigterm_grace: std::time::Duration::from_secs(10),
            session_resume: false,
            session_bounds: Default::default(),
            allow_hosts: None,
        };
        let caps = |landlock: bool, seccomp: bool| Capabilities {
            landlock_abi: landlock.then_some(7),
            seccomp,
            unconfined_reason: None,
        };
        let replaced = |mode, caps: &Capabilities| {
            let sandbox = crate::config::AgentSandboxConfig {
                mode,
                ..Default::default()
            };
            AgentSandboxGate::evaluate(&sandbox, caps)
                .unwrap()
                .own_sandbox_replaced(&codex)
                .map(|(argv, _)| argv)
        };
        assert_eq!(replaced(SandboxMode::Off, &caps(true, true)), None);
        assert_eq!(replaced(SandboxMode::Prefer, &caps(false, false)), None);
        assert_eq!(replaced(SandboxMode::Prefer, &caps(false, true)), None);
        for (landlock, seccomp) in [(true, true), (true, false)] {
            let argv = replaced(SandboxMode::Prefer, &caps(landlock, seccomp))
                .unwrap_or_else(|| panic!("landlock {landlock} seccomp {seccomp}"));
            assert_eq!(
                argv,
                [
                    "codex",
                    "exec",
                    "--dangerously-bypass-approvals-and-sandbox",
                    "--json"
                ]
            );
        }
    }
}
