//! `[agent.sandbox] allow_hosts`: the host names the agent may reach through the egress
//! proxy (`crate::runtime::egress::proxy`), and each preset's defaults.
//!
//! An entry is one of (docs/security.md, "Egress by host name"):
//! - `name` — exactly that host name (any port), e.g. `api.anthropic.com`;
//! - `*.domain` — any name *below* `domain` (`a.domain`, `a.b.domain`), not `domain` itself;
//! - an IP literal (`127.0.0.2`, `[::1]`): a client naming that address;
//! - any of these followed by `:port`: that port only;
//! - a name or `*.domain` followed by the word `private` (`"git.corp.example:443 private"`):
//!   the name may resolve to a private address (`10/8`, `172.16/12`, `192.168/16`,
//!   `100.64/10`, `fc00::/7`), which a name may not otherwise.
//!
//! Names compare without case and without a trailing dot. The proxy matches the name the
//! agent asked for (the `CONNECT` target or the absolute URI's host), before resolving it.
//! An entry naming this machine — a loopback address or `localhost` — must give its port:
//! a local endpoint opens exactly that address and port (`127.0.0.1:4010`,
//! `localhost:4010`). A *name* never leads back into the machine
//! (`crate::runtime::egress::address`).

/// Why an `allow_hosts` entry was refused. Display names the entry in backticks and says
/// what a good one looks like; the config layer puts it after the key `agent.sandbox.allow_hosts`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadHostPattern {
    /// Neither a host name, `*.domain`, nor an IP address.
    #[error("`{0}` is not a host name, `*.domain`, or an IP address (optionally with `:port`)")]
    NotAHost(String),
    /// `*.` before an address or a name without a dot (`*.com`, `*.127.0.0.1`).
    #[error(
        "`{0}`: `*.` takes a domain with at least one dot, not an address or a top-level name"
    )]
    SuffixOfNoDomain(String),
    /// `:port` that is not a number from 1 to 65535.
    #[error("`{0}`: the port must be a number from 1 to 65535")]
    BadPort(String),
    /// A loopback address or `localhost` without `:port`.
    #[error("`{0}`: an entry for this machine opens one port: write it with `:port` (`127.0.0.1:4010`, `localhost:4010`)")]
    LocalWithoutPort(String),
    /// `private` after an address (an address opens exactly itself).
    #[error("`{0}`: `private` follows a name or `*.domain`, not an address")]
    PrivateOfAddress(String),
    /// `[` opening an IPv6 literal with no `]`.
    #[error("`{0}`: `[` without `]`")]
    UnclosedBracket(String),
    /// Something other than `:port` after an IPv6 literal's `]`: the entry and the rest.
    #[error("`{0}`: unexpected `{1}` after `]`")]
    AfterBracket(String, String),
}

/// One parsed entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPattern {
    /// Lower case, no trailing dot; for a suffix pattern the domain without `*.`; an IPv6
    /// literal without brackets.
    name: String,
    /// `*.domain`.
    suffix: bool,
    /// `:port`, or any port.
    port: Option<u16>,
    /// The word `private`: the name may resolve to a private address.
    private: bool,
}

/// The parsed `allow_hosts` list. Empty: the agent reaches nothing outside its network
/// namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowHosts {
    patterns: Vec<HostPattern>,
}

/// The hosts each preset CLI talks to for its model and its login, written by `init` into a
/// new project's `allow_hosts` (operators add more). From each CLI's documentation of its
/// endpoints (docs/agent-clis.md, "Network").
pub(crate) fn preset_hosts(preset: &str) -> &'static [&'static str] {
    match preset {
        // The Messages API, and the OAuth token endpoints of a subscription login.
        "claude" => &[
            "api.anthropic.com",
            "console.anthropic.com",
            "claude.ai",
            "platform.claude.com",
        ],
        // The Responses API with an API key; chatgpt.com's backend and auth.openai.com for a
        // ChatGPT login.
        "codex" => &["api.openai.com", "chatgpt.com", "auth.openai.com"],
        // Gemini API key; the Code Assist endpoint and Google's OAuth for a Google login.
        "gemini" => &[
            "generativelanguage.googleapis.com",
            "cloudcode-pa.googleapis.com",
            "oauth2.googleapis.com",
        ],
        // aider speaks to whichever provider its model names: the common ones.
        "aider" => &[
            "api.openai.com",
            "api.anthropic.com",
            "generativelanguage.googleapis.com",
            "openrouter.ai",
            "api.deepseek.com",
        ],
        // Kimi CLI: Moonshot's platform API (international and China), the Kimi For Coding
        // API and its login (the endpoints in kimi-cli 1.50.0's package).
        "kimi" => &[
            "api.moonshot.ai",
            "api.moonshot.cn",
            "api.kimi.com",
            "auth.kimi.com",
        ],
        // pi speaks to whichever provider its model names (its pi-ai library): the common
        // ones, and the OAuth endpoints of an Anthropic or OpenAI subscription login.
        "pi" => &[
            "api.anthropic.com",
            "console.anthropic.com",
            "api.openai.com",
            "auth.openai.com",
            "generativelanguage.googleapis.com",
            "openrouter.ai",
        ],
        _ => &[],
    }
}

impl HostPattern {
    /// Parses one entry.
    ///
    /// Errors: [`BadHostPattern`], what is wrong with it.
    pub(crate) fn parse(entry: &str) -> Result<HostPattern, BadHostPattern> {
        let entry = entry.trim();
        let (host_part, private) = match entry.split_once(char::is_whitespace) {
            Some((host, word)) if word.trim() == "private" => (host, true),
            Some(_) => return Err(BadHostPattern::NotAHost(entry.to_owned())),
            None => (entry, false),
        };
        let (suffix, rest) = match host_part.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host_part),
        };
        let (host, port) = split_host_port(rest)?;
        let name = normalize(host).ok_or_else(|| BadHostPattern::NotAHost(entry.to_owned()))?;
        if suffix && (name.parse::<std::net::IpAddr>().is_ok() || !name.contains('.')) {
            return Err(BadHostPattern::SuffixOfNoDomain(entry.to_owned()));
        }
        let address = name.parse::<std::net::IpAddr>().ok();
        if private && address.is_some() {
            return Err(BadHostPattern::PrivateOfAddress(entry.to_owned()));
        }
        let local = name == "localhost" || address.is_some_and(|a| a.is_loopback());
        if local && port.is_none() {
            return Err(BadHostPattern::LocalWithoutPort(entry.to_owned()));
        }
        Ok(HostPattern {
            name,
            suffix,
            port,
            private,
        })
    }

    /// Whether the entry opens private addresses for the names it matches.
    pub(crate) fn private(&self) -> bool {
        self.private
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        if self.suffix {
            host.strip_suffix(self.name.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
        } else {
            host == self.name
        }
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let star = if self.suffix { "*." } else { "" };
        let name = if self.name.contains(':') {
            format!("[{}]", self.name)
        } else {
            self.name.clone()
        };
        match self.port {
            Some(p) => write!(f, "{star}{name}:{p}")?,
            None => write!(f, "{star}{name}")?,
        }
        if self.private {
            f.write_str(" private")?;
        }
        Ok(())
    }
}

impl AllowHosts {
    /// Parses every entry.
    ///
    /// Errors: [`BadHostPattern`] of the first bad one.
    pub(crate) fn parse<S: AsRef<str>>(entries: &[S]) -> Result<AllowHosts, BadHostPattern> {
        let patterns = entries
            .iter()
            .map(|e| HostPattern::parse(e.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AllowHosts { patterns })
    }

    /// The first entry that lets a client asking for `host` (as the client spelled it: a
    /// name, an IP literal, an IPv6 literal with or without brackets) on `port` pass, if any.
    pub(crate) fn find(&self, host: &str, port: u16) -> Option<&HostPattern> {
        let host = normalize(host)?;
        self.patterns.iter().find(|p| p.matches(&host, port))
    }

    /// Whether an entry names a loopback address or `localhost` (a local endpoint, reached
    /// through the proxy: `crate::runtime::egress::proxy::agent_env`).
    pub(crate) fn names_this_machine(&self) -> bool {
        self.patterns.iter().any(|p| {
            p.name == "localhost"
                || p.name
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|a| a.is_loopback())
        })
    }
}

/// `host[:port]` or `[v6][:port]` → (host, port).
fn split_host_port(s: &str) -> Result<(&str, Option<u16>), BadHostPattern> {
    let bad_port = || BadHostPattern::BadPort(s.to_owned());
    if let Some(rest) = s.strip_prefix('[') {
        let (host, tail) = rest
            .split_once(']')
            .ok_or_else(|| BadHostPattern::UnclosedBracket(s.to_owned()))?;
        return match tail.strip_prefix(':') {
            Some(p) => Ok((host, Some(parse_port(p).ok_or_else(bad_port)?))),
            None if tail.is_empty() => Ok((host, None)),
            None => Err(BadHostPattern::AfterBracket(s.to_owned(), tail.to_owned())),
        };
    }
    match s.rsplit_once(':') {
        // A bare IPv6 literal has several colons and no port.
        Some((host, _)) if host.contains(':') => Ok((s, None)),
        Some((host, p)) => Ok((host, Some(parse_port(p).ok_or_else(bad_port)?))),
        None => Ok((s, None)),
    }
}

fn parse_port(p: &str) -> Option<u16> {
    p.parse::<u16>().ok().filter(|p| *p != 0)
}

/// Lower case, no trailing dot, brackets off an IPv6 literal; `None` unless it is an IP
/// address or a DNS name of letters, digits, `-`, `_` and dots (labels 1–63, total ≤ 253).
pub(crate) fn normalize(host: &str) -> Option<String> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Some(ip.to_string());
    }
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let ok = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    ok.then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(entries: &[&str]) -> AllowHosts {
        AllowHosts::parse(entries).unwrap()
    }

    impl AllowHosts {
        fn allows(&self, host: &str, port: u16) -> bool {
            self.find(host, port).is_some()
        }
    }

    #[test]
    fn exact_names_match_without_case_or_trailing_dot_on_any_port() {
        let a = allow(&["api.anthropic.com"]);
        assert!(a.allows("api.anthropic.com", 443));
        assert!(a.allows("API.Anthropic.COM.", 80));
        assert!(!a.allows("anthropic.com", 443));
        assert!(!a.allows("evil.api.anthropic.com", 443));
        assert!(!a.allows("api.anthropic.com.evil.net", 443));
    }

    #[test]
    fn suffix_patterns_match_names_below_the_domain_only() {
        let a = allow(&["*.googleapis.com"]);
        assert!(a.allows("oauth2.googleapis.com", 443));
        assert!(a.allows("a.b.googleapis.com", 443));
        assert!(!a.allows("googleapis.com", 443));
        assert!(!a.allows("evilgoogleapis.com", 443));
        assert!(!a.allows("googleapis.com.evil.net", 443));
    }

    #[test]
    fn a_port_restricts_the_entry_to_it() {
        let a = allow(&[
            "example.org:8443",
            "127.0.0.2:9000",
            "[::1]:99",
            "localhost:4010",
        ]);
        assert!(a.allows("example.org", 8443));
        assert!(!a.allows("example.org", 443));
        assert!(a.allows("127.0.0.2", 9000));
        assert!(!a.allows("127.0.0.2", 9001));
        assert!(a.allows("[::1]", 99));
        assert!(a.allows("::1", 99));
        let shown: Vec<String> = a.patterns.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            shown,
            [
                "example.org:8443",
                "127.0.0.2:9000",
                "[::1]:99",
                "localhost:4010"
            ]
        );
        assert!(a.allows("localhost", 4010) && !a.allows("localhost", 4011));
        assert!(a.names_this_machine());
        assert!(!allow(&["10.0.0.1", "example.org"]).names_this_machine());
    }

    #[test]
    fn local_entries_need_their_port_and_private_takes_a_name() {
        for bad in ["127.0.0.1", "localhost", "[::1]", "127.0.0.2"] {
            let e = AllowHosts::parse(&[bad]).unwrap_err();
            assert_eq!(e, BadHostPattern::LocalWithoutPort(bad.to_owned()));
        }
        for bad in ["10.0.0.1 private", "127.0.0.1:80 private"] {
            let e = AllowHosts::parse(&[bad]).unwrap_err();
            assert_eq!(e, BadHostPattern::PrivateOfAddress(bad.to_owned()));
        }
        assert!(AllowHosts::parse(&["git.corp private please"]).is_err());
        let a = allow(&[
            "git.corp.example:443 private",
            "*.intra.example private",
            "pub.example",
        ]);
        assert!(a.find("git.corp.example", 443).unwrap().private());
        assert!(a.find("x.intra.example", 80).unwrap().private());
        assert!(!a.find("pub.example", 80).unwrap().private());
        assert_eq!(
            a.find("x.intra.example", 80).unwrap().to_string(),
            "*.intra.example private"
        );
    }

    #[test]
    fn bad_entries_are_refused_with_the_entry_named() {
        for bad in [
            "",
            "*.com",
            "*.127.0.0.1",
            "a b",
            "host:0",
            "host:x",
            "[::1",
            "ex@mple.com",
            "*",
        ] {
            let e = AllowHosts::parse(&[bad]).unwrap_err().to_string();
            assert!(e.contains('`'), "{bad}: {e}");
        }
    }

    #[test]
    fn nothing_is_allowed_by_an_empty_list_and_junk_never_matches() {
        assert!(!AllowHosts::default().allows("api.anthropic.com", 443));
        assert!(!allow(&["*.example.org"]).allows("x y.example.org", 443));
    }

    #[test]
    fn every_preset_default_parses() {
        for preset in ["claude", "codex", "gemini", "aider"] {
            let hosts = preset_hosts(preset);
            assert!(!hosts.is_empty(), "{preset}");
            AllowHosts::parse(hosts).unwrap();
        }
    }
}
