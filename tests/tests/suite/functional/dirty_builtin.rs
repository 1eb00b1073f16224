//! The built-in dirty handler (no hosts): `stash` (SHA-locked, idempotent), `auto_commit`
//! and `ignore`, after odd rounds of the demo agent (which leave the tree dirty).

use agent_runner_e2e::Project;

#[test]
fn stash_is_recorded_by_sha_and_idempotent() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("stash").stash_idempotency_s(3600));

    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let detected = p.events_of("dirty_detected");
    assert_eq!(detected.len(), 1, "{all}");
    let files: Vec<&str> = detected[0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(files.contains(&"notes/journal.md"), "{all}");
    assert!(files.contains(&"src/round_1.rs"), "{all}");
    assert!(
        !files.iter().any(|f| f.starts_with("logs")),
        "log dir counted as dirt: {all}"
    );

    let stashed = p.events_of("orphan_stashed");
    assert_eq!(stashed.len(), 1, "{all}");
    assert_eq!(stashed[0]["round_num"], 1, "{all}");
    assert_eq!(stashed[0]["hook"], "default", "{all}");
    let sha = stashed[0]["ref"].as_str().expect("ref").to_owned();
    assert_eq!(sha.len(), 40, "{sha}");
    assert!(sha.chars().all(|c| c.is_ascii_hexdigit()), "{sha}");
    assert!(p.stash_shas().contains(&sha), "{:?}", p.stash_shas());
    let message = stashed[0]["message"].as_str().unwrap();
    assert!(message.starts_with("ORPHAN R1 ts="), "{message}");
    let subject = p.git(&["log", "-1", "--format=%s", &sha]);
    assert!(subject.contains("ORPHAN R1 ts="), "{subject}");
    assert!(
        p.status_porcelain().is_empty(),
        "{:?}",
        p.status_porcelain()
    );
    assert_eq!(p.events_of("round_end")[0]["dirty_outcome"], "stashed");

    // Round 2: the agent commits its own work; nothing to stash.
    p.run(&["round"]).assert_code(0);
    assert_eq!(p.events_of("orphan_stashed").len(), 1);
    assert_eq!(p.events_of("dirty_detected").len(), 1);

    // Round 3 is dirty again within stash_idempotency_s of the stash, with another change
    // (its own journal line and file): stashed; only the same change is skipped (issue 41,
    // item 6; `stash_record.rs`).
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    assert!(p.events_of("orphan_idempotent_skip").is_empty(), "{all}");
    let stashed = p.events_of("orphan_stashed");
    assert_eq!(stashed.len(), 2, "{all}");
    assert_eq!(stashed[1]["round_num"], 3, "{all}");
    assert_eq!(p.stash_shas().len(), 2);
    assert!(p.stash_shas().contains(&sha));
    assert!(p.status_porcelain().is_empty());
}

#[test]
fn auto_commit_commits_with_the_round_subject() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("auto_commit"));

    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let commits = p.events_of("dirty_auto_committed");
    assert_eq!(commits.len(), 1, "{all}");
    assert_eq!(commits[0]["hook"], "default", "{all}");
    assert_eq!(p.log_subjects()[0], "agent-runner auto-commit: R1");
    assert_eq!(
        p.git(&["rev-parse", "HEAD"]).trim(),
        commits[0]["sha"].as_str().unwrap()
    );
    let files = p.git(&["show", "--name-only", "--format=", "HEAD"]);
    assert!(files.contains("notes/journal.md"), "{files}");
    assert!(files.contains("src/round_1.rs"), "{files}");
    assert!(
        p.status_porcelain().is_empty(),
        "{:?}",
        p.status_porcelain()
    );
    assert!(p.stash_shas().is_empty());
}

#[test]
fn ignore_leaves_the_tree_dirty() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("ignore"));
    let head = p.git(&["rev-parse", "HEAD"]);

    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let ignored = p.events_of("dirty_ignored");
    assert_eq!(ignored.len(), 1, "{all}");
    assert_eq!(ignored[0]["hook"], "default", "{all}");
    assert_eq!(ignored[0]["round_num"], 1, "{all}");
    let status = p.status_porcelain().join("\n");
    assert!(status.contains("notes/"), "{status}");
    assert!(status.contains("src/"), "{status}");
    assert_eq!(p.git(&["rev-parse", "HEAD"]), head);
    assert!(p.stash_shas().is_empty());
}

#[test]
fn stash_keeps_an_unignored_log_dir_out() {
    // The log dir lies inside the tree and is NOT gitignored: the stash must leave it.
    let p = Project::new();
    p.write(".gitignore", "/.agent-runner-pause\n");
    p.git(&[
        "commit",
        "-q",
        "-m",
        "track nothing under logs",
        "--",
        ".gitignore",
    ]);
    p.write_config(&p.config().dirty_action("stash"));

    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let stashed = p.events_of("orphan_stashed");
    assert_eq!(stashed.len(), 1, "{all}");
    let sha = stashed[0]["ref"].as_str().unwrap();
    // Untracked files of a `stash -u` are in its third parent.
    let untracked = p.git(&["show", "--name-only", "--format=", &format!("{sha}^3")]);
    assert!(untracked.contains("notes/journal.md"), "{untracked}");
    assert!(!untracked.contains("logs/"), "log dir stashed: {untracked}");
    assert!(!p.event_files().is_empty(), "events gone");
    let status = p.status_porcelain();
    assert!(
        status.iter().all(|entry| entry.starts_with("?? logs/")),
        "only the log dir may remain untracked: {status:?}"
    );
}
