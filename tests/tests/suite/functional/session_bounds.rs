//! Sessions that do not grow for ever (docs/agent-clis.md, "Session resume"; docs/
//! operations.md, "The agent's CLI state on disk"), on real processes: a fake `claude`
//! that keeps a transcript per session in its home and reports each round's usage as
//! claude does. A resumed session is started afresh after `[agent] session_max_rounds`
//! rounds or once its rounds used `session_max_tokens` tokens, with `session_renewed`
//! (reason, the old session's rounds and tokens) in the record and in `peek`; after each
//! round the supervisor prunes the agent's shadow home of the transcripts of sessions no
//! round resumes and of the telemetry spool, keeping the live session's, and refuses the
//! link the agent planted there to a directory of the operator's (control: the path
//! through the link reaches the operator's files). As root and as `ar-e2e`.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

/// Tokens the fake claude reports a round: 1000 input, 100 output.
const TOKENS_PER_ROUND: u64 = 1100;

/// A `claude` script: appends `round|flag|id` to `$MARK`; writes its transcript
/// `$HOME/.claude/projects/-work/<id>.jsonl` (one line more each round of the session)
/// and a telemetry spool file a round (`$HOME/.claude/telemetry/<round>.json`); in round
/// 1, when `$OPERATOR_DIR` is set, plants `$HOME/.claude/projects/evil`, a link to it;
/// then prints claude's result with the round's usage.
fn fake_claude(p: &Project) -> PathBuf {
    let dir = p.tmp_dir().join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("claude");
    std::fs::write(
        &path,
        "#!/bin/sh\n\
         id=\"${AGENT_RUNNER_RESUME_SESSION_ID:-none}\"\n\
         echo \"$AGENT_RUNNER_ROUND_NUM|${AGENT_RUNNER_RESUME_FLAG-unset}|$id\" >> \"$MARK\"\n\
         mkdir -p \"$HOME/.claude/projects/-work\" \"$HOME/.claude/telemetry\"\n\
         echo \"{\\\"round\\\":$AGENT_RUNNER_ROUND_NUM}\" >> \"$HOME/.claude/projects/-work/$id.jsonl\"\n\
         echo spool > \"$HOME/.claude/telemetry/$AGENT_RUNNER_ROUND_NUM.json\"\n\
         if [ \"$AGENT_RUNNER_ROUND_NUM\" = 1 ] && [ -n \"$OPERATOR_DIR\" ]; then\n\
           ln -s \"$OPERATOR_DIR\" \"$HOME/.claude/projects/evil\" || echo 'no link' >> \"$MARK.err\"\n\
         fi\n\
         echo '{\"type\":\"system\",\"subtype\":\"init\"}'\n\
         echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"total_cost_usd\":0.01,\"usage\":{\"input_tokens\":1000,\"output_tokens\":100,\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0}}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `[agent]` keys added to the config.
fn config(p: &Project, agent_keys: &str, sandbox: Option<&str>) -> String {
    let agent = fake_claude(p);
    let mut b = ConfigBuilder::new(&agent)
        .dirty_action("ignore")
        .round_budget_s(120)
        .agent_env("MARK", &p.dir().join("mark.txt").display().to_string());
    if sandbox.is_some() {
        b = b.agent_env(
            "OPERATOR_DIR",
            &p.tmp_dir().join("operator").display().to_string(),
        );
    }
    let mut text = b.render().replacen(
        "prompt_delivery = \"argv\"\n",
        &format!("prompt_delivery = \"argv\"\ncli = \"claude\"\n{agent_keys}"),
        1,
    );
    if let Some(mode) = sandbox {
        text = text.replacen(
            "[runtime]\n",
            &format!("[agent.sandbox]\nmode = \"{mode}\"\n\n[runtime]\n"),
            1,
        );
    }
    text
}

/// Each round's `[round, flag, id]`.
fn rounds(p: &Project) -> Vec<[String; 3]> {
    std::fs::read_to_string(p.dir().join("mark.txt"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, '|').map(str::to_owned);
            [(); 3].map(|_| f.next().unwrap_or_default())
        })
        .collect()
}

fn serve(p: &Project, n: u32) {
    let out = p
        .spawn(&["serve", "--max-rounds", &n.to_string()])
        .wait(Duration::from_secs(240));
    assert_eq!(out.code(), 0, "{out}\n{}", p.events_text());
}

fn peek_round(p: &Project, n: u64) -> Value {
    let out = p.run(&["peek", "--json", "--round", &n.to_string()]);
    out.assert_code(0);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    doc["round"].clone()
}

/// `session_max_rounds = 2`: rounds 1-2 one session, 3-4 the next, 5 a third; round 3's
/// and 5's `session_renewed` say `max_rounds`, 2 rounds and their tokens.
#[test]
fn a_session_is_started_afresh_after_its_rounds() {
    let p = Project::new();
    p.write_config_text(&config(&p, "session_max_rounds = 2\n", None));
    serve(&p, 5);
    let r = rounds(&p);
    assert_eq!(r.len(), 5, "{r:?}");
    let flags: Vec<&str> = r.iter().map(|l| l[1].as_str()).collect();
    assert_eq!(
        flags,
        [
            "--session-id",
            "--resume",
            "--session-id",
            "--resume",
            "--session-id"
        ]
    );
    assert_eq!(r[0][2], r[1][2]);
    assert_eq!(r[2][2], r[3][2]);
    assert!(r[0][2] != r[2][2] && r[2][2] != r[4][2], "{r:?}");
    let renewed = p.events_of("session_renewed");
    assert_eq!(renewed.len(), 2, "{}", p.events_text());
    for (e, (round, old, new)) in renewed.iter().zip([(3, 0, 2), (5, 2, 4)]) {
        assert_eq!(e["round_num"], round, "{e}");
        assert_eq!(e["reason"], "max_rounds", "{e}");
        assert_eq!(e["rounds"], 2, "{e}");
        assert_eq!(e["tokens"], 2 * TOKENS_PER_ROUND, "{e}");
        assert_eq!(e["old_session_id"], r[old][2].as_str(), "{e}");
        assert_eq!(e["session_id"], r[new][2].as_str(), "{e}");
    }
    // Shown by peek, as JSON and as text.
    let round = peek_round(&p, 3);
    assert_eq!(round["session_renewed"]["reason"], "max_rounds", "{round}");
    assert_eq!(round["session_renewed"]["old_session_id"], r[0][2].as_str());
    assert!(peek_round(&p, 2)["session_renewed"].is_null());
    let text = p.run(&["peek"]);
    assert!(
        text.stdout
            .contains("session renewed (max_rounds): the old one ran 2 rounds"),
        "{}",
        text.stdout
    );
}

/// `session_max_tokens = 3000`: the session's third round takes it to 3300 tokens, so
/// round 4 starts afresh (`max_tokens`); without usage the bound never counts (control:
/// the same run with a larger bound resumes every round).
#[test]
fn a_session_is_started_afresh_once_its_rounds_used_its_tokens() {
    let p = Project::new();
    p.write_config_text(&config(&p, "session_max_tokens = 3000\n", None));
    serve(&p, 4);
    let r = rounds(&p);
    let flags: Vec<&str> = r.iter().map(|l| l[1].as_str()).collect();
    assert_eq!(
        flags,
        ["--session-id", "--resume", "--resume", "--session-id"]
    );
    let renewed = p.events_of("session_renewed");
    assert_eq!(renewed.len(), 1, "{}", p.events_text());
    assert_eq!(renewed[0]["round_num"], 4);
    assert_eq!(renewed[0]["reason"], "max_tokens");
    assert_eq!(renewed[0]["rounds"], 3);
    assert_eq!(renewed[0]["tokens"], 3 * TOKENS_PER_ROUND);
    // Control: a bound above what four rounds use renews nothing.
    let p = Project::new();
    p.write_config_text(&config(&p, "session_max_tokens = 100000\n", None));
    serve(&p, 4);
    assert!(p.events_of("session_renewed").is_empty());
    assert_eq!(p.events_of("session_resumed").len(), 3);
}

/// A `claude` that streams three model calls of 1000 input tokens each (`assistant`
/// records, what the output watch reads) and exits 0 without its result record: no
/// post-round report of usage, only the watch's. Marks `$MARK` as [`fake_claude`] does.
fn streaming_claude(p: &Project) -> PathBuf {
    let dir = p.tmp_dir().join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("claude");
    std::fs::write(
        &path,
        "#!/bin/sh\n\
         id=\"${AGENT_RUNNER_RESUME_SESSION_ID:-none}\"\n\
         echo \"$AGENT_RUNNER_ROUND_NUM|${AGENT_RUNNER_RESUME_FLAG-unset}|$id\" >> \"$MARK\"\n\
         echo '{\"type\":\"system\",\"subtype\":\"init\"}'\n\
         for i in 1 2 3; do\n\
           echo '{\"type\":\"assistant\",\"message\":{\"id\":\"msg_'$i'\",\"model\":\"fake-priced\",\"content\":[{\"type\":\"text\",\"text\":\"working\"}],\"usage\":{\"input_tokens\":1000,\"output_tokens\":0,\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0}}}'\n\
           sleep 0.3\n\
         done\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The tokens the output watch summed for a round with no post-round usage report count
/// toward `session_max_tokens`: three calls of 1000 a round under `session_max_tokens =
/// 2500` renew the session at round 2 (`max_tokens`, 3000 tokens). Control: without a
/// `[budget]` cap no watch runs, nothing counts the round's tokens, and the session is
/// resumed.
#[test]
fn the_tokens_the_output_watch_counted_count_toward_the_session_bound() {
    let run = |budget: &str| {
        let p = Project::new();
        let agent = streaming_claude(&p);
        let text = ConfigBuilder::new(&agent)
            .dirty_action("ignore")
            .round_budget_s(120)
            .agent_env("MARK", &p.dir().join("mark.txt").display().to_string())
            .extra(budget)
            .render()
            .replacen(
                "prompt_delivery = \"argv\"\n",
                "prompt_delivery = \"argv\"\ncli = \"claude\"\nsession_max_tokens = 2500\n",
                1,
            );
        p.write_config_text(&text);
        serve(&p, 2);
        p
    };
    let p = run(
        "[budget]\ntotal_usd = 100.0\n[budget.prices.\"fake-priced\"]\ninput = 1.0\noutput = 0.0\n",
    );
    let usage = p.events_of("agent_usage_recorded");
    assert_eq!(usage.len(), 2, "{}", p.events_text());
    assert!(
        usage.iter().all(|u| u["hook"] == "claude_usage_watch"),
        "{}",
        p.events_text()
    );
    let renewed = p.events_of("session_renewed");
    assert_eq!(renewed.len(), 1, "{}", p.events_text());
    assert_eq!(renewed[0]["round_num"], 2, "{}", renewed[0]);
    assert_eq!(renewed[0]["reason"], "max_tokens", "{}", renewed[0]);
    assert_eq!(renewed[0]["tokens"], 3000, "{}", renewed[0]);
    let flags: Vec<String> = rounds(&p).into_iter().map(|r| r[1].clone()).collect();
    assert_eq!(flags, ["--session-id", "--session-id"]);
    // Control: no cap, no watch, no count: the session is resumed.
    let p = run("");
    assert!(
        p.events_of("session_renewed").is_empty(),
        "{}",
        p.events_text()
    );
    let flags: Vec<String> = rounds(&p).into_iter().map(|r| r[1].clone()).collect();
    assert_eq!(flags, ["--session-id", "--resume"]);
}

/// Confined (`mode = "require"`, the shadow home): after four rounds of two sessions
/// (`session_max_rounds = 2`) the shadow holds the live session's transcript only, no
/// telemetry spool, and the operator's files behind the agent's link are untouched; the
/// link is named in `agent_home_pruned` and in peek.
fn the_prune_keeps_the_live_session_and_never_follows_a_link(operator: Operator) {
    let p = Project::new_as(operator);
    let operator_dir = p.tmp_dir().join("operator");
    std::fs::create_dir_all(&operator_dir).unwrap();
    let victim = operator_dir.join("0a0b0c0d-old-session.jsonl");
    std::fs::write(&victim, "the operator's").unwrap();
    p.write_config_text(&config(&p, "session_max_rounds = 2\n", Some("require")));
    serve(&p, 4);
    assert!(
        !p.dir().join("mark.txt.err").exists(),
        "the agent could not plant its link"
    );
    let r = rounds(&p);
    assert_eq!(r.len(), 4, "{r:?}");
    let live = &r[3][2];
    let shadow = p.state_dir().join("agent-home/claude/.claude");
    let transcripts: Vec<String> = std::fs::read_dir(shadow.join("projects/-work"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(transcripts, [format!("{live}.jsonl")]);
    // The live session's transcript holds both its rounds.
    let kept =
        std::fs::read_to_string(shadow.join(format!("projects/-work/{live}.jsonl"))).unwrap();
    assert_eq!(kept.lines().count(), 2, "{kept}");
    assert_eq!(
        std::fs::read_dir(shadow.join("telemetry")).unwrap().count(),
        0
    );
    // The operator's file behind the link is untouched: refused, named.
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the operator's");
    let pruned = p.events_of("agent_home_pruned");
    assert!(!pruned.is_empty(), "{}", p.events_text());
    assert!(
        pruned
            .iter()
            .all(|e| e["refused"] == serde_json::json!([".claude/projects/evil"])),
        "{pruned:?}"
    );
    // Round 3 removed the old session's transcript and round 3's spool (and earlier
    // rounds' spools).
    let round3 = pruned.iter().find(|e| e["round_num"] == 3).unwrap();
    assert_eq!(round3["removed"], 2, "{round3}");
    assert!(round3["bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        peek_round(&p, 3)["agent_home_refused"],
        serde_json::json!([".claude/projects/evil"])
    );
    // Control: the path through the agent's link reaches the operator's file, which a
    // walk that follows links would have pruned as an old session.
    let through = std::fs::read_dir(shadow.join("projects/evil"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect::<Vec<_>>();
    assert_eq!(through, ["0a0b0c0d-old-session.jsonl"]);
}

#[test]
fn the_prune_keeps_the_live_session_and_never_follows_a_link_as_root() {
    the_prune_keeps_the_live_session_and_never_follows_a_link(Operator::Root);
}

#[test]
fn the_prune_keeps_the_live_session_and_never_follows_a_link_as_unprivileged_user() {
    the_prune_keeps_the_live_session_and_never_follows_a_link(Operator::Unprivileged);
}
