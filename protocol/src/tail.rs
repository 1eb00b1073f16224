//! The round-log tail sent with `post_round/after_round` (docs/protocol.md §5): the last
//! [`MAX_LOG_TAIL_BYTES`] bytes of the log as safe text.

use crate::limits::MAX_LOG_TAIL_BYTES;

/// The `log_tail` for a round log whose last bytes are `log_end` (any length; only the
/// last [`MAX_LOG_TAIL_BYTES`] are used). A UTF-8 sequence cut at the start is dropped,
/// invalid bytes become U+FFFD, and control characters other than tab, newline and
/// carriage return become U+FFFD, so the JSON-escaped text is at most twice
/// [`MAX_LOG_TAIL_BYTES`] bytes (`"`, `\`, tab, newline and carriage return take two).
pub fn log_tail(log_end: &[u8]) -> String {
    let mut start = log_end.len().saturating_sub(MAX_LOG_TAIL_BYTES);
    // Skip continuation bytes of a character whose first byte was cut off.
    while start < log_end.len() && start > 0 && log_end[start] & 0xC0 == 0x80 {
        start += 1;
    }
    let mut out = clean(&log_end[start..]);
    // U+FFFD takes 3 bytes where a control byte took 1: cut again from the front.
    let mut excess = out.len().saturating_sub(MAX_LOG_TAIL_BYTES);
    while excess > 0 && !out.is_char_boundary(excess) {
        excess += 1;
    }
    out.split_off(excess.min(out.len()))
}

/// The `text` of an `output_watch/observe` chunk (docs/protocol.md §5.10): `bytes` (at
/// most [`crate::limits::MAX_CHUNK_BYTES`], which the supervisor cuts after a newline
/// where it can) decoded and cleaned as [`log_tail`] cleans, U+FFFD for invalid UTF-8
/// and control characters; a text grown past the limit by them is cut at its end.
pub fn chunk_text(bytes: &[u8]) -> String {
    let mut text = clean(&bytes[..bytes.len().min(crate::limits::MAX_CHUNK_BYTES)]);
    let mut keep = text.len().min(crate::limits::MAX_CHUNK_BYTES);
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    text.truncate(keep);
    text
}

/// `bytes` as text: invalid UTF-8 and control characters other than tab, newline and
/// carriage return become U+FFFD.
fn clean(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && !matches!(c, '\t' | '\n' | '\r') {
            out.push(char::REPLACEMENT_CHARACTER);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_end_and_cleans_it() {
        let mut log = vec![b'a'; MAX_LOG_TAIL_BYTES];
        log.extend_from_slice("é\x1b[31mred\x00\tend\n".as_bytes());
        let tail = log_tail(&log);
        assert!(tail.len() <= MAX_LOG_TAIL_BYTES, "{}", tail.len());
        assert!(tail.ends_with("\u{fffd}[31mred\u{fffd}\tend\n"), "{tail:?}");
        let escaped = serde_json::to_string(&"\"\\\n".repeat(MAX_LOG_TAIL_BYTES)).unwrap();
        assert!(
            serde_json::to_string(&log_tail(escaped.as_bytes()))
                .unwrap()
                .len()
                <= 2 * MAX_LOG_TAIL_BYTES + 2
        );
        // A multi-byte character cut at the start is dropped, not turned into U+FFFD.
        let mut cut = "é".repeat(MAX_LOG_TAIL_BYTES);
        cut.push('x');
        let tail = log_tail(&cut.as_bytes()[1..]);
        assert!(
            !tail.contains('\u{fffd}') && tail.ends_with("éx"),
            "{}",
            &tail[..8]
        );
        assert_eq!(log_tail(b"\xffok"), "\u{fffd}ok");
        assert_eq!(log_tail(b""), "");
    }

    #[test]
    fn a_chunk_is_cleaned_and_kept_within_its_limit() {
        assert_eq!(
            chunk_text(b"{\"a\":1}\n\x1b[0m\xff"),
            "{\"a\":1}\n\u{fffd}[0m\u{fffd}"
        );
        let noisy = vec![0u8; crate::limits::MAX_CHUNK_BYTES];
        assert!(chunk_text(&noisy).len() <= crate::limits::MAX_CHUNK_BYTES);
    }
}
