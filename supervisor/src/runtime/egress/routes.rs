//! Who serves each loopback port of the agent's network namespace (docs/security.md, "The
//! agent's network").
//!
//! The agent's forwarder ([`agent_runner_plugin_host::agent::egress_bridge`]) listens on
//! `127.0.0.1:3128` (the egress proxy) and on each *forwarded* port, and hands every
//! connection it accepts to the supervisor. [`Routes`] maps a port to its [`Handler`]; the
//! serving thread of [`open`] reads the port a connection was made to from the socket itself
//! (its local address) and spawns that port's handler on it. A connection to a port without
//! a handler is closed.
//!
//! Handlers so far: the egress proxy ([`crate::runtime::egress::proxy::handler`]) on
//! [`PROXY_PORT`], and [`to_machine_loopback`] for the ports of `[agent.sandbox]
//! connect_ports` (a local model endpoint at `http://127.0.0.1:4010` keeps working for a
//! CLI that ignores the proxy variables). Anything else that serves the agent on a loopback
//! port of its namespace plugs in by [`Routes::route`].

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use agent_runner_plugin_host::agent::egress_bridge::{self, BridgeReceiver, EgressBridge};
use tokio::net::TcpStream;

pub(crate) use agent_runner_plugin_host::agent::egress_bridge::PROXY_PORT;

/// A handler's work on one connection.
pub(crate) type Served = Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>;

/// What serves one loopback port: called with the agent's connection and the address in the
/// agent's namespace it was made to (`127.0.0.1:port` or `[::1]:port`).
pub(crate) type Handler = Arc<dyn Fn(TcpStream, SocketAddr) -> Served + Send + Sync>;

/// The handlers of one agent launch, by port.
#[derive(Clone, Default)]
pub(crate) struct Routes {
    by_port: BTreeMap<u16, Handler>,
}

impl std::fmt::Debug for Routes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routes")
            .field("ports", &self.by_port.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Routes {
    /// Serves `port` with `handler` (replacing any handler it had).
    pub(crate) fn route(&mut self, port: u16, handler: Handler) {
        self.by_port.insert(port, handler);
    }

    /// The routed ports other than the proxy's: the ones the forwarder must also listen on.
    pub(crate) fn forwarded(&self) -> Vec<u16> {
        self.by_port
            .keys()
            .copied()
            .filter(|p| *p != PROXY_PORT)
            .collect()
    }
}

/// A handler that joins the agent's connection to this machine's loopback on the same port:
/// `127.0.0.1` first for a connection made to `127.0.0.1`, `::1` first for one made to
/// `::1`, the other next (so `localhost:port` works whichever the endpoint listens on). The
/// operator opened the port by listing it; nothing is read or judged.
pub(crate) fn to_machine_loopback() -> Handler {
    Arc::new(|mut client: TcpStream, at: SocketAddr| {
        Box::pin(async move {
            let port = at.port();
            let v4 = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
            let v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port);
            let order = if at.is_ipv6() { [v6, v4] } else { [v4, v6] };
            let connect = tokio::time::timeout(
                crate::runtime::egress::http::CONNECT_TIMEOUT,
                TcpStream::connect(&order[..]),
            );
            let mut upstream = match connect.await {
                Ok(r) => r?,
                Err(_) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "connect timed out",
                    ))
                }
            };
            tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
            Ok(())
        }) as Served
    })
}

/// Prepares the network of one agent launch: the bridge the agent enters before its exec
/// (with a user namespace around its network namespace unless the supervisor is root; its
/// forwarder listening on the proxy's port and [`Routes::forwarded`]) and the thread that
/// serves what it hands over by `routes`. Call inside the tokio runtime.
///
/// # Errors
/// The bridge's socket pair or the serving thread could not be made; too many forwarded
/// ports.
pub(crate) fn open(routes: Routes) -> std::io::Result<EgressBridge> {
    // SAFETY: geteuid/getuid/getgid take nothing and cannot fail.
    let ids = unsafe { (libc::geteuid() != 0).then(|| (libc::getuid(), libc::getgid())) };
    let (bridge, receiver) = egress_bridge::bridge(ids, &routes.forwarded())?;
    serve(receiver, routes)?;
    Ok(bridge)
}

/// Serves the agent's connections from `bridge` by `routes`: a thread waits on the bridge
/// and each connection becomes a task of its port's handler. The thread ends when the
/// forwarder ends (the round is over), each task when its connection closes. Must be
/// called inside the tokio runtime.
///
/// # Errors
/// The serving thread could not be started.
fn serve(bridge: BridgeReceiver, routes: Routes) -> std::io::Result<()> {
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name("ar-egress".into())
        .spawn(move || loop {
            match bridge.recv() {
                Ok(Some(fd)) => {
                    let std_stream = std::net::TcpStream::from(fd);
                    let Ok(at) = std_stream.local_addr() else {
                        continue;
                    };
                    let Some(handler) = routes.by_port.get(&at.port()).cloned() else {
                        tracing::debug!(port = at.port(), "agent connection to a port without a handler closed");
                        continue;
                    };
                    runtime.spawn(async move {
                        let served = match std_stream
                            .set_nonblocking(true)
                            .and_then(|()| TcpStream::from_std(std_stream))
                        {
                            Ok(client) => handler(client, at).await,
                            Err(e) => Err(e),
                        };
                        if let Err(e) = served {
                            tracing::debug!(error = %e, port = at.port(), "agent connection ended");
                        }
                    });
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "egress bridge failed; the agent's connections are no longer served");
                    return;
                }
            }
        })?;
    Ok(())
}
