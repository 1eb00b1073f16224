//! Write agent-runner plugin hosts in Rust.
//!
//! A *host* is an executable the supervisor starts, confines and talks to with JSON-RPC 2.0,
//! one object per line, on the host's stdin/stdout (protocol v1, `docs/protocol.md`). This
//! crate does the protocol part:
//!
//! * implement [`SpawnHook`] (proceed / defer / skip an agent spawn), [`DirtyHandler`]
//!   (commit / stash / ignore a dirty tree, or pass with `None`) and/or [`PostRound`]
//!   (continue / back off / stop after a round, or `None`);
//! * describe the host with [`Host::new`] and a [`Host::setup`] function that runs when
//!   `initialize` arrives and builds the [`Hooks`] from the host's config table
//!   ([`InitializeParams::config`], read with [`ConfigTable`]) and directories;
//! * call [`run`] (or [`Host::run`]) from `main`: it serves stdin until end-of-file and
//!   returns the process's exit code.
//!
//! What [`run`] takes care of, so host code does not have to:
//! * stdout carries protocol messages only: before serving, the real stdout is moved to a
//!   private descriptor and fd 1 is pointed at stderr, so a stray `println!` in host code
//!   ends up in the host's stderr log instead of breaking the protocol;
//! * nothing is written before a request arrives (the host is silent until `initialize`);
//! * params are decoded strictly (unknown fields, wrong types → `-32602` naming the field);
//!   results are checked against the protocol's ranges before they are sent;
//! * a hook that returns [`HookError`] or panics answers `-32000` and the host keeps
//!   serving; lines that are not JSON get `-32700`, lines over 65,536 bytes `-32600`;
//! * on stdin end-of-file the process exits 0 at once (`shutdown` only acknowledges).
//!
//! [`confinement_self_check`] tells a host whether it runs confined (NoNewPrivs, seccomp
//! mode, a Landlock hint), for a line on stderr. [`testing`] drives a host binary over pipes
//! from tests.
//!
//! # Example
//!
//! A complete host with one spawn hook that skips rounds while a configured phase runs:
//!
//! ```no_run
//! use agent_runner_sdk::{
//!     proceed, skip, BeforeSpawnParams, ConfigTable, HookError, Hooks, Host, SpawnDecision,
//!     SpawnHook,
//! };
//! use std::process::ExitCode;
//!
//! struct SkipPhase {
//!     phase: String,
//! }
//!
//! impl SpawnHook for SkipPhase {
//!     fn before_spawn(&self, params: &BeforeSpawnParams) -> Result<SpawnDecision, HookError> {
//!         if params.ctx.phase.as_deref() == Some(self.phase.as_str()) {
//!             return Ok(skip(format!("phase {} is switched off", self.phase)));
//!         }
//!         Ok(proceed())
//!     }
//! }
//!
//! fn main() -> ExitCode {
//!     Host::new("skip-phase", env!("CARGO_PKG_VERSION"))
//!         .setup(|init| {
//!             let config = ConfigTable::new(&init.config);
//!             config.expect_only(&["phase"])?;
//!             let phase = config.string_or("phase", "review")?;
//!             Ok(Hooks::new().spawn_hook("skip_phase", SkipPhase { phase }))
//!         })
//!         .run()
//! }
//! ```

#![warn(missing_docs)]

mod config;
mod selfcheck;
mod serve;
pub mod testing;

use std::fmt;
use std::process::ExitCode;

pub use agent_runner_protocol as protocol;
pub use agent_runner_protocol::{
    AfterRoundParams, Alert, BeforeRoundParams, BeforeSpawnParams, Context, DetectParams,
    Detection, DirtyAction, EnrichParams, Enrichment, ErrorKind, Family, HandleDirtyParams,
    HookName, HostEvent, InitializeParams, Observation, ObserveParams, OnStartParams, OutputChunk,
    PostRoundAction, PostRoundVerdict, ProjectState, RoundAction, RoundDecision, RoundOutcome,
    Severity, SpawnAction, SpawnDecision, StartupResult, TokenUsage, PROTOCOL_VERSION,
};
pub use config::ConfigTable;
pub use selfcheck::{confinement_self_check, SeccompMode, SelfCheck};
/// The `serde_json` this crate uses (for building [`HookError::with_data`] values and
/// test messages with `serde_json::json!`).
pub use serde_json;

/// A spawn hook (`docs/protocol.md` §5, `spawn_hook/before_spawn`): asked before each agent
/// spawn whether the agent may start now.
///
/// Called on the serve loop's thread, one call at a time; the supervisor's call timeout
/// (default 10 s) bounds how long it may take. A returned [`HookError`] (or a panic) makes
/// the call failed, which the supervisor counts as `proceed`.
///
/// Any `Fn(&BeforeSpawnParams) -> Result<SpawnDecision, HookError> + Send + Sync` closure
/// is a spawn hook too.
pub trait SpawnHook: Send + Sync {
    /// Decides on the spawn described by `params`. `defer_s` must be 0..=86400 seconds;
    /// a decision outside the protocol's ranges is not sent: the caller gets `-32603`.
    fn before_spawn(&self, params: &BeforeSpawnParams) -> Result<SpawnDecision, HookError>;
}

impl<F> SpawnHook for F
where
    F: Fn(&BeforeSpawnParams) -> Result<SpawnDecision, HookError> + Send + Sync,
{
    fn before_spawn(&self, params: &BeforeSpawnParams) -> Result<SpawnDecision, HookError> {
        self(params)
    }
}

/// A dirty handler (`docs/protocol.md` §5, `dirty_handler/handle_dirty`): asked, in ascending
/// priority order across all handlers, what to do with a working tree a clean round left
/// dirty. The handler only decides; the supervisor stages, commits or stashes.
///
/// Called on the serve loop's thread, one call at a time; the supervisor's call timeout
/// (default 60 s) bounds it. A returned [`HookError`] (or a panic) makes the call failed,
/// which the supervisor counts as `None` (pass).
///
/// Any `Fn(&HandleDirtyParams) -> Result<Option<DirtyAction>, HookError> + Send + Sync`
/// closure is a dirty handler too.
pub trait DirtyHandler: Send + Sync {
    /// Answers `None` to pass to the next handler, or an action. A commit `message` must
    /// be 1..=4096 characters without NUL and every `paths` entry one of
    /// `params.dirty_files`; an answer breaking that is not sent: the caller gets `-32603`.
    fn handle_dirty(&self, params: &HandleDirtyParams) -> Result<Option<DirtyAction>, HookError>;
}

impl<F> DirtyHandler for F
where
    F: Fn(&HandleDirtyParams) -> Result<Option<DirtyAction>, HookError> + Send + Sync,
{
    fn handle_dirty(&self, params: &HandleDirtyParams) -> Result<Option<DirtyAction>, HookError> {
        self(params)
    }
}

/// A pre-round hook (docs/protocol.md §5.3, `pre_round/before_round`): asked before a
/// round's context is written whether the round runs. A `skip` is honoured only for hooks
/// in `[plugins] spawn_override_allow`; a failed call counts as `proceed`. Default call
/// timeout 10 s.
pub trait PreRoundHook: Send + Sync {
    /// Decides on the round described by `params.ctx` (`round_num` is the number it
    /// will get).
    fn before_round(&self, params: &BeforeRoundParams) -> Result<RoundDecision, HookError>;
}

/// A context enricher (docs/protocol.md §5.4, `context_enricher/enrich`): returns an
/// object (at most 16,384 bytes of JSON) that the supervisor puts into the round context
/// under the hook's name. A failed call adds nothing. Default call timeout 10 s.
pub trait ContextEnricher: Send + Sync {
    /// The object to add for the round described by `params.ctx`.
    fn enrich(&self, params: &EnrichParams) -> Result<Enrichment, HookError>;
}

/// A serve-startup hook (docs/protocol.md §5.5, `serve_startup/on_start`): called once
/// when `serve` boots, with the host's config. A returned [`HookError`] (or any failed
/// call) stops `serve` with exit 78 and `serve_startup_hook_failed`: the place to refuse
/// a project that is not ready. Default call timeout 30 s.
pub trait ServeStartupHook: Send + Sync {
    /// Checks the project before the first round.
    fn on_start(&self, params: &OnStartParams) -> Result<StartupResult, HookError>;
}

/// A detector (docs/protocol.md §5.6, `detector/detect`): polled with the project's
/// state after each round; returns an alert or none. A `stop_service` alert stops `serve`
/// only for hooks named in `[monitor] auto_stop_on`. Default call timeout 10 s.
pub trait Detector: Send + Sync {
    /// Looks at the project after the round in `params.ctx`.
    fn detect(&self, params: &DetectParams) -> Result<Detection, HookError>;
}

/// A post-round hook (`docs/protocol.md` §5, `post_round/after_round`): told how each round
/// the agent ran ended, with the end of its log, and answering `None` (nothing to say) or a
/// [`PostRoundVerdict`]: continue, back off, or stop, with a diagnosis ([`ErrorKind`]).
///
/// Called on the serve loop's thread, one call at a time, after every round; the call
/// timeout (default 10 s) bounds it. A returned [`HookError`] (or a panic) makes the call
/// failed, which the supervisor counts as `None`. `params.log_tail` is untrusted text the
/// agent wrote: match it, never execute or trust it.
///
/// Any `Fn(&AfterRoundParams) -> Result<Option<PostRoundVerdict>, HookError> + Send + Sync`
/// closure is a post-round hook too.
pub trait PostRound: Send + Sync {
    /// Answers `None`, or a verdict: `back_off` and `stop` need a `kind`; `back_off` needs
    /// exactly one of `back_off_s` (1..=86400) and `until` (RFC 3339 UTC). A verdict
    /// breaking that is not sent: the caller gets `-32603`.
    fn after_round(&self, params: &AfterRoundParams)
        -> Result<Option<PostRoundVerdict>, HookError>;
}

impl<F> PostRound for F
where
    F: Fn(&AfterRoundParams) -> Result<Option<PostRoundVerdict>, HookError> + Send + Sync,
{
    fn after_round(
        &self,
        params: &AfterRoundParams,
    ) -> Result<Option<PostRoundVerdict>, HookError> {
        self(params)
    }
}

/// An output watch (`docs/protocol.md` §5.10, `output_watch/observe`): shown the running
/// round's log chunk by chunk while the agent runs (only while a `[budget]` cap is set),
/// answering `None` or the usage of each model call the chunk completed, each call's own.
///
/// Called one chunk at a time, in order; `params.chunk.offset == 0` starts a round, and
/// `skipped_bytes > 0` says a part of the log was not shown (a line cut at the chunk's
/// start is then not whole). Keep what a call needs across chunks (a line cut at a chunk's
/// end) behind a `Mutex`. The call timeout (default 5 s) bounds it; a returned
/// [`HookError`] (or a panic) makes the call failed, which the supervisor counts as
/// `None`. `params.chunk.text` is untrusted text the agent wrote.
///
/// Any `Fn(&ObserveParams) -> Result<Option<Observation>, HookError> + Send + Sync`
/// closure is an output watch too.
pub trait OutputWatch: Send + Sync {
    /// Answers `None`, or at most 64 calls' usage.
    fn observe(&self, params: &ObserveParams) -> Result<Option<Observation>, HookError>;
}

impl<F> OutputWatch for F
where
    F: Fn(&ObserveParams) -> Result<Option<Observation>, HookError> + Send + Sync,
{
    fn observe(&self, params: &ObserveParams) -> Result<Option<Observation>, HookError> {
        self(params)
    }
}

/// `{"action": "back_off", "kind": .., "back_off_s": .., "message": ..}`: wait
/// `back_off_s` seconds (1..=86400) before the next round.
pub fn back_off(kind: ErrorKind, back_off_s: u64, message: impl Into<String>) -> PostRoundVerdict {
    PostRoundVerdict {
        action: PostRoundAction::BackOff,
        kind: Some(kind),
        message: message.into(),
        back_off_s: Some(back_off_s),
        until: None,
        usage: None,
    }
}

/// `{"action": "back_off", "kind": .., "until": .., "message": ..}`: wait until `until`
/// (RFC 3339 in UTC, e.g. `2026-11-30T05:00:00Z`) before the next round.
pub fn back_off_until(
    kind: ErrorKind,
    until: impl Into<String>,
    message: impl Into<String>,
) -> PostRoundVerdict {
    PostRoundVerdict {
        action: PostRoundAction::BackOff,
        kind: Some(kind),
        message: message.into(),
        back_off_s: None,
        until: Some(until.into()),
        usage: None,
    }
}

/// `{"action": "stop", "kind": .., "message": ..}`: stop serving. Honoured when `kind` is
/// `auth` and `[monitor] auto_stop_on` lists `oauth_fail`, or when the hook's name is listed.
pub fn stop(kind: ErrorKind, message: impl Into<String>) -> PostRoundVerdict {
    PostRoundVerdict {
        action: PostRoundAction::Stop,
        kind: Some(kind),
        message: message.into(),
        back_off_s: None,
        until: None,
        usage: None,
    }
}

/// A hook (or the host's setup) failed. Sent as the JSON-RPC error object
/// `{"code": -32000, "message": <message>, "data": <data>}` (`-32000` is "hook failed",
/// `docs/protocol.md` §6); the supervisor records the message, redacted and capped at 256
/// characters, in a `hook_failed` event.
#[derive(Clone, Debug, PartialEq)]
pub struct HookError {
    message: String,
    data: Option<serde_json::Value>,
}

impl HookError {
    /// An error with this message and no `data`.
    pub fn new(message: impl Into<String>) -> Self {
        HookError {
            message: message.into(),
            data: None,
        }
    }

    /// Attaches a JSON value sent as the error object's `data`.
    pub fn with_data(mut self, data: serde_json::Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The message sent as the error object's `message`.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The value sent as the error object's `data`, if any.
    pub fn data(&self) -> Option<&serde_json::Value> {
        self.data.as_ref()
    }
}

impl fmt::Display for HookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HookError {}

impl From<String> for HookError {
    fn from(message: String) -> Self {
        HookError::new(message)
    }
}

impl From<&str> for HookError {
    fn from(message: &str) -> Self {
        HookError::new(message)
    }
}

impl From<std::io::Error> for HookError {
    /// The I/O error's text, e.g. "Permission denied (os error 13)".
    fn from(err: std::io::Error) -> Self {
        HookError::new(err.to_string())
    }
}

impl From<serde_json::Error> for HookError {
    fn from(err: serde_json::Error) -> Self {
        HookError::new(err.to_string())
    }
}

/// `{"action": "proceed"}`: start the agent now.
pub fn proceed() -> SpawnDecision {
    SpawnDecision {
        action: SpawnAction::Proceed,
        defer_s: 0,
        reason: String::new(),
    }
}

/// `{"action": "defer", "defer_s": .., "reason": ..}`: wait `defer_s` seconds (0..=86400),
/// then ask again. The supervisor keeps at most 256 characters of `reason`, redacted.
pub fn defer(defer_s: u64, reason: impl Into<String>) -> SpawnDecision {
    SpawnDecision {
        action: SpawnAction::Defer,
        defer_s,
        reason: reason.into(),
    }
}

/// `{"action": "skip", "reason": ..}`: do not start this round; the supervisor idles briefly
/// and asks again.
pub fn skip(reason: impl Into<String>) -> SpawnDecision {
    SpawnDecision {
        action: SpawnAction::Skip,
        defer_s: 0,
        reason: reason.into(),
    }
}

/// `{"action": "proceed"}` for a pre-round hook: run the round.
pub fn run_round() -> RoundDecision {
    RoundDecision {
        action: RoundAction::Proceed,
        reason: String::new(),
        events: Vec::new(),
    }
}

/// `{"action": "skip", "reason": ..}` for a pre-round hook: do not run this round.
pub fn skip_round(reason: impl Into<String>) -> RoundDecision {
    RoundDecision {
        action: RoundAction::Skip,
        reason: reason.into(),
        events: Vec::new(),
    }
}

/// A detector's answer raising an alert of `severity` with `message`; `stop_service`
/// asks `serve` to stop (honoured only when `[monitor] auto_stop_on` names the hook).
pub fn alert(severity: Severity, message: impl Into<String>, stop_service: bool) -> Detection {
    Detection {
        alert: Some(Alert {
            severity,
            message: message.into(),
            stop_service,
        }),
        events: Vec::new(),
    }
}

/// One declared hook: its name, priority (dirty handlers) and implementation.
pub(crate) enum HookImpl {
    Spawn(Box<dyn SpawnHook>),
    Dirty(Box<dyn DirtyHandler>),
    PreRound(Box<dyn PreRoundHook>),
    Enricher(Box<dyn ContextEnricher>),
    Startup(Box<dyn ServeStartupHook>),
    Detector(Box<dyn Detector>),
    PostRound(Box<dyn PostRound>),
    OutputWatch(Box<dyn OutputWatch>),
}

impl HookImpl {
    pub(crate) fn family(&self) -> Family {
        match self {
            HookImpl::Spawn(_) => Family::SpawnHook,
            HookImpl::Dirty(_) => Family::DirtyHandler,
            HookImpl::PreRound(_) => Family::PreRound,
            HookImpl::Enricher(_) => Family::ContextEnricher,
            HookImpl::Startup(_) => Family::ServeStartup,
            HookImpl::Detector(_) => Family::Detector,
            HookImpl::PostRound(_) => Family::PostRound,
            HookImpl::OutputWatch(_) => Family::OutputWatch,
        }
    }
}

pub(crate) struct HookEntry {
    pub(crate) name: String,
    pub(crate) priority: Option<i64>,
    pub(crate) hook: HookImpl,
}

/// The hooks a host provides, in declaration order: what [`Host::setup`] returns and what
/// the `initialize` result lists.
///
/// Names must match `^[a-z0-9][a-z0-9_-]{0,63}$` and be unique within the host
/// (`docs/protocol.md` §3); a violation is reported when `initialize` runs, as a `-32603`
/// error naming the hook.
#[derive(Default)]
pub struct Hooks {
    pub(crate) entries: Vec<HookEntry>,
    pub(crate) event_kinds: Vec<String>,
    pub(crate) owned_paths: Vec<String>,
}

impl Hooks {
    /// No hooks yet.
    pub fn new() -> Self {
        Hooks::default()
    }

    /// Adds a spawn hook called `name` (family `spawn_hook`).
    pub fn spawn_hook(mut self, name: impl Into<String>, hook: impl SpawnHook + 'static) -> Self {
        self.entries.push(HookEntry {
            name: name.into(),
            priority: None,
            hook: HookImpl::Spawn(Box::new(hook)),
        });
        self
    }

    /// Adds a dirty handler called `name` (family `dirty_handler`) with `priority`: lower
    /// runs first; the supervisor's built-in default handler has priority 1000.
    pub fn dirty_handler(
        mut self,
        name: impl Into<String>,
        priority: i64,
        handler: impl DirtyHandler + 'static,
    ) -> Self {
        self.entries.push(HookEntry {
            name: name.into(),
            priority: Some(priority),
            hook: HookImpl::Dirty(Box::new(handler)),
        });
        self
    }

    /// Adds a post-round hook called `name` (family `post_round`).
    pub fn post_round(mut self, name: impl Into<String>, hook: impl PostRound + 'static) -> Self {
        self.entries.push(HookEntry {
            name: name.into(),
            priority: None,
            hook: HookImpl::PostRound(Box::new(hook)),
        });
        self
    }

    /// Adds an output watch called `name` (family `output_watch`).
    pub fn output_watch(
        mut self,
        name: impl Into<String>,
        watch: impl OutputWatch + 'static,
    ) -> Self {
        self.entries.push(HookEntry {
            name: name.into(),
            priority: None,
            hook: HookImpl::OutputWatch(Box::new(watch)),
        });
        self
    }

    /// Adds a pre-round hook called `name` (family `pre_round`).
    pub fn pre_round(mut self, name: impl Into<String>, hook: impl PreRoundHook + 'static) -> Self {
        self.entries.push(HookEntry {
            name: name.into(),
            priority: None,
            hook: HookImpl::PreRound(Box::new(hook)),
        });
        self
    }

    /// Adds a context enricher called `name` (family `context_enricher`); its object
    /// appears in the round context under `name`.
    pub fn context_enricher(
        mut self,
        name: impl Into<String>,
        enricher: impl ContextEnricher + 'static,
    ) -> Self {
        self.entries.push(HookEntry {
            name: name.into(),
            priority: None,
            hook: HookImpl::Enricher(Box::new(enricher)),
        });
        self
    }

    /// Adds a serve-startup hook called `name` (family `serve_startup`).
    pub fn serve_startup(
        mut self,
        name: impl Into<String>,
        hook: impl ServeStartupHook + 'static,
    ) -> Self {
        self.entries.push(HookEntry {
            name: name.into(),
            priority: None,
            hook: HookImpl::Startup(Box::new(hook)),
        });
        self
    }

    /// Adds a detector called `name` (family `detector`).
    pub fn detector(mut self, name: impl Into<String>, detector: impl Detector + 'static) -> Self {
        self.entries.push(HookEntry {
            name: name.into(),
            priority: None,
            hook: HookImpl::Detector(Box::new(detector)),
        });
        self
    }

    /// Declares an event kind this host may emit in results (`^[a-z][a-z0-9_]{0,47}$`,
    /// never a built-in kind); the supervisor records it as `<host>.<kind>`
    /// (docs/protocol.md §5.7).
    pub fn event_kind(mut self, kind: impl Into<String>) -> Self {
        self.event_kinds.push(kind.into());
        self
    }

    /// Declares a path (relative to `work_dir`) this host owns: the supervisor leaves it
    /// out of dirty detection, stash and commit (docs/protocol.md §5.8).
    pub fn owned_path(mut self, path: impl Into<String>) -> Self {
        self.owned_paths.push(path.into());
        self
    }

    /// How many hooks were added.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no hook was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| (&e.name, e.priority)))
            .finish()
    }
}

/// The setup function's type: builds the hooks when `initialize` arrives.
pub type SetupFn = dyn Fn(&InitializeParams) -> Result<Hooks, HookError> + Send + Sync;

/// A host: its name and version (sent in the `initialize` result, informational) and the
/// setup function that builds its [`Hooks`].
pub struct Host {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) setup: Box<SetupFn>,
}

impl Host {
    /// A host with no hooks until [`Host::setup`] is given.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Host {
            name: name.into(),
            version: version.into(),
            setup: Box::new(|_| Ok(Hooks::new())),
        }
    }

    /// Sets the function run once, when `initialize` arrives (after its protocol version
    /// and params were checked), to build the hooks. It can read the host's config table
    /// (`init.config`), `init.work_dir`, `init.state_dir` (the one directory the host may
    /// write) and what confinement is in force (`init.sandbox`). An `Err` answers
    /// `initialize` with `-32000` and that message, so the supervisor refuses the host:
    /// the place to reject bad config.
    pub fn setup<F>(mut self, setup: F) -> Self
    where
        F: Fn(&InitializeParams) -> Result<Hooks, HookError> + Send + Sync + 'static,
    {
        self.setup = Box::new(setup);
        self
    }

    /// Serves stdio until end-of-file: the same as [`run`]`(self)`.
    pub fn run(self) -> ExitCode {
        run(self)
    }
}

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Host")
            .field("name", &self.name)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// Serves the protocol on stdin/stdout until stdin reaches end-of-file, then returns
/// [`ExitCode::SUCCESS`]. Call it first thing in `main` and return its result.
///
/// Before reading anything it moves the real stdout to a private, close-on-exec descriptor
/// and points fd 1 at stderr (so `println!` in host code goes to stderr). It builds a
/// single-threaded tokio runtime and a jsonrpsee `RpcModule` with `initialize`,
/// `spawn_hook/before_spawn`, `dirty_handler/handle_dirty`, `post_round/after_round` and
/// `shutdown`, then reads one
/// request per line and writes one response per line, flushed.
///
/// Exit codes: 0 on end-of-file; 70 (`EX_SOFTWARE`) when stdout is not open or the runtime
/// cannot start; 74 (`EX_IOERR`) when reading stdin or writing the response fails (for
/// example the supervisor closed the pipe). The reason is written to stderr.
pub fn run(host: Host) -> ExitCode {
    serve::run(host)
}
