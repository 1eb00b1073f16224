//! `serve` end to end: three real rounds of the demo agent under `sandbox = "require"` with
//! both example hosts pinned; the first spawn is deferred by the pause-file host until the
//! test removes the file; odd rounds leave the tree dirty and the dirty-commit host's
//! `wip_commit` decides a commit that the supervisor makes.

use agent_runner_e2e::serde_json::json;
use agent_runner_e2e::{dirty_commit_host_bin, pause_host_bin, HostSpec, Project};
use std::time::Duration;

fn round_nums(events: &[agent_runner_e2e::serde_json::Value]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e["round_num"].as_u64().expect("round_num"))
        .collect()
}

#[test]
fn three_rounds_deferred_then_resumed_with_hook_commits() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("require")
            .spawn_override_allow(&["pause_file"])
            .host(HostSpec::new("pause", pause_host_bin()).config(json!({
                "file": ".agent-runner-pause", "defer_s": 1, "reason": "paused by the e2e test"
            })))
            .host(
                HostSpec::new("wip", dirty_commit_host_bin())
                    .provides(&["dirty_handler"])
                    .config(json!({"prefix": "wip: "})),
            ),
    );
    p.write(".agent-runner-pause", "");

    let serve = p.spawn(&["serve", "--max-rounds", "3"]);
    p.wait_for_event("round_deferred");
    assert!(
        p.events_of("round_start").is_empty(),
        "no round may start while the pause file exists:\n{}",
        p.events_text()
    );
    std::fs::remove_file(p.dir().join(".agent-runner-pause")).expect("remove pause file");
    let out = serve.wait(Duration::from_secs(120));
    out.assert_code(0);

    // Every line of the event files is a JSON object with ts and event.
    for file in p.event_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.ends_with('\n'), "{} ends mid-line", file.display());
    }
    let events = p.events();
    let all = p.events_text();

    let decision = p.events_of("plugin_spawn_decision");
    assert!(!decision.is_empty(), "no plugin_spawn_decision:\n{all}");
    assert_eq!(decision[0]["hook"], "pause_file", "{all}");
    assert_eq!(decision[0]["action"], "defer", "{all}");
    assert_eq!(decision[0]["defer_s"], 1, "{all}");
    assert_eq!(decision[0]["reason"], "paused by the e2e test", "{all}");

    let deferred = p.events_of("round_deferred");
    assert_eq!(deferred[0]["signal"], "pause_file", "{all}");
    assert!(!p.events_of("round_resumed").is_empty(), "{all}");

    let starts = p.events_of("round_start");
    let ends = p.events_of("round_end");
    assert_eq!(round_nums(&starts), vec![1, 2, 3], "{all}");
    assert_eq!(round_nums(&ends), vec![1, 2, 3], "{all}");
    for end in &ends {
        assert_eq!(end["exit_code"], 0, "{all}");
    }

    // The defer happened before the first round, and the round number did not advance.
    let index_of = |kind: &str| {
        events
            .iter()
            .position(|e| e["event"] == kind)
            .unwrap_or_else(|| panic!("no {kind}:\n{all}"))
    };
    assert!(
        index_of("round_deferred") < index_of("round_start"),
        "{all}"
    );
    assert!(index_of("round_resumed") < index_of("round_start"), "{all}");

    // Odd rounds were left dirty by the agent and committed on wip_commit's decision;
    // the even round committed itself.
    let commits = p.events_of("dirty_auto_committed");
    assert_eq!(round_nums(&commits), vec![1, 3], "{all}");
    for commit in &commits {
        assert_eq!(commit["hook"], "wip_commit", "{all}");
    }
    assert!(p.events_of("orphan_stashed").is_empty(), "{all}");
    assert!(p.events_of("hook_failed").is_empty(), "{all}");
    assert!(p.events_of("plugin_sandbox_degraded").is_empty(), "{all}");

    let max = p.events_of("max_rounds_reached");
    assert_eq!(max.len(), 1, "{all}");
    assert_eq!(max[0]["rounds_completed"], 3, "{all}");

    let subjects = p.log_subjects();
    assert!(
        subjects.iter().any(|s| s.starts_with("wip: round 1: ")),
        "{subjects:?}"
    );
    assert!(
        subjects.iter().any(|s| s.starts_with("wip: round 3: ")),
        "{subjects:?}"
    );
    assert!(
        subjects.iter().any(|s| s == "demo-agent: round 2"),
        "{subjects:?}"
    );
    for (commit, round) in commits.iter().zip([1, 3]) {
        let subject = p.git(&["log", "-1", "--format=%s", commit["sha"].as_str().unwrap()]);
        assert!(
            subject.starts_with(&format!("wip: round {round}: ")),
            "{subject}"
        );
    }
    assert!(
        p.status_porcelain().is_empty(),
        "{:?}",
        p.status_porcelain()
    );

    // Each round has its own log with the agent's output.
    let rounds = std::fs::read_dir(p.log_dir().join("rounds"))
        .unwrap()
        .count();
    assert_eq!(rounds, 3);
}
