//! The `format = "chat"` body of a notification (docs/operations.md, "Notifications"): a
//! Slack-compatible `{"text": "…"}` holding one sentence for a person — which project, on
//! which machine, what happened and what it says. Text that came from the agent or a host
//! (a hook's message, a log line) is capped and has `&`, `<` and `>` escaped as Slack asks,
//! so it cannot make a mention (`<!channel>`) or a link.

use crate::record::events::Event;

/// The most characters of a sentence; longer ones end with `…`.
const MAX_CHARS: usize = 600;

/// `{"text": "agent-runner (<whence>): <sentence>"}` as JSON bytes.
pub(crate) fn chat_body(whence: &str, event: &Event) -> Vec<u8> {
    let text = format!("agent-runner ({whence}): {}", sentence(event));
    let text = escape(&cap(&text));
    serde_json::to_vec(&serde_json::json!({ "text": text })).unwrap_or_default()
}

/// What happened, in words.
pub(crate) fn sentence(event: &Event) -> String {
    let rounds = |n: u64| match n {
        1 => "1 round".to_owned(),
        n => format!("{n} rounds"),
    };
    match event {
        Event::ServeStopping {
            reason,
            rounds_completed,
            message,
            ..
        } => {
            let mut s = format!("serve stopped ({reason}) after {}", rounds(*rounds_completed));
            if let Some(m) = message {
                s.push_str(&format!(": {m}"));
            }
            s
        }
        Event::StopFileDetected {
            path,
            rounds_completed,
            ..
        } => format!(
            "serve stopped: the stop file {} appeared, after {}",
            path.display(),
            rounds(*rounds_completed)
        ),
        Event::AgentSelfTerminated {
            reason,
            rounds_completed,
        } => format!(
            "serve stopped: the agent said it is done ({reason}), after {}",
            rounds(*rounds_completed)
        ),
        Event::StalledNoProgress {
            consecutive_rounds,
            rounds_completed,
            ..
        } => format!(
            "serve stopped: {consecutive_rounds} fast rounds in a row did nothing, after {}",
            rounds(*rounds_completed)
        ),
        Event::CrashLoop {
            consecutive_failures,
            reason,
            ..
        } => format!(
            "serve stopped: crash loop, {consecutive_failures} failed rounds in a row; the last: {reason}"
        ),
        Event::MemLoop {
            consecutive,
            reason,
            ..
        } => format!(
            "serve stopped: {consecutive} rounds in a row ended by memory (restarted by the unit); the last: {reason}"
        ),
        Event::MemLoopPersistent {
            consecutive,
            window_s,
            ..
        } => format!(
            "serve stopped for good: {consecutive} memory loops within {window_s} s; the unit does not restart it"
        ),
        Event::EnvironmentUnusable { stage, error, .. } => {
            format!("serve stopped: the state or log dir cannot be used ({stage}): {error}")
        }
        Event::MaxRoundsReached {
            rounds_completed, ..
        } => format!("serve stopped: max_rounds reached, {}", rounds(*rounds_completed)),
        Event::MaxDurationReached {
            max_duration_s,
            rounds_completed,
            ..
        } => format!(
            "serve stopped: max_duration_s ({max_duration_s} s) reached, after {}",
            rounds(*rounds_completed)
        ),
        Event::AgentAuthErrorDetected {
            round_num,
            message,
            hint,
            auto_stop,
            ..
        } => {
            let mut s = format!("a login is needed (round {round_num}): {message}");
            if let Some(h) = hint {
                s.push_str(&format!("; {h}"));
            }
            if *auto_stop {
                s.push_str("; serve stops");
            }
            s
        }
        Event::BudgetExhausted { scope, spent, cap } => format!(
            "serve stopped: the budget's {scope} is spent ({}); `agent-runner budget reset` or a higher cap starts it again",
            amounts(scope, *spent, *cap)
        ),
        Event::BudgetPaused {
            scope,
            spent,
            cap,
            until,
            ..
        } => format!(
            "rounds paused until {until}: the budget's {scope} is reached ({})",
            amounts(scope, *spent, *cap)
        ),
        Event::GoalReached {
            round_num, checks, ..
        } => format!(
            "serve stopped: the goal is reached after round {round_num} (checks: {})",
            checks.join(", ")
        ),
        other => {
            let kind = serde_json::to_value(other)
                .ok()
                .and_then(|v| v["event"].as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("{kind} (`agent-runner events --kind {kind}` shows it)")
        }
    }
}

/// `$1.20 of $1.00`, or `5000 of 4000 tokens`.
fn amounts(scope: &str, spent: f64, cap: f64) -> String {
    if scope.ends_with("usd") {
        format!("${spent:.2} of ${cap:.2}")
    } else {
        format!("{spent:.0} of {cap:.0} tokens")
    }
}

/// At most [`MAX_CHARS`] characters.
fn cap(text: &str) -> String {
    if text.chars().count() <= MAX_CHARS {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(MAX_CHARS - 1).collect();
    out.push('…');
    out
}

/// Slack's three control characters escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_body_is_one_escaped_sentence() {
        let event = Event::CrashLoop {
            consecutive_failures: 5,
            threshold: 5,
            rounds_completed: 5,
            reason: "round 5: exit 1 <!channel> & co".into(),
            last_lines: vec![],
        };
        let body: serde_json::Value = serde_json::from_slice(&chat_body("p on h", &event)).unwrap();
        let text = body["text"].as_str().unwrap();
        assert_eq!(
            text,
            "agent-runner (p on h): serve stopped: crash loop, 5 failed rounds in a row; the last: round 5: exit 1 &lt;!channel&gt; &amp; co"
        );
        assert_eq!(body.as_object().unwrap().len(), 1);
        let budget = Event::BudgetExhausted {
            scope: "total_usd".into(),
            spent: 1.2,
            cap: 1.0,
        };
        assert!(sentence(&budget).contains("$1.20 of $1.00"));
        let long = Event::RoundError {
            error: "x".repeat(2000),
        };
        assert!(sentence(&long).starts_with("round_error"));
        let stop = Event::ServeStopping {
            reason: "signal".into(),
            rounds_completed: 1,
            hook: None,
            message: Some("y".repeat(2000)),
        };
        let text = String::from_utf8(chat_body("p", &stop)).unwrap();
        assert!(text.chars().count() < MAX_CHARS + 20, "{}", text.len());
    }
}
