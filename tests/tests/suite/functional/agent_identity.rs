//! Which CLI a command is (docs/agent-clis.md, "Which CLI a command is"), on real
//! processes: claude started through `npx` or through a wrapper script — neither named
//! `claude` — gets claude's detector, its stop signal (SIGINT) and its session resume,
//! and `doctor` says how it knew. The controls: the same wrapper inside the work tree (the
//! agent could rewrite it) is not read and gets none of them, until `[agent] cli =
//! "claude"` says so.
//!
//! The stand-in for claude is one shell script (`impl/claude`) that records its first two
//! arguments (where the resume words go) and the round, and by `$MODE`: `fail` prints claude's rate-limit error and exits 1;
//! `ok` prints a successful result; `hang` waits, recording the signal that ends it.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{doctor_check, ConfigBuilder, Project};
use std::path::PathBuf;

const CLAUDE: &str = "#!/bin/sh\n\
    echo \"$AGENT_RUNNER_ROUND_NUM|$1 $2\" >> \"$MARK\"\n\
    case \"$MODE\" in\n\
    fail) echo 'API Error: 429 Too Many Requests · rate limited'; exit 1 ;;\n\
    hang) trap 'echo INT >> \"$MARK\"; exit 0' INT; trap 'echo TERM >> \"$MARK\"; exit 0' TERM; sleep 60 & wait ;;\n\
    *) echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\"}' ;;\n\
    esac\n";

/// The ways of starting the stand-in claude, each a `command` for `[agent]`.
enum Start {
    /// `<tmp>/launchers/npx -y @anthropic-ai/claude-code` (a stand-in for npm's npx: it
    /// drops its two words and runs the package's executable).
    Npx,
    /// `<tmp>/wrappers/my-agent`, a shell script `exec`ing claude by its path.
    Wrapper,
    /// The same wrapper in the work tree, where the agent can rewrite it.
    WrapperInTree,
}

fn command(p: &Project, start: &Start) -> Vec<String> {
    let claude = p.script("impl/claude", CLAUDE);
    let wrapper = format!("#!/bin/sh\nexec {} \"$@\"\n", claude.display());
    match start {
        Start::Npx => {
            let npx = p.script(
                "launchers/npx",
                &format!("#!/bin/sh\nshift 2\nexec {} \"$@\"\n", claude.display()),
            );
            vec![
                npx.display().to_string(),
                "-y".into(),
                "@anthropic-ai/claude-code".into(),
            ]
        }
        Start::Wrapper => vec![p
            .script("wrappers/my-agent", &wrapper)
            .display()
            .to_string()],
        Start::WrapperInTree => {
            p.write("my-agent.sh", &wrapper);
            let path = p.dir().join("my-agent.sh");
            let mut perms = std::fs::metadata(&path).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
            std::fs::set_permissions(&path, perms).unwrap();
            p.git(&["add", "my-agent.sh"]);
            p.git(&["commit", "-q", "-m", "wrapper"]);
            vec!["./my-agent.sh".into()]
        }
    }
}

/// The config running `command` in `mode`, `cli_key` as `[agent] cli` when given.
fn config(p: &Project, command: &[String], mode: &str, budget: u64, cli_key: Option<&str>) {
    let words: Vec<String> = command.iter().map(|w| format!("{w:?}")).collect();
    let first = PathBuf::from(&command[0]);
    let text = ConfigBuilder::new(&first)
        .round_budget_s(budget)
        .dirty_action("ignore")
        .agent_env("MARK", &mark_path(p).display().to_string())
        .agent_env("MODE", mode)
        .render()
        .replace(
            &format!("command = [{:?}]", command[0]),
            &format!("command = [{}]", words.join(", ")),
        )
        .replace(
            "prompt_delivery = \"argv\"\n",
            &match cli_key {
                Some(key) => format!("prompt_delivery = \"argv\"\ncli = {key:?}\n"),
                None => "prompt_delivery = \"argv\"\n".to_owned(),
            },
        );
    p.write_config_text(&text);
}

fn mark_path(p: &Project) -> PathBuf {
    p.tmp_dir().join("mark.txt")
}

fn mark(p: &Project) -> Vec<String> {
    std::fs::read_to_string(mark_path(p))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn doctor(p: &Project) -> Value {
    let out = p.run(&["doctor", "--json"]);
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("doctor --json: {e}: {out}"))
}

/// What claude's identity gives a command, each asserted: the detector's diagnosis, the
/// resume words of a second serve round, SIGINT at the budget, doctor's line naming `how`.
fn is_claude(start: Start, how: &str, cli_key: Option<&str>) {
    let p = Project::new();
    let command = command(&p, &start);
    let _ = std::fs::remove_file(mark_path(&p));
    config(&p, &command, "fail", 60, cli_key);
    let report = doctor(&p);
    let line = doctor_check(&report, "agent_cli");
    let reason = line["reason"].as_str().unwrap();
    assert!(reason.contains("claude") && reason.contains(how), "{line}");
    // The detector: a rate limit, with claude's detector's name on it.
    p.run(&["round"]).assert_code(1);
    let decisions = p.events_of("plugin_post_round_decision");
    assert_eq!(decisions.len(), 1, "{}", p.events_text());
    assert_eq!(decisions[0]["hook"], "claude_error_detector");
    assert_eq!(decisions[0]["kind"], "rate_limit");
    // Session resume: serve starts a session, then resumes it.
    let _ = std::fs::remove_file(mark_path(&p));
    config(&p, &command, "ok", 60, cli_key);
    p.run(&["serve", "--max-rounds", "2"]).assert_code(0);
    let rounds = mark(&p);
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    assert!(rounds[0].contains("--session-id "), "{rounds:?}");
    assert!(rounds[1].contains("--resume "), "{rounds:?}");
    // The stop signal: SIGINT when the budget ends the round.
    let _ = std::fs::remove_file(mark_path(&p));
    config(&p, &command, "hang", 2, cli_key);
    p.run(&["round"]).assert_code(0);
    assert_eq!(
        mark(&p).last().map(String::as_str),
        Some("INT"),
        "{:?}",
        mark(&p)
    );
}

#[test]
fn claude_through_npx_gets_claude_s_detector_stop_signal_and_resume() {
    is_claude(Start::Npx, "run by npx: @anthropic-ai/claude-code", None);
}

#[test]
fn claude_through_a_wrapper_script_gets_claude_s_detector_stop_signal_and_resume() {
    is_claude(Start::Wrapper, "the wrapper script", None);
}

/// The control: a wrapper the agent can write is not read — no detector, SIGTERM, no
/// resume words, and doctor says to set `[agent] cli` — and with `cli = "claude"` it is
/// claude again.
#[test]
fn a_wrapper_in_the_tree_is_not_read_and_the_key_overrides() {
    let p = Project::new();
    let command = command(&p, &Start::WrapperInTree);
    config(&p, &command, "fail", 60, None);
    let line = doctor_check(&doctor(&p), "agent_cli");
    assert!(
        line["reason"].as_str().unwrap().contains("set [agent] cli"),
        "{line}"
    );
    p.run(&["round"]).assert_code(1);
    assert!(
        p.events_of("plugin_post_round_decision").is_empty(),
        "{}",
        p.events_text()
    );
    config(&p, &command, "hang", 2, None);
    p.run(&["round"]).assert_code(0);
    assert_eq!(
        mark(&p).last().map(String::as_str),
        Some("TERM"),
        "{:?}",
        mark(&p)
    );
    assert!(!mark(&p).iter().any(|l| l.contains("--session-id")));
    drop(p);
    is_claude(Start::WrapperInTree, "([agent] cli)", Some("claude"));
}

#[test]
fn an_unknown_cli_key_is_a_config_error_naming_the_words() {
    let p = Project::new();
    config(
        &p,
        &[p.agent_path().display().to_string()],
        "ok",
        60,
        Some("claud"),
    );
    let out = p.run(&["doctor"]);
    assert_eq!(out.code(), 78, "{out}");
    let text = out.to_string();
    assert!(
        text.contains("key `agent.cli`: \"claud\"") && text.contains("\"claude\""),
        "{out}"
    );
}
