//! The one place that runs git. Every call runs in `work_dir` with repository hooks
//! disabled (`core.hooksPath=/dev/null`: the agent may have written `.git/hooks`, and the
//! supervisor must not run that code). Paths a host or the agent named are passed as
//! `:(literal)` pathspecs, so no path is ever read as a pattern.

use std::path::{Path, PathBuf};
use tokio::process::Command;

/// A git invocation that failed: the command and what git said.
#[derive(Debug, thiserror::Error)]
#[error("git {args} failed: {detail}")]
pub struct GitError {
    /// The arguments, space-joined.
    pub args: String,
    /// git's stderr (trimmed) or the spawn error.
    pub detail: String,
}

/// A git working tree, with the paths (relative to the tree) that never count as dirty
/// and are never stashed or committed: the log dir when it lies inside the tree, and the
/// paths hosts own (docs/protocol.md §5.8).
#[derive(Clone, Debug)]
pub struct Repo {
    work_dir: PathBuf,
    excluded: Vec<String>,
}

impl Repo {
    /// The tree at `work_dir`; `log_dir` is excluded from dirt when it lies inside it.
    pub fn new(work_dir: &Path, log_dir: &Path) -> Self {
        let excluded = log_dir
            .strip_prefix(work_dir)
            .ok()
            .filter(|rel| !rel.as_os_str().is_empty())
            .map(|rel| rel.to_string_lossy().trim_end_matches('/').to_owned());
        Repo {
            work_dir: work_dir.to_owned(),
            excluded: excluded.into_iter().collect(),
        }
    }

    /// This tree with `owned` (relative paths hosts declared) also left out of dirt,
    /// stash and commit.
    pub fn excluding(mut self, owned: impl IntoIterator<Item = String>) -> Self {
        for path in owned {
            if !self.excluded.contains(&path) {
                self.excluded.push(path);
            }
        }
        self
    }

    async fn run(&self, args: &[&str]) -> Result<String, GitError> {
        let mut cmd = Command::new("git");
        cmd.arg("-c")
            .arg("core.hooksPath=/dev/null")
            .args(args)
            .current_dir(&self.work_dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let joined = args.join(" ");
        let out = cmd.output().await.map_err(|e| GitError {
            args: joined.clone(),
            detail: e.to_string(),
        })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let detail = if stderr.trim().is_empty() {
                stdout
            } else {
                stderr
            };
            Err(GitError {
                args: joined,
                detail: format!("{} ({})", detail.trim(), out.status),
            })
        }
    }

    /// Whether `work_dir` is inside a git working tree.
    pub async fn is_repo(&self) -> bool {
        self.run(&["rev-parse", "--is-inside-work-tree"])
            .await
            .is_ok()
    }

    /// Dirty paths (relative to the tree), from `git status --porcelain -z`, untracked files
    /// listed one by one, paths under the log dir left out. A staged rename lists both
    /// sides, new path then source (docs/protocol.md `dirty_handler/handle_dirty`); a copy
    /// only the new path (its source is unchanged).
    pub async fn dirty_files(&self) -> Result<Vec<String>, GitError> {
        let out = self
            .run(&["status", "--porcelain", "-z", "--untracked-files=all"])
            .await?;
        let mut files = Vec::new();
        let mut entries = out.split('\0').filter(|e| !e.is_empty());
        while let Some(entry) = entries.next() {
            if entry.len() < 4 {
                continue;
            }
            let (status, path) = entry.split_at(3);
            // A rename or copy is followed by its source path.
            let source = if status.starts_with(['R', 'C']) {
                entries.next()
            } else {
                None
            };
            let renamed_from = source.filter(|_| status.starts_with('R'));
            for path in std::iter::once(path).chain(renamed_from) {
                if !self.is_excluded(path) {
                    files.push(path.to_owned());
                }
            }
        }
        Ok(files)
    }

    fn is_excluded(&self, path: &str) -> bool {
        self.excluded.iter().any(|ex| {
            path == ex
                || path
                    .strip_prefix(ex.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    /// The pathspec keeping the excluded paths out of a stash, leaving out those git
    /// already ignores (`stash -u` skips ignored files, and naming an ignored path makes
    /// git fail after the stash was made); none when nothing is left.
    async fn stash_pathspec(&self) -> Vec<String> {
        let mut spec = Vec::new();
        for ex in &self.excluded {
            if self.run(&["check-ignore", "-q", ex]).await.is_err() {
                spec.push(format!(":(exclude,literal){ex}"));
            }
        }
        if !spec.is_empty() {
            spec.insert(0, ".".to_owned());
        }
        spec
    }

    /// `git stash push -u -m <message>` (excluded paths left out); returns the stash commit's SHA,
    /// or `None` when git found nothing to stash. A stash that git made but then reported
    /// a failure for still counts as made (the work is in it, by SHA).
    pub async fn stash_push(&self, message: &str) -> Result<Option<String>, GitError> {
        let before = self.stash_head().await;
        let spec = self.stash_pathspec().await;
        let mut args = vec!["stash", "push", "-u", "-m", message];
        if !spec.is_empty() {
            args.push("--");
            args.extend(spec.iter().map(String::as_str));
        }
        let result = self.run(&args).await;
        let after = self.stash_head().await;
        if after.is_some() && after != before {
            return Ok(after);
        }
        let out = result?;
        if out.contains("No local changes") {
            return Ok(None);
        }
        Err(GitError {
            args: args.join(" "),
            detail: format!("no stash was created: {}", out.trim()),
        })
    }

    /// Whether the stash commit `sha` is still in the stash list.
    pub async fn stash_contains(&self, sha: &str) -> bool {
        self.run(&["stash", "list", "--format=%H"])
            .await
            .is_ok_and(|out| out.lines().any(|l| l.trim() == sha))
    }

    async fn stash_head(&self) -> Option<String> {
        self.run(&["rev-parse", "-q", "--verify", "refs/stash"])
            .await
            .ok()
            .map(|s| s.trim().to_owned())
    }

    /// Stages `paths` and commits exactly those paths with `message` on the current branch
    /// (no push). Returns the new commit's SHA. On failure the index is restored for those
    /// paths and the working tree is left as it was.
    pub async fn commit_paths(&self, paths: &[String], message: &str) -> Result<String, GitError> {
        // `update-index --add --remove` stages additions, changes and deletions of exactly
        // these paths, and accepts the source of a staged rename (gone from both the tree
        // and the index), which `git add -A -- <path>` refuses.
        let mut stage = vec!["update-index", "--add", "--remove", "--"];
        stage.extend(paths.iter().map(String::as_str));
        self.run(&stage).await?;
        let specs: Vec<String> = paths.iter().map(|p| format!(":(literal){p}")).collect();
        let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
        let identity = self.identity_args().await;
        let mut commit: Vec<&str> = identity.iter().map(String::as_str).collect();
        commit.extend(["commit", "--no-verify", "-q", "-m", message, "--"]);
        commit.extend(&specs);
        if let Err(err) = self.run(&commit).await {
            let mut reset = vec!["reset", "-q", "--"];
            reset.extend(&specs);
            let _ = self.run(&reset).await;
            return Err(err);
        }
        Ok(self.run(&["rev-parse", "HEAD"]).await?.trim().to_owned())
    }

    /// `-c user.name=… -c user.email=…` when the repository has no identity configured, so
    /// a commit on a fresh machine does not fail for want of one.
    async fn identity_args(&self) -> Vec<String> {
        if self.run(&["config", "user.email"]).await.is_ok() {
            return Vec::new();
        }
        [
            "-c",
            "user.name=agent-runner",
            "-c",
            "user.email=agent-runner@localhost",
        ]
        .map(String::from)
        .to_vec()
    }
}
