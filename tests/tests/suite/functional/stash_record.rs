//! What the record says of the round's git work (issue 38, item 3; issue 41, item 6;
//! docs/operations.md, "Stashes"): a stash the agent's git drops is reported with the
//! command that gets it back; within `stash_idempotency_s` only the same change is
//! skipped; `round_end` and the dirty events name the branch the agent left `HEAD` on. As
//! root and as the unprivileged user.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};

/// A project of `operator` whose agent runs `body` (sh) in the work tree;
/// `stash_idempotency_s` as given.
fn project(operator: Operator, body: &str, idempotency_s: u64) -> Project {
    let p = Project::new_as(operator);
    let agent = p.script("agent.sh", &format!("#!/bin/sh\nset -e\n{body}\n"));
    p.write_config(&ConfigBuilder::new(&agent).stash_idempotency_s(idempotency_s));
    p
}

#[test]
fn a_stash_the_agents_git_clears_is_reported_and_can_be_put_back() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        // Round 1 leaves a file (stashed); round 2's agent clears the stash list.
        let p = project(
            operator,
            "if [ \"$AGENT_RUNNER_ROUND_NUM\" = 1 ]; then echo work > work.txt; else git stash clear; fi",
            0,
        );
        p.run(&["round"]).assert_code(0);
        let stashed = p.events_of("orphan_stashed");
        assert_eq!(stashed.len(), 1, "{}", p.events_text());
        let sha = stashed[0]["ref"].as_str().unwrap().to_owned();
        p.run(&["round"]).assert_code(0);
        assert!(
            p.stash_shas().is_empty(),
            "the agent did not clear the list"
        );
        let dropped = p.events_of("orphan_stash_dropped");
        assert_eq!(dropped.len(), 1, "{}", p.events_text());
        let event = &dropped[0];
        assert_eq!(event["ref"], sha.as_str());
        assert_eq!(event["round_num"], 2);
        assert_eq!(event["stashed_round"], 1);
        assert_eq!(event["files"][0], "work.txt");
        assert_eq!(event["recoverable"], true);
        // The command it names puts the work back.
        let what = event["what_to_do"].as_str().unwrap();
        let command = what
            .split('`')
            .nth(1)
            .expect("a command in backquotes")
            .to_owned();
        assert!(command.starts_with("git stash store"), "{what}");
        // Run by the operator, as the operator.
        let mut sh = match operator.user() {
            Some(user) => user.command("sh"),
            None => std::process::Command::new("sh"),
        };
        let out = sh
            .args(["-c", &command])
            .current_dir(p.dir())
            .env("HOME", p.home())
            .output()
            .unwrap();
        assert!(out.status.success(), "{command}: {out:?}");
        assert_eq!(p.stash_shas(), vec![sha.clone()]);
        p.git(&["stash", "apply", &sha]);
        assert_eq!(
            std::fs::read_to_string(p.dir().join("work.txt")).unwrap(),
            "work\n"
        );
        // Reported once: a third round says nothing more of it.
        p.git(&["stash", "clear"]);
        std::fs::remove_file(p.dir().join("work.txt")).unwrap();
        p.run(&["round"]).assert_code(0);
        assert_eq!(p.events_of("orphan_stash_dropped").len(), 1);
    }
}

#[test]
fn within_the_idempotency_window_only_the_same_change_is_skipped() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        // Rounds 1 and 2 leave different files; round 3 leaves round 2's file again, byte for
        // byte; all within the window (60 s).
        let p = project(
            operator,
            "case \"$AGENT_RUNNER_ROUND_NUM\" in 1) echo one > a.txt;; *) echo two > b.txt;; esac",
            60,
        );
        for _ in 0..3 {
            p.run(&["round"]).assert_code(0);
        }
        let stashed: Vec<u64> = p
            .events_of("orphan_stashed")
            .iter()
            .map(|e| e["round_num"].as_u64().unwrap())
            .collect();
        assert_eq!(stashed, [1, 2], "{}", p.events_text());
        let skipped = p.events_of("orphan_idempotent_skip");
        assert_eq!(skipped.len(), 1, "{}", p.events_text());
        assert_eq!(skipped[0]["round_num"], 3);
        assert!(skipped[0]["reason"]
            .as_str()
            .unwrap()
            .contains("same change"));
        assert_eq!(p.stash_shas().len(), 2);
    }
}

#[test]
fn the_branch_the_agent_left_head_on_is_in_round_end_and_the_dirty_events() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        // The agent commits on a branch of its own and leaves one more file.
        let p = project(
            operator,
            "git switch -q -c agent/feature\necho done > feature.txt\ngit add feature.txt\ngit -c user.name=a -c user.email=a@b.invalid commit -qm feature\necho wip > wip.txt",
            0,
        );
        p.run(&["round"]).assert_code(0);
        for kind in ["dirty_detected", "orphan_stashed", "round_end"] {
            let events = p.events_of(kind);
            assert_eq!(events.len(), 1, "{kind}: {}", p.events_text());
            assert_eq!(
                events[0]["branch"], "agent/feature",
                "{kind}: {}",
                events[0]
            );
        }
        // A detached HEAD is null.
        let p = project(operator, "git checkout -q --detach HEAD", 0);
        p.run(&["round"]).assert_code(0);
        let end = &p.events_of("round_end")[0];
        assert!(end["branch"].is_null(), "{end}");
    }
}

/// Issue 38, item 3 (60,000 new files): a stash git cannot finish within
/// `[vcs] git_timeout_s` is killed, says so with what to do, and leaves nothing half-done:
/// the files stay in the tree and none of the index locks the killed git held remains to
/// fail the agent's next git command. The slow git is made deterministic: the operator's
/// own clean filter for `*.slow` sleeps past the timeout.
#[test]
fn a_stash_killed_by_the_git_timeout_leaves_no_lock_and_says_what_to_do() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        std::fs::write(
            p.home().join(".gitconfig"),
            "[filter \"slow\"]\n\tclean = sleep 30; cat\n",
        )
        .unwrap();
        p.write(".gitattributes", "*.slow filter=slow\n");
        p.git(&["add", ".gitattributes"]);
        p.git(&["commit", "-qm", "attributes"]);
        let agent = p.script("agent.sh", "#!/bin/sh\necho asset > big.slow\n");
        let text = ConfigBuilder::new(&agent).render();
        p.write_config_text(&text.replace("[vcs]\n", "[vcs]\ngit_timeout_s = 2\n"));
        p.run(&["round"]).assert_code(0);
        let all = p.events_text();
        let failed = p.events_of("orphan_stash_failed");
        assert_eq!(failed.len(), 1, "{all}");
        assert!(
            failed[0]["what_to_do"]
                .as_str()
                .is_some_and(|w| w.contains("raise [vcs] git_timeout_s")),
            "{all}"
        );
        let leftovers: Vec<String> = std::fs::read_dir(p.dir().join(".git"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n == "index.lock" || n.starts_with("index.stash."))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}: {all}");
        assert!(p.dir().join("big.slow").is_file());
        assert!(p.stash_shas().is_empty());
        // The agent's own git works on.
        p.git(&["add", "README.md"]);
    }
}

/// An `index.lock` the agent's git left (stopped mid-command) fails the stash; the
/// supervisor does not remove what it did not make, but names it and what to do, and the
/// round's files stay in the tree. The control: without the lock the same round stashes.
#[test]
fn an_index_lock_left_before_the_stash_is_named_and_left() {
    for lock in [true, false] {
        let p = Project::new();
        let body = if lock {
            "#!/bin/sh\necho work > work.txt\n: > .git/index.lock\n"
        } else {
            "#!/bin/sh\necho work > work.txt\n"
        };
        let agent = p.script("agent.sh", body);
        p.write_config(&ConfigBuilder::new(&agent).dirty_action("stash"));
        p.run(&["round"]).assert_code(0);
        let all = p.events_text();
        if !lock {
            assert_eq!(p.events_of("orphan_stashed").len(), 1, "control: {all}");
            continue;
        }
        let failed = p.events_of("orphan_stash_failed");
        assert_eq!(failed.len(), 1, "{all}");
        assert!(
            failed[0]["tree"]
                .as_str()
                .is_some_and(|t| t.contains("index.lock was there before the stash")),
            "{all}"
        );
        assert!(p.dir().join(".git/index.lock").exists(), "{all}");
        assert!(p.dir().join("work.txt").is_file());
    }
}

/// Issue 38, "nothing half-done": a `git stash push` that runs out of `git_timeout_s`
/// *after* storing its stash (here: its `reset --hard` re-checks out a tracked file through
/// the operator's slow smudge filter) is let finish instead of being killed half-way: the
/// round's change is in the stash, the tree is as `HEAD` has it, `orphan_stashed` is
/// recorded. Under the old rule the kill left `orphan_stash_failed` and the tree half
/// cleaned. As root and as the unprivileged user.
#[test]
fn a_stash_that_stored_its_stash_is_let_finish_past_the_timeout() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        std::fs::write(
            p.home().join(".gitconfig"),
            "[filter \"slow\"]\n\tclean = cat\n\tsmudge = \"sleep 4; cat\"\n",
        )
        .unwrap();
        p.write(".gitattributes", "*.slow filter=slow\n");
        p.write("asset.slow", "original\n");
        p.git(&["add", ".gitattributes", "asset.slow"]);
        p.git(&["commit", "-qm", "asset"]);
        let agent = p.script(
            "agent.sh",
            "#!/bin/sh\necho changed > asset.slow\necho new > new.txt\n",
        );
        let text = ConfigBuilder::new(&agent).render();
        p.write_config_text(&text.replace("[vcs]\n", "[vcs]\ngit_timeout_s = 3\n"));
        p.run(&["round"]).assert_code(0);
        let all = format!("{operator:?}: {}", p.events_text());
        assert!(p.events_of("orphan_stash_failed").is_empty(), "{all}");
        let stashed = p.events_of("orphan_stashed");
        assert_eq!(stashed.len(), 1, "{all}");
        assert_eq!(
            std::fs::read_to_string(p.dir().join("asset.slow")).unwrap(),
            "original\n",
            "{all}"
        );
        assert!(!p.dir().join("new.txt").exists(), "{all}");
        let sha = stashed[0]["ref"].as_str().unwrap();
        assert_eq!(p.git(&["show", &format!("{sha}:asset.slow")]), "changed\n");
        assert_eq!(p.git(&["show", &format!("{sha}^3:new.txt")]), "new\n");
    }
}
