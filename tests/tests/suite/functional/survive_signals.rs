//! Issue 17, cases 7 and 11: SIGHUP re-reads the config and never kills `serve`; SIGINT is
//! graceful like SIGTERM; `serve` follows edits of `agent-runner.toml` before every round,
//! keeps the last good config when an edit is broken, and restarts only the hosts whose
//! entry changed (docs/configuration.md, "Config follows the file").

use agent_runner_e2e::{wait_until, HostSpec, Project, EVENT_TIMEOUT};
use serde_json::{json, Value};
use sha2::Digest;
use std::time::Duration;

const HOSTILE: &str = env!("CARGO_BIN_EXE_ar-e2e-hostile");

/// A project whose agent sleeps `sleep_s`, confined (`prefer`): its config is read-only to
/// the agent, so an edit in place during a round can only be the operator's and applies
/// (an unconfined agent's round makes such an edit untrusted: `config_identity.rs`).
fn sleepy_project(sleep_s: &str) -> Project {
    let p = Project::new();
    p.write_config(
        &p.config()
            .agent_env("DEMO_AGENT_SLEEP", sleep_s)
            .extra("[agent.sandbox]\nmode = \"prefer\""),
    );
    p
}

fn round_nums(p: &Project, kind: &str) -> Vec<u64> {
    p.events_of(kind)
        .iter()
        .map(|e| e["round_num"].as_u64().unwrap())
        .collect()
}

#[test]
fn sighup_mid_round_is_not_a_death() {
    let p = sleepy_project("3");
    let serve = p.spawn(&["serve", "--max-rounds", "2"]);
    p.wait_for_event("agent_spawn");
    serve.signal(libc::SIGHUP);
    let out = serve.wait(Duration::from_secs(60));
    out.assert_code(0);
    let all = p.events_text();
    assert_eq!(round_nums(&p, "round_end"), [1, 2], "{all}");
    assert_eq!(
        p.events_of("agent_exit")[0]["exit_cause"],
        "exited",
        "{all}"
    );
    p.assert_agent_ran(1);
}

#[test]
fn sigint_is_graceful_like_sigterm() {
    let p = sleepy_project("3");
    let serve = p.spawn(&["serve"]);
    p.wait_for_event("agent_spawn");
    serve.signal(libc::SIGINT);
    let out = serve.wait(Duration::from_secs(60));
    out.assert_code(0);
    let all = p.events_text();
    assert_eq!(round_nums(&p, "round_end"), [1], "{all}");
    assert_eq!(
        p.events_of("agent_exit")[0]["exit_cause"],
        "exited",
        "{all}"
    );
    assert_eq!(p.events_of("serve_stopping").len(), 1, "{all}");
}

#[test]
fn an_agent_command_edited_during_round_one_runs_from_round_two() {
    let p = sleepy_project("2");
    let other = p.script(
        "other-agent.sh",
        "#!/bin/sh\necho \"other agent, round $AGENT_RUNNER_ROUND_NUM\"\n",
    );
    let serve = p.spawn(&["serve", "--max-rounds", "3"]);
    p.wait_for_event("agent_spawn");
    let text = std::fs::read_to_string(p.config_path()).unwrap();
    let edited = text.replace(
        &format!("command = [{:?}]", p.agent_path().display().to_string()),
        &format!("command = [{:?}]", other.display().to_string()),
    );
    assert_ne!(edited, text);
    std::fs::write(p.config_path(), &edited).unwrap();
    serve.wait(Duration::from_secs(60)).assert_code(0);
    let all = p.events_text();
    let output = p.agent_output();
    assert!(output.contains("demo-agent: round 1;"), "{output}");
    assert!(output.contains("other agent, round 2"), "{output}");
    assert!(output.contains("other agent, round 3"), "{output}");
    let reloaded = p.events_of("config_reloaded");
    assert_eq!(reloaded.len(), 1, "{all}");
    let digest = format!("sha256:{:x}", sha2::Sha256::digest(edited.as_bytes()));
    assert_eq!(reloaded[0]["digest"], digest.as_str(), "{all}");
    assert_eq!(reloaded[0]["trigger"], "round", "{all}");
    // The edit stays on disk: the config is the supervisor's own file, never swept.
    assert_eq!(std::fs::read_to_string(p.config_path()).unwrap(), edited);
}

#[test]
fn a_broken_edit_keeps_the_last_good_config_then_a_fix_applies() {
    let p = sleepy_project("1");
    let good = std::fs::read_to_string(p.config_path()).unwrap();
    let mut cmd = p.command(&["serve"]);
    cmd.env("AGENT_RUNNER_LOG", "warn");
    let serve = p.spawn_with(cmd);
    p.wait_for_event("agent_spawn");
    std::fs::write(
        p.config_path(),
        good.replace("round_budget_s = ", "round_budgte_s = "),
    )
    .unwrap();
    let broken = p.wait_for_event("config_broken");
    let error = broken["error"].as_str().unwrap();
    assert!(
        error.contains("agent-runner.toml") && error.contains("round_budgte_s"),
        "{broken}"
    );
    assert!(!error.contains('\n'));
    // Rounds go on with the last good config.
    wait_until("round 2 with the old config", EVENT_TIMEOUT, || {
        round_nums(&p, "round_end").contains(&2).then_some(())
    });
    assert_eq!(
        p.events_of("config_broken").len(),
        1,
        "recorded once per edit"
    );
    std::fs::write(p.config_path(), &good).unwrap();
    let reloaded = p.wait_for_event("config_reloaded");
    assert_eq!(reloaded["previous_digest"], broken["digest"], "{reloaded}");
    serve.signal(libc::SIGTERM);
    serve.wait(Duration::from_secs(60)).assert_code(0);
}

#[test]
fn sighup_between_rounds_rereads_at_once_and_restarts_only_changed_hosts() {
    let p = Project::new();
    let host = |name: &str, extra: Value| {
        let mut config = json!({"attempt": "proceed", "hook": name});
        if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        HostSpec::new(name, HOSTILE).config(config)
    };
    let builder = |b_timeout: u64| {
        p.config()
            .restart_delay_s(600)
            .host(host("a", json!({})))
            .host(host("b", json!({})).timeout_s(b_timeout))
    };
    p.write_config(&builder(10));
    let serve = p.spawn(&["serve"]);
    p.wait_for_event("round_end");
    let hosts = || {
        let mut pids = p.host_pids(&[std::path::Path::new(HOSTILE)]);
        pids.sort();
        pids
    };
    let before = hosts();
    assert_eq!(before.len(), 2, "{before:?}");
    // Change host b's entry only, then SIGHUP during the 600 s restart delay.
    std::fs::write(p.config_path(), builder(11).render()).unwrap();
    serve.signal(libc::SIGHUP);
    let reloaded = p.wait_for_event("config_reloaded");
    assert_eq!(reloaded["trigger"], "sighup", "{reloaded}");
    assert_eq!(reloaded["hosts_restarted"], json!(["b"]), "{reloaded}");
    assert_eq!(round_nums(&p, "round_start"), [1], "no round started early");
    let after = hosts();
    assert_eq!(after.len(), 2, "{after:?}");
    let kept = before.iter().filter(|pid| after.contains(pid)).count();
    assert_eq!(
        kept, 1,
        "one host kept running, one restarted: {before:?} → {after:?}"
    );
    p.run(&["stop"]).assert_code(0);
    serve.wait(Duration::from_secs(60)).assert_code(0);
}
