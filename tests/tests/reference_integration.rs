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

/// The reference's warnings `doctor` gives, each where an operator switching from it would
/// trip (docs/reference-system.md, "Deviations"): none for a plain project; then a whole
/// unit file left by the reference's install, a live `serve.pid` that is not our lock
/// holder, a seeded metrics file and `transient_error_action = "stop"`, each named with
/// its deviation's number.
#[test]
fn doctor_names_the_deviations_an_operator_would_trip_on() {
    let deviations = |p: &Project, config_home: &std::path::Path| -> Vec<String> {
        let out = p.run_env(
            &["doctor", "--json"],
            &[("XDG_CONFIG_HOME", &config_home.display().to_string())],
        );
        let doc: Value = agent_runner_e2e::serde_json::from_str(out.stdout.trim())
            .unwrap_or_else(|e| panic!("doctor --json: {e}: {out}"));
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["name"] == "reference_deviation")
            .map(|w| {
                assert!(!w["how_to_fix"].as_str().unwrap().is_empty(), "{w}");
                w["reason"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let p = Project::new();
    let config_home = p.tmp_dir().join("config");
    p.write_config(&p.config().dirty_action("ignore"));
    assert_eq!(deviations(&p, &config_home), Vec::<String>::new());

    let unit_dir = config_home.join("systemd/user");
    std::fs::create_dir_all(&unit_dir).unwrap();
    std::fs::write(
        unit_dir.join("agent-runner@project.service"),
        "[Service]\nExecStart=/usr/bin/agent-runner serve\n",
    )
    .unwrap();
    let mut stranger = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    std::fs::create_dir_all(p.log_dir()).unwrap();
    std::fs::write(
        p.log_dir().join("serve.pid"),
        format!("{}\n", stranger.id()),
    )
    .unwrap();
    std::fs::write(p.log_dir().join("metrics-2026-12.jsonl"), "{}\n").unwrap();
    let text = p.config().dirty_action("ignore").render().replace(
        "restart_delay_s = 1\n",
        "restart_delay_s = 1\ntransient_error_action = \"stop\"\n",
    );
    p.write_config_text(&text);
    let found = deviations(&p, &config_home);
    let _ = stranger.kill();
    let _ = stranger.wait();
    assert_eq!(found.len(), 4, "{found:#?}");
    for (number, words) in [
        (1, "agent-runner@project.service"),
        (4, &format!("process {}", stranger.id())),
        (2, "metrics-*.jsonl"),
        (5, "exit 75"),
    ] {
        assert!(
            found
                .iter()
                .any(|r| r.contains(words) && r.ends_with(&format!("\"Deviations\", {number})"))),
            "deviation {number} ({words}) not named: {found:#?}"
        );
    }
    // A pid file whose process is gone names nothing.
    assert_eq!(deviations(&p, &config_home).len(), 3);
}
