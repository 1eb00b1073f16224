//! The key broker: the provider key stays with the supervisor, never in the agent's sandbox
//! (docs/security.md, "The key broker"; issue 37, item 4).
//!
//! For each provider the agent's CLI is brokered for ([`CLIS`]) whose key variable is set in
//! the supervisor's environment (never `[agent.env]`: that file is the agent's to read),
//! a round gets a *route*:
//!
//! - the agent is given, in place of the key, a **placeholder** (`agent-runner-placeholder-`
//!   and 32 random hex digits, new each round) and, in place of the base URL, one on a
//!   loopback port of the supervisor (`http://127.0.0.1:PORT` + the upstream's path; behind
//!   the egress proxy `http://`[`PROXIED_HOST`]`:PORT`, which the proxy hands here);
//! - the broker serves each connection there: it reads the request head (at most
//!   [`HEAD_MAX`] bytes, within [`HEAD_TIMEOUT`]), takes the request in origin form (an
//!   absolute URI only when it names the broker itself; any other host, or `CONNECT`, is
//!   refused: the broker forwards to its one upstream only), removes every header that
//!   carries a key (`x-api-key`, `authorization`, `x-goog-api-key`, `api-key`) and the
//!   `key` query parameter, and refuses the request unless one of them held the route's
//!   placeholder; then it sends the head to the **upstream** — the base URL the operator
//!   set (`ANTHROPIC_BASE_URL`, …, from `[agent.env]` or the supervisor's environment) or
//!   the provider's own — over TLS for `https://` (rustls, Mozilla's roots), through the
//!   operator's `HTTPS_PROXY` where it says, with `Host` the upstream's, the real key in
//!   the provider's header and `Connection: close` (one request per connection, so no
//!   later request on it passes unread), and copies both directions as they come (SSE
//!   streams through, nothing is buffered whole);
//! - while it copies each answer to the agent, unchanged and as it comes, a copy of its
//!   bytes goes to a reader of the provider's usage ([`crate::budget::billed`]: bounded
//!   memory, read after the bytes were sent on); the round's tally ([`KeyBroker::take_billed`])
//!   is the spend `[budget]` counts first. So the answer can be read, the broker asks the
//!   upstream for no compression (`Accept-Encoding: identity`, the agent's own header
//!   dropped);
//! - a refusal (`403` wrong host, `401` no placeholder, `400` bad request) is recorded for
//!   the round as an [`EgressRefusal`] of layer `key_broker` (`agent_egress_refused`).
//!
//! The key is never logged, never written to disk, never put in a response by the broker.
//! An OAuth login (no key variable; the CLI's credentials file) is left alone: nothing to
//! broker. [`plan`] says what is brokered and what is not, and why (`doctor`).
//!
//! [`KeyBroker::serve`] takes an already-connected stream and the bytes already read from
//! it, so any front end can hand it connections: its own loopback listeners
//! ([`open`]), or the egress proxy for an agent in a network namespace.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::budget::billed::{AnswerReader, Billed, Dialect};
use crate::config::{AgentConfig, BrokerMode, Config, SandboxMode};
use crate::runtime::egress::refusals::{EgressRefusal, Why};
use crate::runtime::egress::upstream_proxy::UpstreamProxies;

/// The request methods the broker forwards (as written: methods are case-sensitive).
/// Never `TRACE`/`TRACK`: their answer echoes the request, key and all.
pub(crate) const BROKERED_METHODS: &[&str] =
    &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// The largest request head the broker reads (request line and headers).
pub(crate) const HEAD_MAX: usize = 16 * 1024;
/// How long a client has to send its request head.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long reaching the upstream (resolve, connect, TLS handshake) may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The host name of the broker in the agent's base URLs when the agent is behind the egress
/// proxy (`[agent.sandbox] allow_hosts`): not in the agent's `NO_PROXY`, so its client sends
/// the request to the proxy, which hands it to the broker. `.invalid` never resolves
/// (RFC 2606), so it cannot name anything else.
pub(crate) const PROXIED_HOST: &str = "key-broker.agent-runner.invalid";

/// The placeholder's prefix.
const PLACEHOLDER_PREFIX: &str = "agent-runner-placeholder-";

/// How a provider takes its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyHeader {
    /// `x-api-key: KEY` (Anthropic's API keys).
    XApiKey,
    /// `Authorization: Bearer KEY` (OpenAI; Anthropic's auth tokens).
    Bearer,
    /// `x-goog-api-key: KEY` (Gemini; its `?key=` query parameter is taken too).
    XGoogApiKey,
}

impl KeyHeader {
    /// The header line (without CRLF) carrying `key`.
    fn line(self, key: &str) -> String {
        match self {
            KeyHeader::XApiKey => format!("x-api-key: {key}"),
            KeyHeader::Bearer => format!("Authorization: Bearer {key}"),
            KeyHeader::XGoogApiKey => format!("x-goog-api-key: {key}"),
        }
    }
}

/// A variable holding a provider key.
#[derive(Debug)]
pub(crate) struct KeyVar {
    /// The variable's name.
    pub name: &'static str,
    /// Where the provider takes it.
    pub header: KeyHeader,
}

/// A provider the broker forwards to.
#[derive(Debug)]
pub(crate) struct Provider {
    /// Its name in doctor's lines and the docs.
    pub name: &'static str,
    /// The variables of its key (each brokered that is set).
    pub keys: &'static [KeyVar],
    /// The base-URL variables the CLIs read for it: the first set is the upstream; each is
    /// given the broker's URL.
    pub base_vars: &'static [&'static str],
    /// Its own endpoint, when no base-URL variable is set.
    pub default_base: &'static str,
}

/// The providers, as reviewed data (the variables read in the pinned CLIs,
/// tests/agent-clis/versions.env).
pub(crate) const PROVIDERS: &[Provider] = &[
    Provider {
        name: "anthropic",
        keys: &[
            KeyVar {
                name: "ANTHROPIC_API_KEY",
                header: KeyHeader::XApiKey,
            },
            KeyVar {
                name: "ANTHROPIC_AUTH_TOKEN",
                header: KeyHeader::Bearer,
            },
        ],
        // Claude Code and the Anthropic SDKs read ANTHROPIC_BASE_URL; litellm (aider)
        // also ANTHROPIC_API_BASE.
        base_vars: &["ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"],
        default_base: "https://api.anthropic.com",
    },
    Provider {
        name: "openai",
        keys: &[KeyVar {
            name: "OPENAI_API_KEY",
            header: KeyHeader::Bearer,
        }],
        // Codex and the OpenAI SDKs read OPENAI_BASE_URL; litellm (aider) OPENAI_API_BASE.
        base_vars: &["OPENAI_BASE_URL", "OPENAI_API_BASE"],
        default_base: "https://api.openai.com/v1",
    },
    Provider {
        name: "gemini",
        keys: &[KeyVar {
            name: "GEMINI_API_KEY",
            header: KeyHeader::XGoogApiKey,
        }],
        // Gemini CLI (its genai client) reads GOOGLE_GEMINI_BASE_URL.
        base_vars: &["GOOGLE_GEMINI_BASE_URL"],
        default_base: "https://generativelanguage.googleapis.com",
    },
];

/// The providers each CLI is brokered for.
pub(crate) const CLIS: &[(&str, &[&str])] = &[
    ("claude", &["anthropic"]),
    ("codex", &["openai"]),
    ("gemini", &["gemini"]),
    ("aider", &["openai", "anthropic"]),
];

/// The CLIs that are not brokered, and why.
pub(crate) const NOT_BROKERED: &[(&str, &str)] = &[
    (
        "kimi",
        "kimi takes its key and base URL from its own config.toml (`api_key`), which the agent reads; no variable to swap",
    ),
    (
        "pi",
        "pi takes its base URL from its own models.json, and its key from a variable that file names (any name); neither is one the broker knows",
    ),
    (
        "codewhale",
        "codewhale's base-URL variable is not known to agent-runner",
    ),
];

/// Claude Code's long-lived OAuth token variable (`claude setup-token`): a login, not an
/// API key; not brokered, and said so.
const CLAUDE_OAUTH_VAR: &str = "CLAUDE_CODE_OAUTH_TOKEN";

/// The headers that carry a key, for any provider: removed from every request.
const KEY_HEADERS: &[&str] = &["x-api-key", "authorization", "x-goog-api-key", "api-key"];

/// Hop-by-hop headers and the client's words to a proxy: not sent on.
const DROPPED_HEADERS: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "upgrade",
    // Replaced by `Accept-Encoding: identity`, so the answer's usage can be read.
    "accept-encoding",
];

/// A secret value: never shown (its `Debug` says only its length).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

/// Where a route forwards to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Upstream {
    /// `https://` (TLS) or `http://`.
    pub tls: bool,
    /// Its host (a name or an address; IPv6 without brackets).
    pub host: String,
    /// Its port.
    pub port: u16,
    /// The base URL's path (`/v1`; empty for none), kept in the agent's base URL.
    pub path: String,
}

impl Upstream {
    /// `http[s]://host:port/path` of an `http://` or `https://` base URL; `None` for
    /// anything else (credentials in it included).
    pub(crate) fn parse(url: &str) -> Option<Upstream> {
        let url = url.trim();
        let (tls, rest) = match url.split_once("://") {
            Some((s, rest)) if s.eq_ignore_ascii_case("https") => (true, rest),
            Some((s, rest)) if s.eq_ignore_ascii_case("http") => (false, rest),
            _ => return None,
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        if authority.contains('@') || path.contains(['?', '#']) {
            return None;
        }
        let (host, port) = authority_host_port(authority, if tls { 443 } else { 80 })?;
        Some(Upstream {
            tls,
            host,
            port,
            path: path.trim_end_matches('/').to_owned(),
        })
    }

    /// The `Host` header's value.
    fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match (self.tls, self.port) {
            (true, 443) | (false, 80) => host,
            _ => format!("{host}:{}", self.port),
        }
    }

    /// The URL, for the operator's eyes.
    pub(crate) fn url(&self) -> String {
        format!(
            "{}://{}{}",
            if self.tls { "https" } else { "http" },
            self.authority(),
            self.path
        )
    }
}

/// One provider brokered for a round, as planned.
#[derive(Debug)]
pub(crate) struct RoutePlan {
    /// The provider.
    pub provider: &'static Provider,
    /// Where its requests go.
    pub upstream: Upstream,
    /// Where the upstream was read (`the environment's ANTHROPIC_BASE_URL`, `the
    /// provider's own`).
    pub upstream_source: String,
    /// Its key variables set in the supervisor's environment, with their values.
    pub keys: Vec<(&'static KeyVar, Secret)>,
}

/// What the broker does for a config's agent: the routes, and what it leaves, with why.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// The brokered providers.
    pub routes: Vec<RoutePlan>,
    /// What is not brokered, one sentence each (doctor).
    pub left: Vec<String>,
}

/// The plan for `agent` (a profile's) under `config`, the key read from this process's
/// environment.
pub(crate) fn plan(config: &Config, agent: &AgentConfig) -> Plan {
    plan_with(config, agent, &|name| std::env::var(name).ok())
}

/// [`plan`] with `env` standing for the supervisor's environment.
pub(crate) fn plan_with(
    config: &Config,
    agent: &AgentConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Plan {
    let mut plan = Plan::default();
    if config.agent_sandbox.broker == BrokerMode::Off {
        plan.left.push(
            "[agent.sandbox] broker = \"off\": the agent gets its provider key itself".into(),
        );
        return plan;
    }
    if config.agent_sandbox.mode == SandboxMode::Off {
        plan.left.push(
            "[agent.sandbox] mode = \"off\": the agent has every right of the operator, its key included; nothing is brokered".into(),
        );
        return plan;
    }
    let Some(cli) = agent.cli.name else {
        plan.left.push(
            "the agent is none of the known CLIs: its key, if it has one, is not brokered (set [agent] cli if it is one)".into(),
        );
        return plan;
    };
    if let Some((_, why)) = NOT_BROKERED.iter().find(|(n, _)| *n == cli) {
        plan.left.push(format!("{cli} is not brokered: {why}"));
        return plan;
    }
    let Some((_, providers)) = CLIS.iter().find(|(n, _)| *n == cli) else {
        return plan;
    };
    if cli == "claude"
        && (agent.env.contains_key(CLAUDE_OAUTH_VAR) || env(CLAUDE_OAUTH_VAR).is_some())
    {
        plan.left.push(format!(
            "claude: {CLAUDE_OAUTH_VAR} (an OAuth token, sent with the login's own headers) is not brokered: the agent holds it"
        ));
    }
    if cli == "codex" {
        if let Some(why) = codex_own_provider(&agent.env, env) {
            plan.left.push(why);
            return plan;
        }
    }
    for name in *providers {
        let Some(provider) = PROVIDERS.iter().find(|p| p.name == *name) else {
            continue;
        };
        let mut keys = Vec::new();
        for key in provider.keys {
            if agent.env.contains_key(key.name) {
                plan.left.push(format!(
                    "{}: {} is set in [agent.env], a file the agent reads: not brokered (set it in the supervisor's environment instead)",
                    provider.name, key.name
                ));
                continue;
            }
            match env(key.name).filter(|v| !v.is_empty()) {
                Some(v) if header_safe(&v) => keys.push((key, Secret(v))),
                Some(_) => plan.left.push(format!(
                    "{}: {} holds bytes no HTTP header may carry: not brokered",
                    provider.name, key.name
                )),
                None => {}
            }
        }
        if keys.is_empty() {
            let names: Vec<&str> = provider.keys.iter().map(|k| k.name).collect();
            plan.left.push(format!(
                "{}: no {} in the supervisor's environment: nothing to broker (a login of the CLI's own, OAuth in its credentials file, is left as it is)",
                provider.name,
                names.join(" or ")
            ));
            continue;
        }
        let set = provider
            .base_vars
            .iter()
            .find_map(|v| match agent.env.get(*v) {
                Some(url) => Some((format!("[agent.env] {v}"), url.clone())),
                None => env(v).map(|url| (format!("the environment's {v}"), url)),
            });
        let (upstream_source, url) = set.unwrap_or_else(|| {
            (
                "the provider's own".to_owned(),
                provider.default_base.to_owned(),
            )
        });
        let Some(upstream) = Upstream::parse(&url) else {
            plan.left.push(format!(
                "{}: {upstream_source} is not an http:// or https:// URL without credentials: not brokered",
                provider.name
            ));
            continue;
        };
        plan.routes.push(RoutePlan {
            provider,
            upstream,
            upstream_source,
            keys,
        });
    }
    plan
}

/// Why codex cannot be brokered when its `config.toml` chooses a provider of its own
/// (`model_provider`): its base URL and key variable are then that file's, which the
/// broker does not rewrite.
fn codex_own_provider(
    agent_env: &std::collections::BTreeMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let home = agent_env.get("HOME").cloned().or_else(|| env("HOME"))?;
    let text = std::fs::read_to_string(PathBuf::from(home).join(".codex/config.toml")).ok()?;
    text.lines()
        .any(|l| {
            let l = l.trim_start();
            l.starts_with("model_provider") && l["model_provider".len()..].trim_start().starts_with('=')
        })
        .then(|| {
            "codex: ~/.codex/config.toml chooses a provider of its own (model_provider), whose base URL and key are that file's: not brokered".to_owned()
        })
}

/// Whether `v` can be an HTTP header value as it is (visible ASCII and spaces).
fn header_safe(v: &str) -> bool {
    v.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// One route of a running broker.
#[derive(Debug)]
struct Route {
    provider: &'static str,
    upstream: Upstream,
    /// (header, real key, placeholder).
    keys: Vec<(KeyHeader, Secret, String)>,
    /// The loopback port it listens on.
    port: u16,
}

/// A round's broker: its routes, where refusals go, the operator's upstream proxies.
#[derive(Debug)]
pub(crate) struct KeyBroker {
    routes: Vec<Route>,
    refusals: mpsc::UnboundedSender<EgressRefusal>,
    proxies: UpstreamProxies,
    /// What the provider billed in the answers relayed so far.
    billed: std::sync::Mutex<Billed>,
}

/// A broker opened for one round: what the agent is given, and the broker's listeners
/// (stopped when this is dropped).
#[derive(Debug)]
pub(crate) struct Opened {
    /// The broker, for a front end that hands it connections (the egress proxy).
    pub broker: Arc<KeyBroker>,
    /// The variables the agent gets: each base-URL variable the broker's URL, each key
    /// variable its placeholder.
    pub env: Vec<(String, String)>,
    /// The loopback ports the agent must be able to connect to.
    pub ports: Vec<u16>,
    /// The round's refusals.
    pub refusals: mpsc::UnboundedReceiver<EgressRefusal>,
    listeners: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Opened {
    fn drop(&mut self) {
        for l in &self.listeners {
            l.abort();
        }
    }
}

/// Opens the broker of `plan` for one round: a listener on `127.0.0.1` (an ephemeral port)
/// per route, serving until the returned [`Opened`] is dropped. `proxied`: the agent is
/// behind the egress proxy, so its base URLs name [`PROXIED_HOST`]. `None` when the plan
/// has no route. Call inside the tokio runtime.
///
/// # Errors
/// A listener could not be bound, or no random placeholder could be made.
pub(crate) async fn open(
    plan: Plan,
    proxied: bool,
    proxies: UpstreamProxies,
) -> std::io::Result<Option<Opened>> {
    if plan.routes.is_empty() {
        return Ok(None);
    }
    let mut routes = Vec::new();
    let mut listeners = Vec::new();
    let mut env = Vec::new();
    for r in plan.routes {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let host = if proxied { PROXIED_HOST } else { "127.0.0.1" };
        let url = format!("http://{host}:{port}{}", r.upstream.path);
        for var in r.provider.base_vars {
            env.push(((*var).to_owned(), url.clone()));
        }
        let mut keys = Vec::new();
        for (var, secret) in r.keys {
            let placeholder = placeholder()?;
            env.push((var.name.to_owned(), placeholder.clone()));
            keys.push((var.header, secret, placeholder));
        }
        routes.push(Route {
            provider: r.provider.name,
            upstream: r.upstream,
            keys,
            port,
        });
        listeners.push(listener);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let broker = Arc::new(KeyBroker {
        routes,
        refusals: tx,
        proxies,
        billed: std::sync::Mutex::new(Billed::default()),
    });
    let ports = broker.routes.iter().map(|r| r.port).collect();
    let tasks = listeners
        .into_iter()
        .enumerate()
        .map(|(i, listener)| {
            let broker = broker.clone();
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let broker = broker.clone();
                    tokio::spawn(async move { broker.serve(i, stream, Vec::new()).await });
                }
            })
        })
        .collect();
    Ok(Some(Opened {
        broker,
        env,
        ports,
        refusals: rx,
        listeners: tasks,
    }))
}

/// A fresh placeholder: [`PLACEHOLDER_PREFIX`] and 128 random bits in hex.
fn placeholder() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: writes at most the remaining length into `bytes` from `filled` on.
        let n = unsafe {
            libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0)
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        filled += n as usize;
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{PLACEHOLDER_PREFIX}{hex}"))
}

/// Why the broker refused a request.
#[derive(Debug, PartialEq, Eq)]
enum Refused {
    /// Not a request the broker forwards (the reason, for the response).
    BadRequest(&'static str),
    /// A request for another host than the route's upstream (`CONNECT`, or an absolute
    /// URI naming it).
    WrongHost(String, u16),
    /// No header or `key` parameter held the route's placeholder.
    NoPlaceholder,
}

impl KeyBroker {
    /// What the provider billed in the answers relayed since the last call (the round's,
    /// called once it ended), read from the answers themselves ([`crate::budget::billed`]).
    pub(crate) fn take_billed(&self) -> Billed {
        let mut billed = self.billed.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *billed)
    }

    /// What the provider billed in the answers relayed so far, left in place (the round's
    /// running spend, for the stop within the round: `crate::runtime::agent::usage_watch`).
    pub(crate) fn billed_now(&self) -> Billed {
        self.billed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The route a connection to `host:port` through the egress proxy is for: the broker's
    /// own name (or the loopback it listens on) and one of its ports.
    pub(crate) fn route_at(&self, host: &str, port: u16) -> Option<usize> {
        let ours = matches!(host, PROXIED_HOST | "127.0.0.1" | "localhost");
        self.routes
            .iter()
            .position(|r| r.port == port)
            .filter(|_| ours)
    }

    /// Serves one connection of the agent to route `route`: `stream` is connected, and
    /// `already` is what was read from it already (a front end's parsed head). Ends when
    /// either side closes; a refusal is answered, recorded, and ends it.
    pub(crate) async fn serve<S>(&self, route: usize, mut client: S, already: Vec<u8>)
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let Some(r) = self.routes.get(route) else {
            return;
        };
        let (head, rest) =
            match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client, already)).await {
                Ok(Ok(Some(parts))) => parts,
                Ok(Ok(None)) => {
                    return self
                        .refuse(
                            r,
                            &mut client,
                            Refused::BadRequest("request head too large or cut short"),
                        )
                        .await
                }
                // Closed before its first byte (a client's spare connection), or broken:
                // no request, nothing to refuse.
                Ok(Err(_)) => return,
                Err(_) => {
                    return self
                        .refuse(
                            r,
                            &mut client,
                            Refused::BadRequest("no request head in time"),
                        )
                        .await
                }
            };
        let head = match rewrite(&head, r) {
            Ok(h) => h,
            Err(why) => return self.refuse(r, &mut client, why).await,
        };
        let result = self.forward(r, &mut client, &head, &rest).await;
        if let Err(e) = result {
            // Never the key: the error is the connection's.
            tracing::debug!(provider = r.provider, error = %e, "key broker connection ended");
        }
    }

    /// Connects to `r`'s upstream (TLS when it is `https://`) and relays.
    async fn forward<S>(
        &self,
        r: &Route,
        client: &mut S,
        head: &[u8],
        rest: &[u8],
    ) -> std::io::Result<()>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let up = &r.upstream;
        let connected = tokio::time::timeout(CONNECT_TIMEOUT, async {
            let local = is_loopback(&up.host);
            match self.proxies.for_target(&up.host, true).filter(|_| !local) {
                None => TcpStream::connect((up.host.as_str(), up.port)).await,
                Some(Err(why)) => Err(std::io::Error::other(why.clone())),
                Some(Ok(proxy)) => proxy.tunnel(&up.host, up.port, CONNECT_TIMEOUT).await,
            }
        })
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()));
        let tcp = match connected {
            Ok(s) => s,
            Err(e) => {
                let why = format!("cannot reach {}: {e}", up.url());
                respond(client, 502, &why).await?;
                return Err(e);
            }
        };
        if up.tls {
            let name = rustls::pki_types::ServerName::try_from(up.host.clone())
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
            let tls = tokio::time::timeout(CONNECT_TIMEOUT, tls_connector().connect(name, tcp))
                .await
                .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()));
            let mut tls = match tls {
                Ok(s) => s,
                Err(e) => {
                    let why = format!("TLS to {} failed: {e}", up.url());
                    respond(client, 502, &why).await?;
                    return Err(e);
                }
            };
            self.relay(r, client, &mut tls, (head, rest)).await
        } else {
            let mut tcp = tcp;
            self.relay(r, client, &mut tcp, (head, rest)).await
        }
    }

    /// Answers a refusal and records it.
    async fn refuse<S>(&self, r: &Route, client: &mut S, why: Refused)
    where
        S: AsyncWrite + Unpin,
    {
        let (status, refusal) = match &why {
            Refused::BadRequest(_) => (
                400,
                EgressRefusal::key_broker(&r.upstream.host, r.upstream.port, Why::BrokerBadRequest),
            ),
            Refused::WrongHost(host, port) => (
                403,
                EgressRefusal::key_broker(host, *port, Why::BrokerWrongHost),
            ),
            Refused::NoPlaceholder => (
                401,
                EgressRefusal::key_broker(
                    &r.upstream.host,
                    r.upstream.port,
                    Why::BrokerNoPlaceholder,
                ),
            ),
        };
        let mut sentence = refusal.sentence();
        if let Refused::BadRequest(detail) = why {
            sentence = format!("{sentence} ({detail})");
        }
        let _ = self.refusals.send(refusal);
        let _ = respond(client, status, &sentence).await;
    }
}

impl KeyBroker {
    /// Sends `head` and `rest` upstream, then copies both ways until both sides are done;
    /// each piece of the answer is written to the agent first, then read for its usage
    /// (added to the round's tally when the answer ends, however it ends).
    async fn relay<C, U>(
        &self,
        r: &Route,
        client: &mut C,
        upstream: &mut U,
        (head, rest): (&[u8], &[u8]),
    ) -> std::io::Result<()>
    where
        C: AsyncRead + AsyncWrite + Unpin,
        U: AsyncRead + AsyncWrite + Unpin,
    {
        upstream.write_all(head).await?;
        if !rest.is_empty() {
            upstream.write_all(rest).await?;
        }
        upstream.flush().await?;
        let (mut client_in, mut client_out) = tokio::io::split(client);
        let (mut upstream_in, mut upstream_out) = tokio::io::split(upstream);
        let mut reader = Dialect::of(r.provider).map(AnswerReader::new);
        let request = async {
            tokio::io::copy(&mut client_in, &mut upstream_out).await?;
            upstream_out.shutdown().await
        };
        let answer = async {
            let mut buf = vec![0u8; 16 * 1024];
            let copied: std::io::Result<()> = async {
                loop {
                    let n = upstream_in.read(&mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    client_out.write_all(&buf[..n]).await?;
                    client_out.flush().await?;
                    if let Some(reader) = reader.as_mut() {
                        reader.feed(&buf[..n]);
                    }
                }
                client_out.shutdown().await
            }
            .await;
            if let Some(reader) = reader.take() {
                let mut billed = self.billed.lock().unwrap_or_else(|e| e.into_inner());
                reader.finish(&mut billed);
            }
            copied
        };
        // Both directions to their end, so the answer's usage is added however the request
        // side ends.
        let (sent, answered) = tokio::join!(request, answer);
        sent.and(answered)
    }
}

/// Whether `host` is a loopback address or `localhost` (reached directly, never through
/// the operator's proxy).
fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The TLS client: rustls with ring and Mozilla's roots (webpki-roots), made once.
fn tls_connector() -> tokio_rustls::TlsConnector {
    static CONFIG: std::sync::OnceLock<Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        Arc::new(config)
    });
    tokio_rustls::TlsConnector::from(config.clone())
}

/// Reads until the blank line that ends a request head, starting with `already`.
/// `Some((head, bytes after it))`; `None` if the client closed within the head or the head
/// exceeds [`HEAD_MAX`]; `UnexpectedEof` if it closed before sending a byte.
async fn read_head<S>(
    client: &mut S,
    already: Vec<u8>,
) -> std::io::Result<Option<(Vec<u8>, Vec<u8>)>>
where
    S: AsyncRead + Unpin,
{
    let mut buf = already;
    let mut chunk = [0u8; 4096];
    let mut from = 0;
    loop {
        if let Some(at) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            let end = from + at + 4;
            if end > HEAD_MAX {
                return Ok(None);
            }
            let rest = buf.split_off(end);
            return Ok(Some((buf, rest)));
        }
        if buf.len() > HEAD_MAX {
            return Ok(None);
        }
        from = buf.len().saturating_sub(3);
        let n = client.read(&mut chunk).await?;
        if n == 0 && buf.is_empty() {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The head to send upstream for `head` on route `r`: origin form, `Host` the upstream's,
/// every key header and `key` parameter removed and the real key added for the
/// placeholder found, `Connection: close`.
fn rewrite(head: &[u8], r: &Route) -> Result<Vec<u8>, Refused> {
    let text = std::str::from_utf8(head)
        .map_err(|_| Refused::BadRequest("the request head is not UTF-8"))?;
    let mut lines = text.strip_suffix("\r\n\r\n").unwrap_or(text).split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut words = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(Refused::BadRequest("malformed request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(Refused::BadRequest("only HTTP/1.x is brokered"));
    }
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(Refused::BadRequest("malformed method"));
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = target.rsplit_once(':').unwrap_or((target, "0"));
        return Err(Refused::WrongHost(
            host.trim_matches(['[', ']']).to_ascii_lowercase(),
            port.parse().unwrap_or(0),
        ));
    }
    // Only the methods an API client sends: `TRACE` (and `TRACK`) make an upstream that
    // answers them echo the request it received, the real key with it, back to the agent
    // (`tests/tests/suite/confinement/hostile_broker.rs`); an unknown method may be either.
    if !BROKERED_METHODS.contains(&method) {
        return Err(Refused::BadRequest(
            "only GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS are brokered",
        ));
    }
    let path = origin_form(target, r)?;
    let placeholders: Vec<&str> = r.keys.iter().map(|(_, _, p)| p.as_str()).collect();
    let mut found = vec![false; r.keys.len()];
    let mut mark = |value: &str| {
        if let Some(i) = placeholders.iter().position(|p| *p == value) {
            found[i] = true;
        }
    };
    // The `key` query parameter (Gemini's): removed, its placeholder noted.
    let path = match path.split_once('?') {
        Some((p, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|pair| {
                    let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                    if name == "key" {
                        mark(value);
                        false
                    } else {
                        true
                    }
                })
                .collect();
            if kept.is_empty() {
                p.to_owned()
            } else {
                format!("{p}?{}", kept.join("&"))
            }
        }
        None => path,
    };
    let mut out = format!(
        "{method} {path} {version}\r\nHost: {}\r\n",
        r.upstream.authority()
    );
    for line in lines {
        if line.starts_with([' ', '\t']) {
            return Err(Refused::BadRequest("folded header lines are not brokered"));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(Refused::BadRequest("malformed header line"));
        };
        if name.is_empty() || name.bytes().any(|b| b <= b' ' || b >= 0x7f) {
            return Err(Refused::BadRequest("malformed header name"));
        }
        let lower = name.to_ascii_lowercase();
        if KEY_HEADERS.contains(&lower.as_str()) {
            let value = value.trim();
            let bare = match value.split_once(' ') {
                Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
                _ => value,
            };
            mark(bare);
            continue;
        }
        if DROPPED_HEADERS.contains(&lower.as_str()) {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    if !found.iter().any(|f| *f) {
        return Err(Refused::NoPlaceholder);
    }
    for ((header, secret, _), found) in r.keys.iter().zip(&found) {
        if *found {
            out.push_str(&header.line(&secret.0));
            out.push_str("\r\n");
        }
    }
    out.push_str("Accept-Encoding: identity\r\nConnection: close\r\n\r\n");
    Ok(out.into_bytes())
}

/// The request target in origin form: as it is when it starts with `/`; an absolute URI
/// only when it names the broker itself (its path then); any other host refused.
fn origin_form(target: &str, r: &Route) -> Result<String, Refused> {
    if target.starts_with('/') {
        return Ok(target.to_owned());
    }
    let lower = target.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(Refused::BadRequest("the request target is not a path"));
    }
    let (default, rest) = match lower.strip_prefix("https://") {
        Some(rest) => (443, rest),
        None => (80, &lower["http://".len()..]),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let (host, port) = authority_host_port(authority, default)
        .filter(|_| !authority.contains('@'))
        .ok_or(Refused::BadRequest("bad host in the request target"))?;
    let ours = matches!(host.as_str(), PROXIED_HOST | "127.0.0.1" | "localhost") && port == r.port;
    if !ours {
        return Err(Refused::WrongHost(host, port));
    }
    let rest = &target[target.find("://").map_or(0, |i| i + 3)..];
    Ok(match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('?') => format!("/{}", &rest[i..]),
        Some(i) => rest[i..].to_owned(),
        None => "/".to_owned(),
    })
}

/// `(host, port)` of an authority (`host`, `host:port`, `[v6]:port`), the host in lower
/// case, `default` the port when none is written; `None` for an empty host or a bad port.
fn authority_host_port(authority: &str, default: u16) -> Option<(String, u16)> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6.split_once(']')?;
        (h, tail.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0)?,
        None => default,
    };
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// Writes a short response whose body says why, and ends the exchange.
async fn respond<S>(client: &mut S, status: u16, why: &str) -> std::io::Result<()>
where
    S: AsyncWrite + Unpin,
{
    crate::runtime::egress::http::respond_as(client, "key broker", status, why).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(header: KeyHeader) -> Route {
        Route {
            provider: "anthropic",
            upstream: Upstream::parse("https://api.example.org/v1").unwrap(),
            keys: vec![(header, Secret("REAL-KEY".into()), "ph-1".into())],
            port: 4100,
        }
    }

    fn text(b: Vec<u8>) -> String {
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn the_placeholder_becomes_the_key_and_nothing_else_does() {
        let r = route(KeyHeader::XApiKey);
        let head = b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:4100\r\nx-api-key: ph-1\r\nAuthorization: Bearer sk-other\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n";
        assert_eq!(
            text(rewrite(head, &r).unwrap()),
            "POST /v1/messages HTTP/1.1\r\nHost: api.example.org\r\nContent-Length: 2\r\nx-api-key: REAL-KEY\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n"
        );
        // No placeholder: refused, whatever key was sent.
        let head = b"POST /v1/messages HTTP/1.1\r\nx-api-key: sk-guess\r\n\r\n";
        assert_eq!(rewrite(head, &r), Err(Refused::NoPlaceholder));
        let head = b"GET /v1/models HTTP/1.1\r\n\r\n";
        assert_eq!(rewrite(head, &r), Err(Refused::NoPlaceholder));
    }

    #[test]
    fn bearer_and_query_placeholders_are_taken() {
        let r = route(KeyHeader::Bearer);
        let head = b"POST /v1/chat HTTP/1.1\r\nauthorization: bearer ph-1\r\n\r\n";
        assert!(text(rewrite(head, &r).unwrap()).contains("\r\nAuthorization: Bearer REAL-KEY\r\n"));
        let r = route(KeyHeader::XGoogApiKey);
        let head = b"POST /v1beta/models/m:generateContent?alt=sse&key=ph-1 HTTP/1.1\r\n\r\n";
        let out = text(rewrite(head, &r).unwrap());
        assert!(
            out.starts_with("POST /v1beta/models/m:generateContent?alt=sse HTTP/1.1\r\n"),
            "{out}"
        );
        assert!(out.contains("\r\nx-goog-api-key: REAL-KEY\r\n"), "{out}");
        assert!(!out.contains("ph-1"), "{out}");
    }

    #[test]
    fn methods_that_echo_the_request_are_refused() {
        let r = route(KeyHeader::XApiKey);
        for method in ["TRACE", "TRACK", "trace", "PROPFIND"] {
            let head = format!("{method} /v1/messages HTTP/1.1\r\nx-api-key: ph-1\r\n\r\n");
            assert!(
                matches!(rewrite(head.as_bytes(), &r), Err(Refused::BadRequest(_))),
                "{method}"
            );
        }
        let head = b"OPTIONS /v1/messages HTTP/1.1\r\nx-api-key: ph-1\r\n\r\n";
        assert!(rewrite(head, &r).is_ok());
    }

    #[test]
    fn other_hosts_and_bad_heads_are_refused() {
        let r = route(KeyHeader::XApiKey);
        assert_eq!(
            rewrite(
                b"CONNECT evil.example:443 HTTP/1.1\r\nx-api-key: ph-1\r\n\r\n",
                &r
            ),
            Err(Refused::WrongHost("evil.example".into(), 443))
        );
        assert_eq!(
            rewrite(
                b"GET http://evil.example/x HTTP/1.1\r\nx-api-key: ph-1\r\n\r\n",
                &r
            ),
            Err(Refused::WrongHost("evil.example".into(), 80))
        );
        // The broker's own address in absolute form is its own path.
        let out = text(
            rewrite(
                b"GET http://127.0.0.1:4100/v1/models?x=1 HTTP/1.1\r\nx-api-key: ph-1\r\n\r\n",
                &r,
            )
            .unwrap(),
        );
        assert!(out.starts_with("GET /v1/models?x=1 HTTP/1.1\r\n"), "{out}");
        for bad in [
            &b"GET /x HTTP/2\r\n\r\n"[..],
            b"GET  /x HTTP/1.1\r\n\r\n",
            b"GET /x HTTP/1.1\r\nno colon\r\n\r\n",
            b"GET /x HTTP/1.1\r\nx-api-key: ph-1\r\n folded\r\n\r\n",
            b"GET x HTTP/1.1\r\n\r\n",
            b"\xff / HTTP/1.1\r\n\r\n",
        ] {
            assert!(
                matches!(rewrite(bad, &r), Err(Refused::BadRequest(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn upstreams_parse_with_their_path() {
        let u = Upstream::parse("http://127.0.0.1:4010/v1/").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.path.as_str()),
            (false, "127.0.0.1", 4010, "/v1")
        );
        assert_eq!(u.authority(), "127.0.0.1:4010");
        let u = Upstream::parse("https://api.anthropic.com").unwrap();
        assert_eq!(
            (u.tls, u.port, u.path.as_str(), u.authority()),
            (true, 443, "", "api.anthropic.com".to_owned())
        );
        assert!(Upstream::parse("https://u:p@h/").is_none());
        assert!(Upstream::parse("ftp://h/").is_none());
        assert!(Upstream::parse("https://h/?a=b").is_none());
    }

    /// A config of `cli` under `sandbox` (the `[agent.sandbox]` lines) with `agent_env`
    /// (the `[agent.env]` lines), and `home` as the agent's HOME.
    fn config(cli: &str, sandbox: &str, agent_env: &str, home: &std::path::Path) -> Config {
        let text = format!(
            "schema_version = 1\n[agent]\ncommand = [\"agent\"]\ncli = \"{cli}\"\n\
             [agent.env]\nHOME = \"{}\"\n{agent_env}\n[agent.sandbox]\n{sandbox}\n",
            home.display()
        );
        crate::config::parse_str(&home.join("agent-runner.toml"), &text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn which_keys_are_brokered_and_why_not() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("prompts")).unwrap();
        std::fs::write(home.path().join("prompts/main.md"), "work\n").unwrap();
        let env = |name: &str| match name {
            "ANTHROPIC_API_KEY" => Some("sk-ant-1".to_owned()),
            "OPENAI_API_KEY" => Some("sk-2".to_owned()),
            "OPENAI_API_BASE" => Some("http://127.0.0.1:4010/v1".to_owned()),
            _ => None,
        };
        let plan_of = |cli: &str, sandbox: &str, agent_env: &str| {
            let c = config(cli, sandbox, agent_env, home.path());
            plan_with(&c, &c.agent, &env)
        };
        let routes = |p: &Plan| -> Vec<(&str, String)> {
            p.routes
                .iter()
                .map(|r| (r.provider.name, r.upstream.url()))
                .collect()
        };
        let p = plan_of("claude", "mode = \"prefer\"", "");
        assert_eq!(
            routes(&p),
            [("anthropic", "https://api.anthropic.com".to_owned())]
        );
        assert_eq!(p.routes[0].keys[0].0.name, "ANTHROPIC_API_KEY");
        assert_eq!(p.routes[0].keys.len(), 1, "no ANTHROPIC_AUTH_TOKEN set");
        // aider: both of its providers, the OpenAI one at the operator's base URL.
        let p = plan_of("aider", "mode = \"require\"", "");
        assert_eq!(
            routes(&p),
            [
                ("openai", "http://127.0.0.1:4010/v1".to_owned()),
                ("anthropic", "https://api.anthropic.com".to_owned())
            ]
        );
        // gemini without GEMINI_API_KEY: an OAuth login, left alone.
        let p = plan_of("gemini", "mode = \"prefer\"", "");
        assert!(p.routes.is_empty());
        assert!(p.left[0].contains("OAuth"), "{:?}", p.left);
        // Not brokered: a key in [agent.env], the sandbox off, the broker off, kimi.
        let p = plan_of("claude", "mode = \"prefer\"", "ANTHROPIC_API_KEY = \"k\"");
        assert!(p.routes.is_empty());
        assert!(p.left[0].contains("[agent.env]"), "{:?}", p.left);
        for (cli, sandbox, says) in [
            ("claude", "mode = \"off\"", "mode = \"off\""),
            (
                "claude",
                "mode = \"prefer\"\nbroker = \"off\"",
                "broker = \"off\"",
            ),
            ("kimi", "mode = \"prefer\"", "config.toml"),
            ("pi", "mode = \"prefer\"", "models.json"),
        ] {
            let p = plan_of(cli, sandbox, "");
            assert!(p.routes.is_empty(), "{cli} {sandbox}");
            assert!(p.left[0].contains(says), "{:?}", p.left);
        }
        // codex: brokered with its built-in provider, not with one of its own.
        assert_eq!(plan_of("codex", "mode = \"prefer\"", "").routes.len(), 1);
        std::fs::create_dir_all(home.path().join(".codex")).unwrap();
        std::fs::write(
            home.path().join(".codex/config.toml"),
            "model_provider = \"fake\"\n[model_providers.fake]\nbase_url = \"http://x/v1\"\n",
        )
        .unwrap();
        let p = plan_of("codex", "mode = \"prefer\"", "");
        assert!(p.routes.is_empty());
        assert!(p.left[0].contains("model_provider"), "{:?}", p.left);
    }

    /// Through a broker opened on a plain-HTTP upstream: the upstream gets the real key
    /// and not the placeholder, and a streamed answer reaches the client event by event
    /// (the upstream sends its second event only once the client has seen the first: a
    /// broker that buffered the answer would hang here).
    #[tokio::test]
    async fn a_streamed_answer_passes_event_by_event_with_the_key_added() {
        let upstream = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let up = format!("http://127.0.0.1:{}", upstream.local_addr().unwrap().port());
        let anthropic = &PROVIDERS[0];
        let plan = Plan {
            routes: vec![RoutePlan {
                provider: anthropic,
                upstream: Upstream::parse(&up).unwrap(),
                upstream_source: "test".into(),
                keys: vec![(&anthropic.keys[0], Secret("REAL-KEY".into()))],
            }],
            left: Vec::new(),
        };
        let mut opened = open(plan, false, UpstreamProxies::from_vars(|_| None))
            .await
            .unwrap()
            .unwrap();
        let var = |name: &str| {
            opened
                .env
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        let (placeholder, base) = (var("ANTHROPIC_API_KEY"), var("ANTHROPIC_BASE_URL"));
        assert_eq!(base, format!("http://127.0.0.1:{}", opened.ports[0]));
        const TWO: &[u8] =
            b"data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":30}}\n\n";
        let (seen_tx, seen_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let (mut s, _) = upstream.accept().await.unwrap();
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).await.unwrap();
                head.extend_from_slice(&buf[..n]);
            }
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: one\n\n")
                .await
                .unwrap();
            seen_rx.await.unwrap();
            s.write_all(TWO).await.unwrap();
            String::from_utf8(head).unwrap()
        });
        let client = async {
            let mut c = TcpStream::connect(("127.0.0.1", opened.ports[0]))
                .await
                .unwrap();
            let req = format!(
                "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {placeholder}\r\n\r\n"
            );
            c.write_all(req.as_bytes()).await.unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            let mut seen_tx = Some(seen_tx);
            loop {
                let n = c.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                if got.windows(9).any(|w| w == b"data: one") {
                    if let Some(tx) = seen_tx.take() {
                        tx.send(()).unwrap();
                    }
                }
            }
            String::from_utf8(got).unwrap()
        };
        let got = tokio::time::timeout(Duration::from_secs(20), client)
            .await
            .expect("the first event arrived before the answer ended");
        assert!(
            got.ends_with(&format!(
                "data: one\n\n{}",
                std::str::from_utf8(TWO).unwrap()
            )),
            "{got}"
        );
        // The usage in the answer was read as it passed.
        let billed = opened.broker.take_billed();
        assert_eq!((billed.answers, billed.unread), (1, 0), "{billed:?}");
        assert_eq!(billed.by_model[0].1.output, 30);
        assert_eq!(opened.broker.take_billed(), Billed::default(), "taken");
        let head = server.await.unwrap();
        assert!(head.contains("\r\nx-api-key: REAL-KEY\r\n"), "{head}");
        assert!(!head.contains(&placeholder), "{head}");
        assert!(opened.refusals.try_recv().is_err());
        // A guessed key is refused and recorded.
        let mut c = TcpStream::connect(("127.0.0.1", opened.ports[0]))
            .await
            .unwrap();
        c.write_all(b"GET /v1/models HTTP/1.1\r\nx-api-key: sk-guess\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        c.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 401 "), "{answer}");
        let refusal = opened.refusals.try_recv().unwrap();
        assert_eq!(refusal.why, Why::BrokerNoPlaceholder);
    }

    /// An `https://` upstream is spoken to in TLS: what reaches it first is a TLS
    /// ClientHello, never the request head with the key; an upstream that cannot complete
    /// the handshake (here: not TLS at all) gets nothing more and the agent a `502`.
    #[tokio::test]
    async fn an_https_upstream_gets_tls_and_fails_closed() {
        let upstream = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let up = format!(
            "https://127.0.0.1:{}",
            upstream.local_addr().unwrap().port()
        );
        let anthropic = &PROVIDERS[0];
        let plan = Plan {
            routes: vec![RoutePlan {
                provider: anthropic,
                upstream: Upstream::parse(&up).unwrap(),
                upstream_source: "test".into(),
                keys: vec![(&anthropic.keys[0], Secret("REAL-KEY".into()))],
            }],
            left: Vec::new(),
        };
        let opened = open(plan, false, UpstreamProxies::from_vars(|_| None))
            .await
            .unwrap()
            .unwrap();
        let placeholder = opened.env[opened.env.len() - 1].1.clone();
        let server = tokio::spawn(async move {
            let (mut s, _) = upstream.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap();
            buf.truncate(n);
            // Not TLS: an HTTP answer, which no handshake takes.
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await;
            buf
        });
        let mut c = TcpStream::connect(("127.0.0.1", opened.ports[0]))
            .await
            .unwrap();
        let req = format!("POST /v1/messages HTTP/1.1\r\nx-api-key: {placeholder}\r\n\r\n");
        c.write_all(req.as_bytes()).await.unwrap();
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(20), c.read_to_string(&mut answer))
            .await
            .unwrap()
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 502 "), "{answer}");
        let first = server.await.unwrap();
        assert_eq!(first.first(), Some(&0x16), "a TLS handshake record");
        assert!(!first.windows(8).any(|w| w == b"REAL-KEY"));
    }

    #[test]
    fn placeholders_are_fresh_and_never_the_key() {
        let (a, b) = (placeholder().unwrap(), placeholder().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), PLACEHOLDER_PREFIX.len() + 32);
        assert_eq!(
            format!("{:?}", Secret("sk-secret".into())),
            "Secret(9 bytes)"
        );
    }
}
