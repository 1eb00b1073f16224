//! The supervisor's git is held by identity (issue 36, item 2; docs/security.md "The
//! supervisor is not the agent's deputy"): the agent redirects git — `core.worktree` naming
//! `~/.ssh`, the top's `.git` replaced by a file naming another repository, a repository
//! nested in the tree whose own config runs a filter — and leaves work behind; the
//! supervisor's status, stash and commit must follow none of it. Each attempt as root and
//! as the unprivileged user, under `auto_commit` and `stash`, the agent unconfined and
//! under `[agent.sandbox] mode = "require"` (its sandbox allows the `core.worktree` and
//! nested-repository plants: the tree and `.git/config` are the agent's to write; the
//! `.git` swap it refuses, since `.git` is pinned as an ancestor of the protected hooks);
//! each with its control: the
//! same plant under a git that discovers the repository from the work dir as the
//! supervisor's did before (no pinning, the nested repository looked into) shows the harm.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agent_runner_e2e::{ConfigBuilder, Operator, Project};

const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nPLANTED-SSH-KEY\n";

/// `~/.ssh/id_rsa` planted in the project's home; its path.
fn plant_key(p: &Project) -> PathBuf {
    let key = p.home().join(".ssh/id_rsa");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    std::fs::write(&key, KEY).unwrap();
    key
}

/// `git <args>` in the tree as the supervisor's git ran before issue 36: the repository
/// discovered from the work dir, hooks off, nothing pinned. Its status.
fn unpinned_git(p: &Project, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(["-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null"])
        .args(["-c", "user.name=old", "-c", "user.email=old@e2e.invalid"])
        .args(args)
        .current_dir(p.dir())
        .env("HOME", p.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run git")
}

/// Runs the agent script `body` directly in `p`'s tree (the controls' plant).
fn plant(p: &Project, body: &str) {
    let script = p.script("plant.sh", body);
    let out = Command::new(&script)
        .current_dir(p.dir())
        .env("HOME", p.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "plant: {out:?}");
}

/// The agent sandbox modes each attempt runs under.
const MODES: [&str; 2] = ["off", "require"];

/// A config running `agent` under `action` with the agent sandbox `mode`.
fn config(agent: &Path, action: &str, mode: &str) -> ConfigBuilder {
    ConfigBuilder::new(agent)
        .dirty_action(action)
        .extra(&format!("[agent.sandbox]\nmode = \"{mode}\""))
}

/// One round of an agent running `body` under `action` and `mode`, as `operator`.
fn round(
    operator: Operator,
    action: &str,
    mode: &str,
    body: impl Fn(&Project) -> String,
) -> Project {
    let p = Project::new_as(operator);
    let agent = p.script("agent.sh", &body(&p));
    p.write_config(&config(&agent, action, mode));
    p.run(&["round"]).assert_code(0);
    p
}

/// What `core.worktree = ~/.ssh` writes: the agent's own work, and the key's directory
/// made the work tree.
fn worktree_to_ssh(p: &Project) -> String {
    format!(
        "#!/bin/sh\nset -e\necho work > work.txt\ngit config core.worktree '{}'\n",
        p.home().join(".ssh").display()
    )
}

#[test]
fn core_worktree_naming_the_home_moves_nothing_of_the_supervisors_git() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for (action, mode) in ["auto_commit", "stash"]
            .into_iter()
            .flat_map(|a| MODES.map(|m| (a, m)))
        {
            let what = format!("{operator:?} {action} {mode}");
            let p = Project::new_as(operator);
            let key = plant_key(&p);
            let agent = p.script("agent.sh", &worktree_to_ssh(&p));
            p.write_config(&config(&agent, action, mode));
            p.run(&["round"]).assert_code(0);
            let all = p.events_text();
            assert_eq!(
                std::fs::read_to_string(&key).ok().as_deref(),
                Some(KEY),
                "{what}: the key was moved: {all}"
            );
            let done = match action {
                "auto_commit" => "dirty_auto_committed",
                _ => "orphan_stashed",
            };
            assert_eq!(p.events_of(done).len(), 1, "{what}: {all}");
            // The round's work is in the commit or the stash (its untracked files too),
            // the key in neither.
            let history = p.git(&["log", "--all", "--name-only", "--format="]);
            assert!(history.contains("work.txt"), "{what}: {history}");
            assert!(!history.contains("id_rsa"), "{what}: {history}");
        }
    }
    // The control: the same plant, git discovering from the work dir, stashes the key
    // away (deleting it from the disk).
    let p = Project::new();
    let key = plant_key(&p);
    plant(&p, &worktree_to_ssh(&p));
    let out = unpinned_git(&p, &["stash", "push", "-u", "-m", "old"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!key.exists(), "the control did not show the harm");
}

/// Replaces the top's `.git` with a file naming `other`'s git dir.
fn gitdir_swap(other: &Path) -> String {
    format!(
        "#!/bin/sh\nset -e\necho work > work.txt\nmv .git .git-moved\nprintf 'gitdir: %s\\n' '{}' > .git\n",
        other.join(".git").display()
    )
}

/// A repository outside the tree with one commit; its path and `HEAD`.
fn other_repository(p: &Project) -> (PathBuf, String) {
    let other = p.tmp_dir().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=o", "-c", "user.email=o@e2e.invalid"])
            .args(args)
            .current_dir(&other)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    git(&["init", "-q"]);
    std::fs::write(other.join("theirs.txt"), "theirs\n").unwrap();
    git(&["add", "theirs.txt"]);
    git(&["commit", "-qm", "theirs"]);
    // The unprivileged supervisor could write it too.
    let _ = Command::new("chmod")
        .args(["-R", "a+rwX"])
        .arg(&other)
        .status();
    let head = git(&["rev-parse", "HEAD"]);
    (other, head)
}

fn head_of(dir: &Path) -> String {
    let out = Command::new("git")
        .args(["-c", "safe.directory=*", "rev-parse", "HEAD"])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn a_git_file_naming_another_repository_is_named_and_left_alone() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for (action, mode) in ["auto_commit", "stash"]
            .into_iter()
            .flat_map(|a| MODES.map(|m| (a, m)))
        {
            let what = format!("{operator:?} {action} {mode}");
            let p = Project::new_as(operator);
            let (other, before) = other_repository(&p);
            let agent = p.script("agent.sh", &gitdir_swap(&other));
            p.write_config(&config(&agent, action, mode));
            let out = p.run(&["round"]);
            if mode == "require" {
                // The protected tier pins `.git` in the agent's mount namespace (docs/security.md
                // "Protected paths"): the swap itself is refused, nothing reaches the
                // supervisor's git.
                out.assert_code(1);
                assert!(
                    out.stderr.contains("Device or resource busy"),
                    "{what}: {out}"
                );
                assert_eq!(head_of(&other), before, "{what}");
                assert!(
                    p.events_of("git_repository_changed").is_empty(),
                    "{what}: {}",
                    p.events_text()
                );
                continue;
            }
            out.assert_code(0);
            let all = p.events_text();
            assert_eq!(
                head_of(&other),
                before,
                "{what}: the other repository moved: {all}"
            );
            let changed = p.events_of("git_repository_changed");
            assert_eq!(changed.len(), 1, "{what}: {all}");
            let said = changed[0]["changed"].as_str().unwrap();
            assert!(
                said.contains("/.git was a directory at boot, is a file now"),
                "{what}: {said}"
            );
            assert!(
                p.events_of("dirty_auto_committed").is_empty(),
                "{what}: {all}"
            );
            assert!(p.events_of("orphan_stashed").is_empty(), "{what}: {all}");
            // The tree is left as the agent left it.
            assert_eq!(
                std::fs::read_to_string(p.dir().join("work.txt")).unwrap(),
                "work\n"
            );
            assert!(p.dir().join(".git-moved/HEAD").exists(), "{what}");
        }
    }
    // The control: git discovering from the work dir commits into the other repository.
    let p = Project::new();
    let (other, before) = other_repository(&p);
    plant(&p, &gitdir_swap(&other));
    for args in [&["add", "work.txt"][..], &["commit", "-qm", "old"]] {
        let out = unpinned_git(&p, args);
        assert!(out.status.success(), "{out:?}");
    }
    assert_ne!(head_of(&other), before, "the control did not show the harm");
}

/// A repository nested in the tree, a gitlink in the top's index (no `.gitmodules`), with
/// a clean filter in its own config that notes `marker`, and a file of it changed.
fn nested_filter(recorder: &Path) -> String {
    format!(
        "#!/bin/sh\nset -e\n\
         git init -q nest\n\
         cd nest\n\
         echo '*.t filter=x' > .gitattributes\necho 1 > f.t\n\
         git add .\n\
         git -c user.name=a -c user.email=a@e2e.invalid commit -qm nest\n\
         cd ..\n\
         git add nest\n\
         git -c user.name=a -c user.email=a@e2e.invalid commit -qm 'add nest'\n\
         git -C nest config filter.x.clean '{} clean'\n\
         echo 2 > nest/f.t\necho work > work.txt\n",
        recorder.display()
    )
}

/// A recorder that notes its run in `marker`, passing stdin through (a clean filter must).
fn recorder(p: &Project) -> (PathBuf, PathBuf) {
    let marker = p.tmp_dir().join("ran");
    let recorder = p.script(
        "recorder.sh",
        &format!("#!/bin/sh\necho \"$1\" >> '{}'\ncat\n", marker.display()),
    );
    let _ = Command::new("chmod")
        .args(["a+rwx"])
        .arg(p.tmp_dir())
        .status();
    (recorder, marker)
}

#[test]
fn a_nested_repositorys_filter_never_runs_in_the_supervisors_git() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for (action, mode) in ["auto_commit", "stash"]
            .into_iter()
            .flat_map(|a| MODES.map(|m| (a, m)))
        {
            let what = format!("{operator:?} {action} {mode}");
            let p = round(operator, action, mode, |p| nested_filter(&recorder(p).0));
            let marker = p.tmp_dir().join("ran");
            let all = p.events_text();
            assert!(!marker.exists(), "{what}: the nested filter ran: {all}");
            let done = match action {
                "auto_commit" => "dirty_auto_committed",
                _ => "orphan_stashed",
            };
            assert_eq!(p.events_of(done).len(), 1, "{what}: {all}");
            assert_eq!(
                std::fs::read_to_string(p.dir().join("nest/f.t")).unwrap(),
                "2\n",
                "{what}: the nested repository's work was touched"
            );
        }
    }
    // The control: git looking into the nested repository runs its filter.
    let p = Project::new();
    let (recorder, marker) = recorder(&p);
    plant(&p, &nested_filter(&recorder));
    assert!(!marker.exists());
    let out = unpinned_git(&p, &["status", "--porcelain"]);
    assert!(out.status.success(), "{out:?}");
    assert!(marker.exists(), "the control did not show the harm");
}

/// A common dir of the agent's in the tree (`.cache/cd`: a copy of the repository with a
/// `post-commit` hook and an fsmonitor noting into `markers`), named by `.git/commondir`.
fn commondir_in_tree(markers: &Path) -> String {
    format!(
        "#!/bin/sh\nset -e\necho work > work.txt\n\
         mkdir -p .cache/cd/hooks\ncp -r .git/objects .git/refs .git/HEAD .cache/cd/\n\
         printf '#!/bin/sh\\ntouch {m}/hook-ran\\n' > .cache/cd/hooks/post-commit\n\
         chmod +x .cache/cd/hooks/post-commit\n\
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {m}/fsmonitor-ran; false\"\\n' > .cache/cd/config\n\
         echo ../.cache/cd > .git/commondir\n",
        m = markers.display()
    )
}

/// Whether the operator's plain `git status` and `git commit` in `p`'s tree ran the
/// planted fsmonitor or hook (a marker in `markers`).
fn operators_git_ran_a_plant(p: &Project, markers: &Path) -> bool {
    let _ = p.operator_git(&["status"]);
    std::fs::write(p.dir().join("op.txt"), "op\n").unwrap();
    let _ = p.operator_git(&["add", "op.txt"]);
    let _ = p.operator_git(&[
        "-c",
        "user.name=op",
        "-c",
        "user.email=op@e2e.invalid",
        "commit",
        "-qm",
        "op",
    ]);
    markers.join("hook-ran").exists() || markers.join("fsmonitor-ran").exists()
}

#[test]
fn a_commondir_planted_in_a_round_is_set_aside_and_runs_nothing_later() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for mode in MODES {
            let what = format!("{operator:?} {mode}");
            let p = Project::new_as(operator);
            let markers = p.tmp_dir().join("markers");
            std::fs::create_dir_all(&markers).unwrap();
            let _ = Command::new("chmod").arg("a+rwx").arg(&markers).status();
            let agent = p.script("agent.sh", &commondir_in_tree(&markers));
            p.write_config(&config(&agent, "stash", mode));
            p.run(&["round"]).assert_code(0);
            let all = p.events_text();
            let changed = p.events_of("git_repository_changed");
            assert_eq!(changed.len(), 1, "{what}: {all}");
            assert!(
                changed[0]["changed"]
                    .as_str()
                    .unwrap()
                    .contains("commondir was missing at boot"),
                "{what}: {all}"
            );
            let aside = changed[0]["set_aside"][0].as_str().unwrap_or_default();
            assert!(aside.contains("commondir set aside as"), "{what}: {all}");
            assert!(!p.dir().join(".git/commondir").exists(), "{what}");
            // peek says it.
            let peek = p.run(&["peek"]);
            assert!(
                peek.stdout.contains("repository changed:"),
                "{what}: {peek}"
            );
            assert!(
                !operators_git_ran_a_plant(&p, &markers),
                "{what}: the operator's git ran the agent's plant"
            );
        }
    }
    // The control: the same plant left in place, the operator's next git runs it.
    let p = Project::new();
    let markers = p.tmp_dir().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    plant(&p, &commondir_in_tree(&markers));
    assert!(
        operators_git_ran_a_plant(&p, &markers),
        "the control did not show the harm"
    );
}

/// Every reference of the repository at `dir` and what it names.
fn refs_of(dir: &Path) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "safe.directory=*",
            "for-each-ref",
            "--format=%(refname) %(objectname)",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_commondir_or_log_link_left_before_a_boot_is_refused_and_nothing_moves() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        // A `commondir` naming another repository: the supervisor's commit would move its
        // branch.
        let p = Project::new_as(operator);
        let (other, _) = other_repository(&p);
        let before = refs_of(&other);
        let agent = p.script("agent.sh", "#!/bin/sh\necho work > work.txt\n");
        p.write_config(&config(&agent, "auto_commit", "require"));
        std::fs::write(
            p.dir().join(".git/commondir"),
            format!("{}\n", other.join(".git").display()),
        )
        .unwrap();
        let out = p.run(&["round"]);
        assert_ne!(out.code(), 0, "{operator:?}: {out}");
        assert!(
            out.stderr.contains("commondir names"),
            "{operator:?}: {out}"
        );
        assert_eq!(
            refs_of(&other),
            before,
            "{operator:?}: the other repository moved"
        );
        // `.git/logs` a link to a directory of the operator's: the reflog writes would go
        // there.
        let p = Project::new_as(operator);
        let canary = p.home().join("canary");
        std::fs::create_dir_all(&canary).unwrap();
        let agent = p.script("agent.sh", "#!/bin/sh\necho work > work.txt\n");
        p.write_config(&config(&agent, "auto_commit", "require"));
        let logs = p.dir().join(".git/logs");
        let _ = std::fs::remove_dir_all(&logs);
        std::os::unix::fs::symlink(&canary, &logs).unwrap();
        let out = p.run(&["round"]);
        assert_ne!(out.code(), 0, "{operator:?}: {out}");
        assert!(
            out.stderr.contains("logs is a symbolic link"),
            "{operator:?}: {out}"
        );
        assert_eq!(
            std::fs::read_dir(&canary).unwrap().count(),
            0,
            "{operator:?}: written through the link"
        );
    }
    // The control: git discovering from the work dir takes the other repository as the
    // common dir and commits onto its branch.
    let p = Project::new();
    let (other, _) = other_repository(&p);
    let before = refs_of(&other);
    std::fs::write(
        p.dir().join(".git/commondir"),
        format!("{}\n", other.join(".git").display()),
    )
    .unwrap();
    std::fs::write(p.dir().join("work.txt"), "work\n").unwrap();
    // The index emptied first, so `add` writes every blob where the planted common dir
    // keeps objects (an entry git finds unchanged would name a blob missing there).
    for args in [
        &["read-tree", "--empty"][..],
        &["add", "-A"],
        &["commit", "-qm", "old"],
    ] {
        let out = unpinned_git(&p, args);
        assert!(out.status.success(), "{out:?}");
    }
    assert_ne!(refs_of(&other), before, "the control did not show the harm");
}
