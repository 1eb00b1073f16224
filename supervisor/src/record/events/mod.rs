//! The operator's record: `<state_dir>/events-YYYY-MM.jsonl` (UTC month), one JSON object per
//! line, `{"ts": "2026-11-29T16:43:55.711Z", "event": "<kind>", ...fields}` (the reference
//! system's format). Each line goes out in a single `write(2)` on an `O_APPEND` file, so
//! lines are never torn or interleaved, even with several writers.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::held_dir::HeldDir;

mod event;
pub(crate) mod read;
pub(crate) mod recent;
pub(crate) mod summary;

pub(crate) use event::{DiskGrowth, Event, GraceChild, RoundEnd, RoundOutcome, BUILTIN_KINDS};

/// Appends events to the monthly files of one log dir.
#[derive(Clone, Debug)]
pub struct EventLog {
    dir: PathBuf,
    /// Where each month file also shows, as a symbolic link (`log_dir` when the record
    /// lives in a state dir apart from it; docs/operations.md, "State dir"), as it resolved
    /// at boot.
    links: Option<HeldDir>,
    /// Who else hears of each event (`serve`'s notifications).
    tap: Option<Tap>,
}

/// Hears of each event [`EventLog::emit`] records, with its line as written (no newline),
/// whether or not the write succeeded (a full disk is news too). Called on the emitting
/// thread: it must be quick and must never block (`crate::runtime::outward::notify` queues).
#[derive(Clone)]
pub(crate) struct Tap(pub std::sync::Arc<TapFn>);

/// What a [`Tap`] calls: the event and its line.
pub(crate) type TapFn = dyn Fn(&Event, &str) + Send + Sync;

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tap")
    }
}

/// A UTC timestamp with milliseconds, `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn timestamp(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

/// One line as written: `ts` first, then the event's kind and fields.
#[derive(Serialize)]
struct Line<'a> {
    ts: &'a str,
    #[serde(flatten)]
    event: &'a Event,
}

impl EventLog {
    /// Events of the project whose log dir is `dir` (created on first write).
    pub fn new(dir: &Path) -> Self {
        EventLog {
            dir: dir.to_owned(),
            links: None,
            tap: None,
        }
    }

    /// The same record, each event also handed to `tap` ([`Tap`]).
    pub(crate) fn tapped(mut self, tap: Tap) -> Self {
        self.tap = Some(tap);
        self
    }

    /// The same record without a tap (what the tap's own events are written through).
    pub(crate) fn untapped(&self) -> Self {
        EventLog {
            tap: None,
            ..self.clone()
        }
    }

    /// The same record, each month file also shown in `log_dir` as a symbolic link to it,
    /// made (again) on each write when it is missing, so consumers written against the
    /// reference can keep reading `<log_dir>/events-YYYY-MM.jsonl` while the record itself
    /// stays out of `git clean`'s reach. No link when `log_dir` is the record's own dir;
    /// whatever else sits at a link's name is left alone.
    pub(crate) fn linked_in(mut self, log_dir: HeldDir) -> Self {
        if log_dir.shown() != self.dir {
            self.links = Some(log_dir);
        }
        self
    }

    /// The file holding events of the month of `ts` (a [`timestamp`]).
    pub(crate) fn file_for(&self, ts: &str) -> PathBuf {
        self.dir.join(format!("events-{}.jsonl", &ts[..7]))
    }

    /// Records `event`. A failure to write is logged, never raised: the record must not
    /// stop the loop.
    pub(crate) fn emit(&self, event: Event) {
        if let Err(err) = self.try_emit(&event) {
            tracing::error!(?event, dir = %self.dir.display(), "cannot write event: {err}");
        }
    }

    /// Records an event a host declared and emitted (`docs/protocol.md` §5.7): `kind` is
    /// `<host>.<kind>`, already checked against the host's declaration, and `fields` carry
    /// `host` and `hook`. The one way a kind outside [`Event`] enters the record.
    pub(crate) fn emit_host_event(&self, kind: &str, fields: serde_json::Map<String, Value>) {
        let ts = timestamp(SystemTime::now());
        let mut line = serde_json::Map::new();
        line.insert("ts".into(), Value::String(ts.clone()));
        line.insert("event".into(), Value::String(kind.to_owned()));
        line.extend(fields);
        let written = serde_json::to_vec(&Value::Object(line))
            .map_err(io::Error::from)
            .and_then(|bytes| self.append(&ts, bytes));
        if let Err(err) = written {
            tracing::error!(kind, dir = %self.dir.display(), "cannot write event: {err}");
        }
    }

    pub(crate) fn try_emit(&self, event: &Event) -> io::Result<()> {
        let ts = timestamp(SystemTime::now());
        let bytes = line_bytes(&ts, event)?;
        let Some(tap) = &self.tap else {
            return self.append(&ts, bytes);
        };
        let line = String::from_utf8_lossy(&bytes).into_owned();
        let written = self.append(&ts, bytes);
        (tap.0)(event, &line);
        written
    }

    /// Appends one line (`bytes` plus a newline) to the file of `ts`'s month in one
    /// `write(2)`.
    fn append(&self, ts: &str, mut bytes: Vec<u8>) -> io::Result<()> {
        bytes.push(b'\n');
        std::fs::create_dir_all(&self.dir)?;
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.file_for(ts))?;
        let written = file.write(&bytes)?;
        if written != bytes.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write: {written} of {} bytes", bytes.len()),
            ));
        }
        self.link(ts);
        Ok(())
    }

    /// Makes `<links>/events-YYYY-MM.jsonl` a link to the month file of `ts` when nothing
    /// is at that name. A failure is logged: the record itself was written.
    fn link(&self, ts: &str) {
        let Some(links) = &self.links else { return };
        let target = self.file_for(ts);
        let Some(name) = target.file_name() else {
            return;
        };
        let made = links.open().and_then(|dir| {
            let link = dir.at().join(name);
            if std::fs::symlink_metadata(&link).is_ok() {
                return Ok(());
            }
            std::os::unix::fs::symlink(&target, &link)
        });
        if let Err(err) = made {
            if err.kind() != io::ErrorKind::AlreadyExists {
                let link = links.shown().join(name);
                tracing::warn!("cannot link {} to the record: {err}", link.display());
            }
        }
    }
}

/// The JSON of one line, without its newline.
///
/// Errors: a path field that is not UTF-8.
fn line_bytes(ts: &str, event: &Event) -> io::Result<Vec<u8>> {
    Ok(serde_json::to_vec(&Line { ts, event })?)
}

/// One line of the record as read back. `event` is `None` for a kind this version does not
/// know (a newer supervisor wrote it) or a shape it cannot read; the line itself is always
/// kept, and is what `events` and `peek` print, so nothing a newer writer added is lost.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Recorded {
    /// The line as written: an object with a string `event`.
    pub line: Value,
    /// The typed event, when this version knows its kind.
    pub event: Option<Event>,
}

impl Recorded {
    /// Reads one parsed line; `None` when it is not an object with a string `event`.
    pub(crate) fn from_line(line: Value) -> Option<Recorded> {
        if !line.get("event").is_some_and(Value::is_string) {
            return None;
        }
        let event = Event::deserialize(&line).ok();
        Some(Recorded { line, event })
    }

    /// The kind (`event`).
    pub(crate) fn kind(&self) -> &str {
        self.line["event"].as_str().unwrap_or_default()
    }

    /// The line's `ts`, if it has one.
    pub(crate) fn ts(&self) -> Option<&str> {
        self.line["ts"].as_str()
    }

    /// The line's `round_num`, if it has one (known kind or not).
    pub(crate) fn round_num(&self) -> Option<u64> {
        self.line["round_num"].as_u64()
    }
}

impl Serialize for Recorded {
    /// The line as written.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.line.serialize(serializer)
    }
}

impl schemars::JsonSchema for Recorded {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Event".into()
    }

    /// An object with at least a string `ts` and a string `event` (the kind); the fields of
    /// each kind are listed in `docs/operations.md`, "Event kinds".
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "One event of the record, as written: `ts`, `event` (its kind) and the kind's fields (docs/operations.md, 'Event kinds').",
            "type": "object",
            "required": ["ts", "event"],
            "properties": {
                "ts": {"type": "string"},
                "event": {"type": "string"}
            }
        })
    }
}

impl std::fmt::Display for Recorded {
    /// The line as written, as one line of JSON.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.line.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every kind with sample fields, and its line exactly as the record has always had it
    /// (`ts` first, then `event`, then the fields in their documented order).
    #[rustfmt::skip]
    fn vocabulary() -> Vec<(Event, &'static str)> {
        let s = |t: &str| t.to_owned();
        vec![
            (Event::PluginSandboxDegraded { requested: s("require"), achieved_tier: s("landlock"), reason: s("no seccomp"), refused_boot: Some(true), name: None },
             r#""event":"plugin_sandbox_degraded","requested":"require","achieved_tier":"landlock","reason":"no seccomp","refused_boot":true"#),
            (Event::PluginSandboxDegraded { requested: s("prefer"), achieved_tier: s("landlock"), reason: s("no seccomp"), refused_boot: None, name: None },
             r#""event":"plugin_sandbox_degraded","requested":"prefer","achieved_tier":"landlock","reason":"no seccomp""#),
            (Event::PluginSandboxDegraded { requested: s("require"), achieved_tier: s("landlock+seccomp"), reason: s("host h is not pinned"), refused_boot: None, name: Some(s("h")) },
             r#""event":"plugin_sandbox_degraded","requested":"require","achieved_tier":"landlock+seccomp","reason":"host h is not pinned","name":"h""#),
            (Event::AgentSandboxDegraded { requested: s("require"), achieved_tier: s("landlock"), reason: s("no seccomp"), refused_boot: Some(true) },
             r#""event":"agent_sandbox_degraded","requested":"require","achieved_tier":"landlock","reason":"no seccomp","refused_boot":true"#),
            (Event::ServeStopping { reason: s("signal"), rounds_completed: 2, hook: None, message: None },
             r#""event":"serve_stopping","reason":"signal","rounds_completed":2"#),
            (Event::ServeStopping { reason: s("auto_stop"), rounds_completed: 3, hook: Some(s("no_commit")), message: Some(s("stuck")) },
             r#""event":"serve_stopping","reason":"auto_stop","rounds_completed":3,"hook":"no_commit","message":"stuck""#),
            (Event::ServeStartupHookFailed { hook: s("check"), error_type: s("rpc_error"), error_message: s("no report dir") },
             r#""event":"serve_startup_hook_failed","hook":"check","error_type":"rpc_error","error_message":"no report dir""#),
            (Event::RoundSkipped { hook: s("gate"), reason: s("3 failing"), round_num: 4 },
             r#""event":"round_skipped","hook":"gate","reason":"3 failing","round_num":4"#),
            (Event::PluginRoundOverrideIgnored { hook: s("gate"), action: s("skip"), reason: s("3 failing"), round_num: 4 },
             r#""event":"plugin_round_override_ignored","hook":"gate","action":"skip","reason":"3 failing","round_num":4"#),
            (Event::DetectorAlert { hook: s("no_commit"), severity: s("warning"), message: s("stuck"), stop_service: true, auto_stop: false, round_num: 5 },
             r#""event":"detector_alert","hook":"no_commit","severity":"warning","message":"stuck","stop_service":true,"auto_stop":false,"round_num":5"#),
            (Event::StopFileDetected { path: PathBuf::from("/p/STOP"), stop_file: s("/p/STOP"), content: s("done"), rounds_completed: 0 },
             r#""event":"stop_file_detected","path":"/p/STOP","stop_file":"/p/STOP","content":"done","rounds_completed":0"#),
            (Event::AgentSelfTerminated { reason: s("converged"), rounds_completed: 4 },
             r#""event":"agent_self_terminated","reason":"converged","rounds_completed":4"#),
            (Event::CrashLoop { consecutive_failures: 5, threshold: 5, rounds_completed: 5, reason: "round 5: exit 1 after 0.4 s".into(), last_lines: vec!["boom".into()] },
             r#""event":"crash_loop","consecutive_failures":5,"threshold":5,"rounds_completed":5,"reason":"round 5: exit 1 after 0.4 s","last_lines":["boom"]"#),
            (Event::StalledNoProgress { consecutive_rounds: 5, threshold: 5, fast_s: 30, rounds_completed: 5, last_lines: vec!["ok".into()] },
             r#""event":"stalled_no_progress","consecutive_rounds":5,"threshold":5,"fast_s":30,"rounds_completed":5,"last_lines":["ok"]"#),
            (Event::MemLoop { consecutive: 5, threshold: 5, exit_code: None, rounds_completed: 5, reason: "round 5: OOM kill in the round's cgroup after 0.4 s".into(), last_lines: vec![] },
             r#""event":"mem_loop","consecutive":5,"threshold":5,"exit_code":null,"rounds_completed":5,"reason":"round 5: OOM kill in the round's cgroup after 0.4 s","last_lines":[]"#),
            (Event::MemLoopPersistent { consecutive: 3, threshold: 3, window_s: 7200, exit_code: None, rounds_completed: 5, reason: "round 15: host_pressure (signal 15) after 2.0 s".into(), last_lines: vec!["x".into()] },
             r#""event":"mem_loop_persistent","consecutive":3,"threshold":3,"window_s":7200,"exit_code":null,"rounds_completed":5,"reason":"round 15: host_pressure (signal 15) after 2.0 s","last_lines":["x"]"#),
            (Event::EnvironmentUnusable { stage: s("round"), error: s("cannot create /l/rounds: No space left on device"), consecutive_failures: 5, threshold: 5, rounds_completed: 2 },
             r#""event":"environment_unusable","stage":"round","error":"cannot create /l/rounds: No space left on device","consecutive_failures":5,"threshold":5,"rounds_completed":2"#),
            (Event::MaxRoundsReached { rounds_completed: 3, max_rounds: 3 },
             r#""event":"max_rounds_reached","rounds_completed":3,"max_rounds":3"#),
            (Event::MaxDurationReached { elapsed_s: 3600.2, max_duration_s: 3600, rounds_completed: 7 },
             r#""event":"max_duration_reached","elapsed_s":3600.2,"max_duration_s":3600,"rounds_completed":7"#),
            (Event::RateCeilingPaused { rounds_last_hour: 6, max_rounds_per_hour: 6, resume_in_s: 1200.5 },
             r#""event":"rate_ceiling_paused","rounds_last_hour":6,"max_rounds_per_hour":6,"resume_in_s":1200.5"#),
            (Event::RateCeilingResumed { paused_for_s: 1200.6, reason: s("elapsed") },
             r#""event":"rate_ceiling_resumed","paused_for_s":1200.6,"reason":"elapsed""#),
            (Event::BudgetExhausted { scope: s("total_usd"), spent: 1.2, cap: 1.0 },
             r#""event":"budget_exhausted","scope":"total_usd","spent":1.2,"cap":1.0"#),
            (Event::BudgetPaused { scope: s("daily_tokens"), spent: 5000.0, cap: 4000.0, until: s("2026-12-03T00:00:00Z"), timezone: s("UTC") },
             r#""event":"budget_paused","scope":"daily_tokens","spent":5000.0,"cap":4000.0,"until":"2026-12-03T00:00:00Z","timezone":"UTC""#),
            (Event::BudgetResumed { paused_for_s: 3.5, reason: s("next_day") },
             r#""event":"budget_resumed","paused_for_s":3.5,"reason":"next_day""#),
            (Event::BudgetRoundExceeded { round_num: 2, cost_usd: 0.4, cap: 0.25 },
             r#""event":"budget_round_exceeded","round_num":2,"cost_usd":0.4,"cap":0.25"#),
            (Event::BudgetRoundStopped { round_num: 3, scope: "round_usd".into(), spent: 0.6, cap: 0.5, round_usd: 0.6, round_tokens: 3300, calls: 3, hook: "claude_usage_watch".into() },
             r#""event":"budget_round_stopped","round_num":3,"scope":"round_usd","spent":0.6,"cap":0.5,"round_usd":0.6,"round_tokens":3300,"calls":3,"hook":"claude_usage_watch""#),
            (Event::OutputWatchSkipped { round_num: 3, skipped_bytes: 2048, max_behind_bytes: 1048576 },
             r#""event":"output_watch_skipped","round_num":3,"skipped_bytes":2048,"max_behind_bytes":1048576"#),
            (Event::BudgetReset { spent_usd: 1.2, spent_tokens: 3300 },
             r#""event":"budget_reset","spent_usd":1.2,"spent_tokens":3300"#),
            (Event::TelemetryExportFailed { endpoint: s("http://127.0.0.1:4318/v1/traces"), source: s("[telemetry] otlp_endpoint"), error: s("refused") },
             r#""event":"telemetry_export_failed","endpoint":"http://127.0.0.1:4318/v1/traces","source":"[telemetry] otlp_endpoint","error":"refused""#),
            (Event::TelemetryExportRecovered { endpoint: s("http://127.0.0.1:4318/v1/traces"), failed_for_s: 12.5, failed_exports: 3, spans_lost: 9 },
             r#""event":"telemetry_export_recovered","endpoint":"http://127.0.0.1:4318/v1/traces","failed_for_s":12.5,"failed_exports":3,"spans_lost":9"#),
            (Event::NotifyFailed { webhook: s("ops"), url_env: Some(s("OPS_WEBHOOK_URL")), event_kind: s("crash_loop"), reason: s("failed"), attempts: 4, error: s("HTTP 500") },
             r#""event":"notify_failed","webhook":"ops","url_env":"OPS_WEBHOOK_URL","event_kind":"crash_loop","reason":"failed","attempts":4,"error":"HTTP 500""#),
            (Event::GoalReached { round_num: 4, checks: vec![s("tests")], rounds_completed: 4 },
             r#""event":"goal_reached","round_num":4,"checks":["tests"],"rounds_completed":4"#),
            (Event::GoalCheck { name: s("tests"), satisfied: false, value: Some(12.0), timed_out: false, skipped: false, error: None, denied: vec![], oom_killed: false, round_num: 3 },
             r#""event":"goal_check","name":"tests","satisfied":false,"value":12.0,"timed_out":false,"skipped":false,"round_num":3"#),
            (Event::GoalCheck { name: s("tests"), satisfied: false, value: None, timed_out: false, skipped: false, error: None, denied: vec![s("ptrace")], oom_killed: true, round_num: 3 },
             r#""event":"goal_check","name":"tests","satisfied":false,"value":null,"timed_out":false,"skipped":false,"denied":["ptrace"],"oom_killed":true,"round_num":3"#),
            (Event::GoalCheckTampered { name: s("tests"), paths: vec![PathBuf::from("/w/check.sh")], round_num: 3 },
             r#""event":"goal_check_tampered","name":"tests","paths":["/w/check.sh"],"round_num":3"#),
            (Event::GoalAssessment { observation: s("stuck"), question: s("why?"), confidence: s("medium") },
             r#""event":"goal_assessment","observation":"stuck","question":"why?","confidence":"medium""#),
            (Event::RoundDeferred { severity: s("info"), signal: s("pause"), message: s("paused"), defer_s: 60 },
             r#""event":"round_deferred","severity":"info","signal":"pause","message":"paused","defer_s":60"#),
            (Event::RoundResumed { deferred_for_s: 60.1 },
             r#""event":"round_resumed","deferred_for_s":60.1"#),
            (Event::RoundMemCriticalSample { round_num: 3, consecutive: 1, context: json!({"psi_full_avg10": 70.0}) },
             r#""event":"round_mem_critical_sample","round_num":3,"consecutive":1,"context":{"psi_full_avg10":70.0}"#),
            (Event::RoundMemTerminated { pid: 42, severity: s("critical"), signal: s("psi"), message: s("m"), consecutive: 3, context: json!({}), tier: s("terminate") },
             r#""event":"round_mem_terminated","pid":42,"severity":"critical","signal":"psi","message":"m","consecutive":3,"context":{},"tier":"terminate""#),
            (Event::MemoryHighEngaged { round_num: 2, previous: s("max"), written: 67108864, memory_current: 67108864, write_ms: 0, signal: s("psi"), context: json!({}), file: PathBuf::from("/cg/memory.high") },
             r#""event":"memory_high_engaged","round_num":2,"previous":"max","written":67108864,"memory_current":67108864,"write_ms":0,"signal":"psi","context":{},"file":"/cg/memory.high""#),
            (Event::MemoryHighReleased { round_num: 2, reason: s("recovered") },
             r#""event":"memory_high_released","round_num":2,"reason":"recovered""#),
            (Event::MemoryHighWriteFailed { round_num: 2, errno: Some(13) },
             r#""event":"memory_high_write_failed","round_num":2,"errno":13"#),
            (Event::RoundCgroupMemory { round_num: 3, layout: s("v1"), cgroup: s("/sys/fs/cgroup/memory/x/round-3.9"), peak_bytes: Some(4096), high_bytes: None, max_bytes: Some(8192) },
             r#""event":"round_cgroup_memory","round_num":3,"layout":"v1","cgroup":"/sys/fs/cgroup/memory/x/round-3.9","peak_bytes":4096,"high_bytes":null,"max_bytes":8192"#),
            (Event::RoundOomKilled { round_num: 3, agent: s("claude"), agent_killed: true, oom_kills: 1, max_bytes: Some(8192) },
             r#""event":"round_oom_killed","round_num":3,"agent":"claude","agent_killed":true,"oom_kills":1,"max_bytes":8192"#),
            (Event::AgentOwnSandboxReplaced { round_num: 3, cli: s("codex"), removed: vec![s("--sandbox"), s("workspace-write")], added: vec![s("--dangerously-bypass-approvals-and-sandbox")], reason: s("ours") },
             r#""event":"agent_own_sandbox_replaced","round_num":3,"cli":"codex","removed":["--sandbox","workspace-write"],"added":["--dangerously-bypass-approvals-and-sandbox"],"reason":"ours""#),
            (Event::AgentSandboxDenied { round_num: 3, layer: s("egress"), target: s("evil.example:443"), access: s("connect"), count: 2, dropped_kinds: Some(1), dropped_count: Some(4) },
             r#""event":"agent_sandbox_denied","round_num":3,"layer":"egress","target":"evil.example:443","access":"connect","count":2,"dropped_kinds":1,"dropped_count":4"#),
            (Event::AgentEgressRefused { round_num: 3, layer: s("landlock"), host: None, address: Some(s("127.0.0.1")), port: 4010, access: s("connect"), reason: s("port_not_allowed"), key: s("agent.sandbox.connect_ports"), message: s("egress to 127.0.0.1:4010 refused by the agent sandbox: add 4010 to [agent.sandbox] connect_ports"), count: 2 },
             r#""event":"agent_egress_refused","round_num":3,"layer":"landlock","address":"127.0.0.1","port":4010,"access":"connect","reason":"port_not_allowed","key":"agent.sandbox.connect_ports","message":"egress to 127.0.0.1:4010 refused by the agent sandbox: add 4010 to [agent.sandbox] connect_ports","count":2"#),
            (Event::ServiceUpgraded { from_version: s("0.1.0"), to_version: s("0.2.0"), duration_s: 4.5, binary: PathBuf::from("/usr/local/bin/agent-runner"), pid: Some(9) },
             r#""event":"service_upgraded","from_version":"0.1.0","to_version":"0.2.0","duration_s":4.5,"binary":"/usr/local/bin/agent-runner","pid":9"#),
            (Event::PackageUpgraded { from_version: s("0.1.0"), to_version: s("0.2.0"), restart_deferred: true, binary: PathBuf::from("/b") },
             r#""event":"package_upgraded","from_version":"0.1.0","to_version":"0.2.0","restart_deferred":true,"binary":"/b""#),
            (Event::ServiceUpgradeRolledBack { attempted_version: s("0.2.0"), restored_version: s("0.1.0"), failure_reason: s("exited"), duration_s: 9.0, binary: PathBuf::from("/b"), pid: Some(10) },
             r#""event":"service_upgrade_rolled_back","attempted_version":"0.2.0","restored_version":"0.1.0","failure_reason":"exited","duration_s":9.0,"binary":"/b","pid":10"#),
            (Event::ServiceUpgradeRollbackFailed { attempted_version: s("0.2.0"), restore_target_version: s("0.1.0"), failure_reason: s("exited"), binary: PathBuf::from("/b") },
             r#""event":"service_upgrade_rollback_failed","attempted_version":"0.2.0","restore_target_version":"0.1.0","failure_reason":"exited","binary":"/b""#),
            (Event::MonitorStarted { mode: s("anomaly"), pid: 7 },
             r#""event":"monitor_started","mode":"anomaly","pid":7"#),
            (Event::MonitorAlertEmitted { detector: s("disk_critical"), severity: s("critical"), message: s("m"), auto_action: s("stop_service"), context: None },
             r#""event":"monitor_alert_emitted","detector":"disk_critical","severity":"critical","message":"m","auto_action":"stop_service""#),
            (Event::MonitorAlertEmitted { detector: s("disk_growth"), severity: s("warning"), message: s("m"), auto_action: s("none"), context: Some(DiskGrowth { disk_pct_per_hr: 6.0, disk_threshold_pct_per_hr: 5.0, inode_pct_per_hr: None, inode_threshold_pct_per_hr: 5.0, window_s: 1800, elapsed_s: 1799.5, disk_used_pct_from: 50.0, disk_used_pct_to: 53.0, disk_free_bytes_from: Some(4096), disk_free_bytes_to: Some(1024), inodes_used_from: None, inodes_used_to: None }) },
             r#""event":"monitor_alert_emitted","detector":"disk_growth","severity":"warning","message":"m","auto_action":"none","context":{"disk_pct_per_hr":6.0,"disk_threshold_pct_per_hr":5.0,"inode_pct_per_hr":null,"inode_threshold_pct_per_hr":5.0,"window_s":1800,"elapsed_s":1799.5,"disk_used_pct_from":50.0,"disk_used_pct_to":53.0,"disk_free_bytes_from":4096,"disk_free_bytes_to":1024,"inodes_used_from":null,"inodes_used_to":null}"#),
            (Event::MonitorAutoStopTriggered { detector: s("disk_critical") },
             r#""event":"monitor_auto_stop_triggered","detector":"disk_critical""#),
            (Event::MonitorAutoStopFailed { detector: s("disk_critical"), error: s("e") },
             r#""event":"monitor_auto_stop_failed","detector":"disk_critical","error":"e""#),
            (Event::MonitorRemoteBlip { host: s("box"), returncode: Some(255), error: s("closed"), attempt: 1 },
             r#""event":"monitor_remote_blip","host":"box","returncode":255,"error":"closed","attempt":1"#),
            (Event::MonitorRemoteGiveup { host: s("box"), returncode: None, total_attempts: 4, total_elapsed_s: 90.5 },
             r#""event":"monitor_remote_giveup","host":"box","returncode":null,"total_attempts":4,"total_elapsed_s":90.5"#),
            (Event::RoundError { error: s("boom") },
             r#""event":"round_error","error":"boom""#),
            (Event::ConfigReloaded { path: PathBuf::from("/p/agent-runner.toml"), digest: s("sha256:bb"), previous_digest: s("sha256:aa"), trigger: s("sighup"), hosts_restarted: vec![s("b")], hosts_stopped: vec![] },
             r#""event":"config_reloaded","path":"/p/agent-runner.toml","digest":"sha256:bb","previous_digest":"sha256:aa","trigger":"sighup","hosts_restarted":["b"],"hosts_stopped":[]"#),
            (Event::ConfigBroken { path: PathBuf::from("/p/agent-runner.toml"), error: s("config error in /p/agent-runner.toml: key `x`: unknown"), digest: Some(s("sha256:cc")), trigger: s("round") },
             r#""event":"config_broken","path":"/p/agent-runner.toml","error":"config error in /p/agent-runner.toml: key `x`: unknown","digest":"sha256:cc","trigger":"round""#),
            (Event::ConfigUntrusted { path: "/p/conf/agent-runner.toml".into(), reason: s("replaced while the agent ran"), digest: s("sha256:dd"), trigger: s("round") },
             r#""event":"config_untrusted","path":"/p/conf/agent-runner.toml","reason":"replaced while the agent ran","digest":"sha256:dd","trigger":"round""#),
            (Event::StateMigrated { from: PathBuf::from("/p/logs"), to: PathBuf::from("/s"), files: vec![s("state.json")] },
             r#""event":"state_migrated","from":"/p/logs","to":"/s","files":["state.json"]"#),
            (Event::RoundStateRecovered { last_round_was: 0, last_round: 7, source: s("round logs"), state_file: PathBuf::from("/s/state.json") },
             r#""event":"round_state_recovered","last_round_was":0,"last_round":7,"source":"round logs","state_file":"/s/state.json""#),
            (Event::RoundStart { round_num: 1, phase: None, config_digest: None, config_changed: None, config_prompt_files: None, config_check_names: None, config_vcs_dirty_action: None, config_prompt_delivery: None },
             r#""event":"round_start","round_num":1,"phase":null"#),
            (Event::RoundStart { round_num: 2, phase: Some(s("build")), config_digest: Some(s("ab12")), config_changed: Some(true), config_prompt_files: Some(vec![s("/p/main.md")]), config_check_names: Some(vec![]), config_vcs_dirty_action: Some(s("stash")), config_prompt_delivery: Some(s("argv")) },
             r#""event":"round_start","round_num":2,"phase":"build","config_digest":"ab12","config_changed":true,"config_prompt_files":["/p/main.md"],"config_check_names":[],"config_vcs_dirty_action":"stash","config_prompt_delivery":"argv""#),
            (Event::SchedulePaused { phase: None, until: s("2026-11-30T22:00:00.000Z"), timezone: s("Europe/Berlin") },
             r#""event":"schedule_paused","phase":null,"until":"2026-11-30T22:00:00.000Z","timezone":"Europe/Berlin""#),
            (Event::ScheduleResumed { paused_for_s: 3600.0, reason: s("schedule") },
             r#""event":"schedule_resumed","paused_for_s":3600.0,"reason":"schedule""#),
            (Event::SchedulePhaseSkipped { round_num: 4, phase: s("review"), until: Some(s("2026-12-01T08:00:00Z")) },
             r#""event":"schedule_phase_skipped","round_num":4,"phase":"review","until":"2026-12-01T08:00:00Z""#),
            (Event::FreshEyesRoundTriggered { round_num: 6, every_n: 3 },
             r#""event":"fresh_eyes_round_triggered","round_num":6,"every_n":3"#),
            (Event::SessionResumed { session_id: s("3f2b9c1e-1111-4222-8333-444455556666"), phase: None, round_num: 6 },
             r#""event":"session_resumed","session_id":"3f2b9c1e-1111-4222-8333-444455556666","round_num":6"#),
            (Event::SessionResumed { session_id: s("3f2b9c1e-1111-4222-8333-444455556666"), phase: Some(s("review")), round_num: 7 },
             r#""event":"session_resumed","session_id":"3f2b9c1e-1111-4222-8333-444455556666","phase":"review","round_num":7"#),
            (Event::SessionRenewed { session_id: s("b"), old_session_id: s("a"), reason: s("max_rounds"), rounds: 50, tokens: 1200, age_s: 600, phase: None, round_num: 51 },
             r#""event":"session_renewed","session_id":"b","old_session_id":"a","reason":"max_rounds","rounds":50,"tokens":1200,"age_s":600,"round_num":51"#),
            (Event::AgentScanTruncated { round_num: 4, scan: s("withheld_files"), limit: 20000 },
             r#""event":"agent_scan_truncated","round_num":4,"scan":"withheld_files","limit":20000"#),
            (Event::AgentHomePruned { round_num: 3, cli: s("claude"), removed: 2, bytes: 10, refused: vec![s(".claude/telemetry")] },
             r#""event":"agent_home_pruned","round_num":3,"cli":"claude","removed":2,"bytes":10,"refused":[".claude/telemetry"]"#),
            (Event::RoundSubstrateBefore { round_num: 6, git_head: Some(s("ab12")), paths_hash: None },
             r#""event":"round_substrate_before","round_num":6,"git_head":"ab12","paths_hash":null"#),
            (Event::RoundSubstrateAfter { round_num: 6, git_head: None, paths_hash: Some(s("00")) },
             r#""event":"round_substrate_after","round_num":6,"git_head":null,"paths_hash":"00""#),
            (Event::RoundGraceExtended { round_num: 6, grace_s: 30, live_children: vec![GraceChild { name: s("sleep"), pid: 41, matched: None }], ignored_children: vec![GraceChild { name: s("tail"), pid: 42, matched: Some(s("^tail ")) }] },
             r#""event":"round_grace_extended","round_num":6,"grace_s":30,"live_children":[{"name":"sleep","pid":41}],"ignored_children":[{"name":"tail","pid":42,"matched":"^tail "}]"#),
            (Event::RoundProgress { round_num: 6, log_size_kb: 12.5, last_write_age_s: 3.2, wall_age_s: 60.0 },
             r#""event":"round_progress","round_num":6,"log_size_kb":12.5,"last_write_age_s":3.2,"wall_age_s":60.0"#),
            (Event::RoundGraceKill { round_num: 6, grace_s: 30 },
             r#""event":"round_grace_kill","round_num":6,"grace_s":30"#),
            (Event::AgentStalled { round_num: 6, cli: s("codex"), words: s("waiting for network"), times: 2 },
             r#""event":"agent_stalled","round_num":6,"cli":"codex","words":"waiting for network","times":2"#),
            (Event::RoundTimeoutKill { round_num: 6, reason: s("exceeded round_budget_s=10") },
             r#""event":"round_timeout_kill","round_num":6,"reason":"exceeded round_budget_s=10""#),
            (Event::AgentSpawn { round_num: 1, timeout_s: 3600, log_path: PathBuf::from("/l/rounds/R1-x.log") },
             r#""event":"agent_spawn","round_num":1,"timeout_s":3600,"log_path":"/l/rounds/R1-x.log""#),
            (Event::AgentSpawnFailed { round_num: 1, error: s("cannot start") },
             r#""event":"agent_spawn_failed","round_num":1,"error":"cannot start""#),
            (Event::AgentExit { round_num: 1, exit_code: None, signal: Some(9), duration_s: 1.5, timed_out: true, exit_cause: s("timeout") },
             r#""event":"agent_exit","round_num":1,"exit_code":null,"signal":9,"duration_s":1.5,"timed_out":true,"exit_cause":"timeout""#),
            (Event::DirtyCheckFailed { round_num: 1, error: s("git") },
             r#""event":"dirty_check_failed","round_num":1,"error":"git""#),
            (Event::GitRepositoryChanged { round_num: 1, changed: s("/p/.git/commondir was missing at boot, is a file now"), set_aside: vec![s("/p/.git/commondir set aside as /p/.git/commondir.agent-runner-set-aside-1-2")] },
             r#""event":"git_repository_changed","round_num":1,"changed":"/p/.git/commondir was missing at boot, is a file now","set_aside":["/p/.git/commondir set aside as /p/.git/commondir.agent-runner-set-aside-1-2"]"#),
            (Event::GitConfigReverted { round_num: 1, key: s("core.fsmonitor"), scope: s("local"), file: PathBuf::from("/p/.git/config"), value: Some(s("./m")), action: s("removed"), why: s("w"), error: None, more_keys: None },
             r#""event":"git_config_reverted","round_num":1,"key":"core.fsmonitor","scope":"local","file":"/p/.git/config","value":"./m","action":"removed","why":"w","error":null"#),
            (Event::GitConfigReverted { round_num: 1, key: s("alias.x"), scope: s("worktree"), file: PathBuf::from("/p/.git/config.worktree"), value: None, action: s("restored"), why: s("w"), error: Some(s("e")), more_keys: Some(3) },
             r#""event":"git_config_reverted","round_num":1,"key":"alias.x","scope":"worktree","file":"/p/.git/config.worktree","value":null,"action":"restored","why":"w","error":"e","more_keys":3"#),
            (Event::ExecSurfaceChanged { round_num: 1, paths: vec![s(".github/workflows/ci.yml")], path_count: 1, committed: false, what_to_do: s("w") },
             r#""event":"exec_surface_changed","round_num":1,"paths":[".github/workflows/ci.yml"],"path_count":1,"committed":false,"what_to_do":"w""#),
            (Event::GitIndexFlagsCleared { round_num: 1, paths: vec![s(".vscode/tasks.json")], path_count: 1, index_set_aside: None },
             r#""event":"git_index_flags_cleared","round_num":1,"paths":[".vscode/tasks.json"],"path_count":1"#),
            (Event::GitIndexFlagsCleared { round_num: 1, paths: vec![], path_count: 0, index_set_aside: Some(s("/p/.git/index set aside as x")) },
             r#""event":"git_index_flags_cleared","round_num":1,"paths":[],"path_count":0,"index_set_aside":"/p/.git/index set aside as x""#),
            (Event::RoundEnd(RoundEnd::NotStarted { round_num: 1, outcome: RoundOutcome::SpawnFailed }),
             r#""event":"round_end","round_num":1,"outcome":"spawn_failed""#),
            (Event::RoundEnd(RoundEnd::Ran { round_num: 2, exit_code: Some(0), exit_cause: s("exited"), dirty_outcome: None, branch: Some(s("main")), log_tail: None }),
             r#""event":"round_end","round_num":2,"exit_code":0,"exit_cause":"exited","dirty_outcome":null,"branch":"main""#),
            (Event::RoundEnd(RoundEnd::Ran { round_num: 3, exit_code: Some(1), exit_cause: s("exited"), dirty_outcome: None, branch: None, log_tail: Some(s("no auth")) }),
             r#""event":"round_end","round_num":3,"exit_code":1,"exit_cause":"exited","dirty_outcome":null,"branch":null,"log_tail":"no auth""#),
            (Event::RoundLogCapped { round_num: 2, log_path: PathBuf::from("/l/rounds/R2-x.log"), cap_bytes: 1024, discarded_bytes: 10 },
             r#""event":"round_log_capped","round_num":2,"log_path":"/l/rounds/R2-x.log","cap_bytes":1024,"discarded_bytes":10"#),
            (Event::RoundLogsPruned { directory: PathBuf::from("/l/rounds"), keep: 2, deleted: 1, files: vec![s("R1-x.log")] },
             r#""event":"round_logs_pruned","directory":"/l/rounds","keep":2,"deleted":1,"files":["R1-x.log"]"#),
            (Event::PluginPostRoundDecision { round_num: 3, hook: s("claude_error_detector"), action: s("back_off"), kind: s("usage_limit"), message: s("claude: usage_limit"), back_off_s: None, until: Some(s("2026-11-30T05:00:00.000Z")) },
             r#""event":"plugin_post_round_decision","round_num":3,"hook":"claude_error_detector","action":"back_off","kind":"usage_limit","message":"claude: usage_limit","back_off_s":null,"until":"2026-11-30T05:00:00.000Z""#),
            (Event::PluginPostRoundOverrideIgnored { hook: s("judge"), action: s("stop"), kind: s("other"), round_num: 3, reason: s("not in auto_stop_on") },
             r#""event":"plugin_post_round_override_ignored","hook":"judge","action":"stop","kind":"other","round_num":3,"reason":"not in auto_stop_on""#),
            (Event::AgentUsageRecorded { round_num: 3, hook: s("codex_error_detector"), input_tokens: 10, output_tokens: 2, cache_read_tokens: Some(8), cache_write_tokens: None, cost_usd: None, agent: s("codex"), model: s("unknown"), cached_tokens: 8, usage_scope: s("round"), from_session_totals: vec![s("input_tokens")], source: s("cli"), reported_cost_usd: None, reported_tokens: None, underreported: false },
             r#""event":"agent_usage_recorded","round_num":3,"hook":"codex_error_detector","input_tokens":10,"output_tokens":2,"cache_read_tokens":8,"cache_write_tokens":null,"cost_usd":null,"agent":"codex","model":"unknown","cached_tokens":8,"usage_scope":"round","from_session_totals":["input_tokens"],"source":"cli","reported_cost_usd":null,"reported_tokens":null,"underreported":false"#),
            (Event::AgentAuthErrorDetected { round_num: 3, hook: s("claude_error_detector"), message: s("claude: login"), hint: Some(s("run claude /login")), auto_stop: true },
             r#""event":"agent_auth_error_detected","round_num":3,"hook":"claude_error_detector","message":"claude: login","hint":"run claude /login","auto_stop":true"#),
            (Event::TransientErrorDetected { round_num: 3, kind: s("rate_limit"), hook: s("gemini_error_detector"), message: s("429"), reset_at: None, consecutive: 2, action: s("back_off"), back_off_s: Some(30), until: Some(s("2026-11-30T05:00:30.000Z")) },
             r#""event":"transient_error_detected","round_num":3,"kind":"rate_limit","hook":"gemini_error_detector","message":"429","reset_at":null,"consecutive":2,"action":"back_off","back_off_s":30,"until":"2026-11-30T05:00:30.000Z""#),
            (Event::TransientErrorBackoffCapped { round_num: 9, kind: s("network"), requested_s: 3072, applied_s: 1800, cap_s: 1800, consecutive: 11 },
             r#""event":"transient_error_backoff_capped","round_num":9,"kind":"network","requested_s":3072,"applied_s":1800,"cap_s":1800,"consecutive":11"#),
            (Event::TransientErrorRecovered { round_num: 4, kind: s("usage_limit"), consecutive: 1, episode_s: 125 },
             r#""event":"transient_error_recovered","round_num":4,"kind":"usage_limit","consecutive":1,"episode_s":125"#),
            (Event::AgentNetworkBlip { round_num: 3, hook: s("codex_error_detector"), message: s("dns"), consecutive: 1 },
             r#""event":"agent_network_blip","round_num":3,"hook":"codex_error_detector","message":"dns","consecutive":1"#),
            (Event::PluginSpawnOverrideIgnored { hook: s("gate"), action: s("skip"), round_num: 4, reason: s("hook not listed in [plugins] spawn_override_allow") },
             r#""event":"plugin_spawn_override_ignored","hook":"gate","action":"skip","round_num":4,"reason":"hook not listed in [plugins] spawn_override_allow""#),
            (Event::PluginSpawnDecision { hook: s("gate"), action: s("defer"), defer_s: 30, reason: s("later"), round_num: 4 },
             r#""event":"plugin_spawn_decision","hook":"gate","action":"defer","defer_s":30,"reason":"later","round_num":4"#),
            (Event::DirtyBeforeRound { round_num: 4, files: vec![s("b")], file_count: 1, reason: s("operator") },
             r#""event":"dirty_before_round","round_num":4,"files":["b"],"file_count":1,"reason":"operator""#),
            (Event::DirtyDetected { round_num: 4, files: vec![s("a")], file_count: 1, changed_preexisting: vec![], left_to_operator: 1, branch: Some(s("agent/x")) },
             r#""event":"dirty_detected","round_num":4,"files":["a"],"file_count":1,"changed_preexisting":[],"left_to_operator":1,"branch":"agent/x""#),
            (Event::DirtyIgnored { round_num: 4, hook: s("builtin") },
             r#""event":"dirty_ignored","round_num":4,"hook":"builtin""#),
            (Event::DirtyAutoCommitted { round_num: 4, hook: s("wip"), sha: s("abc"), files: vec![s("a")], subject: s("wip"), branch: Some(s("main")) },
             r#""event":"dirty_auto_committed","round_num":4,"hook":"wip","sha":"abc","files":["a"],"subject":"wip","branch":"main""#),
            (Event::DirtyCommitDetachedHead { round_num: 4, hook: s("wip"), sha: s("abc"), what_to_do: s("w") },
             r#""event":"dirty_commit_detached_head","round_num":4,"hook":"wip","sha":"abc","what_to_do":"w""#),
            (Event::DirtySubmoduleSkipped { round_num: 4, path: s("vendor/lib"), reason: s("r"), what_to_do: s("w") },
             r#""event":"dirty_submodule_skipped","round_num":4,"path":"vendor/lib","reason":"r","what_to_do":"w""#),
            (Event::DirtyCommitHooksSkipped { round_num: 4, hook: s("wip"), sha: s("abc"), hooks_dir: PathBuf::from("/p/.husky"), hooks: vec![s("pre-commit")] },
             r#""event":"dirty_commit_hooks_skipped","round_num":4,"hook":"wip","sha":"abc","hooks_dir":"/p/.husky","hooks":["pre-commit"]"#),
            (Event::DirtyCommitFailed { round_num: 4, hook: s("wip"), error: s("e"), tree: s("left as it was") },
             r#""event":"dirty_commit_failed","round_num":4,"hook":"wip","error":"e","tree":"left as it was""#),
            (Event::OrphanIdempotentSkip { round_num: 4, hook: s("b"), stash_ref: s("abc"), reason: s("recent") },
             r#""event":"orphan_idempotent_skip","round_num":4,"hook":"b","ref":"abc","reason":"recent""#),
            (Event::OrphanStashed { round_num: 4, hook: s("b"), stash_ref: s("abc"), message: s("ORPHAN R4 ts=t"), reason: s("why"), branch: None },
             r#""event":"orphan_stashed","round_num":4,"hook":"b","ref":"abc","message":"ORPHAN R4 ts=t","reason":"why","branch":null"#),
            (Event::DirtyFilterNotRun { round_num: 4, filter: s("lfs"), files: vec![s("a.bin")], file_count: 1, what_to_do: s("w") },
             r#""event":"dirty_filter_not_run","round_num":4,"filter":"lfs","files":["a.bin"],"file_count":1,"what_to_do":"w""#),
            (Event::OrphanStashDropped { round_num: 5, stash_ref: s("abc"), stashed_round: 4, message: s("ORPHAN R4 ts=t"), file_count: 1, files: vec![s("a")], recoverable: true, what_to_do: s("w") },
             r#""event":"orphan_stash_dropped","round_num":5,"ref":"abc","stashed_round":4,"message":"ORPHAN R4 ts=t","file_count":1,"files":["a"],"recoverable":true,"what_to_do":"w""#),
            (Event::OrphanStashFailed { round_num: 4, hook: s("b"), error: s("e"), tree: s("t"), what_to_do: None },
             r#""event":"orphan_stash_failed","round_num":4,"hook":"b","error":"e","tree":"t""#),
            (Event::GitOperationInProgress { round_num: 4, operation: s("rebase"), marker: PathBuf::from("/p/.git/rebase-merge"), file_count: 2, what_to_do: s("w") },
             r#""event":"git_operation_in_progress","round_num":4,"operation":"rebase","marker":"/p/.git/rebase-merge","file_count":2,"what_to_do":"w""#),
            (Event::PluginRefused { name: s("h"), reason: s("r") },
             r#""event":"plugin_refused","name":"h","reason":"r""#),
            (Event::PluginRedeclarationIgnored { name: s("h"), changed: vec![s("event_kinds")], detail: s("event_kinds: [a] then [b]") },
             r#""event":"plugin_redeclaration_ignored","name":"h","changed":["event_kinds"],"detail":"event_kinds: [a] then [b]""#),
            (Event::PluginChecksumMismatch { name: s("h"), expected: s("sha256:aa"), actual: s("sha256:bb"), path: PathBuf::from("/h") },
             r#""event":"plugin_checksum_mismatch","name":"h","expected":"sha256:aa","actual":"sha256:bb","path":"/h""#),
            (Event::PluginBuiltinNameSquat { name: s("builtin"), module_path: PathBuf::from("/h"), host: s("h") },
             r#""event":"plugin_builtin_name_squat","name":"builtin","module_path":"/h","host":"h""#),
            (Event::PluginSandboxKill { hook: s("gate"), host: s("h"), signal: Some(31), syscall: None },
             r#""event":"plugin_sandbox_kill","hook":"gate","host":"h","signal":31,"syscall":null"#),
            (Event::HookFailed { hook_name: s("gate"), hook_kind: s("spawn_hook"), host: s("h"), error_type: s("timeout"), error_message: s("m"), stderr_tail: vec![] },
             r#""event":"hook_failed","hook_name":"gate","hook_kind":"spawn_hook","host":"h","error_type":"timeout","error_message":"m""#),
            (Event::HookFailed { hook_name: s("h"), hook_kind: s("initialize"), host: s("h"), error_type: s("crashed"), error_message: s("m"), stderr_tail: vec![s("openssl.cnf: Permission denied")] },
             r#""event":"hook_failed","hook_name":"h","hook_kind":"initialize","host":"h","error_type":"crashed","error_message":"m","stderr_tail":["openssl.cnf: Permission denied"]"#),
            (Event::PluginWriteLimit { host: s("h"), dir: s("state"), path: PathBuf::from("/s"), used_bytes: 3, limit_bytes: 2 },
             r#""event":"plugin_write_limit","host":"h","dir":"state","path":"/s","used_bytes":3,"limit_bytes":2"#),
            (Event::PluginDisabled { name: s("h"), consecutive_failures: 5, reason: s("r") },
             r#""event":"plugin_disabled","name":"h","consecutive_failures":5,"reason":"r""#),
        ]
    }

    #[test]
    fn every_kind_keeps_its_bytes_and_reads_back() {
        let ts = "2026-11-29T16:43:55.711Z";
        for (event, fields) in vocabulary() {
            let line = String::from_utf8(line_bytes(ts, &event).unwrap()).unwrap();
            assert_eq!(line, format!("{{\"ts\":\"{ts}\",{fields}}}"));
            let read = Recorded::from_line(serde_json::from_str(&line).unwrap()).unwrap();
            assert_eq!(read.event.as_ref(), Some(&event), "{line}");
            assert_eq!(read.to_string(), line);
        }
    }

    #[test]
    fn builtin_kinds_are_the_variants() {
        let mut kinds: Vec<String> = vocabulary()
            .iter()
            .map(|(e, _)| {
                serde_json::to_value(e).unwrap()["event"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        kinds.sort();
        kinds.dedup();
        let mut listed: Vec<&str> = BUILTIN_KINDS.to_vec();
        listed.sort_unstable();
        assert_eq!(kinds, listed);
    }

    #[test]
    fn month_files_show_in_log_dir_as_links_made_again_when_missing() {
        let dir = tempfile::tempdir().unwrap();
        let (state, logs) = (dir.path().join("state"), dir.path().join("logs"));
        let log = EventLog::new(&state).linked_in(HeldDir::resolve(&logs));
        log.emit_host_event("h.one", serde_json::Map::new());
        let month = std::fs::read_dir(&state).unwrap().next().unwrap().unwrap();
        let link = logs.join(month.file_name());
        assert_eq!(std::fs::read_link(&link).unwrap(), month.path());
        std::fs::remove_dir_all(&logs).unwrap();
        log.emit_host_event("h.two", serde_json::Map::new());
        let text = std::fs::read_to_string(&link).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        // Something else at the link's name is left alone.
        std::fs::remove_file(&link).unwrap();
        std::fs::write(&link, "mine\n").unwrap();
        log.emit_host_event("h.three", serde_json::Map::new());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "mine\n");
        assert_eq!(
            std::fs::read_to_string(month.path())
                .unwrap()
                .lines()
                .count(),
            3
        );
    }

    #[test]
    fn host_events_are_whole_lines_with_their_own_kind() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::new(dir.path());
        let fields = json!({"host": "h", "hook": "d", "n": 1});
        log.emit_host_event("h.stalled", fields.as_object().unwrap().clone());
        let file = std::fs::read_dir(dir.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let text = std::fs::read_to_string(file).unwrap();
        let line: Value = serde_json::from_str(text.strip_suffix('\n').unwrap()).unwrap();
        assert_eq!(line["event"], "h.stalled");
        assert_eq!(line["n"], 1);
        assert!(text.starts_with("{\"ts\":"), "{text}");
        assert_eq!(Recorded::from_line(line).unwrap().event, None);
    }

    #[test]
    fn unknown_kinds_are_kept_raw() {
        let line = json!({"ts": "2026-11-29T16:43:55.711Z", "event": "from_the_future", "x": [1]});
        let read = Recorded::from_line(line.clone()).unwrap();
        assert_eq!(read.event, None);
        assert_eq!(read.kind(), "from_the_future");
        assert_eq!(serde_json::to_value(&read).unwrap(), line);
        // A known kind with a field it does not expect keeps that field in the line.
        let newer = json!({"ts": "t", "event": "round_error", "error": "e", "added": 1});
        let read = Recorded::from_line(newer.clone()).unwrap();
        assert_eq!(read.event, Some(Event::RoundError { error: "e".into() }));
        assert_eq!(read.line, newer);
        assert!(Recorded::from_line(json!({"event": 1})).is_none());
    }

    #[test]
    fn writes_whole_lines_with_ts_and_kind_first() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::new(&dir.path().join("logs"));
        log.emit(Event::RoundStart {
            round_num: 1,
            phase: None,
            config_digest: None,
            config_changed: None,
            config_prompt_files: None,
            config_check_names: None,
            config_vcs_dirty_action: None,
            config_prompt_delivery: None,
        });
        log.emit(Event::RoundEnd(RoundEnd::NotStarted {
            round_num: 1,
            outcome: RoundOutcome::SpawnFailed,
        }));
        let files: Vec<_> = std::fs::read_dir(dir.path().join("logs"))
            .unwrap()
            .collect();
        assert_eq!(files.len(), 1);
        let text = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event"], "round_start");
        assert_eq!(lines[1]["round_num"], 1);
        let ts = lines[0]["ts"].as_str().unwrap();
        assert!(ts.ends_with('Z') && ts.len() == 24, "{ts}");
        assert!(text.starts_with("{\"ts\":"), "{text}");
    }
}
