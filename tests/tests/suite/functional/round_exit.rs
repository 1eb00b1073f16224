//! `round` exit codes against the agent's own outcome: a failing agent and an agent that
//! overruns its budget both make `round` exit 1; the overrun agent's whole process group
//! is gone afterwards.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{wait_until, Project};
use std::time::Duration;

#[test]
fn clean_agent_exits_0() {
    let p = Project::new();
    p.write_config(&p.config());
    let out = p.run(&["round", "--json"]);
    out.assert_code(0);
    let summary: Value = serde_json::from_str(out.stdout.trim()).expect("--json summary");
    assert_eq!(summary["round_num"], 1, "{out}");
    assert_eq!(summary["exit_code"], 0, "{out}");
    assert_eq!(summary["exit_cause"], "exited", "{out}");
    let exit = &p.events_of("agent_exit")[0];
    assert_eq!(exit["exit_code"], 0);
    assert_eq!(exit["timed_out"], false);
    assert!(p.events_of("round_timeout_kill").is_empty());
    // Substrate events come every round, `paths_hash` null without patterns.
    let before = &p.events_of("round_substrate_before")[0];
    assert_eq!(before["paths_hash"], Value::Null, "{before}");
    assert_eq!(
        before["git_head"].as_str().map(str::len),
        Some(40),
        "{before}"
    );
    // The agent got the round's environment and the prompt.
    let log = std::fs::read_dir(p.log_dir().join("rounds"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(log).unwrap();
    assert!(text.contains("demo-agent: round 1; prompt:"), "{text}");
}

#[test]
fn failing_agent_exits_1() {
    let p = Project::new();
    p.write_config(&p.config().agent_env("DEMO_AGENT_EXIT", "3"));
    let out = p.run(&["round"]);
    out.assert_code(1);
    let all = p.events_text();
    let exit = p.events_of("agent_exit");
    assert_eq!(exit.len(), 1, "{all}");
    assert_eq!(exit[0]["exit_code"], 3, "{all}");
    assert_eq!(exit[0]["exit_cause"], "exited", "{all}");
    assert_eq!(exit[0]["timed_out"], false, "{all}");
    // Dirty handling runs only after a clean exit: the tree the agent left stays dirty.
    assert!(p.events_of("dirty_detected").is_empty(), "{all}");
    assert!(p.events_of("orphan_stashed").is_empty(), "{all}");
    assert!(!p.status_porcelain().is_empty());
    assert_eq!(p.events_of("round_end").len(), 1, "{all}");
}

#[test]
fn agent_over_budget_is_terminated_with_its_group() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .agent_env("DEMO_AGENT_SLEEP", "30")
            .round_budget_s(1),
    );
    // The round ran and was recorded: 0, as in the reference system; the reason is printed.
    let out = p.run(&["round"]);
    out.assert_code(0);
    assert!(out.stderr.contains("the agent ended"), "{out}");
    let all = p.events_text();
    let exit = p.events_of("agent_exit");
    assert_eq!(exit.len(), 1, "{all}");
    assert_eq!(exit[0]["exit_cause"], "timeout", "{all}");
    assert_eq!(exit[0]["timed_out"], true, "{all}");
    let kill = p.events_of("round_timeout_kill");
    assert_eq!(kill.len(), 1, "{all}");
    assert_eq!(kill[0]["round_num"], 1, "{all}");
    assert_eq!(kill[0]["reason"], "exceeded round_budget_s=1", "{all}");
    assert!(p.events_of("dirty_detected").is_empty(), "{all}");
    // The agent (bash) and its `sleep 30` child ran in the project dir; both were killed
    // (a killed process may take a moment to vanish; 5 s is far below the 30 s sleep).
    wait_until(
        "the agent's process group to be gone",
        Duration::from_secs(5),
        || p.processes().is_empty().then_some(()),
    );
    // The agent never reached its edits.
    assert!(!p.dir().join("notes").exists());
}

/// The agent's terminal escapes (window title, OSC 52 clipboard write, clear screen, bidi
/// override) are shown as text on `round`'s stderr and by `peek --log`, not obeyed; the
/// round log file keeps the agent's bytes (issue 27, item 7).
#[test]
fn agent_terminal_escapes_are_shown_not_obeyed() {
    let p = Project::new();
    let agent = p.script(
        "escapes-agent",
        "#!/bin/sh\nprintf 'before\\033]0;pwned-title\\007\\033]52;c;ZXZpbA==\\007\\033[2J\\033[H\\342\\200\\256after\\n'\nexit 1\n",
    );
    p.write_config(&agent_runner_e2e::ConfigBuilder::new(&agent));
    let out = p.run(&["round"]);
    out.assert_code(1);
    let escapes = ['\x1b', '\x07', '\u{202e}'];
    assert!(out.stderr.contains("before"), "{out}");
    assert!(out.stderr.contains("pwned-title"), "{out}");
    assert!(!out.stderr.contains(&escapes[..]), "{out:?}");
    let log = std::fs::read(&p.round_logs()[0]).unwrap();
    assert!(
        log.windows(4).any(|w| w == b"\x1b]52"),
        "the log file keeps the agent's bytes"
    );
    let peek = p.run(&["peek", "--round", "1", "--log"]);
    peek.assert_code(0);
    assert!(
        peek.stdout.contains("before") && peek.stdout.contains("after\n"),
        "{peek}"
    );
    assert!(peek.stdout.contains("]52;c;ZXZpbA=="), "{peek}");
    assert!(!peek.stdout.contains(&escapes[..]), "{peek:?}");
}
