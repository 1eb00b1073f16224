//! Where the supervisor's own record lives: the project lock, events, `state.json`, the
//! orphan stash record, `service.json` and the control socket (docs/operations.md, "State
//! dir").
//!
//! Agents clean their tree (`git clean -fdx` deletes every ignored file), so a record kept
//! inside the work tree can vanish mid-serve: the lock file with it, letting a second
//! supervisor in, and the round counter, restarting numbering at R1. When `log_dir` lies
//! inside `work_dir` (the `./logs` layout), the record therefore defaults to a per-project
//! directory under the user's state dir, out of the agent's reach:
//! `$XDG_STATE_HOME/agent-runner/projects/<project>-<key>` (`~/.local/state` when
//! `XDG_STATE_HOME` is unset), `<key>` being the first 16 hex digits of the sha256 of the
//! work tree's real path. A `log_dir` outside the work tree keeps the record itself, as
//! before. `[runtime] state_dir` overrides both. The record is readied there at boot by
//! [`crate::record::state::prepare`].

use sha2::{Digest, Sha256};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Name of the file in a state dir naming the work tree whose record it is
/// (`<dev> <ino> <path>`), written by [`crate::runtime::cycle::tree_lock`].
pub(crate) const IDENTITY_FILE: &str = "tree-identity";

/// `(device, inode)` of `path` (following links): a tree's identity, whatever path reaches
/// it.
pub(crate) fn identity(path: &Path) -> std::io::Result<(u64, u64)> {
    let meta = std::fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

/// The tree `state_dir`'s record names, when it is another tree than `work_dir` and that
/// tree still exists (its recorded path still has the recorded identity).
pub(crate) fn other_live_tree(state_dir: &Path, work_dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(state_dir.join(IDENTITY_FILE)).ok()?;
    let mut words = text.trim_end_matches('\n').splitn(3, ' ');
    let dev = words.next()?.parse::<u64>().ok()?;
    let ino = words.next()?.parse::<u64>().ok()?;
    let other = PathBuf::from(words.next()?);
    let ours = identity(work_dir).ok();
    let theirs = (dev, ino);
    (ours != Some(theirs) && identity(&other).is_ok_and(|now| now == theirs)).then_some(other)
}

/// The default log dir of the tree `work_dir` (docs/operations.md, "State dir"): `shared`,
/// `~/.agent-runner/<project>/logs`, unless that record is another existing tree's (two
/// projects of one folder name, `~/a/api` and `~/b/api`), or this tree's own record is
/// already at `keyed`, `~/.agent-runner/<project>-<key>/logs` (`<key>`: [`key`] of its
/// path): then `keyed`. So each tree gets a record of its own, and a record that exists
/// keeps its path (the first tree of a name keeps the unkeyed one for good; the second
/// keeps its keyed one even after the first is gone).
pub(crate) fn own_default(work_dir: &Path, shared: PathBuf, keyed: PathBuf) -> PathBuf {
    let recorded = |dir: &Path| dir.join(IDENTITY_FILE).exists() || dir.join("state.json").exists();
    if recorded(&keyed) || other_live_tree(&shared, work_dir).is_some() {
        keyed
    } else {
        shared
    }
}

/// The default state dir of the project whose work tree is `work_dir` (canonical) and whose
/// log dir is `log_dir` (see the module docs); `log_dir` itself when it lies outside the
/// work tree or when neither `XDG_STATE_HOME` nor `HOME` is set.
pub(crate) fn default_for(work_dir: &Path, log_dir: &Path, project: &str) -> PathBuf {
    if !in_tree(work_dir, log_dir) {
        return log_dir.to_owned();
    }
    let base = match (std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME")) {
        (Some(state), _) if Path::new(&state).is_absolute() => PathBuf::from(state),
        (_, Some(home)) if !home.is_empty() => PathBuf::from(home).join(".local/state"),
        _ => return log_dir.to_owned(),
    };
    base.join("agent-runner/projects")
        .join(format!("{}-{}", sanitize(project), key(work_dir)))
}

/// Whether `dir` lies inside the work tree `work_dir` (where the agent's tree operations
/// reach it).
pub(crate) fn in_tree(work_dir: &Path, dir: &Path) -> bool {
    dir.starts_with(work_dir)
}

/// The first 16 hex digits of the sha256 of `work_dir`'s bytes.
pub(crate) fn key(work_dir: &Path) -> String {
    let digest = Sha256::digest(work_dir.as_os_str().as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// `project` reduced to `[A-Za-z0-9._-]` (other characters become `_`), for a readable
/// directory name.
fn sanitize(project: &str) -> String {
    project
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_tree_log_dir_moves_the_record_out_keyed_by_path() {
        let work = Path::new("/srv/my project");
        let inside = default_for(work, &work.join("logs"), "my project");
        assert!(!inside.starts_with(work), "{}", inside.display());
        let name = inside.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(
            name.starts_with("my_project-") && name.len() == 11 + 16,
            "{name}"
        );
        let other = default_for(Path::new("/srv/other"), Path::new("/srv/other/logs"), "x");
        assert_ne!(
            inside.file_name(),
            other.file_name(),
            "distinct trees share a dir"
        );
        let outside = Path::new("/var/log/ar");
        assert_eq!(default_for(work, outside, "p"), outside);
    }
}
