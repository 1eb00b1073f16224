//! A CLI stuck waiting ends its round within seconds (docs/detectors.md, "Stalls"): a
//! stand-in codex prints codex's real reconnect line (tests/agent-clis/transcripts/codex/
//! refused.log) until it is stopped, as codex does for the whole budget while its provider
//! cannot be reached. The round is ended on the line's second appearance, not by its 60 s
//! budget: `agent_stalled`, an exit that is not the budget's, and codex's detector
//! diagnoses a network failure (back-off). The control: the same output from an agent that
//! is not codex runs until its (short) budget ends it.

use agent_runner_e2e::{ConfigBuilder, Project};

const RECONNECTING: &str = "#!/bin/sh\n\
    echo '{\"type\":\"turn.started\"}'\n\
    while :; do\n\
      echo '{\"type\":\"error\",\"message\":\"Reconnecting... waiting for network (Connection failed: error sending request)\"}'\n\
      sleep 0.3\n\
    done\n";

fn run(name: &str, budget: u64) -> Project {
    let p = Project::new();
    let agent = p.script(&format!("bin/{name}"), RECONNECTING);
    p.write_config(
        &ConfigBuilder::new(&agent)
            .round_budget_s(budget)
            .dirty_action("ignore"),
    );
    p.run(&["round"]);
    p
}

#[test]
fn codex_waiting_for_network_ends_its_round_as_a_network_failure() {
    let p = run("codex", 60);
    let stalled = p.events_of("agent_stalled");
    assert_eq!(stalled.len(), 1, "{}", p.events_text());
    assert_eq!(stalled[0]["cli"], "codex");
    assert_eq!(stalled[0]["words"], "waiting for network");
    let exit = &p.events_of("agent_exit")[0];
    assert_ne!(exit["exit_cause"], "timeout", "{exit}");
    assert!(p.events_of("round_timeout_kill").is_empty());
    let decision = &p.events_of("plugin_post_round_decision")[0];
    assert_eq!(decision["hook"], "codex_error_detector", "{decision}");
    assert_eq!(decision["kind"], "network", "{decision}");
    assert_eq!(decision["action"], "back_off", "{decision}");
}

#[test]
fn another_agent_printing_the_same_runs_to_its_budget() {
    let p = run("my-agent", 3);
    assert!(
        p.events_of("agent_stalled").is_empty(),
        "{}",
        p.events_text()
    );
    let exit = &p.events_of("agent_exit")[0];
    assert_eq!(exit["exit_cause"], "timeout", "{exit}");
}
