//! What the provider billed, read by the key broker from the answers it relays
//! (docs/operations.md, "Budget": "Where spend comes from"): the first source of spend in
//! trust, ahead of the cost the agent's CLI reports, which is the agent's own output and
//! may be made up (`tests/tests/suite/confinement/hostile_budget.rs`).
//!
//! [`AnswerReader`] is fed a copy of the bytes of one HTTP answer *after* they were sent
//! on to the agent, so it never delays or alters them. It reads the head (status,
//! `Content-Type`, `Transfer-Encoding: chunked`, `Content-Encoding`), takes the chunked
//! framing off, and reads the body as server-sent events (one JSON document per `data:`
//! line) or as one JSON document, each unit at most [`UNIT_MAX`] bytes: a longer unit keeps
//! only its last [`TAIL_KEEP`] bytes, where each provider puts its usage, and the usage
//! object is cut out of that tail (its model is then unknown: priced at the table's
//! highest). So one answer holds at most `HEAD_MAX + UNIT_MAX` bytes however long it is.
//! Bad bytes never panic: an answer whose usage cannot be read counts as *unread*.
//!
//! The usage read, per provider (the route's):
//! - `anthropic` (Messages): `usage` of the body, or of `message_start`'s `message` and of
//!   `message_delta` (cumulative); `input_tokens` is the uncached input,
//!   `cache_read_input_tokens`, `cache_creation_input_tokens`, `output_tokens`.
//! - `openai`: chat completions' `usage` (the body, or the last streamed chunk):
//!   `prompt_tokens` less `prompt_tokens_details.cached_tokens`, `completion_tokens`;
//!   responses' `usage` (the body, or `response.completed`'s `response`): `input_tokens`
//!   less `input_tokens_details.cached_tokens`, `output_tokens`.
//! - `gemini`: `usageMetadata`: `promptTokenCount` less `cachedContentTokenCount`,
//!   `candidatesTokenCount` plus `thoughtsTokenCount`.
//!
//! Within one answer each count is the largest any of its events gave (the streamed
//! counts are running totals); answers add up ([`Billed`]).

use serde_json::Value;

use super::prices::{PriceTable, Tokens};

/// `agent_usage_recorded.hook` (and `budget_round_stopped`'s) of usage the key broker read
/// with no hook reporting any.
pub(crate) const BROKER_HOOK: &str = "key_broker";

/// The longest answer head read.
pub(crate) const HEAD_MAX: usize = 16 * 1024;
/// The longest unit (an event's `data`, or a whole JSON body) kept whole.
pub(crate) const UNIT_MAX: usize = 256 * 1024;
/// What is kept of a longer unit: its end.
pub(crate) const TAIL_KEEP: usize = 64 * 1024;
/// How many models a round's tally names apart; more are counted as `unknown` (the
/// table's highest price).
pub(crate) const MODELS_MAX: usize = 8;
/// The longest model name kept.
const MODEL_MAX: usize = 128;

/// What the provider billed over a round: tokens per model, and how many answers were
/// read.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Billed {
    /// Tokens per model as the answers named it (`unknown` when one named none).
    pub by_model: Vec<(String, Tokens)>,
    /// Answers whose usage was read.
    pub answers: u64,
    /// Successful answers with no usage read whose body could not be read either
    /// (compressed, cut short, malformed); an answer that holds no usage (a model list) is
    /// neither.
    pub unread: u64,
}

/// A round's billed usage, priced.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Priced {
    /// Every token, all models.
    pub tokens: Tokens,
    /// US dollars: each model's tokens at its price (an unpriced one at the highest).
    pub usd: f64,
    /// The model with the most tokens.
    pub model: String,
    /// Answers read.
    pub answers: u64,
    /// Answers not read.
    pub unread: u64,
}

impl Billed {
    /// Adds one answer's usage.
    pub(crate) fn add(&mut self, model: Option<&str>, tokens: Tokens) {
        self.answers += 1;
        let mut model = model.unwrap_or("unknown");
        if model.len() > MODEL_MAX || model.is_empty() {
            model = "unknown";
        }
        if !self.by_model.iter().any(|(m, _)| m == model) && self.by_model.len() >= MODELS_MAX {
            model = "unknown";
        }
        match self.by_model.iter_mut().find(|(m, _)| m == model) {
            Some((_, t)) => add_tokens(t, tokens),
            None => self.by_model.push((model.to_owned(), tokens)),
        }
    }

    /// Whether any answer's usage was read.
    pub(crate) fn seen(&self) -> bool {
        self.answers > 0
    }

    /// The tally priced by `table`.
    pub(crate) fn priced(&self, table: &PriceTable) -> Priced {
        let mut tokens = Tokens::default();
        let mut usd = 0.0;
        let mut top: Option<(&str, u64)> = None;
        for (model, t) in &self.by_model {
            add_tokens(&mut tokens, *t);
            usd += table.cost(model, *t, None).0;
            if top.is_none_or(|(_, n)| t.total() > n) {
                top = Some((model, t.total()));
            }
        }
        Priced {
            tokens,
            usd,
            model: top.map_or("unknown", |(m, _)| m).to_owned(),
            answers: self.answers,
            unread: self.unread,
        }
    }
}

fn add_tokens(to: &mut Tokens, t: Tokens) {
    to.input = to.input.saturating_add(t.input);
    to.output = to.output.saturating_add(t.output);
    to.cache_read = to.cache_read.saturating_add(t.cache_read);
    to.cache_write = to.cache_write.saturating_add(t.cache_write);
}

/// The provider whose answers a reader reads (the broker route's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI chat completions and responses.
    OpenAi,
    /// Gemini generateContent.
    Gemini,
}

impl Dialect {
    /// The dialect of a broker provider's name; `None` for one not known here.
    pub(crate) fn of(provider: &str) -> Option<Dialect> {
        match provider {
            "anthropic" => Some(Dialect::Anthropic),
            "openai" => Some(Dialect::OpenAi),
            "gemini" => Some(Dialect::Gemini),
            _ => None,
        }
    }
}

#[derive(Debug)]
enum Framing {
    /// The head is being read.
    Head(Vec<u8>),
    /// The body as it comes (no chunked framing).
    Plain,
    /// Chunked: reading a size line.
    Size(Vec<u8>),
    /// Chunked: this many data bytes left in the chunk.
    Data(u64),
    /// Chunked: the CRLF after a chunk's data (bytes left to skip).
    DataEnd(u8),
    /// Not read further (an error status, a compressed body, the last chunk, bad framing).
    Done,
}

/// One unit being gathered (an event's line, or the body).
#[derive(Debug, Default)]
struct Unit {
    bytes: Vec<u8>,
    /// Bytes were dropped from its start.
    cut: bool,
}

impl Unit {
    fn push(&mut self, more: &[u8]) {
        self.bytes.extend_from_slice(more);
        if self.bytes.len() > UNIT_MAX {
            let drop = self.bytes.len() - TAIL_KEEP;
            self.bytes.drain(..drop);
            self.cut = true;
        }
    }

    fn take(&mut self) -> Unit {
        std::mem::take(self)
    }
}

/// Reads one HTTP answer's usage from a copy of its bytes ([`AnswerReader::feed`]), then
/// [`AnswerReader::finish`].
#[derive(Debug)]
pub(crate) struct AnswerReader {
    dialect: Dialect,
    framing: Framing,
    /// The body is server-sent events.
    sse: bool,
    /// The answer's status was 2xx (an error answer bills nothing).
    ok: bool,
    unit: Unit,
    /// The counts read so far: each the largest seen.
    usage: Option<Tokens>,
    model: Option<String>,
    /// A unit that should have held usage did not parse.
    malformed: bool,
}

impl AnswerReader {
    /// A reader of an answer of `dialect`.
    pub(crate) fn new(dialect: Dialect) -> AnswerReader {
        AnswerReader {
            dialect,
            framing: Framing::Head(Vec::new()),
            sse: false,
            ok: false,
            unit: Unit::default(),
            usage: None,
            model: None,
            malformed: false,
        }
    }

    /// Reads the next bytes of the answer.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match &mut self.framing {
                Framing::Done => return,
                Framing::Head(head) => {
                    let from = head.len().saturating_sub(3);
                    head.extend_from_slice(bytes);
                    let Some(at) = head[from..].windows(4).position(|w| w == b"\r\n\r\n") else {
                        if head.len() > HEAD_MAX {
                            self.framing = Framing::Done;
                        }
                        return;
                    };
                    let end = from + at + 4;
                    let used = end - (head.len() - bytes.len());
                    let head = std::mem::take(head);
                    bytes = &bytes[used..];
                    self.framing = self.read_head(&head[..end]);
                }
                Framing::Plain => {
                    self.body(bytes);
                    return;
                }
                Framing::Size(line) => {
                    let Some(nl) = bytes.iter().position(|b| *b == b'\n') else {
                        line.extend_from_slice(bytes);
                        if line.len() > 256 {
                            self.framing = Framing::Done;
                        }
                        return;
                    };
                    line.extend_from_slice(&bytes[..nl]);
                    bytes = &bytes[nl + 1..];
                    let size = {
                        let text = String::from_utf8_lossy(line);
                        u64::from_str_radix(text.split(';').next().unwrap_or("").trim(), 16)
                    };
                    self.framing = match size {
                        Ok(0) => {
                            self.end_unit_at_eof();
                            Framing::Done
                        }
                        Ok(n) => Framing::Data(n),
                        Err(_) => Framing::Done,
                    };
                }
                Framing::Data(left) => {
                    let n = (*left).min(bytes.len() as u64) as usize;
                    *left -= n as u64;
                    let done = *left == 0;
                    let (data, rest) = bytes.split_at(n);
                    bytes = rest;
                    if done {
                        self.framing = Framing::DataEnd(2);
                    }
                    self.body(data);
                }
                Framing::DataEnd(left) => {
                    let n = usize::from(*left).min(bytes.len());
                    *left -= n as u8;
                    bytes = &bytes[n..];
                    if *left == 0 {
                        self.framing = Framing::Size(Vec::new());
                    }
                }
            }
        }
    }

    /// The framing after the answer head `head`.
    fn read_head(&mut self, head: &[u8]) -> Framing {
        let text = String::from_utf8_lossy(head);
        let mut lines = text.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse::<u16>().ok())
            .unwrap_or(0);
        if (100..200).contains(&status) {
            // `100 Continue` and the like: the answer's own head comes next.
            return Framing::Head(Vec::new());
        }
        self.ok = (200..300).contains(&status);
        if !self.ok {
            return Framing::Done;
        }
        let mut chunked = false;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            let value = value.to_ascii_lowercase();
            match name.as_str() {
                "content-type" => self.sse = value.contains("text/event-stream"),
                "transfer-encoding" => chunked = value.contains("chunked"),
                "content-encoding" if !value.is_empty() && value != "identity" => {
                    // Compressed: the broker asks for identity; an upstream that compresses
                    // anyway leaves the answer unread.
                    self.malformed = true;
                    return Framing::Done;
                }
                _ => {}
            }
        }
        if chunked {
            Framing::Size(Vec::new())
        } else {
            Framing::Plain
        }
    }

    /// Body bytes (framing off).
    fn body(&mut self, mut bytes: &[u8]) {
        if !self.sse {
            self.unit.push(bytes);
            return;
        }
        while let Some(nl) = bytes.iter().position(|b| *b == b'\n') {
            self.unit.push(&bytes[..nl]);
            bytes = &bytes[nl + 1..];
            let line = self.unit.take();
            self.sse_line(line);
        }
        self.unit.push(bytes);
    }

    /// One line of server-sent events: only `data:` lines hold documents.
    fn sse_line(&mut self, line: Unit) {
        let bytes = line.bytes.strip_suffix(b"\r").unwrap_or(&line.bytes);
        let data = match bytes.strip_prefix(b"data:") {
            Some(d) => d.strip_prefix(b" ").unwrap_or(d),
            None if line.cut => bytes,
            None => return,
        };
        self.document(data, line.cut);
    }

    /// A JSON document (an event's data, or the body); `cut`: its start was dropped.
    fn document(&mut self, data: &[u8], cut: bool) {
        let data = data.trim_ascii();
        if data.is_empty() || data == b"[DONE]" {
            return;
        }
        if cut {
            match usage_in_tail(data) {
                Some(usage) => self.take_usage(&usage),
                None => self.malformed = true,
            }
            return;
        }
        // Most events are the answer's text: parsed only while its model is not known yet.
        if self.model.is_some()
            && !data
                .windows(7)
                .any(|w| w == b"\"usage\"" || w == b"\"usageM")
        {
            return;
        }
        let Ok(doc) = serde_json::from_slice::<Value>(data) else {
            self.malformed = true;
            return;
        };
        // Where each dialect puts the answer's own object.
        let inner = [&doc, &doc["message"], &doc["response"]];
        if self.model.is_none() {
            self.model = inner
                .iter()
                .find_map(|v| v["model"].as_str().or(v["modelVersion"].as_str()))
                .map(str::to_owned);
        }
        for v in inner {
            for key in ["usage", "usageMetadata"] {
                if v[key].is_object() {
                    self.take_usage(&v[key]);
                }
            }
        }
    }

    /// Merges one usage object: each count the largest seen.
    fn take_usage(&mut self, u: &Value) {
        let n = |path: &[&str]| {
            path.iter()
                .try_fold(u, |v, k| v.get(k))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let t = match self.dialect {
            Dialect::Anthropic => Tokens {
                input: n(&["input_tokens"]),
                output: n(&["output_tokens"]),
                cache_read: n(&["cache_read_input_tokens"]),
                cache_write: n(&["cache_creation_input_tokens"]),
            },
            Dialect::OpenAi if u.get("prompt_tokens").is_some() => {
                let cached = n(&["prompt_tokens_details", "cached_tokens"]);
                Tokens {
                    input: n(&["prompt_tokens"]).saturating_sub(cached),
                    output: n(&["completion_tokens"]),
                    cache_read: cached,
                    cache_write: 0,
                }
            }
            Dialect::OpenAi => {
                let cached = n(&["input_tokens_details", "cached_tokens"]);
                Tokens {
                    input: n(&["input_tokens"]).saturating_sub(cached),
                    output: n(&["output_tokens"]),
                    cache_read: cached,
                    cache_write: 0,
                }
            }
            Dialect::Gemini => {
                let cached = n(&["cachedContentTokenCount"]);
                Tokens {
                    input: n(&["promptTokenCount"]).saturating_sub(cached),
                    output: n(&["candidatesTokenCount"]).saturating_add(n(&["thoughtsTokenCount"])),
                    cache_read: cached,
                    cache_write: 0,
                }
            }
        };
        let mut seen = self.usage.unwrap_or_default();
        seen.input = seen.input.max(t.input);
        seen.output = seen.output.max(t.output);
        seen.cache_read = seen.cache_read.max(t.cache_read);
        seen.cache_write = seen.cache_write.max(t.cache_write);
        self.usage = Some(seen);
    }

    /// A body without events ends with the answer: its one document.
    fn end_unit_at_eof(&mut self) {
        let unit = self.unit.take();
        if self.sse {
            if !unit.bytes.is_empty() {
                self.sse_line(unit);
            }
        } else {
            self.document(&unit.bytes, unit.cut);
        }
    }

    /// Adds what the answer billed to `billed`: its usage if read; a successful answer
    /// whose body could not be read is counted as unread.
    pub(crate) fn finish(mut self, billed: &mut Billed) {
        if matches!(self.framing, Framing::Plain) {
            self.end_unit_at_eof();
        }
        match self.usage {
            Some(tokens) => billed.add(self.model.as_deref(), tokens),
            None if self.ok && self.malformed => billed.unread += 1,
            None => {}
        }
    }
}

/// The last usage object (`"usage":{…}` or `"usageMetadata":{…}`) written in `tail`, the
/// end of a document whose start was dropped: the key's quotes unescaped (so not inside
/// a string), the object's braces balanced outside strings.
fn usage_in_tail(tail: &[u8]) -> Option<Value> {
    let keys: [&[u8]; 2] = [b"\"usage\"", b"\"usageMetadata\""];
    let mut best: Option<Value> = None;
    let mut best_at = 0;
    for key in keys {
        let mut from = 0;
        while let Some(at) = tail[from..].windows(key.len()).position(|w| w == key) {
            let at = from + at;
            from = at + 1;
            if at > 0 && tail[at - 1] == b'\\' {
                continue;
            }
            let rest = tail[at + key.len()..].trim_ascii_start();
            let Some(rest) = rest.strip_prefix(b":") else {
                continue;
            };
            let rest = rest.trim_ascii_start();
            if let Some(object) = balanced(rest) {
                if let Ok(v) = serde_json::from_slice::<Value>(object) {
                    if (best.is_none() || at >= best_at) && v.is_object() {
                        best = Some(v);
                        best_at = at;
                    }
                }
            }
        }
    }
    best
}

/// The JSON object at the start of `bytes` (`{` … its matching `}`).
fn balanced(bytes: &[u8]) -> Option<&[u8]> {
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, *b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&bytes[..=i]);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(dialect: Dialect, answer: &[u8], step: usize) -> Billed {
        let mut r = AnswerReader::new(dialect);
        for piece in answer.chunks(step.max(1)) {
            r.feed(piece);
        }
        let mut billed = Billed::default();
        r.finish(&mut billed);
        billed
    }

    fn sse(events: &[&str]) -> Vec<u8> {
        let mut out =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                .to_vec();
        for e in events {
            out.extend_from_slice(format!("event: x\ndata: {e}\n\n").as_bytes());
        }
        out
    }

    fn chunked(body: &[u8]) -> Vec<u8> {
        let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for piece in body.chunks(7) {
            out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    }

    const ANTHROPIC_STREAM: &[&str] = &[
        r#"{"type":"message_start","message":{"id":"m","model":"claude-opus-4-5","content":[],"usage":{"input_tokens":120,"output_tokens":1,"cache_read_input_tokens":5000,"cache_creation_input_tokens":40}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a \"usage\":{\"input_tokens\":1} b"}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":30}}"#,
        r#"{"type":"message_stop"}"#,
    ];

    #[test]
    fn each_dialect_streamed_or_whole_in_any_pieces() {
        let want = Tokens {
            input: 120,
            output: 30,
            cache_read: 5000,
            cache_write: 40,
        };
        for step in [1, 3, 64, 100_000] {
            let b = read(Dialect::Anthropic, &sse(ANTHROPIC_STREAM), step);
            assert_eq!(
                b.by_model,
                [("claude-opus-4-5".to_owned(), want)],
                "step {step}"
            );
            assert_eq!((b.answers, b.unread), (1, 0));
        }
        let body = br#"{"id":"m","type":"message","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":7,"output_tokens":3,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}"#;
        let b = read(Dialect::Anthropic, &chunked(body), 5);
        assert_eq!(b.by_model[0].0, "claude-sonnet-4-5");
        assert_eq!(b.by_model[0].1.total(), 10);
        // OpenAI chat, the usage in the last chunk; and whole with a cached part.
        let chat = sse(&[
            r#"{"model":"gpt-5","choices":[{"delta":{"content":"hi"}}]}"#,
            r#"{"model":"gpt-5","choices":[],"usage":{"prompt_tokens":1500,"completion_tokens":60,"prompt_tokens_details":{"cached_tokens":1000}}}"#,
            "[DONE]",
        ]);
        let b = read(Dialect::OpenAi, &chat, 11);
        assert_eq!(
            b.by_model[0].1,
            Tokens {
                input: 500,
                output: 60,
                cache_read: 1000,
                cache_write: 0
            }
        );
        // Responses: usage null while in progress, whole at `response.completed`.
        let responses = sse(&[
            r#"{"type":"response.created","response":{"model":"gpt-5-codex","usage":null}}"#,
            r#"{"type":"response.completed","response":{"model":"gpt-5-codex","usage":{"input_tokens":200,"input_tokens_details":{"cached_tokens":50},"output_tokens":40}}}"#,
        ]);
        let b = read(Dialect::OpenAi, &responses, 9);
        assert_eq!(b.by_model[0].0, "gpt-5-codex");
        assert_eq!(
            (b.by_model[0].1.input, b.by_model[0].1.cache_read),
            (150, 50)
        );
        // Gemini, one JSON body without chunking, read at its end.
        let gemini = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"candidates\":[],\"usageMetadata\":{\"promptTokenCount\":300,\"candidatesTokenCount\":25,\"thoughtsTokenCount\":5},\"modelVersion\":\"gemini-2.5-pro\"}";
        let b = read(Dialect::Gemini, gemini, 13);
        assert_eq!(b.by_model[0].0, "gemini-2.5-pro");
        assert_eq!((b.by_model[0].1.input, b.by_model[0].1.output), (300, 30));
    }

    #[test]
    fn a_long_answer_is_read_from_its_tail_within_the_bound() {
        let text = "x".repeat(UNIT_MAX * 3);
        let body = format!(
            r#"{{"model":"claude-opus-4-5","content":[{{"type":"text","text":"{text}"}}],"usage":{{"input_tokens":9,"output_tokens":900000}}}}"#
        );
        let mut answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n".to_vec();
        answer.extend_from_slice(body.as_bytes());
        let mut r = AnswerReader::new(Dialect::Anthropic);
        for piece in answer.chunks(16 * 1024) {
            r.feed(piece);
            assert!(r.unit.bytes.len() <= UNIT_MAX, "{}", r.unit.bytes.len());
        }
        let mut billed = Billed::default();
        r.finish(&mut billed);
        // The model was in the dropped start: unknown, priced at the highest.
        assert_eq!(billed.by_model[0].0, "unknown");
        assert_eq!(billed.by_model[0].1.output, 900_000);
    }

    #[test]
    fn errors_and_bad_bytes_never_panic_and_count_as_unread() {
        let b = read(
            Dialect::Anthropic,
            b"HTTP/1.1 429 Too Many\r\nContent-Length: 2\r\n\r\n{}",
            4,
        );
        assert_eq!(b, Billed::default(), "an error answer bills nothing");
        let b = read(
            Dialect::OpenAi,
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n\x1f\x8b\x08",
            4,
        );
        assert_eq!((b.answers, b.unread), (0, 1));
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let good = sse(ANTHROPIC_STREAM);
        for round in 0..2000 {
            let mut bytes = good.clone();
            for _ in 0..(round % 17) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed as usize) % bytes.len();
                bytes[at] = (seed >> 32) as u8;
            }
            bytes.truncate((seed as usize >> 5) % (bytes.len() + 1));
            for dialect in [Dialect::Anthropic, Dialect::OpenAi, Dialect::Gemini] {
                let _ = read(dialect, &bytes, 1 + round % 9);
                let _ = read(dialect, &chunked(&bytes), 1 + round % 5);
            }
        }
    }

    #[test]
    fn models_are_priced_each_and_their_count_is_bounded() {
        let mut billed = Billed::default();
        let t = Tokens {
            input: 0,
            output: 1_000_000,
            cache_read: 0,
            cache_write: 0,
        };
        billed.add(Some("claude-opus-4-5"), t);
        billed.add(Some("claude-haiku-4-5"), t);
        for n in 0..20 {
            billed.add(Some(&format!("model-{n}")), t);
        }
        assert_eq!(billed.by_model.len(), MODELS_MAX + 1);
        let table = PriceTable::new(&Default::default());
        let priced = billed.priced(&table);
        assert_eq!(priced.tokens.output, 22_000_000);
        let opus = table.cost("claude-opus-4-5", t, None).0;
        assert!(priced.usd > opus * 2.0, "{priced:?}");
        assert_eq!(priced.answers, 22);
    }

    /// What reading costs: a typical streamed answer (claude, 60 events, 20 kB).
    #[test]
    fn reading_an_answer_costs_microseconds() {
        let mut events: Vec<String> = vec![ANTHROPIC_STREAM[0].to_owned()];
        for _ in 0..60 {
            events.push(format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{}"}}}}"#,
                "w".repeat(300)
            ));
        }
        events.push(ANTHROPIC_STREAM[2].to_owned());
        let refs: Vec<&str> = events.iter().map(String::as_str).collect();
        let answer = sse(&refs);
        let start = std::time::Instant::now();
        let runs = 200;
        for _ in 0..runs {
            let b = read(Dialect::Anthropic, &answer, 4096);
            assert_eq!(b.answers, 1);
        }
        let per = start.elapsed() / runs;
        eprintln!("billed: {} bytes read in {per:?} per answer", answer.len());
        assert!(per < std::time::Duration::from_millis(20), "{per:?}");
    }
}
