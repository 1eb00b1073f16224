//! `[notify]` and `[[notify.webhooks]]`: the one place their keys are read, checked and
//! given defaults (docs/configuration.md, "[notify]"), and the one parser of a webhook's
//! URL ([`parse_url`]), which the sender (`crate::runtime::outward::notify`) uses too. What is sent,
//! when and how is docs/operations.md, "Notifications".
//!
//! A webhook's URL is a secret (a chat webhook's path is its key) and this file is one the
//! agent can read: `url_env` names a variable of `serve`'s environment that holds it; `url`
//! is for URLs that hold no secret. No message built here shows a URL or a variable's value.

use serde::Deserialize;
use std::time::Duration;

use super::keys::config_table;
use super::vocabulary::NotifyFormat;

/// The largest `[notify] flush_s`: the exit waits for it (a unit's stop timeout is longer).
pub(crate) const MAX_FLUSH_S: u64 = 30;

config_table! {
    /// `[notify]` as serde sees it.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawNotify = "notify" {
        /// at exit, how long `serve` waits for notifications still queued or being sent
        /// (those it gives up on are recorded as `notify_failed`)
        flush_s: u64 = (5) range(1..=MAX_FLUSH_S) reload Next into (flush: Duration = secs);
        @sub webhooks: Vec<RawWebhook>;
    }
    => /// `[notify]`, resolved: no webhooks, nothing is sent.
    #[derive(Clone, Debug, PartialEq)]
    pub struct NotifyConfig by NotifyHand {
        /// The webhooks (`[[notify.webhooks]]`), in file order.
        webhooks: Vec<Webhook>,
    }
}

config_table! {
    /// One `[[notify.webhooks]]` entry as serde sees it (its keys are table
    /// `notify.webhooks`).
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawWebhook = "notify.webhooks" {
        /// what `notify_failed` and `doctor` call the entry
        name: String = (computed "`notify.webhooks[<index>]`") reload Next;
        /// the environment variable of `serve` that holds the URL (the usual way: the URL
        /// is a secret and this file is readable by the agent). Unset or empty when
        /// `serve` starts: exit 78 naming it. The agent's environment must not pass it
        url_env: String = (none) label "variable name" reload Next;
        /// the URL itself, for one that holds no secret (`doctor` warns); exactly one of
        /// `url_env` and `url`
        url: String = (none) label "`http://` or `https://` URL" reload Next;
        /// the event kinds sent (docs/operations.md, "Event kinds"); `notify_failed` cannot
        /// be one
        events: Vec<String> = (computed "`serve` stopped (any reason but `max_rounds`), a login needed, budget exhausted or paused, crash loop, goal reached: docs/operations.md \"Notifications\"") label "list of event kinds" reload Next;
        /// `"event"`: the event's JSON line as the record has it; `"chat"`: a
        /// Slack-compatible `{"text": "…"}` with a sentence for people
        format: String as NotifyFormat = (NotifyFormat::Event) reload Next;
    }
}

impl Default for NotifyConfig {
    /// Every key's default, no webhooks.
    fn default() -> Self {
        RawNotify::default()
            .resolve_with(NotifyHand {
                webhooks: Vec::new(),
            })
            .expect("the defined defaults are in range")
    }
}

/// One `[[notify.webhooks]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Webhook {
    /// Its index in the file (0-based).
    pub index: usize,
    /// `name`, if given.
    pub name: Option<String>,
    /// Where its URL comes from.
    pub url: UrlSource,
    /// `events`; `None`: the default set (`crate::runtime::outward::notify::DEFAULT_EVENTS`).
    pub events: Option<Vec<String>>,
    /// `format`.
    pub format: NotifyFormat,
}

impl Webhook {
    /// How events and messages name the entry: its `name`, else `notify.webhooks[<i>]`.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("notify.webhooks[{}]", self.index))
    }

    /// The variable holding its URL (`url_env`); `None` for a literal `url`.
    pub fn url_env(&self) -> Option<&str> {
        match &self.url {
            UrlSource::Env(name) => Some(name),
            UrlSource::Literal(_) => None,
        }
    }
}

/// Where a webhook's URL comes from.
#[derive(Clone, PartialEq)]
pub enum UrlSource {
    /// `url_env`: this variable of `serve`'s environment.
    Env(String),
    /// `url`: the URL as written (checked by [`parse_url`]).
    Literal(String),
}

impl std::fmt::Debug for UrlSource {
    /// The variable's name, never a URL.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlSource::Env(name) => write!(f, "Env({name:?})"),
            UrlSource::Literal(_) => f.write_str("Literal(<not shown>)"),
        }
    }
}

/// A webhook URL taken apart: what a request needs. Its `Debug` shows no part of it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ParsedUrl {
    /// `https`.
    pub tls: bool,
    /// The host: a name, or an address (IPv6 without brackets).
    pub host: String,
    /// The port (80 or 443 unless given).
    pub port: u16,
    /// The path and query (`/` when none), the fragment dropped.
    pub path: String,
}

impl std::fmt::Debug for ParsedUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ParsedUrl(<not shown>)")
    }
}

/// Takes a webhook URL apart: `http://` or `https://`, a host, an optional port, a path.
/// Credentials in the URL (`user:pass@`) are refused: a token belongs in the path or
/// query, where the receiver expects it.
///
/// Errors: what is wrong, in words that quote no part of the URL.
pub(crate) fn parse_url(url: &str) -> Result<ParsedUrl, &'static str> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it holds a space or a control character");
    }
    let (scheme, rest) = url
        .split_once("://")
        .ok_or("expected an http:// or https:// URL")?;
    let tls = if scheme.eq_ignore_ascii_case("https") {
        true
    } else if scheme.eq_ignore_ascii_case("http") {
        false
    } else {
        return Err("expected an http:// or https:// URL");
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    if authority.contains('@') {
        return Err("credentials in the URL (user:password@) are not supported; put the token in the path or query");
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6.split_once(']').ok_or("`[` without `]` in the host")?;
        (h, tail.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("the URL has no host");
    }
    let port = match port {
        None => {
            if tls {
                443
            } else {
                80
            }
        }
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or("the port must be 1..=65535")?,
    };
    let path = match path {
        "" => "/".to_owned(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_owned(),
    };
    Ok(ParsedUrl {
        tls,
        host: host.to_owned(),
        port,
        path,
    })
}

/// Checks `[notify]` (absent: no webhooks). The event kinds are checked where the record's
/// kinds are known (`crate::runtime::outward::notify::Targets::resolve`, at `serve`'s start, at each
/// re-read and by `doctor`), as is `url_env`'s variable.
///
/// Errors: `(dotted key, what was expected)`; never quoting a URL.
pub(super) fn resolve(raw: Option<RawNotify>) -> Result<NotifyConfig, (String, String)> {
    let Some(mut raw) = raw else {
        return Ok(NotifyConfig::default());
    };
    // Checked before the webhooks: the first bad key is the one reported.
    raw.flush_s()?;
    let mut webhooks = Vec::with_capacity(raw.webhooks.len());
    for (index, hook) in std::mem::take(&mut raw.webhooks).into_iter().enumerate() {
        let key = |k: &str| format!("notify.webhooks[{index}].{k}");
        let at = |(k, m): (String, String)| (key(k.trim_start_matches("notify.webhooks.")), m);
        let name = hook.name().map_err(at)?;
        let events = hook.events().map_err(at)?;
        let format = hook.format().map_err(at)?;
        if name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err((key("name"), "expected a non-empty name".into()));
        }
        let url = match (hook.url_env, hook.url) {
            (Some(_), Some(_)) => {
                return Err((
                    key("url"),
                    "expected one of `url_env` and `url`, not both (`url_env` is the usual way: the URL is a secret)".into(),
                ))
            }
            (None, None) => {
                return Err((
                    key("url_env"),
                    "expected the name of the environment variable holding the webhook's URL (or `url` for a URL that holds no secret)".into(),
                ))
            }
            (Some(name), None) => {
                if name.is_empty() || name.contains(['=', '\0']) || name.chars().any(char::is_whitespace) {
                    return Err((
                        key("url_env"),
                        "expected a variable name (no `=`, space or NUL), e.g. \"AGENT_RUNNER_WEBHOOK_URL\"".into(),
                    ));
                }
                UrlSource::Env(name)
            }
            (None, Some(url)) => {
                parse_url(&url).map_err(|why| {
                    (
                        key("url"),
                        format!("not a usable webhook URL: {why} (the value is not shown)"),
                    )
                })?;
                UrlSource::Literal(url)
            }
        };
        if let Some(events) = &events {
            if events.is_empty() {
                return Err((
                    key("events"),
                    "expected at least one event kind (leave the key out for the default set)"
                        .into(),
                ));
            }
        }
        webhooks.push(Webhook {
            index,
            name,
            url,
            events,
            format,
        });
    }
    raw.resolve_with(NotifyHand { webhooks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_taken_apart_and_bad_ones_refused_without_quoting_them() {
        let u = parse_url("https://hooks.example.org/services/T0/B0/XyZ?x=1#frag").unwrap();
        assert!(u.tls);
        assert_eq!((u.host.as_str(), u.port), ("hooks.example.org", 443));
        assert_eq!(u.path, "/services/T0/B0/XyZ?x=1");
        let u = parse_url("HTTP://127.0.0.1:8080").unwrap();
        assert!(!u.tls);
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8080, "/")
        );
        let u = parse_url("http://[::1]:9/t?k").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("::1", 9, "/t?k")
        );
        assert_eq!(parse_url("http://h?k=v").unwrap().path, "/?k=v");
        for (bad, secret) in [
            ("ftp://h/secret123", "secret123"),
            ("hooks.example/secret123", "secret123"),
            ("https://u:secret123@h/", "secret123"),
            ("https://h:0/secret123", "secret123"),
            ("https:///secret123", "secret123"),
            ("https://h/sec ret123", "ret123"),
        ] {
            let why = parse_url(bad).unwrap_err();
            assert!(!why.contains(secret), "{bad}: {why}");
        }
        assert_eq!(
            format!("{:?}", parse_url("https://h/s3cr3t").unwrap()),
            "ParsedUrl(<not shown>)"
        );
        assert!(!format!("{:?}", UrlSource::Literal("https://h/s3cr3t".into())).contains("s3cr3t"));
    }
}
