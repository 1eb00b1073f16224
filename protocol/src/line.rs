//! Newline-delimited framing with a bound, without I/O (`docs/protocol.md` §1: one message
//! per line, at most [`MAX_LINE_BYTES`] bytes with its newline). [`BoundedLines`] is fed
//! whatever bytes a reader has buffered and says how many it used and whether a line is
//! complete; it never holds more than its bound, however long a line is. The SDK's serve
//! loop, the supervisor's host transport, `plugin check` and the host stderr forwarder all
//! frame with it.
//!
//! [`MAX_LINE_BYTES`]: crate::limits::MAX_LINE_BYTES

/// What to do with a line longer than the bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LongLines {
    /// Report it once ([`Found::TooLong`], keeping its first bytes) and drop the rest of it
    /// up to its newline (protocol streams: the line is a violation).
    Skip,
    /// Cut it: each `max` bytes come out as a line of their own (log streams: nothing is
    /// lost, nothing grows).
    Split,
}

/// What [`BoundedLines::push`] or [`BoundedLines::finish`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// A line, without its newline, is in [`BoundedLines::line`].
    Line,
    /// The line went past the bound; [`BoundedLines::line`] holds its first bytes (at most
    /// the bound). With [`LongLines::Skip`] its rest is dropped by later pushes.
    TooLong,
    /// The input ended inside a line, which is in [`BoundedLines::line`] (no newline).
    Unterminated,
}

/// Splits a byte stream into lines of at most `max` bytes, newline included.
#[derive(Clone, Debug)]
pub struct BoundedLines {
    max: usize,
    long: LongLines,
    line: Vec<u8>,
    /// A line was handed out; the next push starts a new one.
    handed_out: bool,
    /// Dropping the rest of a line reported as too long.
    skipping: bool,
}

impl BoundedLines {
    /// A splitter for lines of at most `max` bytes (newline included; `max` ≥ 1).
    pub fn new(max: usize, long: LongLines) -> Self {
        BoundedLines {
            max: max.max(1),
            long,
            line: Vec::new(),
            handed_out: false,
            skipping: false,
        }
    }

    /// The line of the last [`Found`].
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// Uses bytes of `input` up to the end of the next line (or all of it). Returns how many
    /// bytes were used (the caller consumes exactly those) and what was found, if anything:
    /// `None` means every byte was used and the line goes on.
    pub fn push(&mut self, input: &[u8]) -> (usize, Option<Found>) {
        if self.handed_out {
            self.line.clear();
            self.handed_out = false;
        }
        let newline = input.iter().position(|&b| b == b'\n');
        if self.skipping {
            return match newline {
                Some(i) => {
                    self.skipping = false;
                    (i + 1, None)
                }
                None => (input.len(), None),
            };
        }
        // Bytes of this line still allowed, newline included.
        let room = self.max - self.line.len();
        match newline {
            Some(i) if i < room => {
                self.line.extend_from_slice(&input[..i]);
                self.handed_out = true;
                (i + 1, Some(Found::Line))
            }
            _ if input.len() < room => {
                self.line.extend_from_slice(input);
                (input.len(), None)
            }
            _ => {
                // The line reaches the bound without its newline in it.
                let keep = room.min(input.len());
                self.line.extend_from_slice(&input[..keep]);
                self.handed_out = true;
                match self.long {
                    LongLines::Split => (keep, Some(Found::Line)),
                    LongLines::Skip => {
                        let used = match newline {
                            Some(i) => i + 1,
                            None => {
                                self.skipping = true;
                                input.len()
                            }
                        };
                        (used, Some(Found::TooLong))
                    }
                }
            }
        }
    }

    /// The input has ended: the line it was in, if any ([`Found::Unterminated`]). A line
    /// already reported as too long is not reported again.
    pub fn finish(&mut self) -> Option<Found> {
        if self.handed_out {
            self.line.clear();
            self.handed_out = false;
        }
        let skipped = std::mem::take(&mut self.skipping);
        if skipped || self.line.is_empty() {
            return None;
        }
        self.handed_out = true;
        Some(Found::Unterminated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks` one after the other, then ends the input; every found line.
    fn run(max: usize, long: LongLines, chunks: &[&[u8]]) -> Vec<(Found, Vec<u8>)> {
        let mut lines = BoundedLines::new(max, long);
        let mut out = Vec::new();
        for chunk in chunks {
            let mut rest: &[u8] = chunk;
            while !rest.is_empty() {
                let (used, found) = lines.push(rest);
                assert!(used > 0 && used <= rest.len());
                rest = &rest[used..];
                if let Some(found) = found {
                    out.push((found, lines.line().to_vec()));
                }
            }
        }
        if let Some(found) = lines.finish() {
            out.push((found, lines.line().to_vec()));
        }
        out
    }

    fn line(text: &str) -> (Found, Vec<u8>) {
        (Found::Line, text.as_bytes().to_vec())
    }

    #[test]
    fn frames_lines_across_chunks() {
        assert_eq!(
            run(8, LongLines::Skip, &[b"ab", b"c\nde\n", b"\nf"]),
            [
                line("abc"),
                line("de"),
                line(""),
                (Found::Unterminated, b"f".to_vec())
            ]
        );
        assert!(run(8, LongLines::Skip, &[]).is_empty());
    }

    #[test]
    fn the_bound_counts_the_newline() {
        // 4 bytes with the newline fit in 4; 5 do not.
        assert_eq!(run(4, LongLines::Skip, &[b"abc\n"]), [line("abc")]);
        assert_eq!(
            run(4, LongLines::Skip, &[b"abcd\nok\n"]),
            [(Found::TooLong, b"abcd".to_vec()), line("ok")]
        );
    }

    #[test]
    fn skip_reports_a_long_line_once_and_drops_its_rest() {
        assert_eq!(
            run(4, LongLines::Skip, &[b"abcdef", b"ghij", b"kl\nnxt\n"]),
            [(Found::TooLong, b"abcd".to_vec()), line("nxt")]
        );
        // Ending inside the skipped rest reports nothing more.
        assert_eq!(
            run(4, LongLines::Skip, &[b"abcdefgh"]),
            [(Found::TooLong, b"abcd".to_vec())]
        );
    }

    #[test]
    fn split_cuts_long_lines_into_pieces() {
        assert_eq!(
            run(4, LongLines::Split, &[b"abcdefg\n", b"h\n"]),
            [line("abcd"), line("efg"), line("h")]
        );
        // A piece that fills the bound leaves its newline to an empty line, as a bounded
        // read up to a newline would.
        assert_eq!(
            run(4, LongLines::Split, &[b"abcd\n"]),
            [line("abcd"), line("")]
        );
    }
}
