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
/// Default call timeout of a pre-round hook, context enricher, detector or post-round hook,
/// in seconds (`docs/protocol.md` §7).
pub const DEFAULT_ROUND_HOOK_TIMEOUT_S: u64 = 10;
/// Default call timeout of an output watch, in seconds (`docs/protocol.md` §5.10, §7): it
/// is asked while the agent runs, so a slow one is ended sooner than the others.
pub const DEFAULT_OUTPUT_WATCH_TIMEOUT_S: u64 = 5;
/// Most bytes of the round log one `output_watch/observe` chunk carries (`docs/protocol.md`
/// §5.10): escaped as JSON it stays under half of [`MAX_LINE_BYTES`], as `log_tail` does.
pub const MAX_CHUNK_BYTES: usize = 16_384;
/// Most model calls one `output_watch/observe` answer may report (`docs/protocol.md` §5.10).
pub const MAX_OBSERVED_CALLS: usize = 64;
/// Default call timeout of a serve-startup hook, in seconds (`docs/protocol.md` §7).
pub const DEFAULT_SERVE_STARTUP_TIMEOUT_S: u64 = 30;
/// Most bytes of the round log sent as `log_tail` (`docs/protocol.md` §5, §7). Escaped as
/// JSON it stays under half of [`MAX_LINE_BYTES`] (only `"`, `\`, tab, newline and
/// carriage return are escaped, two bytes each), leaving room for the rest of the request.
pub const MAX_LOG_TAIL_BYTES: usize = 16_384;
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
/// Characters of one host stderr line the supervisor keeps in its log; a longer line is
/// cut and marked `… [line truncated: N bytes]` (docs/protocol.md §1).
pub const MAX_STDERR_LINE_CHARS: usize = 1024;
/// Host stderr lines the supervisor copies per second per host; further lines in the same
/// second are counted and reported as one `[N stderr lines dropped …]` record
/// (docs/protocol.md §1).
pub const MAX_STDERR_LINES_PER_S: u32 = 100;

/// Serialized bytes of `spawn.argv` in `before_spawn` at most (docs/protocol.md §7).
pub const MAX_SPAWN_ARGV_BYTES: usize = 8_192;
/// Serialized bytes of `spawn.env_names` in `before_spawn` at most.
pub const MAX_ENV_NAMES_BYTES: usize = 8_192;
/// Serialized bytes of `dirty_files` in `handle_dirty` at most.
pub const MAX_DIRTY_FILES_BYTES: usize = 16_384;
/// Serialized bytes of each text of `ctx` and `initialize` (paths, names) at most.
pub const MAX_CONTEXT_TEXT_BYTES: usize = 4_096;
/// Serialized bytes of a host's `config` table at most (checked when the config loads).
pub const MAX_HOST_CONFIG_BYTES: usize = 8_192;

/// The bytes `text` takes as a JSON string, quotes included.
fn json_len(text: &str) -> usize {
    serde_json::to_string(text).map_or(text.len() + 2, |s| s.len())
}

/// `text`, cut on a character boundary (and marked with a final `…`) so that it takes at
/// most `max_bytes` as a JSON string.
pub fn fit_text(text: &str, max_bytes: usize) -> String {
    if json_len(text) <= max_bytes {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = json_len("…");
    for c in text.chars() {
        let mut buf = [0u8; 4];
        let add = json_len(c.encode_utf8(&mut buf)) - 2;
        if used + add > max_bytes {
            break;
        }
        used += add;
        out.push(c);
    }
    out.push('…');
    out
}

/// The leading `items` that fit, as a JSON array, in `max_bytes`; the rest are left out.
pub fn fit_list(items: &[String], max_bytes: usize) -> Vec<String> {
    let mut used = 2; // []
    let mut out = Vec::new();
    for item in items {
        let add = json_len(item) + usize::from(!out.is_empty());
        if used + add > max_bytes {
            break;
        }
        used += add;
        out.push(item.clone());
    }
    out
}

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

    #[test]
    fn fitting_counts_serialized_bytes() {
        assert_eq!(fit_text("short", 100), "short");
        let cut = fit_text(&"\"".repeat(100), 20);
        assert!(serde_json::to_string(&cut).unwrap().len() <= 20, "{cut}");
        assert!(cut.ends_with('…'));
        let items: Vec<String> = (0..100).map(|i| format!("file{i}")).collect();
        let kept = fit_list(&items, 50);
        assert!(serde_json::to_string(&kept).unwrap().len() <= 50);
        assert_eq!(kept[0], "file0");
        assert!(kept.len() < items.len());
        assert_eq!(fit_list(&items[..2], 50), items[..2].to_vec());
    }
}
