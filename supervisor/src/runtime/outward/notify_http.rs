//! One webhook POST over HTTP/1.1 (hyper's client connection), plain or TLS (rustls, the
//! system's root certificates), direct or through the operator's proxy as the egress
//! proxy reads it ([`crate::runtime::egress::upstream_proxy`]: `HTTPS_PROXY` for a tunnel,
//! `HTTP_PROXY` for plain HTTP, `NO_PROXY`). Used by [`crate::runtime::outward::notify`] only; no
//! error it returns quotes the URL (the caller scrubs what a library might add).

use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::config::notify::ParsedUrl;
use crate::runtime::egress::upstream_proxy::{Upstream, UpstreamProxies};

/// One attempt (connect, proxy, TLS, request, the answer's head), at most.
pub(crate) const ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Sends webhook POSTs: the proxies of `serve`'s environment, read once, and the TLS
/// roots, read at the first `https://` delivery.
pub(crate) struct Client {
    proxies: UpstreamProxies,
    /// `None` inside: no root certificate could be read (HTTPS fails, saying so).
    tls: std::sync::OnceLock<Option<tokio_rustls::TlsConnector>>,
}

impl Client {
    /// The client of `serve`'s environment: its proxy variables, the system's roots.
    pub(crate) fn from_environment() -> Client {
        Client {
            proxies: UpstreamProxies::from_vars(|name| std::env::var(name).ok()),
            tls: std::sync::OnceLock::new(),
        }
    }

    /// POSTs `body` (JSON) to `url`; the answer's status.
    ///
    /// Errors: what failed, in words (connect, proxy, TLS, HTTP), quoting no URL.
    pub(crate) async fn post(&self, url: &ParsedUrl, body: Vec<u8>) -> Result<u16, String> {
        let proxy = match self.proxies.for_target(&url.host, url.tls) {
            None => None,
            Some(Ok(upstream)) => Some(upstream),
            Some(Err(e)) => {
                let name = e.split('=').next().unwrap_or("a proxy variable");
                return Err(format!(
                    "{name} is set but unusable (an http:// proxy is expected)"
                ));
            }
        };
        let tcp = match (proxy, url.tls) {
            (None, _) => TcpStream::connect((url.host.as_str(), url.port))
                .await
                .map_err(|e| connect_error(&e))?,
            (Some(up), true) => up
                .tunnel(&url.host, url.port, ATTEMPT_TIMEOUT)
                .await
                .map_err(|e| format!("through the proxy: {}", connect_error(&e)))?,
            (Some(up), false) => up
                .connect(ATTEMPT_TIMEOUT)
                .await
                .map_err(|e| format!("to the proxy: {}", connect_error(&e)))?,
        };
        let _ = tcp.set_nodelay(true);
        let absolute = proxy.filter(|_| !url.tls);
        if !url.tls {
            return send(tcp, url, absolute, body).await;
        }
        let tls = self.tls.get_or_init(tls_connector).as_ref().ok_or(
            "no trusted root certificates could be read from the system (install ca-certificates)",
        )?;
        let name = tokio_rustls::rustls::pki_types::ServerName::try_from(url.host.clone())
            .map_err(|_| "the host is not a valid TLS server name".to_owned())?;
        let stream = tls
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS: {e}"))?;
        send(stream, url, None, body).await
    }
}

/// The connector over the system's root certificates; `None` when none could be read.
fn tls_connector() -> Option<tokio_rustls::TlsConnector> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = tokio_rustls::rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        tracing::warn!("notifications: no root certificate found; HTTPS webhooks will fail");
        return None;
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Some(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// A connect failure in words (the kernel's, which quote no address).
fn connect_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        std::io::ErrorKind::TimedOut => "connect timed out".into(),
        _ => format!("cannot connect: {e}"),
    }
}

/// The request over `io`: `POST <path>` (absolute-form through a plain-HTTP proxy), its
/// answer's status; the answer's body is not read.
async fn send<S>(
    io: S,
    url: &ParsedUrl,
    proxy: Option<&Upstream>,
    body: Vec<u8>,
) -> Result<u16, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let host = if url.host.contains(':') {
        format!("[{}]", url.host)
    } else {
        url.host.clone()
    };
    let default_port = if url.tls { 443 } else { 80 };
    let authority = if url.port == default_port {
        host
    } else {
        format!("{host}:{}", url.port)
    };
    let target = match proxy {
        Some(_) => format!("http://{authority}{}", url.path),
        None => url.path.clone(),
    };
    let mut request = hyper::Request::post(target)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(
            hyper::header::USER_AGENT,
            concat!("agent-runner/", env!("CARGO_PKG_VERSION")),
        );
    if let Some(basic) = proxy.and_then(|p| p.basic.as_ref()) {
        request = request.header("proxy-authorization", format!("Basic {basic}"));
    }
    let request = request.body(Full::new(Bytes::from(body))).map_err(|_| {
        "the request could not be built (a character the URL may not hold)".to_owned()
    })?;
    let answer = sender
        .send_request(request)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    Ok(answer.status().as_u16())
}
