//! Issue 17, case 9: an agent's flood of output does not make an unbounded round log. The
//! log keeps `round_log_max_bytes`, then a marker line; `round_log_capped` records what was
//! discarded; `round_log_retention_bytes` bounds the logs' total size.

use agent_runner_e2e::Project;

const CAP: u64 = 100_000;
const FLOOD: u64 = 1_000_000;

fn flooding_project(extra_runtime: &str) -> Project {
    let p = Project::new();
    let agent = p.script(
        "flood.sh",
        &format!("#!/bin/sh\nhead -c {FLOOD} /dev/zero | tr '\\0' x\n"),
    );
    let text = agent_runner_e2e::ConfigBuilder::new(&agent)
        .render()
        .replace(
            "[runtime]\n",
            &format!("[runtime]\nround_log_max_bytes = {CAP}\n{extra_runtime}"),
        );
    p.write_config_text(&text);
    p
}

#[test]
fn a_flood_is_capped_with_a_marker_and_an_event() {
    let p = flooding_project("");
    p.run(&["round"]).assert_code(0);
    let logs = p.round_logs();
    assert_eq!(logs.len(), 1);
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    let marker = format!("[agent-runner: round log cap of {CAP} bytes reached");
    let at = text.find(&marker).unwrap_or_else(|| panic!("no marker"));
    assert_eq!(at as u64, CAP + 1, "the cap's bytes, a newline, the marker");
    assert!(text.len() < CAP as usize + 200, "{}", text.len());
    let capped = p.wait_for_event("round_log_capped");
    assert_eq!(capped["cap_bytes"], CAP, "{capped}");
    assert_eq!(capped["discarded_bytes"], FLOOD - CAP, "{capped}");
}

#[test]
fn retention_by_total_size_bounds_the_logs() {
    let p = flooding_project("round_log_retention_bytes = 250000\n");
    p.run(&["serve", "--max-rounds", "4"]).assert_code(0);
    assert_eq!(p.events_of("round_end").len(), 4, "{}", p.events_text());
    let logs = p.round_logs();
    let total: u64 = logs
        .iter()
        .map(|l| std::fs::metadata(l).unwrap().len())
        .sum();
    assert!(total <= 250_000, "{total} bytes in {logs:?}");
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert!(logs.iter().any(|l| l.to_string_lossy().contains("/R4-")));
    assert!(!p.events_of("round_logs_pruned").is_empty());
}
