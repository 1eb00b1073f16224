//! Limits of protocol v1, in one place (`docs/protocol.md` §7, "Limits").

/// Longest protocol line in bytes, newline included (`docs/protocol.md` §1). Longer is a protocol violation.
pub const MAX_LINE_BYTES: usize = 65_536;
/// Largest `defer_s` a spawn hook may answer, in seconds (`docs/protocol.md` §5: 0 ≤ defer_s ≤ 86400).
pub const MAX_DEFER_S: u64 = 86_400;
/// Characters of a `reason`, `ref` or error message the supervisor keeps (`docs/protocol.md`
/// §7).
pub const MAX_TEXT_CHARS: usize = 256;
/// Longest commit message a dirty handler may answer, in characters (`docs/protocol.md` §5: 1..=4096).
pub const MAX_COMMIT_MESSAGE_CHARS: usize = 4096;
/// Longest hook name (`docs/protocol.md` §3: `^[a-z0-9][a-z0-9_-]{0,63}$`).
pub const MAX_HOOK_NAME_LEN: usize = 64;
/// Seconds a host has to answer `initialize` unless configured (`docs/protocol.md` §2).
pub const DEFAULT_INIT_TIMEOUT_S: u64 = 5;
/// Default call timeout of a spawn hook, in seconds (`docs/protocol.md` §7).
pub const DEFAULT_SPAWN_HOOK_TIMEOUT_S: u64 = 10;
/// Default call timeout of a dirty handler, in seconds (`docs/protocol.md` §7).
pub const DEFAULT_DIRTY_HANDLER_TIMEOUT_S: u64 = 60;
/// Default call timeout of a pre-round hook, context enricher or detector, in seconds
/// (`docs/protocol.md` §7).
pub const DEFAULT_ROUND_HOOK_TIMEOUT_S: u64 = 10;
/// Default call timeout of a serve-startup hook, in seconds (`docs/protocol.md` §7).
pub const DEFAULT_SERVE_STARTUP_TIMEOUT_S: u64 = 30;
/// Largest object a context enricher may return, in bytes of compact JSON
/// (`docs/protocol.md` §5.4).
pub const MAX_ENRICHMENT_BYTES: usize = 16_384;
/// Most events one result may carry (`docs/protocol.md` §5.7).
pub const MAX_HOST_EVENTS_PER_RESULT: usize = 8;
/// Largest `fields` object of one host event, in bytes of compact JSON (`docs/protocol.md` §5.7).
pub const MAX_HOST_EVENT_BYTES: usize = 4_096;
/// Longest declared event kind (`^[a-z][a-z0-9_]{0,47}$`, `docs/protocol.md` §3).
pub const MAX_EVENT_KIND_LEN: usize = 48;
/// Most event kinds one host may declare (`docs/protocol.md` §3).
pub const MAX_EVENT_KINDS: usize = 32;
/// Most owned paths one host may declare (`docs/protocol.md` §3).
pub const MAX_OWNED_PATHS: usize = 32;
/// Seconds a host has to exit after its stdin reached end-of-file (`docs/protocol.md` §1, §2).
pub const EXIT_AFTER_EOF_S: u64 = 2;

/// Cuts `text` to at most `max` characters (not bytes), on a character boundary.
pub fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((idx, _)) => &text[..idx],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("abc", 10), "abc");
        assert_eq!(truncate_chars("", 0), "");
    }
}
