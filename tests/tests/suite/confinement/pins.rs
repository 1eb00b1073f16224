//! Pins: a host whose file does not hash to its pin is never started; an unpinned host is
//! refused under `sandbox = "require"` and started under `prefer`. The pause-file host
//! (with its pause file present and its hook allowed to override) shows whether it was
//! consulted: a consulted host defers the round (`round` exits 75).

use agent_runner_e2e::serde_json::json;
use agent_runner_e2e::{dirty_commit_host_bin, pause_host_bin, pin_of, HostSpec, Pin, Project};

fn paused_project(sandbox: &str, pin: Pin) -> Project {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox(sandbox)
            .spawn_override_allow(&["pause_file"])
            .host(
                HostSpec::new("pause", pause_host_bin())
                    .config(json!({"defer_s": 30, "reason": "held by the pause file"}))
                    .pin(pin),
            ),
    );
    p.write(".agent-runner-pause", "");
    p
}

#[test]
fn pin_mismatch_refuses_the_host_and_the_round_runs() {
    let p = paused_project("require", Pin::OfFile(dirty_commit_host_bin()));

    let out = p.run(&["round"]);
    out.assert_code(0);
    let all = p.events_text();

    let mismatch = p.events_of("plugin_checksum_mismatch");
    assert_eq!(mismatch.len(), 1, "{all}");
    assert_eq!(mismatch[0]["name"], "pause", "{all}");
    assert_eq!(
        mismatch[0]["expected"],
        pin_of(&dirty_commit_host_bin()),
        "{all}"
    );
    assert_eq!(mismatch[0]["actual"], pin_of(&pause_host_bin()), "{all}");

    assert!(p.events_of("plugin_spawn_decision").is_empty(), "{all}");
    assert!(p.events_of("hook_failed").is_empty(), "{all}");
    assert_eq!(p.events_of("round_start").len(), 1, "{all}");
    assert_eq!(p.events_of("round_end").len(), 1, "{all}");
    p.assert_agent_ran(1);
}

#[test]
fn unpinned_host_is_refused_under_require() {
    let p = paused_project("require", Pin::Unpinned);

    let out = p.run(&["round"]);
    out.assert_code(0);
    let all = p.events_text();

    let degraded = p.events_of("plugin_sandbox_degraded");
    assert_eq!(degraded.len(), 1, "{all}");
    assert_eq!(degraded[0]["name"], "pause", "{all}");
    assert_eq!(degraded[0]["requested"], "require", "{all}");
    assert!(
        degraded[0]["reason"].as_str().unwrap().contains("pause"),
        "{all}"
    );
    assert!(p.events_of("plugin_spawn_decision").is_empty(), "{all}");
    assert_eq!(p.events_of("round_end").len(), 1, "{all}");
    p.assert_agent_ran(1);
}

#[test]
fn unpinned_host_is_started_under_prefer() {
    let p = paused_project("prefer", Pin::Unpinned);

    let out = p.run(&["round"]);
    out.assert_code(75);
    assert!(out.stderr.contains("deferred"), "{out}");
    assert!(out.stderr.contains("held by the pause file"), "{out}");
    assert!(out.stderr.contains("pause_file"), "{out}");
    let all = p.events_text();

    let decision = p.events_of("plugin_spawn_decision");
    assert_eq!(decision.len(), 1, "{all}");
    assert_eq!(decision[0]["hook"], "pause_file", "{all}");
    assert_eq!(decision[0]["action"], "defer", "{all}");
    assert_eq!(decision[0]["defer_s"], 30, "{all}");
    // Full tier available: nothing to announce, and no round started.
    assert!(p.events_of("plugin_sandbox_degraded").is_empty(), "{all}");
    assert!(p.events_of("round_start").is_empty(), "{all}");
    assert!(!p.dir().join("notes").exists(), "the agent ran");
}

#[test]
fn verified_pin_under_require_consults_the_host() {
    let p = paused_project("require", Pin::Exact);

    let out = p.run(&["round", "--json"]);
    out.assert_code(75);
    let summary: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(out.stdout.trim()).expect("--json summary");
    assert_eq!(summary["started"], false, "{out}");
    assert_eq!(summary["action"], "defer", "{out}");
    assert_eq!(summary["hook"], "pause_file", "{out}");
    assert_eq!(summary["defer_s"], 30, "{out}");
    assert!(p.events_of("plugin_checksum_mismatch").is_empty());
    assert!(p.events_of("plugin_sandbox_degraded").is_empty());
    assert!(!p.dir().join("notes").exists(), "the agent ran");
}
