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

use agent_runner_e2e::{ConfigBuilder, Project};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

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
    let p = Project::new();
    let agent = fake_claude(&p, cost);
    let text = ConfigBuilder::new(&agent)
        .extra("[budget]\ntotal_usd = 1.0\n")
        .render()
        .replacen(
            "[runtime]\n",
            "[agent.sandbox]\nmode = \"require\"\n[runtime]\n",
            1,
        );
    p.write_config_text(&text);
    let out = p.run(&["serve", "--max-rounds", "3"]);
    (p, out)
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

    // FIXME: the budget believes the agent's own report, so a made-up cost of a millionth
    // of a dollar lets every round run past `total_usd`. The fix is to count what the
    // provider bills, where the supervisor sees it (the key broker's responses), not what
    // the agent prints; until then this asserts the evasion.
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
