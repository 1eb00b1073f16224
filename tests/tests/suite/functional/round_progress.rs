//! `[monitor] round_progress_interval_s` on real rounds: while the agent runs, a
//! `round_progress` heartbeat every interval (the round log's size, how long since it
//! grew, how long the agent has run), none after the round ends; with 0, none at all.

use agent_runner_e2e::{ConfigBuilder, Project};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;

/// A project whose agent writes a 300-byte line, sleeps 3 s, writes another, exits 0;
/// `round_progress_interval_s = interval`. Runs one round; returns its events.
fn one_round(interval: u64) -> Vec<Value> {
    let p = Project::new();
    let agent = p.tmp_dir().join("agent.sh");
    let line = "x".repeat(299);
    std::fs::write(
        &agent,
        format!("#!/bin/sh\necho {line}\nsleep 3\necho done\n"),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = ConfigBuilder::new(&agent)
        .dirty_action("ignore")
        .extra(&format!(
            "[monitor]\nround_progress_interval_s = {interval}\n"
        ))
        .render();
    p.write_config_text(&text);
    let out = p.run(&["round"]);
    out.assert_code(0);
    assert!(!out.stderr.contains("warning"), "{out}");
    p.events()
}

#[test]
fn a_running_round_beats_every_interval_and_stops_at_its_end() {
    let events = one_round(1);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    let end = kinds
        .iter()
        .position(|k| *k == "round_end")
        .expect("round_end");
    let beats: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "round_progress")
        .collect();
    assert!(beats.len() >= 2, "{kinds:?}");
    // None after the round's end: every beat comes before `agent_exit`.
    let exit = kinds.iter().position(|k| *k == "agent_exit").unwrap();
    let spawn = kinds.iter().position(|k| *k == "agent_spawn").unwrap();
    for (i, k) in kinds.iter().enumerate() {
        if *k == "round_progress" {
            assert!(spawn < i && i < exit && exit < end, "{kinds:?}");
        }
    }
    let mut last_wall = 0.0;
    let mut stale = 0.0f64;
    for beat in &beats {
        assert_eq!(beat["round_num"], 1, "{beat}");
        let wall = beat["wall_age_s"].as_f64().expect("wall_age_s");
        assert!(wall >= last_wall, "wall_age_s went back: {beats:?}");
        assert!(wall < 10.0, "{beat}");
        last_wall = wall;
        // The first line (300 bytes) is written at once, before the first beat at 1 s.
        let kb = beat["log_size_kb"].as_f64().expect("log_size_kb");
        assert!(kb >= 0.29, "{beat}");
        stale = stale.max(beat["last_write_age_s"].as_f64().expect("last_write_age_s"));
    }
    // During the 3 s sleep the log does not grow: its age shows it.
    assert!(stale >= 1.0, "{beats:?}");
}

#[test]
fn no_heartbeat_when_the_key_is_0() {
    let events = one_round(0);
    assert!(
        events.iter().any(|e| e["event"] == "round_end"),
        "{events:?}"
    );
    assert!(
        !events.iter().any(|e| e["event"] == "round_progress"),
        "{events:?}"
    );
}
