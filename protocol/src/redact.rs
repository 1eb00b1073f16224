//! Secret redaction for text a host hands back (`reason`, `ref`, commit messages, error
//! messages, stderr lines): `docs/protocol.md` §7 says the supervisor keeps at most 256
//! characters with secrets redacted.
//!
//! Two rules, applied word by word (a word is a run of non-whitespace):
//! 1. Known credential shapes: words that start with a well-known token prefix
//!    ([`TOKEN_PREFIXES`]) followed by at least 8 more characters, and the word after
//!    `Bearer`.
//! 2. Assignments: `name=value` or `name:value` where `name` contains one of
//!    [`SENSITIVE_NAMES`] (case-insensitive) keeps the name and redacts the value.
//!
//! [`redact_values`] additionally replaces exact known secret values (for example the
//! values of the agent's environment variables) wherever they occur.

use crate::limits::{truncate_chars, MAX_TEXT_CHARS};

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Prefixes of credential formats in common use (OpenAI/Anthropic `sk-`, GitHub `ghp_`…,
/// Slack `xox`, AWS `AKIA`, Google `AIza`, GitLab `glpat-`).
pub const TOKEN_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "AIza",
    "glpat-",
];

/// Substrings of variable names whose values are treated as secrets.
pub const SENSITIVE_NAMES: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "api_key",
    "apikey",
    "credential",
];

/// Shortest exact value [`redact_values`] replaces; shorter values (`1`, `yes`) would
/// shred ordinary text.
pub const MIN_SECRET_VALUE_LEN: usize = 6;

/// Redacts credential-shaped words and sensitive assignments in `text` (rules 1 and 2).
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut after_bearer = false;
    let mut rest = text;
    while !rest.is_empty() {
        let ws_len = rest.len() - rest.trim_start().len();
        out.push_str(&rest[..ws_len]);
        rest = &rest[ws_len..];
        let word_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..word_len];
        rest = &rest[word_len..];
        if word.is_empty() {
            continue;
        }
        if after_bearer {
            out.push_str(REDACTED);
            after_bearer = false;
            continue;
        }
        after_bearer = word.eq_ignore_ascii_case("bearer");
        out.push_str(&redact_word(word));
    }
    out
}

/// Replaces every occurrence of each value in `secrets` (at least
/// [`MIN_SECRET_VALUE_LEN`] bytes long) with [`REDACTED`], then applies [`redact`].
pub fn redact_values(text: &str, secrets: &[&str]) -> String {
    let mut text = text.to_owned();
    for secret in secrets.iter().filter(|s| s.len() >= MIN_SECRET_VALUE_LEN) {
        if text.contains(secret) {
            text = text.replace(secret, REDACTED);
        }
    }
    redact(&text)
}

/// Redacts `text` and keeps at most [`MAX_TEXT_CHARS`] characters of the result: the form
/// in which host-supplied `reason`, `ref` and error messages are recorded.
pub fn redact_and_cap(text: &str) -> String {
    truncate_chars(&redact(text), MAX_TEXT_CHARS).to_owned()
}

fn redact_word(word: &str) -> String {
    let bare = word.trim_start_matches(['"', '\'', '(', '[', '{', '<', '`']);
    if TOKEN_PREFIXES
        .iter()
        .any(|p| bare.starts_with(p) && bare.len() >= p.len() + 8)
    {
        return REDACTED.to_owned();
    }
    if let Some(split) = word.find(['=', ':']) {
        let name = word[..split].to_ascii_lowercase();
        let value = &word[split + 1..];
        if !value.is_empty() && SENSITIVE_NAMES.iter().any(|s| name.contains(s)) {
            return format!("{}{}", &word[..=split], REDACTED);
        }
    }
    word.to_owned()
}

/// Bytes of a host's output shown in a message about it ([`quote`]).
pub const QUOTE_BYTES: usize = 80;

/// `bytes` (a host's stray output) as a short excerpt for a message: the first
/// [`QUOTE_BYTES`] bytes, lossily decoded, redacted, debug-quoted, with `…` when cut.
pub fn quote(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(QUOTE_BYTES)];
    let more = if bytes.len() > QUOTE_BYTES { "…" } else { "" };
    format!("{:?}{more}", redact(&String::from_utf8_lossy(head)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_token_shapes_and_bearer() {
        assert_eq!(
            redact("key sk-ant-abcdefghijkl here"),
            "key [REDACTED] here"
        );
        assert_eq!(
            redact("Authorization: Bearer abc.def"),
            "Authorization: Bearer [REDACTED]"
        );
        assert_eq!(redact("ghp_1234567890abcd"), "[REDACTED]");
        assert_eq!(redact("sk-short"), "sk-short");
    }

    #[test]
    fn redacts_sensitive_assignments_keeping_names() {
        assert_eq!(
            redact("GITHUB_TOKEN=abc123 user=bob"),
            "GITHUB_TOKEN=[REDACTED] user=bob"
        );
        assert_eq!(redact("password:hunter2"), "password:[REDACTED]");
        assert_eq!(redact("token= x"), "token= x");
    }

    #[test]
    fn keeps_whitespace_and_plain_text() {
        assert_eq!(redact("  a\tb\n c "), "  a\tb\n c ");
        assert_eq!(redact("outside quiet hours"), "outside quiet hours");
    }

    #[test]
    fn redacts_known_values_but_not_short_ones() {
        assert_eq!(
            redact_values("the value s3cr3tvalue leaked, yes", &["s3cr3tvalue", "yes"]),
            "the value [REDACTED] leaked, yes"
        );
    }

    #[test]
    fn caps_after_redacting() {
        let long = "x".repeat(1000);
        assert_eq!(redact_and_cap(&long).chars().count(), MAX_TEXT_CHARS);
    }
}
