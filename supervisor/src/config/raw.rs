//! The file's shape, as serde sees it: every table rejects unknown keys (with a
//! did-you-mean suggestion). Every key the reference system's 0.3.14 reads is defined
//! here and acted on (docs/reference-system.md). The definitions also make each table's
//! resolved struct (`RuntimeConfig`, …: `config::keys`), filled by `config::resolve`.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::agent_cli::CliKey;
use super::keys::{config_table, Table};
use super::schedule::Schedule;
use super::session_resume::{
    DEFAULT_SESSION_MAX_HOURS, DEFAULT_SESSION_MAX_ROUNDS, DEFAULT_SESSION_MAX_TOKENS,
};
use super::vocabulary::{
    BrokerMode, ContextInjection, DirtyAction, PhasePolicy, PromptDelivery, SandboxMode,
    TransientAction,
};
use super::ConfigError;
use agent_runner_plugin_host::common::write_limits;
use agent_runner_protocol::limits::DEFAULT_INIT_TIMEOUT_S;

config_table! {
    /// The whole file; its top-level keys are table `""`.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawConfig = "" {
        /// must be `1`, the one version this build reads
        schema_version: i64 = (computed "required") label "integer" reload Next;
        @sub runtime: RawRuntime;
        @sub prompt: RawPrompt;
        @sub vcs: RawVcs;
        @sub plugins: RawPlugins;
        @sub monitor: super::monitor::RawMonitor;
        @sub schedule: Option<RawSchedule>;
        // `[goal]`: absent, no goal checks.
        @sub goal: Option<super::goal::RawGoal>;
        // `[budget]`: absent, no caps.
        @sub budget: Option<super::budget::RawBudget>;
        // `[telemetry]`: absent, traces only where the environment names a collector.
        @sub telemetry: Option<super::telemetry::RawTelemetry>;
        // `[notify]`: absent, no webhooks.
        @sub notify: Option<super::notify::RawNotify>;
        @field agent: RawAgent;
        @field
            /// `[phases]`, parsed by hand (phase names are free keys); see [`RawPhases`].
            #[serde(skip)]
            phases: RawPhases;
        @field
            /// Reference-style `[plugins.<name>]` tables, by name: a host's config
            /// (docs/configuration.md, "Plugins").
            #[serde(skip)]
            plugin_tables: BTreeMap<String, serde_json::Map<String, serde_json::Value>>;
    }
}

config_table! {
    /// `[agent]` (a phase's `[phases.<name>.agent]` is merged onto it).
    #[derive(Clone, Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawAgent = "agent" {
        /// the agent's argv before the prompt arguments; `command[0]` is looked up on PATH
        /// (a leading `~` or `~/` is the home directory; the other words are passed as
        /// written)
        command: Vec<String> = (required) reload Next init (preset)
            into (command: Vec<String> = hand);
        /// appended to `command`; with argv delivery one element contains `{prompt}`, with
        /// stdin none may
        prompt_arg_template: Vec<String> = (computed "`[\"{prompt}\"]` (argv) / `[]` (stdin)")
            reload Next init (preset) into (prompt_arg_template: Vec<String> = hand);
        /// how the prompt reaches the agent
        prompt_delivery: String as PromptDelivery = (PromptDelivery::Argv)
            reload Next init (preset) into (delivery: PromptDelivery = same);
        /// display name, `ctx.agent_name` for hooks (it says nothing of which CLI runs:
        /// that is `cli`)
        name: String = (none) reload Next init (preset);
        /// which agent CLI `command` runs: the built-in detector that applies, the
        /// cooperative stop signal, session resume, the login preconditions, codex's own
        /// sandbox and the CLI's own state the agent's sandbox grants all follow it. `auto`:
        /// `command[0]`'s file name, what a launcher (`npx`, `bunx`, `uvx`, `pipx run`, …)
        /// runs, or the one CLI a shell wrapper outside the agent's reach names
        /// (docs/agent-clis.md, "Which CLI a command is"); `other`: none of them. `doctor`
        /// shows the answer (`agent_cli`)
        cli: String as CliKey = (CliKey::Auto) reload Next
            into (cli: super::agent_cli::AgentCli = hand);
        /// added to the agent's environment (never sent to hosts: they see variable *names*
        /// only); set over what the agent inherits, so it reaches a confined agent whatever
        /// the allow-list (`[agent.sandbox] pass_env`). The file is readable by the agent:
        /// a key the agent must not see belongs in the supervisor's environment
        env: BTreeMap<String, String> = (empty) label "table of strings"
            reload Next init (preset);
        /// words run before `command` (a container, `nice`, `systemd-run --scope …`);
        /// `{work_dir}` in them is replaced by the work dir. `command[0]` stays the agent's
        /// executable (`ctx.agent_binary`); which CLI it is, is `cli`'s
        exec_prefix: Vec<String> = (empty) reload Next;
        /// bytes whose appearance in the round log marks the agent's result, for result
        /// grace; `""` turns it off. The `codewhale` and `pi` presets set their own
        terminal_marker: String = (DEFAULT_TERMINAL_MARKER, "claude's") reload Next init (preset);
        /// the reference system's key: how long an agent whose CLI finishes its turn on a
        /// signal gets between that signal and SIGKILL; a larger value is refused (exit 78),
        /// not clamped. A phase may set its own in `[phases.<name>.agent]`. Which CLIs, by
        /// the agent's `cli`: `claude` (SIGINT: its turn is drained; SIGTERM would
        /// abandon it), `gemini` and `pi` (SIGTERM); any other agent gets SIGTERM and 5 s.
        /// The same signal and grace serve every end of a round's agent: the budget, `kill`
        /// (or a second SIGTERM), result grace and in-round pressure (docs/agent-clis.md,
        /// "Stopping an agent"). `peek --json` (`plugins.cooperative_stop`,
        /// `plugins.resolved_sigterm_grace_s`) and `doctor` (`sigterm_grace`) show it
        sigterm_grace_s: u64 = (DEFAULT_SIGTERM_GRACE_S) range(1..=MAX_SIGTERM_GRACE_S)
            reload Next into (sigterm_grace: Duration = secs);
        /// under `serve`, a round goes on with the agent session of its phase's previous
        /// round, for a CLI that can resume one (claude, gemini, codex, aider, pi,
        /// kimi, by the agent's `cli`): the CLI's resume words are appended after `command`
        /// and `AGENT_RUNNER_RESUME_FLAG` / `AGENT_RUNNER_RESUME_SESSION_ID` set
        /// (docs/agent-clis.md, "Session resume"). With it on, a static `command` or
        /// `prompt_arg_template` already holding those words is refused (exit 78). A phase
        /// may set its own in `[phases.<name>.agent]`
        session_resume: bool = (true) reload Next;
        /// a resumed session is started afresh once it has run this many rounds (each
        /// resumed round re-sends the whole history: docs/agent-clis.md, "Session
        /// resume"); `session_renewed` says when and why
        session_max_rounds: u64 = (DEFAULT_SESSION_MAX_ROUNDS) range(1..) reload Next
            into (hand);
        /// a resumed session is started afresh once its rounds have used this many tokens
        /// (input, output, cache read and cache write, each round's own as
        /// `agent_usage_recorded` counts them); a CLI that reports no usage is bounded by
        /// rounds and hours only
        session_max_tokens: u64 = (DEFAULT_SESSION_MAX_TOKENS, "5 M") range(1..) reload Next
            into (hand);
        /// a resumed session is started afresh once it is this many hours old (sessions
        /// live as long as the `serve` that started them)
        session_max_hours: u64 = (DEFAULT_SESSION_MAX_HOURS) range(1..) reload Next
            into (hand);
        @sub sandbox: RawAgentSandbox;
    }
    => /// `[agent]`, resolved (a phase's: its `[phases.<name>.agent]` merged onto it).
    #[derive(Clone, Debug)]
    pub struct AgentConfig by AgentHand {
        /// `session_max_rounds`, `session_max_tokens`, `session_max_hours` together: when a
        /// resumed session is started afresh (`crate::runtime::agent::sessions`).
        session_bounds: super::session_resume::SessionBounds,
        /// `[agent.sandbox] allow_hosts` (a key of that table, made one value per agent
        /// here), parsed: `Some` puts the agent in its own network namespace, reaching
        /// only these hosts through the egress proxy (`crate::runtime::egress::proxy`);
        /// `None` (the key absent): the network as the supervisor has it.
        allow_hosts: Option<super::allow_hosts::AllowHosts>,
    }
}

config_table! {
    /// `[agent.sandbox]`.
    #[derive(Clone, Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawAgentSandbox = "agent.sandbox" {
        /// egress by host name (docs/security.md, "Egress by host name"): present, the agent
        /// runs in a network namespace of its own with only loopback and reaches the outside
        /// only through the supervisor's proxy, which lets through `CONNECT` tunnels and
        /// plain-HTTP requests to these hosts only (others: `403` saying which line opens
        /// it, recorded as `agent_egress_refused`), through the operator's
        /// `HTTPS_PROXY`/`HTTP_PROXY` when set. Each entry: `name` (exactly), `*.domain`
        /// (names below it), an IP address or `localhost` (exactly that address: a local
        /// endpoint, `"127.0.0.1:4010"`), each optionally `:port` (that port only, else
        /// any; required for loopback and `localhost`); a name never leads back into the
        /// machine (loopback, its own, link-local, metadata or private addresses are
        /// refused; `"name private"` opens the private ranges for it); a bad entry is
        /// refused (exit 78). `[]` allows nothing. Absent: the supervisor's network, as
        /// without it. `init` writes each preset's provider hosts, commented out. The agent
        /// gets `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` (and lower case) =
        /// `http://127.0.0.1:3128`, `NO_PROXY` = `localhost,127.0.0.1,::1` (empty when an
        /// entry names a loopback address or `localhost`) and `NODE_USE_ENV_PROXY=1`
        allow_hosts: Vec<String> = (computed "absent") reload Next into (hand);
        /// the agent's own confinement (docs/security.md "The agent's confinement"), also
        /// written `[agent] sandbox = "<mode>"` (the same setting; both at once are refused,
        /// exit 78): `require` refuses to start (`serve`, `round`, `doctor`: exit 78, naming what is
        /// missing) unless Landlock, seccomp and a PID namespace of the agent's own all
        /// engage, and a round whose confinement cannot be built does not start
        /// (`agent_spawn_failed`); `prefer` applies what this machine offers and announces
        /// a shortfall once per boot (`agent_sandbox_degraded`); `off` (and a config
        /// without the key) runs the agent with every right of the operator. One setting
        /// for every phase. `doctor` (`agent_sandbox` check and block) and `peek`
        /// (`agent_sandbox`) list each layer on or off with the reason. `init` writes
        /// `prefer` for a new project (docs/security.md, "What `init` writes")
        mode: String as SandboxMode = (SandboxMode::Off) reload Restart
            init (write "The agent's own confinement (docs/security.md): prefer = what this machine offers, require = every layer or no start, off = all your rights");
        /// written (and read, executed) by the agent besides the work tree, its own state
        /// and its TMPDIR: caches and toolchains (`~/.cache/pip`). `~` and `{project}`
        /// expanded, relative to `work_dir`; each must exist; refused (exit 78) when one
        /// is, lies in or covers a credential store (`~/.ssh`, `~/.aws`, …), the state dir,
        /// `log_dir` or the config file
        write_paths: Vec<String> = (empty) label "list of paths" reload Restart
            into (write_paths: Vec<PathBuf> = hand);
        /// read (and executed) by the agent besides the system and the home directory's
        /// other entries; refused when one covers a credential store or the state dir
        /// without naming it
        read_paths: Vec<String> = (empty) label "list of paths" reload Restart
            into (read_paths: Vec<PathBuf> = hand);
        /// TCP ports the agent may connect to besides 443 (a local model server, a
        /// registry on another port); `init --endpoint URL` writes the URL's port, and
        /// `doctor` (`agent_endpoint`) names a port the agent's endpoint needs
        connect_ports: Vec<u16> = (empty) label "list of integers 1..=65535" check ports
            reload Restart;
        /// `socket(AF_UNIX, …)` for the agent (`socketpair` is always allowed). Off, the
        /// call fails (`EPERM`) and is recorded (`agent_sandbox_denied`,
        /// `socket(AF_UNIX)`): Landlock does not cover connecting to a pathname socket, so
        /// the operator's ssh agent, `docker.sock` or the user bus would be in reach. Turn it
        /// on for what needs one: gpg signing (gpg-agent), `ssh`/`git push` through the ssh
        /// agent (with `SSH_AUTH_SOCK` in `pass_env`), a database over its socket, headless
        /// Chromium (docs/security.md "UNIX sockets and new namespaces")
        unix_sockets: bool = (false) reload Restart;
        /// new namespaces for the agent. Off, `clone` with a namespace flag, `unshare` and
        /// `chroot` fail (`EPERM`) and are recorded, and `clone3` fails with `ENOSYS` (libc
        /// falls back to `clone`). Turn it on for a workload that makes namespaces of its
        /// own; Landlock, the locked read-only mounts and the capability drop still hold
        /// inside them, and their id maps (files under `/proc`) stay unwritable, so
        /// headless Chromium's and bubblewrap's own sandboxes still cannot be built: run
        /// them with their sandbox off, ours standing in (docs/security.md "UNIX sockets
        /// and new namespaces")
        user_namespaces: bool = (false) reload Restart;
        /// the agent keeps this machine's network, as before this key: without `allow_hosts`,
        /// under `prefer` and `require`, the agent otherwise gets a network namespace of its
        /// own with only loopback, and its way out is the supervisor's egress proxy
        /// (`HTTPS_PROXY` and friends = `http://127.0.0.1:3128`), which lets through any host
        /// *name* on 443 and on the ports of `connect_ports`, and public IP addresses, never
        /// into this machine (loopback, its own addresses), link-local, cloud-metadata or
        /// private addresses (refusals recorded as `agent_egress_refused`); each port of
        /// `connect_ports` is also forwarded from the namespace's `127.0.0.1` to this
        /// machine's (a local model endpoint keeps working); UDP and DNS reach nothing.
        /// `true` gives the agent the host's network with only Landlock's port rule: TCP to 443
        /// and `connect_ports` at *any* address (this machine's and `127.0.0.1` included),
        /// UDP anywhere. For a workload that needs another protocol (ssh on 22, a database
        /// port, DNS of its own) or a private address without `allow_hosts`. `doctor` shows
        /// it (`agent_sandbox` block, `network` layer); set with `allow_hosts` it is refused
        /// (exit 78) (docs/security.md, "The agent's network")
        host_network: bool = (false) reload Restart;
        /// variables of the supervisor's environment the confined agent (and a goal check)
        /// also inherits, by exact name (`["SSH_AUTH_SOCK", "NPM_TOKEN"]`). Under `prefer`
        /// and `require` the agent gets only an allow-list of the supervisor's environment
        /// (`PATH`, `HOME`, locale, `TERM`, `TZ`, `USER`, proxy and CA variables, version
        /// managers', `OTEL_*`, its CLI's provider variables) plus `[agent.env]` and what
        /// agent-runner sets; every other name is dropped, `SSH_AUTH_SOCK` included, and
        /// `doctor` (`agent_env`) lists them (docs/security.md, "The agent's environment").
        /// Under `off` the agent inherits the whole environment and this key changes
        /// nothing. A name that is empty or holds `=` or NUL is refused (exit 78)
        pass_env: Vec<String> = (empty) label "list of variable names" check variable_names
            reload Restart;
        /// the key broker (docs/security.md, "The key broker"): `auto` keeps the provider
        /// key of the agent's CLI out of its sandbox while `mode` confines it. The key is
        /// read from the supervisor's environment only (`ANTHROPIC_API_KEY` or
        /// `ANTHROPIC_AUTH_TOKEN` for claude, `OPENAI_API_KEY` for codex and aider,
        /// `GEMINI_API_KEY` for gemini, `ANTHROPIC_API_KEY` for aider); the agent gets a
        /// placeholder and a base URL (`ANTHROPIC_BASE_URL`, …) on the supervisor's
        /// loopback, where the broker forwards its requests to that provider's endpoint
        /// (the base URL the operator set, else the provider's own, over TLS for
        /// `https://`) with the real key, to no other host. A CLI logged in without a key
        /// variable (OAuth), a key given in `[agent.env]` (a file the agent reads), and the
        /// CLIs that cannot be brokered (kimi, pi, codewhale; codex with a provider of its
        /// own in `config.toml`) are left as they are: `doctor` (`key_broker`) says which
        /// and why. `off`: the agent gets the key itself
        broker: String as BrokerMode = (BrokerMode::Auto) reload Restart
            init (write "The provider key stays in the supervisor (docs/security.md \"The key broker\"): auto, or off to give the agent the key");
    }
    => /// `[agent.sandbox]`'s mode and grants, resolved (`allow_hosts` is the agent's:
    /// [`AgentConfig::allow_hosts`](super::AgentConfig::allow_hosts)).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct AgentSandboxConfig by AgentSandboxHand {}
}

/// Default `[agent] sigterm_grace_s` (the reference system's).
pub(crate) const DEFAULT_SIGTERM_GRACE_S: u64 = 10;

/// The largest `[agent] sigterm_grace_s`: the reference system keeps it a few seconds
/// inside its own wait for a round to end (15 s); larger values are refused, not clamped.
pub(crate) const MAX_SIGTERM_GRACE_S: u64 = 12;

/// Default `[agent] terminal_marker`: the compact JSON of claude's final record (the
/// reference system's default).
pub(crate) const DEFAULT_TERMINAL_MARKER: &str = "\"type\":\"result\"";

config_table! {
    /// `[runtime]`.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawRuntime = "runtime" {
        /// the git working tree the agent works in
        work_dir: String = (".") label "path" reload Restart init (write)
            into (work_dir: PathBuf = hand);
        /// round logs, `round-context.json`, host state dirs; never counted as dirt.
        /// Left out, a tree whose default would be another existing tree's record (one
        /// folder name) gets `~/.agent-runner/{project}-<key>/logs`
        log_dir: String = ("~/.agent-runner/{project}/logs") label "path"
            reload Restart init (write) into (log_dir: PathBuf = hand);
        /// the record: project lock, events, `state.json`, `orphan-state.json`,
        /// `service.json`, `control.sock`
        state_dir: String = (computed "see below") label "path" reload Restart
            into (state_dir: PathBuf = hand);
        /// wall-clock budget of one round: then the agent's stop signal to its process
        /// group (SIGTERM, or its CLI's cooperative signal: see `sigterm_grace_s`), SIGKILL
        /// 5 s later (`sigterm_grace_s` later for a cooperative CLI)
        round_budget_s: u64 = (1800) range(1..) reload Next init (write)
            into (round_budget: Duration = secs);
        /// pause between rounds under `serve`
        restart_delay_s: u64 = (3) range(1..) reload Next init (write)
            into (restart_delay: Duration = secs);
        /// `serve` stops after this many completed rounds (`max_rounds_reached`)
        max_rounds: u64 = (none) reload Boot;
        /// `serve` stops before a round when it exists (`stop_file_detected`)
        stop_file: String = (none) label "path" reload Next
            into (stop_file: Option<PathBuf> = hand);
        /// keep the last N round logs
        round_log_retention: u64 = (0, "keep all") reload Next;
        /// keep the newest round logs within this many bytes in total (room for the next
        /// round's cap is kept)
        round_log_retention_bytes: u64 = (0, "no limit") reload Next;
        /// cap of one round log: the agent's output past it is discarded after a marker
        /// line `[agent-runner: round log cap of N bytes reached …]`, and
        /// `round_log_capped` records how much
        round_log_max_bytes: u64 = (DEFAULT_ROUND_LOG_MAX_BYTES, "64 MiB") range(1024..)
            reload Next;
        /// passed to hooks as `ctx.dry_run`
        dry_run: bool = (false) reload Next;
        /// no pre-round hook (`pre_round/before_round`) is asked before a round, so none
        /// can skip it; context enrichers and every other family are still called (the
        /// reference system's key). A phase overrides it with `[phases.<name>]
        /// disable_pre_round_hooks` or `[phases.<name>.runtime] disable_pre_round_hooks`
        /// (one of the two). `peek --json` says which holds for the next round
        /// (`plugins.pre_round_hooks_disabled`)
        disable_pre_round_hooks: bool = (false) reload Next;
        /// after a round a post-round hook diagnosed as a usage or rate limit, an overload
        /// or a network failure: wait (until the printed reset time, or exponentially from
        /// what the hook asked, at least `restart_delay_s`), go on after `restart_delay_s`,
        /// or stop `serve` (exit 75). Diagnosed rounds count toward the crash-loop breaker
        /// (docs/operations.md). See `docs/detectors.md`
        transient_error_action: String as TransientAction = (TransientAction::BackOff)
            reload Next init (write "After a usage or rate limit: wait until the printed reset (docs/detectors.md).");
        /// an agent still running this long after its `terminal_marker` appeared is ended
        /// (`round_grace_kill`, `exit_cause` `grace_kill`, counted as a clean round),
        /// unless a child of it is still at work: then it is left to its budget
        /// (`round_grace_extended`, once)
        max_grace_after_result_s: u64 = (0, "off")
            reload Next init (write "End an agent that lingers this long after printing its result (0: never).")
            into (max_grace_after_result: Option<Duration> = secs_or_off);
        /// children whose command line matches one do not keep a lingering agent alive
        /// (claude's preset: its shell-snapshot helper)
        grace_kill_ignore_patterns: Vec<String> = (empty) label "list of regular expressions"
            check regexes reload Next init (write);
        /// every N-th round is a fresh-eyes round: `AGENT_RUNNER_FRESH_EYES=1`,
        /// `fresh_eyes_round_triggered`
        fresh_eyes_every_n: u64 = (none) range(1..) reload Next;
        /// a file the agent keeps its running account in; passed as
        /// `AGENT_RUNNER_NARRATIVE_FILE`
        narrative_file: String = (none) label "path" reload Next
            into (narrative_file: Option<PathBuf> = hand);
        /// before and after each round, `round_substrate_before` / `round_substrate_after`
        /// record git `HEAD` and the sha256 of the matching files (paths and contents; 64
        /// hex digits); without patterns the events still come, `paths_hash` null
        substrate_fingerprint_paths: Vec<String> = (empty)
            label "list of globs (relative to `work_dir`)" check globs reload Next;
        /// the longest back-off grown from `restart_delay_s` or asked for in seconds
        /// (ours); a printed reset time is honoured up to 8 h
        transient_backoff_cap_s: u64 = (DEFAULT_TRANSIENT_BACKOFF_CAP_S)
            label "integer, `restart_delay_s`..=86400" reload Next
            into (transient_backoff_cap: Duration = hand);
        /// ours: `serve` starts no round once it has run this long and ends with exit 0
        /// (`max_duration_reached{elapsed_s, max_duration_s, rounds_completed}`); looked at
        /// before each round, so a round under way finishes within its budget
        max_duration_s: u64 = (none) range(1..) reload Next
            into (max_duration: Option<Duration> = secs_opt);
        /// ours: when this many rounds started in the last 60 minutes (`round_start` events
        /// of the record, so a restart does not reset the count), `serve` waits until the
        /// oldest of them is an hour old: `rate_ceiling_paused{rounds_last_hour,
        /// max_rounds_per_hour, resume_in_s}`, `status` says `paused by max_rounds_per_hour
        /// until <time>`, then `rate_ceiling_resumed{paused_for_s, reason}`; a stop,
        /// SIGTERM or the stop file ends the wait within 250 ms, a SIGHUP re-reads the
        /// config and looks again. `round` (one manual round) ignores it
        max_rounds_per_hour: u64 = (none) range(1..) reload Next;
    }
    => /// `[runtime]`, resolved: paths absolute (`work_dir` canonical and existing; `log_dir`
    /// and `state_dir` created on first write).
    #[derive(Clone, Debug)]
    pub struct RuntimeConfig by RuntimeHand {}
}

/// Default of `[runtime] transient_backoff_cap_s`: 30 minutes.
pub(crate) const DEFAULT_TRANSIENT_BACKOFF_CAP_S: u64 = 1800;

/// Default `[runtime] round_log_max_bytes`: 64 MiB.
pub(crate) const DEFAULT_ROUND_LOG_MAX_BYTES: u64 = 64 * 1024 * 1024;

config_table! {
    /// `[schedule]` (and a phase's `[phases.<name>.schedule]`).
    #[derive(Clone, Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawSchedule = "schedule" {
        /// the zone the windows are read in (rules from the zone database compiled into
        /// agent-runner)
        timezone: String = (computed "the system's zone") label "IANA zone name" reload Next;
        /// rounds start only inside one of them
        run_windows: Vec<String> = (empty, "any time") label "list of windows" reload Next;
        /// rounds never start inside one of them
        pause_windows: Vec<String> = (empty) label "list of windows" reload Next;
    }
}

config_table! {
    /// `[prompt]`.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawPrompt = "prompt" {
        /// the prompt, read fresh every round
        file: String = ("./prompts/main.md") label "path" reload Next init (write) into (hand);
        /// several files joined by `concat_separator` (exclusive with `file`)
        files: Vec<String> = (computed "—") label "list of paths" reload Next
            into (files: Vec<PathBuf> = hand);
        /// joins the files' texts
        concat_separator: String = ("\n\n") reload Next;
        /// drop a leading `---` … `---` block (LF or CRLF lines; the closing `---` may end
        /// the file). A UTF-8 byte order mark at the start of any prompt file is always
        /// dropped
        strip_yaml_frontmatter: bool = (true) reload Next;
        /// give the agent the round context
        inject_context: bool = (true) reload Next into (hand);
        /// a fenced `json round-context` block before the prompt (each enricher's
        /// object after it, framed as its host's data), or
        /// `<log_dir>/round-context.json`
        context_injection_mode: String as ContextInjection = (ContextInjection::Prepend)
            reload Next into (injection: ContextInjection = hand);
    }
    => /// `[prompt]`, resolved: `files` holds `file` or `files`, absolute, in order (the
    /// first must exist, later missing ones are skipped: the reference system's
    /// optional-preamble pattern); `injection` is `none` when `inject_context = false`.
    #[derive(Clone, Debug)]
    pub struct PromptConfig by PromptHand {}
}

config_table! {
    /// `[vcs]`.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawVcs = "vcs" {
        /// the built-in dirty handler (priority 1000); outside git `ignore`, and a written
        /// `stash` or `auto_commit` is refused there
        dirty_action: String as DirtyAction = (DirtyAction::Stash) reload Next init (write);
        /// a stash of the same change within this long of the previous one is skipped (a
        /// different change is stashed); a previous stash recorded in the future (the
        /// clock stepped back since) skips nothing
        stash_idempotency_s: u64 = (5) reload Next init (write)
            into (stash_idempotency: Duration = secs);
        /// longest run of one git command (commit, stash, status, …) before it is killed
        /// with its process group
        git_timeout_s: u64 = (DEFAULT_GIT_TIMEOUT_S) range(1..) reload Next
            into (git_timeout: Duration = secs);
        /// whether the supervisor's commit (`auto_commit`, or a dirty handler's commit)
        /// takes the round's changes to the exec surface (CI pipelines, editor and tool
        /// configs that run programs: docs/security.md, "What runs later: the watched
        /// tier"); `false` leaves them in the tree for the operator to review, with
        /// `exec_surface_changed` naming them
        commit_exec_surface: bool = (false) reload Next;
    }
    => /// `[vcs]`, resolved.
    #[derive(Clone, Debug)]
    pub struct VcsConfig by VcsHand {
        /// Whether `dirty_action` is written in the file: outside git only an unwritten
        /// one becomes `ignore` (docs/operations.md, "Without git").
        dirty_action_written: bool,
    }
}

/// Default `[vcs] git_timeout_s`.
pub(crate) const DEFAULT_GIT_TIMEOUT_S: u64 = 60;

config_table! {
    /// `[plugins]`.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawPlugins = "plugins" {
        /// `require`: Landlock and seccomp must both engage and every host must be pinned,
        /// or nothing starts (exit 78); `prefer`: best tier available, a shortfall
        /// announced once; `off`: hosts unconfined (not for production)
        sandbox: String as SandboxMode = (SandboxMode::Prefer) reload Restart init (write);
        /// spawn hooks whose defer/skip, and pre-round hooks whose skip, is honoured; others
        /// are downgraded to proceed (`plugin_spawn_override_ignored` /
        /// `plugin_round_override_ignored`). Post-round hooks whose `back_off` longer than
        /// their call timeout is honoured; others are capped to it
        /// (`plugin_post_round_override_ignored`, docs/protocol.md `post_round/after_round`)
        spawn_override_allow: Vec<String> = (empty) label "list of hook names"
            reload Next init (write)
            into (spawn_override_allow: Vec<agent_runner_protocol::HookName> = hand);
        /// hosts not started (none of their hooks, event kinds or owned paths count); a
        /// built-in detector's name (`claude_error_detector`, …) turns that detector off,
        /// `builtin-detectors` all of them. Keys on host names only (the reference system
        /// mixed manifest and module names here); a name that is no configured host and no
        /// built-in detector gets a warning
        disable: Vec<String> = (empty) label "list of host or built-in detector names"
            reload Next init (write);
        /// the sha256 of each host's `command[0]`, as a table `[plugins.pin]`;
        /// `agent-runner doctor` prints ready-to-paste lines
        pin: BTreeMap<String, String> = (empty)
            label "table host name → `\"sha256:<64 hex>\"`" reload Next
            into (pins: BTreeMap<String, agent_runner_plugin_host::host::pin::Sha256Pin> = hand);
        /// the hosts, one table `[plugins.hosts.<name>]` each (below)
        hosts: BTreeMap<String, RawHost> = (empty) label "tables" reload Next
            into (hosts: Vec<HostConfig> = hand);
    }
    => /// `[plugins]`, resolved: hosts in name order.
    #[derive(Clone, Debug)]
    pub struct PluginsConfig by PluginsHand {}
}

config_table! {
    /// One `[plugins.hosts.<name>]` table.
    #[derive(Clone, Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawHost = "plugins.hosts.<name>" {
        /// `command[0]` is the executable that is hashed, pinned and run (a leading `~` or
        /// `~/` is the home directory; otherwise relative to the config file's directory, or
        /// on PATH)
        command: Vec<String> = (required) reload Next into (command: Vec<String> = hand);
        /// the families the host may declare; declaring another refuses the host
        provides: Vec<String> = (required)
            label "list of `\"spawn_hook\"`, `\"dirty_handler\"`, `\"pre_round\"`, `\"context_enricher\"`, `\"serve_startup\"`, `\"detector\"`, `\"post_round\"`"
            reload Next
            into (provides: std::collections::BTreeSet<agent_runner_protocol::Family> = hand);
        /// per-call timeout
        timeout_s: u64 = (computed "10 (spawn hooks, pre-round hooks, enrichers, detectors, post-round hooks) / 60 (dirty handlers) / 30 (serve-startup hooks)")
            range(1..) reload Next into (timeout: Option<Duration> = secs_opt);
        /// how long `initialize` may take
        init_timeout_s: u64 = (DEFAULT_INIT_TIMEOUT_S) range(1..) reload Next
            into (init_timeout: Duration = secs);
        /// the host's address-space limit
        memory_max_mb: u64 = (DEFAULT_HOST_MEMORY_MB) range(1..) reload Next;
        /// extra files or directories the host may **read** (never write or execute); `~`
        /// and `{project}` expand, relative paths are taken from `work_dir`; each must
        /// exist. Refused (exit 78) when one covers the config file, `log_dir`, the state
        /// dir or a credential path of the home directory (`~/.ssh`, `~/.aws`,
        /// `~/.config/gcloud`, `~/.claude`, `~/.gnupg`, `~/.netrc`, `~/.docker`, `~/.kube`,
        /// `~/.config/gh`, `~/.azure`, `~/.npmrc`, `~/.cargo/credentials.toml`,
        /// `~/.cache/huggingface/token`, …: the list is `CREDENTIAL_PATHS` in
        /// `plugin-host/src/common/credentials.rs`) without naming it: `~` and `~/.cargo`
        /// are refused, `~/.aws` itself and `~/.cargo/registry` may be named. Shown by
        /// `doctor` and `peek`
        read_paths: Vec<String> = (empty) label "list of paths" reload Next
            into (read_paths: Vec<PathBuf> = hand);
        /// the largest file the host may write (`RLIMIT_FSIZE`; past it `EFBIG`)
        file_max_mb: u64 = (write_limits::DEFAULT_FILE_MAX_MB) range(1..) reload Next
            into (hand);
        /// size of the host's private TMPDIR (`tmpfs`; past it `ENOSPC`)
        tmp_max_mb: u64 = (write_limits::DEFAULT_TMP_MAX_MB) range(1..) reload Next
            into (hand);
        /// total size of the host's state directory, every file, directory and link counted
        /// for at least 4 KiB (so 64 MiB holds at most 16,384 entries); past it the host is
        /// killed and disabled (`plugin_write_limit`). See docs/security.md "Write limits"
        state_max_mb: u64 = (write_limits::DEFAULT_STATE_MAX_MB) range(1..) reload Next
            into (hand);
        /// passed verbatim to the host in `initialize` (and to its serve-startup hooks)
        config: serde_json::Map<String, serde_json::Value> = (empty) label "table"
            reload Next;
    }
    => /// One `[plugins.hosts.<name>]` table, resolved.
    #[derive(Clone, Debug, PartialEq)]
    pub struct HostConfig by HostHand {
        /// The table's name: the host's, used by pins, `disable`, events.
        name: String,
        /// `file_max_mb`, `tmp_max_mb` and `state_max_mb` together (docs/security.md
        /// "Write limits").
        writes: WriteLimits,
    }
}

/// How much a host may write, in MiB (`[plugins.hosts.<name>]` `file_max_mb`,
/// `tmp_max_mb`, `state_max_mb`; docs/configuration.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WriteLimits {
    /// Largest single file (`RLIMIT_FSIZE`; a write past it fails with `EFBIG`).
    pub file_max_mb: u64,
    /// Size of the private TMPDIR (`tmpfs`; past it, `ENOSPC`).
    pub tmp_max_mb: u64,
    /// Total of the state directory (measured by the supervisor; past it, the host is
    /// killed and disabled).
    pub state_max_mb: u64,
}

impl Default for WriteLimits {
    fn default() -> Self {
        WriteLimits {
            file_max_mb: write_limits::DEFAULT_FILE_MAX_MB,
            tmp_max_mb: write_limits::DEFAULT_TMP_MAX_MB,
            state_max_mb: write_limits::DEFAULT_STATE_MAX_MB,
        }
    }
}

/// Default memory limit of a host (MiB).
pub(crate) const DEFAULT_HOST_MEMORY_MB: u64 = 1024;

/// Every table of keys, in the order `init`'s template and docs/configuration.md take
/// them.
pub(crate) const TABLES: &[Table] = &[
    RawConfig::TABLE,
    RawAgent::TABLE,
    RawAgentSandbox::TABLE,
    RawRuntime::TABLE,
    RawPrompt::TABLE,
    RawVcs::TABLE,
    RawPlugins::TABLE,
    RawHost::TABLE,
    RawSchedule::TABLE,
    super::monitor::TABLES[0],
    super::monitor::TABLES[1],
    super::monitor::TABLES[2],
    super::monitor::TABLES[3],
    super::monitor::TABLES[4],
    RawPhaseKeys::TABLE,
    RawPhaseTable::TABLE,
    super::goal::RawGoal::TABLE,
    super::goal::RawCheck::TABLE,
    super::budget::RawBudget::TABLE,
    super::budget::RawPrice::TABLE,
    super::telemetry::RawTelemetry::TABLE,
    super::notify::RawNotify::TABLE,
    super::notify::RawWebhook::TABLE,
];

config_table! {
    /// `[phases]`'s own keys; every other key of the table is a phase's
    /// `[phases.<name>]` ([`RawPhaseTable`]), told apart by [`parse_phases`].
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawPhaseKeys = "phases" {
        /// round N runs phase `list[(N-1) % len]`; `round --phase NAME` overrides
        list: Vec<String> = (empty) reload Next;
        /// when the next round's phase is outside its schedule: wait for it, or (while
        /// another phase is open) pass its round number over (`schedule_phase_skipped`)
        phase_policy: String as PhasePolicy = (PhasePolicy::Wait) reload Next;
    }
    => /// `[phases]`, resolved: the rotation and the per-phase overrides (`list` empty when
    /// phases are not used; a name may repeat, to weight it).
    #[derive(Clone, Debug, Default)]
    pub struct PhasesConfig by PhasesHand {
        /// The overrides of each `[phases.<name>]` table, by phase name (every name is in
        /// `list`).
        overrides: BTreeMap<String, PhaseOverride>,
    }
}

/// The per-phase overrides of one `[phases.<name>]` table.
#[derive(Clone, Debug, Default)]
pub struct PhaseOverride {
    /// `round_budget_s` (flat or under `[phases.<name>.runtime]`).
    pub round_budget: Option<Duration>,
    /// `prompt.files`, absolute.
    pub prompt_files: Option<Vec<PathBuf>>,
    /// `[phases.<name>.agent]` merged onto `[agent]`.
    pub agent: Option<AgentConfig>,
    /// `[phases.<name>.schedule]` (its `timezone` defaults to `[schedule]`'s).
    pub schedule: Option<Schedule>,
    /// `disable_pre_round_hooks` (flat or under `[phases.<name>.runtime]`).
    pub disable_pre_round_hooks: Option<bool>,
}

/// `[phases]`: its own keys plus one `[phases.<name>]` table per overridden phase.
#[derive(Debug, Default)]
pub(super) struct RawPhases {
    pub keys: RawPhaseKeys,
    pub overrides: BTreeMap<String, RawPhase>,
}

/// One `[phases.<name>]` table, the per-phase `agent` table already merged onto `[agent]`.
#[derive(Debug)]
pub(super) struct RawPhase {
    pub round_budget_s: Option<u64>,
    pub disable_pre_round_hooks: Option<bool>,
    pub prompt_files: Option<Vec<String>>,
    pub agent: Option<RawAgent>,
    pub schedule: Option<RawSchedule>,
}

config_table! {
    /// One `[phases.<name>]` table as serde sees it. Its keys may also be written under
    /// `[phases.<name>.runtime]` (the reference system's spelling), not both.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawPhaseTable = "phases.<name>" {
        /// this phase's round budget, in seconds (or under `[phases.<name>.runtime]`)
        round_budget_s: u64 = (computed "`[runtime]`'s") range(1..) reload Next;
        /// this phase's `disable_pre_round_hooks` (or under `[phases.<name>.runtime]`)
        disable_pre_round_hooks: bool = (computed "`[runtime]`'s") reload Next;
        @sub runtime: Option<RawPhaseRuntime>;
        @sub prompt: Option<RawPhasePrompt>;
        @sub agent: Option<toml::Table>;
        @sub schedule: Option<RawSchedule>;
    }
}

/// `[phases.<name>.runtime]`: the twins of [`RawPhaseTable`]'s keys, checked by its
/// definitions once merged.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPhaseRuntime {
    round_budget_s: Option<u64>,
    disable_pre_round_hooks: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPhasePrompt {
    pub files: Vec<String>,
}

/// Parses `text` into the raw shape; a shape error names the dotted key.
pub(super) fn parse(path: &Path, text: &str) -> Result<RawConfig, ConfigError> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| {
        let message = e.to_string().replace('\n', " ");
        match both_sandbox_spellings(text, e.span(), &message) {
            Some(error) => key_error(path, "agent.sandbox", error),
            None => ConfigError::Syntax {
                path: path.to_owned(),
                message,
            },
        }
    })?;
    agent_sandbox_word(path, &mut table)?;
    let plugin_tables = match table.get_mut("plugins") {
        Some(toml::Value::Table(plugins)) => take_plugin_tables(path, plugins)?,
        _ => BTreeMap::new(),
    };
    let phases = table.remove("phases");
    let agent_table = table.get("agent").cloned();
    let mut raw: RawConfig = deserialize_at(path, "", toml::Value::Table(table))?;
    raw.phases = match phases {
        None => RawPhases::default(),
        Some(value) => parse_phases(path, value, agent_table)?,
    };
    raw.plugin_tables = plugin_tables;
    Ok(raw)
}

/// The reference system gives each plugin its own `[plugins.<name>]` table: an unknown
/// key of `[plugins]` holding a table is taken out and kept as the config of the host of
/// that name (docs/configuration.md, "Plugins"). An unknown key holding a plain value
/// stays, so a misspelt setting (`sandox = "require"`) is still an error: fail closed.
fn take_plugin_tables(
    path: &Path,
    plugins: &mut toml::Table,
) -> Result<BTreeMap<String, serde_json::Map<String, serde_json::Value>>, ConfigError> {
    let foreign: Vec<String> = plugins
        .iter()
        .filter(|(k, v)| {
            !RawPlugins::KEYS.iter().any(|key| key.field == k.as_str()) && v.is_table()
        })
        .map(|(k, _)| k.clone())
        .collect();
    let mut tables = BTreeMap::new();
    for key in foreign {
        let value = plugins.remove(&key).expect("listed above");
        let config = deserialize_at(path, &format!("plugins.{key}"), value)?;
        tables.insert(key, config);
    }
    Ok(tables)
}

/// `[agent] sandbox = "require"` (the plain word, as `[plugins] sandbox` is written) made
/// the table it stands for, `[agent.sandbox] mode = "require"`, so that every reader
/// (`doctor`, `peek`, `migrate`, the round) sees one shape. Errors: a value neither a
/// string nor a table.
fn agent_sandbox_word(path: &Path, table: &mut toml::Table) -> Result<(), ConfigError> {
    let Some(toml::Value::Table(agent)) = table.get_mut("agent") else {
        return Ok(());
    };
    match agent.get("sandbox") {
        None | Some(toml::Value::Table(_)) => Ok(()),
        Some(toml::Value::String(word)) => {
            let mode =
                toml::Table::from_iter([("mode".to_owned(), toml::Value::String(word.clone()))]);
            agent.insert("sandbox".to_owned(), toml::Value::Table(mode));
            Ok(())
        }
        Some(other) => Err(key_error(
            path,
            "agent.sandbox",
            format!(
                "{other} is neither a mode nor a table; expected {} or an [agent.sandbox] table",
                super::keys::words_label::<SandboxMode>().replace("\\|", "|")
            ),
        )),
    }
}

/// The clear word for a file that sets the agent's sandbox twice (`[agent] sandbox =
/// "…"` and an `[agent.sandbox]` table or `sandbox.mode`), which the TOML parser refuses
/// as a duplicate key or a dotted key extending a string; `None` for any other syntax
/// error. `span` is where the parser stopped, to tell `[agent]`'s `sandbox` from another
/// table's.
fn both_sandbox_spellings(
    text: &str,
    span: Option<std::ops::Range<usize>>,
    message: &str,
) -> Option<String> {
    let in_agent = || {
        let at = span.as_ref().map_or(0, |s| s.start.min(text.len()));
        let header = text[..at]
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with('['));
        header.is_some_and(|h| h.split('#').next().unwrap_or("").trim() == "[agent]")
    };
    let twice = message.contains("duplicate key `sandbox` in table `agent`")
        || (message.contains("dotted key `sandbox` attempted to extend non-table type")
            && in_agent());
    twice.then(|| {
        format!(
            "set twice: `[agent] sandbox = \"<mode>\"` and an `[agent.sandbox]` table (or \
             `sandbox.<key>`) are two spellings of one setting; keep one (`[agent.sandbox] \
             mode = \"<mode>\"` when its other keys are needed). The parser said: {message}"
        )
    })
}

fn parse_phases(
    path: &Path,
    value: toml::Value,
    agent: Option<toml::Value>,
) -> Result<RawPhases, ConfigError> {
    let toml::Value::Table(mut table) = value else {
        return Err(key_error(path, "phases", "expected a table".into()));
    };
    let mut own = toml::Table::new();
    for key in RawPhaseKeys::KEYS {
        if let Some(value) = table.remove(key.field) {
            own.insert(key.field.to_owned(), value);
        }
    }
    let keys: RawPhaseKeys = deserialize_at(path, "phases", toml::Value::Table(own))?;
    let mut overrides = BTreeMap::new();
    for (name, value) in table {
        let prefix = format!("phases.{name}");
        let mut phase: RawPhaseTable = deserialize_at(path, &prefix, value)?;
        // The reference system's flat keys and their `[phases.<name>.runtime]` twins: one
        // of each pair.
        let runtime = phase.runtime.take().unwrap_or_default();
        for (key, flat, nested) in [
            (
                "round_budget_s",
                phase.round_budget_s.is_some(),
                runtime.round_budget_s.is_some(),
            ),
            (
                "disable_pre_round_hooks",
                phase.disable_pre_round_hooks.is_some(),
                runtime.disable_pre_round_hooks.is_some(),
            ),
        ] {
            if flat && nested {
                return Err(key_error(
                    path,
                    &format!("{prefix}.{key}"),
                    format!("set both here and in [{prefix}.runtime]; use one"),
                ));
            }
        }
        phase.round_budget_s = phase.round_budget_s.or(runtime.round_budget_s);
        phase.disable_pre_round_hooks = phase
            .disable_pre_round_hooks
            .or(runtime.disable_pre_round_hooks);
        let named = |(key, message): super::keys::Bad| {
            key_error(path, &key.replace("<name>", &name), message)
        };
        let round_budget_s = phase.round_budget_s().map_err(named)?;
        let disable_pre_round_hooks = phase.disable_pre_round_hooks().map_err(named)?;
        let agent = match phase.agent {
            None => None,
            Some(sub) => {
                // Taken from `[agent]` only: a phase's own would be ignored, and an
                // operator must not believe one phase confined when it is not.
                if sub.contains_key("sandbox") {
                    return Err(key_error(
                        path,
                        &format!("{prefix}.agent.sandbox"),
                        "the agent's sandbox is one setting for every phase; set it in \
                         [agent] (`sandbox = \"<mode>\"` or [agent.sandbox]) and remove it here"
                            .into(),
                    ));
                }
                let mut merged = match &agent {
                    Some(toml::Value::Table(base)) => base.clone(),
                    _ => toml::Table::new(),
                };
                merged.extend(sub);
                Some(deserialize_at::<RawAgent>(
                    path,
                    &format!("{prefix}.agent"),
                    toml::Value::Table(merged),
                )?)
            }
        };
        overrides.insert(
            name,
            RawPhase {
                round_budget_s,
                disable_pre_round_hooks,
                prompt_files: phase.prompt.map(|p| p.files),
                agent,
                schedule: phase.schedule,
            },
        );
    }
    Ok(RawPhases { keys, overrides })
}

fn key_error(path: &Path, key: &str, message: String) -> ConfigError {
    ConfigError::Key {
        path: path.to_owned(),
        key: key.to_owned(),
        message,
    }
}

/// Deserializes `value` as `T`; errors name the dotted key under `prefix`.
fn deserialize_at<T: DeserializeOwned>(
    path: &Path,
    prefix: &str,
    value: toml::Value,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let inner_path = err.path().to_string();
        let message = explain(&err.into_inner().to_string());
        let mut key = match (prefix, inner_path.as_str()) {
            (p, ".") => p.to_owned(),
            ("", inner) => inner.to_owned(),
            (p, inner) => format!("{p}.{inner}"),
        };
        if message.starts_with("unknown field") || message.starts_with("missing field") {
            if let Some(field) = field_of(&message).filter(|f| !key.ends_with(f.as_str())) {
                key = if key.is_empty() {
                    field
                } else {
                    format!("{key}.{field}")
                };
            }
        }
        key_error(path, &key, message)
    })
}

/// Serde's words, with the fix spelled out: a did-you-mean for an unknown key, an example
/// for a bare string where a list belongs.
fn explain(message: &str) -> String {
    let message = message.trim_end().replace('\n', " ");
    if message.contains("expected a sequence") {
        return format!("{message}; expected a list of strings, e.g. [\"value\"]");
    }
    if message.starts_with("unknown field") {
        // toml appends " in `<table>`": not a candidate.
        let listed = message
            .rsplit_once(" in `")
            .map_or(message.as_str(), |(l, _)| l);
        let names = backticked(listed);
        if let Some((unknown, expected)) = names.split_first() {
            if let Some(best) = did_you_mean(unknown, expected) {
                return format!("{message}; did you mean `{best}`?");
            }
        }
    }
    message
}

/// The closest of `candidates` to `word` (Damerau-Levenshtein distance at most 2, or at most a
/// third of the word), if any.
fn did_you_mean<'a>(word: &str, candidates: &'a [String]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, _)| *d <= 2.max(word.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.as_str())
}

fn backticked(message: &str) -> Vec<String> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn field_of(message: &str) -> Option<String> {
    backticked(message).into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_gets_a_suggestion_and_peer_keys_load() {
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\nterminal_marker = \"m\"\n[prompt]\nfiels = [\"a\"]\n";
        match parse(Path::new("c.toml"), text) {
            Err(ConfigError::Key { key, message, .. }) => {
                assert_eq!(key, "prompt.fiels");
                assert!(message.contains("did you mean `files`?"), "{message}");
            }
            other => panic!("expected a key error, got {other:?}"),
        }
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\nterminal_marker = \"m\"\n[monitor]\nauth_fail_hint = \"h\"\nround_progress_interval_s = 5\n[monitor.host_health.disk]\nwarning_pct = 80.0\n";
        let raw = parse(Path::new("c.toml"), text).unwrap();
        assert_eq!(raw.monitor.round_progress_interval_s().unwrap(), 5);
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\n[plugins]\nsandox = \"require\"\n[plugins.throttle]\nmax = 3\n";
        match parse(Path::new("c.toml"), text) {
            Err(ConfigError::Key { key, message, .. }) => {
                assert_eq!(key, "plugins.sandox");
                assert!(message.contains("did you mean `sandbox`?"), "{message}");
            }
            other => panic!("expected a key error, got {other:?}"),
        }
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\n[plugins.throttle]\nmax = 3\n";
        let foreign = parse(Path::new("c.toml"), text).unwrap();
        assert_eq!(foreign.plugin_tables["throttle"]["max"], 3);
    }

    #[test]
    fn disable_pre_round_hooks_is_read_flat_or_nested_never_both() {
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\n[runtime]\ndisable_pre_round_hooks = true\n[phases]\nlist = [\"a\", \"b\"]\n[phases.a]\ndisable_pre_round_hooks = false\n[phases.b.runtime]\ndisable_pre_round_hooks = true\n";
        let raw = parse(Path::new("c.toml"), text).unwrap();
        assert_eq!(raw.runtime.disable_pre_round_hooks, Some(true));
        assert_eq!(
            raw.phases.overrides["a"].disable_pre_round_hooks,
            Some(false)
        );
        assert_eq!(
            raw.phases.overrides["b"].disable_pre_round_hooks,
            Some(true)
        );
        let both = "schema_version = 1\n[agent]\ncommand = [\"x\"]\n[phases]\nlist = [\"a\"]\n[phases.a]\ndisable_pre_round_hooks = false\n[phases.a.runtime]\ndisable_pre_round_hooks = true\n";
        match parse(Path::new("c.toml"), both) {
            Err(ConfigError::Key { key, .. }) => {
                assert_eq!(key, "phases.a.disable_pre_round_hooks")
            }
            other => panic!("expected a key error, got {other:?}"),
        }
        let bad = "schema_version = 1\n[agent]\ncommand = [\"x\"]\n[runtime]\ndisable_pre_round_hooks = \"yes\"\n";
        match parse(Path::new("c.toml"), bad) {
            Err(ConfigError::Key { key, .. }) => assert_eq!(key, "runtime.disable_pre_round_hooks"),
            other => panic!("expected a key error, got {other:?}"),
        }
    }

    #[test]
    fn phase_agent_tables_merge_onto_agent() {
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\nname = \"base\"\n[phases]\nlist = [\"a\", \"b\"]\n[phases.a]\nround_budget_s = 7\n[phases.a.agent]\nname = \"alpha\"\n[phases.b.prompt]\nfiles = [\"b.md\"]\n";
        let raw = parse(Path::new("c.toml"), text).unwrap();
        let a = &raw.phases.overrides["a"];
        assert_eq!(a.round_budget_s, Some(7));
        let agent = a.agent.as_ref().unwrap();
        assert_eq!(agent.command, ["x"]);
        assert_eq!(agent.name.as_deref(), Some("alpha"));
        assert_eq!(
            raw.phases.overrides["b"].prompt_files.as_deref(),
            Some(&["b.md".to_owned()][..])
        );
    }
}
