//! Whose dirt is it? The one place that decides which dirty paths a round's dirty handling
//! may touch (docs/configuration.md, "Dirt attribution"):
//!
//! - [`OwnFiles`]: the supervisor's own files are never dirt: the config file, the prompt
//!   files, `log_dir` and `state_dir` when inside the work tree, host executables and
//!   scripts kept in the tree, and the files its own stdout/stderr go to
//!   (`agent-runner serve > serve.log 2>&1`).
//! - [`Baseline`]: the tree as it was before the agent started. A path dirty then and
//!   byte-for-byte the same after the round is the operator's work: reported
//!   (`dirty_before_round`), never stashed, committed or handed to a dirty handler. A path
//!   the round changed further is the round's, like any path it dirtied.
//! - A path dirty only after the round but whose inode the round never touched (its
//!   `ctime`, which no process can set, is older than the round's start, stamped by the
//!   kernel's own clock on a marker file: [`Baseline::take`]) is the operator's too: a file
//!   that became dirty because the agent changed something else — the operator's ignored
//!   `.env` once the agent empties `.gitignore`, a file whose `.gitattributes` changed —
//!   is reported and left, never stashed (out of the tree) or committed (into history).
//! - [`nested_repository`]: a dirty path that is a directory is a submodule's work tree or
//!   a repository nested in the tree (`git status --untracked-files=all` lists no other
//!   directory). This repository's git can neither stash nor commit what changed inside
//!   it, and its fingerprint is only its kind, so it is neither the round's nor the
//!   operator's: [`Split::nested`], reported by `dirty_submodule_skipped` and left as it
//!   is (docs/operations.md, "Submodules").
//!
//! Paths are relative to `work_dir`, as [`crate::runtime::git::repo::Repo::dirty_files`] gives
//! them.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::runtime::git::path_name;
use crate::tree_file::{regular_file_sha256, Symlink};

/// The supervisor's own paths inside the work tree (work-dir-relative, no trailing `/`).
#[derive(Clone, Debug, Default)]
pub(crate) struct OwnFiles {
    paths: Vec<String>,
}

impl OwnFiles {
    /// The own files of a supervisor running `config` in this process.
    pub(crate) fn of(config: &Config) -> Self {
        let rt = &config.runtime;
        let base = config.path.parent().unwrap_or(Path::new("/"));
        let mut candidates: Vec<PathBuf> = vec![
            config.path.clone(),
            rt.log_dir.clone(),
            rt.state_dir.clone(),
        ];
        candidates.extend(config.prompt.files.iter().cloned());
        for phase in config.phases.overrides.values() {
            candidates.extend(phase.prompt_files.iter().flatten().cloned());
        }
        for host in &config.plugins.hosts {
            candidates.extend(
                host.command
                    .iter()
                    .map(|arg| base.join(arg))
                    .filter(|p| p.is_file()),
            );
        }
        candidates.extend(std_streams());
        let mut paths: Vec<String> = candidates
            .iter()
            .filter_map(|p| relative_to(&rt.work_dir, p))
            .collect();
        paths.sort();
        paths.dedup();
        OwnFiles { paths }
    }

    /// These own files plus the paths hosts declared as theirs (`owned_paths`,
    /// docs/protocol.md §5.8; work-dir-relative, already checked by
    /// `agent_runner_protocol::validate`): never dirt, so never stashed, committed or
    /// handed to a dirty handler. A host's path only keeps git away from it; it gives the
    /// host no write access (the sandbox decides that, and the state dir is never one).
    pub(crate) fn with_host_paths(mut self, owned: impl IntoIterator<Item = String>) -> Self {
        self.paths.extend(
            owned
                .into_iter()
                .map(|p| p.trim_end_matches('/').to_owned())
                .filter(|p| !p.is_empty()),
        );
        self.paths.sort();
        self.paths.dedup();
        self
    }

    /// Whether `path` (work-dir-relative) is one of the own files or lies under one of the
    /// own directories.
    pub(crate) fn contains(&self, path: &str) -> bool {
        self.paths.iter().any(|own| {
            path == own
                || path
                    .strip_prefix(own.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }
}

/// `p` relative to `work_dir` (canonical where it exists), when it lies inside it.
fn relative_to(work_dir: &Path, p: &Path) -> Option<String> {
    let p = p.canonicalize().unwrap_or_else(|_| p.to_owned());
    let rel = p.strip_prefix(work_dir).ok()?;
    let rel = rel.to_str()?.trim_end_matches('/');
    (!rel.is_empty()).then(|| rel.to_owned())
}

/// The regular files this process's stdout and stderr are open on.
fn std_streams() -> Vec<PathBuf> {
    [1, 2]
        .iter()
        .filter_map(|fd| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok())
        .filter(|p| p.is_file())
        .collect()
}

/// The content of each path dirty before the round: the sha256 of its bytes (`None`: it
/// did not exist, e.g. a deletion); and when the round started, as the kernel stamps
/// `ctime`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Baseline {
    files: BTreeMap<String, Option<[u8; 32]>>,
    /// The `ctime` (seconds, nanoseconds) of a marker written when the baseline was taken:
    /// the kernel's clock as it stamps inodes (coarser than `SystemTime::now`, so compared
    /// with like). `None`: no marker could be written; no path is judged by its `ctime`.
    started: Option<(i64, i64)>,
}

/// The marker whose `ctime` stamps a round's start, in the state dir.
const START_MARKER: &str = "round-start";

/// The `ctime` of `path` (not following a final link), seconds and nanoseconds.
fn ctime(path: &Path) -> Option<(i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some((meta.ctime(), meta.ctime_nsec()))
}

impl Baseline {
    /// Records the state of `dirty` (work-dir-relative) under `work_dir`, and stamps the
    /// round's start by writing a marker in `state_dir` (outside the agent's reach).
    pub(crate) fn take(work_dir: &Path, dirty: &[String], state_dir: &Path) -> Self {
        let marker = state_dir.join(START_MARKER);
        let started = crate::record::state::create_exclusive(&marker)
            .ok()
            .and_then(|_| ctime(&marker));
        Baseline {
            files: dirty
                .iter()
                .map(|f| (f.clone(), fingerprint(&path_name::join(work_dir, f))))
                .collect(),
            started,
        }
    }

    /// Whether `path` exists and the round never touched its inode: its `ctime` is older
    /// than the round's start (a write, a rename, a link or a `chmod` all set it).
    fn untouched(&self, path: &Path) -> bool {
        self.started
            .zip(ctime(path))
            .is_some_and(|(started, changed)| changed < started)
    }

    /// Splits the paths dirty after the round into the round's (new dirt, or operator
    /// dirt it changed further), the operator's (dirty before, unchanged since) and the
    /// nested repositories' ([`nested_repository`]), whoever dirtied them.
    pub(crate) fn split(&self, work_dir: &Path, after: Vec<String>) -> Split {
        let mut split = Split::default();
        for path in after {
            if nested_repository(work_dir, &path) {
                split.nested.push(path);
                continue;
            }
            match self.files.get(&path) {
                None if self.untouched(&path_name::join(work_dir, &path)) => {
                    split.untouched.push(path.clone());
                    split.operator.push(path);
                }
                None => split.round.push(path),
                Some(before) if *before != fingerprint(&path_name::join(work_dir, &path)) => {
                    split.changed_preexisting.push(path.clone());
                    split.round.push(path);
                }
                Some(_) => split.operator.push(path),
            }
        }
        split
    }
}

/// Dirty paths after a round, by owner.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Split {
    /// The round's: handled (stash, commit, dirty handlers).
    pub round: Vec<String>,
    /// Of [`Split::round`], those already dirty before the round (changed further by it).
    pub changed_preexisting: Vec<String>,
    /// The operator's: dirty before the round and unchanged, or dirty only now though the
    /// round never touched them ([`Split::untouched`]); left alone.
    pub operator: Vec<String>,
    /// Of [`Split::operator`], those not dirty before the round whose inode it never
    /// touched (the operator's ignored file the agent un-ignored).
    pub untouched: Vec<String>,
    /// Submodules and nested repositories with changes inside ([`nested_repository`]):
    /// nobody's, left as they are.
    pub nested: Vec<String>,
}

/// Whether dirty path `path` (work-dir-relative, as [`crate::runtime::git::repo::Repo::dirty_files`]
/// gives it; an untracked nested repository ends in `/`) is a directory: a submodule's work
/// tree or a repository nested in the tree. Only the file system is asked; nothing runs
/// inside it.
pub(crate) fn nested_repository(work_dir: &Path, path: &str) -> bool {
    let path = path.trim_end_matches('/');
    !path.is_empty()
        && std::fs::symlink_metadata(path_name::join(work_dir, path)).is_ok_and(|m| m.is_dir())
}

/// The sha256 of a path's state: a symlink's target, a regular file's bytes
/// ([`regular_file_sha256`]: bounded, never blocking), or for anything else (a FIFO, a
/// socket, a device, a directory) only its kind.
fn fingerprint(path: &Path) -> Option<[u8; 32]> {
    let kind = std::fs::symlink_metadata(path).ok()?.file_type();
    if kind.is_file() {
        return regular_file_sha256(path, Symlink::Refuse);
    }
    let mut hasher = Sha256::new();
    if kind.is_symlink() {
        use std::os::unix::ffi::OsStrExt;
        hasher.update(b"symlink:");
        hasher.update(std::fs::read_link(path).ok()?.as_os_str().as_bytes());
    } else {
        hasher.update(format!("other:{kind:?}").as_bytes());
    }
    Some(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_operator_dirt_is_left_and_changed_dirt_is_the_rounds() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path();
        std::fs::write(w.join("scratch"), "mine").unwrap();
        std::fs::write(w.join("edited"), "v1").unwrap();
        let base = Baseline::take(w, &["scratch".into(), "edited".into()], dir.path());
        std::fs::write(w.join("edited"), "v2").unwrap();
        std::fs::write(w.join("new"), "agent").unwrap();
        let split = base.split(w, vec!["edited".into(), "new".into(), "scratch".into()]);
        assert_eq!(split.round, ["edited", "new"]);
        assert_eq!(split.changed_preexisting, ["edited"]);
        assert_eq!(split.operator, ["scratch"]);
    }

    #[test]
    fn a_file_dirty_only_now_but_untouched_by_the_round_is_the_operators() {
        let dir = tempfile::tempdir().unwrap();
        let (w, state) = (dir.path().join("w"), dir.path().join("state"));
        std::fs::create_dir_all(&w).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        for name in [".env", "renamed-from", "chmodded", "rewritten"] {
            std::fs::write(w.join(name), "old").unwrap();
        }
        // The kernel stamps inodes with a clock coarser than a few milliseconds.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let base = Baseline::take(&w, &[], &state);
        // The round: renames, chmods and rewrites files (each sets ctime), leaves .env.
        std::fs::rename(w.join("renamed-from"), w.join("renamed")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(w.join("chmodded"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        std::fs::write(w.join("rewritten"), "old").unwrap();
        std::fs::write(w.join("made"), "new").unwrap();
        let after: Vec<String> = [".env", "renamed", "chmodded", "rewritten", "made"]
            .map(String::from)
            .to_vec();
        let split = base.split(&w, after.clone());
        assert_eq!(split.operator, [".env"]);
        assert_eq!(split.untouched, [".env"]);
        assert_eq!(split.round, ["renamed", "chmodded", "rewritten", "made"]);
        // Without the stamp (no state dir to write it in), every new dirty path is the
        // round's, as before.
        let unstamped = Baseline::take(&w, &[], &dir.path().join("missing"));
        assert_eq!(unstamped.split(&w, after.clone()).round, after);
    }

    #[test]
    fn a_fifo_put_where_operator_dirt_was_is_the_rounds_and_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path();
        std::fs::write(w.join("notes"), "mine").unwrap();
        let base = Baseline::take(w, &["notes".into()], dir.path());
        std::fs::remove_file(w.join("notes")).unwrap();
        nix::unistd::mkfifo(&w.join("notes"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        // Opening the FIFO for reading would wait for a writer: this returns at once.
        let split = base.split(w, vec!["notes".into()]);
        assert_eq!(split.round, ["notes"]);
        assert_eq!(split.changed_preexisting, ["notes"]);
    }

    #[test]
    fn a_directory_is_nobodys_before_and_after_the_round() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path();
        std::fs::create_dir_all(w.join("vendor/lib")).unwrap();
        std::fs::create_dir_all(w.join("nested")).unwrap();
        std::fs::write(w.join("scratch"), "mine").unwrap();
        let base = Baseline::take(w, &["vendor/lib".into(), "scratch".into()], dir.path());
        let split = base.split(
            w,
            vec!["nested/".into(), "scratch".into(), "vendor/lib".into()],
        );
        assert_eq!(split.nested, ["nested/", "vendor/lib"]);
        assert_eq!(split.operator, ["scratch"]);
        assert!(split.round.is_empty());
        assert!(!nested_repository(w, "scratch") && !nested_repository(w, "gone"));
    }

    #[test]
    fn own_paths_match_whole_components() {
        let own = OwnFiles {
            paths: vec!["logs".into(), "agent-runner.toml".into()],
        };
        assert!(own.contains("logs") && own.contains("logs/rounds/R1.log"));
        assert!(!own.contains("logsx") && !own.contains("src/logs"));
        assert!(own.contains("agent-runner.toml"));
    }

    #[test]
    fn host_owned_paths_join_the_own_files() {
        let own = OwnFiles {
            paths: vec!["logs".into()],
        }
        .with_host_paths(["notes/".to_owned(), "reports/junit.xml".to_owned()]);
        assert_eq!(own.paths, ["logs", "notes", "reports/junit.xml"]);
        assert!(own.contains("notes/") && own.contains("notes/today.md"));
        assert!(own.contains("reports/junit.xml") && !own.contains("reports/other.xml"));
        assert!(!own.contains("notesx"));
    }
}
