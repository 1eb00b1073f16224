//! Which [`ErrorKind`] a piece of agent output shows (docs/detectors.md "Kinds"). The
//! patterns are ours, written from the CLIs' documented error messages; the first kind in
//! [`ORDER`] whose pattern matches wins (a login problem outranks a usage limit, which
//! outranks a plain 429; a failed connection outranks the "servers are down or
//! overloaded" explanation aider prints under every connection error).

use agent_runner_protocol::ErrorKind;
use regex::Regex;
use std::sync::LazyLock;

/// Kinds in the order they are tried.
pub(crate) const ORDER: [ErrorKind; 5] = [
    ErrorKind::Auth,
    ErrorKind::UsageLimit,
    ErrorKind::RateLimit,
    ErrorKind::Network,
    ErrorKind::Overloaded,
];

fn pattern(kind: ErrorKind) -> &'static Regex {
    static AUTH: LazyLock<Regex> = LazyLock::new(|| {
        compile(concat!(
            r"invalid (?:x-)?api[ _-]?key|api key not valid|incorrect api key|authentication[_ ](?:error|failed)|",
            r"authenticationerror|\bunauthori[sz]ed\b|\b401\b|please run /login|run `?(?:claude|codex|kimi|pi|codewhale) (?:/)?login|",
            r"not logged in|please log ?in|login required|(?:oauth )?token (?:has )?expired|",
            r"credentials? (?:are |is )?(?:missing|invalid|expired)|no api key|api key (?:is )?(?:missing|not set|not found)|",
            r"set an auth method|invalid auth method"
        ))
    });
    static USAGE: LazyLock<Regex> = LazyLock::new(|| {
        compile(concat!(
            r"usage limit|(?:5-hour|weekly|daily|session|opus) limit reached|hit your (?:usage )?limit|quota exceeded|exceeded your (?:current )?quota|",
            r"exhausted your (?:daily )?quota|insufficient_quota|exceeded_current_quota|insufficient balance|",
            r"\b402\b|payment required|out of credits|credit balance is too low"
        ))
    });
    static RATE: LazyLock<Regex> = LazyLock::new(|| {
        compile(r"\b429\b|rate[ _-]?limit|too many requests|ratelimiterror|resource_exhausted")
    });
    static OVERLOADED: LazyLock<Regex> = LazyLock::new(|| {
        compile(r"\b529\b|overloaded|\b503\b|service unavailable|server is busy|at capacity")
    });
    static NETWORK: LazyLock<Regex> = LazyLock::new(|| {
        compile(concat!(
            r"econnrefused|econnreset|enotfound|etimedout|eai_again|getaddrinfo|fetch failed|",
            r"network error|connection (?:refused|reset|error|timed out)|could not resolve host|",
            r"apiconnectionerror|socket hang up|temporary failure in name resolution|network is unreachable|",
            r"connectionrefused|unable to connect|waiting for network|error sending request"
        ))
    });
    match kind {
        ErrorKind::Auth => &AUTH,
        ErrorKind::UsageLimit => &USAGE,
        ErrorKind::RateLimit => &RATE,
        ErrorKind::Overloaded => &OVERLOADED,
        ErrorKind::Network | ErrorKind::Other => &NETWORK,
    }
}

/// Case-insensitive, and a space in a pattern matches any run of white space: a CLI that
/// wraps its lines (aider, at 80 columns) may break a phrase anywhere.
fn compile(source: &str) -> Regex {
    let source = source.replace(' ', r"\s+");
    Regex::new(&format!("(?i){source}")).expect("built-in detector pattern compiles")
}

/// A kind found in a text, with the line it was found on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found<'t> {
    /// The diagnosis.
    pub kind: ErrorKind,
    /// The lines of `text` holding the match (trimmed; more than one when the CLI wrapped
    /// the matched phrase).
    pub line: &'t str,
}

/// The highest-ranked kind `text` shows; `extra_auth` (`[monitor] auth_fail_patterns`)
/// count as auth patterns.
pub(crate) fn classify<'t>(text: &'t str, extra_auth: &[Regex]) -> Option<Found<'t>> {
    for kind in ORDER {
        let hit = pattern(kind).find(text).or_else(|| {
            (kind == ErrorKind::Auth)
                .then(|| extra_auth.iter().find_map(|re| re.find(text)))
                .flatten()
        });
        if let Some(hit) = hit {
            return Some(Found {
                kind,
                line: lines_around(text, hit.start(), hit.end()),
            });
        }
    }
    None
}

fn lines_around(text: &str, from: usize, to: usize) -> &str {
    let start = text[..from].rfind('\n').map_or(0, |i| i + 1);
    let end = text[to..].find('\n').map_or(text.len(), |i| to + i);
    text[start..end].trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_kinds() {
        let kind = |t: &str| classify(t, &[]).map(|f| f.kind);
        assert_eq!(
            kind("Invalid API key · Please run /login"),
            Some(ErrorKind::Auth)
        );
        assert_eq!(
            kind("Claude AI usage limit reached|1764478800"),
            Some(ErrorKind::UsageLimit)
        );
        assert_eq!(
            kind("status 429 Too Many Requests"),
            Some(ErrorKind::RateLimit)
        );
        assert_eq!(
            kind("API Error: 529 Overloaded"),
            Some(ErrorKind::Overloaded)
        );
        assert_eq!(kind("TypeError: fetch failed"), Some(ErrorKind::Network));
        assert_eq!(kind("all good, 4290 tests passed"), None);
        let extra = [Regex::new("(?i)session gone").unwrap()];
        let found = classify("ok\nyour session gone, sorry\nbye", &extra).unwrap();
        assert_eq!(
            (found.kind, found.line),
            (ErrorKind::Auth, "your session gone, sorry")
        );
    }
}
