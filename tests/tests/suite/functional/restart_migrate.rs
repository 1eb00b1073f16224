//! `restart [--force]` on a real detached `serve`, and `migrate [--dry-run]` on configs
//! written for the reference system: what it rewrites, what it leaves to the operator,
//! and its exit codes (0 nothing left, 1 by hand, 2 not TOML).

use agent_runner_e2e::{wait_until, ConfigBuilder, Project};
use std::time::Duration;

/// The pid `status --json` reports, when a supervisor runs.
fn serve_pid(p: &Project) -> Option<u64> {
    let out = p.run(&["status", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).ok()?;
    doc["pid"].as_u64()
}

#[test]
fn restart_stops_the_running_serve_and_starts_a_new_one() {
    let p = Project::new();
    p.write_config(
        &ConfigBuilder::new(p.agent_path())
            .agent_env("DEMO_AGENT_SLEEP", "30")
            .round_budget_s(120),
    );
    p.run(&["start"]).assert_code(0);
    let first = serve_pid(&p).expect("serve runs");
    wait_until("the first agent", Duration::from_secs(30), || {
        (!p.events_of("agent_spawn").is_empty()).then_some(())
    });
    // --force: the round's agent is ended now, not after its 30 s.
    let out = p.run(&["restart", "--force"]);
    out.assert_code(0);
    let second = serve_pid(&p).expect("serve runs again");
    assert_ne!(first, second, "{out}");
    let exits = p.events_of("agent_exit");
    assert_eq!(exits.len(), 1, "{}", p.events_text());
    assert_eq!(exits[0]["exit_cause"], "stopped");
    // Graceful: the running round finishes first (its agent exits by itself).
    p.write_config(&ConfigBuilder::new(p.agent_path()).agent_env("DEMO_AGENT_SLEEP", "1"));
    wait_until("a round of the new serve", Duration::from_secs(60), || {
        (p.events_of("agent_spawn").len() >= 2).then_some(())
    });
    p.run(&["restart"]).assert_code(0);
    let third = serve_pid(&p).expect("serve runs again");
    assert_ne!(second, third);
    let exits = p.events_of("agent_exit");
    assert!(
        exits[1..].iter().all(|e| e["exit_cause"] == "exited"),
        "{}",
        p.events_text()
    );
    p.run(&["kill"]).assert_code(0);
    wait_until("serve ends", Duration::from_secs(30), || {
        serve_pid(&p).is_none().then_some(())
    });
}

#[test]
fn restart_with_nothing_running_starts_serve() {
    let p = Project::new();
    p.write_config(&ConfigBuilder::new(p.agent_path()).agent_env("DEMO_AGENT_SLEEP", "30"));
    p.run(&["restart"]).assert_code(0);
    assert!(serve_pid(&p).is_some());
    p.run(&["kill"]).assert_code(0);
    wait_until("serve ends", Duration::from_secs(30), || {
        serve_pid(&p).is_none().then_some(())
    });
}

#[test]
fn migrate_rewrites_what_it_can_and_names_what_needs_a_hand() {
    let p = Project::new();
    let agent = p.agent_path().display().to_string();
    let old = format!(
        "# my agent\n[agent]\ncommand = \"{agent}\"\n\n[runtime]\nwork_dir = \".\"\nlog_dir = \"./logs\"\nround_timeout_s = 60 # a minute\nrate_limit_action = \"back_off\"\n\n[vcs]\norphan_action = \"stash\"\n\n[monitor]\nauto_stop_on = \"oauth_fail\"\n\n[monitor.host_health.disk]\nwarning_pct = 100\ncritical_pct = 100\n\n[plugins.pin]\nmy_gate = \"sha256:{}\"\n",
        "a".repeat(64)
    );
    p.write_config_text(&old);
    p.run(&["round"]).assert_code(78);
    let dry = p.run(&["migrate", "--dry-run"]);
    dry.assert_code(1);
    assert!(
        dry.stdout
            .contains("would change: runtime.round_timeout_s → runtime.round_budget_s"),
        "{dry}"
    );
    assert_eq!(
        std::fs::read_to_string(p.config_path()).unwrap(),
        old,
        "dry run wrote"
    );
    let out = p.run(&["migrate", "--json"]);
    out.assert_code(1);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let changed: Vec<&str> = report["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(changed.len(), 6, "{changed:?}");
    assert!(report["manual"][0]
        .as_str()
        .unwrap()
        .starts_with("plugins.pin.my_gate"));
    assert_eq!(report["written"], true);
    let bak = p.dir().join("agent-runner.toml.bak");
    assert_eq!(std::fs::read_to_string(&bak).unwrap(), old);
    let text = std::fs::read_to_string(p.config_path()).unwrap();
    assert!(text.starts_with("schema_version = 1"), "{text}");
    assert!(
        text.contains("# my agent") && text.contains("# a minute"),
        "comments kept: {text}"
    );
    assert!(text.contains(&format!("command = [\"{agent}\"]")), "{text}");
    // The operator deletes the pin: nothing is left, and the config loads.
    let fixed: String = text
        .lines()
        .filter(|l| !l.contains("my_gate") && !l.contains("[plugins.pin]"))
        .map(|l| format!("{l}\n"))
        .collect();
    p.write_config_text(&fixed);
    let out = p.run(&["migrate"]);
    out.assert_code(0);
    assert!(out.stdout.contains("nothing to migrate"), "{out}");
    p.run(&["round"]).assert_code(0);
    let events = p.events_of("agent_spawn");
    assert_eq!(
        events[0]["timeout_s"], 60,
        "round_timeout_s became the budget"
    );
    // Not TOML: exit 2, nothing written.
    p.write_config_text("[agent\n");
    p.run(&["migrate"]).assert_code(2);
}

#[test]
fn reference_preset_configs_need_no_migration() {
    let root = agent_runner_e2e::workspace_root().join("tests/fixtures/peer-presets");
    for preset in ["claude", "aider", "gemini", "codewhale", "kimi", "pi"] {
        let p = Project::new();
        let text = std::fs::read_to_string(root.join(format!("{preset}.toml"))).unwrap();
        p.write_config_text(&text);
        let out = p.run(&["migrate", "--dry-run"]);
        out.assert_code(0);
        assert!(out.stdout.contains("nothing to migrate"), "{preset}: {out}");
    }
}
