//! The human form of a `peek` document: a short summary, coloured only when asked
//! ([`use_colour`]: stdout is a terminal and `NO_COLOR` is unset or empty).

use serde_json::Value;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::Duration;

/// Whether to colour output: stdout is a terminal and `NO_COLOR` (no-color.org) is unset
/// or empty.
pub(crate) fn use_colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

struct Paint(bool);

impl Paint {
    fn wrap(&self, code: &str, text: &str) -> String {
        if self.0 && !text.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    fn bold(&self, t: &str) -> String {
        self.wrap("1", t)
    }
    fn good(&self, t: &str) -> String {
        self.wrap("32", t)
    }
    fn bad(&self, t: &str) -> String {
        self.wrap("31", t)
    }
    fn warn(&self, t: &str) -> String {
        self.wrap("33", t)
    }
    fn dim(&self, t: &str) -> String {
        self.wrap("2", t)
    }
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("-")
}

/// `1h 2m`, `3m 4s`, `5.2s`.
fn age(seconds: f64) -> String {
    let d = Duration::from_secs_f64(seconds.max(0.0));
    let secs = d.as_secs();
    if secs >= 3600 {
        format!("{}h {}m", secs / 3600, secs % 3600 / 60)
    } else if secs >= 60 {
        format!("{}m {}s", secs / 60, secs % 60)
    } else {
        format!("{seconds:.1}s")
    }
}

/// Renders `doc` (a [`crate::operator::peek::snapshot`] document); `events` adds the recent events.
/// Every string of `doc` is made printable first (agent_runner_protocol::printable): hosts'
/// error messages, reasons and event fields cannot drive the terminal; the colour codes
/// are added after.
pub(crate) fn render(doc: &Value, colour: bool, events: bool) -> String {
    let doc = &agent_runner_protocol::printable::printable_value(doc);
    let p = Paint(colour);
    let mut out = String::new();
    header(&mut out, &p, doc);
    service(&mut out, &p, &doc["service"]);
    schedule(&mut out, &p, &doc["schedule"]);
    budget(&mut out, &p, &doc["budget"]);
    current_round(&mut out, doc);
    recent_rounds(&mut out, &p, doc);
    orphan(&mut out, &doc["orphan"]);
    git_operation(&mut out, &p, &doc["git_operation"]);
    sandbox(&mut out, &p, &doc["plugins"]["sandbox"]);
    agent_sandbox(&mut out, &p, &doc["agent_sandbox"]);
    hosts(&mut out, &p, doc);
    hook_failures(&mut out, &p, doc);
    if let Some(round) = doc.get("round").filter(|r| r.is_object()) {
        asked_round(&mut out, round);
    }
    if events {
        recent_events(&mut out, &p, doc);
    }
    out
}

/// The first line: the project and its config file.
fn header(out: &mut String, p: &Paint, doc: &Value) {
    let _ = writeln!(
        out,
        "{} {}",
        p.bold(s(&doc["project"])),
        p.dim(s(&doc["config"]))
    );
}

/// `service`: whether the supervisor runs (pid, uptime) and its unit file.
fn service(out: &mut String, p: &Paint, svc: &Value) {
    let service = if svc["active"] == true {
        let mut line = p.good(&format!("{} (pid {})", s(&svc["state"]), svc["pid"]));
        if let Some(up) = svc["uptime_s"].as_f64() {
            let _ = write!(line, ", up {}", age(up));
        }
        line
    } else if svc["stale"] == true {
        p.bad("not running (its last service.json says otherwise: it died without a clean stop)")
    } else {
        p.warn("not running")
    };
    let managed = svc["mode"] == "systemd_user" || svc["system_managed"] == true;
    let unit = svc["unit_file"]
        .as_str()
        .map(|u| {
            if managed {
                format!(" [{} {u}]", s(&svc["mode"]))
            } else {
                format!(" [unit {u} installed, but systemd is not running here: not managed]")
            }
        })
        .unwrap_or_default();
    let _ = writeln!(out, "service   {service}{}", p.dim(&unit));
}

/// `round`: the round running now (for how long, in which phase), or the last one.
fn current_round(out: &mut String, doc: &Value) {
    let cur = &doc["current_round"];
    let round_line = if cur.is_object() {
        let phase = cur["phase"]
            .as_str()
            .map(|ph| format!(", phase {ph}"))
            .unwrap_or_default();
        format!(
            "R{} running for {}{phase}",
            cur["round_num"],
            age(cur["duration_so_far_s"].as_f64().unwrap_or(0.0))
        )
    } else {
        match doc["status"]["round_num"].as_u64() {
            Some(0) | None => "none yet".to_owned(),
            Some(n) => format!("none running; the last round was R{n}"),
        }
    };
    let _ = writeln!(out, "round     {round_line}");
}

/// `rounds`: the last five rounds, newest first, with exit, duration and dirty outcome.
fn recent_rounds(out: &mut String, p: &Paint, doc: &Value) {
    let rounds = doc["recent_rounds"].as_array().cloned().unwrap_or_default();
    if rounds.is_empty() {
        return;
    }
    let _ = writeln!(out, "rounds");
    for r in rounds.iter().rev().take(5) {
        let exit = match (r["exit_code"].as_i64(), r["exit_cause"].as_str()) {
            (Some(0), _) => p.good("exit 0"),
            (Some(code), _) => p.bad(&format!("exit {code}")),
            (None, Some(cause)) => p.bad(cause),
            (None, None) => p.warn("interrupted"),
        };
        let dur = r["duration_s"]
            .as_f64()
            .map(age)
            .unwrap_or_else(|| "-".into());
        let dirty = r["dirty_outcome"]
            .as_str()
            .map(|d| format!(" dirty: {d}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  R{:<5} {exit:<8} {dur:>8}  {}{dirty}",
            r["round_num"],
            p.dim(s(&r["started_at"]))
        );
        sandbox_denied(out, p, &r["sandbox_denied"]);
        egress_refused(out, p, &r["egress_refused"]);
        watched(out, p, r);
    }
}

/// Under a round: what changed in its repository (and what was set aside), the exec
/// surface it changed and the git config keys reverted after it
/// (docs/security.md, "What runs later: the watched tier"), its agent session started
/// afresh and the links its CLI home's prune refused, a line each.
fn watched(out: &mut String, p: &Paint, round: &Value) {
    if let Some(changed) = round["repository_changed"]["changed"].as_str() {
        let _ = writeln!(
            out,
            "          {} {changed} (nothing stashed or committed)",
            p.warn("repository changed:")
        );
        for aside in round["repository_changed"]["set_aside"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let _ = writeln!(out, "            {}", s(aside));
        }
    }
    let paths: Vec<&str> = round["exec_surface_changed"]
        .as_array()
        .into_iter()
        .flatten()
        .map(s)
        .collect();
    if !paths.is_empty() {
        let _ = writeln!(
            out,
            "          {} {}",
            p.warn("exec surface changed:"),
            paths.join(", ")
        );
    }
    let unhidden: Vec<&str> = round["index_flags_cleared"]
        .as_array()
        .into_iter()
        .flatten()
        .map(s)
        .collect();
    if !unhidden.is_empty() {
        let _ = writeln!(
            out,
            "          {} {}",
            p.warn("index flags cleared (the file was hidden from git status):"),
            unhidden.join(", ")
        );
    }
    let keys: Vec<String> = round["git_config_reverted"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|k| match k["error"].as_str() {
            Some(error) => format!(
                "{} {} (NOT reverted: {error})",
                s(&k["scope"]),
                s(&k["key"])
            ),
            None => format!("{} {} ({})", s(&k["scope"]), s(&k["key"]), s(&k["action"])),
        })
        .collect();
    if !keys.is_empty() {
        let _ = writeln!(
            out,
            "          {} {}",
            p.warn("git config reverted:"),
            keys.join(", ")
        );
    }
    let renewed = &round["session_renewed"];
    if renewed.is_object() {
        let _ = writeln!(
            out,
            "          session renewed ({}): the old one ran {} rounds, {} tokens, {} s",
            s(&renewed["reason"]),
            renewed["rounds"],
            renewed["tokens"],
            renewed["age_s"]
        );
    }
    let refused: Vec<&str> = round["agent_home_refused"]
        .as_array()
        .into_iter()
        .flatten()
        .map(s)
        .collect();
    if !refused.is_empty() {
        let _ = writeln!(
            out,
            "          {} {}",
            p.warn("links in the agent's CLI home refused (not followed):"),
            refused.join(", ")
        );
    }
}

/// Under a round: each connect its agent's sandbox refused, a line each with its fix.
fn egress_refused(out: &mut String, p: &Paint, refused: &Value) {
    for r in refused.as_array().into_iter().flatten() {
        let times = match r["count"].as_u64() {
            Some(n) if n > 1 => format!(" (×{n})"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "          {} {}{times}",
            p.warn("refused:"),
            s(&r["message"])
        );
    }
}

/// Under a round: what its agent's sandbox refused, one line, the most frequent first.
fn sandbox_denied(out: &mut String, p: &Paint, denied: &Value) {
    let denied = denied.as_array().cloned().unwrap_or_default();
    if denied.is_empty() {
        return;
    }
    let mut parts: Vec<String> = denied
        .iter()
        .map(|d| {
            format!(
                "{} {} {} ×{}",
                s(&d["layer"]),
                s(&d["access"]),
                s(&d["target"]),
                d["count"]
            )
        })
        .collect();
    if let Some(kinds) = denied.last().and_then(|d| d["dropped_kinds"].as_u64()) {
        parts.push(format!(
            "and {kinds} more ({} denials)",
            denied
                .last()
                .map(|d| d["dropped_count"].clone())
                .unwrap_or_default()
        ));
    }
    let _ = writeln!(out, "          {} {}", p.warn("denied:"), parts.join(", "));
}

/// `orphan`: the stash left by an interrupted round, if any.
fn orphan(out: &mut String, orphan: &Value) {
    let orphan_line = if orphan.is_object() {
        format!(
            "stash {} from R{} at {}",
            s(&orphan["sha"]).chars().take(12).collect::<String>(),
            orphan["round_num"],
            s(&orphan["ts"])
        )
    } else {
        "none".to_owned()
    };
    let _ = writeln!(out, "orphan    {orphan_line}");
}

/// `git` (only while a git operation is under way): which, and what to do.
fn git_operation(out: &mut String, p: &Paint, op: &Value) {
    if op.is_object() {
        let _ = writeln!(
            out,
            "git       {}: {}",
            p.warn(&format!(
                "a {} is in progress ({})",
                s(&op["operation"]),
                s(&op["marker"])
            )),
            s(&op["what_to_do"])
        );
    }
}

/// `schedule` (only when one is set): paused until when and in which window, or open until
/// when.
fn schedule(out: &mut String, p: &Paint, schedule: &Value) {
    if !schedule.is_object() {
        return;
    }
    let when = |key: &str, none: &str| {
        schedule[key]
            .as_str()
            .filter(|t| !t.is_empty())
            .unwrap_or(none)
            .to_owned()
    };
    let line = if schedule["paused"] == true {
        p.warn(&format!(
            "paused until {} ({})",
            when("resume_at", "no opening within 8 days"),
            s(&schedule["active_window"])
        ))
    } else {
        p.good(&format!("open until {}", when("next_end", "beyond 8 days")))
    };
    let _ = writeln!(out, "schedule  {line} {}", p.dim(s(&schedule["timezone"])));
}

/// `budget` (only when a cap is set): each cap against its spend, and the state.
fn budget(out: &mut String, p: &Paint, budget: &Value) {
    if !budget.is_object() {
        return;
    }
    let amount = |scope: &str, v: &Value| {
        let v = v.as_f64().unwrap_or(0.0);
        if scope.ends_with("usd") {
            format!("${v:.2}")
        } else {
            format!("{v:.0} tokens")
        }
    };
    let caps: Vec<String> = budget["caps"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let scope = s(&c["scope"]);
            format!(
                "{scope} {} of {}",
                amount(scope, &c["spent"]),
                amount(scope, &c["cap"])
            )
        })
        .collect();
    let state = match s(&budget["state"]) {
        "run" => p.good("within"),
        other => p.warn(other),
    };
    let mut line = format!("budget    {state}: {}", caps.join(", "));
    if let Some(round) = budget["round_usd"].as_f64() {
        match budget["last_round_usd"].as_f64() {
            Some(last) => line.push_str(&format!(", round_usd ${last:.2} of ${round:.2}")),
            None => line.push_str(&format!(", round_usd ${round:.2}")),
        }
    }
    let unpriced = budget["unpriced_rounds"].as_u64().unwrap_or(0);
    if unpriced > 0 {
        line.push_str(&format!(
            " ({unpriced} rounds of an unpriced model at the highest price)"
        ));
    }
    let _ = writeln!(out, "{line} {}", p.dim(s(&budget["timezone"])));
}

/// `sandbox`: the requested and achieved confinement tier, and what the kernel offers.
fn sandbox(out: &mut String, p: &Paint, sb: &Value) {
    let tier = s(&sb["achieved_tier"]);
    let tier = if tier == "landlock+seccomp" {
        p.good(tier)
    } else {
        p.warn(tier)
    };
    let reason = sb["unconfined_reason"]
        .as_str()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "sandbox   requested {} -> {tier}, kernel offers {}{reason}",
        s(&sb["requested"]),
        s(&sb["available_tier"])
    );
}

/// `agent_sandbox`: the agent's own confinement, and each layer that is off with why.
fn agent_sandbox(out: &mut String, p: &Paint, sb: &Value) {
    if sb.is_null() {
        return;
    }
    let tier = s(&sb["achieved_tier"]);
    let tier = if tier == "landlock+seccomp" {
        p.good(tier)
    } else {
        p.warn(tier)
    };
    let off: Vec<String> = sb["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["on"] == Value::Bool(false))
        .map(|l| format!("{} off: {}", s(&l["name"]), s(&l["detail"])))
        .collect();
    let refused = sb["refused"]
        .as_str()
        .map(|r| format!(" ({})", p.warn(r)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "agent box requested {} -> {tier}{refused}",
        s(&sb["requested"])
    );
    for line in off {
        let _ = writeln!(out, "          {}", p.dim(&line));
    }
    if let Some(replaced) = sb["own_sandbox_replaced"].as_str() {
        let _ = writeln!(out, "          {}", p.dim(replaced));
    }
}

/// `hosts`: one line per host (state, pid, pin, calls), then its last error and read paths.
fn hosts(out: &mut String, p: &Paint, doc: &Value) {
    let hosts = doc["hosts"].as_array().cloned().unwrap_or_default();
    if hosts.is_empty() {
        return;
    }
    let _ = writeln!(out, "hosts");
    for h in &hosts {
        let state = s(&h["state"]);
        let state = match state {
            "running" => p.good(state),
            "stopped" => p.dim(state),
            _ => p.warn(state),
        };
        let pin = s(&h["pin_status"]);
        let pin = if pin == "verified" {
            p.good(pin)
        } else {
            p.bad(pin)
        };
        let pid = h["pid"]
            .as_u64()
            .map(|p| format!(" pid {p}"))
            .unwrap_or_default();
        let p50 = h["call_latency_p50_ms"]
            .as_f64()
            .map(|ms| format!(" p50 {ms} ms"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:<16} {state}{pid}  pin {pin}  calls {} failures {}{p50}",
            s(&h["name"]),
            h["calls"],
            h["failures"]
        );
        if let Some(err) = h["last_error"].as_str() {
            let _ = writeln!(out, "  {:<16} last error: {}", "", p.bad(err));
        }
        for path in h["read_paths"].as_array().into_iter().flatten() {
            let _ = writeln!(out, "  {:<16} reads {} (read_paths)", "", s(path));
        }
    }
}

/// `hook failures`: the last five, newest first.
fn hook_failures(out: &mut String, p: &Paint, doc: &Value) {
    let failures = doc["recent_hook_failures"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if failures.is_empty() {
        return;
    }
    let _ = writeln!(out, "hook failures");
    for f in failures.iter().rev().take(5) {
        let _ = writeln!(
            out,
            "  {} {} {}: {}",
            p.dim(s(&f["ts"])),
            s(&f["hook_name"]),
            p.bad(s(&f["error_type"])),
            s(&f["error_message"])
        );
    }
}

/// The round asked for (`peek --round N`): its exit, cause, log path and the log's last
/// ten lines.
fn asked_round(out: &mut String, round: &Value) {
    let _ = writeln!(
        out,
        "round R{}: exit {} cause {} log {}",
        round["round_num"],
        round["exit_code"],
        s(&round["exit_cause"]),
        s(&round["log_path"])
    );
    if let Some(tail) = round["log_tail"].as_str() {
        for line in tail
            .lines()
            .rev()
            .take(10)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            let _ = writeln!(out, "  | {line}");
        }
    }
}

/// `events`: the recent events, one line each (time, kind, the other fields as JSON).
fn recent_events(out: &mut String, p: &Paint, doc: &Value) {
    let _ = writeln!(out, "events");
    for e in doc["recent_events"].as_array().into_iter().flatten() {
        let mut fields = e.as_object().cloned().unwrap_or_default();
        let ts = fields.remove("ts").unwrap_or(Value::Null);
        let kind = fields.remove("event").unwrap_or(Value::Null);
        let _ = writeln!(
            out,
            "  {} {} {}",
            p.dim(s(&ts)),
            p.bold(s(&kind)),
            Value::Object(fields)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_text_without_colour() {
        let doc = json!({
            "project": "demo", "config": "/p/agent-runner.toml",
            "service": {"active": false, "stale": false},
            "current_round": null, "status": {"round_num": 3},
            "recent_rounds": [{"round_num": 3, "exit_code": 1, "duration_s": 2.5, "started_at": "t",
                "sandbox_denied": [{"layer": "egress", "target": "evil.example:443", "access": "connect", "count": 3, "dropped_kinds": 2, "dropped_count": 5}],
                "exec_surface_changed": [".github/workflows/ci.yml"],
                "index_flags_cleared": [".vscode/tasks.json"],
                "git_config_reverted": [{"key": "core.fsmonitor", "scope": "local", "file": "/p/.git/config", "action": "removed", "error": null}],
                "repository_changed": {"changed": "/p/.git/commondir was missing at boot, is a file now", "set_aside": ["/p/.git/commondir set aside as /p/.git/commondir.agent-runner-set-aside-1-2"]},
                "session_renewed": {"reason": "max_rounds", "old_session_id": "a", "rounds": 50, "tokens": 1200, "age_s": 600},
                "agent_home_refused": [".claude/telemetry"]}],
            "orphan": null, "plugins": {"sandbox": {"requested": "prefer", "achieved_tier": "landlock+seccomp"}},
            "hosts": [], "recent_hook_failures": [], "recent_events": [{"ts": "t", "event": "round_end", "round_num": 3}],
            "schedule": {"paused": true, "resume_at": "2026-12-07T08:00:00Z", "active_window": "outside run_windows", "timezone": "UTC"},
        });
        let text = render(&doc, false, true);
        assert!(!text.contains('\x1b'), "{text}");
        assert!(text.contains("not running"), "{text}");
        assert!(text.contains("R3") && text.contains("exit 1"), "{text}");
        assert!(text.contains("round_end"), "{text}");
        assert!(
            text.contains("denied: egress connect evil.example:443 ×3, and 2 more (5 denials)"),
            "{text}"
        );
        assert!(
            text.contains("exec surface changed: .github/workflows/ci.yml"),
            "{text}"
        );
        assert!(
            text.contains(
                "index flags cleared (the file was hidden from git status): .vscode/tasks.json"
            ),
            "{text}"
        );
        assert!(
            text.contains("git config reverted: local core.fsmonitor (removed)"),
            "{text}"
        );
        assert!(
            text.contains("repository changed: /p/.git/commondir was missing at boot, is a file now (nothing stashed or committed)\n            /p/.git/commondir set aside as"),
            "{text}"
        );
        assert!(
            text.contains(
                "session renewed (max_rounds): the old one ran 50 rounds, 1200 tokens, 600 s"
            ),
            "{text}"
        );
        assert!(
            text.contains("refused (not followed): .claude/telemetry"),
            "{text}"
        );
        assert!(
            text.contains("schedule  paused until 2026-12-07T08:00:00Z (outside run_windows) UTC"),
            "{text}"
        );
        assert!(render(&doc, true, false).contains("\x1b[31m"));
    }
}
