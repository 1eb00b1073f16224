//! The loop's defenses on real processes: a budget kill that also catches a child which
//! ignores SIGTERM and left the group with `setsid`; the crash-loop breaker; the stop
//! file; round log retention; stops that land during a 60 s defer and during a hung hook
//! call; a `defer_s = 0` answer that does not spin.

use agent_runner_e2e::serde_json::json;
use agent_runner_e2e::{pause_host_bin, wait_until, ConfigBuilder, HostSpec, Project};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const HOSTILE: &str = env!("CARGO_BIN_EXE_ar-e2e-hostile");

/// Writes an executable shell script `name` next to the project (outside the tree).
fn script(p: &Project, name: &str, body: &str) -> PathBuf {
    let path = p.tmp_dir().join(name);
    std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s
                .rsplit_once(')')
                .map(|(_, r)| r.trim_start())
                .unwrap_or("");
            !state.starts_with('Z') && !state.starts_with('X')
        })
        .unwrap_or(false)
}

#[test]
fn budget_kill_reaches_a_setsid_child_that_ignores_sigterm() {
    let p = Project::new();
    let pidfile = p.tmp_dir().join("stray.pid");
    // The agent starts a child in a new session that ignores SIGTERM, records its pid,
    // then hangs past its budget (ignoring SIGTERM itself).
    let agent = script(
        &p,
        "leaky-agent.sh",
        &format!(
            "trap '' TERM\nsetsid bash -c 'trap \"\" TERM; echo $$ > {pid}; exec sleep 300' &\nwhile [ ! -s {pid} ]; do sleep 0.05; done\nsleep 300",
            pid = pidfile.display()
        ),
    );
    p.write_config(&ConfigBuilder::new(&agent).round_budget_s(1));
    let out = p.run(&["round", "--json"]);
    out.assert_code(0);
    let stray: u32 = std::fs::read_to_string(&pidfile)
        .expect("the agent recorded its detached child")
        .trim()
        .parse()
        .unwrap();
    let exit = p.wait_for_event("agent_exit");
    assert_eq!(exit["exit_cause"], "timeout", "{}", p.events_text());
    assert_eq!(exit["timed_out"], true);
    assert!(
        !alive(stray),
        "the setsid child {stray} that ignores SIGTERM survived the round"
    );
    assert!(
        p.processes().is_empty(),
        "processes left: {:?}",
        p.processes()
    );
}

#[test]
fn a_detached_daemon_of_a_clean_round_is_reaped_too() {
    let p = Project::new();
    let pidfile = p.tmp_dir().join("daemon.pid");
    let agent = script(
        &p,
        "daemon-agent.sh",
        &format!(
            "setsid bash -c 'echo $$ > {pid}; exec sleep 300' < /dev/null > /dev/null 2>&1 &\nwhile [ ! -s {pid} ]; do sleep 0.05; done\necho done",
            pid = pidfile.display()
        ),
    );
    p.write_config(&ConfigBuilder::new(&agent));
    p.run(&["round"]).assert_code(0);
    let daemon: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(daemon), "daemon {daemon} survived the round");
}

#[test]
fn five_fast_silent_failures_stop_serve_with_75() {
    let p = Project::new();
    let agent = script(&p, "crashing-agent.sh", "exit 3");
    p.write_config(&ConfigBuilder::new(&agent));
    let out = p
        .spawn(&["serve", "--max-rounds", "50"])
        .wait(Duration::from_secs(120));
    out.assert_code(75);
    let crash = p.events_of("crash_loop");
    assert_eq!(crash.len(), 1, "{}", p.events_text());
    assert_eq!(crash[0]["consecutive_failures"], 5);
    assert_eq!(p.events_of("agent_exit").len(), 5, "{}", p.events_text());
}

/// Real CLIs print a line when they fail: a failure with output counts like a silent one,
/// and the crash loop names the last failure and carries its log's last lines, in the
/// event, on stderr and in `peek`.
#[test]
fn failures_with_output_stop_serve_with_the_reason_and_the_last_lines() {
    let p = Project::new();
    let agent = script(
        &p,
        "noisy-failing-agent.sh",
        "echo 'working, then failing'; echo 'Error: the provider said no'; exit 3",
    );
    p.write_config(&ConfigBuilder::new(&agent));
    let out = p
        .spawn(&["serve", "--max-rounds", "50"])
        .wait(Duration::from_secs(120));
    out.assert_code(75);
    assert_eq!(p.events_of("agent_exit").len(), 5, "{}", p.events_text());
    let crash = p.events_of("crash_loop");
    assert_eq!(crash.len(), 1, "{}", p.events_text());
    assert_eq!(crash[0]["consecutive_failures"], 5);
    let reason = crash[0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("round 5: exit 3 after "), "{reason}");
    assert_eq!(
        crash[0]["last_lines"],
        serde_json::json!(["working, then failing", "Error: the provider said no"])
    );
    assert!(
        out.stderr.contains("rounds failed in a row")
            && out.stderr.contains("the provider said no"),
        "{}",
        out.stderr
    );
    let peek = p.run(&["peek", "--json"]);
    peek.assert_code(0);
    let doc: serde_json::Value = serde_json::from_str(&peek.stdout).unwrap();
    let shown = doc["recent_events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "crash_loop")
        .unwrap_or_else(|| panic!("no crash_loop in peek: {doc}"));
    assert_eq!(shown["reason"], crash[0]["reason"]);
}

/// A round that recovers resets the count: failures that do not come five in a row do
/// not stop serve.
#[test]
fn a_clean_round_between_failures_resets_the_breaker() {
    let p = Project::new();
    // Fails on rounds 1-4, succeeds on 5, fails on 6-9.
    let agent = script(
        &p,
        "flaky-agent.sh",
        "n=$AGENT_RUNNER_ROUND_NUM; echo \"round $n\"; [ \"$n\" = 5 ] && exit 0; exit 3",
    );
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("ignore"));
    let out = p
        .spawn(&["serve", "--max-rounds", "9"])
        .wait(Duration::from_secs(120));
    out.assert_code(0);
    assert!(p.events_of("crash_loop").is_empty(), "{}", p.events_text());
    assert_eq!(p.events_of("agent_exit").len(), 9);
}

/// A CLI whose detector reads usage (a stand-in named `codex`) that exits 0 at once,
/// changes nothing and reports no usage did nothing: five such rounds stop serve
/// (`stalled_no_progress`, exit 75). The demo agent, which changes the tree every round,
/// and a script no built-in detector knows are not stopped.
#[test]
fn fast_clean_rounds_that_do_nothing_stop_serve_as_stalled() {
    let p = Project::new();
    let codex = p.script("bin/codex", "#!/bin/sh\necho 'nothing to do'\nexit 0\n");
    p.write_config(&ConfigBuilder::new(&codex));
    let out = p
        .spawn(&["serve", "--max-rounds", "20"])
        .wait(Duration::from_secs(120));
    out.assert_code(75);
    assert_eq!(p.events_of("agent_exit").len(), 5, "{}", p.events_text());
    let stalled = p.events_of("stalled_no_progress");
    assert_eq!(stalled.len(), 1, "{}", p.events_text());
    assert_eq!(stalled[0]["consecutive_rounds"], 5);
    assert_eq!(
        stalled[0]["last_lines"],
        serde_json::json!(["nothing to do"])
    );
    assert!(out.stderr.contains("stalled_no_progress"), "{}", out.stderr);

    // The same script under another name: no built-in detector knows it, nothing judged.
    let p = Project::new();
    let other = p.script(
        "bin/quiet-agent",
        "#!/bin/sh\necho 'nothing to do'\nexit 0\n",
    );
    p.write_config(&ConfigBuilder::new(&other));
    p.spawn(&["serve", "--max-rounds", "6"])
        .wait(Duration::from_secs(120))
        .assert_code(0);
    assert!(
        p.events_of("stalled_no_progress").is_empty(),
        "{}",
        p.events_text()
    );
}

#[test]
fn stop_file_stops_serve_before_the_next_round() {
    let p = Project::new();
    let stop = p.tmp_dir().join("STOP");
    let agent = script(
        &p,
        "stopping-agent.sh",
        &format!("echo round $AGENT_RUNNER_ROUND_NUM; [ \"$AGENT_RUNNER_ROUND_NUM\" = 2 ] && echo all done > {}; exit 0", stop.display()),
    );
    // stop_file belongs in [runtime].
    let text = ConfigBuilder::new(&agent).render().replace(
        "[runtime]\n",
        &format!("[runtime]\nstop_file = \"{}\"\n", stop.display()),
    );
    p.write_config_text(&text);
    let out = p
        .spawn(&["serve", "--max-rounds", "10"])
        .wait(Duration::from_secs(120));
    out.assert_code(0);
    let detected = p.events_of("stop_file_detected");
    assert_eq!(detected.len(), 1, "{}", p.events_text());
    assert_eq!(detected[0]["rounds_completed"], 2);
    assert_eq!(detected[0]["stop_file"], detected[0]["path"]);
    assert_eq!(detected[0]["content"], "all done\n", "{}", detected[0]);
    assert_eq!(p.events_of("round_start").len(), 2);
}

#[test]
fn round_log_retention_keeps_the_newest_logs() {
    let p = Project::new();
    let agent = script(&p, "chatty-agent.sh", "echo round $AGENT_RUNNER_ROUND_NUM");
    let text = ConfigBuilder::new(&agent)
        .render()
        .replace("[runtime]\n", "[runtime]\nround_log_retention = 2\n");
    p.write_config_text(&text);
    for _ in 0..4 {
        p.run(&["round"]).assert_code(0);
    }
    let mut logs: Vec<String> = std::fs::read_dir(p.log_dir().join("rounds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert!(
        logs[0].starts_with("R3-") && logs[1].starts_with("R4-"),
        "{logs:?}"
    );
    let pruned = p.events_of("round_logs_pruned");
    assert_eq!(pruned.len(), 2, "{}", p.events_text());
    assert_eq!(pruned[0]["keep"], 2);
}

fn pause_config(p: &Project, defer_s: u64) -> ConfigBuilder {
    p.config().spawn_override_allow(&["pause_file"]).host(
        HostSpec::new("pause", pause_host_bin()).config(json!({
            "file": ".agent-runner-pause", "defer_s": defer_s, "reason": "paused by the test"
        })),
    )
}

#[test]
fn stop_lands_during_a_60_s_defer() {
    let p = Project::new();
    p.write_config(&pause_config(&p, 60));
    p.write(".agent-runner-pause", "");
    let serve = p.spawn(&["serve"]);
    p.wait_for_event("round_deferred");
    let started = Instant::now();
    p.run(&["stop"]).assert_code(0);
    // A hang guard, not a speed assertion (bench/stop_latency.sh measures it).
    let out = serve.wait(Duration::from_secs(10));
    out.assert_code(0);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(p.events_of("round_start").is_empty(), "{}", p.events_text());
    assert_eq!(
        p.events_of("serve_stopping").len(),
        1,
        "{}",
        p.events_text()
    );
}

#[test]
fn stop_lands_during_a_hung_hook_call() {
    let p = Project::new();
    p.write_config(
        &p.config().host(
            HostSpec::new("sleepy", HOSTILE)
                .timeout_s(120)
                .config(json!({"attempt": "hang", "hook": "sleepy"})),
        ),
    );
    let serve = p.spawn(&["serve"]);
    let host = wait_until("the hook host to start", Duration::from_secs(30), || {
        p.host_pids(&[std::path::Path::new(HOSTILE)])
            .into_iter()
            .next()
    });
    // Wait until the call has reached the host (it sleeps in it).
    wait_until("the hook call in flight", Duration::from_secs(30), || {
        agent_runner_e2e::sleeping(host).then_some(())
    });
    serve.signal(libc::SIGTERM);
    let out = serve.wait(Duration::from_secs(10));
    out.assert_code(0);
    assert!(p.events_of("round_start").is_empty(), "{}", p.events_text());
    assert!(!alive(host), "the hung host {host} survived the stop");
}

#[test]
fn defer_zero_is_asked_again_at_most_once_a_second() {
    let p = Project::new();
    p.write_config(&pause_config(&p, 0));
    p.write(".agent-runner-pause", "");
    let serve = p.spawn(&["serve"]);
    p.wait_for_event("round_deferred");
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    serve.signal(libc::SIGTERM);
    serve.wait(Duration::from_secs(10)).assert_code(0);
    let elapsed = started.elapsed().as_secs_f64();
    let decisions = p.events_of("plugin_spawn_decision").len();
    let deferred = p.events_of("round_deferred").len();
    // One decision event per decision: each is followed by its round_deferred, except a
    // last one answered while the stop arrived.
    assert!(
        decisions == deferred || decisions == deferred + 1,
        "{decisions} decisions, {deferred} deferrals"
    );
    // ~1 per second (MIN_REASK); a spinning loop would make dozens.
    assert!(
        (decisions as f64) <= elapsed + 2.0,
        "{decisions} decisions in {elapsed:.1} s:\n{}",
        p.events_text()
    );
    assert!(decisions >= 2, "{}", p.events_text());
}

#[test]
fn an_agent_that_cannot_start_trips_the_breaker_too() {
    let p = Project::new();
    let missing = p.tmp_dir().join("no-such-agent");
    p.write_config(&ConfigBuilder::new(&missing));
    let out = p
        .spawn(&["serve", "--max-rounds", "50"])
        .wait(Duration::from_secs(120));
    out.assert_code(75);
    assert_eq!(
        p.events_of("agent_spawn_failed").len(),
        5,
        "{}",
        p.events_text()
    );
    assert_eq!(p.events_of("crash_loop").len(), 1, "{}", p.events_text());
}
