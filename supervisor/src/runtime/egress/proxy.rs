//! The agent's egress filter: an HTTP proxy in the supervisor that lets the agent reach only
//! the host names of `[agent.sandbox] allow_hosts` (docs/security.md, "Egress by host
//! name"), or, without that key, any host name on 443 and `connect_ports` but never this
//! machine or its network ([`Policy::Open`]; docs/security.md, "The agent's network").
//!
//! The agent runs in a network namespace with only loopback; the forwarder there hands each
//! connection it accepts on `127.0.0.1:3128` to the supervisor
//! ([`agent_runner_plugin_host::agent::egress_bridge`], [`crate::runtime::egress::routes`]).
//! [`handler`] serves each as a task that
//!
//! 1. reads the request head (at most [`HEAD_MAX`] bytes, within [`HEAD_TIMEOUT`]);
//! 2. takes the target: `CONNECT host:port` (a tunnel, for HTTPS), or an absolute URI
//!    `http://host[:port]/path` (plain HTTP); anything else is answered `400`;
//! 3. checks the name the agent asked for against the list (before resolving it), or under
//!    [`Policy::Open`] its port against 443 and `connect_ports`. Refused:
//!    `403 Forbidden` whose body is the refusal's sentence (what, and the line that opens
//!    it), and an [`EgressRefusal`] for the round's record;
//! 4. finds the addresses: an address the agent asked for is exactly that address;
//!    `localhost` is `127.0.0.1` and `::1`; a name is resolved, and refused as in 3 when
//!    **any** of its addresses is closed to names ([`crate::runtime::egress::address`]:
//!    loopback in any form, this machine's, link-local, multicast, unspecified, cloud
//!    metadata, or private unless the entry says `private`), the refusal naming the address;
//!    under [`Policy::Open`] an address the agent asked for is judged the same way, but for
//!    `127.0.0.1`, `::1` and `localhost` on a port of `connect_ports` ([`judge`]);
//!    unresolvable: `502`;
//! 5. connects (within [`CONNECT_TIMEOUT`]) — directly, or through the operator's upstream
//!    proxy ([`crate::runtime::egress::upstream_proxy`]; a name the local resolver cannot resolve is
//!    left to it, one it can is judged first); unreachable: `502`;
//! 6. `CONNECT`: answers `200` and copies bytes both ways until either side closes. Plain
//!    HTTP: sends the head with the request line in origin form (absolute form to an
//!    upstream proxy), the hop-by-hop and `Proxy-*` headers dropped and `Connection: close`,
//!    then copies both ways. The connection serves that one request to that one host: a
//!    client cannot switch hosts mid-connection.
//!
//! The proxy never reads or keeps what passes through a tunnel; it writes nothing to disk.
//!
//! A request for the round's key broker ([`crate::runtime::egress::key_broker::PROXIED_HOST`] and
//! one of its ports) is not forwarded: after step 2 the connection is handed to the broker
//! (a `CONNECT` answered `200` first), which adds the provider key on its way out.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use agent_runner_plugin_host::agent::egress_bridge::{self, EgressBridge};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::config::allow_hosts::{normalize, AllowHosts};
use crate::runtime::egress::address as egress_address;
use crate::runtime::egress::key_broker::KeyBroker;
use crate::runtime::egress::refusals::{EgressRefusal, Why};
use crate::runtime::egress::routes::{self as egress_routes, Handler, Routes};
use crate::runtime::egress::upstream_proxy::UpstreamProxies;

/// The largest request head the proxy reads (request line and headers).
pub(crate) const HEAD_MAX: usize = 16 * 1024;
/// How long a client has to send its request head.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
pub(crate) use crate::runtime::egress::http::CONNECT_TIMEOUT;

/// What the proxy lets through.
#[derive(Clone, Debug)]
pub(crate) enum Policy {
    /// `[agent.sandbox] allow_hosts`: the listed names and addresses only.
    Listed(AllowHosts),
    /// Without `allow_hosts`, the agent in its own network namespace (docs/security.md,
    /// "The agent's network"): any name on 443 or a port of `connect_ports`, judged by the
    /// address rule ([`crate::runtime::egress::address::closed`], private ranges closed);
    /// an address only when a name could lead there too (a public one); `localhost`,
    /// `127.0.0.1` and `::1` on a port of `connect_ports` (the operator's local endpoint,
    /// as the forwarded port reaches it).
    Open {
        /// `[agent.sandbox] connect_ports` (443 is always open).
        connect_ports: Vec<u16>,
    },
}

impl Policy {
    /// The open policy of `[agent.sandbox]`.
    pub(crate) fn open(sandbox: &crate::config::AgentSandboxConfig) -> Policy {
        Policy::Open {
            connect_ports: sandbox.connect_ports.clone(),
        }
    }
}

/// The egress proxy as the handler of [`egress_routes::PROXY_PORT`]: each connection served
/// under `policy`, through `upstream` where it says, a request for the round's key broker
/// handed to `broker`; refusals go to `refusals`.
pub(crate) fn handler(
    policy: Arc<Policy>,
    upstream: Arc<UpstreamProxies>,
    broker: Option<Arc<KeyBroker>>,
    refusals: mpsc::UnboundedSender<EgressRefusal>,
) -> Handler {
    Arc::new(move |client, _at| {
        let (policy, upstream, broker, refusals) = (
            policy.clone(),
            upstream.clone(),
            broker.clone(),
            refusals.clone(),
        );
        Box::pin(async move {
            serve_connection(client, &policy, &upstream, broker.as_deref(), &refusals).await
        }) as egress_routes::Served
    })
}

/// Prepares the egress of one agent launch: the bridge the agent enters before its exec,
/// the proxy serving it under `policy` (through `upstream` where it says), each port of
/// `connect_ports` forwarded to this machine's loopback under [`Policy::Open`], and the
/// receiver of the round's refusals. `broker`: the round's key broker and its loopback
/// ports, forwarded to this machine's loopback too (where the broker listens), and the
/// broker handed the requests the proxy gets for it by name. Call inside the tokio runtime.
///
/// # Errors
/// The bridge's socket pair or the serving thread could not be made; too many ports to
/// forward.
pub(crate) fn open(
    policy: Policy,
    upstream: UpstreamProxies,
    broker: Option<(Arc<KeyBroker>, Vec<u16>)>,
) -> std::io::Result<(EgressBridge, mpsc::UnboundedReceiver<EgressRefusal>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut routes = Routes::default();
    if let Policy::Open { connect_ports } = &policy {
        for port in connect_ports {
            routes.route(*port, egress_routes::to_machine_loopback());
        }
    }
    let broker = broker.map(|(broker, ports)| {
        for port in ports {
            routes.route(port, egress_routes::to_machine_loopback());
        }
        broker
    });
    routes.route(
        egress_routes::PROXY_PORT,
        handler(Arc::new(policy), Arc::new(upstream), broker, tx),
    );
    Ok((egress_routes::open(routes)?, rx))
}

/// The loopback addresses the agent reaches directly (its own namespace's servers), never
/// through the proxy — unless `allow_hosts` names a local endpoint of the machine
/// ([`agent_env`]).
pub(crate) const NO_PROXY: &str = "localhost,127.0.0.1,::1";

/// The variables that send the agent's HTTP clients to the proxy: the `*_PROXY` pairs curl,
/// Python, Go and Rust clients read, `NO_PROXY` for the agent's own loopback, and
/// `NODE_USE_ENV_PROXY=1`, without which Node's built-in `fetch` and `http` ignore them
/// (docs/security.md, "Egress by host name"). When `policy` lists a loopback address or
/// `localhost` (a local model endpoint on the machine), `NO_PROXY` is left empty: the
/// agent's requests to its loopback go to the proxy, which reaches the machine's endpoint
/// (the agent's own loopback servers are then reached through the proxy too, and refused
/// unless listed). Under [`Policy::Open`] the loopback stays direct: the forwarded ports of
/// `connect_ports` reach the machine's endpoint from there.
pub(crate) fn agent_env(policy: &Policy) -> Vec<(String, String)> {
    let url = egress_bridge::proxy_url();
    let mut env: Vec<(String, String)> = [
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "ALL_PROXY",
        "https_proxy",
        "http_proxy",
        "all_proxy",
    ]
    .iter()
    .map(|k| (k.to_string(), url.clone()))
    .collect();
    let no_proxy = match policy {
        Policy::Listed(allow) if allow.names_this_machine() => "",
        _ => NO_PROXY,
    };
    env.push(("NO_PROXY".into(), no_proxy.into()));
    env.push(("no_proxy".into(), no_proxy.into()));
    env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
    env
}

/// What the client asked for.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    host: String,
    port: u16,
    /// `None` for `CONNECT`; for plain HTTP the head to send upstream.
    forward_head: Option<Vec<u8>>,
    /// For plain HTTP, the same head in absolute form, for an upstream proxy: the request
    /// line, and the headers after it (ending in the blank line).
    proxy_head: Option<(String, String)>,
}

async fn serve_connection(
    mut client: TcpStream,
    policy: &Policy,
    upstream: &UpstreamProxies,
    broker: Option<&KeyBroker>,
    refusals: &mpsc::UnboundedSender<EgressRefusal>,
) -> std::io::Result<()> {
    let (head, rest) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(Ok(Some(parts))) => parts,
        Ok(Ok(None)) => {
            return respond(&mut client, 400, "request head too large or cut short").await
        }
        Ok(Err(e)) => return Err(e),
        Err(_) => return respond(&mut client, 408, "no request head in time").await,
    };
    let target = match parse_head(&head) {
        Ok(t) => t,
        Err(why) => return respond(&mut client, 400, why).await,
    };
    let tunnel = target.forward_head.is_none();
    if let Some((broker, route)) =
        broker.and_then(|b| b.route_at(&target.host, target.port).map(|r| (b, r)))
    {
        let already = match target.forward_head {
            None => {
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await?;
                rest
            }
            Some(mut head) => {
                head.extend_from_slice(&rest);
                head
            }
        };
        broker.serve(route, client, already).await;
        return Ok(());
    }
    let access = if tunnel { "connect" } else { "http" };
    let refuse = |resolved: Option<IpAddr>, why: Why| {
        let r = EgressRefusal::proxy(&target.host, target.port, access, resolved, why);
        let sentence = r.sentence();
        let _ = refusals.send(r);
        sentence
    };
    let private = match policy {
        Policy::Listed(allow) => match allow.find(&target.host, target.port) {
            Some(entry) => entry.private(),
            None => {
                let why = refuse(None, Why::NotListed);
                return respond(&mut client, 403, &why).await;
            }
        },
        Policy::Open { connect_ports } => {
            if target.port != 443 && !connect_ports.contains(&target.port) {
                let why = refuse(None, Why::PortNotAllowed);
                return respond(&mut client, 403, &why).await;
            }
            false
        }
    };
    let via = upstream.for_target(&target.host, tunnel);
    let addrs = match addresses(&target.host, target.port).await {
        Ok(addrs) => addrs,
        // Left to the upstream proxy, whose resolver may know names this one does not.
        Err(_) if via.is_some() => Vec::new(),
        Err(why) => return respond(&mut client, 502, why).await,
    };
    let named = target.host != "localhost" && target.host.parse::<IpAddr>().is_err();
    if let Some((ip, why)) = judge(policy, named, target.port, &addrs, private) {
        let why = refuse(Some(ip), why);
        return respond(&mut client, 403, &why).await;
    }
    // A local endpoint the operator listed (`localhost`, a loopback address) is reached
    // directly, never through the operator's proxy (which cannot reach this machine's
    // loopback); anything else goes where the proxy variables say.
    let local = !named
        && addrs.iter().all(|a| {
            egress_address::closed(a.ip(), &[], false) == Some(egress_address::Closed::Loopback)
        });
    let connected = match via.filter(|_| !local) {
        None => connect_direct(&addrs).await,
        Some(Err(why)) => Err(std::io::Error::other(why.clone())),
        Some(Ok(up)) if tunnel => up.tunnel(&target.host, target.port, CONNECT_TIMEOUT).await,
        Some(Ok(up)) => up.connect(CONNECT_TIMEOUT).await,
    };
    let mut upstream_stream = match connected {
        Ok(s) => s,
        Err(e) => {
            let why = format!("cannot connect to {}:{}: {e}", target.host, target.port);
            return respond(&mut client, 502, &why).await;
        }
    };
    match (&target.forward_head, &target.proxy_head, via) {
        (None, ..) => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?
        }
        (Some(_), Some((line, headers)), Some(Ok(up))) if !local => {
            let head = format!("{line}\r\n{}{headers}", up.auth_header());
            upstream_stream.write_all(head.as_bytes()).await?
        }
        (Some(head), ..) => upstream_stream.write_all(head).await?,
    }
    if !rest.is_empty() {
        upstream_stream.write_all(&rest).await?;
    }
    tokio::io::copy_bidirectional(&mut client, &mut upstream_stream).await?;
    Ok(())
}

/// Which of `addrs` (those of the target the agent asked for, `named` or not) `policy`
/// closes, and why; `None` when all are open. A name is judged by the address rule
/// ([`egress_address::closed`]; `private` from its entry) under either policy. Under
/// [`Policy::Open`] an address or `localhost` is judged too: a loopback one is open on a
/// port of `connect_ports` only (the operator's local endpoint), any other as a name's
/// would be. Under [`Policy::Listed`] an address or `localhost` is the listed entry itself.
fn judge(
    policy: &Policy,
    named: bool,
    port: u16,
    addrs: &[SocketAddr],
    private: bool,
) -> Option<(IpAddr, Why)> {
    let own = || egress_address::own_addresses();
    match (policy, named) {
        (Policy::Listed(_), false) => None,
        (Policy::Listed(_), true) => {
            let own = own();
            addrs.iter().find_map(|a| {
                egress_address::closed(a.ip(), &own, private).map(|c| (a.ip(), Why::Resolves(c)))
            })
        }
        (Policy::Open { connect_ports }, named) => {
            let own = own();
            let local_endpoint = !named && connect_ports.contains(&port);
            addrs.iter().find_map(|a| {
                let class = egress_address::closed(a.ip(), &own, false)?;
                let listed_loopback = local_endpoint
                    && matches!(
                        a.ip(),
                        IpAddr::V4(Ipv4Addr::LOCALHOST) | IpAddr::V6(Ipv6Addr::LOCALHOST)
                    );
                (!listed_loopback).then_some((a.ip(), Why::Open(class)))
            })
        }
    }
}

/// The addresses of `host:port`: an address is itself; `localhost` is `127.0.0.1` and
/// `::1` (never looked up); a name is resolved (within [`CONNECT_TIMEOUT`]).
async fn addresses(host: &str, port: u16) -> Result<Vec<SocketAddr>, &'static str> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    if host == "localhost" {
        return Ok(vec![
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port),
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), port),
        ]);
    }
    match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((host, port))).await {
        Ok(Ok(addrs)) => {
            let addrs: Vec<SocketAddr> = addrs.collect();
            if addrs.is_empty() {
                Err("cannot resolve the host")
            } else {
                Ok(addrs)
            }
        }
        _ => Err("cannot resolve the host"),
    }
}

/// Connects to the first of `addrs` that answers (within [`CONNECT_TIMEOUT`]).
async fn connect_direct(addrs: &[SocketAddr]) -> std::io::Result<TcpStream> {
    match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addrs)).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "connect timed out",
        )),
    }
}

/// Reads until the blank line that ends a request head. `Some((head, bytes after it))`;
/// `None` if the client closed first or the head exceeds [`HEAD_MAX`].
async fn read_head(client: &mut TcpStream) -> std::io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
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
    }
}

/// Headers the proxy does not pass on (hop-by-hop, and the client's words to the proxy).
const DROPPED_HEADERS: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "host",
];

/// The target of a request head, or why it is not one the proxy serves.
fn parse_head(head: &[u8]) -> Result<Target, &'static str> {
    let text = std::str::from_utf8(head).map_err(|_| "the request head is not UTF-8")?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut words = request_line.split(' ');
    let (Some(method), Some(uri), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err("malformed request line");
    };
    if !version.starts_with("HTTP/1.") {
        return Err("only HTTP/1.x is proxied");
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = host_port(uri, None).ok_or("CONNECT needs host:port")?;
        return Ok(Target {
            host,
            port,
            forward_head: None,
            proxy_head: None,
        });
    }
    let rest = uri
        .strip_prefix("http://")
        .ok_or("only CONNECT and absolute http:// URIs are proxied")?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err("credentials in the URI are not proxied");
    }
    let (host, port) = host_port(authority, Some(80)).ok_or("bad host in the URI")?;
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    let mut headers = format!("Host: {authority}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        if !DROPPED_HEADERS.iter().any(|d| name.eq_ignore_ascii_case(d)) {
            headers.push_str(line);
            headers.push_str("\r\n");
        }
    }
    headers.push_str("Connection: close\r\n\r\n");
    let origin = format!("{method} {path} {version}\r\n{headers}");
    Ok(Target {
        host,
        port,
        forward_head: Some(origin.into_bytes()),
        proxy_head: Some((
            format!("{method} http://{authority}{path} {version}"),
            headers,
        )),
    })
}

/// `host:port`, `[v6]:port`, or (with a default port) a bare host → (normalized host, port).
fn host_port(s: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, tail) = rest.split_once(']')?;
        match tail.strip_prefix(':') {
            Some(p) => (host, p.parse().ok()?),
            None if tail.is_empty() => (host, default_port?),
            None => return None,
        }
    } else {
        match s.rsplit_once(':') {
            Some((host, p)) if !host.contains(':') => (host, p.parse().ok()?),
            Some(_) => return None,
            None => (s, default_port?),
        }
    };
    (port != 0).then_some(())?;
    Some((normalize(host)?, port))
}

/// Writes a short response with a text body saying why, and ends the exchange.
async fn respond(client: &mut TcpStream, status: u16, why: &str) -> std::io::Result<()> {
    crate::runtime::egress::http::respond_as(client, "egress proxy", status, why).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_targets_are_host_and_port() {
        let t = parse_head(b"CONNECT API.Anthropic.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.forward_head),
            ("api.anthropic.com", 443, None)
        );
        let t = parse_head(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 8443));
        assert!(parse_head(b"CONNECT example.org HTTP/1.1\r\n\r\n").is_err());
        assert!(parse_head(b"CONNECT example.org:0 HTTP/1.1\r\n\r\n").is_err());
    }

    #[test]
    fn plain_http_is_rewritten_to_origin_form_for_one_request() {
        let t = parse_head(
            b"POST http://127.0.0.2:9000/v1/x?q=1 HTTP/1.1\r\nHost: evil.example\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n",
        )
        .unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.2", 9000));
        assert_eq!(
            String::from_utf8(t.forward_head.unwrap()).unwrap(),
            "POST /v1/x?q=1 HTTP/1.1\r\nHost: 127.0.0.2:9000\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
        );
        let t = parse_head(b"GET http://example.org HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("example.org", 80));
        assert!(String::from_utf8(t.forward_head.unwrap())
            .unwrap()
            .starts_with("GET / HTTP/1.0\r\n"));
    }

    /// Without `allow_hosts`: names and public addresses open, this machine and its
    /// network closed, `127.0.0.1`/`::1`/`localhost` open only on a listed port.
    #[test]
    fn the_open_policy_never_leads_into_this_machine() {
        use crate::runtime::egress::address::Closed;
        let open = Policy::Open {
            connect_ports: vec![4010],
        };
        let at = |ip: &str, port| vec![SocketAddr::new(ip.parse().unwrap(), port)];
        let judged = |named, port, ip: &str| judge(&open, named, port, &at(ip, port), false);
        // A name or a public address on 443: open (the control of each row below).
        assert_eq!(judged(true, 443, "93.184.216.34"), None);
        assert_eq!(judged(false, 443, "93.184.216.34"), None);
        // Loopback by address or by name, on 443 or any port not listed.
        for (named, port) in [(false, 443), (true, 443), (true, 4010), (false, 4011)] {
            let (ip, why) = judged(named, port, "127.0.0.1").expect("closed");
            assert_eq!(ip.to_string(), "127.0.0.1");
            assert!(
                matches!(why, Why::Open(Closed::Loopback | Closed::ThisMachine)),
                "{why:?}"
            );
        }
        assert!(judged(false, 443, "::1").is_some());
        assert!(judged(false, 443, "::ffff:127.0.0.1").is_some());
        // The listed local endpoint, by address: open (a name never is).
        assert_eq!(judged(false, 4010, "127.0.0.1"), None);
        assert_eq!(judged(false, 4010, "::1"), None);
        // Private, link-local, metadata addresses: closed by address and by name.
        for ip in [
            "10.1.2.3",
            "192.168.0.1",
            "169.254.169.254",
            "fe80::1",
            "fd00::1",
        ] {
            assert!(judged(false, 443, ip).is_some(), "{ip}");
            assert!(judged(true, 443, ip).is_some(), "{ip}");
        }
        assert_eq!(
            judged(false, 443, "10.1.2.3").map(|(_, w)| w),
            Some(Why::Open(Closed::Private))
        );
    }

    #[test]
    fn other_requests_are_not_proxied() {
        for bad in [
            &b"GET /relative HTTP/1.1\r\n\r\n"[..],
            b"GET https://example.org/ HTTP/1.1\r\n\r\n",
            b"GET http://user:pw@example.org/ HTTP/1.1\r\n\r\n",
            b"GET http://exa mple.org/ HTTP/1.1\r\n\r\n",
            b"CONNECT example.org:443 HTTP/2\r\n\r\n",
            b"\xff\xfe\r\n\r\n",
        ] {
            assert!(parse_head(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
