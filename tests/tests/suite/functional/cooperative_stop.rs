//! Cooperative stop on real processes: an agent whose CLI drains its turn on a signal
//! (by its name: `claude` on SIGINT, `gemini` and `pi` on SIGTERM) gets that signal and
//! `[agent] sigterm_grace_s` before SIGKILL, whether its budget ran out or `kill` asked;
//! any other agent gets SIGTERM and 5 s. Each agent here is a shell script that records
//! the signal it got, drains for 6 s (longer than the default grace) and says so.

use agent_runner_e2e::{wait_until, ConfigBuilder, Project};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

/// Writes an agent script called `name` (in a directory of its own) that appends what it
/// sees to `$MARK`: `started`, then the signal's name, then `drained` 6 s later.
fn draining_agent(p: &Project, name: &str) -> PathBuf {
    let dir = p.tmp_dir().join(format!("bin-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(
        &path,
        "#!/bin/sh\n\
         drain() { echo \"$1\" >> \"$MARK\"; sleep 6; echo drained >> \"$MARK\"; exit 0; }\n\
         trap 'drain INT' INT\n\
         trap 'drain TERM' TERM\n\
         echo started >> \"$MARK\"\n\
         sleep 60 & wait\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn config(p: &Project, agent: &std::path::Path, grace: u64, budget: u64) -> String {
    let mark = p.tmp_dir().join("mark.txt");
    ConfigBuilder::new(agent)
        .round_budget_s(budget)
        .agent_env("MARK", &mark.display().to_string())
        .render()
        .replace(
            "prompt_delivery = \"argv\"\n",
            &format!("prompt_delivery = \"argv\"\nsigterm_grace_s = {grace}\n"),
        )
}

fn mark(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.tmp_dir().join("mark.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn claude_gets_sigint_and_its_grace_when_the_budget_runs_out() {
    let p = Project::new();
    let agent = draining_agent(&p, "claude");
    p.write_config_text(&config(&p, &agent, 9, 2));
    // A round its budget ended exits 0, as in the reference (round_timeout_kill records it).
    p.run(&["round"]).assert_code(0);
    assert_eq!(mark(&p), ["started", "INT", "drained"]);
    let exit = &p.events_of("agent_exit")[0];
    assert_eq!(exit["exit_cause"], "timeout", "{exit}");
    let took = exit["duration_s"].as_f64().unwrap();
    assert!(took >= 8.0, "drained for 6 s after a 2 s budget: {exit}");
}

#[test]
fn an_agent_without_a_cooperative_stop_gets_sigterm_and_five_seconds() {
    let p = Project::new();
    let agent = draining_agent(&p, "some-agent");
    p.write_config_text(&config(&p, &agent, 9, 2));
    // A round its budget ended exits 0, as in the reference (round_timeout_kill records it).
    p.run(&["round"]).assert_code(0);
    assert_eq!(mark(&p), ["started", "TERM"], "SIGKILLed before it drained");
    let doctor = p.run(&["doctor", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
    assert_eq!(
        doc["sigterm_grace"],
        serde_json::json!({"agent": "some-agent", "cooperative": false, "signal": null, "resolved_s": 5})
    );
}

#[test]
fn kill_gives_gemini_sigterm_and_its_grace_and_peek_and_doctor_say_so() {
    let p = Project::new();
    let agent = draining_agent(&p, "gemini");
    p.write_config_text(&config(&p, &agent, 9, 120));
    let peek = p.run(&["peek", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&peek.stdout).unwrap();
    assert_eq!(
        doc["plugins"]["cooperative_stop"],
        serde_json::json!({"claude": "SIGINT", "gemini": "SIGTERM", "pi": "SIGTERM"})
    );
    assert_eq!(doc["plugins"]["resolved_sigterm_grace_s"], 9);
    let doctor = p.run(&["doctor"]);
    assert!(
        doctor
            .stdout
            .contains("sigterm grace: 9s (cooperative, signal=SIGTERM, agent=gemini)"),
        "{doctor}"
    );
    let serve = p.spawn(&["serve"]);
    wait_until("the agent started", Duration::from_secs(30), || {
        mark(&p).contains(&"started".to_owned()).then_some(())
    });
    p.run(&["kill"]).assert_code(0);
    serve.wait(Duration::from_secs(30)).assert_code(0);
    assert_eq!(mark(&p), ["started", "TERM", "drained"]);
    let exit = &p.events_of("agent_exit")[0];
    assert_eq!(exit["exit_cause"], "stopped", "{exit}");
}
