//! The agent's protected paths (issue 37, docs/security.md "Protected paths"): under
//! `[agent.sandbox] mode = "require"` a hostile agent tries, for each protected path —
//! existing, missing, and an existing copy deeper in the tree — to write it, create it,
//! remove it and rename the directory holding it (`mv .git .g`, `mv .claude x`); each
//! attempt is refused with the error the kernel gives (`EROFS` for a write or a creation,
//! `EBUSY` for a removal or a rename), and nothing of it reaches the disk. The control, the
//! same agent under `mode = "off"`, succeeds at each. A second agent does ordinary work
//! that lives next to the protected paths — `git checkout -b`, `git push -u` to a local bare
//! remote, `git worktree add`, `python3 -m venv` — which all succeed in the sandbox; after
//! each round no placeholder is left and `git status` is what the agent left. Every case runs
//! with the supervisor run by root and by the unprivileged user `ar-e2e`.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};
use std::path::Path;
use std::time::Duration;

/// The hostile agent: for each `(label, path, existing)` of `$TARGETS` (JSON), each
/// attempt's outcome (`ok` or the errno's name) as one line `label op outcome` in
/// `attempts.log`; what a successful rename moved is moved back at once.
const HOSTILE: &str = r##"#!/usr/bin/python3
import errno, json, os

log = open("attempts.log", "w")

def attempt(label, op, fn):
    try:
        fn()
        outcome = "ok"
    except OSError as e:
        outcome = errno.errorcode.get(e.errno, str(e.errno))
    log.write(f"{label} {op} {outcome}\n")
    log.flush()
    return outcome == "ok"

def append(path):
    with open(path, "a") as f:
        f.write("# planted by the agent\n")

def create(path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write('{"hooks": "planted by the agent"}\n')

def rename_top(path):
    # The directory right below the root holding the path, or the path itself at the root.
    top = path.split("/")[0]
    os.rename(top, top + ".moved")
    os.rename(top + ".moved", top)

def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        os.rmdir(path)
    else:
        os.unlink(path)

for label, path, existing in json.loads(os.environ["TARGETS"]):
    if existing:
        attempt(label, "write", lambda: append(path))
    else:
        attempt(label, "create", lambda: create(path))
    attempt(label, "rename", lambda: rename_top(path))
    attempt(label, "remove", lambda: remove(path))

# The git dir's hooks: a new hook, the hooks dir and the git dir renamed.
attempt("hooks", "create", lambda: create(".git/hooks/pre-commit"))
attempt("hooks", "rename", lambda: (os.rename(".git/hooks", ".git/hooks.moved"), os.rename(".git/hooks.moved", ".git/hooks")))
# The git dir's info: an exclude pattern hiding the agent's files, the info dir renamed.
attempt("info", "write", lambda: append(".git/info/exclude"))
attempt("info", "rename", lambda: (os.rename(".git/info", ".git/info.moved"), os.rename(".git/info.moved", ".git/info")))
attempt("git_dir", "rename", lambda: (os.rename(".git", ".g"), os.rename(".g", ".git")))
log.close()
"##;

/// `(label, path relative to the tree, exists before the round)`.
const TARGETS: &[(&str, &str, bool)] = &[
    ("claude_settings", ".claude/settings.json", true),
    ("envrc", ".envrc", true),
    ("deeper_mcp", "sub/deep/.mcp.json", true),
    ("config", "agent-runner.toml", true),
    ("mcp", ".mcp.json", false),
    ("claude_local", ".claude/settings.local.json", false),
    ("gemini", ".gemini/settings.json", false),
    ("codex", ".codex/config.toml", false),
    // The operator's `core.hooksPath` (an empty `.githooks/`).
    ("hooks_path", ".githooks/pre-commit", false),
];

/// A project whose agent is `script`, under `mode`, with the existing protected files
/// committed, `dirty_action = "ignore"` (the tree is left as the agent left it), and a bare
/// repository outside the tree, writable to the agent (`write_paths`), as `$REMOTE`.
fn project(operator: Operator, script: &str, mode: &str) -> Project {
    let p = Project::new_as(operator);
    let remote = p.tmp_dir().join("remote.git");
    let init = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&remote)
        .status()
        .unwrap();
    assert!(init.success());
    let remote = remote.display().to_string();
    p.write(".claude/settings.json", "{\"existing\": true}\n");
    p.write(".envrc", "export OPERATOR=1\n");
    p.write("sub/deep/.mcp.json", "{\"mcpServers\": {}}\n");
    p.write(
        ".gitignore",
        "/logs/\n/.agent-runner-pause\n/attempts.log\n/.venv/\n/.worktrees/\n",
    );
    let agent = p.script("agent/agent", script);
    let targets: Vec<agent_runner_e2e::serde_json::Value> = TARGETS
        .iter()
        .map(|(l, path, e)| agent_runner_e2e::serde_json::json!([l, path, e]))
        .collect();
    let config = ConfigBuilder::new(&agent)
        .dirty_action("ignore")
        .round_budget_s(120)
        .agent_env("REMOTE", &remote)
        .agent_env(
            "TARGETS",
            &agent_runner_e2e::serde_json::to_string(&targets).unwrap(),
        );
    let text = config.render().replacen(
        "[runtime]\n",
        &format!(
            "[agent.sandbox]\nmode = \"{mode}\"\nwrite_paths = [{}]\n\n[runtime]\n",
            agent_runner_e2e::toml_string(&remote)
        ),
        1,
    );
    p.write_config_text(&text);
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "protected files"]);
    p.git(&["config", "core.hooksPath", ".githooks"]);
    std::fs::create_dir_all(p.dir().join(".githooks")).unwrap();
    std::fs::create_dir_all(p.dir().join(".git/hooks")).unwrap();
    p
}

/// Runs one `serve --max-rounds 1`; panics unless it exits 0.
fn serve_one_round(p: &Project) {
    let out = p
        .spawn(&["serve", "--max-rounds", "1"])
        .wait(Duration::from_secs(180));
    assert_eq!(out.code(), 0, "{out}\n{}", p.events_text());
}

/// No placeholder is left where a protected path was missing.
fn assert_no_placeholder(p: &Project) {
    for rel in [
        ".mcp.json",
        ".claude/settings.local.json",
        ".gemini",
        ".codex",
    ] {
        assert!(
            std::fs::symlink_metadata(p.dir().join(rel)).is_err(),
            "{rel} left behind"
        );
    }
    assert!(
        !p.state_dir().join("agent-placeholders.json").exists(),
        "the placeholder journal is left"
    );
}

/// `label op` → outcome, from `attempts.log`.
fn outcomes(dir: &Path) -> std::collections::BTreeMap<String, String> {
    let log = std::fs::read_to_string(dir.join("attempts.log")).expect("attempts.log");
    log.lines()
        .map(|line| {
            let (key, outcome) = line.rsplit_once(' ').unwrap();
            (key.to_owned(), outcome.to_owned())
        })
        .collect()
}

fn each_protected_path_is_refused(operator: Operator) {
    let p = project(operator, HOSTILE, "require");
    let before: Vec<(String, Vec<u8>)> = TARGETS
        .iter()
        .filter(|t| t.2)
        .map(|t| (t.1.to_owned(), std::fs::read(p.dir().join(t.1)).unwrap()))
        .collect();
    serve_one_round(&p);
    let got = outcomes(p.dir());
    let mut expected = Vec::new();
    for (label, _, existing) in TARGETS {
        let first = if *existing { "write" } else { "create" };
        expected.push((format!("{label} {first}"), "EROFS"));
        expected.push((format!("{label} rename"), "EBUSY"));
        // A path in a read-only directory (a placeholder, the hooks path) is refused as
        // such; anything else is a mount point.
        let under_placeholder = matches!(*label, "gemini" | "codex" | "hooks_path");
        let remove = if under_placeholder { "EROFS" } else { "EBUSY" };
        expected.push((format!("{label} remove"), remove));
    }
    expected.push(("hooks create".into(), "EROFS"));
    expected.push(("hooks rename".into(), "EBUSY"));
    expected.push(("info write".into(), "EROFS"));
    expected.push(("info rename".into(), "EBUSY"));
    expected.push(("git_dir rename".into(), "EBUSY"));
    for (key, errno) in &expected {
        assert_eq!(
            got.get(key).map(String::as_str),
            Some(*errno),
            "{key}: {got:#?}"
        );
    }
    for (rel, bytes) in &before {
        assert_eq!(&std::fs::read(p.dir().join(rel)).unwrap(), bytes, "{rel}");
    }
    assert!(!p.dir().join(".git/hooks/pre-commit").exists());
    assert!(!p.dir().join(".githooks/pre-commit").exists());
    assert_no_placeholder(&p);
    // The operator's tree shows only the agent's log (ignored): no placeholder as dirt.
    assert_eq!(p.status_porcelain(), Vec::<String>::new());

    // The control: the same agent unconfined does each.
    let p = project(operator, HOSTILE, "off");
    serve_one_round(&p);
    let got = outcomes(p.dir());
    for (key, _) in &expected {
        assert_eq!(
            got.get(key).map(String::as_str),
            Some("ok"),
            "{key}: {got:#?}"
        );
    }
    assert!(p.dir().join(".git/hooks/pre-commit").exists());
}

#[test]
fn each_protected_path_is_refused_as_root() {
    each_protected_path_is_refused(Operator::Root);
}

#[test]
fn each_protected_path_is_refused_as_unprivileged_user() {
    each_protected_path_is_refused(Operator::Unprivileged);
}

/// Ordinary work beside the protected paths: a branch, a push with upstream to a bare
/// remote outside the tree (granted by `write_paths`), a linked work tree, a venv; then a
/// change left uncommitted. Prints the agent's own `git status` between markers.
const WORKER: &str = r#"#!/bin/bash
set -e
git checkout -q -b feature
git remote add origin "$REMOTE"
git push -q -u origin feature
git worktree add -q .worktrees/side -b side
/usr/bin/python3 -m venv .venv
test -x .venv/bin/python
echo "work" > work.txt
echo "more" >> README.md
echo "---status---"
git status --porcelain --untracked-files=all
echo "---end---"
"#;

fn ordinary_git_and_venv_work(operator: Operator) {
    let p = project(operator, WORKER, "require");
    serve_one_round(&p);
    let events = p.events_text();
    let output = p.agent_output();
    let exits = p.events_of("agent_exit");
    assert_eq!(exits.len(), 1, "{events}");
    assert_eq!(exits[0]["exit_code"], 0, "{output}\n{events}");
    assert_eq!(
        p.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "feature"
    );
    let upstream = p.git(&["rev-parse", "--abbrev-ref", "feature@{upstream}"]);
    assert_eq!(upstream.trim(), "origin/feature");
    let pushed = std::process::Command::new("git")
        .args(["-c", "safe.directory=*", "--git-dir"])
        .arg(p.tmp_dir().join("remote.git"))
        .args(["rev-parse", "refs/heads/feature"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&pushed.stdout).trim(),
        p.git(&["rev-parse", "feature"]).trim()
    );
    assert!(p.dir().join(".worktrees/side/README.md").exists());
    assert!(p.dir().join(".venv/bin/python").exists());
    assert_no_placeholder(&p);
    // What the agent saw, less the placeholders it saw as untracked files, is what the
    // operator sees now.
    let seen: Vec<String> = output
        .split("---status---\n")
        .nth(1)
        .and_then(|s| s.split("---end---").next())
        .unwrap_or_else(|| panic!("{output}"))
        .lines()
        .filter(|l| !l.ends_with(".mcp.json") && !l.ends_with("settings.local.json"))
        .map(str::to_owned)
        .collect();
    let now = p.status_porcelain();
    assert_eq!(now, seen, "{output}");
    assert!(now.contains(&"?? work.txt".to_owned()), "{now:?}");
    assert!(now.contains(&" M README.md".to_owned()), "{now:?}");
}

#[test]
fn ordinary_git_and_venv_work_in_the_sandbox_as_root() {
    ordinary_git_and_venv_work(Operator::Root);
}

#[test]
fn ordinary_git_and_venv_work_in_the_sandbox_as_unprivileged_user() {
    ordinary_git_and_venv_work(Operator::Unprivileged);
}

/// An agent that waits while `$HOLD` exists (the first round, killed with its supervisor),
/// then exits.
const HELD: &str = "#!/bin/sh\nwhile [ -e \"$HOLD\" ]; do sleep 0.1; done\n";

/// A supervisor killed (`SIGKILL`) mid-round leaves its placeholders and their journal; the
/// next `serve` removes them before its first round, so nothing is left in the tree.
fn a_crash_leaves_no_placeholder_behind(operator: Operator) {
    let p = project(operator, HELD, "require");
    let hold = p.tmp_dir().join("hold");
    std::fs::write(&hold, "").unwrap();
    let text = std::fs::read_to_string(p.config_path()).unwrap().replacen(
        "[agent.env]\n",
        &format!(
            "[agent.env]\nHOLD = {}\n",
            agent_runner_e2e::toml_string(&hold.display().to_string())
        ),
        1,
    );
    p.write_config_text(&text);
    let serve = p.spawn(&["serve", "--max-rounds", "1"]);
    p.wait_for_event("agent_spawn");
    let journal = p.state_dir().join("agent-placeholders.json");
    assert!(journal.exists(), "no journal while the agent runs");
    assert!(
        p.dir().join(".mcp.json").exists(),
        "no placeholder while the agent runs"
    );
    serve.signal(libc::SIGKILL);
    serve.wait(Duration::from_secs(60));
    // The crash left them.
    assert!(journal.exists());
    assert!(p.dir().join(".mcp.json").exists());
    std::fs::remove_file(&hold).unwrap();
    serve_one_round(&p);
    assert_no_placeholder(&p);
    assert_eq!(p.status_porcelain(), Vec::<String>::new());
}

#[test]
fn a_crash_leaves_no_placeholder_behind_as_root() {
    a_crash_leaves_no_placeholder_behind(Operator::Root);
}

#[test]
fn a_crash_leaves_no_placeholder_behind_as_unprivileged_user() {
    a_crash_leaves_no_placeholder_behind(Operator::Unprivileged);
}

/// The hostile agent against links at protected paths: writes through `.envrc` (a link to
/// a tracked file) and through `.claude` (a link to a tracked directory), renames
/// `.claude` (and back), then swaps `.envrc` for a file of its own; each outcome as one
/// line of `attempts.log`, as [`HOSTILE`] writes them.
const THROUGH_LINKS: &str = r##"#!/usr/bin/python3
import errno, os

log = open("attempts.log", "w")

def attempt(label, op, fn):
    try:
        fn()
        outcome = "ok"
    except OSError as e:
        outcome = errno.errorcode.get(e.errno, str(e.errno))
    log.write(f"{label} {op} {outcome}\n")
    log.flush()

def append(path):
    with open(path, "a") as f:
        f.write("# planted by the agent\n")

def replace(path):
    os.unlink(path)
    with open(path, "w") as f:
        f.write("# the agent's own\n")

attempt("envrc", "write", lambda: append(".envrc"))
attempt("claude_settings", "write", lambda: append(".claude/settings.json"))
attempt("claude", "rename", lambda: (os.rename(".claude", ".claude.moved"), os.rename(".claude.moved", ".claude")))
attempt("envrc", "replace", lambda: replace(".envrc"))
log.close()
"##;

/// A project as [`project`] makes it, whose `.envrc` is a link to the tracked
/// `envrc.real` and whose `.claude` is a link to the tracked directory `shared/`.
fn linked_project(operator: Operator, mode: &str) -> Project {
    let p = project(operator, THROUGH_LINKS, mode);
    std::fs::remove_file(p.dir().join(".envrc")).unwrap();
    std::fs::remove_dir_all(p.dir().join(".claude")).unwrap();
    p.write("envrc.real", "export OPERATOR=1\n");
    p.write("shared/settings.json", "{\"existing\": true}\n");
    std::os::unix::fs::symlink("envrc.real", p.dir().join(".envrc")).unwrap();
    std::os::unix::fs::symlink("shared", p.dir().join(".claude")).unwrap();
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "linked protected paths"]);
    p
}

/// A symbolic link at a protected path or on its way (docs/security.md "Protected paths")
/// is never followed and stays protected: under `require` the agent's write through
/// `.envrc` fails with `EROFS`, through `.claude` with `ENOTDIR`, the rename of `.claude`
/// and the swap of `.envrc` with `EBUSY`; what the links lead to is unchanged, the links
/// stay; each link is recorded (`agent_sandbox_denied`, layer `protected_paths`, access
/// `link`) and `peek` shows it. The control, `mode = "off"`, succeeds at each: the
/// operator's `envrc.real` and `shared/settings.json` hold the plant.
fn a_link_at_a_protected_path_is_covered_and_recorded(operator: Operator) {
    let p = linked_project(operator, "require");
    serve_one_round(&p);
    let got = outcomes(p.dir());
    let expected = [
        ("envrc write", "EROFS"),
        ("claude_settings write", "ENOTDIR"),
        ("claude rename", "EBUSY"),
        ("envrc replace", "EBUSY"),
    ];
    for (key, errno) in expected {
        assert_eq!(
            got.get(key).map(String::as_str),
            Some(errno),
            "{operator:?} {key}: {got:#?}\n{}",
            p.events_text()
        );
    }
    assert_eq!(
        std::fs::read_to_string(p.dir().join("envrc.real")).unwrap(),
        "export OPERATOR=1\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.dir().join("shared/settings.json")).unwrap(),
        "{\"existing\": true}\n"
    );
    for link in [".envrc", ".claude"] {
        let m = std::fs::symlink_metadata(p.dir().join(link)).unwrap();
        assert!(m.file_type().is_symlink(), "{link} is no longer a link");
    }
    let denied = p.events_of("agent_sandbox_denied");
    for link in [".envrc", ".claude"] {
        assert!(
            denied.iter().any(|d| d["layer"] == "protected_paths"
                && d["access"] == "link"
                && d["round_num"] == 1
                && d["target"]
                    .as_str()
                    .is_some_and(|t| t.ends_with(&format!("/{link}")))),
            "{operator:?}: {link} not recorded: {}",
            p.events_text()
        );
    }
    let peek = p.run(&["peek"]);
    assert!(
        peek.stdout.contains("protected_paths link") && peek.stdout.contains("/.envrc"),
        "{peek}"
    );
    assert_no_placeholder(&p);

    // The control: the same agent unconfined writes through both links.
    let p = linked_project(operator, "off");
    serve_one_round(&p);
    let got = outcomes(p.dir());
    for (key, _) in expected {
        assert_eq!(
            got.get(key).map(String::as_str),
            Some("ok"),
            "{key}: {got:#?}"
        );
    }
    assert!(std::fs::read_to_string(p.dir().join("envrc.real"))
        .unwrap()
        .contains("planted by the agent"));
    assert!(
        std::fs::read_to_string(p.dir().join("shared/settings.json"))
            .unwrap()
            .contains("planted by the agent")
    );
    assert!(p
        .events_of("agent_sandbox_denied")
        .iter()
        .all(|d| d["layer"] != "protected_paths"));
}

#[test]
fn a_link_at_a_protected_path_is_covered_and_recorded_as_root() {
    a_link_at_a_protected_path_is_covered_and_recorded(Operator::Root);
}

#[test]
fn a_link_at_a_protected_path_is_covered_and_recorded_as_unprivileged_user() {
    a_link_at_a_protected_path_is_covered_and_recorded(Operator::Unprivileged);
}
