//! Issue 27 item 6: a round that leaves more dirty paths than one argument list can carry
//! (12,000 new files of ~220-byte paths: 2.6 MB of names, over Linux's 2 MB `ARG_MAX`) is
//! stashed or auto-committed whole, in the first round, with the operator's work left as
//! it was (docs/operations.md, "Large trees"). Before, git was started with every path as
//! an argument and failed with "Argument list too long"; the files then counted as the
//! operator's from round 2 on. Seconds on a 60,000-file tree: bench/large_tree.sh.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};

const DIRS: usize = 12;
const PER_DIR: usize = 1000;

/// An agent that writes `DIRS` × `PER_DIR` new files under long names and edits README.md.
fn many_files_agent(p: &Project) -> std::path::PathBuf {
    let dir = format!("generated_{}", "d".repeat(110));
    let file = format!("file_{}_", "f".repeat(85));
    let dirs: Vec<String> = (0..DIRS).map(|d| d.to_string()).collect();
    p.script(
        "many-files-agent.sh",
        &format!(
            "#!/bin/sh\nset -e\nfor d in {}; do\n  mkdir -p \"{dir}$d\"\n  \
             seq {PER_DIR} | split -l 1 -a 3 -d - \"{dir}$d/{file}\"\n\
             done\necho 'agent edit' >> README.md\n",
            dirs.join(" ")
        ),
    )
}

/// The number of lines of `git <args>`.
fn count(p: &Project, args: &[&str]) -> usize {
    p.git(args).lines().count()
}

#[test]
fn twelve_thousand_new_files_are_stashed_in_the_first_round() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        one_twelve_thousand_new_files_are_stashed_in_the_first_round(operator);
    }
}

fn one_twelve_thousand_new_files_are_stashed_in_the_first_round(operator: Operator) {
    let p = Project::new_as(operator);
    let agent = many_files_agent(&p);
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("stash"));
    // The operator's work: left in place, out of the stash (an exclusion pathspec).
    p.write("scratch.txt", "operator scratch\n");

    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    assert!(p.events_of("orphan_stash_failed").is_empty(), "{all}");
    let stashed = p.events_of("orphan_stashed");
    assert_eq!(stashed.len(), 1, "{all}");
    let sha = stashed[0]["ref"].as_str().unwrap();
    // A stash's third parent holds its untracked files; the stash itself, the edits.
    let untracked = count(&p, &["ls-tree", "-r", "--name-only", &format!("{sha}^3")]);
    assert_eq!(untracked, DIRS * PER_DIR, "{all}");
    let edited = p.git(&["diff", "--name-only", &format!("{sha}^1"), sha]);
    assert_eq!(edited.trim(), "README.md");
    assert_eq!(p.status_porcelain(), ["?? scratch.txt"]);
    assert_eq!(
        std::fs::read_to_string(p.dir().join("scratch.txt")).unwrap(),
        "operator scratch\n"
    );
}

#[test]
fn twelve_thousand_new_files_are_auto_committed_in_the_first_round() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        one_twelve_thousand_new_files_are_auto_committed_in_the_first_round(operator);
    }
}

fn one_twelve_thousand_new_files_are_auto_committed_in_the_first_round(operator: Operator) {
    let p = Project::new_as(operator);
    let agent = many_files_agent(&p);
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("auto_commit"));
    // The operator staged an edit before the round: it is not the round's, so it stays
    // staged and out of the commit.
    p.write("staged.md", "v1\n");
    p.git(&["add", "staged.md"]);
    p.git(&["commit", "-q", "-m", "staged.md"]);
    p.write("staged.md", "v2, staged by the operator\n");
    p.git(&["add", "staged.md"]);

    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    assert!(p.events_of("dirty_commit_failed").is_empty(), "{all}");
    let committed = p.events_of("dirty_auto_committed");
    assert_eq!(committed.len(), 1, "{all}");
    let sha = committed[0]["sha"].as_str().unwrap();
    let in_commit = p.git(&["show", "--name-only", "--format=", sha]);
    assert_eq!(in_commit.lines().count(), DIRS * PER_DIR + 1, "{all}");
    assert!(in_commit.lines().any(|l| l == "README.md"));
    assert!(!in_commit.lines().any(|l| l == "staged.md"));
    assert_eq!(p.git(&["rev-parse", "HEAD"]).trim(), sha);
    // The index holds the commit's paths and, still staged, the operator's edit.
    assert_eq!(p.status_porcelain(), ["M  staged.md"]);
    assert_eq!(
        p.git(&["show", ":staged.md"]),
        "v2, staged by the operator\n"
    );
}

#[test]
fn a_small_round_beside_much_operator_dirt_takes_only_its_own_files() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        one_a_small_round_beside_much_operator_dirt_takes_only_its_own_files(operator);
    }
}

fn one_a_small_round_beside_much_operator_dirt_takes_only_its_own_files(operator: Operator) {
    // The operator's dirt outnumbers the round's: the stash names the round's paths.
    let p = Project::new_as(operator);
    let agent = p.script(
        "two-files-agent.sh",
        "#!/bin/sh\necho a > 'agent one.txt'\necho b > '*.txt'\n",
    );
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("stash"));
    for i in 0..30 {
        p.write(&format!("operator/{i}.txt"), "mine\n");
    }

    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let stashed = p.events_of("orphan_stashed");
    assert_eq!(stashed.len(), 1, "{all}");
    let sha = stashed[0]["ref"].as_str().unwrap();
    let untracked = p.git(&["ls-tree", "-r", "--name-only", &format!("{sha}^3")]);
    // `*.txt` is a file name, not a pattern: the operator's .txt files stay out.
    assert_eq!(
        untracked.lines().collect::<Vec<_>>(),
        ["*.txt", "agent one.txt"]
    );
    let status = p.status_porcelain();
    assert_eq!(status.len(), 30, "{status:?}");
    assert!(
        status.iter().all(|l| l.starts_with("?? operator/")),
        "{status:?}"
    );
}

/// Issue 27 item 9: in a sparse checkout git makes the stash, then refuses to clean a path
/// outside the sparse definition (exit 1): recorded as `orphan_stash_failed` naming the
/// stash (the work is in it, by SHA), never as `orphan_stashed`.
#[test]
fn a_sparse_checkout_stash_that_git_fails_after_making_it_is_not_called_stashed() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("stash"));
    p.write("notes/keep.md", "tracked\n");
    p.git(&["add", "notes/keep.md"]);
    p.git(&["commit", "-q", "-m", "notes"]);
    // The cone holds the top level and prompts/; the demo agent writes src/ and notes/.
    p.git(&["sparse-checkout", "set", "prompts"]);
    // The operator's file makes the stash name its paths (an exclusion pathspec).
    p.write("scratch.txt", "operator scratch\n");

    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    assert!(p.events_of("orphan_stashed").is_empty(), "{all}");
    let failed = p.events_of("orphan_stash_failed");
    assert_eq!(failed.len(), 1, "{all}");
    let error = failed[0]["error"].as_str().unwrap();
    let made = p.stash_shas();
    assert_eq!(made.len(), 1, "{all}");
    assert!(
        error.contains(&format!("git made stash {}", made[0])) && error.contains("sparse"),
        "{all}"
    );
    assert_eq!(
        std::fs::read_to_string(p.dir().join("scratch.txt")).unwrap(),
        "operator scratch\n"
    );
}
