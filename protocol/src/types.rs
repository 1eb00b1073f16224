//! Message types of protocol v1 (`docs/protocol.md` §3–§5). Every struct rejects unknown
//! fields; decode through [`crate::validate`] functions to also get range checks.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

use crate::family::Family;
use crate::limits::MAX_HOOK_NAME_LEN;

/// A hook's name: `^[a-z0-9][a-z0-9_-]{0,63}$` (`docs/protocol.md` §3). Its identity in config
/// (`spawn_override_allow`), events and peek.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct HookName(String);

impl JsonSchema for HookName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HookName".into()
    }

    /// A string matching the pattern of `docs/protocol.md` §3.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A hook's name, unique across all hosts.",
            "type": "string",
            "pattern": "^[a-z0-9][a-z0-9_-]{0,63}$"
        })
    }
}

impl HookName {
    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for HookName {
    type Error = String;

    /// Errors: a message saying which character or length broke the rule.
    fn try_from(name: String) -> Result<Self, Self::Error> {
        let ok_first = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        let ok_rest = name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if ok_first && ok_rest && name.len() <= MAX_HOOK_NAME_LEN {
            Ok(HookName(name))
        } else {
            Err(format!(
                "hook name {name:?} must match ^[a-z0-9][a-z0-9_-]{{0,63}}$"
            ))
        }
    }
}

impl std::str::FromStr for HookName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HookName::try_from(s.to_owned())
    }
}

impl From<HookName> for String {
    fn from(name: HookName) -> String {
        name.0
    }
}

impl fmt::Display for HookName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `initialize.params.supervisor`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SupervisorInfo {
    /// Always `agent-runner`.
    pub name: String,
    /// The supervisor's version (semver).
    pub version: String,
}

/// `initialize.params.sandbox`: what was asked for and what the kernel gave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxInfo {
    /// `require` | `prefer` | `off` (`[plugins] sandbox`).
    pub requested: String,
    /// `landlock+seccomp` | `landlock` | `seccomp` | `unconfined`.
    pub achieved_tier: String,
    /// The kernel's Landlock ABI version, if Landlock is available.
    pub landlock_abi: Option<u32>,
    /// Whether a seccomp filter is in force.
    pub seccomp: bool,
}

/// Params of `initialize` (`docs/protocol.md` §3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitializeParams {
    /// The version the supervisor speaks: [`crate::PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// Who is calling.
    pub supervisor: SupervisorInfo,
    /// The host's name: the key of its `[plugins.hosts.<name>]` table.
    pub host: String,
    /// The project's name (the work dir's directory name).
    pub project: String,
    /// Absolute path of the working tree (the host's cwd; read-only to it).
    pub work_dir: String,
    /// Absolute path of the log dir (read-only to the host).
    pub log_dir: String,
    /// Absolute path of a directory private to this host, writable by it.
    pub state_dir: String,
    /// The host's `[plugins.hosts.<name>.config]` table verbatim (`{}` if absent).
    pub config: Map<String, Value>,
    /// The confinement in force.
    pub sandbox: SandboxInfo,
}

/// One hook a host declares in its `initialize` result (`docs/protocol.md` §3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookDecl {
    /// The hook's family; must be in the host's configured `provides`.
    pub family: Family,
    /// Unique across all hosts; never a built-in's name.
    pub name: HookName,
    /// Dirty handlers only: lower runs first; the built-in default is 1000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
}

/// Result of `initialize` (`docs/protocol.md` §3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitializeResult {
    /// Must be [`crate::PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// The host's own name for itself (informational).
    pub name: String,
    /// The host's version (informational).
    pub version: String,
    /// The hooks this host provides.
    pub hooks: Vec<HookDecl>,
    /// Event kinds this host may emit in its results (docs/protocol.md §5.7), each
    /// matching `^[a-z][a-z0-9_]{0,47}$` and never a built-in kind; recorded as
    /// `<host>.<kind>`. Optional; defaults to none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub event_kinds: Vec<String>,
    /// Paths (relative to `work_dir`, no `..`, not `.git`) this host owns: left out of
    /// dirty detection, stash and commit (docs/protocol.md §5.8). Optional.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned_paths: Vec<String>,
}

/// `ctx.vcs`: the `[vcs]` settings in force.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VcsContext {
    /// `stash` | `ignore` | `auto_commit`.
    pub dirty_action: String,
    /// Seconds within which a second stash is skipped.
    pub stash_idempotency_s: u64,
}

/// The context object sent with every hook call (`docs/protocol.md` §4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// Absolute path of the working tree.
    pub work_dir: String,
    /// Absolute path of the log dir.
    pub log_dir: String,
    /// The project's name.
    pub project: String,
    /// The round this call is about (1-based; never 0).
    pub round_num: u64,
    /// The phase of this round, if phases are configured.
    pub phase: Option<String>,
    /// `[agent] name`, if set.
    pub agent_name: Option<String>,
    /// The agent's executable as configured (`command[0]`).
    pub agent_binary: Option<String>,
    /// The round log of this round, once it exists.
    pub agent_log_path: Option<String>,
    /// `[runtime] dry_run`.
    pub dry_run: bool,
    /// The `[vcs]` settings.
    pub vcs: Option<VcsContext>,
}

/// `spawn`: what is about to run. Environment *names* only, never values (`docs/protocol.md` §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnView {
    /// The agent's full argv (the prompt included when delivered by argv).
    pub argv: Vec<String>,
    /// Names of the agent's environment variables.
    pub env_names: Vec<String>,
}

/// Params of `spawn_hook/before_spawn` (`docs/protocol.md` §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BeforeSpawnParams {
    /// Which of the host's hooks is asked.
    pub hook: HookName,
    /// The round context.
    pub ctx: Context,
    /// What is about to be spawned.
    pub spawn: SpawnView,
}

/// A spawn hook's verdict (`docs/protocol.md` §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpawnAction {
    /// Start the agent now.
    Proceed,
    /// Wait `defer_s` seconds, then ask again.
    Defer,
    /// Do not start this round; idle briefly and ask again.
    Skip,
}

impl SpawnAction {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SpawnAction::Proceed => "proceed",
            SpawnAction::Defer => "defer",
            SpawnAction::Skip => "skip",
        }
    }
}

/// Result of `spawn_hook/before_spawn` (`docs/protocol.md` §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnDecision {
    /// The verdict.
    pub action: SpawnAction,
    /// Seconds to wait, 0..=86400; meaningful for `defer` only. Defaults to 0.
    #[serde(default)]
    #[schemars(range(max = crate::limits::MAX_DEFER_S))]
    pub defer_s: u64,
    /// Why; the supervisor keeps at most 256 characters, secrets redacted.
    #[serde(default)]
    pub reason: String,
}

/// Params of `dirty_handler/handle_dirty` (`docs/protocol.md` §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandleDirtyParams {
    /// Which of the host's hooks is asked.
    pub hook: HookName,
    /// The round context.
    pub ctx: Context,
    /// Dirty paths relative to `work_dir`, as `git status --porcelain` reports them, one
    /// entry per path (untracked files one by one). A staged rename (`git mv a b`) gives
    /// both sides, the new path then the old one (`"b", "a"`), so that a `commit` naming
    /// both (or no `paths`) commits the rename whole; a copy gives only the new path.
    pub dirty_files: Vec<String>,
}

/// A dirty handler's answer (`docs/protocol.md` §5); the whole result is `Option<DirtyAction>`, `null`
/// meaning "pass to the next handler". The supervisor performs the action.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum DirtyAction {
    /// Stage `paths` (default: all dirty files; each must be one of them) and commit with
    /// `message` (1..=4096 characters, no NUL).
    Commit {
        /// The commit message.
        #[schemars(length(min = 1, max = crate::limits::MAX_COMMIT_MESSAGE_CHARS))]
        message: String,
        /// Paths to stage; `None` means every dirty file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        paths: Option<Vec<String>>,
    },
    /// Stash the dirty tree with the supervisor's SHA-locked, idempotent stash.
    Stash {
        /// Optional note recorded with the stash event.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Leave the tree dirty for the next round.
    Ignore,
}

impl DirtyAction {
    /// The wire spelling of the action.
    pub fn as_str(&self) -> &'static str {
        match self {
            DirtyAction::Commit { .. } => "commit",
            DirtyAction::Stash { .. } => "stash",
            DirtyAction::Ignore => "ignore",
        }
    }
}

/// An event a host asks the supervisor to record (docs/protocol.md §5.7): `kind` is one
/// of the host's declared `event_kinds`; the supervisor records it as `<host>.<kind>`
/// with `fields` plus `host` and `hook`. At most
/// [`crate::limits::MAX_HOST_EVENTS_PER_RESULT`] per result, `fields` at most
/// [`crate::limits::MAX_HOST_EVENT_BYTES`] bytes as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostEvent {
    /// A declared event kind (without the host prefix).
    pub kind: String,
    /// The event's fields; `ts`, `event`, `host` and `hook` are the supervisor's.
    #[serde(default)]
    pub fields: Map<String, Value>,
}

/// Params of `pre_round/before_round` (§5.3): asked before a round's context is written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BeforeRoundParams {
    /// Which of the host's hooks is asked.
    pub hook: HookName,
    /// The context of the round about to start (`round_num` is the number it will get).
    pub ctx: Context,
}

/// A pre-round hook's verdict (§5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RoundAction {
    /// Run the round.
    Proceed,
    /// Do not run this round; the supervisor idles and asks again.
    Skip,
}

impl RoundAction {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RoundAction::Proceed => "proceed",
            RoundAction::Skip => "skip",
        }
    }
}

/// Result of `pre_round/before_round` (§5.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoundDecision {
    /// The verdict; `skip` is honoured only for hooks in `[plugins] spawn_override_allow`.
    pub action: RoundAction,
    /// Why; the supervisor keeps at most 256 characters, secrets redacted.
    #[serde(default)]
    pub reason: String,
    /// Events to record (declared kinds only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<HostEvent>,
}

/// Params of `context_enricher/enrich` (§5.4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnrichParams {
    /// Which of the host's hooks is asked.
    pub hook: HookName,
    /// The context of the round about to start.
    pub ctx: Context,
}

/// Result of `context_enricher/enrich` (§5.4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Enrichment {
    /// Merged into the round context under the hook's name; at most
    /// [`crate::limits::MAX_ENRICHMENT_BYTES`] bytes as JSON.
    pub context: Map<String, Value>,
    /// Events to record (declared kinds only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<HostEvent>,
}

/// Params of `serve_startup/on_start` (§5.5): sent once, when `serve` boots.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OnStartParams {
    /// Which of the host's hooks is asked.
    pub hook: HookName,
    /// The project's name.
    pub project: String,
    /// Absolute path of the working tree.
    pub work_dir: String,
    /// Absolute path of the log dir.
    pub log_dir: String,
    /// The host's config table, as in `initialize`.
    pub config: Map<String, Value>,
}

/// Result of `serve_startup/on_start` (§5.5): `{}` lets `serve` go on; an error object
/// (or any failed call) stops it with exit 78.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartupResult {
    /// Events to record (declared kinds only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<HostEvent>,
}

/// How the last round ended, as a detector sees it (§5.6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LastRound {
    /// Its number.
    pub round_num: u64,
    /// The agent's exit code (`null` when it died of a signal).
    pub exit_code: Option<i32>,
    /// `exited`, `timeout`, `stopped`, … (the `agent_exit.exit_cause` vocabulary).
    pub exit_cause: String,
    /// Wall-clock seconds the agent ran.
    pub duration_s: f64,
    /// `committed` | `stashed` | `ignored` | `failed`, or `null` for a clean tree.
    pub dirty_outcome: Option<String>,
}

/// The project's state handed to detectors (§5.6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectState {
    /// Rounds completed by this `serve` run.
    pub rounds_completed: u64,
    /// The round that just ended, if one ran.
    pub last_round: Option<LastRound>,
}

/// Params of `detector/detect` (§5.6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DetectParams {
    /// Which of the host's hooks is asked.
    pub hook: HookName,
    /// The context of the round that just ended.
    pub ctx: Context,
    /// The project's state.
    pub state: ProjectState,
}

/// How serious an alert is (§5.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Needs a look.
    Warning,
    /// Needs action now.
    Critical,
}

impl Severity {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// A detector's alert (§5.6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Alert {
    /// How serious.
    pub severity: Severity,
    /// What was seen; the supervisor keeps at most 256 characters, secrets redacted.
    pub message: String,
    /// Asks `serve` to stop; honoured only for hooks named in `[monitor] auto_stop_on`.
    #[serde(default)]
    pub stop_service: bool,
}

/// Result of `detector/detect` (§5.6).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Detection {
    /// The alert, or `null` when all is well.
    #[serde(default)]
    pub alert: Option<Alert>,
    /// Events to record (declared kinds only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<HostEvent>,
}

/// How the agent of a round ended, as `post_round/after_round` reports it
/// (`docs/protocol.md` §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoundOutcome {
    /// The round's number (1-based).
    pub round_num: u64,
    /// The round's phase, if phases are configured.
    pub phase: Option<String>,
    /// The agent's exit status when it exited by itself.
    pub exit_code: Option<i32>,
    /// The signal that ended the agent, if one did.
    pub signal: Option<i32>,
    /// `exited` | `signaled` | `timeout` | `stopped`.
    pub exit_cause: String,
    /// Wall time from spawn to reap, seconds (millisecond precision).
    pub duration_s: f64,
    /// Whether the round budget ran out.
    pub timed_out: bool,
}

/// Params of `post_round/after_round` (`docs/protocol.md` §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AfterRoundParams {
    /// Which of the host's hooks is asked.
    pub hook: HookName,
    /// The round context (`agent_log_path` set).
    pub ctx: Context,
    /// How the agent ended.
    pub outcome: RoundOutcome,
    /// The end of the round log (stdout and stderr merged): at most
    /// [`crate::limits::MAX_LOG_TAIL_BYTES`] bytes of it, decoded as UTF-8 (invalid bytes
    /// become U+FFFD), control characters other than tab, newline and carriage return
    /// replaced by U+FFFD. Untrusted text: the agent wrote it.
    #[schemars(length(max = crate::limits::MAX_LOG_TAIL_BYTES))]
    pub log_tail: String,
}

/// What a post-round hook tells the supervisor to do next (`docs/protocol.md` §5).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PostRoundAction {
    /// Go on as usual (the default; carries only `usage` or a note).
    Continue,
    /// Wait before the next round: `back_off_s` seconds, or until `until`.
    BackOff,
    /// Stop serving (honoured per `[monitor] auto_stop_on`).
    Stop,
}

impl PostRoundAction {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PostRoundAction::Continue => "continue",
            PostRoundAction::BackOff => "back_off",
            PostRoundAction::Stop => "stop",
        }
    }
}

/// What went wrong in a round, as a post-round hook diagnoses it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The account's usage quota is used up until a reset time.
    UsageLimit,
    /// Too many requests (HTTP 429).
    RateLimit,
    /// The provider is overloaded (HTTP 529, 503, "overloaded").
    Overloaded,
    /// The network failed (DNS, connection refused or reset, timeout).
    Network,
    /// The login is missing or expired, or the key is invalid.
    Auth,
    /// Anything else.
    Other,
}

impl ErrorKind {
    /// The wire and event spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::UsageLimit => "usage_limit",
            ErrorKind::RateLimit => "rate_limit",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::Network => "network",
            ErrorKind::Auth => "auth",
            ErrorKind::Other => "other",
        }
    }

    /// Whether waiting can cure it (everything but `auth` and `other`).
    pub fn is_transient(self) -> bool {
        !matches!(self, ErrorKind::Auth | ErrorKind::Other)
    }
}

/// Tokens the agent reported using in the round (from its JSON stream).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenUsage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's cache, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the provider's cache, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// The cost the CLI reported, in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The model that did the round's work, as the CLI names it (`claude-sonnet-4-5`,
    /// `anthropic/claude-sonnet-4-5`), when the CLI reports one; the supervisor keeps
    /// 256 characters of it, secrets redacted (`docs/protocol.md`,
    /// `post_round/after_round`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A post-round hook's verdict; the whole result is `Option<PostRoundVerdict>`, `null`
/// meaning "nothing to say" (`docs/protocol.md` §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostRoundVerdict {
    /// What to do next.
    pub action: PostRoundAction,
    /// The diagnosis; required for `back_off` and `stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
    /// For the operator (the supervisor keeps 256 characters, secrets redacted).
    #[serde(default)]
    pub message: String,
    /// `back_off`: seconds to wait, 1..=86400 (exclusive with `until`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = crate::limits::MAX_DEFER_S))]
    pub back_off_s: Option<u64>,
    /// `back_off`: wait until this instant, RFC 3339 in UTC (`2026-11-30T05:00:00Z`),
    /// e.g. a usage limit's reset time (exclusive with `back_off_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Tokens the round used, when the hook could read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
}

/// Params of `output_watch/observe` (`docs/protocol.md` §5.10): the next chunk of the
/// running round's log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObserveParams {
    /// Which of the host's hooks is asked.
    pub hook: HookName,
    /// The round context (`agent_log_path` set).
    pub ctx: Context,
    /// The chunk.
    pub chunk: OutputChunk,
}

/// A chunk of a running round's log (`docs/protocol.md` §5.10).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputChunk {
    /// Where `text` starts in the round log, in bytes; 0 starts a round.
    pub offset: u64,
    /// Bytes of the log before `offset` that no chunk carried (the watch fell behind and
    /// the supervisor skipped them); 0 when this chunk follows the previous one.
    pub skipped_bytes: u64,
    /// At most [`crate::limits::MAX_CHUNK_BYTES`] bytes of the log, ended after its last
    /// newline when it holds one, decoded and cleaned as `log_tail` is (invalid UTF-8 and
    /// control characters other than tab, newline and carriage return become U+FFFD).
    /// Untrusted text: the agent wrote it.
    #[schemars(length(max = crate::limits::MAX_CHUNK_BYTES))]
    pub text: String,
}

/// An output watch's answer (`docs/protocol.md` §5.10); the whole result is
/// `Option<Observation>`, `null` meaning "no model call completed in this chunk".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    /// One entry per model call the chunk completed, each that call's own usage (never a
    /// running total), at most [`crate::limits::MAX_OBSERVED_CALLS`].
    #[serde(default)]
    #[schemars(length(max = crate::limits::MAX_OBSERVED_CALLS))]
    pub usage: Vec<TokenUsage>,
}
