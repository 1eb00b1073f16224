//! The lock and the record are the work tree's, by its identity, not its path or name
//! (issue 27, item 5; src/runtime/tree_lock.rs): a second supervisor reaching the same
//! tree through a bind mount is refused while `serve` runs, and a second project with the
//! same folder name, whose default log dir is the first one's, is refused (exit 78) rather
//! than numbered on in the first one's record. As root and as the unprivileged user.

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

#[test]
fn two_projects_with_one_name_do_not_share_a_record() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        // Both work trees are folders named `project`; without `log_dir` both default to
        // `~/.agent-runner/project/logs`, under one HOME.
        let a = Project::new_as(operator);
        let b = Project::new_as(operator);
        for p in [&a, &b] {
            let text = p.config().render().replace("log_dir = \"./logs\"\n", "");
            p.write_config_text(&text);
        }
        a.run(&["round"]).assert_code(0);
        let mut cmd = b.command(&["round"]);
        cmd.env("HOME", a.home());
        if let Some(user) = operator.user() {
            user.own(b.tmp_dir());
        }
        let out = b.run_with(cmd);
        out.assert_code(78);
        assert!(
            out.stderr.contains("holds the record of another work tree")
                && out.stderr.contains(&a.dir().display().to_string()),
            "{operator:?}: {out}"
        );
        let record = a.home().join(".agent-runner/project/logs");
        let events = std::fs::read_dir(&record)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with("events-") && name.ends_with(".jsonl")
            })
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .collect::<String>();
        let starts = events.matches("\"round_start\"").count();
        assert_eq!(starts, 1, "{operator:?}: B ran in A's record: {events}");
        // Once A's tree is gone, B takes the record over.
        std::fs::remove_dir_all(a.dir()).unwrap();
        let mut cmd = b.command(&["round"]);
        cmd.env("HOME", a.home());
        b.run_with(cmd).assert_code(0);
    }
}
