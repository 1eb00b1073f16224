//! A repository that belongs to another user: git refuses it ("dubious ownership", its
//! `safe.directory` rule), and `doctor`, `round` and `serve` say so with the fix, not "not
//! a git working tree, run git init" (issue 27, item 9). As root (the repository's git
//! dir owned by the unprivileged user) and as the unprivileged user (owned by root).

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::unprivileged::Operator;
use agent_runner_e2e::{doctor_check, Project};
use std::process::Command;

/// Runs `agent-runner <args>` without handing the temp tree to the operator again (which
/// would undo the other owner of `.git`): exit code, stdout, stderr.
fn run(p: &Project, args: &[&str]) -> (Option<i32>, String, String) {
    let out = p.command(args).output().expect("run agent-runner");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn refused_as(operator: Operator, other_owner: &str) {
    let p = Project::new_as(operator);
    p.write_config(&p.config());
    if let Some(user) = operator.user() {
        user.own(p.tmp_dir());
    }
    let status = Command::new("chown")
        .args(["-R", other_owner])
        .arg(p.dir().join(".git"))
        .status()
        .unwrap();
    assert!(status.success(), "chown -R {other_owner} .git");

    let out = run(&p, &["doctor", "--json"]);
    assert_eq!(out.0, Some(78), "{out:?}");
    let report: Value = serde_json::from_str(&out.1).expect("doctor --json");
    let check = doctor_check(&report, "work_dir");
    assert_eq!(check["ok"], false, "{out:?}");
    assert!(
        check["reason"]
            .as_str()
            .unwrap()
            .contains("dubious ownership"),
        "{out:?}"
    );
    let fix = check["how_to_fix"].as_str().unwrap();
    assert!(fix.contains("safe.directory"), "{out:?}");
    assert!(!fix.contains("git init"), "{out:?}");

    for verb in [&["round"][..], &["serve", "--max-rounds", "1"][..]] {
        let out = run(&p, verb);
        assert_eq!(out.0, Some(78), "{out:?}");
        assert!(out.2.contains("runtime.work_dir"), "{out:?}");
        assert!(out.2.contains("dubious ownership"), "{out:?}");
        assert!(out.2.contains("safe.directory"), "{out:?}");
        assert!(!out.2.contains("git init"), "{out:?}");
    }
}

#[test]
fn a_repository_of_another_user_is_named_as_such_as_root() {
    let user = agent_runner_e2e::unprivileged::unprivileged_user();
    refused_as(Operator::Root, &format!("{}:{}", user.uid, user.gid));
}

#[test]
fn a_repository_of_another_user_is_named_as_such_unprivileged() {
    refused_as(Operator::Unprivileged, "0:0");
}
