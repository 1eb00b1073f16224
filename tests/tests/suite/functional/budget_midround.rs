//! `[budget]` within a round (docs/operations.md, "Budget": "Within a round";
//! docs/protocol.md §5.10): an agent script named after its CLI streams one usage record
//! per model call, paced by a sleep, as claude's stream-json (`assistant` records, priced
//! by the table: $0.20 a call) and pi's JSON (`message_end` records carrying their cost,
//! $0.20) do. The confined built-in detector host's output watch reads the running
//! round's log; the supervisor sums and stops the agent once the round's spend reaches its
//! cap: `round_usd = 0.5` stops it after the third call (overshoot at most one call) and
//! serve goes on with the next round; a `total_usd` reached mid-round stops the agent and
//! serve exits 80. The control: without a cap every call is made.

use agent_runner_e2e::{ConfigBuilder, Project};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// Calls the fake CLI makes in a round when nothing stops it.
const CALLS: usize = 10;

/// A fake `cli` (`claude` or `pi`): `CALLS` model calls, each noted in `$STATE/calls`
/// before its usage record is printed, 0.4 s apart; claude ends with its result record.
fn fake_cli(p: &Project, cli: &str) -> PathBuf {
    let dir = p.tmp_dir().join("bin");
    std::fs::create_dir_all(dir.join("state")).unwrap();
    let call = match cli {
        "claude" => "echo '{\"type\":\"assistant\",\"message\":{\"id\":\"msg_'$i'\",\"model\":\"fake-priced\",\"content\":[{\"type\":\"text\",\"text\":\"working\"}],\"usage\":{\"input_tokens\":1000,\"output_tokens\":0,\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0}}}'\n\
             echo '{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[]}}'",
        _ => "echo '{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"provider\":\"fake\",\"model\":\"fake-priced\",\"usage\":{\"input\":1000,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"cost\":{\"total\":0.2}}}}'",
    };
    let end = match cli {
        "claude" => "echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"total_cost_usd\":2.0,\"usage\":{\"input_tokens\":10000,\"output_tokens\":0}}'",
        _ => "true",
    };
    let path = dir.join(cli);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n\
             i=0\n\
             while [ $i -lt {CALLS} ]; do\n\
               i=$((i + 1))\n\
               echo \"round $AGENT_RUNNER_ROUND_NUM call $i\" >> \"$STATE/calls\"\n\
               {call}\n\
               sleep 0.4\n\
             done\n\
             {end}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `[budget]` as `budget`, with the fake model priced at $200 per million input tokens:
/// $0.20 for a call's 1000.
fn config(p: &Project, cli: &str, budget: &str) -> ConfigBuilder {
    let agent = fake_cli(p, cli);
    ConfigBuilder::new(&agent)
        .agent_env(
            "STATE",
            &p.tmp_dir().join("bin/state").display().to_string(),
        )
        .extra(budget)
        .extra("[budget.prices.\"fake-priced\"]\ninput = 200.0\noutput = 0.0\n")
}

/// The calls the fake CLI made in round `round`.
fn calls_made(p: &Project, round: u64) -> usize {
    std::fs::read_to_string(p.tmp_dir().join("bin/state/calls"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with(&format!("round {round} call ")))
        .count()
}

fn of_round(events: Vec<Value>, round: u64) -> Vec<Value> {
    events
        .into_iter()
        .filter(|e| e["round_num"] == round)
        .collect()
}

/// `round_usd = 0.5` at $0.20 a call: each round is stopped once its third call is seen
/// ($0.60), at most one call more made, and serve goes on with the next round.
fn round_cap_stops_the_round(cli: &str) {
    let p = Project::new();
    p.write_config(&config(&p, cli, "[budget]\nround_usd = 0.5\n"));
    let out = p.run(&["serve", "--max-rounds", "2"]);
    out.assert_code(0);
    let stopped = p.events_of("budget_round_stopped");
    assert_eq!(stopped.len(), 2, "{}", p.events_text());
    for (n, event) in stopped.iter().enumerate() {
        let round = n as u64 + 1;
        assert_eq!(event["round_num"], round, "{event}");
        assert_eq!(event["scope"], "round_usd", "{event}");
        assert_eq!(event["cap"], 0.5, "{event}");
        assert_eq!(event["calls"], 3, "{event}");
        assert!(
            (event["spent"].as_f64().unwrap() - 0.6).abs() < 1e-9,
            "{event}"
        );
        assert_eq!(event["hook"], format!("{cli}_usage_watch"), "{event}");
        let made = calls_made(&p, round);
        eprintln!(
            "{cli}: round {round} stopped at call 3 ($0.60 of round_usd $0.50); calls made: {made} (overshoot {} call(s) past the one that crossed)",
            made - 3
        );
        assert!((3..=4).contains(&made), "{made} calls made");
        let exit = of_round(p.events_of("agent_exit"), round);
        assert_eq!(exit[0]["exit_cause"], "budget", "{}", exit[0]);
        let end = of_round(p.events_of("round_end"), round);
        assert_eq!(end[0]["exit_cause"], "budget", "{}", end[0]);
        // The round's spend is recorded (by the watch when the CLI printed no final
        // record of its own), so the caps count it.
        let usage = of_round(p.events_of("agent_usage_recorded"), round);
        assert_eq!(usage.len(), 1, "{}", p.events_text());
        assert_eq!(usage[0]["input_tokens"].as_u64().unwrap() % 1000, 0);
        assert!(usage[0]["input_tokens"].as_u64().unwrap() >= 3000);
    }
    assert_eq!(p.events_of("round_start").len(), 2);
    // The round was stopped, not passed after its end.
    assert!(p.events_of("budget_exhausted").is_empty());
}

#[test]
fn round_usd_stops_a_claude_stream_round_after_the_call_that_crosses_it() {
    round_cap_stops_the_round("claude");
}

#[test]
fn round_usd_stops_a_pi_round_after_the_call_that_crosses_it() {
    round_cap_stops_the_round("pi");
}

/// `total_usd = 0.9`: the first round is stopped at its fifth call ($1.00), and serve
/// records `budget_exhausted` before a second round and exits 80.
#[test]
fn a_total_cap_reached_mid_round_stops_the_agent_and_serve_exits_80() {
    let p = Project::new();
    p.write_config(&config(&p, "claude", "[budget]\ntotal_usd = 0.9\n"));
    let out = p.run(&["serve", "--max-rounds", "5"]);
    out.assert_code(80);
    let stopped = p.events_of("budget_round_stopped");
    assert_eq!(stopped.len(), 1, "{}", p.events_text());
    assert_eq!(stopped[0]["scope"], "total_usd", "{}", stopped[0]);
    assert_eq!(stopped[0]["calls"], 5, "{}", stopped[0]);
    assert_eq!(stopped[0]["cap"], 0.9, "{}", stopped[0]);
    let made = calls_made(&p, 1);
    eprintln!("claude: total_usd $0.90 crossed at call 5; calls made: {made}");
    assert!((5..=6).contains(&made), "{made} calls made");
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
    let exhausted = p.events_of("budget_exhausted");
    assert_eq!(exhausted.len(), 1, "{}", p.events_text());
    assert_eq!(exhausted[0]["scope"], "total_usd");
    assert!(exhausted[0]["spent"].as_f64().unwrap() >= 1.0 - 1e-9);
}

/// The control: the same agent with no cap makes all its calls; nothing is stopped.
#[test]
fn without_a_cap_the_agent_makes_every_call() {
    let p = Project::new();
    p.write_config(&config(&p, "claude", ""));
    p.run(&["serve", "--max-rounds", "1"]).assert_code(0);
    assert_eq!(calls_made(&p, 1), CALLS);
    assert!(p.events_of("budget_round_stopped").is_empty());
    assert_eq!(p.events_of("agent_exit")[0]["exit_cause"], "exited");
    // And a cap it stays under stops nothing either ($2.00 of $5.00).
    let p = Project::new();
    p.write_config(&config(&p, "claude", "[budget]\nround_usd = 5.0\n"));
    p.run(&["serve", "--max-rounds", "1"]).assert_code(0);
    assert_eq!(calls_made(&p, 1), CALLS);
    assert!(p.events_of("budget_round_stopped").is_empty());
}

/// A Python host with one output watch, `meter`: `silent` never answers
/// `output_watch/observe`; otherwise each line of a chunk holding `"cost":0.2` is one call
/// of $0.20 (docs/protocol.md §5.10: any host may watch, for any agent).
fn meter_host(p: &Project, silent: bool) -> PathBuf {
    let answer = if silent {
        "time.sleep(3600)"
    } else {
        "calls = [{\"input_tokens\": 1000, \"output_tokens\": 0, \"cost_usd\": 0.2} for l in req[\"params\"][\"chunk\"][\"text\"].splitlines() if '\"cost\":0.2' in l]\n        send({\"jsonrpc\": \"2.0\", \"id\": rid, \"result\": {\"usage\": calls} if calls else None})"
    };
    let script = format!(
        r#"#!/usr/bin/python3
import json, sys, time
def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    req = json.loads(line)
    rid = req["id"]
    if req["method"] == "initialize":
        send({{"jsonrpc": "2.0", "id": rid, "result": {{"protocol_version": 1,
              "name": "meter", "version": "1",
              "hooks": [{{"family": "output_watch", "name": "meter"}}]}}}})
    elif req["method"] == "output_watch/observe":
        {answer}
    else:
        send({{"jsonrpc": "2.0", "id": rid, "result": None}})
"#
    );
    let path = p.tmp_dir().join("meter.py");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// An agent no preset knows, printing one `{"call":N,"cost":0.2}` line per call, 0.4 s
/// apart, `CALLS` of them.
fn plain_agent(p: &Project) -> PathBuf {
    std::fs::create_dir_all(p.tmp_dir().join("bin/state")).unwrap();
    p.script(
        "meter-agent.sh",
        &format!(
            "#!/bin/sh\ni=0\nwhile [ $i -lt {CALLS} ]; do\n  i=$((i + 1))\n  echo \"round $AGENT_RUNNER_ROUND_NUM call $i\" >> \"$STATE/calls\"\n  echo '{{\"call\":'$i',\"cost\":0.2}}'\n  sleep 0.4\ndone\n"
        ),
    )
}

fn with_meter(p: &Project, silent: bool, budget: &str) -> ConfigBuilder {
    let host = meter_host(p, silent);
    ConfigBuilder::new(&plain_agent(p))
        .agent_env(
            "STATE",
            &p.tmp_dir().join("bin/state").display().to_string(),
        )
        .host(
            agent_runner_e2e::HostSpec::new("meter", &host)
                .provides(&["output_watch"])
                .timeout_s(1),
        )
        .extra(budget)
}

/// A host's output watch drives the cap for an agent agent-runner knows nothing of: its
/// calls of $0.20 stop the round at the third under `round_usd = 0.5`.
#[test]
fn a_hosts_output_watch_stops_any_agent_at_the_cap() {
    let p = Project::new();
    p.write_config(&with_meter(&p, false, "[budget]\nround_usd = 0.5\n"));
    p.run(&["serve", "--max-rounds", "1"]).assert_code(0);
    let stopped = p.events_of("budget_round_stopped");
    assert_eq!(stopped.len(), 1, "{}", p.events_text());
    assert_eq!(stopped[0]["hook"], "meter", "{}", stopped[0]);
    assert_eq!(stopped[0]["calls"], 3, "{}", stopped[0]);
    let made = calls_made(&p, 1);
    eprintln!("host watch: stopped at call 3; calls made: {made}");
    assert!((3..=4).contains(&made), "{made}");
    // Its calls are the round's recorded usage: no post-round hook reported any.
    let usage = p.events_of("agent_usage_recorded");
    assert_eq!(usage[0]["hook"], "meter", "{}", usage[0]);
    assert!(usage[0]["cost_usd"].as_f64().unwrap() >= 0.6 - 1e-9);
}

/// A watch that never answers holds nothing up: its first call times out (1 s,
/// `hook_failed`), its host is not started again during the round, and the agent makes
/// every call in its usual time, unstopped.
#[test]
fn a_silent_output_watch_never_holds_the_agent_up() {
    let p = Project::new();
    p.write_config(&with_meter(&p, true, "[budget]\nround_usd = 0.5\n"));
    p.run(&["serve", "--max-rounds", "1"]).assert_code(0);
    assert_eq!(calls_made(&p, 1), CALLS, "{}", p.events_text());
    assert!(p.events_of("budget_round_stopped").is_empty());
    let exit = &p.events_of("agent_exit")[0];
    assert_eq!(exit["exit_cause"], "exited", "{exit}");
    // 10 calls 0.4 s apart: about 4 s, the watch's 1 s timeout not added to it.
    let took = exit["duration_s"].as_f64().unwrap();
    assert!(took < 6.0, "{took}");
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 1, "{}", p.events_text());
    assert_eq!(failed[0]["error_type"], "timeout", "{}", failed[0]);
    assert_eq!(failed[0]["hook_name"], "meter", "{}", failed[0]);
    assert_eq!(failed[0]["hook_kind"], "output_watch", "{}", failed[0]);
}
