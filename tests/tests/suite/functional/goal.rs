//! `[goal]` on real processes: a shell agent working toward a file-based goal under
//! `serve`; checks in their own process group under their timeout; the treadmill advisory
//! (edge-triggered, prepended to the ledger, never a stop); `stop_when = "all_satisfied"`;
//! `[runtime] max_duration_s` and `max_rounds_per_hour`.

use agent_runner_e2e::{toml_string, wait_until, ConfigBuilder, Project};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// An executable shell script in the project's temp dir (outside the tree).
fn script(p: &Project, name: &str, body: &str) -> PathBuf {
    let path = p.tmp_dir().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A config running `agent` with the ledger in `logs/` and `goal` appended (checks).
fn config(agent: &std::path::Path, goal: &str, runtime: &str) -> String {
    ConfigBuilder::new(agent)
        .dirty_action("auto_commit")
        .render()
        .replace(
            "file = \"./prompts/main.md\"",
            "files = [\"./prompts/main.md\", \"./logs/lessons.md\"]",
        )
        .replace(
            "restart_delay_s = 1\n",
            &format!("restart_delay_s = 1\n{runtime}"),
        )
        + &format!("[goal]\nledger = \"./logs/lessons.md\"\n{goal}")
}

/// An agent that adds one line to `progress.txt` per round.
fn worker(p: &Project) -> PathBuf {
    script(
        p,
        "worker.sh",
        "echo \"step $AGENT_RUNNER_ROUND_NUM\" >> progress.txt\n",
    )
}

/// A check passing once `progress.txt` has `n` lines; it prints the count.
fn progress_check(n: u32) -> String {
    format!(
        "[[goal.checks]]\nname = \"progress\"\ncmd = [\"sh\", \"-c\", \"c=$(cat progress.txt 2>/dev/null | wc -l); echo $c; [ $c -ge {n} ]\"]\ntimeout_s = 5\n"
    )
}

#[test]
fn serve_ends_with_goal_reached_once_every_check_passes() {
    let p = Project::new();
    let agent = worker(&p);
    let text = config(
        &agent,
        &format!("stop_when = \"all_satisfied\"\n{}", progress_check(3)),
        "",
    );
    p.write_config_text(&text);
    let out = p.run(&["serve", "--max-rounds", "10"]);
    out.assert_code(0);
    let checks = p.events_of("goal_check");
    let values: Vec<(bool, f64)> = checks
        .iter()
        .map(|c| (c["satisfied"] == true, c["value"].as_f64().unwrap()))
        .collect();
    assert_eq!(
        values,
        [(false, 1.0), (false, 2.0), (true, 3.0)],
        "{}",
        p.events_text()
    );
    let reached = p.events_of("goal_reached");
    assert_eq!(reached.len(), 1, "{}", p.events_text());
    assert_eq!(reached[0]["round_num"], 3);
    assert_eq!(reached[0]["checks"], serde_json::json!(["progress"]));
    assert_eq!(p.events_of("round_start").len(), 3, "rounds saved: 7 of 10");
    // The checks ran before the dirty tree was handled: the round's own commit follows.
    let kinds = p.event_kinds();
    let check_at = kinds.iter().position(|k| k == "goal_check").unwrap();
    let commit_at = kinds
        .iter()
        .position(|k| k == "dirty_auto_committed")
        .unwrap();
    assert!(check_at < commit_at, "{kinds:?}");
    assert!(p.events_of("goal_assessment").is_empty());
}

#[test]
fn the_treadmill_advisory_is_prepended_once_and_never_stops_serve() {
    let p = Project::new();
    let agent = worker(&p);
    let check =
        "[[goal.checks]]\nname = \"tests\"\ncmd = [\"sh\", \"-c\", \"echo failing 4; exit 1\"]\n";
    p.write_config_text(&config(&agent, check, ""));
    std::fs::create_dir_all(p.dir().join("logs")).unwrap();
    std::fs::write(p.dir().join("logs/lessons.md"), "Operator's lesson.\n").unwrap();
    let out = p.run(&["serve", "--max-rounds", "6"]);
    out.assert_code(0);
    assert_eq!(p.events_of("round_start").len(), 6, "{}", p.events_text());
    let checks = p.events_of("goal_check");
    assert!(checks
        .iter()
        .all(|c| c["satisfied"] == false && c["value"] == 4.0));
    let assessments = p.events_of("goal_assessment");
    assert_eq!(assessments.len(), 1, "edge-triggered: {}", p.events_text());
    assert!(assessments[0]["observation"]
        .as_str()
        .unwrap()
        .contains("tests"));
    // Fired before round 4 started: after three rounds that each changed the tree.
    let kinds = p.event_kinds();
    let at = kinds.iter().position(|k| k == "goal_assessment").unwrap();
    let starts_before = kinds[..at].iter().filter(|k| *k == "round_start").count();
    assert_eq!(starts_before, 3, "{kinds:?}");
    let ledger = std::fs::read_to_string(p.dir().join("logs/lessons.md")).unwrap();
    assert!(ledger.starts_with("### Goal assessment"), "{ledger}");
    assert!(ledger.ends_with("Operator's lesson.\n"), "{ledger}");
    // The agent was shown the ledger in its prompt from round 4 on.
    let logs = std::fs::read_dir(p.log_dir().join("rounds"))
        .unwrap()
        .count();
    assert_eq!(logs, 6);
}

#[test]
fn a_check_runs_in_its_own_group_under_its_timeout() {
    let p = Project::new();
    let agent = worker(&p);
    let bg = p.tmp_dir().join("bg.pid");
    let bg_text = toml_string(&bg.display().to_string());
    // Ignores SIGTERM and leaves a background sleeper in its group: both are gone once
    // the SIGKILL of the group lands.
    let checks = format!(
        "[[goal.checks]]\nname = \"stuck\"\ncmd = [\"sh\", \"-c\", \"trap '' TERM; sleep 60 & echo $! > {bg}; echo 7; wait\"]\ntimeout_s = 1\n\
         [[goal.checks]]\nname = \"missing\"\ncmd = [\"/nonexistent/check\"]\n\
         [[goal.checks]]\nname = \"in_subdir\"\ncmd = [\"sh\", \"-c\", \"pwd\"]\ncwd = \"logs\"\n",
        bg = bg_text.trim_matches('"')
    );
    p.write_config_text(&config(&agent, &checks, ""));
    std::fs::create_dir_all(p.dir().join("logs")).unwrap();
    let started = Instant::now();
    p.run(&["round"]).assert_code(0);
    let took = started.elapsed();
    let checks = p.events_of("goal_check");
    assert_eq!(checks.len(), 3, "{}", p.events_text());
    assert_eq!(checks[0]["name"], "stuck");
    assert_eq!(checks[0]["timed_out"], true);
    assert_eq!(checks[0]["satisfied"], false);
    assert_eq!(checks[0]["value"], 7.0, "output before the kill is read");
    assert_eq!(checks[1]["satisfied"], false);
    assert!(checks[1]["error"]
        .as_str()
        .unwrap()
        .contains("cannot start"));
    assert_eq!(checks[2]["satisfied"], true, "{}", checks[2]);
    let pid: i32 = std::fs::read_to_string(&bg)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty(),
        "the check's background sleeper {pid} survived: {stat}"
    );
    // timeout 1 s + TERM→KILL grace 3 s, far below the sleeper's 60 s.
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn max_duration_ends_serve_and_the_rate_ceiling_pauses_it_across_restarts() {
    let p = Project::new();
    let agent = worker(&p);
    p.write_config_text(&config(&agent, "", "max_duration_s = 3\n"));
    let out = p.run(&["serve"]);
    out.assert_code(0);
    let reached = p.events_of("max_duration_reached");
    assert_eq!(reached.len(), 1, "{}", p.events_text());
    assert!(reached[0]["elapsed_s"].as_f64().unwrap() >= 3.0);
    assert_eq!(reached[0]["max_duration_s"], 3);
    let rounds = p.events_of("round_start").len();
    assert!(rounds >= 1, "{}", p.events_text());

    // Rounds already in the last hour count: the ceiling holds serve back at once.
    let ceiling = rounds as u64 + 1;
    p.write_config_text(&config(
        &agent,
        "",
        &format!("max_rounds_per_hour = {ceiling}\n"),
    ));
    let serve = p.spawn(&["serve"]);
    let paused = wait_until("rate_ceiling_paused", Duration::from_secs(30), || {
        p.events_of("rate_ceiling_paused").into_iter().next()
    });
    assert_eq!(paused["rounds_last_hour"], ceiling);
    assert_eq!(paused["max_rounds_per_hour"], ceiling);
    let resume = paused["resume_in_s"].as_f64().unwrap();
    assert!(resume > 3000.0 && resume <= 3600.0, "{paused}");
    assert_eq!(p.events_of("round_start").len() as u64, ceiling);
    serve.signal(libc::SIGTERM);
    serve.wait(Duration::from_secs(10)).assert_code(0);
    let resumed = p.events_of("rate_ceiling_resumed");
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0]["reason"], "stop");
}

/// `serve --job` (docs/operations.md, "Running as a Job"): 0 only with the goal reached;
/// the stop file and the agent's `.agent-done` before the goal exit 79, where plain `serve`
/// (the control) exits 0; no goal that can end the run is refused (78).
#[test]
fn serve_job_exits_0_only_at_the_goal() {
    let p = Project::new();
    let agent = worker(&p);
    let goal = format!("stop_when = \"all_satisfied\"\n{}", progress_check(2));
    p.write_config_text(&config(&agent, &goal, ""));
    let out = p.run(&["serve", "--job", "--max-rounds", "10"]);
    out.assert_code(0);
    assert_eq!(p.events_of("goal_reached").len(), 1, "{}", p.events_text());

    // The stop file, present before the first round.
    let p = Project::new();
    let agent = worker(&p);
    let stop = p.tmp_dir().join("STOP");
    std::fs::write(&stop, "enough\n").unwrap();
    let runtime = format!("stop_file = {}\n", toml_string(&stop.to_string_lossy()));
    p.write_config_text(&config(&agent, &goal, &runtime));
    let out = p.run(&["serve", "--job", "--max-rounds", "10"]);
    out.assert_code(79);
    assert!(
        out.stderr
            .contains("ended before the goal was reached (exit 79: the Job fails)"),
        "{}",
        out.stderr
    );
    assert_eq!(p.events_of("stop_file_detected").len(), 1);
    p.run(&["serve", "--max-rounds", "10"]).assert_code(0);

    // The agent says it is done after its first round; the goal says otherwise.
    let p = Project::new();
    let agent = script(
        &p,
        "done.sh",
        "echo step >> progress.txt\necho finished > \"$AGENT_RUNNER_LOG_DIR/.agent-done\"\n",
    );
    p.write_config_text(&config(&agent, &goal, ""));
    let out = p.run(&["serve", "--job", "--max-rounds", "10"]);
    out.assert_code(79);
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
    assert_eq!(
        p.events_of("agent_self_terminated").len(),
        1,
        "{}",
        p.events_text()
    );

    // No goal that can end the run.
    let p = Project::new();
    let agent = worker(&p);
    p.write_config_text(&config(&agent, &progress_check(2), ""));
    let out = p.run(&["serve", "--job", "--max-rounds", "1"]);
    out.assert_code(78);
    assert!(out.stderr.contains("goal.stop_when"), "{}", out.stderr);
    assert!(p.events_of("round_start").is_empty());
}

/// `serve --job` and SIGTERM during a round: 143 (a drain, retried) while the run has
/// rounds left; 79 when that round was the last `--max-rounds` allowed (the stop changed
/// nothing: the run ended at its bound). The round ends recorded either way.
#[test]
fn serve_job_reads_a_stop_as_a_drain_only_before_its_bound() {
    let goal = format!("stop_when = \"all_satisfied\"\n{}", progress_check(99));
    for (max_rounds, code) in [("10", 143), ("1", 79)] {
        let p = Project::new();
        let agent = script(&p, "slow.sh", "sleep 3\necho step >> progress.txt\n");
        p.write_config_text(&config(&agent, &goal, ""));
        let serve = p.spawn(&["serve", "--job", "--max-rounds", max_rounds]);
        p.wait_for_event("agent_spawn");
        serve.signal(libc::SIGTERM);
        let out = serve.wait(Duration::from_secs(60));
        out.assert_code(code);
        assert_eq!(p.events_of("round_end").len(), 1, "{}", p.events_text());
        let stopping = p.events_of("serve_stopping");
        assert_eq!(stopping[0]["reason"], "signal", "{}", p.events_text());
    }
}
