//! A `work_dir` outside any git repository runs, as the reference system runs it
//! (docs/operations.md, "Without git"; issue 38, item 1): `dirty_action` defaults to
//! `ignore` there, the agent's files stay where it left them, `git_head` is null, `doctor`
//! and the boot warn once, and a `.git` the agent makes while `serve` runs is not adopted
//! before the next start. As root and as the unprivileged user. (A written `stash` or `auto_commit` is refused:
//! `config_errors.rs`, `work_dir_outside_a_git_working_tree`.)

use agent_runner_e2e::{doctor_check, ConfigBuilder, Operator, Project};

/// A project of `operator` whose directory is no repository (its `.git` moved out of the
/// tree).
fn plain(operator: Operator, agent_body: &str) -> Project {
    let p = Project::new_as(operator);
    let agent = p.script("agent.sh", agent_body);
    p.write_config(&ConfigBuilder::new(&agent));
    let outside = p.tmp_dir().join("moved-git");
    std::fs::rename(p.dir().join(".git"), outside).unwrap();
    p
}

#[test]
fn a_round_in_a_plain_directory_runs_and_leaves_the_agents_files() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = plain(operator, "#!/bin/sh\necho made > made.txt\n");
        let out = p.run(&["round"]);
        out.assert_code(0);
        assert!(
            out.stderr.contains("is not inside a git working tree"),
            "no warning at boot: {out}"
        );
        assert_eq!(
            std::fs::read_to_string(p.dir().join("made.txt")).unwrap(),
            "made\n"
        );
        let kinds = p.event_kinds();
        for absent in ["dirty_detected", "orphan_stashed", "dirty_check_failed"] {
            assert!(!kinds.iter().any(|k| k == absent), "{absent}: {kinds:?}");
        }
        for kind in ["round_substrate_before", "round_substrate_after"] {
            let event = &p.events_of(kind)[0];
            assert!(event["git_head"].is_null(), "{kind}: {event}");
        }
        assert_eq!(p.events_of("round_end")[0]["exit_code"], 0);
        assert!(!p.dir().join(".git").exists(), "git init ran in the tree");

        // doctor: the work dir passes, with one warning naming it.
        let out = p.run(&["doctor", "--json"]);
        let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("doctor JSON");
        assert_eq!(doctor_check(&report, "work_dir")["ok"], true, "{report}");
        let warned: Vec<&serde_json::Value> = report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["name"] == "work_dir")
            .collect();
        assert_eq!(warned.len(), 1, "{report}");
        assert!(
            warned[0]["reason"]
                .as_str()
                .unwrap()
                .contains("is not inside a git working tree"),
            "{report}"
        );
    }
}

#[test]
fn a_git_dir_made_while_serving_is_not_adopted_until_the_next_start() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        // Round 1 makes the work dir a repository with a first commit; each round leaves a
        // file.
        let p = plain(
            operator,
            "#!/bin/sh\necho \"$AGENT_RUNNER_ROUND_NUM\" > \"r$AGENT_RUNNER_ROUND_NUM.txt\"\nif [ ! -d .git ]; then git init -q . && git add -A && git -c user.name=a -c user.email=a@b.invalid commit -qm first; fi\n",
        );
        p.run(&["serve", "--max-rounds", "2"]).assert_code(0);
        assert!(p.dir().join(".git").is_dir());
        assert!(p.dir().join("r1.txt").is_file() && p.dir().join("r2.txt").is_file());
        assert!(
            p.events_of("dirty_detected").is_empty(),
            "{}",
            p.events_text()
        );
        assert!(p.events_of("orphan_stashed").is_empty());
        // The next start adopts it: the round's dirt is stashed (the default in a repository).
        p.run(&["round"]).assert_code(0);
        assert_eq!(
            p.events_of("orphan_stashed").len(),
            1,
            "{}",
            p.events_text()
        );
        assert!(
            !p.dir().join("r3.txt").exists(),
            "round 3's file was not stashed"
        );
    }
}
