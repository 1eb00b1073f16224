//! Which [`ErrorKind`] a piece of agent output shows (docs/detectors.md "Kinds"). The
//! patterns are ours, written from the CLIs' documented error messages; the first kind in
//! [`ORDER`] whose pattern matches wins (a login problem outranks a usage limit, which
//! outranks a plain 429; a failed connection outranks the "servers are down or
//! overloaded" explanation aider prints under every connection error). Words inside a path
//! or a file name are not read ([`mask_paths`]): `cat: /tmp/claude-overloaded.log` is the
//! agent's work, not an overload.

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
        compile(concat!(
            r"\b429\b|rate[ _-]?limit|too many requests|ratelimiterror|resource_exhausted|",
            // gemini's retry notices: `Attempt 1 failed: Resource has been exhausted (e.g.
            // check quota). Please retry in 10s.` (the 429 comes only after its last try)
            r"resource has been exhausted|retryablequotaerror"
        ))
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

/// The highest-ranked kind `text` shows, paths and file names left out ([`mask_paths`]);
/// `extra_auth` (`[monitor] auth_fail_patterns`) count as auth patterns.
pub(crate) fn classify<'t>(text: &'t str, extra_auth: &[Regex]) -> Option<Found<'t>> {
    let masked = mask_paths(text);
    for kind in ORDER {
        let hit = pattern(kind).find(&masked).or_else(|| {
            (kind == ErrorKind::Auth)
                .then(|| extra_auth.iter().find_map(|re| re.find(&masked)))
                .flatten()
        });
        if let Some(hit) = hit {
            return Some(Found {
                kind,
                line: lines_around(text, &masked, hit.start(), hit.end()),
            });
        }
    }
    None
}

/// The lines of `text` holding `from..to` of `masked` (the same bytes but for paths blanked
/// out: line breaks are at the same offsets in both).
fn lines_around<'t>(text: &'t str, masked: &str, from: usize, to: usize) -> &'t str {
    let start = masked[..from].rfind('\n').map_or(0, |i| i + 1);
    let end = masked[to..].find('\n').map_or(text.len(), |i| to + i);
    text[start..end].trim()
}

/// `text` with every byte of each path or file name replaced by a space (so offsets and
/// line breaks stay where they were). A path or file name is a word (a run without white
/// space, stripped of the quotes, brackets and punctuation around it) that holds a `/`
/// past its first character (`/tmp/claude-overloaded.log`, `./out`, `src/rate_limit.rs`,
/// a URL) or ends in a dot and a short lowercase extension (`claude-overloaded.log`).
/// A lone `/word` is a slash command, not a path (`Please run /login`), and
/// `litellm.RateLimitError` is no file name (its "extension" is not short and lowercase).
pub(crate) fn mask_paths(text: &str) -> std::borrow::Cow<'_, str> {
    let mut masked: Option<Vec<u8>> = None;
    let mut offset = 0;
    for word in text.split_inclusive(char::is_whitespace) {
        let start = offset;
        offset += word.len();
        let core = word.trim_matches(|c: char| {
            c.is_whitespace() || "\"'`()[]{}<>,;:!?".contains(c) || c == '.'
        });
        if core.is_empty() || !is_path_like(core) {
            continue;
        }
        let at = start + word.find(core).unwrap_or(0);
        let bytes = masked.get_or_insert_with(|| text.as_bytes().to_vec());
        bytes[at..at + core.len()].fill(b' ');
    }
    match masked {
        // Whole UTF-8 sequences were replaced by ASCII spaces: still UTF-8.
        Some(bytes) => String::from_utf8(bytes)
            .map(std::borrow::Cow::Owned)
            .unwrap_or(std::borrow::Cow::Borrowed(text)),
        None => std::borrow::Cow::Borrowed(text),
    }
}

fn is_path_like(word: &str) -> bool {
    if word.char_indices().any(|(i, c)| c == '/' && i > 0) {
        return true;
    }
    if word.starts_with('/') {
        // `/tmp` is a path as much as `/tmp/x`; `/login` (letters only) is a command.
        return word.matches('/').count() > 1 || word.contains(['.', '-', '_']);
    }
    word.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=4).contains(&ext.len())
            && ext
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && ext.chars().any(|c| c.is_ascii_lowercase())
    })
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
        assert_eq!(
            kind("Attempt 1 failed: Resource has been exhausted (e.g. check quota). Please retry in 10s."),
            Some(ErrorKind::RateLimit)
        );
        let extra = [Regex::new("(?i)session gone").unwrap()];
        let found = classify("ok\nyour session gone, sorry\nbye", &extra).unwrap();
        assert_eq!(
            (found.kind, found.line),
            (ErrorKind::Auth, "your session gone, sorry")
        );
    }

    /// Words inside paths and file names are the agent's work, not the CLI's failure; the
    /// same words outside a path still count (the control).
    #[test]
    fn paths_and_file_names_are_not_read() {
        let kind = |t: &str| classify(t, &[]).map(|f| f.kind);
        for quiet in [
            "cat: /tmp/work/claude-overloaded.log: No such file or directory",
            "cat: claude-overloaded.log: No such file or directory",
            "wrote ./notes/rate_limit.md and src/unauthorized.rs",
            "see https://example.com/docs/429-too-many-requests for details",
            "ls '/srv/logs/econnrefused-2026.txt'",
            "/var/tmp/overloaded",
        ] {
            assert_eq!(kind(quiet), None, "{quiet}");
        }
        assert_eq!(
            kind("API Error: 529 Overloaded."),
            Some(ErrorKind::Overloaded)
        );
        assert_eq!(
            kind("cat: x.log: No such file\nAPI Error: Overloaded"),
            Some(ErrorKind::Overloaded)
        );
        assert_eq!(kind("Please run /login"), Some(ErrorKind::Auth));
        assert_eq!(
            kind("litellm.RateLimitError: AnthropicException"),
            Some(ErrorKind::RateLimit)
        );
        // The line reported is the original one, path and all.
        let found = classify("ok\n/tmp/a.log\tConnection refused (é)\nbye", &[]).unwrap();
        assert_eq!(found.line, "/tmp/a.log\tConnection refused (é)");
    }
}
