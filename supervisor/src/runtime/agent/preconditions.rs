//! What an agent CLI needs from this machine that `doctor` can check locally, without
//! network: docs/operations.md, "Agent preconditions". Each finding says what will happen
//! and what to do.
//!
//! - `claude` refuses `--dangerously-skip-permissions` (and the other ways into its bypass
//!   mode) when run as root, exiting 1 within a second, unless its environment declares a
//!   sandbox (`IS_SANDBOX=1` or `CLAUDE_CODE_BUBBLEWRAP=1`): every round would fail.
//! - `claude` with neither stored credentials (`~/.claude/.credentials.json`) nor a key in
//!   the environment (`ANTHROPIC_API_KEY`, `CLAUDE_CODE_OAUTH_TOKEN`) is likely not logged
//!   in (a warning: other login stores exist).
//! - `[agent.sandbox] allow_hosts` with no way to give the agent its network namespace
//!   here (an unprivileged operator without user namespaces): every spawn would fail.

use std::path::Path;

use crate::config::{AgentConfig, Config};

/// The arguments through which `claude` enters its bypass-permissions mode.
const CLAUDE_BYPASS_ARGS: &[&str] = &[
    "--dangerously-skip-permissions",
    "--allow-dangerously-skip-permissions",
    "bypassPermissions",
];

/// Variables with which `claude` accepts its bypass mode as root.
const CLAUDE_SANDBOX_VARS: &[&str] = &["IS_SANDBOX", "CLAUDE_CODE_BUBBLEWRAP"];

/// Variables that carry a `claude` credential.
const CLAUDE_KEY_VARS: &[&str] = &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"];

/// One finding: `(reason, how to fix)`.
pub(crate) type Finding = (String, String);

/// What the machine is: the effective uid and a variable lookup (the supervisor's
/// environment, overridden by `[agent.env]`), and the home directory.
pub(crate) struct Machine<'a> {
    /// Effective user id.
    pub euid: u32,
    /// The value of a variable in the agent's environment.
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// `HOME`, if set.
    pub home: Option<&'a Path>,
}

/// Which CLI `agent` runs ([`AgentConfig::cli`]; `""` for none agent-runner knows).
fn cli_name(agent: &AgentConfig) -> &str {
    agent.cli.name.unwrap_or("")
}

/// The failures and warnings of the agent of every phase of `config` on this machine: the
/// effective uid, the supervisor's environment overridden by each agent's `[agent.env]`,
/// and `HOME`. `doctor` reports both; `serve` and `round` refuse to start on a failure
/// (every round would fail).
pub(crate) fn on_this_machine(config: &Config) -> (Vec<Finding>, Vec<Finding>) {
    let mut agents = vec![&config.agent];
    agents.extend(
        config
            .phases
            .overrides
            .values()
            .filter_map(|o| o.agent.as_ref()),
    );
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    // SAFETY: geteuid(2) takes no arguments, cannot fail and touches no memory of ours.
    let euid = unsafe { libc::geteuid() };
    let (mut failed, mut warned) = (Vec::new(), Vec::new());
    for agent in agents {
        let var = |name: &str| {
            agent
                .env
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
        };
        let machine = Machine {
            euid,
            var: &var,
            home: home.as_deref(),
        };
        failed.extend(failures(agent, &machine));
        warned.extend(warnings(agent, &machine));
    }
    let egress = std::iter::once(&config.agent)
        .chain(
            config
                .phases
                .overrides
                .values()
                .filter_map(|o| o.agent.as_ref()),
        )
        .any(|a| a.allow_hosts.is_some());
    if egress {
        if let Err(why) = agent_runner_plugin_host::agent::egress_bridge::probe() {
            failed.push((
                format!("[agent.sandbox] allow_hosts is set but the agent's network namespace cannot be made here: {why}; every round's agent would fail to start"),
                "allow user namespaces for this user (docs/security.md, \"Egress by host name\"), run agent-runner as root, or remove allow_hosts".to_owned(),
            ));
        }
    }
    (failed, warned)
}

/// Findings that make every round fail (doctor: a failed check).
pub(crate) fn failures(agent: &AgentConfig, machine: &Machine) -> Vec<Finding> {
    let mut found = Vec::new();
    let argv = agent.command.iter().chain(&agent.prompt_arg_template);
    let bypass = argv
        .clone()
        .find(|a| CLAUDE_BYPASS_ARGS.contains(&a.as_str()));
    let sandboxed = CLAUDE_SANDBOX_VARS
        .iter()
        .any(|v| (machine.var)(v).as_deref() == Some("1"));
    if let (true, 0, Some(arg), false) =
        (cli_name(agent) == "claude", machine.euid, bypass, sandboxed)
    {
        found.push((
            format!("claude refuses {arg} when run as root (uid 0): every round would exit 1 within a second"),
            "run agent-runner as an unprivileged user; or, in a disposable container, declare it with IS_SANDBOX = \"1\" in [agent.env]".to_owned(),
        ));
    }
    found
}

/// Findings that may make rounds fail (doctor: warnings).
pub(crate) fn warnings(agent: &AgentConfig, machine: &Machine) -> Vec<Finding> {
    let mut found = Vec::new();
    if cli_name(agent) == "claude" {
        let stored = machine
            .home
            .is_some_and(|h| h.join(".claude/.credentials.json").is_file());
        let key = CLAUDE_KEY_VARS
            .iter()
            .any(|v| (machine.var)(v).is_some_and(|x| !x.is_empty()));
        if !stored && !key {
            found.push((
                "claude looks logged out: no ~/.claude/.credentials.json and no ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN".to_owned(),
                "run `claude` once as this user to log in, or set ANTHROPIC_API_KEY in the environment".to_owned(),
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude(args: &[&str]) -> AgentConfig {
        let command: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        AgentConfig {
            cli: crate::config::agent_cli::AgentCli::of(&command),
            command,
            prompt_arg_template: vec![],
            name: None,
            env: Default::default(),
            delivery: crate::config::PromptDelivery::Argv,
            exec_prefix: vec![],
            terminal_marker: String::new(),
            sigterm_grace: std::time::Duration::from_secs(10),
            session_resume: true,
            session_bounds: Default::default(),
            allow_hosts: None,
        }
    }

    #[test]
    fn root_with_the_bypass_flag_fails_unless_sandboxed() {
        let none = |_: &str| None;
        let sandbox = |v: &str| (v == "IS_SANDBOX").then(|| "1".to_owned());
        let agent = claude(&["/usr/bin/claude", "-p", "--dangerously-skip-permissions"]);
        let root = Machine {
            euid: 0,
            var: &none,
            home: None,
        };
        assert_eq!(failures(&agent, &root).len(), 1);
        let user = Machine {
            euid: 1000,
            var: &none,
            home: None,
        };
        assert!(failures(&agent, &user).is_empty());
        let boxed = Machine {
            euid: 0,
            var: &sandbox,
            home: None,
        };
        assert!(failures(&agent, &boxed).is_empty());
        assert!(failures(&claude(&["claude", "-p"]), &root).is_empty());
        assert!(failures(&claude(&["aider", "--dangerously-skip-permissions"]), &root).is_empty());
    }
}
