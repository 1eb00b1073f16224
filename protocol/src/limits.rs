//! Limits of protocol v1, in one place (protocol-v1.md §1, §4).

/// Longest protocol line in bytes, newline included (§1). Longer is a protocol violation.
pub const MAX_LINE_BYTES: usize = 65_536;
/// Largest `defer_s` a spawn hook may answer, in seconds (§4: 0 ≤ defer_s ≤ 86400).
pub const MAX_DEFER_S: u64 = 86_400;
/// Characters of a `reason`, `ref` or error message the supervisor keeps (§4).
pub const MAX_TEXT_CHARS: usize = 256;
/// Longest commit message a dirty handler may answer, in characters (§4: 1..=4096).
pub const MAX_COMMIT_MESSAGE_CHARS: usize = 4096;
/// Longest hook name (§3: `^[a-z0-9][a-z0-9_-]{0,63}$`).
pub const MAX_HOOK_NAME_LEN: usize = 64;
/// Seconds a host has to answer `initialize` unless configured (§2).
pub const DEFAULT_INIT_TIMEOUT_S: u64 = 5;
/// Default call timeout of a spawn hook, in seconds (§5).
pub const DEFAULT_SPAWN_HOOK_TIMEOUT_S: u64 = 10;
/// Default call timeout of a dirty handler, in seconds (§5).
pub const DEFAULT_DIRTY_HANDLER_TIMEOUT_S: u64 = 60;
/// Seconds a host has to exit after its stdin reached end-of-file (§1, §2).
pub const EXIT_AFTER_EOF_S: u64 = 2;
/// Characters of one host stderr line the supervisor keeps in its log; a longer line is
/// cut and marked `… [line truncated: N bytes]` (docs/protocol.md §1).
pub const MAX_STDERR_LINE_CHARS: usize = 1024;
/// Host stderr lines the supervisor copies per second per host; further lines in the same
/// second are counted and reported as one `[N stderr lines dropped …]` record
/// (docs/protocol.md §1).
pub const MAX_STDERR_LINES_PER_S: u32 = 100;

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
