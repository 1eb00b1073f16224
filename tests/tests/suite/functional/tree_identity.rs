//! The lock and the record are the work tree's, by its identity, not its path or name
//! (issue 27, item 5; src/runtime/cycle/tree_lock.rs): a second supervisor reaching the same
//! tree through a bind mount is refused while `serve` runs, and a second project with the
//! same folder name gets a default log dir of its own (issue 38) rather than numbering on
//! in the first one's record; a written log dir of another existing tree is refused (exit
//! 78). As root and as the unprivileged user.

use std::process::Command;
use std::time::Duration;

use agent_runner_e2e::unprivileged::{unprivileged_user, Operator};
use agent_runner_e2e::{agent_runner_bin, Project};

/// A project whose agent sleeps, so `serve` holds the tree for the test's length.
fn sleeping(operator: Operator) -> Project {
    let p = Project::new_as(operator);
    let agent = p.script("sleepy.sh", "#!/bin/sh\nsleep 30\n");
    p.write_config(&agent_runner_e2e::ConfigBuilder::new(&agent));
    p
}

#[test]
fn a_second_supervisor_through_a_bind_mount_is_refused() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = sleeping(operator);
        let serve = p.spawn(&["serve"]);
        p.wait_for_event("agent_spawn");
        let mount_point = p.tmp_dir().join("same-tree");
        std::fs::create_dir(&mount_point).unwrap();
        if let Some(user) = operator.user() {
            user.own(p.tmp_dir());
        }
        // `round` through the bind-mounted path, in a mount namespace of its own (an
        // unprivileged user's through a user namespace), so no mount outlives the test.
        let script = format!(
            "mount --bind '{tree}' '{at}' && cd '{at}' && exec '{bin}' --config '{at}/agent-runner.toml' round",
            tree = p.dir().display(),
            at = mount_point.display(),
            bin = agent_runner_bin().display(),
        );
        let mut cmd = match operator.user() {
            None => Command::new("unshare"),
            Some(_) => unprivileged_user().command("unshare"),
        };
        if operator == Operator::Unprivileged {
            cmd.args(["--user", "--map-root-user"]);
        }
        let out = cmd
            .args(["--mount", "sh", "-c", &script])
            .env("HOME", p.home())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{operator:?}: {stderr}");
        assert!(
            stderr.contains("already supervises the work tree"),
            "{operator:?}: {stderr}"
        );
        assert_eq!(p.events_of("round_start").len(), 1, "{operator:?}");
        serve.signal(libc::SIGKILL);
        let _ = serve.wait(Duration::from_secs(10));
    }
}

/// The field case of issue 38: `serve` through one path, `round` through a bind mount of
/// the same tree, with the default log dir (the record outside the tree, named after the
/// folder): whether the mount point has the tree's folder name (one record, the project
/// lock answers) or another (two records, the tree's own lock answers), the round is
/// refused and serve's agent runs on.
#[test]
fn a_round_through_a_bind_mount_is_refused_under_the_default_log_dir() {
    let p = Project::new();
    let agent = p.script("sleepy.sh", "#!/bin/sh\nsleep 30\n");
    let text = agent_runner_e2e::ConfigBuilder::new(&agent)
        .render()
        .replace("log_dir = \"./logs\"\n", "");
    p.write_config_text(&text);
    let serve = p.spawn(&["serve"]);
    let record = p.home().join(".agent-runner/project/logs");
    agent_runner_e2e::wait_until("serve's agent", Duration::from_secs(30), || {
        std::fs::read_dir(&record)
            .ok()?
            .filter_map(|e| e.ok())
            .find(|e| e.file_name().to_string_lossy().starts_with("events-"))
            .and_then(|e| std::fs::read_to_string(e.path()).ok())
            .filter(|t| t.contains("\"agent_spawn\""))
    });
    for at in ["elsewhere", "mnt/project"] {
        let mount_point = p.tmp_dir().join(at);
        std::fs::create_dir_all(&mount_point).unwrap();
        let script = format!(
            "mount --bind '{tree}' '{at}' && cd '{at}' && exec '{bin}' --config '{at}/agent-runner.toml' round",
            tree = p.dir().display(),
            at = mount_point.display(),
            bin = agent_runner_bin().display(),
        );
        let out = Command::new("unshare")
            .args(["--mount", "sh", "-c", &script])
            .env("HOME", p.home())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{at}: {stderr}");
        assert!(stderr.contains("already supervises"), "{at}: {stderr}");
    }
    let events: String = std::fs::read_dir(&record)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("events-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(events.matches("\"round_start\"").count(), 1, "{events}");
    serve.signal(libc::SIGKILL);
    let _ = serve.wait(Duration::from_secs(10));
}

/// Issue 38: a `serve` still booting when a `round` starts holds the tree already. Its
/// boot is held, deterministically, inside its first git command (a `git` first on its
/// PATH that marks the moment and waits): before, the tree's lock came after that check,
/// and the `round` (plain git) locked first, ran its agent, and `serve` was refused.
#[test]
fn a_round_started_while_serve_boots_is_refused() {
    let p = Project::new();
    let agent = p.script("sleepy.sh", "#!/bin/sh\nsleep 30\n");
    p.write_config(&agent_runner_e2e::ConfigBuilder::new(&agent));
    let real_git = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let marker = p.tmp_dir().join("serve-in-git");
    let slow = p.tmp_dir().join("slow-git");
    std::fs::create_dir(&slow).unwrap();
    p.script(
        "slow-git/git",
        &format!(
            "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --is-inside-work-tree ] && touch '{}' && sleep 5; done\nexec {} \"$@\"\n",
            marker.display(),
            real_git.trim()
        ),
    );
    let mut cmd = p.command(&["serve"]);
    let path = std::env::var("PATH").unwrap_or_default();
    cmd.env("PATH", format!("{}:{path}", slow.display()));
    let serve = p.spawn_with(cmd);
    agent_runner_e2e::wait_until("serve in its first git", Duration::from_secs(30), || {
        marker.exists().then_some(())
    });
    let round = p.run(&["round"]);
    round.assert_code(1);
    assert!(
        round.stderr.contains("already supervises the work tree"),
        "{round}"
    );
    p.wait_for_event("agent_spawn");
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
    serve.signal(libc::SIGKILL);
    let _ = serve.wait(Duration::from_secs(10));
}

#[test]
fn two_projects_with_one_name_do_not_share_a_record() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        // Both work trees are folders named `project`; without `log_dir` both would default
        // to `~/.agent-runner/project/logs`, under one HOME. Issue 38: the second gets a
        // record of its own (before, it was refused with 78).
        let a = Project::new_as(operator);
        let b = Project::new_as(operator);
        for p in [&a, &b] {
            let text = p.config().render().replace("log_dir = \"./logs\"\n", "");
            p.write_config_text(&text);
        }
        a.run(&["round"]).assert_code(0);
        let in_a_home = |args: &[&str]| {
            let mut cmd = b.command(args);
            cmd.env("HOME", a.home());
            if let Some(user) = operator.user() {
                user.own(b.tmp_dir());
            }
            b.run_with(cmd)
        };
        in_a_home(&["round"]).assert_code(0);
        let shared = a.home().join(".agent-runner/project/logs");
        let starts = |dir: &std::path::Path| -> Vec<u64> {
            std::fs::read_dir(dir)
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with("events-") && name.ends_with(".jsonl")
                })
                .flat_map(|e| {
                    std::fs::read_to_string(e.path())
                        .unwrap()
                        .lines()
                        .filter(|l| l.contains("\"round_start\""))
                        .map(|l| {
                            agent_runner_e2e::serde_json::from_str::<
                                agent_runner_e2e::serde_json::Value,
                            >(l)
                            .unwrap()["round_num"]
                                .as_u64()
                                .unwrap()
                        })
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        assert_eq!(starts(&shared), [1], "{operator:?}: B ran in A's record");
        // B's record: `~/.agent-runner/project-<key>/logs`, named in peek.
        let peek = in_a_home(&["peek", "--select", "state_dir"]);
        let own = std::path::PathBuf::from(peek.stdout.trim());
        assert_ne!(own, shared, "{operator:?}: {peek}");
        assert!(
            own.starts_with(a.home().join(".agent-runner"))
                && own
                    .parent()
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("project-"),
            "{operator:?}: {}",
            own.display()
        );
        assert_eq!(starts(&own), [1], "{operator:?}");

        // Once A's tree is gone, B keeps its own record (its numbering goes on there).
        std::fs::remove_dir_all(a.dir()).unwrap();
        in_a_home(&["round"]).assert_code(0);
        assert_eq!(starts(&own), [1, 2], "{operator:?}");
        assert_eq!(starts(&shared), [1], "{operator:?}");
    }
}

/// Two configs that *write* the same log dir still cannot share one record: the second
/// tree is refused (78) while the first exists, then takes the record over.
#[test]
fn a_written_log_dir_of_another_existing_tree_is_refused() {
    let a = Project::new();
    let b = Project::new();
    let shared = a.tmp_dir().join("shared-logs");
    for p in [&a, &b] {
        let text = p.config().render().replace(
            "log_dir = \"./logs\"",
            &format!("log_dir = \"{}\"", shared.display()),
        );
        p.write_config_text(&text);
    }
    a.run(&["round"]).assert_code(0);
    let out = b.run(&["round"]);
    out.assert_code(78);
    assert!(
        out.stderr.contains("holds the record of another work tree")
            && out.stderr.contains(&a.dir().display().to_string()),
        "{out}"
    );
    std::fs::remove_dir_all(a.dir()).unwrap();
    b.run(&["round"]).assert_code(0);
}
