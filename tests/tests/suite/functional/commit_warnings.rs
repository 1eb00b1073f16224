//! Issue 27 item 9: what an auto-commit tells the operator. The supervisor's git never runs
//! the repository's hooks, so a commit that skipped `pre-commit` (in `.git/hooks`, or
//! husky's `core.hooksPath`) records `dirty_commit_hooks_skipped`; a commit on a detached
//! HEAD, which no branch holds, records `dirty_commit_detached_head` with how to keep it
//! (docs/operations.md, "Leaving it unattended").

use agent_runner_e2e::{Operator, Project};
use std::os::unix::fs::PermissionsExt;

fn executable(p: &Project, rel: &str, body: &str) {
    p.write(rel, body);
    std::fs::set_permissions(p.dir().join(rel), std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_commit_that_skipped_the_repositorys_hooks_says_so() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for husky in [false, true] {
            one_a_commit_that_skipped_the_repositorys_hooks_says_so(operator, husky);
        }
    }
}

fn one_a_commit_that_skipped_the_repositorys_hooks_says_so(operator: Operator, husky: bool) {
    let p = Project::new_as(operator);
    p.write_config(&p.config().dirty_action("auto_commit"));
    let marker = p.tmp_dir().join("hook-ran");
    let hook = format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display());
    let dir = if husky {
        executable(&p, ".husky/pre-commit", &hook);
        p.git(&["add", ".husky"]);
        p.git(&[
            "-c",
            "core.hooksPath=/dev/null",
            "commit",
            "-q",
            "-m",
            "husky",
        ]);
        p.git(&["config", "core.hooksPath", ".husky"]);
        ".husky"
    } else {
        executable(&p, ".git/hooks/pre-commit", &hook);
        executable(&p, ".git/hooks/commit-msg", &hook);
        ".git/hooks"
    };

    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let committed = p.events_of("dirty_auto_committed");
    assert_eq!(committed.len(), 1, "{all}");
    assert!(!marker.exists(), "the hook ran");
    let skipped = p.events_of("dirty_commit_hooks_skipped");
    assert_eq!(skipped.len(), 1, "{all}");
    assert_eq!(skipped[0]["sha"], committed[0]["sha"], "{all}");
    assert!(
        skipped[0]["hooks_dir"].as_str().unwrap().ends_with(dir),
        "{all}"
    );
    let hooks = &skipped[0]["hooks"];
    if husky {
        assert_eq!(
            hooks,
            &agent_runner_e2e::serde_json::json!(["pre-commit"]),
            "{all}"
        );
    } else {
        assert_eq!(
            hooks,
            &agent_runner_e2e::serde_json::json!(["pre-commit", "commit-msg"]),
            "{all}"
        );
    }
    assert!(
        p.events_of("dirty_commit_detached_head").is_empty(),
        "{all}"
    );
}

#[test]
fn a_repository_without_hooks_gets_no_hooks_event() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("auto_commit"));
    // git init's samples are not hooks (`*.sample` never runs).
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    assert_eq!(p.events_of("dirty_auto_committed").len(), 1, "{all}");
    assert!(
        p.events_of("dirty_commit_hooks_skipped").is_empty(),
        "{all}"
    );
}

#[test]
fn a_commit_on_a_detached_head_warns_and_says_how_to_keep_it() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        p.write_config(&p.config().dirty_action("auto_commit"));
        p.git(&["checkout", "-q", "--detach"]);

        p.run(&["round"]).assert_code(0);
        let all = p.events_text();
        let committed = p.events_of("dirty_auto_committed");
        assert_eq!(committed.len(), 1, "{all}");
        let sha = committed[0]["sha"].as_str().unwrap();
        // The documented behaviour: the commit is made where HEAD is, on no branch.
        assert_eq!(p.git(&["rev-parse", "HEAD"]).trim(), sha);
        assert_eq!(p.git(&["branch", "--contains", sha]).lines().count(), 1);
        assert!(p
            .git(&["branch", "--contains", sha])
            .contains("HEAD detached"));
        let warned = p.events_of("dirty_commit_detached_head");
        assert_eq!(warned.len(), 1, "{all}");
        assert_eq!(warned[0]["sha"], sha, "{all}");
        assert!(
            warned[0]["what_to_do"]
                .as_str()
                .unwrap()
                .contains(&format!("git branch <name> {sha}")),
            "{all}"
        );
    }
}
