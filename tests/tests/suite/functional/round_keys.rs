//! The round keys beyond the reference system's basics, on real rounds: `exec_prefix`
//! (`{work_dir}` substituted), `fresh_eyes_every_n`, `narrative_file`,
//! `substrate_fingerprint_paths`, and result grace (`terminal_marker`,
//! `max_grace_after_result_s`, `grace_kill_ignore_patterns`).

use agent_runner_e2e::{toml_string, ConfigBuilder, Project};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// Writes an executable shell script `name` into the project's temp dir (outside the tree).
fn script(p: &Project, name: &str, body: &str) -> PathBuf {
    let path = p.tmp_dir().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn prefix_fresh_eyes_narrative_and_substrate() {
    let p = Project::new();
    p.write("docs/a.md", "first\n");
    p.git(&["add", "docs/a.md"]);
    p.git(&["commit", "-qm", "docs"]);
    let seen = p.tmp_dir().join("seen.txt");
    let agent = script(
        &p,
        "agent.sh",
        &format!(
            "echo \"round=$AGENT_RUNNER_ROUND_NUM prefixed=$AR_PREFIXED fresh=$AGENT_RUNNER_FRESH_EYES narrative=$AGENT_RUNNER_NARRATIVE_FILE\" >> {seen}\n\
             echo \"round $AGENT_RUNNER_ROUND_NUM\" >> docs/a.md\n",
            seen = toml_string(&seen.display().to_string()).trim_matches('"')
        ),
    );
    let text = ConfigBuilder::new(&agent)
        .dirty_action("ignore")
        .render()
        .replace(
            "prompt_delivery = \"argv\"\n",
            "prompt_delivery = \"argv\"\nexec_prefix = [\"env\", \"AR_PREFIXED={work_dir}\"]\n",
        )
        .replace(
            "restart_delay_s = 1\n",
            "restart_delay_s = 1\nfresh_eyes_every_n = 2\nnarrative_file = \"notes/narrative.md\"\nsubstrate_fingerprint_paths = [\"docs/*.md\"]\n",
        );
    p.write_config_text(&text);
    let out = p.run(&["serve", "--max-rounds", "2"]);
    out.assert_code(0);
    assert!(!out.stderr.contains("not implemented"), "{out}");
    let work_dir = p.dir().display().to_string();
    let narrative = p.dir().join("notes/narrative.md").display().to_string();
    let lines: Vec<String> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        lines,
        [
            format!("round=1 prefixed={work_dir} fresh=0 narrative={narrative}"),
            format!("round=2 prefixed={work_dir} fresh=1 narrative={narrative}"),
        ]
    );
    let fresh = p.events_of("fresh_eyes_round_triggered");
    assert_eq!(fresh.len(), 1, "{}", p.events_text());
    assert_eq!(
        (fresh[0]["round_num"].as_u64(), fresh[0]["every_n"].as_u64()),
        (Some(2), Some(2))
    );
    let before = p.events_of("round_substrate_before");
    let after = p.events_of("round_substrate_after");
    assert_eq!((before.len(), after.len()), (2, 2), "{}", p.events_text());
    let head = p.git(&["rev-parse", "HEAD"]).trim().to_owned();
    for event in before.iter().chain(&after) {
        assert_eq!(event["git_head"], head.as_str(), "{event}");
        assert!(
            event["paths_hash"]
                .as_str()
                .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit())),
            "{event}"
        );
    }
    // The agent changed docs/a.md in each round: each round's hash moves.
    assert_ne!(before[0]["paths_hash"], after[0]["paths_hash"]);
    assert_eq!(after[0]["paths_hash"], before[1]["paths_hash"]);
    p.assert_events_whole();
}

/// Runs one round of an agent that prints claude's result record and then does `then`.
fn grace_round(p: &Project, then: &str, ignore: &[&str]) -> agent_runner_e2e::RunOutput {
    let agent = script(
        p,
        "lingering.sh",
        &format!(
            "echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false}}'\n{then}\n"
        ),
    );
    let patterns: Vec<String> = ignore.iter().map(|p| toml_string(p)).collect();
    let text = ConfigBuilder::new(&agent)
        .dirty_action("ignore")
        .round_budget_s(6)
        .render()
        .replace(
            "restart_delay_s = 1\n",
            &format!(
                "restart_delay_s = 1\nmax_grace_after_result_s = 1\ngrace_kill_ignore_patterns = [{}]\n",
                patterns.join(", ")
            ),
        );
    p.write_config_text(&text);
    p.run(&["round"])
}

#[test]
fn an_agent_lingering_after_its_result_is_ended_after_the_grace() {
    // The agent itself lingers (no children): ended after the grace, well before the budget.
    let p = Project::new();
    let out = grace_round(&p, "exec sleep 60", &[]);
    out.assert_code(0);
    let exit = &p.events_of("agent_exit")[0];
    assert_eq!(exit["exit_cause"], "grace_kill", "{exit}");
    // The reference reports a grace kill as timed out.
    assert_eq!(exit["timed_out"], true, "{exit}");
    assert!(exit["duration_s"].as_f64().unwrap() < 5.0, "{exit}");
    assert_eq!(p.events_of("round_grace_kill").len(), 1);
    assert!(p.events_of("round_grace_extended").is_empty());

    // A child at work keeps it alive until the budget: recorded once as extended.
    let p = Project::new();
    let out = grace_round(&p, "sleep 30 &\ntail -f /dev/null &\nwait", &["^tail "]);
    out.assert_code(0); // ended by its budget
    let exit = &p.events_of("agent_exit")[0];
    assert_eq!(exit["exit_cause"], "timeout", "{exit}");
    let extended = p.events_of("round_grace_extended");
    assert_eq!(extended.len(), 1, "{}", p.events_text());
    // The reference's shape: objects with the process name and pid, never the command
    // line; an ignored child names the pattern it matched.
    let live = &extended[0]["live_children"];
    assert_eq!(live.as_array().map(Vec::len), Some(1), "{}", extended[0]);
    assert_eq!(live[0]["name"], "sleep", "{}", extended[0]);
    assert!(
        live[0]["pid"].as_u64().is_some_and(|p| p > 1),
        "{}",
        extended[0]
    );
    assert!(live[0].get("matched").is_none(), "{}", extended[0]);
    let ignored = &extended[0]["ignored_children"];
    assert_eq!(ignored.as_array().map(Vec::len), Some(1), "{}", extended[0]);
    assert_eq!(ignored[0]["name"], "tail", "{}", extended[0]);
    assert_eq!(ignored[0]["matched"], "^tail ", "{}", extended[0]);
    assert!(ignored[0]["pid"].as_u64().is_some(), "{}", extended[0]);

    // The same child matched by grace_kill_ignore_patterns does not count.
    let p = Project::new();
    let out = grace_round(&p, "sleep 30 &\nwait", &["^sleep 30$"]);
    out.assert_code(0);
    assert_eq!(p.events_of("agent_exit")[0]["exit_cause"], "grace_kill");
    assert_eq!(
        p.events_of("round_grace_kill").len(),
        1,
        "{}",
        p.events_text()
    );

    // Without the marker the grace never starts: the budget ends the round.
    let p = Project::new();
    let agent = script(&p, "quiet.sh", "exec sleep 60\n");
    let text = ConfigBuilder::new(&agent)
        .round_budget_s(3)
        .render()
        .replace(
            "restart_delay_s = 1\n",
            "restart_delay_s = 1\nmax_grace_after_result_s = 1\n",
        );
    p.write_config_text(&text);
    p.run(&["round"]).assert_code(0); // ended by its budget
    assert_eq!(p.events_of("agent_exit")[0]["exit_cause"], "timeout");
    assert!(p.events_of("round_grace_kill").is_empty());
}
