//! A read-only work tree is refused by `doctor` (its `work_dir` check) and at boot (`round`
//! and `serve` exit 78 naming `runtime.work_dir`), instead of failing every round (issue 27,
//! item 9). As the unprivileged user (a tree without write permission) and as root (a
//! read-only bind mount in a private mount namespace: permissions do not stop root).

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::unprivileged::Operator;
use agent_runner_e2e::{doctor_check, Project};
use std::process::Command;

/// Runs `cmd`: exit code, stdout, stderr.
fn output(mut cmd: Command) -> (Option<i32>, String, String) {
    let out = cmd.output().expect("run agent-runner");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_refused(run: impl Fn(&[&str]) -> (Option<i32>, String, String)) {
    let out = run(&["doctor", "--json"]);
    assert_eq!(out.0, Some(78), "{out:?}");
    let report: Value = serde_json::from_str(&out.1).expect("doctor --json");
    let check = doctor_check(&report, "work_dir");
    assert_eq!(check["ok"], false, "{out:?}");
    assert!(
        check["reason"].as_str().unwrap().contains("not writable"),
        "{out:?}"
    );
    for verb in [&["round"][..], &["serve", "--max-rounds", "1"][..]] {
        let out = run(verb);
        assert_eq!(out.0, Some(78), "{out:?}");
        assert!(out.2.contains("runtime.work_dir"), "{out:?}");
        assert!(out.2.contains("not writable"), "{out:?}");
    }
}

#[test]
fn a_read_only_tree_is_refused_unprivileged() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new_as(Operator::Unprivileged);
    p.write_config(&p.config());
    let user = agent_runner_e2e::unprivileged::unprivileged_user();
    user.own(p.tmp_dir());
    std::fs::set_permissions(p.dir(), std::fs::Permissions::from_mode(0o555)).unwrap();
    assert_refused(|args| output(p.command(args)));
}

#[test]
fn a_read_only_mount_is_refused_as_root() {
    let p = Project::new();
    p.write_config(&p.config());
    assert_refused(|args| {
        let inner = p.command(args);
        let mut cmd = Command::new("unshare");
        cmd.args(["-m", "--propagation", "private", "sh", "-c"])
            .arg(r#"mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@""#)
            .arg("sh")
            .arg(p.dir())
            .arg(inner.get_program())
            .args(inner.get_args())
            .current_dir(p.dir());
        for (key, value) in inner.get_envs() {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        output(cmd)
    });
}
