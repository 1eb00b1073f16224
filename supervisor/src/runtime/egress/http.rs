//! What the agent's egress proxy, the ports its network namespace forwards
//! ([`crate::runtime::egress::routes`]) and the key broker ([`crate::runtime::egress::key_broker`])
//! share: how long a connection out may take to open, and the short HTTP answer each gives
//! the agent when it will not forward a request (docs/security.md, "Egress by host name",
//! "The key broker").

use std::time::Duration;

use tokio::io::AsyncWriteExt;

/// How long resolving and connecting to an upstream (or this machine's loopback) may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Writes a short response of `who` (`egress proxy`, `key broker`) to the agent: `status`
/// (400, 401, 403, 408; anything else is answered as 502) with a text body saying why, and
/// ends the exchange.
pub(crate) async fn respond_as<S>(
    client: &mut S,
    who: &str,
    status: u16,
    why: &str,
) -> std::io::Result<()>
where
    S: tokio::io::AsyncWrite + Unpin,
{
    let (status, reason) = match status {
        400 => (400, "Bad Request"),
        401 => (401, "Unauthorized"),
        403 => (403, "Forbidden"),
        408 => (408, "Request Timeout"),
        _ => (502, "Bad Gateway"),
    };
    let body = format!("agent-runner {who}: {why}\n");
    let msg = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(msg.as_bytes()).await?;
    client.shutdown().await
}
