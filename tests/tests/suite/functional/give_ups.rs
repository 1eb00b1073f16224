//! Issue 28, give-ups: what `serve` does when the environment fails it (docs/operations.md,
//! "Leaving it unattended"): a log dir whose `rounds/` cannot be made is retried after
//! growing waits, goes on once it heals, and after five attempts in a row stops `serve`
//! with exit 76 and `environment_unusable`, never a crash loop; a state dir whose lock file
//! cannot be used stops it at boot with 76 too. (The memory loops, 71 and 70, are tested
//! with real OOM kills in `round_cgroup.rs`.)

use agent_runner_e2e::Project;
use std::time::Duration;

/// An agent that, once (while `$MARK` does not exist), replaces `$LOG/rounds` by a file:
/// the next round cannot make its log.
const AGENT: &str = r#"#!/bin/sh
if [ ! -e "$MARK" ]; then
  : > "$MARK"
  rm -rf "$LOG/rounds"
  : > "$LOG/rounds"
fi
echo done
"#;

fn project() -> Project {
    let p = Project::new();
    let agent = p.script("agent/breaks-log-dir.sh", AGENT);
    p.write_config(
        &agent_runner_e2e::ConfigBuilder::new(&agent)
            .dirty_action("ignore")
            .agent_env("MARK", &p.tmp_dir().join("broke").display().to_string())
            .agent_env("LOG", &p.log_dir().display().to_string()),
    );
    p
}

#[test]
fn an_unusable_log_dir_is_retried_heals_and_after_five_attempts_exits_76() {
    let p = project();
    // Heals: the file is removed after the first failed attempt; serve goes on.
    let serve = p.spawn(&["serve", "--max-rounds", "2"]);
    let first = p.wait_for_event("round_error");
    assert!(
        first["error"].as_str().unwrap().contains("rounds"),
        "{first}"
    );
    std::fs::remove_file(p.log_dir().join("rounds")).unwrap();
    let out = serve.wait(Duration::from_secs(60));
    out.assert_code(0);
    assert_eq!(p.events_of("round_end").len(), 2, "{}", p.events_text());
    assert!(
        p.events_of("environment_unusable").is_empty() && p.events_of("crash_loop").is_empty(),
        "{}",
        p.events_text()
    );

    // Does not heal: five attempts in a row (waits of 1, 2, 4 and 8 s between them), then
    // exit 76, which the unit restarts.
    std::fs::remove_file(p.tmp_dir().join("broke")).unwrap();
    let before = p.events_of("round_error").len();
    let out = p.run(&["serve"]);
    out.assert_code(76);
    assert_eq!(
        p.events_of("round_error").len() - before,
        5,
        "{}",
        p.events_text()
    );
    let gave_up = &p.events_of("environment_unusable")[0];
    assert_eq!(gave_up["stage"], "round", "{gave_up}");
    assert_eq!(gave_up["consecutive_failures"], 5, "{gave_up}");
    assert_eq!(gave_up["threshold"], 5, "{gave_up}");
    assert_eq!(gave_up["rounds_completed"], 1, "{gave_up}");
    assert!(
        gave_up["error"].as_str().unwrap().contains("rounds"),
        "{gave_up}"
    );
    assert!(p.events_of("crash_loop").is_empty(), "{}", p.events_text());
    assert!(
        out.stderr.contains("environment_unusable, exit 76"),
        "{out}"
    );
    p.assert_events_whole();
}

#[test]
fn a_state_dir_whose_lock_cannot_be_used_exits_76_at_boot() {
    let p = project();
    std::fs::create_dir_all(p.state_dir().join("agent-runner.lock")).unwrap();
    let out = p.run(&["serve"]);
    out.assert_code(76);
    assert!(out.stderr.contains("agent-runner.lock"), "{out}");
    let gave_up = &p.events_of("environment_unusable")[0];
    assert_eq!(gave_up["stage"], "boot", "{gave_up}");
    assert_eq!(gave_up["rounds_completed"], 0, "{gave_up}");
    assert!(p.events_of("round_start").is_empty(), "{}", p.events_text());
    p.assert_events_whole();
}
