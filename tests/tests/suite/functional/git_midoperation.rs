//! A repository the agent left in the middle of a git operation — a rebase, merge,
//! cherry-pick or revert stopped on a real conflict, a bisect under way — is left
//! untouched after the round: no stash, no commit, the conflicted index entries and the
//! operation's state as git left them, the agent's other work still in the tree; the
//! round records `git_operation_in_progress` and `peek` says what to do (issue 27, item 3;
//! docs/operations.md "Leaving it unattended"). As root and as the unprivileged user.

use std::time::Duration;

use agent_runner_e2e::unprivileged::Operator;
use agent_runner_e2e::{ConfigBuilder, Project};

/// One case: the git command the agent runs, the marker git leaves, whether it conflicts.
struct Case {
    operation: &'static str,
    command: &'static str,
    marker: &'static str,
    conflicts: bool,
}

const CASES: &[Case] = &[
    Case {
        operation: "rebase",
        command: "rebase other",
        marker: "rebase-merge",
        conflicts: true,
    },
    Case {
        operation: "merge",
        command: "merge other",
        marker: "MERGE_HEAD",
        conflicts: true,
    },
    Case {
        operation: "cherry-pick",
        command: "cherry-pick other",
        marker: "CHERRY_PICK_HEAD",
        conflicts: true,
    },
    Case {
        operation: "revert",
        command: "revert --no-edit HEAD~1",
        // Reverts `ours`, whose line `more` changed again.
        marker: "REVERT_HEAD",
        conflicts: true,
    },
    Case {
        operation: "bisect",
        command: "bisect start HEAD HEAD~2",
        marker: "BISECT_LOG",
        conflicts: false,
    },
];

/// `conflict.txt` is `base` on both branches' parent; on main `ours`, then `ours again`
/// (with `more.txt`); `theirs` on `other`.
fn diverged(p: &Project) {
    p.write("conflict.txt", "base\n");
    p.git(&["add", "conflict.txt"]);
    p.git(&["commit", "-q", "-m", "base"]);
    p.git(&["branch", "other"]);
    p.write("conflict.txt", "ours\n");
    p.git(&["commit", "-q", "-am", "ours"]);
    p.write("conflict.txt", "ours again\n");
    p.write("more.txt", "more\n");
    p.git(&["add", "conflict.txt", "more.txt"]);
    p.git(&["commit", "-q", "-m", "more"]);
    p.git(&["checkout", "-q", "other"]);
    p.write("conflict.txt", "theirs\n");
    p.git(&["commit", "-q", "-am", "theirs"]);
    p.git(&["checkout", "-q", "main"]);
}

#[test]
fn a_repository_mid_operation_is_left_untouched_with_an_event_and_a_peek_line() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for action in ["auto_commit", "stash"] {
            for case in CASES {
                one(operator, action, case);
            }
        }
    }
}

fn one(operator: Operator, action: &str, case: &Case) {
    let what = format!("{operator:?} {action} {}", case.operation);
    eprintln!("case: {what}");
    let p = Project::new_as(operator);
    let head_file = p.tmp_dir().join("head-after-agent");
    // The agent starts the operation (which stops on its conflict), then writes a file of
    // its own; it exits 0, so the round's dirt goes to the dirty handler.
    let agent = p.script(
        "midop-agent.sh",
        &format!(
            "#!/bin/sh\n\
             git -c user.name=a -c user.email=a@a -c core.editor=true {cmd} >>agent-git.out 2>&1\n\
             echo 'agent work' > agent-notes.txt\n\
             git rev-parse HEAD > '{head}'\n\
             exit 0\n",
            cmd = case.command,
            head = head_file.display(),
        ),
    );
    // The config is committed before the branches part, so every state has it.
    p.write_config(&ConfigBuilder::new(&agent).dirty_action(action));
    diverged(&p);
    p.spawn(&["round"])
        .wait(Duration::from_secs(60))
        .assert_code(0);
    let all = format!(
        "{}\nthe agent's git: {}",
        p.events_text(),
        std::fs::read_to_string(p.dir().join("agent-git.out")).unwrap_or_default()
    );

    let git_dir = p.dir().join(".git");
    assert!(
        git_dir.join(case.marker).exists(),
        "{what}: the operation's state is gone: {all}"
    );
    let head_after_agent = std::fs::read_to_string(&head_file).unwrap();
    assert_eq!(
        p.git(&["rev-parse", "HEAD"]),
        head_after_agent,
        "{what}: the supervisor committed: {all}"
    );
    assert_eq!(p.git(&["stash", "list"]), "", "{what}: stashed: {all}");
    if case.conflicts {
        assert!(
            !p.git(&["ls-files", "-u"]).is_empty(),
            "{what}: the conflicted index entries were reset: {all}"
        );
        let text = std::fs::read_to_string(p.dir().join("conflict.txt")).unwrap();
        assert!(text.contains("<<<<<<<"), "{what}: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(p.dir().join("agent-notes.txt")).unwrap(),
        "agent work\n",
        "{what}"
    );
    let events = p.events_of("git_operation_in_progress");
    assert_eq!(events.len(), 1, "{what}: {all}");
    assert_eq!(events[0]["operation"], case.operation, "{what}");
    assert!(
        events[0]["what_to_do"]
            .as_str()
            .unwrap()
            .contains(&format!("git {}", case.operation)),
        "{what}: {}",
        events[0]
    );
    for kind in [
        "dirty_auto_committed",
        "orphan_stashed",
        "dirty_commit_failed",
        "orphan_stash_failed",
    ] {
        assert!(p.events_of(kind).is_empty(), "{what}: {kind}: {all}");
    }

    let peek = p.run(&["peek"]);
    peek.assert_code(0);
    let line = peek
        .stdout
        .lines()
        .find(|l| l.starts_with("git "))
        .unwrap_or_else(|| panic!("{what}: no git line in peek:\n{}", peek.stdout));
    assert!(
        line.contains(&format!("a {} is in progress", case.operation))
            && line.contains(&format!("git {}", case.operation)),
        "{what}: {line}"
    );
    let json = p.run(&["peek", "--select", "git_operation.operation"]);
    assert_eq!(json.stdout.trim(), case.operation, "{what}");

    // The operator can finish the way git offers: the abort restores the branch, and the
    // agent's file is still there.
    if case.operation == "bisect" {
        p.git(&["bisect", "reset"]);
    } else {
        p.git(&[case.operation, "--abort"]);
    }
    assert!(p.dir().join("agent-notes.txt").exists(), "{what}");
    let peek = p.run(&["peek"]);
    assert!(
        !peek.stdout.lines().any(|l| l.starts_with("git ")),
        "{what}: {}",
        peek.stdout
    );
}
