//! `monitor --mode narrate`: one sentence per event, for a human watching a terminal.
//! Kinds without a sentence of their own are printed as `<kind>: <fields>`. Control
//! characters in a sentence (a host's error message with escape sequences) print as U+FFFD.

use agent_runner_protocol::printable::printable;
use serde_json::Value;

use crate::record::events::{Event, Recorded, RoundEnd};

/// The sentence for `recorded`, prefixed with its local-free UTC time (`HH:MM:SS`).
pub(crate) fn sentence(recorded: &Recorded) -> String {
    let time = recorded
        .ts()
        .and_then(|ts| ts.get(11..19))
        .unwrap_or("--:--:--");
    let text = match &recorded.event {
        Some(Event::RoundStart {
            round_num, phase, ..
        }) => match phase {
            Some(p) => format!("round {round_num} starts (phase {p})"),
            None => format!("round {round_num} starts"),
        },
        Some(Event::AgentSpawn {
            round_num,
            timeout_s,
            ..
        }) => format!("round {round_num}: agent started, budget {timeout_s} s"),
        Some(Event::AgentExit {
            round_num,
            exit_code,
            duration_s,
            exit_cause,
            ..
        }) => format!(
            "round {round_num}: agent {exit_cause} after {duration_s:.1} s (exit code {})",
            exit_code.map_or("none".to_owned(), |c| c.to_string())
        ),
        Some(Event::RoundEnd(RoundEnd::Ran {
            round_num,
            dirty_outcome,
            ..
        })) => match dirty_outcome {
            Some(d) => format!("round {round_num} ends; dirty tree: {d}"),
            None => format!("round {round_num} ends"),
        },
        Some(Event::RoundDeferred {
            signal, message, ..
        }) => format!("next round deferred by {signal}: {message}"),
        Some(Event::RoundResumed { deferred_for_s }) => {
            format!("rounds resume after {deferred_for_s:.1} s")
        }
        Some(Event::RoundMemTerminated { message, .. }) => {
            format!("round ended by host pressure: {message}")
        }
        Some(Event::RoundOomKilled {
            round_num,
            agent,
            agent_killed,
            max_bytes,
            ..
        }) => format!(
            "round {round_num}: the kernel's OOM killer ended {}{}",
            if *agent_killed {
                format!("the agent {agent}")
            } else {
                format!("a process of the agent {agent}")
            },
            max_bytes.map_or(String::new(), |b| format!(" (round_max_mb {})", b >> 20))
        ),
        Some(Event::MonitorAlertEmitted {
            detector,
            severity,
            message,
            ..
        }) => format!("{severity} alert from {detector}: {message}"),
        Some(Event::HookFailed {
            hook_name,
            host,
            error_message,
            ..
        }) => format!("hook {hook_name} of host {host} failed: {error_message}"),
        _ => {
            let fields: Vec<String> = recorded
                .line
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| *k != "ts" && *k != "event")
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect();
            format!("{}: {}", recorded.kind(), fields.join(" "))
        }
    };
    // Hosts' words (error messages, reasons) are in `text`: nothing in it may drive the
    // terminal (agent_runner_protocol::printable).
    format!("{time} {}", printable(&text, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_and_unknown_kinds() {
        let start = Recorded::from_line(json!({"ts": "2026-11-29T16:43:55.711Z", "event": "round_start", "round_num": 4, "phase": null})).unwrap();
        assert_eq!(sentence(&start), "16:43:55 round 4 starts");
        let other = Recorded::from_line(
            json!({"ts": "2026-11-29T16:43:56.000Z", "event": "future_kind", "x": 1}),
        )
        .unwrap();
        assert_eq!(sentence(&other), "16:43:56 future_kind: x=1");
        let hostile = Recorded::from_line(json!({"ts": "2026-11-29T16:43:57.000Z", "event": "hook_failed", "hook_name": "h", "hook_kind": "spawn_hook", "host": "x", "error_type": "rpc_error", "error_message": "boom\u{1b}[2J\u{1b}]0;pwned\u{7}"})).unwrap();
        let line = sentence(&hostile);
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert!(
            line.ends_with("boom\u{fffd}[2J\u{fffd}]0;pwned\u{fffd}"),
            "{line:?}"
        );
        let oom = Recorded::from_line(json!({"ts": "2026-11-29T16:43:57.000Z", "event": "round_oom_killed", "round_num": 2, "agent": "claude", "agent_killed": true, "oom_kills": 1, "max_bytes": 33554432})).unwrap();
        assert_eq!(
            sentence(&oom),
            "16:43:57 round 2: the kernel's OOM killer ended the agent claude (round_max_mb 32)"
        );
    }
}
