//! The facts the reference system's integration tests check (cli-agent-runner 0.3.2,
//! `tests/integration/` of its source distribution) that show from outside the process —
//! files, events, exit codes, stdout — checked here against our binary, in our own tests
//! (docs/reference-system.md, "The compatibility suite"). Each test names the reference
//! test file whose facts it checks; what we check differently, and why, is in the same
//! section's list.

use agent_runner_e2e::serde_json::Value;
use agent_runner_e2e::{ConfigBuilder, Project};
use std::time::Duration;

/// An agent that does nothing but print a line; from round `done_at` on, it also writes
/// `$AGENT_RUNNER_LOG_DIR/.agent-done` with `reason`.
fn done_agent(p: &Project, done_at: u64, reason: &str) -> ConfigBuilder {
    let agent = p.script(
        "agent/done-agent.sh",
        &format!(
            "#!/bin/sh\necho \"round $AGENT_RUNNER_ROUND_NUM\"\n\
             if [ \"$AGENT_RUNNER_ROUND_NUM\" -ge {done_at} ]; then\n\
             printf '%s' '{reason}' > \"$AGENT_RUNNER_LOG_DIR/.agent-done\"\nfi\n"
        ),
    );
    ConfigBuilder::new(&agent).dirty_action("ignore")
}

/// `test_serve_loop.py` (the self-termination sentinel, its runbook's contract): an agent
/// that writes `.agent-done` ends serve before the next round with exit 0 and
/// `agent_self_terminated` carrying the file's text; one left by an earlier run does not
/// stop a fresh serve.
#[test]
fn the_agents_done_file_ends_serve_with_exit_0_and_a_stale_one_is_cleared() {
    let p = Project::new();
    p.write_config(&done_agent(&p, 2, "converged: every check green"));
    std::fs::create_dir_all(p.log_dir()).unwrap();
    std::fs::write(p.log_dir().join(".agent-done"), "left by yesterday's run").unwrap();
    let out = p
        .spawn(&["serve", "--max-rounds", "5"])
        .wait(Duration::from_secs(60));
    out.assert_code(0);
    assert_eq!(p.events_of("round_end").len(), 2, "{}", p.events_text());
    let ended = p.events_of("agent_self_terminated");
    assert_eq!(ended.len(), 1, "{}", p.events_text());
    assert_eq!(ended[0]["reason"], "converged: every check green");
    assert_eq!(ended[0]["rounds_completed"], 2);
    assert!(
        p.events_of("max_rounds_reached").is_empty(),
        "{}",
        p.events_text()
    );
    // A reason is capped at 200 characters.
    let p = Project::new();
    let long = "x".repeat(300);
    p.write_config(&done_agent(&p, 1, &long));
    p.spawn(&["serve"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let ended: Vec<Value> = p.events_of("agent_self_terminated");
    assert_eq!(ended[0]["reason"], "x".repeat(200), "{}", p.events_text());
    p.assert_events_whole();
}
