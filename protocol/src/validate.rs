//! Strict decoding of results and params: serde shape checks (naming the field that broke)
//! followed by the range and vocabulary rules of `docs/protocol.md` §3–§6.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;
use std::fmt;

use crate::limits::{
    MAX_COMMIT_MESSAGE_CHARS, MAX_DEFER_S, MAX_ENRICHMENT_BYTES, MAX_EVENT_KINDS,
    MAX_EVENT_KIND_LEN, MAX_HOST_EVENTS_PER_RESULT, MAX_HOST_EVENT_BYTES, MAX_OWNED_PATHS,
};
use crate::types::{
    Detection, DirtyAction, Enrichment, HostEvent, InitializeResult, Observation, PostRoundAction,
    PostRoundVerdict, RoundDecision, SpawnDecision, StartupResult,
};
use crate::{Family, PROTOCOL_VERSION};

/// A message that broke the contract: `field` is the JSON path (`hooks[0].family`, or
/// `.` for the whole message) and `message` what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidMessage {
    /// JSON path of the offending value.
    pub field: String,
    /// What was wrong, in words.
    pub message: String,
}

impl InvalidMessage {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        InvalidMessage {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for InvalidMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for InvalidMessage {}

/// Deserializes the JSON object `value` into `T`, reporting the path of the first field
/// that does not fit. Anything but an object (serde would also accept a struct written as
/// an array) is rejected.
pub fn decode<T: DeserializeOwned>(value: Value) -> Result<T, InvalidMessage> {
    if !value.is_object() {
        return Err(InvalidMessage::new(
            ".",
            format!("expected a JSON object, got {}", kind_of(&value)),
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        InvalidMessage::new(path, message)
    })
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Decodes an `initialize` result: shape, `protocol_version == 1`, unique hook names,
/// `priority` only on dirty handlers.
pub fn decode_initialize_result(value: Value) -> Result<InitializeResult, InvalidMessage> {
    let result: InitializeResult = decode(value)?;
    if result.protocol_version != PROTOCOL_VERSION {
        return Err(InvalidMessage::new(
            "protocol_version",
            format!(
                "host speaks protocol version {}, the supervisor speaks {PROTOCOL_VERSION}",
                result.protocol_version
            ),
        ));
    }
    let mut seen = HashSet::new();
    for (i, hook) in result.hooks.iter().enumerate() {
        if !seen.insert(hook.name.as_str()) {
            return Err(InvalidMessage::new(
                format!("hooks[{i}].name"),
                format!("hook name {:?} declared twice", hook.name.as_str()),
            ));
        }
        if hook.family != Family::DirtyHandler && hook.priority.is_some() {
            return Err(InvalidMessage::new(
                format!("hooks[{i}].priority"),
                "priority is for dirty handlers only",
            ));
        }
    }
    check_event_kinds(&result.event_kinds)?;
    check_owned_paths(&result.owned_paths)?;
    Ok(result)
}

/// `event_kinds`: at most [`MAX_EVENT_KINDS`], unique, each `^[a-z][a-z0-9_]{0,47}$`.
fn check_event_kinds(kinds: &[String]) -> Result<(), InvalidMessage> {
    if kinds.len() > MAX_EVENT_KINDS {
        return Err(InvalidMessage::new(
            "event_kinds",
            format!("{} kinds declared; at most {MAX_EVENT_KINDS}", kinds.len()),
        ));
    }
    let mut seen = HashSet::new();
    for (i, kind) in kinds.iter().enumerate() {
        let ok = kind.len() <= MAX_EVENT_KIND_LEN
            && kind.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && kind
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !ok {
            return Err(InvalidMessage::new(
                format!("event_kinds[{i}]"),
                format!("{kind:?} must match ^[a-z][a-z0-9_]{{0,47}}$"),
            ));
        }
        if !seen.insert(kind) {
            return Err(InvalidMessage::new(
                format!("event_kinds[{i}]"),
                format!("{kind:?} declared twice"),
            ));
        }
    }
    Ok(())
}

/// `owned_paths`: at most [`MAX_OWNED_PATHS`], each relative to `work_dir`, without
/// `.` / `..` components, not `.git` or inside it, no NUL or newline.
fn check_owned_paths(paths: &[String]) -> Result<(), InvalidMessage> {
    if paths.len() > MAX_OWNED_PATHS {
        return Err(InvalidMessage::new(
            "owned_paths",
            format!("{} paths declared; at most {MAX_OWNED_PATHS}", paths.len()),
        ));
    }
    for (i, path) in paths.iter().enumerate() {
        let trimmed = path.trim_end_matches('/');
        let bad = if trimmed.is_empty() {
            Some("is empty")
        } else if trimmed.starts_with('/') {
            Some("must be relative to work_dir")
        } else if trimmed.contains(['\0', '\n']) {
            Some("contains NUL or a newline")
        } else if trimmed
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
        {
            Some("must not have empty, `.` or `..` components")
        } else if trimmed.split('/').next() == Some(".git") {
            Some("must not be .git or inside it")
        } else {
            None
        };
        if let Some(why) = bad {
            return Err(InvalidMessage::new(
                format!("owned_paths[{i}]"),
                format!("{path:?} {why}"),
            ));
        }
    }
    Ok(())
}

/// Checks the `events` of a result from a host that declared `declared` kinds: at most
/// [`MAX_HOST_EVENTS_PER_RESULT`], each kind declared, each `fields` object at most
/// [`MAX_HOST_EVENT_BYTES`] bytes of compact JSON without the supervisor's keys (`ts`,
/// `event`, `host`, `hook`).
pub fn check_host_events(events: &[HostEvent], declared: &[String]) -> Result<(), InvalidMessage> {
    if events.len() > MAX_HOST_EVENTS_PER_RESULT {
        return Err(InvalidMessage::new(
            "events",
            format!(
                "{} events in one result; at most {MAX_HOST_EVENTS_PER_RESULT}",
                events.len()
            ),
        ));
    }
    for (i, event) in events.iter().enumerate() {
        if !declared.contains(&event.kind) {
            return Err(InvalidMessage::new(
                format!("events[{i}].kind"),
                format!(
                    "{:?} is not one of the host's declared event_kinds {declared:?}",
                    event.kind
                ),
            ));
        }
        if let Some(key) = ["ts", "event", "host", "hook"]
            .into_iter()
            .find(|k| event.fields.contains_key(*k))
        {
            return Err(InvalidMessage::new(
                format!("events[{i}].fields.{key}"),
                "is set by the supervisor",
            ));
        }
        let size = serde_json::to_vec(&event.fields).map_or(usize::MAX, |v| v.len());
        if size > MAX_HOST_EVENT_BYTES {
            return Err(InvalidMessage::new(
                format!("events[{i}].fields"),
                format!("{size} bytes of JSON; at most {MAX_HOST_EVENT_BYTES}"),
            ));
        }
    }
    Ok(())
}

/// Decodes a `pre_round/before_round` result.
pub fn decode_round_decision(value: Value) -> Result<RoundDecision, InvalidMessage> {
    decode(value)
}

/// Decodes a `context_enricher/enrich` result; `context` is at most
/// [`MAX_ENRICHMENT_BYTES`] bytes of compact JSON.
pub fn decode_enrichment(value: Value) -> Result<Enrichment, InvalidMessage> {
    let enrichment: Enrichment = decode(value)?;
    let size = serde_json::to_vec(&enrichment.context).map_or(usize::MAX, |v| v.len());
    if size > MAX_ENRICHMENT_BYTES {
        return Err(InvalidMessage::new(
            "context",
            format!("{size} bytes of JSON; at most {MAX_ENRICHMENT_BYTES}"),
        ));
    }
    Ok(enrichment)
}

/// Decodes a `serve_startup/on_start` result (`{}` or `null` both mean "go on").
pub fn decode_startup_result(value: Value) -> Result<StartupResult, InvalidMessage> {
    if value.is_null() {
        return Ok(StartupResult::default());
    }
    decode(value)
}

/// Decodes a `detector/detect` result (`null` means no alert).
pub fn decode_detection(value: Value) -> Result<Detection, InvalidMessage> {
    if value.is_null() {
        return Ok(Detection::default());
    }
    decode(value)
}

/// Decodes a `spawn_hook/before_spawn` result; `defer_s` must be 0..=86400.
pub fn decode_spawn_decision(value: Value) -> Result<SpawnDecision, InvalidMessage> {
    let decision: SpawnDecision = decode(value)?;
    if decision.defer_s > MAX_DEFER_S {
        return Err(InvalidMessage::new(
            "defer_s",
            format!("{} is out of range 0..={MAX_DEFER_S}", decision.defer_s),
        ));
    }
    Ok(decision)
}

/// Decodes a `dirty_handler/handle_dirty` result (`null` or an action) for a call that
/// sent `dirty_files`: a commit message is 1..=4096 characters without NUL, and every
/// path is one of `dirty_files`.
pub fn decode_dirty_result(
    value: Value,
    dirty_files: &[String],
) -> Result<Option<DirtyAction>, InvalidMessage> {
    let action = if value.is_null() {
        None
    } else {
        Some(decode_dirty_action(value)?)
    };
    if let Some(DirtyAction::Commit { message, paths }) = &action {
        let chars = message.chars().count();
        if chars == 0 || chars > MAX_COMMIT_MESSAGE_CHARS {
            return Err(InvalidMessage::new(
                "message",
                format!(
                    "commit message has {chars} characters; 1..={MAX_COMMIT_MESSAGE_CHARS} allowed"
                ),
            ));
        }
        if message.contains('\0') {
            return Err(InvalidMessage::new(
                "message",
                "commit message contains NUL",
            ));
        }
        for (i, path) in paths.iter().flatten().enumerate() {
            if !dirty_files.contains(path) {
                return Err(InvalidMessage::new(
                    format!("paths[{i}]"),
                    format!("{path:?} is not one of the dirty files"),
                ));
            }
        }
    }
    Ok(action)
}

/// Decodes an `output_watch/observe` result: `null` or an [`Observation`] of at most
/// [`crate::limits::MAX_OBSERVED_CALLS`] calls, each cost (when given) finite and ≥ 0.
pub fn decode_observation(value: Value) -> Result<Option<Observation>, InvalidMessage> {
    if value.is_null() {
        return Ok(None);
    }
    let observation: Observation = decode(value)?;
    if observation.usage.len() > crate::limits::MAX_OBSERVED_CALLS {
        return Err(InvalidMessage::new(
            "usage",
            format!(
                "{} calls reported; at most {} per answer",
                observation.usage.len(),
                crate::limits::MAX_OBSERVED_CALLS
            ),
        ));
    }
    if let Some(cost) = observation
        .usage
        .iter()
        .filter_map(|u| u.cost_usd)
        .find(|c| !(c.is_finite() && *c >= 0.0))
    {
        return Err(InvalidMessage::new(
            "usage.cost_usd",
            format!("{cost} is not a cost; expected US dollars ≥ 0"),
        ));
    }
    Ok(Some(observation))
}

/// Decodes a `post_round/after_round` result: `null` or a [`PostRoundVerdict`] where
/// `back_off` and `stop` carry a `kind`; `back_off` carries exactly one of `back_off_s`
/// (1..=86400) and `until` (RFC 3339, UTC, `Z` suffix); `continue` and `stop` carry
/// neither.
pub fn decode_post_round_result(value: Value) -> Result<Option<PostRoundVerdict>, InvalidMessage> {
    if value.is_null() {
        return Ok(None);
    }
    let verdict: PostRoundVerdict = decode(value)?;
    let wants_kind = verdict.action != PostRoundAction::Continue;
    if wants_kind && verdict.kind.is_none() {
        return Err(InvalidMessage::new(
            "kind",
            format!(
                "`{}` needs a kind: usage_limit, rate_limit, overloaded, network, auth or other",
                verdict.action.as_str()
            ),
        ));
    }
    match (verdict.action, verdict.back_off_s, verdict.until.as_deref()) {
        (PostRoundAction::BackOff, Some(_), Some(_)) => {
            return Err(InvalidMessage::new(
                "until",
                "give `back_off_s` or `until`, not both",
            ))
        }
        (PostRoundAction::BackOff, None, None) => {
            return Err(InvalidMessage::new(
                "back_off_s",
                "`back_off` needs `back_off_s` (seconds) or `until` (RFC 3339 UTC)",
            ))
        }
        (PostRoundAction::BackOff, Some(s), None) if !(1..=MAX_DEFER_S).contains(&s) => {
            return Err(InvalidMessage::new(
                "back_off_s",
                format!("{s} is out of range 1..={MAX_DEFER_S}"),
            ))
        }
        (PostRoundAction::BackOff, None, Some(until))
            if !until.ends_with('Z') || humantime::parse_rfc3339_weak(until).is_err() =>
        {
            return Err(InvalidMessage::new(
                "until",
                format!("{until:?} is not an RFC 3339 UTC time like 2026-11-30T05:00:00Z"),
            ))
        }
        (PostRoundAction::BackOff, _, _) => {}
        (action, Some(_), _) => {
            return Err(InvalidMessage::new(
                "back_off_s",
                format!(
                    "only `back_off` takes back_off_s, not `{}`",
                    action.as_str()
                ),
            ))
        }
        (action, _, Some(_)) => {
            return Err(InvalidMessage::new(
                "until",
                format!("only `back_off` takes until, not `{}`", action.as_str()),
            ))
        }
        _ => {}
    }
    Ok(Some(verdict))
}

/// The fields of `commit` besides `action`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommitFields {
    message: String,
    #[serde(default)]
    paths: Option<Vec<String>>,
}

/// The fields of `stash` besides `action`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StashFields {
    #[serde(default)]
    message: Option<String>,
}

/// `ignore` has no field besides `action`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IgnoreFields {}

/// Decodes one [`DirtyAction`] reading `action` first, so that an error in the other
/// fields names that field (serde's internally tagged enums report only `.`). The wire
/// shape is exactly [`DirtyAction`]'s.
fn decode_dirty_action(value: Value) -> Result<DirtyAction, InvalidMessage> {
    let Value::Object(mut fields) = value else {
        return Err(InvalidMessage::new(
            ".",
            format!("expected null or a JSON object, got {}", kind_of(&value)),
        ));
    };
    let action = match fields.remove("action") {
        Some(Value::String(action)) => action,
        Some(other) => {
            return Err(InvalidMessage::new(
                "action",
                format!("expected a string, got {}", kind_of(&other)),
            ))
        }
        None => return Err(InvalidMessage::new("action", "missing field `action`")),
    };
    let rest = Value::Object(fields);
    match action.as_str() {
        "commit" => decode::<CommitFields>(rest).map(|f| DirtyAction::Commit {
            message: f.message,
            paths: f.paths,
        }),
        "stash" => decode::<StashFields>(rest).map(|f| DirtyAction::Stash { message: f.message }),
        "ignore" => decode::<IgnoreFields>(rest).map(|_| DirtyAction::Ignore),
        other => Err(InvalidMessage::new(
            "action",
            format!("unknown action {other:?}; expected commit, stash or ignore"),
        )),
    }
}

/// A response line that passed [`decode_response`].
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    /// `result`.
    Result(Value),
    /// `error`: its `code`, `message` and optional `data`.
    Error {
        /// The JSON-RPC error code.
        code: i64,
        /// The message, as sent (the caller redacts it).
        message: String,
        /// `data`, when present.
        data: Option<Value>,
    },
}

/// Why a line on a host's stdout is not the response to the request in flight
/// (docs/protocol.md §1, §6). The `Display` text says what was seen; serve records it as a
/// `protocol_violation`, `plugin check` reports it under the rule of the request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvelopeError {
    /// Not a JSON object with `"jsonrpc": "2.0"` and an `id`: output that is no response
    /// at all (a `print`, a banner). Carries a short description of what it was.
    NotAResponse(String),
    /// An attempted response (it has an `id`, `result` or `error`) whose `jsonrpc` member
    /// is not `"2.0"`: the member as sent (JSON text), `None` when it is missing.
    WrongVersion(Option<String>),
    /// A response with `"jsonrpc": "2.0"` but no `id`: the id of the request in flight.
    MissingId(u64),
    /// A response whose `id` is `null` (what JSON-RPC 2.0 §5 sends for a request that
    /// could not be parsed): the id of the request in flight.
    NullId(u64),
    /// A response whose `id` is not the request's: `got` as sent (JSON text).
    WrongId {
        /// The id of the request in flight.
        expected: u64,
        /// The id the response carried, as JSON (`"1"` for a string).
        got: String,
    },
    /// A member other than `jsonrpc`, `id`, `result`, `error`.
    UnknownMember(String),
    /// Both `result` and `error`, or neither.
    ResultXorError,
    /// An `error` member that is not `{code: integer, message: string, data?}`.
    BadError(String),
}

impl fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvelopeError::NotAResponse(what) => write!(
                f,
                "not a JSON-RPC response on stdout: {what}; stdout is reserved for protocol messages; log to stderr"
            ),
            EnvelopeError::WrongVersion(None) => f.write_str(
                "response without \"jsonrpc\": \"2.0\"; every response carries \"jsonrpc\": \"2.0\"",
            ),
            EnvelopeError::WrongVersion(Some(got)) => write!(
                f,
                "response with \"jsonrpc\": {got}; every response carries \"jsonrpc\": \"2.0\""
            ),
            EnvelopeError::MissingId(expected) => write!(
                f,
                "response without an id to request id {expected}; echo the request's id unchanged"
            ),
            EnvelopeError::NullId(expected) => write!(
                f,
                "response id null does not match request id {expected}; a null id says the host could not parse the request"
            ),
            EnvelopeError::WrongId { expected, got } => {
                let kind = match serde_json::from_str::<Value>(got) {
                    Ok(Value::String(_)) => " (a string)",
                    Ok(Value::Number(_)) => "",
                    Ok(_) => " (not a number)",
                    Err(_) => "",
                };
                write!(
                    f,
                    "response id {got}{kind} does not match request id {expected}; echo the request's id unchanged"
                )
            }
            EnvelopeError::UnknownMember(name) => write!(
                f,
                "unknown member {name:?} in the response; a response has only jsonrpc, id and result or error"
            ),
            EnvelopeError::ResultXorError => {
                f.write_str("a response carries exactly one of result and error")
            }
            EnvelopeError::BadError(why) => write!(
                f,
                "invalid error object: {why}; send {{\"code\": integer, \"message\": string}}"
            ),
        }
    }
}

impl std::error::Error for EnvelopeError {}

/// The members that make a stdout object a response, before its `id` is compared: an
/// object with a `method`, or with none of `jsonrpc`, `id`, `result`, `error`, is no
/// response at all (stray output); an attempted response needs `"jsonrpc": "2.0"` and an
/// `id` (docs/protocol.md §6).
fn check_envelope_head(
    obj: &serde_json::Map<String, Value>,
    expected_id: u64,
) -> Result<(), EnvelopeError> {
    if obj.contains_key("method") {
        return Err(EnvelopeError::NotAResponse(
            "a JSON-RPC request or notification (it has a \"method\"); a host only answers".into(),
        ));
    }
    if !["jsonrpc", "id", "result", "error"]
        .iter()
        .any(|k| obj.contains_key(*k))
    {
        return Err(EnvelopeError::NotAResponse(
            "a JSON object without \"jsonrpc\": \"2.0\" and an id".into(),
        ));
    }
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        other => return Err(EnvelopeError::WrongVersion(other.map(Value::to_string))),
    }
    if !obj.contains_key("id") {
        return Err(EnvelopeError::MissingId(expected_id));
    }
    Ok(())
}

/// Decodes one stdout line of a host (newline stripped) as the response to the request
/// with id `expected_id`: a JSON object with exactly `jsonrpc: "2.0"`, `id` (the same
/// integer), and one of `result` or `error` (`{code, message, data?}`). The one validator
/// of the response envelope, shared by serve's transport and `plugin check`.
///
/// # Errors
/// [`EnvelopeError`] saying what was seen.
pub fn decode_response(line: &[u8], expected_id: u64) -> Result<Response, EnvelopeError> {
    let not_a_response = |what: &str| EnvelopeError::NotAResponse(what.to_owned());
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        not_a_response(&format!(
            "{} ({e})",
            if std::str::from_utf8(line).is_err() {
                "invalid UTF-8"
            } else {
                "not JSON"
            }
        ))
    })?;
    let Value::Object(mut obj) = value else {
        return Err(not_a_response(&format!("JSON that is {}", kind_of(&value))));
    };
    check_envelope_head(&obj, expected_id)?;
    let id = obj.remove("id").unwrap_or(Value::Null);
    if id.is_null() {
        return Err(EnvelopeError::NullId(expected_id));
    }
    if id.as_u64() != Some(expected_id) {
        return Err(EnvelopeError::WrongId {
            expected: expected_id,
            got: id.to_string(),
        });
    }
    obj.remove("jsonrpc");
    let result = obj.remove("result");
    let error = obj.remove("error");
    if let Some(name) = obj.keys().next() {
        return Err(EnvelopeError::UnknownMember(name.clone()));
    }
    match (result, error) {
        (Some(result), None) => Ok(Response::Result(result)),
        (None, Some(Value::Object(mut error))) => {
            let code = error
                .remove("code")
                .and_then(|c| c.as_i64())
                .ok_or_else(|| EnvelopeError::BadError("`code` is not an integer".into()))?;
            let message = match error.remove("message") {
                Some(Value::String(m)) => m,
                _ => return Err(EnvelopeError::BadError("`message` is not a string".into())),
            };
            let data = error.remove("data");
            if let Some(name) = error.keys().next() {
                return Err(EnvelopeError::BadError(format!("unknown member {name:?}")));
            }
            Ok(Response::Error {
                code,
                message,
                data,
            })
        }
        (None, Some(other)) => Err(EnvelopeError::BadError(format!(
            "`error` is {}",
            kind_of(&other)
        ))),
        _ => Err(EnvelopeError::ResultXorError),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::*;
    use serde_json::json;

    #[test]
    fn initialize_result_round_trips() {
        let value = json!({"protocol_version": 1, "name": "h", "version": "1.0.0",
            "hooks": [{"family": "spawn_hook", "name": "quiet_hours"},
                      {"family": "dirty_handler", "name": "wip", "priority": 100}]});
        let result = decode_initialize_result(value.clone()).unwrap();
        assert_eq!(result.hooks[1].priority, Some(100));
        assert_eq!(serde_json::to_value(&result).unwrap(), value);
    }

    #[test]
    fn initialize_result_rejections_name_the_field() {
        let cases = [
            (
                json!({"protocol_version": 2, "name": "h", "version": "1", "hooks": []}),
                "protocol_version",
            ),
            (
                json!({"protocol_version": 1, "name": "h", "version": "1", "hooks": [], "x": 1}),
                "x",
            ),
            (
                json!({"protocol_version": 1, "name": "h", "version": "1",
                    "hooks": [{"family": "other", "name": "a"}]}),
                "hooks[0].family",
            ),
            (
                json!({"protocol_version": 1, "name": "h", "version": "1",
                    "hooks": [{"family": "spawn_hook", "name": "Bad Name"}]}),
                "hooks[0].name",
            ),
            (
                json!({"protocol_version": 1, "name": "h", "version": "1",
                    "hooks": [{"family": "spawn_hook", "name": "a"}, {"family": "spawn_hook", "name": "a"}]}),
                "hooks[1].name",
            ),
            (
                json!({"protocol_version": 1, "name": "h", "version": "1",
                    "hooks": [{"family": "spawn_hook", "name": "a", "priority": 3}]}),
                "hooks[0].priority",
            ),
            (
                json!({"protocol_version": "1", "name": "h", "version": "1", "hooks": []}),
                "protocol_version",
            ),
        ];
        for (value, field) in cases {
            let err = decode_initialize_result(value.clone()).unwrap_err();
            assert_eq!(err.field, field, "{value}: {err}");
        }
    }

    #[test]
    fn declared_kinds_and_owned_paths_are_checked() {
        let base = |extra: Value| {
            let mut v = json!({"protocol_version": 1, "name": "h", "version": "1",
                "hooks": [{"family": "detector", "name": "d"}]});
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            v
        };
        let ok = decode_initialize_result(base(
            json!({"event_kinds": ["stalled"], "owned_paths": ["notes/", "reports/junit.xml"]}),
        ))
        .unwrap();
        assert_eq!(ok.event_kinds, ["stalled"]);
        for (extra, field) in [
            (json!({"event_kinds": ["Bad"]}), "event_kinds[0]"),
            (json!({"event_kinds": ["a", "a"]}), "event_kinds[1]"),
            (json!({"owned_paths": ["/abs"]}), "owned_paths[0]"),
            (json!({"owned_paths": ["ok", "a/../b"]}), "owned_paths[1]"),
            (json!({"owned_paths": [".git/hooks"]}), "owned_paths[0]"),
            (json!({"owned_paths": [""]}), "owned_paths[0]"),
        ] {
            let err = decode_initialize_result(base(extra.clone())).unwrap_err();
            assert_eq!(err.field, field, "{extra}: {err}");
        }
        let err = decode_initialize_result(json!({"protocol_version": 1, "name": "h",
            "version": "1", "hooks": [{"family": "detector", "name": "d", "priority": 1}]}))
        .unwrap_err();
        assert_eq!(err.field, "hooks[0].priority");
    }

    #[test]
    fn new_family_results_decode_strictly() {
        let skip = decode_round_decision(json!({"action": "skip", "reason": "r"})).unwrap();
        assert_eq!(skip.action, RoundAction::Skip);
        assert_eq!(
            decode_round_decision(json!({"action": "defer"}))
                .unwrap_err()
                .field,
            "action"
        );
        let e = decode_enrichment(json!({"context": {"a": 1}})).unwrap();
        assert_eq!(e.context["a"], 1);
        let big = "x".repeat(MAX_ENRICHMENT_BYTES);
        assert_eq!(
            decode_enrichment(json!({"context": {"a": big}}))
                .unwrap_err()
                .field,
            "context"
        );
        assert_eq!(
            decode_enrichment(json!({"context": [1]}))
                .unwrap_err()
                .field,
            "context"
        );
        assert_eq!(
            decode_startup_result(Value::Null).unwrap(),
            StartupResult::default()
        );
        assert_eq!(decode_detection(Value::Null).unwrap().alert, None);
        let d = decode_detection(json!({"alert": {"severity": "critical", "message": "m",
            "stop_service": true}}))
        .unwrap();
        assert!(d.alert.unwrap().stop_service);
        assert_eq!(
            decode_detection(json!({"alert": {"severity": "loud", "message": "m"}}))
                .unwrap_err()
                .field,
            "alert.severity"
        );
    }

    #[test]
    fn host_events_are_declared_capped_and_keep_our_keys() {
        let declared = vec!["stalled".to_owned()];
        let ev = |kind: &str, fields: Value| HostEvent {
            kind: kind.into(),
            fields: fields.as_object().unwrap().clone(),
        };
        check_host_events(&[ev("stalled", json!({"rounds": 3}))], &declared).unwrap();
        let cases = [
            (vec![ev("other", json!({}))], "events[0].kind"),
            (
                vec![ev("stalled", json!({"ts": "x"}))],
                "events[0].fields.ts",
            ),
            (
                vec![ev(
                    "stalled",
                    json!({"x": "y".repeat(MAX_HOST_EVENT_BYTES)}),
                )],
                "events[0].fields",
            ),
            (
                vec![ev("stalled", json!({})); MAX_HOST_EVENTS_PER_RESULT + 1],
                "events",
            ),
        ];
        for (events, field) in cases {
            assert_eq!(
                check_host_events(&events, &declared).unwrap_err().field,
                field
            );
        }
    }

    #[test]
    fn spawn_decision_ranges() {
        let ok = decode_spawn_decision(json!({"action": "defer", "defer_s": 86400, "reason": "r"}))
            .unwrap();
        assert_eq!(ok.action, SpawnAction::Defer);
        let minimal = decode_spawn_decision(json!({"action": "proceed"})).unwrap();
        assert_eq!((minimal.defer_s, minimal.reason.as_str()), (0, ""));
        for (value, field) in [
            (json!({"action": "defer", "defer_s": 86401}), "defer_s"),
            (json!({"action": "defer", "defer_s": -1}), "defer_s"),
            (json!({"action": "later"}), "action"),
            (json!({"action": "skip", "extra": true}), "extra"),
            (json!({"action": "skip", "reason": 5}), "reason"),
            (json!([1]), "."),
        ] {
            assert_eq!(
                decode_spawn_decision(value.clone()).unwrap_err().field,
                field,
                "{value}"
            );
        }
    }

    #[test]
    fn post_round_results() {
        assert_eq!(decode_post_round_result(Value::Null).unwrap(), None);
        let until = decode_post_round_result(json!({"action": "back_off", "kind": "usage_limit",
            "message": "limit", "until": "2026-11-30T05:00:00Z"}))
        .unwrap()
        .unwrap();
        assert_eq!(until.kind, Some(ErrorKind::UsageLimit));
        let secs = decode_post_round_result(
            json!({"action": "back_off", "kind": "rate_limit", "back_off_s": 60}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(secs.back_off_s, Some(60));
        let usage = decode_post_round_result(json!({"action": "continue",
            "usage": {"input_tokens": 3, "output_tokens": 4}}))
        .unwrap()
        .unwrap();
        assert_eq!(usage.usage.unwrap().output_tokens, 4);
        // `model` is optional: a host that predates it is still understood.
        let named = decode_post_round_result(json!({"action": "continue",
            "usage": {"input_tokens": 3, "output_tokens": 4, "model": "gemini-2.5-pro"}}))
        .unwrap()
        .unwrap();
        assert_eq!(
            named.usage.unwrap().model.as_deref(),
            Some("gemini-2.5-pro")
        );
        for (value, field) in [
            (json!({"action": "back_off", "back_off_s": 5}), "kind"),
            (json!({"action": "stop"}), "kind"),
            (
                json!({"action": "back_off", "kind": "network"}),
                "back_off_s",
            ),
            (
                json!({"action": "back_off", "kind": "network", "back_off_s": 0}),
                "back_off_s",
            ),
            (
                json!({"action": "back_off", "kind": "network", "back_off_s": 86401}),
                "back_off_s",
            ),
            (
                json!({"action": "back_off", "kind": "network", "back_off_s": 1, "until": "2026-11-30T05:00:00Z"}),
                "until",
            ),
            (
                json!({"action": "back_off", "kind": "network", "until": "tomorrow"}),
                "until",
            ),
            (
                json!({"action": "back_off", "kind": "network", "until": "2026-11-30T05:00:00+01:00"}),
                "until",
            ),
            (
                json!({"action": "stop", "kind": "auth", "back_off_s": 3}),
                "back_off_s",
            ),
            (
                json!({"action": "continue", "until": "2026-11-30T05:00:00Z"}),
                "until",
            ),
            (json!({"action": "pause", "kind": "other"}), "action"),
            (json!({"action": "stop", "kind": "quota"}), "kind"),
            (
                json!({"action": "stop", "kind": "auth", "extra": 1}),
                "extra",
            ),
        ] {
            assert_eq!(
                decode_post_round_result(value.clone()).unwrap_err().field,
                field,
                "{value}"
            );
        }
    }

    #[test]
    fn dirty_results() {
        let files = vec!["a.rs".to_owned(), "b.md".to_owned()];
        assert_eq!(decode_dirty_result(Value::Null, &files).unwrap(), None);
        assert_eq!(
            decode_dirty_result(json!({"action": "ignore"}), &files).unwrap(),
            Some(DirtyAction::Ignore)
        );
        let commit = decode_dirty_result(
            json!({"action": "commit", "message": "m", "paths": ["a.rs"]}),
            &files,
        )
        .unwrap();
        assert_eq!(
            commit,
            Some(DirtyAction::Commit {
                message: "m".into(),
                paths: Some(vec!["a.rs".into()])
            })
        );
        for (value, field) in [
            (json!({"action": "commit", "message": ""}), "message"),
            (json!({"action": "commit", "message": "a\u{0}b"}), "message"),
            (
                json!({"action": "commit", "message": "x".repeat(4097)}),
                "message",
            ),
            (
                json!({"action": "commit", "message": "m", "paths": ["c.rs"]}),
                "paths[0]",
            ),
            (json!({"action": "stash", "bogus": 1}), "bogus"),
            (json!({"action": "delete"}), "action"),
        ] {
            assert_eq!(
                decode_dirty_result(value.clone(), &files)
                    .unwrap_err()
                    .field,
                field,
                "{value}"
            );
        }
    }

    #[test]
    fn params_decode_strictly() {
        let ctx = json!({"work_dir": "/w", "log_dir": "/l", "project": "p", "round_num": 7,
            "phase": null, "agent_name": null, "agent_binary": "claude", "agent_log_path": null,
            "dry_run": false, "vcs": {"dirty_action": "stash", "stash_idempotency_s": 5}});
        let params: BeforeSpawnParams = decode(json!({"hook": "q", "ctx": ctx.clone(),
            "spawn": {"argv": ["claude"], "env_names": ["HOME"]}}))
        .unwrap();
        assert_eq!(params.ctx.round_num, 7);
        let err = decode::<HandleDirtyParams>(json!({"hook": "q", "ctx": ctx, "dirty_files": "a"}))
            .unwrap_err();
        assert_eq!(err.field, "dirty_files");
    }

    #[test]
    fn response_envelope_says_what_was_seen() {
        let ok = decode_response(br#"{"jsonrpc":"2.0","id":3,"result":null}"#, 3).unwrap();
        assert_eq!(ok, Response::Result(Value::Null));
        let err = decode_response(
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"m","data":[1]}}"#,
            3,
        )
        .unwrap();
        assert_eq!(
            err,
            Response::Error {
                code: -32000,
                message: "m".into(),
                data: Some(json!([1]))
            }
        );
        let cases: [(&[u8], &str); 15] = [
            (
                br#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
                "response with \"jsonrpc\": \"1.0\"; every response carries",
            ),
            (
                br#"{"jsonrpc":2,"id":1,"result":{}}"#,
                "response with \"jsonrpc\": 2;",
            ),
            (
                br#"{"jsonrpc":"2.0","result":{}}"#,
                "response without an id to request id 1",
            ),
            (
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}"#,
                "response id null does not match request id 1; a null id",
            ),
            (
                br#"{"jsonrpc":"2.0","method":"log","params":{}}"#,
                "not a JSON-RPC response on stdout: a JSON-RPC request or notification",
            ),
            (
                br#"{"jsonrpc":"2.0","id":"1","result":{}}"#,
                "response id \"1\" (a string) does not match request id 1",
            ),
            (
                br#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
                "response id 2 does not match request id 1",
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"result":{},"extra":1}"#,
                "unknown member \"extra\"",
            ),
            (
                br#"{"jsonrpc":"2.0","id":1}"#,
                "exactly one of result and error",
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
                "exactly one of result and error",
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#,
                "`code` is not an integer",
            ),
            (b"hello", "not JSON"),
            (
                br#"{"id":1,"result":{}}"#,
                "response without \"jsonrpc\": \"2.0\"",
            ),
            (br#"{"level":"info"}"#, "not a JSON-RPC response on stdout"),
            (b"[1]", "JSON that is an array"),
        ];
        for (line, says) in cases {
            let err = decode_response(line, 1).unwrap_err().to_string();
            assert!(
                err.contains(says),
                "{}: {err}",
                String::from_utf8_lossy(line)
            );
        }
    }
}
