//! The built-in detectors on real output: every transcript of
//! `tests/agent-clis/transcripts/<cli>/<mode>.log` (captured by
//! `tests/agent-clis/capture.sh` from the pinned CLIs against the fake model server) gets
//! the decision `tests/agent-clis/transcripts/decisions.json` states: action, kind, the
//! wait (the printed reset when there is one), and whether usage is reported. The round
//! ends as the CLI ended (exit status, or timed out), as recorded in `<mode>.json`; the
//! detector sees what the supervisor sends it, the log's last 16 KiB made wire-safe.

use agent_runner::detectors::{detect, Round, DIALECTS};
use agent_runner_protocol::tail::log_tail;
use agent_runner_protocol::RoundOutcome;
use jiff::tz::TimeZone;
use jiff::Timestamp;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/agent-clis/transcripts")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// How the captured run ended, as the supervisor reports it.
fn outcome(meta: &Value) -> RoundOutcome {
    let timed_out = meta["timed_out"] == Value::Bool(true);
    RoundOutcome {
        round_num: 1,
        phase: None,
        exit_code: if timed_out {
            None
        } else {
            Some(meta["exit_code"].as_i64().expect("exit_code") as i32)
        },
        signal: timed_out.then_some(9),
        exit_cause: if timed_out { "timeout" } else { "exited" }.to_owned(),
        duration_s: meta["duration_s"].as_f64().unwrap_or(1.0),
        timed_out,
    }
}

#[test]
fn every_real_transcript_gets_its_decision() {
    let decisions = read_json(&corpus().join("decisions.json"));
    let cases = decisions["cases"].as_array().expect("cases");
    let now: Timestamp = "2026-12-01T12:00:00Z".parse().unwrap();
    let mut failures = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for case in cases {
        let cli = case["cli"].as_str().unwrap();
        let mode = case["mode"].as_str().unwrap();
        seen.insert((cli.to_owned(), mode.to_owned()));
        let meta = read_json(&corpus().join(format!("{cli}/{mode}.json")));
        let log = std::fs::read(corpus().join(format!("{cli}/{mode}.log"))).unwrap();
        let tail = log_tail(&log);
        let outcome = outcome(&meta);
        let dialect = DIALECTS.iter().find(|d| d.binary == cli).expect(cli);
        let verdict = detect(
            dialect,
            &Round {
                outcome: &outcome,
                agent_binary: cli,
                tail: &tail,
                now,
                local: &TimeZone::UTC,
                auth_patterns: &[],
            },
        );
        let got = serde_json::to_value(&verdict).unwrap();
        let action = got.get("action").cloned().unwrap_or(Value::Null);
        let kind = got.get("kind").cloned().unwrap_or(Value::Null);
        let mut wrong = Vec::new();
        if action != case["action"] {
            wrong.push(format!("action {action} (want {})", case["action"]));
        }
        if kind != case["kind"] {
            wrong.push(format!("kind {kind} (want {})", case["kind"]));
        }
        if let Some(wait) = case.get("back_off_s").and_then(Value::as_u64) {
            if got["back_off_s"].as_u64() != Some(wait) {
                wrong.push(format!("back_off_s {} (want {wait})", got["back_off_s"]));
            }
        }
        let usage = got.get("usage").is_some_and(|u| !u.is_null());
        if Some(usage) != case["usage"].as_bool() {
            wrong.push(format!("usage {} (want {})", got["usage"], case["usage"]));
        }
        if !wrong.is_empty() {
            failures.push(format!("{cli}/{mode}: {}: {got}", wrong.join(", ")));
        }
    }
    // Every captured transcript has its decision stated.
    for dir in std::fs::read_dir(corpus()).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let cli = dir.file_name().unwrap().to_str().unwrap().to_owned();
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|e| e == "log") {
                let mode = file.file_stem().unwrap().to_str().unwrap().to_owned();
                assert!(
                    seen.contains(&(cli.clone(), mode.clone())),
                    "{cli}/{mode}.log has no decision in decisions.json"
                );
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
