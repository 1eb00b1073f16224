//! Issue 17, case 1: an agent that runs `git clean -fdx` every round (it deletes the
//! git-ignored `./logs` of the `init` layout) loses neither the round numbering, nor the
//! event history, nor the project lock: the record lives in the state dir, out of the
//! tree (docs/operations.md, "State dir").

use agent_runner_e2e::{wait_until, Project, EVENT_TIMEOUT};
use std::time::Duration;

/// `init --preset claude` with `log_dir = "./logs"` (git-ignored), then the agent swapped
/// for a script (outside the tree) that
/// runs `git clean -fdx`, records its round number in `<tmp>/ran`, then sleeps
/// `$CLEAN_SLEEP` seconds.
fn cleaning_project() -> Project {
    let p = Project::without_prompt();
    p.run(&["init", "--preset", "claude"]).assert_code(0);
    let ran = p.tmp_dir().join("ran");
    let agent = p.script(
        "cleaner.sh",
        &format!(
            "#!/bin/sh\ngit clean -fdxq\necho \"$AGENT_RUNNER_ROUND_NUM\" >> '{}'\nsleep \"${{CLEAN_SLEEP:-0}}\"\n",
            ran.display()
        ),
    );
    let text = std::fs::read_to_string(p.config_path()).unwrap();
    let text = text
        .lines()
        .map(|l| {
            if l.starts_with("command = ") {
                format!("command = [{:?}]", agent.display().to_string())
            } else if l.starts_with("prompt_arg_template") {
                "prompt_arg_template = []".to_owned()
            } else if l.starts_with("log_dir") {
                // The demo's and the reference system's presets' layout.
                "log_dir = \"./logs\"".to_owned()
            } else if l.starts_with("restart_delay_s") {
                "restart_delay_s = 1".to_owned()
            } else if l == "mode = \"prefer\"" {
                // Unconfined on purpose: this agent wipes ./logs (`git clean -fdx`), the
                // supervisor's log dir, which the agent's confinement keeps read-only, and
                // records its rounds outside the tree; the test is about the supervisor
                // surviving that, not about stopping it (hostile_agent.rs does that).
                "mode = \"off\"".to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains("\nmode = \"off\""), "{text}");
    p.write_config_text(&text);
    p
}

fn round_starts(p: &Project) -> Vec<u64> {
    p.events_of("round_start")
        .iter()
        .map(|e| e["round_num"].as_u64().unwrap())
        .collect()
}

#[test]
fn numbering_and_history_survive_git_clean_every_round() {
    let p = cleaning_project();
    let doctor = p.run(&["doctor", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
    assert_eq!(report["warnings"][0]["name"], "log_dir", "{doctor}");
    p.run(&["serve", "--max-rounds", "3"]).assert_code(0);
    assert_eq!(round_starts(&p), [1, 2, 3], "{}", p.events_text());
    // Its round logs went with ./logs (status.json and the record's links come back after
    // each round: docs/reference-system.md, "Views in log_dir").
    assert!(
        !p.log_dir().join("rounds").exists(),
        "the agent did not clean the tree"
    );
    p.run(&["serve", "--max-rounds", "2"]).assert_code(0);
    assert_eq!(round_starts(&p), [1, 2, 3, 4, 5], "{}", p.events_text());
    let ran = std::fs::read_to_string(p.tmp_dir().join("ran")).unwrap();
    assert_eq!(ran, "1\n2\n3\n4\n5\n");
    assert_eq!(p.events_of("round_end").len(), 5, "{}", p.events_text());
    // The tree stayed clean (nothing of ours left in it to stash or commit).
    assert!(
        p.events_of("dirty_detected").is_empty(),
        "{}",
        p.events_text()
    );
}

#[test]
fn no_second_supervisor_after_git_clean() {
    let p = cleaning_project();
    let mut cmd = p.command(&["serve"]);
    cmd.env("CLEAN_SLEEP", "30");
    let serve = p.spawn_with(cmd);
    wait_until("the agent cleaned the tree", EVENT_TIMEOUT, || {
        std::fs::read_to_string(p.tmp_dir().join("ran"))
            .ok()
            .filter(|t| !t.is_empty())
    });
    assert!(
        !p.log_dir().join("rounds").exists(),
        "git clean left ./logs"
    );
    let second = p.run(&["round"]);
    second.assert_code(1);
    assert!(
        second.stderr.contains("already supervises"),
        "second supervisor admitted: {second}"
    );
    let status = p.run(&["status", "--json"]);
    status.assert_code(0);
    assert!(status.stdout.contains(&serve.pid().to_string()), "{status}");
    p.run(&["kill"]).assert_code(0);
    serve.wait(Duration::from_secs(30)).assert_code(0);
    assert_eq!(round_starts(&p), [1], "{}", p.events_text());
}

#[test]
fn a_lost_state_dir_resumes_numbering_from_the_round_logs() {
    let p = Project::new();
    p.write_config(&p.config());
    p.run(&["round"]).assert_code(0);
    p.run(&["round"]).assert_code(0);
    std::fs::remove_dir_all(p.state_dir()).unwrap();
    p.run(&["round"]).assert_code(0);
    let recovered = p.wait_for_event("round_state_recovered");
    assert_eq!(recovered["last_round"], 2, "{recovered}");
    assert_eq!(round_starts(&p), [3], "{}", p.events_text());
}

#[test]
fn an_old_in_tree_record_is_adopted() {
    let p = Project::new();
    let old = p.config().render().replace(
        "log_dir = \"./logs\"\n",
        "log_dir = \"./logs\"\nstate_dir = \"./logs\"\n",
    );
    p.write_config_text(&old);
    p.run(&["round"]).assert_code(0);
    assert!(p.log_dir().join("state.json").exists());
    // The same project with the config of this version: the record moves out.
    p.write_config(&p.config());
    p.run(&["round"]).assert_code(0);
    assert!(!p.log_dir().join("state.json").exists());
    let migrated = p.wait_for_event("state_migrated");
    assert!(
        migrated["files"].to_string().contains("state.json"),
        "{migrated}"
    );
    assert_eq!(round_starts(&p), [1, 2], "{}", p.events_text());
}
