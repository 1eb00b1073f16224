//! The operator's own (corporate) HTTP proxy, which the egress proxy goes through
//! (docs/security.md, "Egress by host name", "Through an upstream proxy").
//!
//! Read from `[agent.env]` first, then the supervisor's environment: a `CONNECT` tunnel goes
//! through `HTTPS_PROXY` (else `ALL_PROXY`, else `HTTP_PROXY`), a plain-HTTP request through
//! `HTTP_PROXY` (else `ALL_PROXY`); each name in lower case first, as curl reads them.
//! `NO_PROXY` (`*`, names and their subdomains, `.domain`, addresses) sends a host direct.
//! Only `http://` proxies (`[user:password@]host[:port]`, port 80 by default; credentials as
//! `Proxy-Authorization: Basic`). The upstream proxy itself is always reachable: the egress
//! proxy's rules judge the agent's targets, never the operator's proxy.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One upstream proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Upstream {
    /// Its host (name or address, IPv6 without brackets).
    pub host: String,
    /// Its port.
    pub port: u16,
    /// `Basic` credentials (base64 of `user:password`), from the URL.
    pub basic: Option<String>,
}

/// The upstream proxies of one agent launch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UpstreamProxies {
    /// For `CONNECT` tunnels; `Err` is a variable that is set but unusable (the proxy
    /// answers `502` naming it rather than going direct).
    tunnel: Option<Result<Upstream, String>>,
    /// For plain-HTTP requests.
    http: Option<Result<Upstream, String>>,
    /// `NO_PROXY` entries, lower case, leading `.`/`*.` removed.
    no_proxy: Vec<String>,
}

impl UpstreamProxies {
    /// Reads the variables through `get` (`[agent.env]`, then the environment).
    pub(crate) fn from_vars(get: impl Fn(&str) -> Option<String>) -> UpstreamProxies {
        let var = |name: &str| {
            get(&name.to_ascii_lowercase())
                .or_else(|| get(name))
                .filter(|v| !v.trim().is_empty())
        };
        let first = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| var(n).map(|v| (n.to_string(), v)))
        };
        // The error reaches the agent (its request's `502`): the value is named without
        // its `user:password@`, which only the upstream proxy may see.
        let parse = |(name, v): (String, String)| {
            parse_url(&v).map_err(|e| format!("{name}={}: {e}", without_credentials(&v)))
        };
        UpstreamProxies {
            tunnel: first(&["HTTPS_PROXY", "ALL_PROXY", "HTTP_PROXY"]).map(parse),
            http: first(&["HTTP_PROXY", "ALL_PROXY"]).map(parse),
            no_proxy: var("NO_PROXY")
                .unwrap_or_default()
                .split(',')
                .map(|e| {
                    let e = e.trim().to_ascii_lowercase();
                    let e = e.trim_start_matches("*.").trim_start_matches('.');
                    e.trim_start_matches('[').trim_end_matches(']').to_owned()
                })
                .filter(|e| !e.is_empty())
                .collect(),
        }
    }

    /// The upstream for a request to `host` (a `CONNECT` when `tunnel`): `None` to go
    /// direct; `Some(Err)` for a set but unusable variable.
    pub(crate) fn for_target(&self, host: &str, tunnel: bool) -> Option<&Result<Upstream, String>> {
        let host = host.to_ascii_lowercase();
        let bypass = self.no_proxy.iter().any(|e| {
            e == "*"
                || host == *e
                || host
                    .strip_suffix(e.as_str())
                    .is_some_and(|h| h.ends_with('.'))
        });
        if bypass {
            return None;
        }
        if tunnel {
            self.tunnel.as_ref()
        } else {
            self.http.as_ref()
        }
    }
}

/// `url` with the `user:password@` of its authority, if any, written `***@`.
fn without_credentials(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

/// `http://[user:password@]host[:port][/]` (or without `http://`).
fn parse_url(url: &str) -> Result<Upstream, String> {
    let url = url.trim();
    let rest = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
        Some((scheme, _)) => {
            return Err(format!(
                "the egress proxy speaks to `http://` proxies only, not `{scheme}://`"
            ))
        }
        None => url,
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let (basic, hostport) = match authority.rsplit_once('@') {
        Some((cred, hp)) => (Some(base64(&percent_decode(cred))), hp),
        None => (None, authority),
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, tail) = v6.split_once(']').ok_or("`[` without `]`")?;
        (h, tail.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or("the port must be 1..=65535")?,
        None => 80,
    };
    if host.is_empty() {
        return Err("no host".into());
    }
    Ok(Upstream {
        host: host.to_owned(),
        port,
        basic,
    })
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl Upstream {
    /// The `Proxy-Authorization` header line (with its CRLF), or nothing.
    pub(crate) fn auth_header(&self) -> String {
        self.basic
            .as_ref()
            .map(|b| format!("Proxy-Authorization: Basic {b}\r\n"))
            .unwrap_or_default()
    }

    /// `host:port` for `connect`.
    fn addr(&self) -> (String, u16) {
        (self.host.clone(), self.port)
    }

    /// Connects to the proxy itself (within `timeout`).
    pub(crate) async fn connect(&self, timeout: Duration) -> std::io::Result<TcpStream> {
        match tokio::time::timeout(timeout, TcpStream::connect(self.addr())).await {
            Ok(r) => r,
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "connecting to the upstream proxy timed out",
            )),
        }
    }

    /// Opens a tunnel to `host:port` through the proxy (`CONNECT`), within `timeout`.
    ///
    /// # Errors
    /// The proxy is unreachable, closed, or answered other than `2xx` (the error names its
    /// status line).
    pub(crate) async fn tunnel(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> std::io::Result<TcpStream> {
        let mut stream = self.connect(timeout).await?;
        let target = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let head = format!(
            "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{}\r\n",
            self.auth_header()
        );
        stream.write_all(head.as_bytes()).await?;
        let answer = tokio::time::timeout(timeout, read_answer(&mut stream))
            .await
            .map_err(|_| std::io::Error::other("the upstream proxy did not answer CONNECT"))??;
        let status = answer.lines().next().unwrap_or_default().to_owned();
        let code = status.split(' ').nth(1).unwrap_or_default();
        if code.len() == 3 && code.starts_with('2') {
            Ok(stream)
        } else {
            Err(std::io::Error::other(format!(
                "the upstream proxy answered `{status}`"
            )))
        }
    }
}

/// Reads a response head byte by byte (nothing past it is consumed), at most 16 KiB.
async fn read_answer(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await? == 0 || head.len() > 16 * 1024 {
            return Err(std::io::Error::other(
                "the upstream proxy closed or sent an oversized answer",
            ));
        }
        head.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> UpstreamProxies {
        let map: std::collections::HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        UpstreamProxies::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn the_variables_choose_the_upstream_per_kind() {
        let p = vars(&[
            ("HTTPS_PROXY", "http://u%40x:p%3Aw@proxy.corp:3128/"),
            ("http_proxy", "plain.corp:8080"),
            ("NO_PROXY", "localhost, .internal.corp,10.0.0.1"),
        ]);
        let t = p
            .for_target("api.example.org", true)
            .unwrap()
            .as_ref()
            .unwrap();
        assert_eq!((t.host.as_str(), t.port), ("proxy.corp", 3128));
        assert_eq!(t.basic.as_deref(), Some(base64(b"u@x:p:w").as_str()));
        let h = p
            .for_target("api.example.org", false)
            .unwrap()
            .as_ref()
            .unwrap();
        assert_eq!((h.host.as_str(), h.port), ("plain.corp", 8080));
        for direct in ["localhost", "a.internal.corp", "internal.corp", "10.0.0.1"] {
            assert!(p.for_target(direct, true).is_none(), "{direct}");
        }
        assert!(p.for_target("notinternal.corp", true).is_some());
        let only_http = vars(&[("HTTP_PROXY", "http://[::1]:9")]);
        let t = only_http.for_target("x", true).unwrap().as_ref().unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 9));
        assert_eq!(vars(&[]).for_target("x", true), None);
    }

    #[test]
    fn unusable_variables_are_errors_not_direct() {
        let p = vars(&[("HTTPS_PROXY", "socks5://p:1080")]);
        let e = p.for_target("x", true).unwrap().as_ref().unwrap_err();
        assert!(e.contains("HTTPS_PROXY") && e.contains("socks5"), "{e}");
        // The error reaches the agent: never the credentials.
        let p = vars(&[("HTTPS_PROXY", "https://u:s3cret-pw@proxy.corp:3128/")]);
        let e = p.for_target("x", true).unwrap().as_ref().unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
        assert!(e.contains("https://***@proxy.corp:3128/"), "{e}");
        assert_eq!(without_credentials("http://proxy:80"), "http://proxy:80");
        assert_eq!(without_credentials("u:p@h:1/a@b"), "***@h:1/a@b");
        assert!(vars(&[("HTTPS_PROXY", "http://p:0")])
            .for_target("x", true)
            .unwrap()
            .is_err());
    }

    #[test]
    fn base64_is_rfc4648() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("user:pass", "dXNlcjpwYXNz"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded);
        }
    }
}
