//! Where the agent's CLI will connect, read where agent-runner can see it, and whether its
//! sandbox would refuse that (docs/operations.md, "doctor", `agent_endpoint`; issue: a
//! local model endpoint on a port other than 443 refused with nothing saying so).
//!
//! The endpoints: the base-URL variables the preset CLIs read and the proxy variables,
//! from `[agent.env]` and then the supervisor's environment (the agent gets both), and the
//! base URLs in the CLI config files under the agent's `HOME` that agent-runner knows
//! (`~/.codex/config.toml`, `~/.kimi/config.toml`, `~/.pi/agent/models.json`). Each is
//! judged against `[agent.sandbox]`: with `allow_hosts`, against the egress proxy's list
//! and its rule for names ([`crate::runtime::egress::address`]); without it, against
//! Landlock's TCP connect rule (443 and `connect_ports`) where it applies. A refusal is
//! worded as the round's `agent_egress_refused` would word it.

use std::net::{IpAddr, ToSocketAddrs};
use std::path::PathBuf;

use crate::config::Config;
use crate::runtime::egress::address as egress_address;
use crate::runtime::egress::refusals::{EgressRefusal, Why};

/// The base-URL variables of the preset CLIs: claude, codex (through its provider table,
/// but aider and other OpenAI clients read it), aider, gemini, and a local Ollama.
pub(crate) const BASE_URL_VARS: &[&str] = &[
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_BASE_URL",
    "OLLAMA_API_BASE",
];

/// The proxy variables (upper and lower case are both read).
pub(crate) const PROXY_VARS: &[&str] = &["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"];

/// One place the agent will connect to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// Where it was read: `[agent.env] ANTHROPIC_BASE_URL`, `the environment's HTTPS_PROXY`,
    /// `~/.codex/config.toml`.
    pub source: String,
    /// Its host (a name or an address, IPv6 without brackets).
    pub host: String,
    /// Its TCP port (the scheme's default when the URL has none).
    pub port: u16,
    /// Whether it is a proxy variable.
    pub proxy: bool,
    /// Whether it was read from a variable (certain to be used) rather than a CLI's
    /// config file (one of possibly several providers).
    pub certain: bool,
}

/// `(host, port)` of an `http://` or `https://` URL (a bare `host:port` is taken as
/// `http://`); `None` for anything else.
pub(crate) fn host_port(url: &str) -> Option<(String, u16)> {
    let url = url.trim();
    let (default, rest) = match url.split_once("://") {
        Some((s, rest)) if s.eq_ignore_ascii_case("https") => (443, rest),
        Some((s, rest)) if s.eq_ignore_ascii_case("http") => (80, rest),
        Some(_) => return None,
        None => (80, url),
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, tail) = v6.split_once(']')?;
        (h, tail.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0)?,
        None => default,
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// Every endpoint of `config`'s agent that agent-runner can read (a variable of the
/// supervisor's environment only when the agent inherits it:
/// [`crate::runtime::agent::environment`]).
pub(crate) fn endpoints(config: &Config) -> Vec<Endpoint> {
    let agent_env = &config.agent.env;
    let inherit = crate::runtime::agent::environment::AllowList::of(config, config.agent.cli.name);
    let inherited = |n: &str| {
        inherit
            .as_ref()
            .is_none_or(|list| list.passes(std::ffi::OsStr::new(n)))
    };
    let mut out = Vec::new();
    let mut read_var = |name: &str, proxy: bool| {
        for n in [name.to_owned(), name.to_ascii_lowercase()] {
            let (source, value) = match agent_env.get(&n) {
                Some(v) => (format!("[agent.env] {n}"), v.clone()),
                None => match std::env::var(&n).ok().filter(|_| inherited(&n)) {
                    Some(v) => (format!("the environment's {n}"), v),
                    None => continue,
                },
            };
            if let Some((host, port)) = host_port(&value) {
                out.push(Endpoint {
                    source,
                    host,
                    port,
                    proxy,
                    certain: true,
                });
            }
            if n == name.to_ascii_lowercase() || !proxy {
                break;
            }
        }
    };
    // A base URL the key broker takes over is the supervisor's to reach, not the agent's
    // (the agent's is the broker's port, always granted).
    let brokered: Vec<&str> = crate::runtime::egress::key_broker::plan(config, &config.agent)
        .routes
        .iter()
        .flat_map(|r| r.provider.base_vars.iter().copied())
        .collect();
    for v in BASE_URL_VARS.iter().filter(|v| !brokered.contains(v)) {
        read_var(v, false);
    }
    for v in PROXY_VARS {
        read_var(v, true);
    }
    let home = agent_env
        .get("HOME")
        .cloned()
        .or_else(|| std::env::var("HOME").ok());
    if let Some(home) = home.map(PathBuf::from) {
        for (rel, key) in [
            (".codex/config.toml", "base_url"),
            (".kimi/config.toml", "base_url"),
            (".pi/agent/models.json", "baseUrl"),
        ] {
            let Ok(text) = std::fs::read_to_string(home.join(rel)) else {
                continue;
            };
            for url in values_of(&text, key) {
                if let Some((host, port)) = host_port(&url) {
                    out.push(Endpoint {
                        source: format!("~/{rel}"),
                        host,
                        port,
                        proxy: false,
                        certain: false,
                    });
                }
            }
        }
    }
    out.dedup();
    out
}

/// The string values of `key` in a TOML (`key = "v"`) or JSON (`"key": "v"`) text.
fn values_of(text: &str, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.split(['\n', ',', '{', '}']) {
        let line = line.trim();
        let rest = line
            .strip_prefix(key)
            .and_then(|r| r.trim_start().strip_prefix('='))
            .or_else(|| {
                line.strip_prefix(&format!("\"{key}\""))
                    .and_then(|r| r.trim_start().strip_prefix(':'))
            });
        if let Some(value) = rest.map(str::trim).and_then(|r| r.strip_prefix('"')) {
            if let Some(end) = value.find('"') {
                out.push(value[..end].to_owned());
            }
        }
    }
    out
}

/// Whether the agent's TCP connects are limited to 443 and `connect_ports` on this machine:
/// the agent confined with Landlock at ABI ≥ 4, and no `allow_hosts`.
pub(crate) fn connect_rule_applies(config: &Config, tier: &str, landlock_abi: Option<u32>) -> bool {
    config.agent.allow_hosts.is_none()
        && tier.contains("landlock")
        && landlock_abi.is_some_and(|abi| abi >= 4)
}

/// What the agent's sandbox would refuse of `endpoint`, as the round would record it.
pub(crate) fn refusal(
    config: &Config,
    endpoint: &Endpoint,
    connect_rule: bool,
) -> Option<EgressRefusal> {
    if let Some(allow) = &config.agent.allow_hosts {
        // A proxy variable names the upstream the egress proxy itself goes through.
        if endpoint.proxy {
            return None;
        }
        let Some(entry) = allow.find(&endpoint.host, endpoint.port) else {
            return Some(EgressRefusal::proxy(
                &endpoint.host,
                endpoint.port,
                "connect",
                None,
                Why::NotListed,
            ));
        };
        if endpoint.host == "localhost" || endpoint.host.parse::<IpAddr>().is_ok() {
            return None;
        }
        let own = egress_address::own_addresses();
        let addrs = (endpoint.host.as_str(), endpoint.port)
            .to_socket_addrs()
            .map(|a| a.map(|a| a.ip()).collect::<Vec<_>>())
            .unwrap_or_default();
        return addrs.into_iter().find_map(|ip| {
            egress_address::closed(ip, &own, entry.private()).map(|class| {
                EgressRefusal::proxy(
                    &endpoint.host,
                    endpoint.port,
                    "connect",
                    Some(ip),
                    Why::Resolves(class),
                )
            })
        });
    }
    let allowed = agent_runner_plugin_host::agent::policy::DEFAULT_CONNECT_PORTS
        .iter()
        .chain(&config.agent_sandbox.connect_ports)
        .any(|p| *p == endpoint.port);
    (connect_rule && !allowed).then(|| EgressRefusal::landlock(&endpoint.host, endpoint.port))
}

/// The sentences of the agent's endpoints (variables and CLI config files) that its
/// sandbox refuses under `config` at `tier` with `landlock_abi`, each naming where the
/// endpoint was read: what a failed round is diagnosed with when no refusal was observed
/// (a connect Landlock refused, or one to the agent's own loopback, is not seen by the
/// supervisor).
pub(crate) fn refused_endpoints(
    config: &Config,
    tier: &str,
    landlock_abi: Option<u32>,
) -> Vec<String> {
    let rule = connect_rule_applies(config, tier, landlock_abi);
    endpoints(config)
        .iter()
        .filter_map(|e| {
            refusal(config, e, rule)
                .map(|r| format!("{} (the agent's endpoint, {})", r.sentence(), e.source))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_their_host_and_port() {
        for (url, want) in [
            ("http://127.0.0.1:4010", Some(("127.0.0.1", 4010))),
            ("https://api.example.org/v1", Some(("api.example.org", 443))),
            ("http://Proxy.Corp", Some(("proxy.corp", 80))),
            ("http://u:p@proxy.corp:3128/", Some(("proxy.corp", 3128))),
            ("http://[::1]:8080/v1", Some(("::1", 8080))),
            ("proxy.corp:3128", Some(("proxy.corp", 3128))),
            ("socks5://p:1080", None),
            ("http://h:0", None),
            ("http://:80", None),
        ] {
            let got = host_port(url);
            assert_eq!(got.as_ref().map(|(h, p)| (h.as_str(), *p)), want, "{url}");
        }
    }

    #[test]
    fn config_files_give_their_base_urls() {
        let toml =
            "model = \"x\"\n[model_providers.fake]\nbase_url = \"http://127.0.0.1:4010/v1\"\n";
        assert_eq!(values_of(toml, "base_url"), ["http://127.0.0.1:4010/v1"]);
        let json =
            r#"{"providers": {"fake": {"baseUrl": "http://127.0.0.1:4011/v1", "api": "x"}}}"#;
        assert_eq!(values_of(json, "baseUrl"), ["http://127.0.0.1:4011/v1"]);
        assert!(values_of("base_urls = \"x\"", "base_url").is_empty());
    }
}
