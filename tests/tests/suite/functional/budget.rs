//! Usage per round and `[budget]` on real processes (docs/operations.md, "Budget";
//! docs/detectors.md, "Usage"): an agent script called `claude` prints claude's stream
//! records, its result carrying the session's running cost (`total_cost_usd` grows by
//! $0.40 a round of one session, as the real claude's does under `--resume`: measured in
//! real_clis.rs) and the round's own tokens. A resumed run's recorded usage adds up to the
//! bill; `total_usd` ends serve with exit 80 and a restart does not reset the spend;
//! `budget reset` does; `daily_usd` pauses serve until a reset or a stop.

use agent_runner_e2e::{wait_until, ConfigBuilder, Project};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

/// What the fake claude bills a round, in thousandths of a dollar.
const MILLI_PER_ROUND: u64 = 400;

/// A `claude` script: per session (`$AGENT_RUNNER_RESUME_SESSION_ID`, counted in
/// `$STATE/<id>`) its result's `total_cost_usd` is the running total, $0.40 a round; its
/// usage is the round's own (1000 input, 100 output tokens), as claude's is.
fn fake_claude(p: &Project) -> PathBuf {
    let dir = p.tmp_dir().join("bin");
    std::fs::create_dir_all(dir.join("state")).unwrap();
    let path = dir.join("claude");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n\
             f=\"$STATE/${{AGENT_RUNNER_RESUME_SESSION_ID:-none}}\"\n\
             n=$(cat \"$f\" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > \"$f\"\n\
             m=$((n * {MILLI_PER_ROUND}))\n\
             cost=$(printf '%d.%03d' $((m / 1000)) $((m % 1000)))\n\
             echo '{{\"type\":\"system\",\"subtype\":\"init\"}}'\n\
             echo '{{\"type\":\"assistant\",\"message\":{{\"model\":\"claude-opus-4-5\",\"content\":[{{\"type\":\"text\",\"text\":\"done\"}}]}}}}'\n\
             echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"total_cost_usd\":'$cost',\"usage\":{{\"input_tokens\":1000,\"output_tokens\":100,\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0}}}}'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn config(p: &Project, budget: &str) -> ConfigBuilder {
    let agent = fake_claude(p);
    ConfigBuilder::new(&agent)
        .agent_env(
            "STATE",
            &p.tmp_dir().join("bin/state").display().to_string(),
        )
        .extra(budget)
}

fn costs(p: &Project) -> Vec<f64> {
    p.events_of("agent_usage_recorded")
        .iter()
        .map(|u| u["cost_usd"].as_f64().unwrap())
        .collect()
}

/// Four rounds of one resumed session: the CLI reported 0.4, 0.8, 1.2, 1.6 (its session's
/// running cost), the events carry each round's own, and they sum to the bill, $1.60.
#[test]
fn a_resumed_runs_recorded_usage_adds_up_to_the_bill() {
    let p = Project::new();
    p.write_config(&config(&p, ""));
    p.run(&["serve", "--max-rounds", "4"]).assert_code(0);
    assert_eq!(
        p.events_of("session_resumed").len(),
        3,
        "{}",
        p.events_text()
    );
    let costs = costs(&p);
    assert_eq!(costs.len(), 4, "{}", p.events_text());
    for cost in &costs {
        assert!((cost - 0.4).abs() < 1e-9, "{costs:?}");
    }
    let bill: f64 = costs.iter().sum();
    assert!((bill - 1.6).abs() < 1e-9, "{bill}");
    for u in p.events_of("agent_usage_recorded") {
        assert_eq!(u["usage_scope"], "round", "{u}");
        assert_eq!(
            u["from_session_totals"],
            serde_json::json!(["cost_usd"]),
            "{u}"
        );
        assert_eq!(u["input_tokens"], 1000, "{u}");
    }
}

/// `total_usd = 1.0` at $0.40 a round: three rounds, then `budget_exhausted` and exit 80
/// (and `round_usd = 0.3` recorded as passed after each). A second serve reads the same
/// spend from the record and exits 80 at once, no round started; `budget reset` lets one
/// more round run.
#[test]
fn a_total_cap_ends_serve_a_restart_keeps_the_spend_and_a_reset_clears_it() {
    let p = Project::new();
    p.write_config(&config(&p, "[budget]\ntotal_usd = 1.0\nround_usd = 0.3\n"));
    let out = p.run(&["serve", "--max-rounds", "10"]);
    out.assert_code(80);
    assert!(out.stderr.contains("budget_exhausted"), "{out}");
    assert_eq!(p.events_of("round_start").len(), 3, "{}", p.events_text());
    let exhausted = p.events_of("budget_exhausted");
    assert_eq!(exhausted.len(), 1, "{}", p.events_text());
    assert_eq!(exhausted[0]["scope"], "total_usd");
    assert_eq!(exhausted[0]["cap"], 1.0);
    assert!((exhausted[0]["spent"].as_f64().unwrap() - 1.2).abs() < 1e-9);
    let over = p.events_of("budget_round_exceeded");
    assert_eq!(over.len(), 3, "{}", p.events_text());
    assert_eq!(over[0]["cap"], 0.3);

    // peek and doctor show the cap against the record's spend.
    let peek = p.run(&["peek", "--json"]);
    peek.assert_code(0);
    let doc: serde_json::Value = serde_json::from_str(&peek.stdout).unwrap();
    let budget = &doc["budget"];
    assert_eq!(budget["state"], "exhausted", "{budget}");
    assert_eq!(budget["caps"][0]["scope"], "total_usd", "{budget}");
    assert!((budget["caps"][0]["spent"].as_f64().unwrap() - 1.2).abs() < 1e-9);
    assert_eq!(budget["rounds"], 3, "{budget}");
    assert_eq!(budget["usage_scope"], "round", "{budget}");
    let human = p.run(&["peek"]);
    assert!(
        human
            .stdout
            .contains("budget    exhausted: total_usd $1.20 of $1.00"),
        "{human}"
    );
    let doctor = p.run(&["doctor", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
    let check = agent_runner_e2e::doctor_check(&report, "budget");
    assert_eq!(check["ok"], true, "{check}");
    let reason = check["reason"].as_str().unwrap();
    assert!(reason.contains("total_usd $1"), "{reason}");
    assert!(
        reason.contains("claude reports each round's cost"),
        "{reason}"
    );
    assert!(reason.contains("session's running total"), "{reason}");

    // A restart: the spend is the record's.
    p.run(&["serve", "--max-rounds", "10"]).assert_code(80);
    assert_eq!(p.events_of("round_start").len(), 3, "{}", p.events_text());
    assert_eq!(p.events_of("budget_exhausted").len(), 2);

    let reset = p.run(&["budget", "reset"]);
    reset.assert_code(0);
    let recorded = p.events_of("budget_reset");
    assert_eq!(recorded.len(), 1, "{reset}");
    assert!((recorded[0]["spent_usd"].as_f64().unwrap() - 1.2).abs() < 1e-9);
    p.run(&["serve", "--max-rounds", "1"]).assert_code(0);
    assert_eq!(p.events_of("round_start").len(), 4, "{}", p.events_text());
    let peek = p.run(&["peek", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&peek.stdout).unwrap();
    assert_eq!(doc["budget"]["state"], "run", "{}", doc["budget"]);
    assert!(
        doc["budget"]["since_reset"].is_string(),
        "{}",
        doc["budget"]
    );
}

/// A bad `[budget]` value is refused at load, naming the key (exit 78); an agent whose
/// CLI reports no usage fails doctor's `budget` check while caps are set (they would
/// never count a round).
#[test]
fn bad_budget_values_are_refused_and_an_uncountable_agent_is_flagged() {
    let p = Project::new();
    for (table, key) in [
        ("[budget]\ntotal_usd = -1.0\n", "budget.total_usd"),
        ("[budget]\ndaily_tokens = 0\n", "budget.daily_tokens"),
        ("[budget]\ntimezone = \"Mars/Olympus\"\n", "budget.timezone"),
        ("[budget.prices.\"m\"]\ninput = 1.0\n", "output"),
        ("[budget]\ntotal_dollars = 1.0\n", "total_dollars"),
    ] {
        p.write_config(&config(&p, table));
        let out = p.run(&["serve", "--max-rounds", "1"]);
        out.assert_code(78);
        assert!(out.stderr.contains(key), "{table}: {out}");
    }
    assert!(p.events_of("round_start").is_empty());
    // A plain script reports no usage: the caps could not count it.
    let plain = p.script("plain-agent.sh", "#!/bin/sh\nexit 0\n");
    p.write_config(&ConfigBuilder::new(&plain).extra("[budget]\ntotal_usd = 1.0\n"));
    let doctor = p.run(&["doctor", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
    let check = agent_runner_e2e::doctor_check(&report, "budget");
    assert_eq!(check["ok"], false, "{check}");
    assert!(
        check["how_to_fix"]
            .as_str()
            .unwrap()
            .contains("reports its usage"),
        "{check}"
    );
    // The control: without a cap the same agent passes.
    p.write_config(&ConfigBuilder::new(&plain));
    let doctor = p.run(&["doctor", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
    assert_eq!(
        agent_runner_e2e::doctor_check(&report, "budget")["ok"],
        true
    );
}

/// `daily_usd = 0.5`: after two rounds ($0.80 today) serve pauses until the next day
/// (`budget_paused` with the zone's midnight); `budget reset` ends the pause (reason
/// `reset`) and rounds go on until the cap pauses it again; a stop ends that pause and
/// serve (reason `stop`, exit 0).
#[test]
fn a_daily_cap_pauses_until_a_reset_or_a_stop() {
    let p = Project::new();
    p.write_config(&config(
        &p,
        "[budget]\ndaily_usd = 0.5\ntimezone = \"UTC\"\n",
    ));
    let serve = p.spawn(&["serve", "--max-rounds", "10"]);
    let paused = p.wait_for_event("budget_paused");
    assert_eq!(paused["scope"], "daily_usd");
    assert_eq!(paused["timezone"], "UTC");
    assert!(
        paused["until"].as_str().unwrap().ends_with("T00:00:00Z"),
        "{paused}"
    );
    assert_eq!(p.events_of("round_start").len(), 2, "{}", p.events_text());

    p.run(&["budget", "reset"]).assert_code(0);
    let resumed = wait_until("budget_resumed", Duration::from_secs(30), || {
        p.events_of("budget_resumed").into_iter().next()
    });
    assert_eq!(resumed["reason"], "reset", "{resumed}");
    wait_until("the second pause", Duration::from_secs(60), || {
        (p.events_of("budget_paused").len() == 2).then_some(())
    });
    assert_eq!(p.events_of("round_start").len(), 4, "{}", p.events_text());

    p.run(&["stop"]).assert_code(0);
    let out = serve.wait(Duration::from_secs(30));
    out.assert_code(0);
    let resumed = p.events_of("budget_resumed");
    assert_eq!(resumed.len(), 2, "{}", p.events_text());
    assert_eq!(resumed[1]["reason"], "stop", "{}", p.events_text());
    assert_eq!(p.events_of("round_start").len(), 4, "{}", p.events_text());
}

/// A graceful stop lets the running round finish, its usage recorded: SIGTERM arrives while
/// the round's agent runs (held until serve has taken the signal), the round ends, and its
/// `agent_usage_recorded` is there — the spend of the round a stop interrupted is counted
/// (found by the 20-minute soak, bench/soak_sessions.sh: every graceful stop lost the
/// last round's usage when post-round calls were abandoned).
#[test]
fn a_graceful_stop_keeps_the_running_rounds_usage() {
    let p = Project::new();
    let claude = fake_claude(&p);
    let state = p.tmp_dir().join("bin/state");
    let held = p.tmp_dir().join("held");
    std::fs::create_dir_all(&held).unwrap();
    let wrapper = held.join("claude");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n\
             touch \"$STATE/started\"\n\
             i=0; while [ ! -e \"$STATE/go\" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done\n\
             exec {} \"$@\"\n",
            claude.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.write_config(&ConfigBuilder::new(&wrapper).agent_env("STATE", &state.display().to_string()));
    let serve = p.spawn(&["serve"]);
    wait_until("the round's agent", Duration::from_secs(30), || {
        state.join("started").exists().then_some(())
    });
    serve.signal(libc::SIGTERM);
    wait_until("serve to take the SIGTERM", Duration::from_secs(10), || {
        serve
            .stderr_so_far()
            .contains("stop signal received")
            .then_some(())
    });
    std::fs::write(state.join("go"), "").unwrap();
    let out = serve.wait(Duration::from_secs(60));
    out.assert_code(0);
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
    assert_eq!(costs(&p), vec![0.4], "{}", p.events_text());
}
