//! A connect the agent's sandbox refused, told where people look: the
//! `agent_egress_refused` event (deduplicated per round), the egress proxy's `403` body, the
//! round summary of `serve` and `round`, `peek`'s round row, the live page and the
//! crash-loop reason all say the same sentence — what was refused and the one config line
//! that opens it (docs/security.md, "Refusals told, with their fix").
//!
//! One entry point for every layer: [`EgressTally::record`] takes an [`EgressRefusal`] made
//! by [`EgressRefusal::proxy`] (the supervisor's egress proxy) or
//! [`EgressRefusal::landlock`] (a TCP connect Landlock refused, for a layer that observes
//! them); the round turns the tally into events when the agent has ended.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::record::events::Event;
use crate::runtime::egress::address::Closed;

/// The most `agent_egress_refused` events one round records (the most frequent first).
pub(crate) const MAX_EVENTS_PER_ROUND: usize = 20;

/// The layer that refused a connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Layer {
    /// The supervisor's egress proxy (`[agent.sandbox] allow_hosts`).
    Proxy,
    /// Landlock's TCP connect rule (`[agent.sandbox] connect_ports`).
    Landlock,
    /// The key broker (`[agent.sandbox] broker`, `crate::runtime::egress::key_broker`): a request
    /// it would not add the key to.
    KeyBroker,
    /// The agent's own network namespace, which routes nothing but loopback: a direct
    /// connect out of it (a client ignoring the proxy variables).
    Namespace,
}

impl Layer {
    /// `proxy`, `landlock`: the event's `layer`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Layer::Proxy => "proxy",
            Layer::Landlock => "landlock",
            Layer::KeyBroker => "key_broker",
            Layer::Namespace => "namespace",
        }
    }
}

/// Why the connect was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Why {
    /// No `allow_hosts` entry names the host and port.
    NotListed,
    /// A listed name resolved to an address closed to names.
    Resolves(Closed),
    /// The port is not one the agent may connect to (443 and `connect_ports`): refused by
    /// Landlock, or by the proxy's open mode.
    PortNotAllowed,
    /// The key broker was asked for another host than its provider's upstream.
    BrokerWrongHost,
    /// A request to the key broker without the placeholder key the agent was given.
    BrokerNoPlaceholder,
    /// A request the key broker does not forward (not HTTP/1.x, a malformed or too large
    /// head).
    BrokerBadRequest,
    /// Without `allow_hosts` (the proxy's open mode), the target (an address, or an address
    /// a name resolved to) is closed: this machine, its network, link-local, metadata
    /// (docs/security.md, "The agent's network").
    Open(Closed),
    /// A direct TCP connect out of the agent's own network namespace: no route.
    NoRoute,
}

impl Why {
    /// The event's `reason`: `not_listed`, `port_not_allowed`, or the closed class
    /// (`loopback`, `this_machine`, `link_local`, `multicast`, `unspecified`,
    /// `cloud_metadata`, `private`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Why::NotListed => "not_listed",
            Why::PortNotAllowed => "port_not_allowed",
            Why::BrokerWrongHost => "wrong_host",
            Why::BrokerNoPlaceholder => "no_placeholder",
            Why::BrokerBadRequest => "bad_request",
            Why::NoRoute => "no_route",
            Why::Resolves(c) | Why::Open(c) => c.as_str(),
        }
    }
}

/// One refused connect.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct EgressRefusal {
    /// Which layer refused.
    pub layer: Layer,
    /// The host name the agent asked for, when it asked by name.
    pub host: Option<String>,
    /// The address, when known (an address the agent asked for, or the closed address a
    /// name resolved to).
    pub address: Option<IpAddr>,
    /// The TCP port.
    pub port: u16,
    /// `connect` (a TCP connect or a `CONNECT` tunnel) or `http` (a plain-HTTP request).
    pub access: &'static str,
    /// Why.
    pub why: Why,
}

impl EgressRefusal {
    /// A refusal of the egress proxy: `host` as the agent asked for it (a name or an
    /// address), the closed address a name resolved to, `why`.
    pub(crate) fn proxy(
        host: &str,
        port: u16,
        access: &'static str,
        resolved: Option<IpAddr>,
        why: Why,
    ) -> EgressRefusal {
        let literal = host.parse::<IpAddr>().ok();
        EgressRefusal {
            layer: Layer::Proxy,
            host: literal.is_none().then(|| host.to_owned()),
            address: literal.or(resolved),
            port,
            access: access_name(access),
            why,
        }
    }

    /// A TCP connect to `target:port` Landlock refused (the port not in
    /// `[agent.sandbox] connect_ports`); `target` is the address connected to (or, where
    /// only the name is known, as in `doctor`, the host name).
    pub(crate) fn landlock(target: &str, port: u16) -> EgressRefusal {
        let address = target.parse::<IpAddr>().ok();
        EgressRefusal {
            layer: Layer::Landlock,
            host: address.is_none().then(|| target.to_owned()),
            address,
            port,
            access: "connect",
            why: Why::PortNotAllowed,
        }
    }

    /// A request the key broker refused: `host:port` the upstream (or, for
    /// [`Why::BrokerWrongHost`], the host the agent asked for).
    pub(crate) fn key_broker(host: &str, port: u16, why: Why) -> EgressRefusal {
        let address = host.parse::<IpAddr>().ok();
        EgressRefusal {
            layer: Layer::KeyBroker,
            host: address.is_none().then(|| host.to_owned()),
            address,
            port,
            access: "http",
            why,
        }
    }

    /// A direct TCP connect to `address` out of the agent's own network namespace (the
    /// seccomp observer saw it; nothing routes it).
    pub(crate) fn unrouted(address: std::net::SocketAddr) -> EgressRefusal {
        EgressRefusal {
            layer: Layer::Namespace,
            host: None,
            address: Some(address.ip()),
            port: address.port(),
            access: "connect",
            why: Why::NoRoute,
        }
    }

    /// The config key that opens it: `agent.sandbox.allow_hosts` or
    /// `agent.sandbox.connect_ports` (a loopback endpoint, a port), or
    /// `agent.sandbox.host_network` (a private address without `allow_hosts`).
    pub(crate) fn key(&self) -> &'static str {
        match self.why {
            Why::PortNotAllowed | Why::Open(Closed::Loopback | Closed::ThisMachine) => {
                "agent.sandbox.connect_ports"
            }
            Why::Open(Closed::Private) | Why::NoRoute => "agent.sandbox.host_network",
            Why::BrokerWrongHost | Why::BrokerNoPlaceholder | Why::BrokerBadRequest => {
                "agent.sandbox.broker"
            }
            _ => "agent.sandbox.allow_hosts",
        }
    }

    /// What was refused: `host:port`, `address:port` (`[v6]:port`), or
    /// `host:port (address)`.
    pub(crate) fn target(&self) -> String {
        let addr = self.address.map(|a| match a {
            IpAddr::V6(v6) => format!("[{v6}]"),
            IpAddr::V4(v4) => v4.to_string(),
        });
        match (&self.host, addr) {
            (Some(h), Some(a)) => format!("{h}:{} ({a})", self.port),
            (Some(h), None) => format!("{h}:{}", self.port),
            (None, Some(a)) => format!("{a}:{}", self.port),
            (None, None) => format!("?:{}", self.port),
        }
    }

    /// The line that opens it, in words.
    pub(crate) fn fix(&self) -> String {
        let port = self.port;
        match (self.why, &self.host, self.address) {
            (Why::PortNotAllowed, ..) => format!("add {port} to [agent.sandbox] connect_ports"),
            (Why::BrokerWrongHost, ..) => "the key broker forwards only to its provider's endpoint; another host is reached by the egress rules (connect_ports, allow_hosts), without the key".to_owned(),
            (Why::BrokerNoPlaceholder, ..) => "the request to the key broker did not carry the placeholder key the agent was given, so no key was added (broker = \"off\" in [agent.sandbox] hands the agent the key itself)".to_owned(),
            (Why::BrokerBadRequest, ..) => "the key broker forwards HTTP/1.x requests with a head under 16 KiB".to_owned(),
            (Why::NoRoute, ..) => "the agent's network namespace routes only loopback: the client must go through the egress proxy (HTTPS_PROXY is set), or set [agent.sandbox] host_network = true".to_owned(),
            (Why::NotListed, Some(h), _) => {
                format!("add \"{h}:{port}\" to [agent.sandbox] allow_hosts")
            }
            (Why::NotListed, None, Some(IpAddr::V6(a))) => {
                format!("add \"[{a}]:{port}\" to [agent.sandbox] allow_hosts")
            }
            (Why::NotListed, None, a) => format!(
                "add \"{}:{port}\" to [agent.sandbox] allow_hosts",
                a.map(|a| a.to_string()).unwrap_or_default()
            ),
            (Why::Resolves(Closed::Private), Some(h), _) => format!(
                "the name resolves to a private address; write \"{h}:{port} private\" in [agent.sandbox] allow_hosts if that is wanted"
            ),
            (Why::Open(Closed::Loopback | Closed::ThisMachine), ..) => format!(
                "the agent reaches this machine only at 127.0.0.1 (or localhost) on a port of [agent.sandbox] connect_ports; for a local endpoint add {port} there and use http://127.0.0.1:{port}"
            ),
            (Why::Open(Closed::Private), ..) => "a private address is reached only when [agent.sandbox] allow_hosts lists it (then the agent reaches nothing else) or with [agent.sandbox] host_network = true".to_owned(),
            (Why::Open(c), _, a) => format!(
                "{} address {} is never reached without [agent.sandbox] allow_hosts listing it",
                c.as_str().replace('_', " "),
                a.map(|a| a.to_string()).unwrap_or_default()
            ),
            (Why::Resolves(c), _, a) => format!(
                "a name may not lead into this machine or its network ({} address {}); list the address itself with its port in [agent.sandbox] allow_hosts if it is wanted",
                c.as_str().replace('_', " "),
                a.map(|a| a.to_string()).unwrap_or_default()
            ),
        }
    }

    /// The one sentence every place tells: "egress to 127.0.0.1:4010 refused by the agent
    /// sandbox: add 4010 to [agent.sandbox] connect_ports".
    pub(crate) fn sentence(&self) -> String {
        format!(
            "egress to {} refused by the agent sandbox: {}",
            self.target(),
            self.fix()
        )
    }
}

fn access_name(access: &str) -> &'static str {
    if access == "http" {
        "http"
    } else {
        "connect"
    }
}

/// The refusals of one round, deduplicated: each distinct refusal once, with its count.
#[derive(Debug, Default)]
pub(crate) struct EgressTally {
    /// refusal → (count, order of first sight).
    counts: BTreeMap<EgressRefusal, (u64, usize)>,
}

impl EgressTally {
    /// Records one refused connect (any layer). The supervisor-side entry point for every
    /// layer that observes refusals.
    pub(crate) fn record(&mut self, refusal: EgressRefusal) {
        let next = self.counts.len();
        self.counts.entry(refusal).or_insert((0, next)).0 += 1;
    }

    /// The distinct refusals, most frequent first (then first seen first).
    pub(crate) fn distinct(&self) -> Vec<(EgressRefusal, u64)> {
        let mut all: Vec<_> = self.counts.iter().map(|(r, c)| (r.clone(), *c)).collect();
        all.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
        all.into_iter().map(|(r, (n, _))| (r, n)).collect()
    }

    /// The round's `agent_egress_refused` events, at most [`MAX_EVENTS_PER_ROUND`].
    pub(crate) fn events(&self, round_num: u64) -> Vec<Event> {
        self.distinct()
            .into_iter()
            .take(MAX_EVENTS_PER_ROUND)
            .map(|(r, count)| Event::AgentEgressRefused {
                round_num,
                layer: r.layer.as_str().to_owned(),
                host: r.host.clone(),
                address: r.address.map(|a| a.to_string()),
                port: r.port,
                access: r.access.to_owned(),
                reason: r.why.as_str().to_owned(),
                key: r.key().to_owned(),
                message: r.sentence(),
                count,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_names_what_and_the_key_that_opens_it() {
        let l = EgressRefusal::landlock("127.0.0.1", 4010);
        assert_eq!(
            l.sentence(),
            "egress to 127.0.0.1:4010 refused by the agent sandbox: add 4010 to [agent.sandbox] connect_ports"
        );
        assert_eq!(l.key(), "agent.sandbox.connect_ports");
        let p = EgressRefusal::proxy("api.example.org", 443, "connect", None, Why::NotListed);
        assert_eq!(
            p.sentence(),
            "egress to api.example.org:443 refused by the agent sandbox: add \"api.example.org:443\" to [agent.sandbox] allow_hosts"
        );
        let v6 = EgressRefusal::proxy("::1", 99, "http", None, Why::NotListed);
        assert!(
            v6.sentence().contains("add \"[::1]:99\""),
            "{}",
            v6.sentence()
        );
        let r = EgressRefusal::proxy(
            "vm",
            4010,
            "connect",
            Some("::ffff:127.0.0.1".parse().unwrap()),
            Why::Resolves(Closed::Loopback),
        );
        assert_eq!(r.target(), "vm:4010 ([::ffff:127.0.0.1])");
        assert!(r.sentence().contains("loopback address ::ffff:127.0.0.1"));
        let private = EgressRefusal::proxy(
            "git.corp",
            443,
            "connect",
            Some("10.0.0.2".parse().unwrap()),
            Why::Resolves(Closed::Private),
        );
        assert!(private.fix().contains("\"git.corp:443 private\""));
    }

    #[test]
    fn a_round_records_each_refusal_once_with_its_count() {
        let mut t = EgressTally::default();
        let a = EgressRefusal::landlock("127.0.0.1", 4010);
        let b = EgressRefusal::proxy("x.example", 443, "connect", None, Why::NotListed);
        t.record(b.clone());
        for _ in 0..3 {
            t.record(a.clone());
        }
        let events = t.events(4);
        assert_eq!(events.len(), 2);
        match &events[0] {
            Event::AgentEgressRefused {
                round_num: 4,
                layer,
                count: 3,
                key,
                port: 4010,
                ..
            } => assert_eq!(
                (layer.as_str(), key.as_str()),
                ("landlock", "agent.sandbox.connect_ports")
            ),
            other => panic!("{other:?}"),
        }
        assert!(EgressTally::default().events(1).is_empty());
    }
}
