//! The serve loop: stdout protection, line framing, and the jsonrpsee `RpcModule` with the
//! four protocol methods (`docs/protocol.md` §1–§6).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use agent_runner_protocol::limits::MAX_LINE_BYTES;
use agent_runner_protocol::line::{BoundedLines, Found, LongLines};
use agent_runner_protocol::{
    check_host_events, decode, decode_detection, decode_dirty_result, decode_enrichment,
    decode_initialize_result, decode_observation, decode_post_round_result, decode_round_decision,
    decode_spawn_decision, decode_startup_result, error_codes, methods, AfterRoundParams,
    BeforeRoundParams, BeforeSpawnParams, DetectParams, EnrichParams, Family, HandleDirtyParams,
    HookDecl, HookName, HostEvent, InitializeParams, InitializeResult, InvalidMessage,
    ObserveParams, OnStartParams, PROTOCOL_VERSION,
};
use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{Methods, RpcModule};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::{HookError, HookImpl, Hooks, Host, SetupFn};

/// `EX_SOFTWARE` (sysexits.h): the host cannot start serving.
const EXIT_SOFTWARE: u8 = 70;
/// `EX_IOERR` (sysexits.h): reading stdin or writing stdout failed.
const EXIT_IOERR: u8 = 74;

pub(crate) fn run(host: Host) -> ExitCode {
    let out = match protect_stdout() {
        Ok(out) => out,
        Err(err) => {
            eprintln!("agent-runner-sdk: cannot set up the protocol stream on stdout: {err}");
            return ExitCode::from(EXIT_SOFTWARE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("agent-runner-sdk: cannot start the tokio runtime: {err}");
            return ExitCode::from(EXIT_SOFTWARE);
        }
    };
    let methods = build_methods(host);
    match serve_lines(&runtime, &methods, io::stdin().lock(), out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("agent-runner-sdk: protocol stream failed: {err}");
            ExitCode::from(EXIT_IOERR)
        }
    }
}

/// Keeps the real stdout on a private close-on-exec descriptor (returned) and points fd 1
/// at stderr, so that only the serve loop can write protocol messages (`docs/protocol.md` §1:
/// "stdout carries protocol messages only").
fn protect_stdout() -> io::Result<File> {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) takes only integer arguments and touches no memory of
    // ours; it returns a new descriptor (>= 3) or -1 with errno set.
    let fd = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created by fcntl above and nothing else refers to it, so the
    // `File` becomes its sole owner and closes it exactly once.
    let out = unsafe { File::from_raw_fd(fd) };
    // SAFETY: dup2 takes only integer descriptors. Replacing fd 1 is sound for Rust code:
    // std's `Stdout` holds no ownership of fd 1, it just writes to the number.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        // No stderr (fd 2 closed): silence fd 1 instead, it must not stay the protocol pipe.
        let dup_err = io::Error::last_os_error();
        let null = File::options()
            .write(true)
            .open("/dev/null")
            .map_err(|_| dup_err)?;
        // SAFETY: as above; `null` is open for the duration of the call and fd 1 gets its
        // own reference to the file description.
        if unsafe { libc::dup2(null.as_raw_fd(), libc::STDOUT_FILENO) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(out)
}

/// Reads from `input` until `lines` frames the next line; `None` at end of input.
fn next_line(input: &mut impl BufRead, lines: &mut BoundedLines) -> io::Result<Option<Found>> {
    loop {
        let available = match input.fill_buf() {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(lines.finish());
        }
        let (used, found) = lines.push(available);
        input.consume(used);
        if found.is_some() {
            return Ok(found);
        }
    }
}

/// Serves requests from `input` until end-of-file, one response line per request line.
pub(crate) fn serve_lines(
    runtime: &tokio::runtime::Runtime,
    methods: &Methods,
    mut input: impl BufRead,
    mut output: impl Write,
) -> io::Result<()> {
    // A too-long line is answered once; its rest is dropped (never held).
    let mut lines = BoundedLines::new(MAX_LINE_BYTES, LongLines::Skip);
    loop {
        let reply = match next_line(&mut input, &mut lines)? {
            None => return Ok(()),
            Some(Found::TooLong) => Some(error_line(
                &Value::Null,
                error_codes::INVALID_REQUEST,
                &format!("line longer than {MAX_LINE_BYTES} bytes"),
            )),
            // The last line may lack its newline.
            Some(Found::Line | Found::Unterminated) => handle_line(runtime, methods, lines.line()),
        };
        if let Some(reply) = reply {
            let mut bytes = reply.into_bytes();
            bytes.push(b'\n');
            output.write_all(&bytes)?;
            output.flush()?;
        }
    }
}

/// Answers one line: `None` for blank lines and notifications (no reply).
fn handle_line(
    runtime: &tokio::runtime::Runtime,
    methods: &Methods,
    line: &[u8],
) -> Option<String> {
    let Ok(text) = std::str::from_utf8(line) else {
        return Some(error_line(
            &Value::Null,
            error_codes::PARSE_ERROR,
            "parse error: line is not UTF-8",
        ));
    };
    if text.trim().is_empty() {
        return None;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            return Some(error_line(
                &Value::Null,
                error_codes::PARSE_ERROR,
                &format!("parse error: {err}"),
            ))
        }
    };
    let id = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    match &value {
        Value::Array(_) => {
            return Some(error_line(
                &Value::Null,
                error_codes::INVALID_REQUEST,
                "invalid request: batches are not supported",
            ))
        }
        Value::Object(obj) if obj.contains_key("method") && !obj.contains_key("id") => {
            // A notification: JSON-RPC 2.0 never answers those; protocol v1 has none.
            return None;
        }
        _ => {}
    }
    let reply = match runtime.block_on(methods.raw_json_request(text, 1)) {
        Ok((response, _subscriptions)) => response.get().to_owned(),
        Err(err) => error_line(
            &id,
            error_codes::INVALID_REQUEST,
            &format!("invalid request: {err}"),
        ),
    };
    if reply.len() + 1 > MAX_LINE_BYTES {
        return Some(error_line(
            &id,
            error_codes::INTERNAL_ERROR,
            &format!(
                "response of {} bytes exceeds the {MAX_LINE_BYTES}-byte line limit",
                reply.len() + 1
            ),
        ));
    }
    Some(reply)
}

fn error_line(id: &Value, code: i32, message: &str) -> String {
    json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": id}).to_string()
}

/// The hooks installed by `initialize`, by name, and the event kinds they may emit.
struct Installed {
    hooks: HashMap<String, HookImpl>,
    event_kinds: Vec<String>,
}

struct State {
    name: String,
    version: String,
    setup: Box<SetupFn>,
    installed: Mutex<Option<Arc<Installed>>>,
}

impl State {
    fn installed(&self) -> Result<Arc<Installed>, ErrorObjectOwned> {
        self.installed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
            .ok_or_else(|| {
                error(
                    error_codes::INVALID_REQUEST,
                    "invalid request: `initialize` has not succeeded yet",
                )
            })
    }
}

type RpcResult = Result<Value, ErrorObjectOwned>;

fn build_methods(host: Host) -> Methods {
    let state = State {
        name: host.name,
        version: host.version,
        setup: host.setup,
        installed: Mutex::new(None),
    };
    let mut module = RpcModule::new(state);
    let registered = [
        module
            .register_method(methods::INITIALIZE, |p: Params, s: &State, _| {
                initialize(s, &p)
            })
            .map(|_| ()),
        module
            .register_method(methods::BEFORE_SPAWN, |p: Params, s: &State, _| {
                before_spawn(s, &p)
            })
            .map(|_| ()),
        module
            .register_method(methods::HANDLE_DIRTY, |p: Params, s: &State, _| {
                handle_dirty(s, &p)
            })
            .map(|_| ()),
        module
            .register_method(methods::BEFORE_ROUND, |p: Params, s: &State, _| {
                before_round(s, &p)
            })
            .map(|_| ()),
        module
            .register_method(methods::ENRICH, |p: Params, s: &State, _| enrich(s, &p))
            .map(|_| ()),
        module
            .register_method(methods::ON_START, |p: Params, s: &State, _| on_start(s, &p))
            .map(|_| ()),
        module
            .register_method(methods::DETECT, |p: Params, s: &State, _| detect(s, &p))
            .map(|_| ()),
        module
            .register_method(methods::AFTER_ROUND, |p: Params, s: &State, _| {
                after_round(s, &p)
            })
            .map(|_| ()),
        module
            .register_method(methods::OBSERVE, |p: Params, s: &State, _| observe(s, &p))
            .map(|_| ()),
        module
            .register_method(methods::SHUTDOWN, |p: Params, _: &State, _| shutdown(&p))
            .map(|_| ()),
    ];
    for result in registered {
        // The names are distinct constants: registration cannot collide.
        result.expect("protocol method names are distinct");
    }
    module.into()
}

fn error(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message, None::<()>)
}

fn invalid_params(err: InvalidMessage) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(
        error_codes::INVALID_PARAMS,
        format!("invalid params: {err}"),
        Some(json!({"field": err.field})),
    )
}

fn hook_failed(err: HookError) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(error_codes::HOOK_FAILED, err.message, err.data)
}

fn params_value(params: &Params) -> Result<Value, ErrorObjectOwned> {
    match params.as_str() {
        None => Ok(Value::Null),
        Some(raw) => serde_json::from_str(raw).map_err(|err| {
            error(
                error_codes::INVALID_PARAMS,
                format!("invalid params: {err}"),
            )
        }),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(non-text panic payload)")
}

/// Runs host code, turning a panic into `-32000` and an `Err` into its error object.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, HookError>) -> Result<T, ErrorObjectOwned> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result.map_err(hook_failed),
        Err(payload) => Err(error(
            error_codes::HOOK_FAILED,
            format!("{what} panicked: {}", panic_message(&*payload)),
        )),
    }
}

fn initialize(state: &State, params: &Params) -> RpcResult {
    let value = params_value(params)?;
    // The version is checked before the shape: a supervisor speaking another version may
    // send other fields, and must learn which versions this host speaks (`docs/protocol.md` §3).
    if let Some(version) = value.get("protocol_version") {
        if version.as_u64() != Some(u64::from(PROTOCOL_VERSION)) {
            return Err(ErrorObjectOwned::owned(
                error_codes::UNSUPPORTED_PROTOCOL_VERSION,
                format!(
                    "unsupported protocol version {version}; this host speaks {PROTOCOL_VERSION}"
                ),
                Some(json!({"supported": [PROTOCOL_VERSION]})),
            ));
        }
    }
    let init: InitializeParams = decode(value).map_err(invalid_params)?;
    let mut installed = state
        .installed
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if installed.is_some() {
        return Err(error(
            error_codes::INVALID_REQUEST,
            "invalid request: already initialized",
        ));
    }
    let hooks = guarded("setup", || (state.setup)(&init))?;
    let event_kinds = hooks.event_kinds.clone();
    let owned_paths = hooks.owned_paths.clone();
    let (hooks, decls) = install(hooks)?;
    let result = InitializeResult {
        protocol_version: PROTOCOL_VERSION,
        name: state.name.clone(),
        version: state.version.clone(),
        hooks: decls,
        event_kinds,
        owned_paths,
    };
    let value = serde_json::to_value(result)
        .map_err(|err| error(error_codes::INTERNAL_ERROR, err.to_string()))?;
    // Event kinds and owned paths follow the same rules the supervisor checks.
    decode_initialize_result(value.clone()).map_err(|err| {
        error(
            error_codes::INTERNAL_ERROR,
            format!("host declares an invalid initialize result: {err}"),
        )
    })?;
    *installed = Some(Arc::new(hooks));
    Ok(value)
}

/// Checks the declared hooks (`docs/protocol.md` §3: name syntax, unique within the host) and indexes them.
fn install(hooks: Hooks) -> Result<(Installed, Vec<HookDecl>), ErrorObjectOwned> {
    let mut installed = Installed {
        hooks: HashMap::new(),
        event_kinds: hooks.event_kinds,
    };
    let mut decls = Vec::with_capacity(hooks.entries.len());
    for entry in hooks.entries {
        let name = HookName::try_from(entry.name).map_err(|msg| {
            error(
                error_codes::INTERNAL_ERROR,
                format!("host declares an invalid hook: {msg}"),
            )
        })?;
        if decls.iter().any(|d: &HookDecl| d.name == name) {
            return Err(error(
                error_codes::INTERNAL_ERROR,
                format!("host declares hook `{name}` twice"),
            ));
        }
        let family = entry.hook.family();
        installed.hooks.insert(name.to_string(), entry.hook);
        decls.push(HookDecl {
            family,
            name,
            priority: entry.priority,
        });
    }
    Ok((installed, decls))
}

fn unknown_hook(family: Family, name: &HookName, installed: &Installed) -> ErrorObjectOwned {
    let mut names: Vec<&str> = installed
        .hooks
        .iter()
        .filter(|(_, h)| h.family() == family)
        .map(|(n, _)| n.as_str())
        .collect();
    names.sort_unstable();
    ErrorObjectOwned::owned(
        error_codes::INVALID_PARAMS,
        format!(
            "invalid params: `hook`: this host has no {family} named {:?} (its {family}s: {})",
            name.as_str(),
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ),
        Some(json!({"field": "hook"})),
    )
}

/// Params of every hook call name the hook first.
trait NamesHook: DeserializeOwned {
    fn hook(&self) -> &HookName;
}

macro_rules! names_hook {
    ($($t:ty),*) => {$(impl NamesHook for $t {
        fn hook(&self) -> &HookName {
            &self.hook
        }
    })*};
}
names_hook!(
    BeforeSpawnParams,
    HandleDirtyParams,
    BeforeRoundParams,
    EnrichParams,
    OnStartParams,
    DetectParams,
    AfterRoundParams,
    ObserveParams
);

/// One hook call: decodes `P` strictly, finds the hook of `family` it names, runs it
/// (guarded), and checks the answer with `check` before it is sent (a bad answer is
/// `-32603`, never sent).
fn dispatch<P: NamesHook, R: Serialize>(
    state: &State,
    params: &Params,
    family: Family,
    run: impl FnOnce(&HookImpl, &P) -> Option<Result<R, HookError>>,
    check: impl FnOnce(Value, &P, &Installed) -> Result<(), InvalidMessage>,
) -> RpcResult {
    let installed = state.installed()?;
    let params: P = decode(params_value(params)?).map_err(invalid_params)?;
    let hook = installed
        .hooks
        .get(params.hook().as_str())
        .filter(|h| h.family() == family)
        .ok_or_else(|| unknown_hook(family, params.hook(), &installed))?;
    // "spawn hook `gate` panicked: …": the family in words, as the error messages say it.
    let what = format!("{} `{}`", family.as_str().replace('_', " "), params.hook());
    let answer = guarded(&what, || {
        run(hook, &params).expect("the hook's family was checked above")
    })?;
    let value = serde_json::to_value(&answer)
        .map_err(|err| error(error_codes::INTERNAL_ERROR, err.to_string()))?;
    check(value.clone(), &params, &installed).map_err(|err| {
        error(
            error_codes::INTERNAL_ERROR,
            format!("{what} returned an invalid result: {err}"),
        )
    })?;
    Ok(value)
}

/// The events of a checked result against the kinds the host declared.
fn events_declared(events: &[HostEvent], installed: &Installed) -> Result<(), InvalidMessage> {
    check_host_events(events, &installed.event_kinds)
}

fn before_spawn(state: &State, params: &Params) -> RpcResult {
    dispatch(
        state,
        params,
        Family::SpawnHook,
        |h, p: &BeforeSpawnParams| match h {
            HookImpl::Spawn(hook) => Some(hook.before_spawn(p)),
            _ => None,
        },
        |v, _, _| decode_spawn_decision(v).map(drop),
    )
}

fn handle_dirty(state: &State, params: &Params) -> RpcResult {
    dispatch(
        state,
        params,
        Family::DirtyHandler,
        |h, p: &HandleDirtyParams| match h {
            HookImpl::Dirty(handler) => Some(handler.handle_dirty(p)),
            _ => None,
        },
        |v, p, _| decode_dirty_result(v, &p.dirty_files).map(drop),
    )
}

fn before_round(state: &State, params: &Params) -> RpcResult {
    dispatch(
        state,
        params,
        Family::PreRound,
        |h, p: &BeforeRoundParams| match h {
            HookImpl::PreRound(hook) => Some(hook.before_round(p)),
            _ => None,
        },
        |v, _, i| events_declared(&decode_round_decision(v)?.events, i),
    )
}

fn enrich(state: &State, params: &Params) -> RpcResult {
    dispatch(
        state,
        params,
        Family::ContextEnricher,
        |h, p: &EnrichParams| match h {
            HookImpl::Enricher(enricher) => Some(enricher.enrich(p)),
            _ => None,
        },
        |v, _, i| events_declared(&decode_enrichment(v)?.events, i),
    )
}

fn on_start(state: &State, params: &Params) -> RpcResult {
    dispatch(
        state,
        params,
        Family::ServeStartup,
        |h, p: &OnStartParams| match h {
            HookImpl::Startup(hook) => Some(hook.on_start(p)),
            _ => None,
        },
        |v, _, i| events_declared(&decode_startup_result(v)?.events, i),
    )
}

fn detect(state: &State, params: &Params) -> RpcResult {
    dispatch(
        state,
        params,
        Family::Detector,
        |h, p: &DetectParams| match h {
            HookImpl::Detector(detector) => Some(detector.detect(p)),
            _ => None,
        },
        |v, _, i| events_declared(&decode_detection(v)?.events, i),
    )
}

fn after_round(state: &State, params: &Params) -> RpcResult {
    dispatch(
        state,
        params,
        Family::PostRound,
        |h, p: &AfterRoundParams| match h {
            HookImpl::PostRound(hook) => Some(hook.after_round(p)),
            _ => None,
        },
        |v, _, _| decode_post_round_result(v).map(drop),
    )
}

fn observe(state: &State, params: &Params) -> RpcResult {
    dispatch(
        state,
        params,
        Family::OutputWatch,
        |h, p: &ObserveParams| match h {
            HookImpl::OutputWatch(watch) => Some(watch.observe(p)),
            _ => None,
        },
        |v, _, _| decode_observation(v).map(drop),
    )
}

/// `shutdown` (`docs/protocol.md` §5): no params (absent, `null`, `{}` or `[]` accepted); result `null`. The
/// process exits when stdin reaches end-of-file, which the supervisor closes next.
fn shutdown(params: &Params) -> RpcResult {
    match params_value(params)? {
        Value::Null => Ok(Value::Null),
        Value::Object(map) if map.is_empty() => Ok(Value::Null),
        Value::Array(items) if items.is_empty() => Ok(Value::Null),
        _ => Err(ErrorObjectOwned::owned(
            error_codes::INVALID_PARAMS,
            "invalid params: `shutdown` takes no params",
            Some(json!({"field": "."})),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the serve loop makes of a line.
    #[derive(Debug, PartialEq)]
    enum Line {
        /// Handled as a request.
        Complete,
        /// Answered with an error, its bytes dropped.
        TooLong,
    }

    fn lines(input: &[u8], max: usize) -> Vec<(Line, String)> {
        let mut reader = io::BufReader::with_capacity(4, input);
        let mut framed = BoundedLines::new(max, LongLines::Skip);
        let mut out = Vec::new();
        while let Some(found) = next_line(&mut reader, &mut framed).unwrap() {
            out.push(match found {
                Found::TooLong => (Line::TooLong, String::new()),
                Found::Line | Found::Unterminated => (
                    Line::Complete,
                    String::from_utf8(framed.line().to_vec()).unwrap(),
                ),
            });
        }
        out
    }

    #[test]
    fn bounded_lines_skip_overlong_ones_to_the_newline() {
        // max 6 bytes newline included: "12345\n" fits, "123456\n" does not.
        let got = lines(b"12345\n123456\nab\n\nlast", 6);
        assert_eq!(
            got,
            vec![
                (Line::Complete, "12345".into()),
                (Line::TooLong, String::new()),
                (Line::Complete, "ab".into()),
                (Line::Complete, String::new()),
                (Line::Complete, "last".into()),
            ]
        );
        assert_eq!(
            lines(b"toolongtail", 6),
            vec![(Line::TooLong, String::new())]
        );
        assert!(lines(b"", 6).is_empty());
    }
}
