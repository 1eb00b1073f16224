//! The exec surface: project files that make a program run when CI picks up a push, an
//! editor opens the tree, or a tool runs in it — reviewed data, one row per path with its
//! why (docs/security.md, "What runs later: the watched tier"). They stay writable (an
//! agent may have to fix CI), but a round that changes one (added, modified or deleted,
//! as git sees the tree, or in a commit the agent made) is recorded as
//! `exec_surface_changed`, and the supervisor's commit leaves them in the tree for the
//! operator unless `[vcs] commit_exec_surface` says otherwise ([`held_from_commit`]).
//!
//! Paths are work-dir-relative, `/`-separated, as [`crate::runtime::git::repo::Repo::look`]
//! gives them.

/// One reviewed path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Surface {
    /// A file name, or a directory name with a trailing `/` (everything under it); may
    /// hold a `/` inside (`.github/workflows/`).
    pub path: &'static str,
    /// Whether it counts in any directory (tools read it from where they run), or only at
    /// the work dir's top.
    pub any_depth: bool,
    /// What runs it.
    pub why: &'static str,
}

const fn top(path: &'static str, why: &'static str) -> Surface {
    Surface {
        path,
        any_depth: false,
        why,
    }
}

const fn anywhere(path: &'static str, why: &'static str) -> Surface {
    Surface {
        path,
        any_depth: true,
        why,
    }
}

/// The reviewed exec surface.
pub(crate) const SURFACE: &[Surface] = &[
    top(".github/workflows/", "GitHub Actions runs them on the next push, with the repository's secrets"),
    top(".github/actions/", "local actions the workflows run"),
    top(".gitlab-ci.yml", "GitLab CI runs it on the next push, with the project's CI variables"),
    top(".circleci/", "CircleCI's pipeline"),
    top(".travis.yml", "Travis CI's pipeline"),
    top("azure-pipelines.yml", "Azure Pipelines' pipeline"),
    top("bitbucket-pipelines.yml", "Bitbucket Pipelines' pipeline"),
    top(".buildkite/", "Buildkite's pipeline"),
    top("Jenkinsfile", "a Jenkins pipeline"),
    top(".drone.yml", "Drone's pipeline"),
    top(".woodpecker/", "Woodpecker CI's pipelines"),
    top(".woodpecker.yml", "Woodpecker CI's pipeline"),
    anywhere(".vscode/", "VS Code runs `tasks.json` tasks on folder open, and its settings name programs (interpreters, formatters, terminal profiles)"),
    anywhere(".idea/", "JetBrains IDEs keep run configurations, external tools and startup tasks there"),
    top(".devcontainer/", "`postCreateCommand` and friends run when a dev container is built or opened"),
    top(".devcontainer.json", "the same, as a single file"),
    top(".gitmodules", "the URLs and paths `git submodule update` fetches and checks out"),
    anywhere(".gitattributes", "assigns filter, diff and merge drivers (defined in the operator's config, git-lfs's included) to paths"),
    anywhere(".cargo/config.toml", "cargo runs its `runner`, `rustc-wrapper`, `linker` and aliases on every build in the tree"),
    anywhere(".cargo/config", "the same, older name"),
    anywhere("pyvenv.cfg", "names the Python interpreter (`home`) a virtual environment runs"),
    top(".pre-commit-config.yaml", "the hooks `pre-commit` installs and runs on every commit"),
    top(".husky/", "husky's hooks, run on every commit once husky set `core.hooksPath`"),
    top("lefthook.yml", "the hooks lefthook runs on every commit"),
    top(".lefthook.yml", "the same, hidden name"),
    top("lefthook-local.yml", "the same, local overrides"),
    anywhere("mise.toml", "mise runs its `[hooks]` and `[env]` scripts when a shell enters the directory"),
    anywhere(".mise.toml", "the same, hidden name"),
    top(".npmrc", "npm's `script-shell` and `node-options` run on every `npm` command in the project"),
    top(".yarnrc.yml", "`yarnPath` is the JavaScript file every `yarn` command runs"),
    anywhere(".envrc", "direnv runs it when a shell enters the directory (protected at the top; below it, only copies that existed before the round are)"),
    anywhere(".claude/settings.json", "Claude Code's `hooks` and `permissions` for a session started in that directory (protected at the top; below it, only copies that existed before the round are)"),
    anywhere(".claude/settings.local.json", "the same, the local file"),
    anywhere(".mcp.json", "project MCP servers: commands Claude Code starts in that directory"),
    anywhere(".gemini/settings.json", "Gemini CLI's MCP servers, `toolDiscoveryCommand` and hooks for a session in that directory"),
    anywhere(".codex/config.toml", "Codex CLI's `notify`, MCP servers, sandbox and approval policy for a session in that directory"),
];

impl Surface {
    /// Whether `path` (work-dir-relative) is this surface, or lies under it.
    fn covers(&self, path: &str) -> bool {
        // A directory row covers the name itself too: a link (or file) put where the
        // directory was is the surface's.
        let at = |rest: &str| match self.path.strip_suffix('/') {
            Some(dir) => rest.starts_with(self.path) || rest == dir,
            None => rest == self.path,
        };
        if at(path) {
            return true;
        }
        self.any_depth && path.match_indices('/').any(|(i, _)| at(&path[i + 1..]))
    }
}

/// Whether `path` (work-dir-relative) is part of the exec surface.
pub(crate) fn covers(path: &str) -> bool {
    SURFACE.iter().any(|s| s.covers(path))
}

/// What runs the surfaces `paths` lie in, each once, in the list's order.
pub(crate) fn whys(paths: &[String]) -> Vec<&'static str> {
    SURFACE
        .iter()
        .filter(|s| paths.iter().any(|p| s.covers(p)))
        .map(|s| s.why)
        .collect()
}

/// Of `paths`, those the exec surface covers, in order.
pub(crate) fn of(paths: &[String]) -> Vec<String> {
    paths.iter().filter(|p| covers(p)).cloned().collect()
}

/// `paths` split into those the supervisor commits and those it leaves in the tree for the
/// operator: the exec surface, unless `commit_exec_surface` (`[vcs]
/// commit_exec_surface`).
pub(crate) fn held_from_commit(
    paths: Vec<String>,
    commit_exec_surface: bool,
) -> (Vec<String>, Vec<String>) {
    if commit_exec_surface {
        return (paths, Vec::new());
    }
    paths.into_iter().partition(|p| !covers(p))
}

/// How deep [`changed_unseen`] walks a directory row, and how many entries it looks at in
/// all: editor and CI directories are small; a larger one is cut short, not waited on.
const WALK_DEPTH: usize = 4;
const WALK_ENTRIES: usize = 512;

/// Files at the top of `work_dir` on the exec surface (a top row, or an any-depth row's
/// copy at the top) whose change time is `since` or later — a time no process can set back
/// — but which `seen` (what git showed of the round, work-dir-relative) does not hold: a
/// change `git status` does not show, most often a file its ignore rules name (`.vscode/`
/// in `.gitignore`, or a rule the agent added). A directory row is walked without following
/// links, [`WALK_DEPTH`] levels and [`WALK_ENTRIES`] entries at most; a link is told as
/// itself. Work-dir-relative paths, sorted (docs/security.md, "What hides a change").
pub(crate) fn changed_unseen(
    work_dir: &std::path::Path,
    since: std::time::SystemTime,
    seen: &[String],
) -> Vec<String> {
    let mut found = Vec::new();
    let mut budget = WALK_ENTRIES;
    for surface in SURFACE {
        let rel = surface.path.trim_end_matches('/');
        walk(work_dir, rel, since, 0, &mut budget, &mut found);
    }
    found.retain(|path| !seen.contains(path));
    found.sort();
    found.dedup();
    found
}

/// [`changed_unseen`]'s walk from `rel` (work-dir-relative).
fn walk(
    work_dir: &std::path::Path,
    rel: &str,
    since: std::time::SystemTime,
    depth: usize,
    budget: &mut usize,
    found: &mut Vec<String>,
) {
    use std::os::unix::fs::MetadataExt;
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    let Ok(meta) = std::fs::symlink_metadata(work_dir.join(rel)) else {
        return;
    };
    if meta.is_dir() {
        if depth >= WALK_DEPTH {
            return;
        }
        let Ok(entries) = std::fs::read_dir(work_dir.join(rel)) else {
            return;
        };
        for entry in entries.flatten() {
            if let Some(name) = entry.file_name().to_str() {
                walk(
                    work_dir,
                    &format!("{rel}/{name}"),
                    since,
                    depth + 1,
                    budget,
                    found,
                );
            }
        }
        return;
    }
    let changed = std::time::UNIX_EPOCH
        + std::time::Duration::new(
            u64::try_from(meta.ctime()).unwrap_or(0),
            u32::try_from(meta.ctime_nsec()).unwrap_or(0),
        );
    if changed >= since {
        found.push(rel.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_and_editor_files_are_covered_and_the_code_is_not() {
        for path in [
            ".github/workflows/ci.yml",
            ".gitlab-ci.yml",
            ".vscode/tasks.json",
            "web/.vscode/settings.json",
            ".idea/workspace.xml",
            ".devcontainer/devcontainer.json",
            ".gitmodules",
            ".gitattributes",
            "assets/.gitattributes",
            ".cargo/config.toml",
            "crates/x/.cargo/config",
            ".venv/pyvenv.cfg",
            ".pre-commit-config.yaml",
            "pkg/.envrc",
            ".envrc",
            "pkg/.claude/settings.json",
            "a/b/.mcp.json",
            "pkg/.gemini/settings.json",
            "pkg/.codex/config.toml",
            ".husky/pre-commit",
            "lefthook.yml",
            ".vscode",
        ] {
            assert!(covers(path), "{path}");
        }
        for path in [
            "src/main.rs",
            ".github/CODEOWNERS",
            "docs/.gitlab-ci.yml",
            "my.vscode/x",
            "Cargo.toml",
            ".cargo/credentials.toml",
            "x.gitattributes",
            "sub/.github/workflows/ci.yml",
        ] {
            assert!(!covers(path), "{path}");
        }
    }

    #[test]
    fn a_surface_file_changed_since_the_round_began_and_unseen_is_told() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join(".vscode/sub")).unwrap();
        std::fs::write(p.join(".vscode/old.json"), "{}").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let since = std::time::SystemTime::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(p.join(".vscode/sub/tasks.json"), "{}").unwrap();
        std::fs::write(p.join(".envrc"), "x").unwrap();
        std::fs::write(p.join(".gitlab-ci.yml"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", p.join(".mcp.json")).unwrap();
        std::fs::create_dir_all(p.join("src")).unwrap();
        std::fs::write(p.join("src/main.rs"), "x").unwrap();
        let seen = vec![".gitlab-ci.yml".to_owned()];
        assert_eq!(
            changed_unseen(p, since, &seen),
            [".envrc", ".mcp.json", ".vscode/sub/tasks.json"]
        );
    }

    #[test]
    fn the_commit_leaves_the_surface_unless_told() {
        let paths = vec!["src/a.rs".to_owned(), ".github/workflows/ci.yml".to_owned()];
        assert_eq!(
            held_from_commit(paths.clone(), false),
            (
                vec!["src/a.rs".to_owned()],
                vec![".github/workflows/ci.yml".to_owned()]
            )
        );
        assert_eq!(held_from_commit(paths.clone(), true), (paths, Vec::new()));
    }

    #[test]
    fn every_path_has_its_why_in_docs_security() {
        let doc = include_str!("../../../../docs/security.md");
        for s in SURFACE {
            assert!(!s.why.is_empty(), "{}", s.path);
            assert!(
                doc.contains(&format!("`{}`", s.path)),
                "docs/security.md does not list `{}`",
                s.path
            );
        }
    }
}
