//! Issue 17, cases 2–4: dirt is attributed (the operator's work before the round is left
//! alone), the supervisor's own files are never dirt, and a work dir inside a bigger
//! repository limits dirt, stash and commits to itself (docs/configuration.md, "Dirt
//! attribution").

use agent_runner_e2e::{agent_runner_bin, ConfigBuilder, Operator, Project};
use serde_json::Value;
use std::fs;
use std::process::Stdio;
use std::time::Duration;

/// The paths stored in stash `sha`: tracked changes and untracked files.
fn stash_paths(p: &Project, sha: &str) -> Vec<String> {
    p.git(&["stash", "show", "--include-untracked", "--name-only", sha])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn operator_work_before_the_round_is_reported_and_left_alone() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("stash"));
    // The operator's work: a scratch file, an edit to a tracked file, an edit to the
    // prompt, and a journal the agent will append to (so the round changes it further).
    p.write("scratch.txt", "operator scratch\n");
    p.write("README.md", "# e2e project\n\noperator edit\n");
    p.write(
        "prompts/main.md",
        "---\ntitle: e2e prompt\n---\nKeep a journal in notes/journal.md. Edited.\n",
    );
    p.write("notes/journal.md", "- operator: started the journal\n");

    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let before = p.events_of("dirty_before_round");
    assert_eq!(before.len(), 1, "{all}");
    let listed = strings(&before[0]["files"]);
    for f in ["scratch.txt", "README.md", "notes/journal.md"] {
        assert!(listed.contains(&f.to_owned()), "{f} not reported: {all}");
    }
    assert!(
        !listed.contains(&"prompts/main.md".to_owned()),
        "the prompt is the supervisor's own file: {all}"
    );

    let detected = &p.events_of("dirty_detected")[0];
    let files = strings(&detected["files"]);
    assert!(files.contains(&"src/round_1.rs".to_owned()), "{all}");
    assert!(files.contains(&"notes/journal.md".to_owned()), "{all}");
    assert!(!files.contains(&"scratch.txt".to_owned()), "{all}");
    assert!(!files.contains(&"README.md".to_owned()), "{all}");
    assert_eq!(
        strings(&detected["changed_preexisting"]),
        ["notes/journal.md"],
        "{all}"
    );
    assert_eq!(detected["left_to_operator"], 2, "{all}");

    let stashed = &p.events_of("orphan_stashed")[0];
    let reason = stashed["reason"].as_str().unwrap();
    assert!(
        reason.contains("changed by it") && reason.contains("left in place"),
        "{reason}"
    );
    let in_stash = stash_paths(&p, stashed["ref"].as_str().unwrap());
    assert!(
        in_stash.contains(&"src/round_1.rs".to_owned()),
        "{in_stash:?}"
    );
    assert!(
        in_stash.contains(&"notes/journal.md".to_owned()),
        "{in_stash:?}"
    );
    assert!(
        !in_stash.contains(&"scratch.txt".to_owned()),
        "{in_stash:?}"
    );
    assert!(!in_stash.contains(&"README.md".to_owned()), "{in_stash:?}");
    assert!(
        !in_stash.contains(&"prompts/main.md".to_owned()),
        "{in_stash:?}"
    );

    // The operator's files are on disk as they were.
    assert_eq!(
        fs::read_to_string(p.dir().join("scratch.txt")).unwrap(),
        "operator scratch\n"
    );
    assert!(fs::read_to_string(p.dir().join("README.md"))
        .unwrap()
        .contains("operator edit"));
    assert!(fs::read_to_string(p.dir().join("prompts/main.md"))
        .unwrap()
        .contains("Edited."));
}

#[test]
fn a_tree_dirty_only_with_operator_work_is_not_handled() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("auto_commit"));
    p.write("scratch.txt", "operator scratch\n");
    // Round 1 leaves dirt (auto-committed); round 2's agent commits its own work.
    p.run(&["round"]).assert_code(0);
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    assert_eq!(p.events_of("dirty_before_round").len(), 2, "{all}");
    assert_eq!(p.events_of("dirty_detected").len(), 1, "{all}");
    let committed = p.git(&["log", "--name-only", "--format="]);
    assert!(!committed.contains("scratch.txt"), "{committed}");
    assert!(p.status_porcelain().contains(&"?? scratch.txt".to_owned()));
}

#[test]
fn the_supervisors_own_files_are_never_dirt() {
    let p = Project::new();
    // A hand-written config, never committed, and serve's output redirected into the
    // project dir (`serve > serve.log 2>&1`).
    p.write(
        "agent-runner.toml",
        &p.config().dirty_action("stash").render(),
    );
    let log = fs::File::create(p.dir().join("serve.log")).unwrap();
    let status = p
        .command(&["serve", "--max-rounds", "2"])
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .status()
        .unwrap();
    assert!(status.success(), "{}", p.events_text());
    let all = p.events_text();
    assert_eq!(p.events_of("round_end").len(), 2, "{all}");
    let stashed = p.events_of("orphan_stashed");
    assert_eq!(stashed.len(), 1, "{all}");
    let in_stash = stash_paths(&p, stashed[0]["ref"].as_str().unwrap());
    assert!(
        !in_stash.contains(&"agent-runner.toml".to_owned()),
        "{in_stash:?}"
    );
    assert!(!in_stash.contains(&"serve.log".to_owned()), "{in_stash:?}");
    assert!(p.config_path().exists());
    let out = fs::read_to_string(p.dir().join("serve.log")).unwrap();
    assert!(out.contains("serve stopped after 2"), "{out}");
    for e in p.events_of("dirty_before_round") {
        let files = strings(&e["files"]);
        assert!(
            !files.contains(&"agent-runner.toml".to_owned())
                && !files.contains(&"serve.log".to_owned()),
            "{all}"
        );
    }
}

#[test]
fn a_work_dir_inside_a_monorepo_keeps_to_itself() {
    let p = Project::new();
    // packages/a is the work dir (its logs/ not ignored by the root .gitignore);
    // packages/b holds a teammate's uncommitted work.
    p.write("packages/a/README.md", "package a\n");
    p.write("packages/a/prompts/main.md", "Work on package a.\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "packages"]);
    p.write("packages/b/wip.txt", "teammate's work\n");
    let config = p.dir().join("packages/a/agent-runner.toml");
    fs::write(&config, p.config().dirty_action("auto_commit").render()).unwrap();
    p.git(&["add", "packages/a/agent-runner.toml"]);
    p.git(&["commit", "-q", "-m", "config"]);

    let mut cmd = std::process::Command::new(agent_runner_bin());
    cmd.arg("--config")
        .arg(&config)
        .arg("round")
        .current_dir(p.dir().join("packages/a"))
        .env("HOME", p.home())
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null());
    let out = p.run_with(cmd);
    out.assert_code(0);
    let events: Vec<Value> = fs::read_dir(p.home().join(".local/state/agent-runner/projects"))
        .unwrap()
        .flat_map(|d| fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .filter(|f| f.to_string_lossy().ends_with(".jsonl"))
        .flat_map(|f| {
            fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<Value>>()
        })
        .collect();
    let all: Vec<String> = events.iter().map(Value::to_string).collect();
    let all = all.join("\n");
    let of = |kind: &str| events.iter().find(|e| e["event"] == kind).cloned();
    let detected = of("dirty_detected").unwrap_or_else(|| panic!("{all}"));
    let files = strings(&detected["files"]);
    assert!(files.contains(&"notes/journal.md".to_owned()), "{all}");
    assert!(
        files
            .iter()
            .all(|f| !f.starts_with("packages/") && !f.starts_with("logs")),
        "{all}"
    );
    let committed = of("dirty_auto_committed").unwrap_or_else(|| panic!("{all}"));
    let sha = committed["sha"].as_str().unwrap();
    let in_commit = p.git(&["show", "--name-only", "--format=", sha]);
    assert!(
        in_commit.contains("packages/a/notes/journal.md"),
        "{in_commit}"
    );
    assert!(!in_commit.contains("packages/b"), "{in_commit}");
    assert!(!in_commit.contains("packages/a/logs"), "{in_commit}");
    assert!(p
        .status_porcelain()
        .contains(&"?? packages/b/wip.txt".to_owned()));
}

#[test]
fn a_host_executable_kept_in_the_tree_is_never_dirt() {
    let p = Project::new();
    // The pause host copied into the project, untracked (an operator's `hosts/` dir).
    let exe = p.dir().join("hosts/spawn-pause-file");
    fs::create_dir_all(exe.parent().unwrap()).unwrap();
    fs::copy(agent_runner_e2e::pause_host_bin(), &exe).unwrap();
    p.write_config(
        &p.config()
            .dirty_action("stash")
            .host(agent_runner_e2e::HostSpec::new("pause", &exe)),
    );
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    assert_eq!(p.events_of("hook_failed").len(), 0, "{all}");
    let stashed = &p.events_of("orphan_stashed")[0];
    let in_stash = stash_paths(&p, stashed["ref"].as_str().unwrap());
    assert!(
        in_stash.iter().all(|f| !f.starts_with("hosts/")),
        "{in_stash:?}"
    );
    assert!(exe.exists(), "the host executable was swept away");
    assert!(p
        .status_porcelain()
        .contains(&"?? hosts/spawn-pause-file".to_owned()));
}

#[test]
fn an_agent_that_puts_a_fifo_where_operator_dirt_was_does_not_hang_the_round() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        one_an_agent_that_puts_a_fifo_where_operator_dirt_was_does_not_hang_the_round(operator);
    }
}

fn one_an_agent_that_puts_a_fifo_where_operator_dirt_was_does_not_hang_the_round(
    operator: Operator,
) {
    // The operator edited a tracked file; the agent replaces it with a FIFO, which git
    // lists as modified. Opening a FIFO for reading waits for a writer: the supervisor,
    // asking whether the round changed the operator's file, must see it is no longer a
    // file, not open it.
    let p = Project::new_as(operator);
    let agent = p.script(
        "fifo-agent.sh",
        "#!/bin/sh\nrm -f README.md\nmkfifo README.md\n",
    );
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("ignore"));
    p.write("README.md", "# e2e project\n\noperator edit\n");

    p.spawn(&["round"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let all = p.events_text();
    let before = p.events_of("dirty_before_round");
    assert_eq!(strings(&before[0]["files"]), ["README.md"], "{all}");
    let detected = &p.events_of("dirty_detected")[0];
    assert_eq!(
        strings(&detected["changed_preexisting"]),
        ["README.md"],
        "{all}"
    );
    assert_eq!(p.events_of("round_end").len(), 1, "{all}");
}

#[test]
fn an_agent_that_turns_its_round_log_into_a_fifo_does_not_hang_the_round() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        one_an_agent_that_turns_its_round_log_into_a_fifo_does_not_hang_the_round(operator);
    }
}

fn one_an_agent_that_turns_its_round_log_into_a_fifo_does_not_hang_the_round(operator: Operator) {
    // After a failed run the supervisor reads the end of the round log (`round_end`'s
    // log_tail, the tail `round` prints); the log lies in the agent's reach.
    let p = Project::new_as(operator);
    let agent = p.script(
        "fifo-log-agent.sh",
        "#!/bin/sh\nfor log in \"$AGENT_RUNNER_LOG_DIR\"/rounds/R\"$AGENT_RUNNER_ROUND_NUM\"-*.log; do\n\
         rm -f \"$log\" && mkfifo \"$log\"\ndone\nexit 3\n",
    );
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("ignore"));

    p.spawn(&["round"])
        .wait(Duration::from_secs(60))
        .assert_code(1);
    let all = p.events_text();
    let ended = p.events_of("round_end");
    assert_eq!(ended.len(), 1, "{all}");
    assert_eq!(ended[0]["exit_code"], 3, "{all}");
    assert_eq!(ended[0]["log_tail"], "", "{all}");
}
