//! The dirty tree on real git: a failed git step leaves the tree and the index exactly as
//! they were and says so; a stash is remembered by SHA and not repeated within
//! `stash_idempotency_s`, across separate `round` processes.

use agent_runner_e2e::Project;

/// `git status --porcelain=v2` plus the index's content: what must not change.
fn tree_and_index(p: &Project) -> (Vec<String>, String) {
    (p.status_porcelain(), p.git(&["ls-files", "--stage"]))
}

#[test]
fn a_failed_auto_commit_leaves_tree_and_index_as_they_were() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("auto_commit"));
    // A stale index.lock makes every index-writing git step fail.
    p.write(".git/index.lock", "");
    let head = p.git(&["rev-parse", "HEAD"]);
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let failed = p.events_of("dirty_commit_failed");
    assert_eq!(failed.len(), 1, "{all}");
    assert_eq!(failed[0]["hook"], "default", "{all}");
    assert!(
        failed[0]["error"].as_str().unwrap().contains("index.lock"),
        "{all}"
    );
    assert_eq!(
        p.events_of("round_end")[0]["dirty_outcome"],
        "failed",
        "{all}"
    );
    // Nothing was committed, nothing discarded: the agent's files are all still there
    // and untracked, and the index is untouched.
    std::fs::remove_file(p.dir().join(".git/index.lock")).unwrap();
    assert_eq!(p.git(&["rev-parse", "HEAD"]), head);
    let (status, index) = tree_and_index(&p);
    assert!(status.iter().any(|l| l.contains("notes/")), "{status:?}");
    assert!(status.iter().any(|l| l.contains("src/")), "{status:?}");
    assert!(!index.contains("notes/journal.md"), "{index}");
    assert!(p.dir().join("src/round_1.rs").is_file());
}

#[test]
fn a_failed_stash_leaves_the_tree_and_reports_it() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("stash"));
    p.write(".git/index.lock", "");
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    assert_eq!(p.events_of("orphan_stash_failed").len(), 1, "{all}");
    std::fs::remove_file(p.dir().join(".git/index.lock")).unwrap();
    assert!(p.stash_shas().is_empty());
    assert!(p.dir().join("src/round_1.rs").is_file());
    assert!(!p.state_dir().join("orphan-state.json").exists());
}

#[test]
fn stash_idempotency_holds_across_processes_and_by_sha() {
    // Each round leaves the same change (the window skips only that: `stash_record.rs`).
    let p = Project::new();
    let agent = p.script("same.sh", "#!/bin/sh\necho same > same.txt\n");
    p.write_config(
        &agent_runner_e2e::ConfigBuilder::new(&agent)
            .dirty_action("stash")
            .stash_idempotency_s(3600),
    );
    p.run(&["round"]).assert_code(0);
    let sha = p.events_of("orphan_stashed")[0]["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    let record: agent_runner_e2e::serde_json::Value = agent_runner_e2e::serde_json::from_str(
        &std::fs::read_to_string(p.state_dir().join("orphan-state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["sha"], sha.as_str());
    // Someone pushes another stash on top: ours is still found by SHA, not position.
    p.write("scratch.txt", "operator's own work\n");
    p.git(&["stash", "push", "-u", "-m", "operator"]);
    p.run(&["round"]).assert_code(0); // round 2 is dirty again: within the window
    let skips = p.events_of("orphan_idempotent_skip");
    assert_eq!(skips.len(), 1, "{}", p.events_text());
    assert_eq!(skips[0]["ref"], sha.as_str());
    assert_eq!(p.stash_shas().len(), 2);
    assert!(p.stash_shas().contains(&sha));
}

/// Issue 27, item 8: after the clock steps back, the last stash is recorded "in the future";
/// it must not hold up stashes for as long as the step (before, every round was skipped as
/// "a stash was made 0 s ago" for that hour). Real rounds, the record as `serve` writes it
/// with its time an hour ahead of the machine's clock. As root and as the unprivileged user.
#[test]
fn a_stash_recorded_in_the_future_does_not_block_stashes() {
    use agent_runner_e2e::unprivileged::Operator;
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        let agent = p.script("dirty-agent.sh", "#!/bin/sh\necho work >> scratch.txt\n");
        p.write_config(
            &agent_runner_e2e::ConfigBuilder::new(&agent)
                .dirty_action("stash")
                .stash_idempotency_s(3600),
        );
        p.run(&["round"]).assert_code(0);
        assert_eq!(
            p.events_of("orphan_stashed").len(),
            1,
            "{}",
            p.events_text()
        );
        let path = p.state_dir().join("orphan-state.json");
        let mut record: agent_runner_e2e::serde_json::Value =
            agent_runner_e2e::serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
                .unwrap();
        let unix_s = record["unix_s"].as_u64().unwrap();
        record["unix_s"] = (unix_s + 3600).into();
        std::fs::write(&path, record.to_string()).unwrap();
        p.run(&["round"]).assert_code(0);
        let all = p.events_text();
        assert!(
            p.events_of("orphan_idempotent_skip").is_empty(),
            "{operator:?}: {all}"
        );
        assert_eq!(
            p.events_of("orphan_stashed").len(),
            2,
            "{operator:?}: {all}"
        );
        assert_eq!(p.stash_shas().len(), 2, "{operator:?}");
    }
}

/// A rename is handed whole (docs/protocol.md, `dirty_handler/handle_dirty`): `dirty_files`
/// carries both sides, new then old, and a handler committing exactly the files it was
/// given (`dirty-commit` names them in `paths`) commits the rename in one step, leaving
/// nothing staged for the next round.
#[test]
fn a_rename_is_committed_whole_by_a_handler() {
    let p = Project::new();
    p.write("notes/old.md", "kept across the rename\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "notes"]);
    let agent = p.tmp_dir().join("renaming-agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\nset -e\ngit mv notes/old.md notes/new.md\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    p.write_config(
        &agent_runner_e2e::ConfigBuilder::new(&agent)
            .sandbox("require")
            .host(
                agent_runner_e2e::HostSpec::new("wip", agent_runner_e2e::dirty_commit_host_bin())
                    .provides(&["dirty_handler"]),
            ),
    );
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let detected = p.events_of("dirty_detected");
    assert_eq!(
        detected[0]["files"],
        agent_runner_e2e::serde_json::json!(["notes/new.md", "notes/old.md"]),
        "{all}"
    );
    let committed = p.events_of("dirty_auto_committed");
    assert_eq!(committed.len(), 1, "{all}");
    assert_eq!(committed[0]["hook"], "wip_commit", "{all}");
    let changes = p.git(&["show", "-M", "--name-status", "--format=", "HEAD"]);
    assert_eq!(
        changes.trim(),
        "R100\tnotes/old.md\tnotes/new.md",
        "{changes}"
    );
    assert!(
        p.status_porcelain().is_empty(),
        "{:?}",
        p.status_porcelain()
    );
}
