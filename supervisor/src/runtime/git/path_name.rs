//! File names as text without loss (docs/protocol.md, "Path names"). A name on disk is
//! bytes; events and the protocol carry JSON strings. A name that is valid UTF-8 and does
//! not start with `"` travels as it is. Any other name travels in git's C-quoted form:
//! `"` + the bytes with `\\`, `\"`, `\a \b \t \n \v \f \r` and every byte outside printable
//! ASCII as a three-digit octal escape (`caf\351.txt` for the Latin-1 `café.txt`) + `"`,
//! the form `git status` prints such a name in. [`decode`] gives the bytes back.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// The text form of the name `bytes`.
pub(crate) fn encode(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.starts_with('"') => text.to_owned(),
        _ => {
            let mut out = String::with_capacity(bytes.len() + 2);
            out.push('"');
            for &b in bytes {
                match b {
                    b'\\' => out.push_str("\\\\"),
                    b'"' => out.push_str("\\\""),
                    0x07 => out.push_str("\\a"),
                    0x08 => out.push_str("\\b"),
                    b'\t' => out.push_str("\\t"),
                    b'\n' => out.push_str("\\n"),
                    0x0b => out.push_str("\\v"),
                    0x0c => out.push_str("\\f"),
                    b'\r' => out.push_str("\\r"),
                    0x20..=0x7e => out.push(b as char),
                    _ => out.push_str(&format!("\\{b:03o}")),
                }
            }
            out.push('"');
            out
        }
    }
}

/// The bytes of the name whose text form is `name` (the inverse of [`encode`]). A quoted
/// form with a malformed escape is taken literally.
pub(crate) fn decode(name: &str) -> Vec<u8> {
    let quoted = name.len() >= 2 && name.starts_with('"') && name.ends_with('"');
    if !quoted {
        return name.as_bytes().to_vec();
    }
    unquote(&name.as_bytes()[1..name.len() - 1]).unwrap_or_else(|| name.as_bytes().to_vec())
}

fn unquote(inner: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let b = inner[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let next = *inner.get(i + 1)?;
        let simple = match next {
            b'\\' => Some(b'\\'),
            b'"' => Some(b'"'),
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b't' => Some(b'\t'),
            b'n' => Some(b'\n'),
            b'v' => Some(0x0b),
            b'f' => Some(0x0c),
            b'r' => Some(b'\r'),
            _ => None,
        };
        if let Some(byte) = simple {
            out.push(byte);
            i += 2;
            continue;
        }
        let digits = inner.get(i + 1..i + 4)?;
        if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
            return None;
        }
        let value = digits
            .iter()
            .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
        out.push(u8::try_from(value).ok()?);
        i += 4;
    }
    Some(out)
}

/// The name `name` (text form) as an OS string, for git's argv and the file system.
pub(crate) fn os(name: &str) -> OsString {
    OsString::from_vec(decode(name))
}

/// `dir` joined with the name `name` (text form).
pub(crate) fn join(dir: &Path, name: &str) -> std::path::PathBuf {
    dir.join(std::ffi::OsStr::from_bytes(&decode(name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_name() {
        for name in [
            &b"plain.txt"[..],
            b"caf\xe9.txt",
            b"\"quoted\"",
            b"tab\there",
            b"new\nline",
            b"back\\slash\xff",
            "caf\u{e9}.txt".as_bytes(),
        ] {
            assert_eq!(decode(&encode(name)), name, "{}", encode(name));
        }
        assert_eq!(encode(b"caf\xe9.txt"), "\"caf\\351.txt\"");
        assert_eq!(encode("café.txt".as_bytes()), "café.txt");
        assert_eq!(encode(b"\"a"), "\"\\\"a\"");
        assert_eq!(decode("\"bad\\q\""), b"\"bad\\q\"");
    }
}
