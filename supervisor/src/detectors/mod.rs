//! The built-in post-round error detectors, one per preset CLI (docs/detectors.md).
//!
//! **Architecture invariant:** this code reads agent output, which is untrusted (a prompt
//! injection reaches it), so it never runs in the supervisor process. It runs only in the
//! built-in detector host ([`host::run`]): the supervisor's own executable started in a
//! hidden host mode by [`crate::hosts::builtin`], hashed and confined exactly like a
//! third-party host, answering `post_round/after_round`.
//!
//! A detector applies to a round when the basename of `ctx.agent_binary` is its CLI. It
//! reads the CLI's structured error records whatever the exit status, the last first,
//! unless the stream's final result record says the round succeeded (the CLI's own
//! retries worked); and the plain text of the log tail after any end but a clean exit (a
//! clean round that printed "rate limit" in passing is not a failed one), or whatever the
//! exit for a CLI that exits 0 after a failure (aider). Verdicts: `auth` → stop; usage limit, rate limit,
//! overload, network → back off until the reset time when one is printed, else for
//! [`default_back_off_s`]; token usage, when the CLI reports it, rides along.

pub(crate) mod classify;
pub(crate) mod dialects;
pub(crate) mod host;
pub(crate) mod reset;
pub(crate) mod watch;

use agent_runner_protocol::redact::redact_and_cap;
use agent_runner_protocol::{ErrorKind, PostRoundAction, PostRoundVerdict, RoundOutcome};
use jiff::tz::TimeZone;
use jiff::Timestamp;
use regex::Regex;

pub use dialects::{Dialect, DIALECTS};

/// The names of every built-in detector (reserved: no host may declare them).
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    DIALECTS.iter().map(|d| d.detector)
}

/// The names of every built-in output watch (reserved like the detectors' names).
pub(crate) fn watch_names() -> impl Iterator<Item = String> {
    DIALECTS
        .iter()
        .filter(|d| d.calls.is_some())
        .map(watch::watch_name)
}

/// What one detection looks at.
#[derive(Clone, Copy, Debug)]
pub struct Round<'a> {
    /// How the agent ended.
    pub outcome: &'a RoundOutcome,
    /// The basename of the agent's executable.
    pub agent_binary: &'a str,
    /// The log tail (protocol `log_tail`).
    pub tail: &'a str,
    /// Now (the clock is the caller's, so tests control it).
    pub now: Timestamp,
    /// The zone of clock times printed without one.
    pub local: &'a TimeZone,
    /// `[monitor] auth_fail_patterns`, compiled.
    pub auth_patterns: &'a [Regex],
}

/// Seconds to back off for `kind` when the CLI printed no reset time. The supervisor
/// waits at least this long and grows the wait exponentially on repeats
/// (docs/configuration.md `transient_error_action`).
pub(crate) fn default_back_off_s(kind: ErrorKind) -> u64 {
    match kind {
        ErrorKind::UsageLimit => 300,
        ErrorKind::RateLimit | ErrorKind::Overloaded => 30,
        _ => 10,
    }
}

/// Runs `dialect`'s detector on `round`: `None` when it does not apply or finds nothing.
pub fn detect(dialect: &Dialect, round: &Round) -> Option<PostRoundVerdict> {
    if round.agent_binary != dialect.binary {
        return None;
    }
    let records = dialects::records(dialect, round.tail);
    let usage = dialects::usage(dialect, &records, round.tail);
    // The stream's final word decides: a round whose last result is a success got through
    // the CLI's own retries, whatever error-shaped notices came before it.
    let succeeded = dialects::finale(dialect.finale, &records)
        .is_some_and(|r| dialects::error_text(r).is_none());
    // The last error record first: the final result carries the printed reset, the
    // retry notices before it do not.
    let structured: Vec<String> = if succeeded {
        Vec::new()
    } else {
        records
            .iter()
            .rev()
            .filter_map(dialects::error_text)
            .collect()
    };
    // Plain text after any end but a clean exit (a timed-out or killed round's tail
    // included), and whatever the exit for CLIs that exit 0 after printing a failure.
    let clean = round.outcome.exit_cause == "exited" && round.outcome.exit_code == Some(0);
    let mut texts: Vec<&str> = structured.iter().map(String::as_str).collect();
    let tail = dialects::without_noise(dialect, round.tail);
    if !succeeded && (!clean || dialect.text_whatever_exit) {
        texts.push(&tail);
    }
    let found = texts
        .iter()
        .find_map(|text| classify::classify(text, round.auth_patterns).map(|f| (f, *text)));
    let Some((found, text)) = found else {
        return usage.map(|usage| PostRoundVerdict {
            action: PostRoundAction::Continue,
            kind: None,
            message: String::new(),
            back_off_s: None,
            until: None,
            usage: Some(usage),
        });
    };
    // A match may span a line the CLI wrapped: the snippet is one line.
    let snippet = redact_and_cap(&found.line.split_whitespace().collect::<Vec<_>>().join(" "));
    let cli = dialect.binary;
    let mut verdict = PostRoundVerdict {
        action: PostRoundAction::BackOff,
        kind: Some(found.kind),
        message: String::new(),
        back_off_s: None,
        until: None,
        usage,
    };
    if found.kind == ErrorKind::Auth {
        verdict.action = PostRoundAction::Stop;
        verdict.message = format!("{cli}: login missing or expired: {snippet}");
        return Some(verdict);
    }
    match reset::find(text, round.now, round.local) {
        Some(reset::Reset::At(at)) => {
            verdict.until = Some(at.round(jiff::Unit::Second).unwrap_or(at).to_string());
            verdict.message = format!(
                "{cli}: {}: resets at {at:.0}: {snippet}",
                found.kind.as_str()
            );
        }
        Some(reset::Reset::After(after)) => {
            let secs = after
                .as_secs()
                .clamp(1, agent_runner_protocol::limits::MAX_DEFER_S);
            verdict.back_off_s = Some(secs);
            verdict.message = format!(
                "{cli}: {}: retry in {secs} s: {snippet}",
                found.kind.as_str()
            );
        }
        None => {
            verdict.back_off_s = Some(default_back_off_s(found.kind));
            verdict.message = format!("{cli}: {}: {snippet}", found.kind.as_str());
        }
    }
    Some(verdict)
}

#[cfg(test)]
mod fixture_tests {
    use super::*;
    use serde_json::Value;
    use std::path::PathBuf;

    /// `supervisor/tests/fixtures/agent-output`: each CLI's output and the verdict it must get.
    fn fixtures() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent-output")
    }

    #[test]
    fn every_fixture_gets_its_verdict_and_no_other_detector_answers() {
        let now: Timestamp = "2026-11-30T01:00:00Z".parse().unwrap();
        let reset = now.as_second() + 7200;
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(fixtures().join("cases.json")).unwrap())
                .unwrap();
        let cases = manifest["cases"].as_array().unwrap();
        let mut clis = std::collections::BTreeSet::new();
        for case in cases {
            let file = case["file"].as_str().unwrap();
            let cli = file.split('/').next().unwrap();
            clis.insert(cli);
            let text = std::fs::read_to_string(fixtures().join(file))
                .unwrap()
                .replace("@RESET_EPOCH@", &reset.to_string());
            let outcome = RoundOutcome {
                round_num: 3,
                phase: None,
                exit_code: Some(case["exit_code"].as_i64().unwrap() as i32),
                signal: None,
                exit_cause: "exited".into(),
                duration_s: 1.5,
                timed_out: false,
            };
            let round = Round {
                outcome: &outcome,
                agent_binary: cli,
                tail: &text,
                now,
                local: &TimeZone::UTC,
                auth_patterns: &[],
            };
            let dialect = DIALECTS.iter().find(|d| d.binary == cli).expect(cli);
            let verdict = detect(dialect, &round);
            let got = serde_json::to_value(&verdict).unwrap();
            assert_eq!(got["action"], case["action"], "{file}: {got}");
            assert_eq!(got["kind"], case["kind"], "{file}: {got}");
            match &case["wait"] {
                Value::String(s) if s == "until" => {
                    let until: Timestamp = got["until"].as_str().expect(file).parse().unwrap();
                    assert!(until > now, "{file}: {got}");
                }
                Value::Number(n) => {
                    assert_eq!(got["back_off_s"].as_u64(), n.as_u64(), "{file}: {got}")
                }
                _ => {}
            }
            if let Some(usage) = case["usage"].as_array() {
                assert_eq!(got["usage"]["input_tokens"], usage[0], "{file}: {got}");
                assert_eq!(got["usage"]["output_tokens"], usage[1], "{file}: {got}");
            }
            if let Some(model) = case.get("model") {
                assert_eq!(got["usage"]["model"], *model, "{file}: {got}");
            }
            if let Some(msg) = got["message"].as_str() {
                assert!(msg.starts_with(cli) || msg.is_empty(), "{file}: {msg}");
            }
            // Another CLI's detector says nothing about this round.
            for other in DIALECTS.iter().filter(|d| d.binary != cli) {
                assert_eq!(detect(other, &round), None, "{} on {file}", other.detector);
            }
        }
        assert_eq!(
            clis.len(),
            DIALECTS.len(),
            "a fixture for every CLI: {clis:?}"
        );
    }

    #[test]
    fn the_epoch_reset_is_the_printed_one_and_clean_rounds_ignore_plain_text() {
        let now: Timestamp = "2026-11-30T01:00:00Z".parse().unwrap();
        let reset = now.as_second() + 120;
        let text = std::fs::read_to_string(fixtures().join("claude/usage_limit-epoch.jsonl"))
            .unwrap()
            .replace("@RESET_EPOCH@", &reset.to_string());
        let mut outcome = RoundOutcome {
            round_num: 1,
            phase: None,
            exit_code: Some(1),
            signal: None,
            exit_cause: "exited".into(),
            duration_s: 0.4,
            timed_out: false,
        };
        let round = |outcome: &RoundOutcome, tail: &str| {
            detect(
                &DIALECTS[0],
                &Round {
                    outcome,
                    agent_binary: "claude",
                    tail,
                    now,
                    local: &TimeZone::UTC,
                    auth_patterns: &[],
                },
            )
        };
        let verdict = round(&outcome, &text).unwrap();
        assert_eq!(verdict.until.as_deref(), Some("2026-11-30T01:02:00Z"));
        // Plain text counts only after an unclean exit.
        let plain = "API Error: 429 rate limited\n";
        assert!(round(&outcome, plain).is_some());
        outcome.exit_code = Some(0);
        assert_eq!(round(&outcome, plain), None);
        // A configured auth pattern is matched (inside the host).
        outcome.exit_code = Some(1);
        let patterns = [Regex::new("(?i)sso session ended").unwrap()];
        let verdict = detect(
            &DIALECTS[0],
            &Round {
                outcome: &outcome,
                agent_binary: "claude",
                tail: "Your SSO session ended.",
                now,
                local: &TimeZone::UTC,
                auth_patterns: &patterns,
            },
        )
        .unwrap();
        assert_eq!(verdict.kind, Some(ErrorKind::Auth));
    }
}
