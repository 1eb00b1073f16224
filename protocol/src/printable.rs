//! Host-supplied text made safe for a terminal: what `peek` and `monitor --mode narrate`
//! print of a host's words (error messages, reasons, event fields) cannot move the cursor,
//! recolour, retitle or clear the operator's terminal, nor reorder the text around it.
//!
//! One rule: every control character (C0 but tab and newline, DEL, C1) and every bidi
//! embedding, override or isolate (U+202A–U+202E, U+2066–U+2069) becomes U+FFFD. An escape
//! sequence thus loses its `ESC` and prints as plain text (`\u{fffd}[2J`). Events keep the
//! host's text as it was sent (JSON escapes control characters), so nothing is lost; the
//! rule applies where text is printed.

use serde_json::Value;
use std::borrow::Cow;

/// Whether `c` is replaced (see the module docs); `keep_newline` keeps `\n`.
fn unsafe_char(c: char, keep_newline: bool) -> bool {
    match c {
        '\t' => false,
        '\n' => !keep_newline,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        c => c.is_control(),
    }
}

/// `text` with every control character but tab (and newline when `keep_newline`) and every
/// bidi control replaced by U+FFFD; borrowed when nothing had to change.
pub fn printable(text: &str, keep_newline: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| unsafe_char(c, keep_newline)) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if unsafe_char(c, keep_newline) {
                    char::REPLACEMENT_CHARACTER
                } else {
                    c
                }
            })
            .collect(),
    )
}

/// `value` with [`printable`] applied to every string in it (object keys too), newlines
/// kept (multi-line fields such as a log tail are printed as lines).
pub fn printable_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(printable(s, true).into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(printable_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (printable(k, true).into_owned(), printable_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_bidi_controls_become_replacement_characters() {
        let hostile = "ok\u{1b}[2J\u{1b}]0;title\u{7}\r\u{9b}31m\u{202e}evil\u{7f}\tend";
        let clean = printable(hostile, false);
        assert_eq!(
            clean,
            "ok\u{fffd}[2J\u{fffd}]0;title\u{fffd}\u{fffd}\u{fffd}31m\u{fffd}evil\u{fffd}\tend"
        );
        assert!(matches!(printable("plain é text", false), Cow::Borrowed(_)));
        assert_eq!(printable("a\nb", false), "a\u{fffd}b");
        assert_eq!(printable("a\nb", true), "a\nb");
    }

    #[test]
    fn every_string_of_a_document_is_cleaned() {
        let doc = serde_json::json!({"a": ["x\u{1b}[1m", 3], "k\u{7}": {"m": "y\u{202e}"}});
        assert_eq!(
            printable_value(&doc),
            serde_json::json!({"a": ["x\u{fffd}[1m", 3], "k\u{fffd}": {"m": "y\u{fffd}"}})
        );
    }
}
