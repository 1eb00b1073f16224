//! A hostile agent against `[budget]` (docs/operations.md, "Budget"): the cost the budget
//! counts is the one the CLI reports in its own output when above zero
//! (`PriceTable::cost`), and that output is the agent's. An agent script called `claude`
//! under `[agent.sandbox] mode = "require"` prints claude's result record with honest token
//! counts (2,000,000 output tokens of claude-opus-4-5 a round: tens of dollars at the price
//! table's rates) and a made-up `total_cost_usd` that grows by a millionth of a dollar a round (claude
//! reports its session's running total: a made-up total that stood still would be a
//! round of $0, which is not believed, and the table would price it).
//!
//! Control: the same agent reporting no cost is priced from the table, and `total_usd =
//! 1.0` ends serve after its first round (exit 80).
//!
//! With its key brokered (`ANTHROPIC_API_KEY` in the supervisor's environment), the agent's
//! model call goes through the key broker, which reads what the provider (the fake model
//! server, billing 2,000,000 output tokens an answer) billed: that is what counts, the
//! made-up cost is kept beside it as `reported_cost_usd` and marked `underreported`, and
//! serve ends after the first round. Control: the same with `broker = "off"` counts the
//! made-up cost (docs/operations.md, "Where spend comes from").

use agent_runner_e2e::{workspace_root, ConfigBuilder, Project};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A `claude` script whose result reports 2,000,000 output tokens and `cost` (a JSON
/// fragment: `,"total_cost_usd":…` or nothing, where `$n` is the round's number, counted in
/// its own state, `~/.claude`).
fn fake_claude(p: &Project, cost: &str) -> PathBuf {
    let dir = p.tmp_dir().join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("claude");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n\
             f=\"$HOME/.claude/rounds\"; mkdir -p \"$HOME/.claude\"\n\
             n=$(cat \"$f\" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > \"$f\"\n\
             [ -n \"$ANTHROPIC_BASE_URL\" ] && curl -sS -m 30 -o /dev/null -X POST \"$ANTHROPIC_BASE_URL/v1/messages\" \
               -H \"x-api-key: $ANTHROPIC_API_KEY\" -H 'content-type: application/json' \
               -d '{{\"model\":\"claude-opus-4-5\",\"max_tokens\":16,\"stream\":true,\"messages\":[{{\"role\":\"user\",\"content\":\"hi\"}}]}}'\n\
             echo '{{\"type\":\"system\",\"subtype\":\"init\"}}'\n\
             echo '{{\"type\":\"assistant\",\"message\":{{\"model\":\"claude-opus-4-5\",\"content\":[{{\"type\":\"text\",\"text\":\"done\"}}]}}}}'\n\
             echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false{cost},\"usage\":{{\"input_tokens\":1000,\"output_tokens\":2000000,\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0}}}}'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn serve(cost: &str) -> (Project, agent_runner_e2e::RunOutput) {
    serve_with(cost, "", &[])
}

/// [`serve`] with `sandbox` lines added to `[agent.sandbox]` and `env` for the supervisor.
fn serve_with(
    cost: &str,
    sandbox: &str,
    env: &[(&str, &str)],
) -> (Project, agent_runner_e2e::RunOutput) {
    let p = Project::new();
    let agent = fake_claude(&p, cost);
    let text = ConfigBuilder::new(&agent)
        .extra("[budget]\ntotal_usd = 1.0\n")
        .render()
        .replacen(
            "[runtime]\n",
            &format!("[agent.sandbox]\nmode = \"require\"\n{sandbox}[runtime]\n"),
            1,
        );
    p.write_config_text(&text);
    let out = p.run_env(&["serve", "--max-rounds", "3"], env);
    (p, out)
}

/// The fake model server billing 2,000,000 output tokens an answer, expecting `key`;
/// killed when dropped.
struct FakeModel {
    child: Child,
    port: u16,
}

impl FakeModel {
    fn start(key: &str, log: &std::path::Path) -> FakeModel {
        let mut child = Command::new("python3")
            .arg(workspace_root().join("tests/agent-clis/fake_model.py"))
            .args(["--mode", "idle", "--output-tokens", "2000000"])
            .args(["--expect-key-env", "FAKE_EXPECTED_KEY", "--log"])
            .arg(log)
            .env("FAKE_EXPECTED_KEY", key)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the fake model server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("port ").unwrap().parse().unwrap();
        FakeModel { child, port }
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// With the key brokered, what the provider billed counts, not the made-up cost; with
/// `broker = "off"` (the control) the made-up cost is what counts.
#[test]
fn what_the_provider_bills_counts_when_the_key_is_brokered() {
    let key = "sk-ant-hostile-budget-test-key";
    let made_up = ",\"total_cost_usd\":0.00000'$n'";
    // The server's log, in a scratch project's temp dir (removed with it).
    let scratch = Project::new();
    let log = scratch.tmp_dir().join("fake-model.jsonl");
    let fake = FakeModel::start(key, &log);
    let base = format!("http://127.0.0.1:{}", fake.port);
    let env = [
        ("ANTHROPIC_API_KEY", key),
        ("ANTHROPIC_BASE_URL", base.as_str()),
    ];

    let (p, out) = serve_with(made_up, "", &env);
    out.assert_code(80);
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
    let usage = p.events_of("agent_usage_recorded");
    assert_eq!(usage.len(), 1, "{}", p.events_text());
    let u = &usage[0];
    assert_eq!(u["source"], "broker", "{u}");
    assert_eq!(u["output_tokens"], 2_000_000, "{u}");
    assert_eq!(u["model"], "claude-opus-4-5", "{u}");
    // 2M output tokens of claude-opus-4-5 at the table's $25/M, 120 input at $5/M.
    let cost = u["cost_usd"].as_f64().unwrap();
    assert!((cost - 50.0006).abs() < 1e-6, "{u}");
    assert_eq!(u["reported_cost_usd"], 0.000001, "{u}");
    assert_eq!(u["underreported"], true, "{u}");
    let exhausted = p.events_of("budget_exhausted");
    assert_eq!(exhausted.len(), 1, "{}", p.events_text());
    assert!(
        exhausted[0]["spent"].as_f64().unwrap() > 50.0,
        "{}",
        exhausted[0]
    );
    // doctor says where the spend comes from.
    let budget_reason = |p: &Project| {
        let out = p.run_env(&["doctor", "--json"], &env);
        let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        agent_runner_e2e::doctor_check(&report, "budget")["reason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let reason = budget_reason(&p);
    assert!(
        reason.contains("from the broker: what anthropic bills"),
        "{reason}"
    );

    // Control: the broker off, the agent's made-up cost is what counts.
    let (p, out) = serve_with(made_up, "broker = \"off\"\n", &env);
    out.assert_code(0);
    assert_eq!(p.events_of("round_start").len(), 3, "{}", p.events_text());
    let usage = p.events_of("agent_usage_recorded");
    assert!(
        usage
            .iter()
            .all(|u| u["source"] == "cli" && u["cost_usd"] == 0.000001),
        "{}",
        p.events_text()
    );
    let reason = budget_reason(&p);
    assert!(
        reason.contains("from the CLI's report or the price table"),
        "{reason}"
    );
}

#[test]
fn a_cost_the_agent_makes_up_is_what_the_budget_counts() {
    // Control: no reported cost, the table prices 2M output tokens far above the cap.
    let (p, out) = serve("");
    out.assert_code(80);
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
    assert_eq!(
        p.events_of("budget_exhausted").len(),
        1,
        "{}",
        p.events_text()
    );

    // Without a brokered key the budget has only the agent's own report: a made-up cost of
    // a millionth of a dollar lets every round run past `total_usd` (documented; with the
    // key brokered the provider's bill counts:
    // `what_the_provider_bills_counts_when_the_key_is_brokered`).
    let (p, out) = serve(",\"total_cost_usd\":0.00000'$n'");
    assert_eq!(out.code(), 0, "{out}\n{}", p.events_text());
    assert_eq!(p.events_of("round_start").len(), 3, "{}", p.events_text());
    assert!(
        p.events_of("budget_exhausted").is_empty(),
        "{}",
        p.events_text()
    );
    let costs: Vec<f64> = p
        .events_of("agent_usage_recorded")
        .iter()
        .map(|u| u["cost_usd"].as_f64().unwrap())
        .collect();
    assert_eq!(costs, [0.000001; 3], "{}", p.events_text());
}

/// Within a round: a `claude` script that makes three model calls 1.5 s apart through its
/// base URL and prints no usage while it works (the output watch has nothing to read) is
/// stopped once the key broker has read the first answer's bill ($50 against `round_usd =
/// 10`): `budget_round_stopped` by `key_broker`, one model request made. Control: with
/// `broker = "off"` (the server's port open to the agent) nothing sees the spend while the
/// round runs, and all three are made.
#[test]
fn the_broker_stops_a_round_at_the_answer_that_crossed_round_usd() {
    let key = "sk-ant-hostile-budget-midround-key";
    let run = |broker_off: bool| {
        let p = Project::new();
        let log = p.tmp_dir().join("fake-model.jsonl");
        let fake = FakeModel::start(key, &log);
        // Without the broker the agent reaches the server itself, at its port.
        let sandbox = if broker_off {
            format!("broker = \"off\"\nconnect_ports = [{}]\n", fake.port)
        } else {
            String::new()
        };
        let dir = p.tmp_dir().join("bin");
        std::fs::create_dir_all(&dir).unwrap();
        let agent = dir.join("claude");
        std::fs::write(
            &agent,
            "#!/bin/sh\n\
             for i in 1 2 3; do\n\
               curl -sS -m 30 -o /dev/null -X POST \"$ANTHROPIC_BASE_URL/v1/messages\" \
                 -H \"x-api-key: $ANTHROPIC_API_KEY\" -H 'content-type: application/json' \
                 -d '{\"model\":\"claude-opus-4-5\",\"max_tokens\":16,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}'\n\
               sleep 1.5\n\
             done\n",
        )
        .unwrap();
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
        let text = ConfigBuilder::new(&agent)
            .dirty_action("ignore")
            .extra("[budget]\nround_usd = 10.0\n")
            .render()
            .replacen(
                "[runtime]\n",
                &format!("[agent.sandbox]\nmode = \"require\"\n{sandbox}[runtime]\n"),
                1,
            );
        p.write_config_text(&text);
        let base = format!("http://127.0.0.1:{}", fake.port);
        let out = p.run_env(
            &["serve", "--max-rounds", "1"],
            &[("ANTHROPIC_API_KEY", key), ("ANTHROPIC_BASE_URL", &base)],
        );
        let calls = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("/v1/messages"))
            .count();
        (p, out, calls)
    };
    let (p, out, calls) = run(false);
    assert_eq!(out.code(), 0, "{out}\n{}", p.events_text());
    let stopped = p.events_of("budget_round_stopped");
    assert_eq!(stopped.len(), 1, "{}", p.events_text());
    assert_eq!(stopped[0]["hook"], "key_broker", "{}", stopped[0]);
    assert_eq!(stopped[0]["scope"], "round_usd", "{}", stopped[0]);
    assert_eq!(stopped[0]["calls"], 1, "{}", stopped[0]);
    assert!(
        stopped[0]["round_usd"].as_f64().unwrap() > 50.0,
        "{}",
        stopped[0]
    );
    eprintln!("broker mid-round stop: {calls} model call(s) made of 3");
    assert_eq!(calls, 1, "{}", p.events_text());
    assert_eq!(p.events_of("agent_exit")[0]["exit_cause"], "budget");
    let usage = p.events_of("agent_usage_recorded");
    assert_eq!(usage.len(), 1, "{}", p.events_text());
    assert_eq!(usage[0]["source"], "broker");
    assert_eq!(usage[0]["hook"], "key_broker");

    // Control: the broker off, nothing counts the round while it runs.
    let (p, out, calls) = run(true);
    assert_eq!(out.code(), 0, "{out}\n{}", p.events_text());
    assert!(
        p.events_of("budget_round_stopped").is_empty(),
        "{}",
        p.events_text()
    );
    assert_eq!(calls, 3, "{}", p.events_text());
}
