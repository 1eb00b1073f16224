//! The agent's network, served from the supervisor (docs/security.md, "The agent's
//! network"): every loopback port of the agent's namespace has a handler here.
//!
//! - [`routes`]: which handler serves each port (the proxy, `connect_ports`, the key
//!   broker's ports).
//! - [`proxy`]: the filtering HTTP proxy (`[agent.sandbox] allow_hosts`, or the open
//!   policy); [`address`]: which addresses a name may not lead to; [`refusals`]: a refused
//!   connect, told where people look.
//! - [`key_broker`]: the provider key kept with the supervisor, added on requests to its
//!   provider's endpoint only.
//! - [`upstream_proxy`]: the operator's own proxy, which the egress proxy (and `serve`'s
//!   webhooks) go through.
//! - [`http`]: what the proxy, the routes and the key broker share: the connect timeout
//!   and the short answer to the agent.

pub(crate) mod address;
pub(crate) mod http;
pub(crate) mod key_broker;
pub(crate) mod proxy;
pub(crate) mod refusals;
pub(crate) mod routes;
pub(crate) mod upstream_proxy;
