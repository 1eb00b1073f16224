//! Bad configs: `round` and `serve` exit 78 with one stderr line naming the file and the
//! key, and nothing starts (no log dir, no agent run). What a file's keys parse to, and the
//! key and message each bad value gets, is tested in process over a table of cases
//! (`supervisor/src/config/cases.rs`); here are the cases that need the binary.

use agent_runner_e2e::{Project, RunOutput};

/// Writes `text` as the config, runs `round` and `serve`, and checks both refuse with one
/// stderr line containing the config path and every one of `needles`.
fn assert_refused(p: &Project, text: Option<&str>, needles: &[&str]) {
    if let Some(text) = text {
        p.write_config_text(text);
    }
    let config = p.config_path().display().to_string();
    for verb in [&["round"][..], &["serve", "--max-rounds", "1"][..]] {
        let out: RunOutput = p.run(verb);
        out.assert_code(78);
        let lines: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        assert_eq!(lines.len(), 1, "{verb:?}: expected one stderr line: {out}");
        assert!(
            lines[0].contains(&config),
            "{verb:?}: file not named: {out}"
        );
        for needle in needles {
            assert!(
                lines[0].contains(needle),
                "{verb:?}: {needle:?} missing: {out}"
            );
        }
        assert!(!p.log_dir().exists(), "{verb:?}: log dir created");
        assert!(!p.dir().join("notes").exists(), "{verb:?}: the agent ran");
    }
}

fn valid(p: &Project) -> String {
    p.config().render()
}

#[test]
fn the_valid_base_config_runs() {
    // The base the other cases break: it does run.
    let p = Project::new();
    p.write_config_text(&valid(&p));
    p.run(&["round"]).assert_code(0);
}

#[test]
fn unknown_key() {
    let p = Project::new();
    let text = valid(&p).replace(
        "prompt_delivery = \"argv\"\n",
        "prompt_delivery = \"argv\"\ncomand = [\"claude\"]\n",
    );
    assert_refused(&p, Some(&text), &["comand"]);
}

#[test]
fn missing_prompt_file() {
    let p = Project::new();
    let text = valid(&p).replace("./prompts/main.md", "./prompts/missing.md");
    assert_refused(&p, Some(&text), &["prompt.file", "missing.md"]);
}

#[test]
fn missing_config_file() {
    let p = Project::new();
    assert!(!p.config_path().exists());
    assert_refused(&p, None, &["cannot read"]);
}

#[test]
fn doctor_exits_78_on_a_bad_config() {
    let p = Project::new();
    let text = valid(&p).replace("round_budget_s = 60", "round_budget_s = \"x\"");
    p.write_config_text(&text);
    let out = p.run(&["doctor", "--json"]);
    out.assert_code(78);
    let report: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(&out.stdout).expect("doctor --json");
    let config = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "config")
        .expect("config check")
        .clone();
    assert_eq!(config["ok"], false, "{out}");
    assert!(
        config["reason"]
            .as_str()
            .unwrap()
            .contains("runtime.round_budget_s"),
        "{out}"
    );
    assert!(!p.log_dir().exists(), "doctor wrote the log dir");
}

#[test]
fn work_dir_outside_a_git_working_tree() {
    // `git rev-parse --is-inside-work-tree --show-prefix` answers both questions at boot:
    // outside a repository it fails; inside `.git` it prints `false`.
    let p = Project::new();
    let text = valid(&p);
    // Outside any repository rounds run without git (tests/tests/suite/functional/without_git.rs), but a
    // written `stash` or `auto_commit` asks for git work no round can do: refused.
    for action in ["stash", "auto_commit"] {
        let asks_git = text.replace("[vcs]\n", &format!("[vcs]\ndirty_action = \"{action}\"\n"));
        assert_ne!(asks_git, text);
        p.write_config_text(&asks_git);
        std::fs::rename(p.dir().join(".git"), p.dir().join("not-git")).unwrap();
        assert_refused(
            &p,
            None,
            &[
                "vcs.dirty_action",
                action,
                "is not inside a git working tree",
            ],
        );
        std::fs::rename(p.dir().join("not-git"), p.dir().join(".git")).unwrap();
    }
    let inside_git_dir = text.replace(
        "work_dir = \".\"",
        &format!("work_dir = \"{}\"", p.dir().join(".git").display()),
    );
    assert_ne!(inside_git_dir, text);
    p.write_config_text(&inside_git_dir);
    // Paths of the config are the work dir's: give it the prompt, so only the work dir is wrong.
    let prompts = p.dir().join(".git/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::copy(p.dir().join("prompts/main.md"), prompts.join("main.md")).unwrap();
    assert_refused(
        &p,
        None,
        &[
            "runtime.work_dir",
            "inside a git directory or a bare repository",
        ],
    );
}

/// `[phases]` with two phases that each set `[agent]` and `run_windows`.
fn two_scheduled_agents(p: &Project, build: &str, review: &str) -> String {
    valid(p)
        + "\n[phases]\nlist = [\"build\", \"review\"]\n\
           [phases.build.agent.env]\nKNOB = \"a\"\n\
           [phases.build.schedule]\ntimezone = \"UTC\"\n"
        + build
        + "\n[phases.review.agent.env]\nKNOB = \"b\"\n\
           [phases.review.schedule]\ntimezone = \"UTC\"\n"
        + review
        + "\n"
}

#[test]
fn overlapping_phase_run_windows() {
    // The reference system refuses these at boot (exit 78): both phases could run then.
    let p = Project::new();
    let text = two_scheduled_agents(
        &p,
        "run_windows = [\"mon-fri 09:00-17:00\"]",
        "run_windows = [\"fri 16:00-02:00\"]",
    );
    assert_refused(
        &p,
        Some(&text),
        &[
            "phases.review.schedule.run_windows",
            "mon-fri 09:00-17:00",
            "fri 16:00-02:00",
        ],
    );
}

#[test]
fn phase_run_windows_that_meet_or_are_carved_out_are_accepted() {
    // Touching ends, and an overlap the phase's own pause window removes, do not collide.
    let p = Project::new();
    let text = two_scheduled_agents(
        &p,
        "run_windows = [\"00:00-12:00\"]",
        "run_windows = [\"12:00-24:00\", \"11:00-12:00\"]\npause_windows = [\"11:00-12:00\"]",
    );
    p.write_config_text(&text);
    let out = p.run(&["doctor"]);
    assert!(
        out.code() != 78 && !out.stderr.contains("run_windows"),
        "a config without a real overlap was refused: {out}"
    );
}

#[test]
fn skip_startup_check_lets_overlapping_phase_windows_run_and_says_so() {
    // The reference system's escape hatch skips its boot checks, the overlap check among
    // them; without it the same config is refused.
    let p = Project::new();
    let always = "run_windows = [\"00:00-24:00\"]";
    p.write_config_text(&two_scheduled_agents(&p, always, always));
    p.run(&["round"]).assert_code(78);
    let out = p.run_env(&["round"], &[("AGENT_RUNNER_SKIP_STARTUP_CHECK", "True")]);
    out.assert_code(0);
    assert!(
        out.stderr.contains("AGENT_RUNNER_SKIP_STARTUP_CHECK"),
        "the skipped check is not said: {out}"
    );
    let exits = p.events_of("agent_exit");
    assert_eq!(
        exits.len(),
        1,
        "the agent did not run once: {:?} {out}",
        p.event_kinds()
    );
    assert_eq!(exits[0]["exit_code"], 0, "{exits:?}");
}

#[test]
fn bad_allow_hosts_entry() {
    let p = Project::new();
    let text = p
        .config()
        .extra("[agent.sandbox]\nallow_hosts = [\"api.anthropic.com\", \"*.com\"]")
        .render();
    assert_refused(&p, Some(&text), &["agent.sandbox.allow_hosts", "`*.com`"]);
    let text = p
        .config()
        .extra("[agent.sandbox]\nallow_hosts = [\"example.org:0\"]")
        .render();
    assert_refused(&p, Some(&text), &["agent.sandbox.allow_hosts", "port"]);
}

#[test]
fn agent_sandbox_spelled_both_ways() {
    // `[agent] sandbox = "require"` and `[agent.sandbox] mode = "off"` at once: one error
    // naming the file and the key, not the parser's duplicate-key message alone.
    let p = Project::new();
    let text = valid(&p).replace(
        "prompt_delivery = \"argv\"\n",
        "prompt_delivery = \"argv\"\nsandbox = \"require\"\n",
    );
    assert!(text.contains("sandbox = \"require\""), "{text}");
    let text = format!("{text}\n[agent.sandbox]\nmode = \"off\"\n");
    assert_refused(&p, Some(&text), &["key `agent.sandbox`", "set twice"]);
}
