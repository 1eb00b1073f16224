//! Every event kind of the operator's record and its fields, defined once. Writers
//! construct a variant and hand it to [`super::EventLog::emit`]; readers
//! ([`super::Recorded`]) match on it. The kind names and field names are the reference
//! system's where the two overlap (`docs/operations.md`, "Event kinds"); a line's bytes
//! are `{"ts": …, "event": "<kind>", <fields in the order declared here>}`.
//!
//! Adding a kind: a variant here (fields in the order they should appear, `Option` for a
//! value that may be `null`), a line in `docs/operations.md`, "Event kinds", and a sample in
//! this module's test. Readers that do not know it keep it raw.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One event of the record. Serialized with its kind under `event` (snake case of the
/// variant) and its fields beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum Event {
    // ---- serve: boot and the loop ----
    /// Confinement is weaker than `[plugins] sandbox` asked for: at boot (`prefer` running
    /// below the best tier, or `require` refusing to boot) or for one unpinned host under
    /// `require`.
    PluginSandboxDegraded {
        /// `[plugins] sandbox`.
        requested: String,
        /// The tier hosts run at.
        achieved_tier: String,
        /// What is missing, in words.
        reason: String,
        /// `true` when serve refused to boot; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refused_boot: Option<bool>,
        /// The host refused, when the event is about one host; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// The agent's confinement is weaker than `[agent.sandbox] mode` asked for: at boot
    /// (`prefer` without some layer, or `require` refusing to boot).
    AgentSandboxDegraded {
        /// `[agent.sandbox] mode`.
        requested: String,
        /// The tier (Landlock, seccomp) the agent runs at.
        achieved_tier: String,
        /// What is missing, in words.
        reason: String,
        /// `true` when serve refused to boot; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refused_boot: Option<bool>,
    },
    /// The loop ends: a stop signal (or a control-socket stop), a failed serve-startup
    /// hook, or a detector's honoured `stop_service` alert.
    ServeStopping {
        /// Why: `signal`, `serve_startup_hook_failed`, `agent_done_stale` (a `.agent-done`
        /// left by an earlier run cannot be removed), `auto_stop` (a detector's alert), a
        /// post-round hook's honoured stop (its diagnosis: `auth`, …) or `transient_error`
        /// (`transient_error_action = "stop"`).
        reason: String,
        /// Rounds completed by this serve.
        rounds_completed: u64,
        /// `auto_stop` and the post-round reasons: the hook that asked; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hook: Option<String>,
        /// `auto_stop` and the post-round reasons: its message; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A serve-startup hook failed (`docs/protocol.md` §5.5); serve exits 78.
    ServeStartupHookFailed {
        /// The hook.
        hook: String,
        /// The failure class (`rpc_error`, `timeout`, …, or `not_asked`).
        error_type: String,
        /// What happened.
        error_message: String,
    },
    /// A pre-round hook's honoured skip (`docs/protocol.md` §5.3): the round does not run.
    RoundSkipped {
        /// The hook.
        hook: String,
        /// Its reason (redacted, capped).
        reason: String,
        /// The number the round would have had.
        round_num: u64,
    },
    /// A pre-round hook answered `skip` but is not in `[plugins] spawn_override_allow`;
    /// the round runs.
    PluginRoundOverrideIgnored {
        /// The hook.
        hook: String,
        /// What it answered (`skip`).
        action: String,
        /// Its reason (redacted, capped).
        reason: String,
        /// The round.
        round_num: u64,
    },
    /// A detector's alert (`docs/protocol.md` §5.6).
    DetectorAlert {
        /// The detector hook.
        hook: String,
        /// `info`, `warning` or `critical`.
        severity: String,
        /// What it saw (redacted, capped).
        message: String,
        /// Whether it asked serve to stop.
        stop_service: bool,
        /// Whether serve stops for it (`[monitor] auto_stop_on` names the hook).
        auto_stop: bool,
        /// The round that just ended.
        round_num: u64,
    },
    /// `[runtime] stop_file` exists; the loop ends.
    StopFileDetected {
        /// The file.
        path: PathBuf,
        /// The file again, the reference system's key (docs/reference-system.md).
        stop_file: String,
        /// Its first 200 characters (lossy UTF-8; empty when unreadable or not a
        /// regular file).
        content: String,
        /// Rounds completed by this serve.
        rounds_completed: u64,
    },
    /// The agent wrote `<log_dir>/.agent-done` (its own "done"); the loop ends (exit 0),
    /// as the reference system's event of that name (docs/reference-system.md,
    /// "Self-termination"). Also recorded, `reason` `rate_limit`, when serve stops on a
    /// transient error (`transient_error_action = "stop"`), as the reference does.
    AgentSelfTerminated {
        /// The file's first 200 characters (lossy UTF-8, secrets redacted; empty when it is
        /// not a regular file), or `rate_limit`.
        reason: String,
        /// Rounds completed by this serve.
        rounds_completed: u64,
    },
    /// Fast clean rounds in a row did nothing (no usage reported, no change to the tree);
    /// the loop ends (exit 75), as the reference system's give-up of that name.
    StalledNoProgress {
        /// Fast clean rounds in a row that did nothing.
        consecutive_rounds: u32,
        /// The limit that was reached.
        threshold: u32,
        /// What counts as fast, in seconds.
        fast_s: u64,
        /// Rounds completed by this serve.
        rounds_completed: u64,
        /// The last lines of the last such round's log (redacted; at most 10 lines, 2000
        /// characters).
        last_lines: Vec<String>,
    },
    /// Failed rounds in a row reached the limit; serve stops (exit 75).
    CrashLoop {
        /// Failed rounds in a row (unclean exit or a diagnosed failure, output or not).
        consecutive_failures: u32,
        /// The limit that was reached.
        threshold: u32,
        /// Rounds completed by this serve.
        rounds_completed: u64,
        /// Why the last of them failed: `round N: exit 1 after 0.4 s; diagnosed rate_limit`.
        reason: String,
        /// The last lines of its round log (redacted; at most 10 lines, 2000 characters).
        last_lines: Vec<String>,
    },
    /// Rounds ended by memory in a row (the in-round memory floor, an OOM kill in the
    /// round's cgroup) reached the limit; serve stops with exit 71, which the systemd unit
    /// restarts (docs/operations.md, "Memory loops").
    MemLoop {
        /// Such rounds in a row (the reference system's field).
        consecutive: u32,
        /// The limit that was reached.
        threshold: u32,
        /// The last round's agent exit code (`null` when a signal ended it).
        exit_code: Option<i32>,
        /// Rounds completed by this serve.
        rounds_completed: u64,
        /// How the last of them ended: `round N: OOM kill in the round's cgroup after 0.4 s`.
        reason: String,
        /// The last lines of its round log (redacted; at most 10 lines, 2000 characters).
        last_lines: Vec<String>,
    },
    /// A memory loop again: the [`crate::record::mem_loops::PERSISTENT_AT`]-th within
    /// `window_s`, across restarts; serve stops with exit 70, which the systemd unit does
    /// not restart.
    MemLoopPersistent {
        /// Memory loops within the window, this one included (the reference system's
        /// field).
        consecutive: u32,
        /// The count that stops for good.
        threshold: u32,
        /// The window, in seconds.
        window_s: u64,
        /// The last round's agent exit code (`null` when a signal ended it).
        exit_code: Option<i32>,
        /// Rounds completed by this serve.
        rounds_completed: u64,
        /// How the last round ended, as in `mem_loop`.
        reason: String,
        /// The last lines of its round log (redacted; at most 10 lines, 2000 characters).
        last_lines: Vec<String>,
    },
    /// The state dir or log dir cannot be used (disk full, a read-only or vanished mount):
    /// at boot, or for rounds in a row after growing waits; serve stops with exit 76,
    /// which the systemd unit restarts within its start limit.
    EnvironmentUnusable {
        /// `boot` or `round`.
        stage: String,
        /// The failure, in words (path and OS error).
        error: String,
        /// Failures in a row (1 at boot).
        consecutive_failures: u32,
        /// The limit that was reached.
        threshold: u32,
        /// Rounds completed by this serve.
        rounds_completed: u64,
    },
    /// `--max-rounds` reached; the loop ends.
    MaxRoundsReached {
        /// Rounds completed by this serve.
        rounds_completed: u64,
        /// The limit.
        max_rounds: u64,
    },
    /// `[runtime] max_duration_s` reached; the loop ends (exit 0).
    MaxDurationReached {
        /// Seconds `serve` ran.
        elapsed_s: f64,
        /// The limit.
        max_duration_s: u64,
        /// Rounds completed by this serve.
        rounds_completed: u64,
    },
    /// `[runtime] max_rounds_per_hour` reached: no round starts until the oldest of the
    /// last hour's rounds is an hour old.
    RateCeilingPaused {
        /// Rounds started in the last 60 minutes (by the record).
        rounds_last_hour: u64,
        /// The ceiling.
        max_rounds_per_hour: u64,
        /// Seconds until a round may start.
        resume_in_s: f64,
    },
    /// The rate-ceiling pause is over (or a stop ended it).
    RateCeilingResumed {
        /// Seconds paused.
        paused_for_s: f64,
        /// `elapsed`, `stop`, `stop_file` or `sighup`.
        reason: String,
    },
    /// A `[budget]` `total_*` cap is reached: no round starts, `serve` exits 80
    /// (docs/operations.md, "Budget").
    BudgetExhausted {
        /// The cap: `total_usd` or `total_tokens`.
        scope: String,
        /// Spent since the record began or its last `budget_reset` (US dollars or tokens).
        spent: f64,
        /// The cap's value.
        cap: f64,
    },
    /// A `[budget]` `daily_*` cap is reached: no round starts until the next day.
    BudgetPaused {
        /// The cap: `daily_usd` or `daily_tokens`.
        scope: String,
        /// Spent today (US dollars or tokens).
        spent: f64,
        /// The cap's value.
        cap: f64,
        /// When the next day starts (RFC 3339 UTC).
        until: String,
        /// The zone of the day.
        timezone: String,
    },
    /// The budget pause is over (or a stop ended it).
    BudgetResumed {
        /// Seconds paused.
        paused_for_s: f64,
        /// `next_day`, `reset` (`agent-runner budget reset`, or a cap raised or removed by a
        /// SIGHUP), `stop` or `stop_file`.
        reason: String,
    },
    /// A round cost more than `[budget] round_usd` (it ran to its end: the cap is looked
    /// at once its usage is recorded).
    BudgetRoundExceeded {
        /// The round.
        round_num: u64,
        /// What it cost, US dollars.
        cost_usd: f64,
        /// `round_usd`.
        cap: f64,
    },
    /// The OTLP collector did not take a round's trace (docs/operations.md "Traces"): told
    /// once when an outage begins, however many exports fail in it; rounds go on and the
    /// outage's spans are lost.
    TelemetryExportFailed {
        /// The URL spans are sent to.
        endpoint: String,
        /// Where it was read (`[telemetry] otlp_endpoint`, `the environment's <VAR>`).
        source: String,
        /// The first failure of the outage.
        error: String,
    },
    /// The collector took spans again after `telemetry_export_failed`.
    TelemetryExportRecovered {
        /// The URL spans are sent to.
        endpoint: String,
        /// Seconds from the outage's first failure to this look.
        failed_for_s: f64,
        /// Requests that failed in the outage.
        failed_exports: u64,
        /// Spans lost with them.
        spans_lost: u64,
    },
    /// A round's running spend, as its output watches reported it, reached what it may
    /// spend: its agent was stopped (`agent_exit.exit_cause = "budget"`; docs/operations.md,
    /// "Budget").
    BudgetRoundStopped {
        /// The round.
        round_num: u64,
        /// The cap reached: `round_usd`, `total_usd`, `daily_usd`, `total_tokens` or
        /// `daily_tokens`.
        scope: String,
        /// Spent against it (US dollars or tokens): the round's so far, plus what was spent
        /// before the round for a total or daily cap.
        spent: f64,
        /// The cap.
        cap: f64,
        /// The round's running cost, US dollars.
        round_usd: f64,
        /// The round's running tokens.
        round_tokens: u64,
        /// The model calls counted.
        calls: u64,
        /// The output watch whose report counted.
        hook: String,
    },
    /// An output watch fell more than `max_behind_bytes` behind the round log and skipped
    /// `skipped_bytes` of it (docs/protocol.md §5.10): calls in them were not counted
    /// while the round ran.
    OutputWatchSkipped {
        /// The round.
        round_num: u64,
        /// Bytes of the log no chunk carried.
        skipped_bytes: u64,
        /// How far behind a watch may fall.
        max_behind_bytes: u64,
    },
    /// A `[[notify.webhooks]]` entry was not told of an event (docs/operations.md,
    /// "Notifications"): its attempts failed, a full queue dropped it (the oldest goes), or
    /// the exit's flush ran out. Never holds the URL or any part of it.
    NotifyFailed {
        /// The entry: its `name`, else `notify.webhooks[<index>]`.
        webhook: String,
        /// The variable holding its URL (`url_env`); `null` for a literal `url`.
        url_env: Option<String>,
        /// The kind of the event it was to carry.
        event_kind: String,
        /// `failed` (every attempt failed, or one that retrying cannot mend), `queue_full`
        /// or `exit_flush`.
        reason: String,
        /// Attempts made (0: none was).
        attempts: u32,
        /// The last attempt's failure in words (`connection refused`, `HTTP 500`), never
        /// naming the URL.
        error: String,
    },
    /// `agent-runner budget reset`: `total_*` and the day's spend count from here.
    BudgetReset {
        /// US dollars spent before it, since the record began or the previous reset.
        spent_usd: f64,
        /// Tokens spent before it.
        spent_tokens: u64,
    },
    /// Every `[[goal.checks]]` entry passed after a round and `[goal] stop_when =
    /// "all_satisfied"`: the loop ends (exit 0).
    GoalReached {
        /// The round after which the checks passed.
        round_num: u64,
        /// The checks' names.
        checks: Vec<String>,
        /// Rounds completed by this serve.
        rounds_completed: u64,
    },
    /// One `[[goal.checks]]` entry ran after a round's agent exited (the reference
    /// system's fields, then `round_num`).
    GoalCheck {
        /// The check's name.
        name: String,
        /// It exited 0 within its timeout.
        satisfied: bool,
        /// The last finite number its stdout printed; `null` when none.
        value: Option<f64>,
        /// Its timeout ran out (its process group was ended).
        timed_out: bool,
        /// `true` under `dry_run`: not run.
        skipped: bool,
        /// Why it could not start; absent when it started.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The system calls the agent sandbox refused the check, by name (ours; absent
        /// when none).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        denied: Vec<String>,
        /// The kernel's OOM killer killed a process of the check in the round's cgroup
        /// (`round_max_mb`; ours; absent when not).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        oom_killed: bool,
        /// The round it ran after.
        round_num: u64,
    },
    /// A check's command file, or a file named in its arguments, differs from what it was
    /// before the run's first round (the agent can write there): the check does not count
    /// as satisfied (docs/security.md "Goal checks").
    GoalCheckTampered {
        /// The check's name.
        name: String,
        /// The files that changed (created, rewritten or removed).
        paths: Vec<PathBuf>,
        /// The round.
        round_num: u64,
    },
    /// The treadmill advisory was prepended to the `[goal]` ledger: the last rounds all
    /// changed the tree and no check moved.
    GoalAssessment {
        /// What was seen.
        observation: String,
        /// What the agent is asked.
        question: String,
        /// `low`, `medium` or `high`.
        confidence: String,
    },
    /// `[schedule]` does not allow the next round now; serve waits.
    SchedulePaused {
        /// The phase of the next round; `null` without `[phases]`.
        phase: Option<String>,
        /// When the schedule opens (UTC), as far as eight days ahead; else in an hour,
        /// when it is looked at again.
        until: String,
        /// The zone the windows are read in.
        timezone: String,
    },
    /// The wait after [`Event::SchedulePaused`] is over.
    ScheduleResumed {
        /// Seconds waited, to 0.1 s.
        paused_for_s: f64,
        /// `schedule` (it opened), `stop`, `stop_file` or `sighup` (the config was re-read;
        /// the schedule is looked at again).
        reason: String,
    },
    /// `phase_policy = "skip"`: the next round's phase is outside its schedule while
    /// another phase is open; its round number is passed over.
    SchedulePhaseSkipped {
        /// The round number passed over.
        round_num: u64,
        /// Its phase.
        phase: String,
        /// When that phase's schedule opens, if within eight days.
        until: Option<String>,
    },
    /// A spawn hook (`severity` `info`) or the host-health gate (`critical`: disk,
    /// memory or pressure) deferred the round; serve waits, then asks again.
    RoundDeferred {
        /// `info` for a hook, `critical` for host health.
        severity: String,
        /// The hook that deferred, or the reading: `disk`, `psi`, `combined_low`.
        signal: String,
        /// Its reason (redacted, capped).
        message: String,
        /// Seconds it asked to wait (host health: until the next check).
        defer_s: u64,
    },
    /// The wait after [`Event::RoundDeferred`] is over.
    RoundResumed {
        /// Seconds waited, to 0.1 s.
        deferred_for_s: f64,
    },
    /// One critical host-health sample during a round (`[monitor.host_health]`), emitted
    /// for the first `2 × critical_consecutive_samples` samples of a streak.
    RoundMemCriticalSample {
        /// The round.
        round_num: u64,
        /// Critical samples in a row so far.
        consecutive: u32,
        /// The readings (`psi_some_avg10`, `psi_full_avg10`, `mem_available_mb`, …).
        context: serde_json::Value,
    },
    /// Sustained critical pressure ended the round (`pressure.in_round_terminate`), or
    /// the first critical sample nudged the agent (`pressure.in_round_nudge`).
    RoundMemTerminated {
        /// The agent's process (group leader).
        pid: u32,
        /// Always `critical`.
        severity: String,
        /// Which reading: `psi` or `combined_low`.
        signal: String,
        /// The reading, in words.
        message: String,
        /// Critical samples in a row that ended it.
        consecutive: u32,
        /// The readings.
        context: serde_json::Value,
        /// `terminate` (the round was ended) or `nudge` (the agent was sent its
        /// cooperative stop signal once; the round goes on), the reference system's field.
        tier: String,
    },
    /// The soft brake engaged: `memory.high` (v2) or `memory.soft_limit_in_bytes` (v1) of
    /// the supervisor's delegated cgroup was set under in-round memory pressure
    /// (`[monitor.host_health.brake]`, docs/operations.md "The memory brake").
    MemoryHighEngaged {
        /// The round.
        round_num: u64,
        /// The file's value before (`max` when unset on v2), restored on release.
        previous: String,
        /// The bytes written.
        written: u64,
        /// The cgroup's use when engaged, bytes.
        memory_current: u64,
        /// How long the write took, milliseconds.
        write_ms: u64,
        /// The reading that engaged it: `psi` or `combined_low`.
        signal: String,
        /// The readings.
        context: serde_json::Value,
        /// The cgroup file written (ours).
        file: PathBuf,
    },
    /// The soft brake was restored to its value before.
    MemoryHighReleased {
        /// The round.
        round_num: u64,
        /// `recovered` (healthy samples in a row) or `round_end`.
        reason: String,
    },
    /// Writing the soft brake (engaging or restoring) failed; it stays off for the round.
    MemoryHighWriteFailed {
        /// The round.
        round_num: u64,
        /// The OS error number, when there was one.
        errno: Option<i32>,
    },
    /// What a round's own cgroup measured (the supervisor's cgroup is delegated,
    /// docs/operations.md "Round cgroups"); after `agent_exit`.
    RoundCgroupMemory {
        /// The round.
        round_num: u64,
        /// `v1` (the memory controller's own hierarchy) or `v2` (unified).
        layout: String,
        /// The round's cgroup directory (removed after the round).
        cgroup: String,
        /// Most memory the round's processes used at once, in bytes (`memory.peak` on v2,
        /// `memory.max_usage_in_bytes` on v1); `null` when the kernel does not keep it.
        peak_bytes: Option<u64>,
        /// The brake set (`memory.round_high_mb`), in bytes; `null`: none.
        high_bytes: Option<u64>,
        /// The hard limit set (`memory.round_max_mb`), in bytes; `null`: none.
        max_bytes: Option<u64>,
    },
    /// The kernel's OOM killer ended a process of the round inside its cgroup; after
    /// `agent_exit`, before `round_cgroup_memory`.
    RoundOomKilled {
        /// The round.
        round_num: u64,
        /// The agent's command (`argv[0]`) whose round it was.
        agent: String,
        /// The agent process itself ended by SIGKILL (the OOM killer's signal); `false`
        /// when the killed process was one of its children.
        agent_killed: bool,
        /// OOM kills counted in the round's cgroup (`oom_kill` of `memory.events` on v2,
        /// of `memory.oom_control` on v1).
        oom_kills: u64,
        /// The hard limit, in bytes; `null` when the host itself ran out of memory.
        max_bytes: Option<u64>,
    },
    /// The round's agent runs confined by us, so its CLI's own sandbox was taken out of its
    /// command and the CLI's bypass put in (codex: `--sandbox workspace-write` →
    /// `--dangerously-bypass-approvals-and-sandbox`); before `agent_spawn`, each such
    /// round (docs/security.md, "A CLI's own sandbox under ours").
    AgentOwnSandboxReplaced {
        /// The round.
        round_num: u64,
        /// The CLI (`command[0]`'s file name).
        cli: String,
        /// The words taken out of the command (empty: the CLI's default sandbox).
        removed: Vec<String>,
        /// The words put in.
        added: Vec<String>,
        /// Why, in words.
        reason: String,
    },
    /// The agent's sandbox refused something in the round, counted per distinct denial;
    /// after `agent_exit`, most frequent first, at most
    /// `crate::runtime::agent::sandbox_denials::MAX_EVENTS_PER_ROUND` per round
    /// (docs/security.md, "Denials told, not silent").
    AgentSandboxDenied {
        /// The round.
        round_num: u64,
        /// The layer that refused: `seccomp` (the agent's deny-list; refused connects are
        /// `agent_egress_refused`), `landlock` (a write, or a read of a credential store),
        /// `protected_paths` (a symbolic link at or on the way to a protected path,
        /// covered for the round, never followed).
        layer: String,
        /// What was refused: the system call's name (`ptrace`); the path.
        target: String,
        /// How: `syscall`; the call that wrote, `read`; `link`.
        access: String,
        /// How many times in the round.
        count: u64,
        /// On the round's last such event when the cap was reached: the distinct denials
        /// left out; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dropped_kinds: Option<u64>,
        /// With `dropped_kinds`: how many denials they were in all; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dropped_count: Option<u64>,
    },

    /// A TCP connect of the agent its sandbox refused, once per distinct refusal per round
    /// with its count, after `agent_exit`, most frequent first, at most
    /// `crate::runtime::egress::refusals::MAX_EVENTS_PER_ROUND` per round (docs/security.md,
    /// "Refusals told, with their fix").
    AgentEgressRefused {
        /// The round.
        round_num: u64,
        /// The layer that refused: `proxy` (the egress proxy: `allow_hosts`, or without it
        /// the agent's own network namespace), `landlock` (the TCP connect rule,
        /// `connect_ports`) or `namespace` (a direct connect out of the agent's own network
        /// namespace, which routes nothing: `reason` `no_route`).
        layer: String,
        /// The host name the agent asked for (absent when it asked for an address).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
        /// The address: the one asked for, or the closed address a listed name resolved
        /// to (absent for a name refused before it was resolved).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        address: Option<String>,
        /// The TCP port.
        port: u16,
        /// `connect` (a TCP connect, a `CONNECT` tunnel) or `http` (a plain-HTTP request).
        access: String,
        /// `not_listed`, `port_not_allowed`, `no_route`, or the class of the closed address (one a name
        /// resolved to, or without `allow_hosts` one asked for): `loopback`,
        /// `this_machine`, `link_local`, `multicast`, `unspecified`, `cloud_metadata`,
        /// `private`.
        reason: String,
        /// The config key that opens it: `agent.sandbox.allow_hosts`,
        /// `agent.sandbox.connect_ports` or `agent.sandbox.host_network`.
        key: String,
        /// The sentence told everywhere ("egress to 127.0.0.1:4010 refused by the agent
        /// sandbox: add 4010 to [agent.sandbox] connect_ports").
        message: String,
        /// How many times in the round.
        count: u64,
    },

    // ---- upgrade (docs/operations.md, "upgrade") ----
    /// `upgrade` swapped in a new binary and the restarted `serve` came up on it.
    ServiceUpgraded {
        /// The version that ran before.
        from_version: String,
        /// The new binary's version (`--version`).
        to_version: String,
        /// Seconds from the start of `upgrade` to the new `serve` being up.
        duration_s: f64,
        /// The binary replaced.
        binary: PathBuf,
        /// The new `serve`.
        pid: Option<u32>,
    },
    /// `upgrade` swapped in a new binary without restarting (`--no-restart`, or nothing
    /// ran): the service runs it from its next start (the reference's kind for an
    /// upgrade that left the service alone).
    PackageUpgraded {
        /// The version that ran before.
        from_version: String,
        /// The new binary's version.
        to_version: String,
        /// Always `true`: the restart is the operator's.
        restart_deferred: bool,
        /// The binary replaced.
        binary: PathBuf,
    },
    /// The new binary did not come up; the old one was put back and `serve` runs it again.
    ServiceUpgradeRolledBack {
        /// The new binary's version.
        attempted_version: String,
        /// The version running again.
        restored_version: String,
        /// Why the new one was not up, first 200 characters.
        failure_reason: String,
        /// Seconds from the start of `upgrade` to the old `serve` being up again.
        duration_s: f64,
        /// The binary replaced and restored.
        binary: PathBuf,
        /// The `serve` running the old binary again.
        pid: Option<u32>,
    },
    /// The new binary did not come up and the rollback did not bring `serve` up either:
    /// nothing runs.
    ServiceUpgradeRollbackFailed {
        /// The new binary's version.
        attempted_version: String,
        /// The version the rollback meant to run.
        restore_target_version: String,
        /// Both failures, first 200 characters.
        failure_reason: String,
        /// The binary.
        binary: PathBuf,
    },

    // ---- monitor ----
    /// A `monitor` began watching this project.
    MonitorStarted {
        /// `anomaly`, `narrate`, `events` or `http`.
        mode: String,
        /// The monitor's process.
        pid: u32,
    },
    /// A detector raised an alert.
    MonitorAlertEmitted {
        /// The detector (`disk_critical`, `supervisor_stale`, …).
        detector: String,
        /// `warning` or `critical`.
        severity: String,
        /// What it saw, in words.
        message: String,
        /// `stop_service` or `none`.
        auto_action: String,
        /// What the detector measured, as numbers (`disk_growth`); absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<DiskGrowth>,
    },
    /// An alert's detector is in `auto_stop_on`; the supervisor was asked to stop.
    MonitorAutoStopTriggered {
        /// The detector.
        detector: String,
    },
    /// The stop asked for by an alert did not take.
    MonitorAutoStopFailed {
        /// The detector.
        detector: String,
        /// Why, in words.
        error: String,
    },
    /// The `monitor --host` ssh link dropped; the relay reconnects with `--since`.
    MonitorRemoteBlip {
        /// The ssh alias.
        host: String,
        /// ssh's exit code (`null` when killed by a signal).
        returncode: Option<i32>,
        /// The end of ssh's stderr.
        error: String,
        /// Reconnect attempt number (1 = the first reconnect).
        attempt: u32,
    },
    /// The relay gave up after `remote_failure_tolerance_s` without a working link.
    MonitorRemoteGiveup {
        /// The ssh alias.
        host: String,
        /// ssh's last exit code.
        returncode: Option<i32>,
        /// Connection attempts made.
        total_attempts: u32,
        /// Seconds since the link was last up.
        total_elapsed_s: f64,
    },
    /// A round failed before or around the agent (e.g. the agent cannot be started).
    RoundError {
        /// The error, in words.
        error: String,
    },
    /// `serve` re-read a changed config file and runs the next rounds with it
    /// (docs/configuration.md, "Config follows the file").
    ConfigReloaded {
        /// The config file.
        path: PathBuf,
        /// `sha256:<hex>` of the file's bytes now.
        digest: String,
        /// The same of the bytes read before (empty when they could not be read).
        previous_digest: String,
        /// `round` (the check before every round) or `sighup`.
        trigger: String,
        /// Hosts admitted anew (new, or their entry or pin changed).
        hosts_restarted: Vec<String>,
        /// Hosts shut down (removed or disabled).
        hosts_stopped: Vec<String>,
    },
    /// A changed config file cannot be used; the last good config keeps running.
    ConfigBroken {
        /// The config file.
        path: PathBuf,
        /// The one-line config error naming file and key.
        error: String,
        /// `sha256:<hex>` of the broken bytes; `null` when the file could not be read.
        digest: Option<String>,
        /// `round` or `sighup`.
        trigger: String,
    },
    /// A changed config file the agent could have written (it reaches into the work tree
    /// and changed while the agent ran): not applied; the last good config keeps running
    /// (docs/security.md, "The supervisor is not the agent's deputy").
    ConfigUntrusted {
        /// The config file.
        path: PathBuf,
        /// What changed while the agent ran, and what to do.
        reason: String,
        /// `sha256:<hex>` of the untrusted bytes.
        digest: String,
        /// `round` or `sighup`.
        trigger: String,
    },
    /// A record an earlier layout left in `log_dir` was moved into the state dir
    /// (docs/operations.md, "State dir").
    StateMigrated {
        /// The old place (`log_dir`).
        from: PathBuf,
        /// The state dir.
        to: PathBuf,
        /// The file names moved.
        files: Vec<String>,
    },
    /// `state.json` was behind the round logs (the state dir was lost); the counter was
    /// raised so no round number is reused.
    RoundStateRecovered {
        /// What `state.json` said (0: missing).
        last_round_was: u64,
        /// The last round number now recorded.
        last_round: u64,
        /// Where the number came from (`round logs`).
        source: String,
        /// The counter file.
        state_file: PathBuf,
    },

    // ---- one round ----
    /// A round begins.
    RoundStart {
        /// Its number.
        round_num: u64,
        /// Its phase; `null` without `[phases]`.
        phase: Option<String>,
        /// sha256 hex of what the round runs with (`crate::runtime::cycle::config_digest`); a
        /// label only. Absent in records written before it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        config_digest: Option<String>,
        /// `config_digest` differs from the last `round_start`'s.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        config_changed: Option<bool>,
        /// When changed: the prompt files (absolute paths).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        config_prompt_files: Option<Vec<String>>,
        /// When changed: the `[[goal.checks]]` names.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        config_check_names: Option<Vec<String>>,
        /// When changed: `[vcs] dirty_action`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        config_vcs_dirty_action: Option<String>,
        /// When changed: `[agent] prompt_delivery`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        config_prompt_delivery: Option<String>,
    },
    /// This round is a fresh-eyes round (`[runtime] fresh_eyes_every_n`); the agent gets
    /// `AGENT_RUNNER_FRESH_EYES=1`.
    FreshEyesRoundTriggered {
        /// The round.
        round_num: u64,
        /// The setting.
        every_n: u64,
    },
    /// This round goes on with its phase's agent session (session resume,
    /// docs/agent-clis.md): the same `session_id` as the phase's previous round.
    SessionResumed {
        /// The session id `serve` minted for the phase.
        session_id: String,
        /// The phase; left out without phases (the reference system's shape).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<String>,
        /// The round.
        round_num: u64,
    },
    /// This round starts its phase's agent session afresh because the one before reached a
    /// bound (`[agent] session_max_rounds`, `session_max_tokens`, `session_max_hours`;
    /// docs/agent-clis.md, "Session resume"): every resumed round re-sends the whole
    /// history.
    SessionRenewed {
        /// The new session's id (minted by `serve`; for a CLI that goes on with its last
        /// session, codex, aider and pi, the id `serve` keeps for it).
        session_id: String,
        /// The session that ended.
        old_session_id: String,
        /// The bound it reached: `max_rounds`, `max_tokens` or `max_hours`.
        reason: String,
        /// Rounds the old session ran.
        rounds: u64,
        /// Tokens its rounds used (each round's own, input, output, cache read and write).
        tokens: u64,
        /// Its age, in seconds.
        age_s: u64,
        /// The phase; left out without phases.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<String>,
        /// The round that starts the new session.
        round_num: u64,
    },
    /// A scan made before the agent's spawn stopped at its cap, once per scan and round
    /// (docs/security.md, "Denials told, not silent" and "Protected paths").
    AgentScanTruncated {
        /// The round.
        round_num: u64,
        /// Which scan: `withheld_files` (the credential stores walked for the observer:
        /// a read past the cap is still refused by Landlock but not recorded as
        /// `agent_sandbox_denied`) or `protected_copies` (the tree scanned for deeper
        /// protected copies: one past the cap stays writable to the agent).
        scan: String,
        /// The cap, in entries.
        limit: u64,
    },
    /// After the round, the agent's shadow home (`<state_dir>/agent-home/<cli>`) was
    /// pruned of transcripts of sessions no round resumes and of spools nothing reads
    /// (docs/operations.md, "The agent's CLI state on disk"); recorded when something was
    /// removed or a link the agent planted was refused.
    AgentHomePruned {
        /// The round.
        round_num: u64,
        /// The agent's CLI.
        cli: String,
        /// Entries removed.
        removed: u64,
        /// Bytes of the regular files among them (a directory's content is not counted).
        bytes: u64,
        /// Links met where a directory is walked (relative to the shadow's root): refused,
        /// never followed (at most 20 named).
        refused: Vec<String>,
    },
    /// What the round starts from (`[runtime] substrate_fingerprint_paths`).
    RoundSubstrateBefore {
        /// The round.
        round_num: u64,
        /// `HEAD`'s SHA; `null` before the first commit.
        git_head: Option<String>,
        /// The sha256 of the matching files, 64 hex digits; `null` when none matches.
        paths_hash: Option<String>,
    },
    /// What the round left (after the agent exited), as [`Event::RoundSubstrateBefore`].
    RoundSubstrateAfter {
        /// The round.
        round_num: u64,
        /// `HEAD`'s SHA.
        git_head: Option<String>,
        /// The sha256 of the matching files, 64 hex digits.
        paths_hash: Option<String>,
    },
    /// A heartbeat of a running round, every `[monitor] round_progress_interval_s`
    /// (the reference system's kind): tells an agent at work from a stuck one.
    RoundProgress {
        /// The round.
        round_num: u64,
        /// Bytes in the round log so far, in KiB (rounded to 0.01).
        log_size_kb: f64,
        /// Seconds since the round log last grew (its modification time; rounded to 0.1).
        last_write_age_s: f64,
        /// Seconds since the round's agent started (rounded to 0.1).
        wall_age_s: f64,
    },
    /// The agent printed its result (`terminal_marker`) and lingered past
    /// `max_grace_after_result_s`, but children of it still run: it is left to its budget.
    RoundGraceExtended {
        /// The round.
        round_num: u64,
        /// The grace, seconds.
        grace_s: u64,
        /// The children that keep it alive (capped): `{name, pid}`.
        live_children: Vec<GraceChild>,
        /// Children ignored by `grace_kill_ignore_patterns` (capped): `{name, pid,
        /// matched}`.
        ignored_children: Vec<GraceChild>,
    },
    /// The agent printed its result and lingered past `max_grace_after_result_s` with no
    /// child at work: its process group was ended (`exit_cause` `grace_kill`).
    RoundGraceKill {
        /// The round.
        round_num: u64,
        /// The grace, seconds.
        grace_s: u64,
    },
    /// The agent's CLI printed that it is stuck waiting (`words`, `times` times: codex's
    /// `waiting for network`), so its process group was ended with its stop signal before
    /// the budget ran out (docs/detectors.md, "Stalls").
    AgentStalled {
        /// The round.
        round_num: u64,
        /// The CLI.
        cli: String,
        /// What it printed.
        words: String,
        /// How many times, when the round was ended.
        times: u64,
    },
    /// The agent ran out of its round budget and its process group was ended (right after
    /// its `agent_exit`, whose `exit_cause` is `timeout`).
    RoundTimeoutKill {
        /// The round.
        round_num: u64,
        /// `exceeded round_budget_s=<budget>`.
        reason: String,
    },
    /// The agent process was started.
    AgentSpawn {
        /// The round.
        round_num: u64,
        /// Its time budget in seconds.
        timeout_s: u64,
        /// The round log.
        log_path: PathBuf,
    },
    /// The agent could not be started.
    AgentSpawnFailed {
        /// The round.
        round_num: u64,
        /// Why.
        error: String,
    },
    /// The agent process ended.
    AgentExit {
        /// The round.
        round_num: u64,
        /// Its exit code; `null` when a signal ended it.
        exit_code: Option<i32>,
        /// The signal that ended it, if any.
        signal: Option<i32>,
        /// Wall time from spawn to reap, seconds to 1 ms.
        duration_s: f64,
        /// Whether a timer ended it: the budget ran out, or the result grace
        /// (`grace_kill`), as the reference system reports it.
        timed_out: bool,
        /// `exited`, `timeout`, `stopped`, … (`runtime::agent::process::ExitCause`).
        exit_cause: String,
    },
    /// `git status` failed after the agent exited.
    DirtyCheckFailed {
        /// The round.
        round_num: u64,
        /// Why.
        error: String,
    },
    /// After the agent ran, the repository the supervisor's git is pinned to changed kind
    /// or place since boot (docs/security.md, "The supervisor is not the agent's deputy"):
    /// its git makes no stash and no commit and leaves the tree alone.
    GitRepositoryChanged {
        /// The round.
        round_num: u64,
        /// What changed: each path and what it was and is.
        changed: String,
        /// What the round planted and the supervisor set aside (a new `commondir`, a
        /// symbolic link where git writes): `<path> set aside as <new path>`, or why it
        /// could not be.
        set_aside: Vec<String>,
    },
    /// After the agent ran, a key of the repository's config that runs a program, moves
    /// the work tree or includes another file (the reviewed list) was added or changed by
    /// the round and is reverted: restored to its values before, or removed
    /// (docs/security.md, "What runs later: the watched tier"). One event per key.
    GitConfigReverted {
        /// The round.
        round_num: u64,
        /// The key as `git config --list` prints it (`core.fsmonitor`); empty when the
        /// whole file could not be read (`error` says why).
        key: String,
        /// `local` or `worktree` (a file an include names: its includer's).
        scope: String,
        /// The file it was set in.
        file: PathBuf,
        /// The round's value, secrets redacted, cut at 80 characters; `null` for a key
        /// written without one.
        value: Option<String>,
        /// `removed` (none before), `restored` (the values before are back), `set_aside`
        /// (the file could not be read: moved aside, the file before the round put back) or
        /// `unread`.
        action: String,
        /// What the key runs or moves (the reviewed list's why).
        why: String,
        /// Why it could not be reverted (it stays as the round left it); `null` when it
        /// was.
        error: Option<String>,
        /// On the last event when the round changed more watched keys than are told one
        /// by one (20): how many more were reverted without an event; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        more_keys: Option<usize>,
    },
    /// The round changed files of the exec surface (CI pipelines, editor and tool configs
    /// that run programs: the reviewed list), in the tree or in commits the agent made
    /// (docs/security.md, "What runs later: the watched tier").
    ExecSurfaceChanged {
        /// The round.
        round_num: u64,
        /// The paths, work-dir-relative (the first 20).
        paths: Vec<String>,
        /// How many paths.
        path_count: usize,
        /// Whether the supervisor's commit takes them (`[vcs] commit_exec_surface`); when
        /// `false` a commit leaves them in the tree for the operator.
        committed: bool,
        /// What to do.
        what_to_do: String,
    },
    /// Index entries whose `assume-unchanged` or `skip-worktree` flag hid a file from
    /// `git status` had the flag cleared, or the index itself was set aside (docs/security.md, "What
    /// hides a change"): an exec-surface file's whoever set it (before the agent runs), any
    /// file's the round set (after it). The supervisor's look at the tree and the
    /// operator's next `git status` see the file again.
    GitIndexFlagsCleared {
        /// The round.
        round_num: u64,
        /// The paths, work-dir-relative (the first 20).
        paths: Vec<String>,
        /// How many paths.
        path_count: usize,
        /// An index git and the supervisor read other entries in, set aside and read
        /// again from `HEAD`: `<index> set aside as <path> …`; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        index_set_aside: Option<String>,
    },
    /// A round ends.
    RoundEnd(RoundEnd),
    /// The agent wrote more than `round_log_max_bytes`; the rest of its output was
    /// discarded after a marker line in the log.
    RoundLogCapped {
        /// The round.
        round_num: u64,
        /// The round log.
        log_path: PathBuf,
        /// `[runtime] round_log_max_bytes`.
        cap_bytes: u64,
        /// Output bytes not written to the log.
        discarded_bytes: u64,
    },
    /// `round_log_retention` deleted old round logs.
    RoundLogsPruned {
        /// `<log_dir>/rounds`.
        directory: PathBuf,
        /// `round_log_retention`.
        keep: u64,
        /// How many were deleted.
        deleted: usize,
        /// Their file names.
        files: Vec<String>,
    },

    // ---- spawn hooks ----
    /// A spawn hook not in `spawn_override_allow` answered defer or skip; ignored.
    PluginSpawnOverrideIgnored {
        /// The hook.
        hook: String,
        /// What it answered.
        action: String,
        /// The round.
        round_num: u64,
        /// Why it was ignored.
        reason: String,
    },
    /// A spawn hook's decision.
    PluginSpawnDecision {
        /// The hook.
        hook: String,
        /// `proceed`, `defer` or `skip`.
        action: String,
        /// Seconds to wait (0 unless deferring).
        defer_s: u64,
        /// Its reason (redacted, capped).
        reason: String,
        /// The round.
        round_num: u64,
    },

    // ---- post-round hooks (docs/detectors.md) ----
    /// The combined verdict of the post-round hooks, unless it is plain continue.
    PluginPostRoundDecision {
        /// The round.
        round_num: u64,
        /// The hook whose verdict won.
        hook: String,
        /// `back_off` or `stop`.
        action: String,
        /// The diagnosis (`usage_limit`, `rate_limit`, `overloaded`, `network`, `auth`,
        /// `other`).
        kind: String,
        /// The hook's message (redacted, capped).
        message: String,
        /// Seconds asked for (`back_off` in seconds); `null` otherwise.
        back_off_s: Option<u64>,
        /// The instant asked for (`back_off` until a reset time); `null` otherwise.
        until: Option<String>,
    },
    /// A post-round hook's `stop` that `[monitor] auto_stop_on` does not allow; ignored.
    PluginPostRoundOverrideIgnored {
        /// The hook.
        hook: String,
        /// Always `stop`.
        action: String,
        /// Its diagnosis.
        kind: String,
        /// The round.
        round_num: u64,
        /// Why it was ignored.
        reason: String,
    },
    /// A post-round hook read the agent's token usage for the round.
    AgentUsageRecorded {
        /// The round.
        round_num: u64,
        /// The hook that read it.
        hook: String,
        /// Input tokens not read from the provider's cache.
        input_tokens: u64,
        /// Output tokens.
        output_tokens: u64,
        /// Input tokens read from the provider's cache, when reported.
        cache_read_tokens: Option<u64>,
        /// Input tokens written to the provider's cache, when reported.
        cache_write_tokens: Option<u64>,
        /// The cost the CLI reported, US dollars.
        cost_usd: Option<f64>,
        /// The agent CLI: the basename of the round's `command[0]` (the reference
        /// system's field, docs/reference-system.md "Events").
        agent: String,
        /// The model that did the work as the CLI names it, `unknown` when it names none
        /// (the reference system's field).
        model: String,
        /// Input tokens read from the provider's cache, 0 when not reported (the
        /// reference system's field; `cache_read_tokens` is ours, null when not reported).
        cached_tokens: u64,
        /// What the counts and cost cover: always `round`, the round's own (a CLI's
        /// session totals are turned into it: docs/detectors.md "Usage"). Lines written
        /// before it existed read as empty.
        #[serde(default)]
        usage_scope: String,
        /// The fields the CLI reported as its session's running total, recorded as the
        /// difference from the session's previous round (empty: reported per round).
        #[serde(default)]
        from_session_totals: Vec<String>,
        /// Where the counts and cost come from (docs/operations.md, "Where spend comes
        /// from"): `broker`, the provider's own usage in the answers the key broker relayed,
        /// priced by the price table (`cost_usd` is that price); `cli`, the CLI's report
        /// (its cost, else its tokens priced by the ledger). Lines written before it existed
        /// read as empty (the CLI's).
        #[serde(default)]
        source: String,
        /// With `source` `broker`: the cost the CLI itself reported for the round, kept for
        /// comparison, never counted; `null` when it reported none.
        #[serde(default)]
        reported_cost_usd: Option<f64>,
        /// With `source` `broker`: the tokens (all kinds) the CLI itself reported; `null`
        /// when it reported none.
        #[serde(default)]
        reported_tokens: Option<u64>,
        /// The CLI reported less than the provider billed, by more than 5 % and $0.0001
        /// (its cost; its tokens when it reported no cost): a report the broker's figure
        /// overrode.
        #[serde(default)]
        underreported: bool,
    },
    /// A post-round hook diagnosed a missing or expired login.
    AgentAuthErrorDetected {
        /// The round.
        round_num: u64,
        /// The hook.
        hook: String,
        /// Its message (redacted, capped).
        message: String,
        /// `[monitor] auth_fail_hint`.
        hint: Option<String>,
        /// Whether serve stops on it (`auto_stop_on`).
        auto_stop: bool,
    },
    /// A post-round hook diagnosed a transient failure (usage or rate limit, overload,
    /// network); what serve does is `action` (`[runtime] transient_error_action`).
    TransientErrorDetected {
        /// The round.
        round_num: u64,
        /// The diagnosis.
        kind: String,
        /// The hook.
        hook: String,
        /// Its message (redacted, capped).
        message: String,
        /// The printed reset time, when there was one.
        reset_at: Option<String>,
        /// Diagnosed rounds in a row, this one included.
        consecutive: u32,
        /// `back_off`, `skip` or `stop`.
        action: String,
        /// Seconds serve waits (`back_off` only).
        back_off_s: Option<u64>,
        /// When the wait ends (`back_off` only).
        until: Option<String>,
    },
    /// A cap shortened a back-off.
    TransientErrorBackoffCapped {
        /// The round.
        round_num: u64,
        /// The diagnosis.
        kind: String,
        /// What the rules asked for, seconds.
        requested_s: u64,
        /// What is waited, seconds.
        applied_s: u64,
        /// The cap, seconds.
        cap_s: u64,
        /// Diagnosed rounds in a row.
        consecutive: u32,
    },
    /// The first clean round after diagnosed transient failures.
    TransientErrorRecovered {
        /// The clean round.
        round_num: u64,
        /// The last diagnosis of the episode.
        kind: String,
        /// Diagnosed rounds in the episode.
        consecutive: u32,
        /// Seconds from the episode's first diagnosis to now.
        episode_s: u64,
    },
    /// A post-round hook diagnosed a network failure.
    AgentNetworkBlip {
        /// The round.
        round_num: u64,
        /// The hook.
        hook: String,
        /// Its message (redacted, capped).
        message: String,
        /// Diagnosed rounds in a row.
        consecutive: u32,
    },

    // ---- dirty tree ----
    /// The tree was dirty before the agent started: the operator's work, left alone unless
    /// the round changes it (docs/configuration.md, "Dirt attribution").
    DirtyBeforeRound {
        /// The round.
        round_num: u64,
        /// The first dirty paths (capped), work-dir-relative.
        files: Vec<String>,
        /// How many paths were dirty.
        file_count: usize,
        /// What this means for them, in words.
        reason: String,
    },
    /// The round left the tree dirty after a clean agent exit.
    DirtyDetected {
        /// The round.
        round_num: u64,
        /// The first of the round's dirty paths (capped), work-dir-relative.
        files: Vec<String>,
        /// How many paths the round left dirty.
        file_count: usize,
        /// Of `files`, those already dirty before the round and changed by it (capped);
        /// empty in lines written before attribution.
        #[serde(default)]
        changed_preexisting: Vec<String>,
        /// Paths dirty before the round and unchanged, left alone.
        #[serde(default)]
        left_to_operator: usize,
        /// The branch `HEAD` was on after the agent (`git symbolic-ref --short HEAD`), so a
        /// round whose agent switched branches says where its work is; `null` when `HEAD`
        /// is detached, outside git, or in lines written before it was recorded.
        #[serde(default)]
        branch: Option<String>,
    },
    /// The deciding handler answered ignore.
    DirtyIgnored {
        /// The round.
        round_num: u64,
        /// The handler (a host's hook or the built-in).
        hook: String,
    },
    /// The supervisor committed for a handler.
    DirtyAutoCommitted {
        /// The round.
        round_num: u64,
        /// The handler.
        hook: String,
        /// The new commit.
        sha: String,
        /// The committed paths (capped).
        files: Vec<String>,
        /// The commit message's first line (redacted, capped).
        subject: String,
        /// The branch `HEAD` was on after the agent, where the commit was made (`git symbolic-ref --short HEAD`), so a
        /// round whose agent switched branches says where its work is; `null` when `HEAD`
        /// is detached, outside git, or in lines written before it was recorded.
        #[serde(default)]
        branch: Option<String>,
    },
    /// A submodule or a repository nested in the work tree had changes inside it after
    /// the round: this repository's git can neither stash nor commit them, so they were
    /// left as they are, attributed to nobody (docs/operations.md, "Submodules").
    DirtySubmoduleSkipped {
        /// The round.
        round_num: u64,
        /// The submodule's path, work-dir-relative.
        path: String,
        /// Why it was not stashed or committed, in words.
        reason: String,
        /// What the operator can do about it.
        what_to_do: String,
    },
    /// The supervisor committed on a detached HEAD: no branch holds the commit, and
    /// checking out anything else leaves it to `git gc` (docs/operations.md, "Leaving it
    /// unattended").
    DirtyCommitDetachedHead {
        /// The round.
        round_num: u64,
        /// The handler.
        hook: String,
        /// The commit no branch holds.
        sha: String,
        /// How to keep it.
        what_to_do: String,
    },
    /// The supervisor's commit skipped the repository's commit hooks (its git never runs
    /// them: docs/security.md, "The supervisor's git"): a `pre-commit` that refuses
    /// secrets, a husky hook, did not look at it.
    DirtyCommitHooksSkipped {
        /// The round.
        round_num: u64,
        /// The handler.
        hook: String,
        /// The commit.
        sha: String,
        /// Where the hooks are (`core.hooksPath`, or the git dir's `hooks`).
        hooks_dir: PathBuf,
        /// The commit hooks found there (`pre-commit`, `prepare-commit-msg`,
        /// `commit-msg`, `post-commit`), executable.
        hooks: Vec<String>,
    },
    /// The commit failed.
    DirtyCommitFailed {
        /// The round.
        round_num: u64,
        /// The handler.
        hook: String,
        /// git's error (redacted, capped).
        error: String,
        /// What the failure left (`left as it was`, or where to look).
        tree: String,
    },
    /// A stash was made recently (`stash_idempotency_s`); none made now.
    OrphanIdempotentSkip {
        /// The round.
        round_num: u64,
        /// The handler.
        hook: String,
        /// The recent stash.
        #[serde(rename = "ref")]
        stash_ref: String,
        /// How long ago, in words.
        reason: String,
    },
    /// Paths the round left dirty whose `filter` attribute names a driver set only in the
    /// repository's own config, which the supervisor's git does not run (the agent could
    /// have written it): they are neither committed nor stashed (their content would be
    /// stored raw, unfiltered) and stay in the tree (docs/operations.md, "Filters").
    DirtyFilterNotRun {
        /// The round.
        round_num: u64,
        /// The filter driver (`lfs`).
        filter: String,
        /// The first of the paths (capped).
        files: Vec<String>,
        /// How many paths.
        file_count: usize,
        /// What to do.
        what_to_do: String,
    },
    /// A stash the supervisor made is gone from the repository's stash list (the agent's
    /// git dropped or cleared it), found after a round; reported once
    /// (docs/operations.md, "Stashes").
    OrphanStashDropped {
        /// The round after which it was found missing.
        round_num: u64,
        /// The stash commit.
        #[serde(rename = "ref")]
        stash_ref: String,
        /// The round whose work it holds.
        stashed_round: u64,
        /// Its message (`ORPHAN R<N> ts=<ts>`).
        message: String,
        /// How many paths it took.
        file_count: usize,
        /// The first of them (capped).
        files: Vec<String>,
        /// Whether git still has the commit (until `git gc` prunes it).
        recoverable: bool,
        /// How to get the work back.
        what_to_do: String,
    },
    /// The supervisor stashed the dirty tree for a handler.
    OrphanStashed {
        /// The round.
        round_num: u64,
        /// The handler.
        hook: String,
        /// The stash commit.
        #[serde(rename = "ref")]
        stash_ref: String,
        /// The stash message (`ORPHAN R<N> ts=<ts>`).
        message: String,
        /// The handler's note, or why the built-in stashed.
        reason: String,
        /// The branch `HEAD` was on after the agent (`git symbolic-ref --short HEAD`), so a
        /// round whose agent switched branches says where its work is; `null` when `HEAD`
        /// is detached, outside git, or in lines written before it was recorded.
        #[serde(default)]
        branch: Option<String>,
    },
    /// The repository is in the middle of a git operation (a rebase, merge, cherry-pick or
    /// revert stopped on a conflict, a bisect): the round's dirty files are left untouched,
    /// no handler is asked (`crate::runtime::git::operation`).
    GitOperationInProgress {
        /// The round.
        round_num: u64,
        /// `rebase`, `am`, `merge`, `cherry-pick`, `revert` or `bisect`.
        operation: String,
        /// The marker in the git dir that shows it (`.git/rebase-merge`, `.git/MERGE_HEAD`…).
        marker: PathBuf,
        /// How many dirty files were left untouched.
        file_count: usize,
        /// What the operator does to end it.
        what_to_do: String,
    },
    /// The stash failed.
    OrphanStashFailed {
        /// The round.
        round_num: u64,
        /// The handler.
        hook: String,
        /// git's error (redacted, capped).
        error: String,
        /// What the failure left.
        tree: String,
        /// When git ran out of `[vcs] git_timeout_s`: what to do (absent otherwise).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        what_to_do: Option<String>,
    },

    // ---- hosts ----
    /// A host was refused (bad declaration, other protocol version, unreadable executable).
    PluginRefused {
        /// The host.
        name: String,
        /// Why.
        reason: String,
    },
    /// A restarted host declared, in its new `initialize`, hooks, event kinds or owned
    /// paths other than those of its first; the first declarations stay in force
    /// (docs/protocol.md §3, "A restarted host").
    PluginRedeclarationIgnored {
        /// The host.
        name: String,
        /// What differs: `hooks`, `event_kinds`, `owned_paths`.
        changed: Vec<String>,
        /// The first and the new declarations of each (redacted, capped).
        detail: String,
    },
    /// A host's executable does not match its pin; it is not started.
    PluginChecksumMismatch {
        /// The host.
        name: String,
        /// The pin, `sha256:<hex>`.
        expected: String,
        /// What the executable hashes to.
        actual: String,
        /// The executable.
        path: PathBuf,
    },
    /// A host declared a hook with a built-in's name; the host is refused.
    PluginBuiltinNameSquat {
        /// The name.
        name: String,
        /// The host's executable.
        module_path: PathBuf,
        /// The host.
        host: String,
    },
    /// The sandbox killed a host (a denied system call).
    PluginSandboxKill {
        /// The hook being called.
        hook: String,
        /// The host.
        host: String,
        /// The signal that ended it.
        signal: Option<i32>,
        /// The denied system call, when known.
        syscall: Option<String>,
    },
    /// A host call failed (timeout, crash, invalid result, …); the round goes on.
    HookFailed {
        /// The hook (or the host's name for `initialize`).
        hook_name: String,
        /// Its family, or `initialize`.
        hook_kind: String,
        /// The host.
        host: String,
        /// The failure class (`timeout`, `crashed`, …).
        error_type: String,
        /// Its cause: the call in flight, the exit status or signal by name, the config
        /// key of the bound that ended the host (docs/protocol.md §6).
        error_message: String,
        /// The last lines of the host's stderr (capped, redacted) when the failure ended
        /// the host; absent otherwise (docs/protocol.md §6).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        stderr_tail: Vec<String>,
    },
    /// A host's state directory went over `state_max_mb`: the host was killed (it is then
    /// disabled, `plugin_disabled`). docs/security.md "Write limits".
    PluginWriteLimit {
        /// The host.
        host: String,
        /// Which directory (`state`).
        dir: String,
        /// Its path.
        path: PathBuf,
        /// Bytes it held when measured.
        used_bytes: u64,
        /// The limit, in bytes.
        limit_bytes: u64,
    },
    /// A host failed too often in a row (or went over a write limit); not called again
    /// this run.
    PluginDisabled {
        /// The host.
        name: String,
        /// Failures in a row.
        consecutive_failures: u32,
        /// Why, in words.
        reason: String,
    },
}

/// Every kind [`Event`] writes. A host may not declare one of these as its own event kind
/// (`docs/protocol.md` §5.7); hosts' events are recorded as `<host>.<kind>`. Kept equal to
/// the variants by the vocabulary test.
pub(crate) const BUILTIN_KINDS: &[&str] = &[
    "plugin_sandbox_degraded",
    "agent_sandbox_degraded",
    "serve_stopping",
    "session_resumed",
    "session_renewed",
    "agent_home_pruned",
    "agent_scan_truncated",
    "serve_startup_hook_failed",
    "round_skipped",
    "plugin_round_override_ignored",
    "detector_alert",
    "stop_file_detected",
    "agent_self_terminated",
    "crash_loop",
    "stalled_no_progress",
    "mem_loop",
    "mem_loop_persistent",
    "environment_unusable",
    "max_rounds_reached",
    "max_duration_reached",
    "rate_ceiling_paused",
    "rate_ceiling_resumed",
    "budget_exhausted",
    "budget_paused",
    "budget_resumed",
    "budget_round_exceeded",
    "budget_round_stopped",
    "output_watch_skipped",
    "budget_reset",
    "telemetry_export_failed",
    "telemetry_export_recovered",
    "notify_failed",
    "goal_reached",
    "goal_check",
    "goal_check_tampered",
    "goal_assessment",
    "round_deferred",
    "round_resumed",
    "round_error",
    "round_start",
    "agent_spawn",
    "agent_spawn_failed",
    "agent_exit",
    "dirty_check_failed",
    "git_repository_changed",
    "git_config_reverted",
    "exec_surface_changed",
    "git_index_flags_cleared",
    "round_end",
    "round_logs_pruned",
    "plugin_spawn_decision",
    "plugin_spawn_override_ignored",
    "dirty_detected",
    "dirty_ignored",
    "dirty_auto_committed",
    "dirty_commit_detached_head",
    "dirty_submodule_skipped",
    "dirty_commit_hooks_skipped",
    "dirty_commit_failed",
    "orphan_idempotent_skip",
    "orphan_stash_dropped",
    "dirty_filter_not_run",
    "orphan_stashed",
    "git_operation_in_progress",
    "orphan_stash_failed",
    "plugin_refused",
    "plugin_redeclaration_ignored",
    "plugin_checksum_mismatch",
    "plugin_builtin_name_squat",
    "plugin_sandbox_kill",
    "hook_failed",
    "plugin_write_limit",
    "plugin_disabled",
    "round_mem_critical_sample",
    "round_mem_terminated",
    "memory_high_engaged",
    "memory_high_released",
    "memory_high_write_failed",
    "round_cgroup_memory",
    "round_oom_killed",
    "agent_own_sandbox_replaced",
    "agent_sandbox_denied",
    "agent_egress_refused",
    "service_upgraded",
    "package_upgraded",
    "service_upgrade_rolled_back",
    "service_upgrade_rollback_failed",
    "monitor_started",
    "monitor_alert_emitted",
    "monitor_auto_stop_triggered",
    "monitor_auto_stop_failed",
    "monitor_remote_blip",
    "monitor_remote_giveup",
    "dirty_before_round",
    "round_log_capped",
    "round_state_recovered",
    "state_migrated",
    "config_reloaded",
    "config_broken",
    "config_untrusted",
    "schedule_paused",
    "schedule_resumed",
    "schedule_phase_skipped",
    "fresh_eyes_round_triggered",
    "round_substrate_before",
    "round_substrate_after",
    "round_progress",
    "round_grace_extended",
    "round_grace_kill",
    "agent_stalled",
    "round_timeout_kill",
    "plugin_post_round_decision",
    "plugin_post_round_override_ignored",
    "agent_usage_recorded",
    "agent_auth_error_detected",
    "transient_error_detected",
    "transient_error_backoff_capped",
    "transient_error_recovered",
    "agent_network_blip",
];

/// The numbers behind a `disk_growth` alert (`monitor_alert_emitted.context`,
/// docs/operations.md "monitor"): the reference system's five keys, then ours (the
/// readings the rates come from). Rates are percentage points per hour, rounded to 0.01.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct DiskGrowth {
    /// Growth of the used share of the log dir's filesystem, %/hr.
    pub disk_pct_per_hr: f64,
    /// `disk.disk_growth_pct_per_hr_warning`.
    pub disk_threshold_pct_per_hr: f64,
    /// Growth of its inode-used share, %/hr; `null` when inodes cannot be read.
    pub inode_pct_per_hr: Option<f64>,
    /// `disk.inode_growth_pct_per_hr_warning`.
    pub inode_threshold_pct_per_hr: f64,
    /// `disk.growth_window_s`: the longest span the rates are taken over.
    pub window_s: u64,
    /// Seconds between the oldest reading in the window and the newest (ours).
    pub elapsed_s: f64,
    /// Used % at the oldest and the newest reading (ours).
    pub disk_used_pct_from: f64,
    /// See `disk_used_pct_from`.
    pub disk_used_pct_to: f64,
    /// Bytes available at the oldest and the newest reading (ours); `null` when unread.
    pub disk_free_bytes_from: Option<u64>,
    /// See `disk_free_bytes_from`.
    pub disk_free_bytes_to: Option<u64>,
    /// Inodes in use at the oldest and the newest reading (ours); `null` when unread.
    pub inodes_used_from: Option<u64>,
    /// See `inodes_used_from`.
    pub inodes_used_to: Option<u64>,
}

/// The fields of `round_end`, which has two shapes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum RoundEnd {
    /// The agent could not be started: `{"round_num", "outcome": "spawn_failed"}`.
    NotStarted {
        /// The round.
        round_num: u64,
        /// Always [`RoundOutcome::SpawnFailed`].
        outcome: RoundOutcome,
    },
    /// The agent ran: `{"round_num", "exit_code", "exit_cause", "dirty_outcome"}`.
    Ran {
        /// The round.
        round_num: u64,
        /// The agent's exit code; `null` when a signal ended it.
        exit_code: Option<i32>,
        /// Why it ended (as in `agent_exit`); read as empty when a line lacks it.
        #[serde(default)]
        exit_cause: String,
        /// `committed`, `stashed`, `ignored`, `failed`; `null` when the tree was clean or
        /// not looked at.
        dirty_outcome: Option<String>,
        /// The branch `HEAD` was on after the agent (`git symbolic-ref --short HEAD`), so a
        /// round whose agent switched branches says where its work is; `null` when `HEAD`
        /// is detached, outside git, or in lines written before it was recorded.
        #[serde(default)]
        branch: Option<String>,
        /// When the agent failed (non-zero exit or a signal not ours): the last lines of
        /// its round log, redacted, at most [`crate::runtime::cycle::round::TAIL_CHARS`]
        /// characters; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        log_tail: Option<String>,
    },
}

/// `round_end.outcome` of a round whose agent never ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RoundOutcome {
    /// The agent could not be started.
    SpawnFailed,
}

/// A child of a lingering agent in `round_grace_extended`, the reference system's shape:
/// its kernel process name, never its command line (arguments are where secrets live and
/// the record keeps them), its pid, and for an ignored child the
/// `grace_kill_ignore_patterns` entry it matched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GraceChild {
    /// `/proc/<pid>/comm` (at most 15 bytes).
    pub name: String,
    /// Its pid.
    pub pid: u32,
    /// The pattern that matched (ignored children only; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<String>,
}
