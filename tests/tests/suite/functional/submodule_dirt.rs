//! Issue 27 item 9: a submodule of the work tree moved to a commit of its own. The work
//! tree's git can neither stash nor commit what changed inside a submodule, so the round's
//! dirt handling
//! leaves it as it is and says so (`dirty_submodule_skipped`, naming the path and why),
//! handles the rest of the round's dirt without it, and never counts it as the operator's
//! in a later round (docs/operations.md, "Submodules"). Changes inside a submodule that
//! moved no commit are not looked at (issue 36: telling them would start a git in the
//! submodule, under its own config). A real submodule (a local bare
//! repository as its origin), real rounds, `auto_commit` and `stash`, as root and as the
//! unprivileged user; hooks and an fsmonitor planted in the submodule's own repository never
//! run.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};
use std::path::Path;
use std::process::{Command, Stdio};

/// `git <args>` in `dir` with the project's private HOME; panics unless it succeeds.
fn git_in(p: &Project, dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "safe.directory=*", "-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .env("HOME", p.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Adds a submodule at `vendor/lib` (one tracked file, `lib.txt`), cloned from a bare
/// repository in the test's temporary directory, and commits it. Returns the marker file
/// that a hook or an fsmonitor planted in the submodule's repository would create.
fn add_submodule(p: &Project) -> std::path::PathBuf {
    let src = p.tmp_dir().join("libsrc");
    std::fs::create_dir_all(&src).unwrap();
    git_in(p, &src, &["init", "-q", "-b", "main", "."]);
    std::fs::write(src.join("lib.txt"), "lib v1\n").unwrap();
    git_in(p, &src, &["add", "lib.txt"]);
    git_in(
        p,
        &src,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e2e.invalid",
            "commit",
            "-q",
            "-m",
            "lib",
        ],
    );
    let origin = p.tmp_dir().join("lib-origin.git");
    git_in(
        p,
        p.tmp_dir(),
        &[
            "clone",
            "-q",
            "--bare",
            src.to_str().unwrap(),
            origin.to_str().unwrap(),
        ],
    );
    p.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        origin.to_str().unwrap(),
        "vendor/lib",
    ]);
    p.git(&["commit", "-q", "-m", "add vendor/lib"]);
    // What the agent could plant in the submodule's own repository: none of it may run.
    let marker = p.tmp_dir().join("ran-inside-submodule");
    let recorder = p.script(
        "recorder.sh",
        &format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\n", marker.display()),
    );
    let sub_git = p.dir().join(".git/modules/vendor/lib");
    for hook in [
        "pre-commit",
        "post-checkout",
        "post-index-change",
        "commit-msg",
    ] {
        std::fs::copy(&recorder, sub_git.join("hooks").join(hook)).unwrap();
    }
    let sub = p.dir().join("vendor/lib");
    git_in(
        p,
        &sub,
        &["config", "core.fsmonitor", recorder.to_str().unwrap()],
    );
    marker
}

/// A commit inside the submodule (its planted hooks and fsmonitor off: only the
/// supervisor's git is under test), so the work tree's gitlink moves.
const COMMIT_INSIDE: &str = "git -C vendor/lib -c core.hooksPath=/dev/null -c core.fsmonitor=false -c user.name=a -c user.email=a@e2e.invalid commit -qam inside\n";

fn agent(p: &Project) -> std::path::PathBuf {
    p.script(
        "submodule-agent.sh",
        &format!(
            "#!/bin/sh\necho agent >> vendor/lib/lib.txt\necho new > vendor/lib/untracked.txt\n{COMMIT_INSIDE}echo agent-uncommitted >> vendor/lib/lib.txt\necho note >> notes.txt\n"
        ),
    )
}

fn skipped_in_round(p: &Project, round_num: u64) -> Vec<agent_runner_e2e::serde_json::Value> {
    p.events_of("dirty_submodule_skipped")
        .into_iter()
        .filter(|e| e["round_num"] == round_num)
        .collect()
}

#[test]
fn an_edit_inside_a_submodule_is_reported_and_never_the_operators() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for action in ["auto_commit", "stash"] {
            one(operator, action);
        }
    }
}

fn one(operator: Operator, action: &str) {
    let p = Project::new_as(operator);
    let marker = add_submodule(&p);
    let agent = agent(&p);
    p.write_config(&ConfigBuilder::new(&agent).dirty_action(action));
    let head_before = p.git(&["rev-parse", "HEAD:vendor/lib"]);

    p.run(&["round"]).assert_code(0);
    nothing_ran_inside(&marker, operator, action);
    let all = p.events_text();
    let ctx = format!("{operator:?} {action}: {all}");
    let skipped = skipped_in_round(&p, 1);
    assert_eq!(skipped.len(), 1, "{ctx}");
    assert_eq!(skipped[0]["path"], "vendor/lib", "{ctx}");
    let reason = skipped[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("submodule") && reason.contains("cannot stash or commit"),
        "{ctx}"
    );
    assert!(
        (skipped[0]["what_to_do"].as_str().unwrap()).contains("git -C vendor/lib status"),
        "{ctx}"
    );
    // The rest of the round's dirt is handled without the submodule.
    let detected = p.events_of("dirty_detected");
    assert_eq!(detected.len(), 1, "{ctx}");
    assert_eq!(
        detected[0]["files"],
        agent_runner_e2e::serde_json::json!(["notes.txt"]),
        "{ctx}"
    );
    if action == "auto_commit" {
        let committed = p.events_of("dirty_auto_committed");
        assert_eq!(committed.len(), 1, "{ctx}");
        assert_eq!(
            committed[0]["files"],
            agent_runner_e2e::serde_json::json!(["notes.txt"]),
            "{ctx}"
        );
        assert_eq!(
            p.git(&["show", "--name-only", "--format=", "HEAD"]).trim(),
            "notes.txt"
        );
    } else {
        assert_eq!(p.events_of("orphan_stashed").len(), 1, "{ctx}");
        assert_eq!(
            p.git(&["stash", "show", "--include-untracked", "--name-only"])
                .trim(),
            "notes.txt"
        );
    }
    // Nothing inside the submodule was lost, moved or recorded here.
    let sub = p.dir().join("vendor/lib");
    assert_eq!(
        std::fs::read_to_string(sub.join("lib.txt")).unwrap(),
        "lib v1\nagent\nagent-uncommitted\n"
    );
    assert_eq!(
        std::fs::read_to_string(sub.join("untracked.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(p.git(&["rev-parse", "HEAD:vendor/lib"]), head_before);
    // (The test's own git, unconfined, runs the planted programs: forget them.)
    let status = p.status_porcelain();
    assert!(
        status.iter().any(|l| l.ends_with("vendor/lib")),
        "{status:?}"
    );
    let _ = std::fs::remove_file(&marker);

    // The next round: the submodule, still dirty, is not the operator's.
    p.run(&["round"]).assert_code(0);
    nothing_ran_inside(&marker, operator, action);
    let all = p.events_text();
    let ctx = format!("{operator:?} {action}: {all}");
    for before in p.events_of("dirty_before_round") {
        assert!(
            !before["files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f.as_str().unwrap().starts_with("vendor/lib")),
            "{ctx}"
        );
    }
    let skipped = skipped_in_round(&p, 2);
    assert_eq!(skipped.len(), 1, "{ctx}");
    assert_eq!(skipped[0]["path"], "vendor/lib", "{ctx}");
    for detected in p.events_of("dirty_detected") {
        assert_eq!(detected["left_to_operator"], 0, "{ctx}");
    }
    for stashed in p.events_of("orphan_stashed") {
        assert!(
            !stashed["reason"]
                .as_str()
                .unwrap()
                .contains("left in place"),
            "{ctx}"
        );
    }
}

fn nothing_ran_inside(marker: &Path, operator: Operator, action: &str) {
    assert!(
        !marker.exists(),
        "{operator:?} {action}: ran inside the submodule: {}",
        std::fs::read_to_string(marker).unwrap_or_default()
    );
}

/// A submodule the round left alone but the operator moved before it is still not the
/// operator's: only the round's own dirt is handled, and the submodule is reported.
#[test]
fn a_submodule_dirty_before_the_round_is_reported_not_left_to_the_operator() {
    let p = Project::new();
    add_submodule(&p);
    let agent = p.script("note-agent.sh", "#!/bin/sh\necho note >> notes.txt\n");
    p.write_config(&ConfigBuilder::new(&agent).dirty_action("auto_commit"));
    std::fs::write(p.dir().join("vendor/lib/lib.txt"), "operator\n").unwrap();
    let commit_inside = p.script("commit-inside.sh", &format!("#!/bin/sh\n{COMMIT_INSIDE}"));
    let out = std::process::Command::new(&commit_inside)
        .current_dir(p.dir())
        .env("HOME", p.home())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    assert!(p.events_of("dirty_before_round").is_empty(), "{all}");
    let skipped = p.events_of("dirty_submodule_skipped");
    assert_eq!(skipped.len(), 1, "{all}");
    assert_eq!(skipped[0]["path"], "vendor/lib", "{all}");
    let detected = p.events_of("dirty_detected");
    assert_eq!(detected.len(), 1, "{all}");
    assert_eq!(detected[0]["left_to_operator"], 0, "{all}");
    assert_eq!(p.events_of("dirty_auto_committed").len(), 1, "{all}");
    assert_eq!(
        std::fs::read_to_string(p.dir().join("vendor/lib/lib.txt")).unwrap(),
        "operator\n"
    );
}
