//! The agent's egress filter: an HTTP proxy in the supervisor that lets the agent reach only
//! the host names of `[agent.sandbox] allow_hosts` (docs/security.md, "Egress by host name").
//!
//! The agent runs in a network namespace with only loopback; the forwarder there hands each
//! connection it accepts on `127.0.0.1:3128` to the supervisor
//! ([`agent_runner_plugin_host::agent::egress_bridge`]). [`start`] serves them: a thread waits on
//! the bridge and each connection becomes a task that
//!
//! 1. reads the request head (at most [`HEAD_MAX`] bytes, within [`HEAD_TIMEOUT`]);
//! 2. takes the target: `CONNECT host:port` (a tunnel, for HTTPS), or an absolute URI
//!    `http://host[:port]/path` (plain HTTP); anything else is answered `400`;
//! 3. checks the name the agent asked for against the list (before resolving it). Refused:
//!    `403 Forbidden`, and a [`Refusal`] for the round's record;
//! 4. resolves the name and connects (within [`CONNECT_TIMEOUT`]). A name the operator did
//!    not write as an address or `localhost` must not resolve to a loopback or unspecified
//!    address (a listed domain pointed at the supervisor's machine): refused as in 3;
//!    unreachable: `502`;
//! 5. `CONNECT`: answers `200` and copies bytes both ways until either side closes. Plain
//!    HTTP: sends the head with the request line in origin form, the hop-by-hop and
//!    `Proxy-*` headers dropped and `Connection: close`, then copies both ways. The
//!    connection serves that one request to that one host: a client cannot switch hosts
//!    mid-connection.
//!
//! The proxy never reads or keeps what passes through a tunnel; it writes nothing to disk.

use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use agent_runner_plugin_host::agent::egress_bridge::{self, BridgeReceiver, EgressBridge};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::config::allow_hosts::{normalize, AllowHosts};

/// The largest request head the proxy reads (request line and headers).
pub(crate) const HEAD_MAX: usize = 16 * 1024;
/// How long a client has to send its request head.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long resolving and connecting to the upstream may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A request the proxy refused, for `agent_sandbox_denied` (layer `egress`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The host as the agent asked for it (normalized when it parsed as a name).
    pub host: String,
    /// The port asked for.
    pub port: u16,
    /// `connect` (a `CONNECT` tunnel) or `http` (a plain-HTTP request).
    pub access: &'static str,
}

/// Starts serving the agent's connections from `bridge` under `allow`; refusals go to
/// `refusals`. The thread and its tasks end by themselves: the thread when the forwarder
/// ends (the round is over), each task when its connection closes. Must be called inside
/// the tokio runtime.
///
/// # Errors
/// The serving thread could not be started.
pub(crate) fn start(
    bridge: BridgeReceiver,
    allow: Arc<AllowHosts>,
    refusals: mpsc::UnboundedSender<Refusal>,
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name("ar-egress".into())
        .spawn(move || loop {
            match bridge.recv() {
                Ok(Some(fd)) => {
                    let (allow, refusals) = (allow.clone(), refusals.clone());
                    runtime.spawn(async move {
                        if let Err(e) = serve_connection(fd, &allow, &refusals).await {
                            tracing::debug!(error = %e, "egress proxy connection ended");
                        }
                    });
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "egress proxy: the bridge failed; the agent's connections are no longer served");
                    return;
                }
            }
        })?;
    Ok(())
}

/// Prepares the egress of one agent launch: the bridge the agent enters before its exec
/// (with a user namespace around its network namespace unless the supervisor is root), the
/// proxy serving it under `allow`, and the receiver of the round's refusals. Call inside the
/// tokio runtime.
///
/// # Errors
/// The bridge's socket pair or the proxy's thread could not be made.
pub(crate) fn open(
    allow: &AllowHosts,
) -> std::io::Result<(EgressBridge, mpsc::UnboundedReceiver<Refusal>)> {
    // SAFETY: geteuid/getuid/getgid take nothing and cannot fail.
    let ids = unsafe { (libc::geteuid() != 0).then(|| (libc::getuid(), libc::getgid())) };
    let (bridge, receiver) = egress_bridge::bridge(ids)?;
    let (tx, rx) = mpsc::unbounded_channel();
    start(receiver, Arc::new(allow.clone()), tx)?;
    Ok((bridge, rx))
}

/// The loopback addresses the agent reaches directly (its own namespace's servers), never
/// through the proxy.
pub(crate) const NO_PROXY: &str = "localhost,127.0.0.1,::1";

/// The variables that send the agent's HTTP clients to the proxy: the `*_PROXY` pairs curl,
/// Python, Go and Rust clients read, `NO_PROXY` for the agent's own loopback, and
/// `NODE_USE_ENV_PROXY=1`, without which Node's built-in `fetch` and `http` ignore them
/// (docs/security.md, "Egress by host name").
pub(crate) fn agent_env() -> Vec<(String, String)> {
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
    env.push(("NO_PROXY".into(), NO_PROXY.into()));
    env.push(("no_proxy".into(), NO_PROXY.into()));
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
}

async fn serve_connection(
    fd: OwnedFd,
    allow: &AllowHosts,
    refusals: &mpsc::UnboundedSender<Refusal>,
) -> std::io::Result<()> {
    let std_stream = std::net::TcpStream::from(fd);
    std_stream.set_nonblocking(true)?;
    let mut client = TcpStream::from_std(std_stream)?;
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
    let access = if target.forward_head.is_some() {
        "http"
    } else {
        "connect"
    };
    let refusal = Refusal {
        host: target.host.clone(),
        port: target.port,
        access,
    };
    if !allow.allows(&target.host, target.port) {
        let _ = refusals.send(refusal);
        return respond(&mut client, 403, "host not in [agent.sandbox] allow_hosts").await;
    }
    let addrs = match tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio::net::lookup_host((target.host.as_str(), target.port)),
    )
    .await
    {
        Ok(Ok(addrs)) => addrs.collect::<Vec<SocketAddr>>(),
        _ => return respond(&mut client, 502, "cannot resolve the host").await,
    };
    let literal = target.host == "localhost" || target.host.parse::<std::net::IpAddr>().is_ok();
    let addrs: Vec<SocketAddr> = addrs
        .into_iter()
        .filter(|a| literal || !(a.ip().is_loopback() || a.ip().is_unspecified()))
        .collect();
    if addrs.is_empty() {
        let _ = refusals.send(refusal);
        return respond(&mut client, 403, "the name resolves to a loopback address").await;
    }
    let mut upstream =
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&addrs[..])).await {
            Ok(Ok(s)) => s,
            _ => return respond(&mut client, 502, "cannot connect to the host").await,
        };
    match &target.forward_head {
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?
        }
        Some(head) => upstream.write_all(head).await?,
    }
    if !rest.is_empty() {
        upstream.write_all(&rest).await?;
    }
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
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
    let mut out = format!("{method} {path} {version}\r\nHost: {authority}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        if !DROPPED_HEADERS.iter().any(|d| name.eq_ignore_ascii_case(d)) {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Target {
        host,
        port,
        forward_head: Some(out.into_bytes()),
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
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        _ => "Bad Gateway",
    };
    let body = format!("agent-runner egress proxy: {why}\n");
    let msg = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(msg.as_bytes()).await?;
    client.shutdown().await
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
