//! Paths under a filter the supervisor's git will not run (issue 38, item 3;
//! docs/operations.md, "Filters"): a repository whose `.gitattributes` routes `*.bin`
//! through a filter (`lfs`) configured only in the repository's own config, which the
//! supervisor's git never runs (the agent could have written it). Before, the asset was
//! committed (or stashed) raw, unfiltered, with nothing said; now it is left in the tree
//! and `dirty_filter_not_run` names the filter and where to configure it. The control: the
//! same filter in the operator's global config runs, and the asset is committed filtered.
//! As root and as the unprivileged user.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};

/// A repository whose `*.bin` files go through filter `lfs`, set in `.git/config` only, and
/// whose agent writes an asset and a note; the operator's.
fn repository(operator: Operator, action: &str) -> Project {
    let p = Project::new_as(operator);
    p.write(".gitattributes", "*.bin filter=lfs\n");
    p.git(&["add", ".gitattributes"]);
    p.git(&["commit", "-qm", "attributes"]);
    p.git(&["config", "filter.lfs.clean", "sed s/^/CLEANED:/"]);
    p.git(&["config", "filter.lfs.required", "true"]);
    let agent = p.script(
        "agent.sh",
        "#!/bin/sh\nprintf 'raw asset\\n' > asset.bin\necho note > note.txt\n",
    );
    p.write_config(&ConfigBuilder::new(&agent).dirty_action(action));
    p
}

/// What history and the stashes hold of `asset.bin`: each blob's content.
fn stored_assets(p: &Project) -> Vec<String> {
    let revs = p.git(&["rev-list", "--all", "--reflog"]);
    let mut found = Vec::new();
    for rev in revs.lines() {
        for tree in [rev.to_owned(), format!("{rev}^3")] {
            // `-c safe.directory=*`: the tree may be the unprivileged test user's.
            let blob = std::process::Command::new("git")
                .args(["-c", "safe.directory=*", "rev-parse", "-q", "--verify"])
                .arg(format!("{tree}:asset.bin"))
                .current_dir(p.dir())
                .output()
                .unwrap();
            if blob.status.success() {
                let sha = String::from_utf8_lossy(&blob.stdout).trim().to_owned();
                found.push(p.git(&["cat-file", "blob", &sha]));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn an_asset_under_a_repository_only_filter_is_neither_committed_nor_stashed_raw() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for action in ["auto_commit", "stash"] {
            let p = repository(operator, action);
            p.run(&["round"]).assert_code(0);
            let all = p.events_text();
            let held = p.events_of("dirty_filter_not_run");
            assert_eq!(held.len(), 1, "{action}: {all}");
            assert_eq!(held[0]["filter"], "lfs");
            assert_eq!(held[0]["files"][0], "asset.bin");
            assert!(
                held[0]["what_to_do"]
                    .as_str()
                    .unwrap()
                    .contains("git config --global filter.lfs"),
                "{all}"
            );
            assert_eq!(stored_assets(&p), Vec::<String>::new(), "{action}: {all}");
            assert_eq!(
                std::fs::read_to_string(p.dir().join("asset.bin")).unwrap(),
                "raw asset\n",
                "{action}: the asset was not left in the tree"
            );
            // The rest of the round's work is handled as configured.
            let handled = if action == "stash" {
                "orphan_stashed"
            } else {
                "dirty_auto_committed"
            };
            assert_eq!(p.events_of(handled).len(), 1, "{action}: {all}");
            assert!(!p.dir().join("note.txt").exists() || action == "auto_commit");
        }
    }
}

#[test]
fn the_same_filter_in_the_operators_global_config_runs() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = repository(operator, "auto_commit");
        std::fs::write(
            p.home().join(".gitconfig"),
            "[filter \"lfs\"]\n\tclean = sed s/^/CLEANED:/\n",
        )
        .unwrap();
        p.run(&["round"]).assert_code(0);
        assert!(p.events_of("dirty_filter_not_run").is_empty());
        assert_eq!(stored_assets(&p), ["CLEANED:raw asset\n"]);
    }
}
