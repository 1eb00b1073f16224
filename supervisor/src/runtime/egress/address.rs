//! Which addresses a *name* in `[agent.sandbox] allow_hosts` may not lead to
//! (docs/security.md, "Egress by host name", "Never back into the machine by a name").
//!
//! The egress proxy runs in the supervisor, on the machine's network: a listed domain whose
//! DNS points at `127.0.0.1`, at the machine's own interface address or at the cloud
//! metadata service would make it the agent's deputy into the machine. An entry written as
//! an address or `localhost` (with its port) is the operator's explicit choice and is not
//! judged here; a name is refused when **any** address it resolves to is in a class below,
//! the embedded IPv4 address of an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
//! (`::a.b.c.d`) or NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`) address judged as itself.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is closed to a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Closed {
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// An address of one of this machine's interfaces.
    ThisMachine,
    /// `169.254.0.0/16`, `fe80::/10`.
    LinkLocal,
    /// `224.0.0.0/4`, `255.255.255.255`, `ff00::/8`.
    Multicast,
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// A cloud provider's instance-metadata service ([`METADATA`]).
    Metadata,
    /// `10/8`, `172.16/12`, `192.168/16`, `100.64/10` (shared), `fc00::/7`, `fec0::/10`:
    /// closed unless the entry says `private`.
    Private,
}

impl Closed {
    /// The class in words, for the refusal and the event's `reason`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Closed::Loopback => "loopback",
            Closed::ThisMachine => "this_machine",
            Closed::LinkLocal => "link_local",
            Closed::Multicast => "multicast",
            Closed::Unspecified => "unspecified",
            Closed::Metadata => "cloud_metadata",
            Closed::Private => "private",
        }
    }
}

/// Instance-metadata addresses closed to names whatever the entry says (AWS, Azure, GCP,
/// OpenStack and Oracle `169.254.169.254`; AWS ECS `169.254.170.2`; AWS IPv6
/// `fd00:ec2::254`; Alibaba `100.100.100.200`; Oracle `192.0.0.192`).
pub(crate) const METADATA: [IpAddr; 5] = [
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 2)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V4(Ipv4Addr::new(192, 0, 0, 192)),
];

/// The IPv4 address an IPv6 address carries as IPv4-mapped, IPv4-compatible (not `::`,
/// `::1`) or NAT64, if any.
pub(crate) fn embedded_v4(ip: &Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(tail),
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(tail),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail),
        [0x64, 0xff9b, 1, _, _, _, _, _] => Some(tail),
        _ => None,
    }
}

/// Whether a name may lead to `ip`: `None` when it may, else the class that closes it.
/// `own` is this machine's interface addresses ([`own_addresses`]); `private` whether the
/// entry opened private ranges (a loopback, own, link-local, multicast, unspecified or
/// metadata address stays closed).
pub(crate) fn closed(ip: IpAddr, own: &[IpAddr], private: bool) -> Option<Closed> {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => embedded_v4(&v6),
    };
    let never = if METADATA.contains(&ip) || v4.is_some_and(|v| METADATA.contains(&v.into())) {
        Some(Closed::Metadata)
    } else if own.contains(&ip) || v4.is_some_and(|v| own.contains(&v.into())) {
        Some(Closed::ThisMachine)
    } else {
        match (v4, ip) {
            (Some(v), _) => v4_class(v),
            (None, IpAddr::V6(v6)) => v6_class(v6),
            (None, IpAddr::V4(_)) => unreachable!("an IPv4 address is its own v4"),
        }
    };
    never.filter(|c| !(private && *c == Closed::Private))
}

fn v4_class(v: Ipv4Addr) -> Option<Closed> {
    let [a, b, ..] = v.octets();
    if v.is_loopback() {
        Some(Closed::Loopback)
    } else if a == 0 {
        Some(Closed::Unspecified)
    } else if v.is_link_local() {
        Some(Closed::LinkLocal)
    } else if v.is_multicast() || v.is_broadcast() {
        Some(Closed::Multicast)
    } else if v.is_private() || (a == 100 && (64..128).contains(&b)) {
        Some(Closed::Private)
    } else {
        None
    }
}

fn v6_class(v: Ipv6Addr) -> Option<Closed> {
    let first = v.segments()[0];
    if v.is_loopback() {
        Some(Closed::Loopback)
    } else if v.is_unspecified() {
        Some(Closed::Unspecified)
    } else if first & 0xffc0 == 0xfe80 {
        Some(Closed::LinkLocal)
    } else if v.is_multicast() {
        Some(Closed::Multicast)
    } else if first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfec0 {
        Some(Closed::Private)
    } else {
        None
    }
}

/// The addresses of this machine's interfaces (`getifaddrs(3)`), in the supervisor's
/// network namespace (the proxy's). Empty when they cannot be read: loopback and the
/// other classes are still closed by their ranges.
pub(crate) fn own_addresses() -> Vec<IpAddr> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list it allocated into `head`; freed below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut at = head;
    while !at.is_null() {
        // SAFETY: `at` is a node of the list getifaddrs returned, alive until freeifaddrs.
        let ifa = unsafe { &*at };
        if !ifa.ifa_addr.is_null() {
            // SAFETY: ifa_addr is non-null and points at a sockaddr, alive until
            // freeifaddrs.
            match unsafe { (*ifa.ifa_addr).sa_family } as i32 {
                libc::AF_INET => {
                    // SAFETY: a sockaddr of family AF_INET is a sockaddr_in.
                    let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                    out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                        sin.sin_addr.s_addr,
                    ))));
                }
                libc::AF_INET6 => {
                    // SAFETY: a sockaddr of family AF_INET6 is a sockaddr_in6.
                    let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                    out.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
                }
                _ => {}
            }
        }
        at = ifa.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_in_every_form_is_closed() {
        for a in [
            "127.0.0.1",
            "127.8.9.10",
            "::1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::7f00:1",
        ] {
            assert_eq!(closed(ip(a), &[], true), Some(Closed::Loopback), "{a}");
        }
    }

    #[test]
    fn each_class_is_named_and_public_addresses_pass() {
        let own = [ip("203.0.113.7"), ip("2001:db8::7")];
        for (a, class) in [
            ("203.0.113.7", Closed::ThisMachine),
            ("::ffff:203.0.113.7", Closed::ThisMachine),
            ("2001:db8::7", Closed::ThisMachine),
            ("169.254.1.2", Closed::LinkLocal),
            ("fe80::1", Closed::LinkLocal),
            ("::ffff:169.254.1.2", Closed::LinkLocal),
            ("224.0.0.1", Closed::Multicast),
            ("255.255.255.255", Closed::Multicast),
            ("ff02::1", Closed::Multicast),
            ("0.0.0.0", Closed::Unspecified),
            ("0.1.2.3", Closed::Unspecified),
            ("::", Closed::Unspecified),
            ("169.254.169.254", Closed::Metadata),
            ("::ffff:169.254.169.254", Closed::Metadata),
            ("fd00:ec2::254", Closed::Metadata),
            ("100.100.100.200", Closed::Metadata),
            ("10.1.2.3", Closed::Private),
            ("172.16.0.1", Closed::Private),
            ("192.168.1.1", Closed::Private),
            ("100.64.0.1", Closed::Private),
            ("fd12::1", Closed::Private),
            ("64:ff9b::a01:203", Closed::Private),
        ] {
            assert_eq!(closed(ip(a), &own, false), Some(class), "{a}");
        }
        // The controls: public addresses, and ranges next to the closed ones.
        for a in [
            "93.184.216.34",
            "2606:4700::1111",
            "172.32.0.1",
            "100.128.0.1",
            "::ffff:93.184.216.34",
            "64:ff9b::5db8:d822",
            "203.0.113.8",
        ] {
            assert_eq!(closed(ip(a), &own, false), None, "{a}");
        }
    }

    #[test]
    fn private_opens_private_ranges_only() {
        assert_eq!(closed(ip("10.1.2.3"), &[], true), None);
        assert_eq!(closed(ip("fd12::1"), &[], true), None);
        for a in ["127.0.0.1", "169.254.169.254", "fd00:ec2::254", "fe80::1"] {
            assert!(closed(ip(a), &[], true).is_some(), "{a}");
        }
        let own = [ip("10.0.0.5")];
        assert_eq!(
            closed(ip("10.0.0.5"), &own, true),
            Some(Closed::ThisMachine)
        );
    }

    #[test]
    fn this_machine_has_addresses_and_loopback_among_them() {
        let own = own_addresses();
        assert!(own.contains(&ip("127.0.0.1")), "{own:?}");
    }
}
