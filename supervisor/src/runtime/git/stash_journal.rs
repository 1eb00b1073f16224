//! The stashes the supervisor made, recorded in the state dir (`stashes.json`), out of the
//! agent's reach (docs/operations.md, "Stashes"): a stash lives in the repository's
//! `refs/stash` reflog, which the agent's own git can rewrite (`git stash clear`, `drop`,
//! `pop`). Each entry names the stash commit by SHA, the round that left the work, its
//! paths and what was stashed ([`change_of`]); after every round the entries still
//! believed in the stash list are looked up there, and one that is gone is reported once
//! (`orphan_stash_dropped`) with the command that gets the work back while git still has
//! its objects.
//!
//! The same record decides the idempotency window of `[vcs] stash_idempotency_s`: within
//! it only the *same* change is skipped (the reference system skips any); a different one
//! is stashed (issue 41, item 6).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::record::events::{Event, EventLog};
use crate::record::state::{read_json, write_json_atomic};
use crate::runtime::git::path_name;
use crate::runtime::git::repo::Repo;

/// The journal's file name in the state dir.
pub(crate) const JOURNAL_FILE: &str = "stashes.json";

/// At most this many stashes are remembered (the oldest are forgotten first).
const MAX_ENTRIES: usize = 200;

/// One stash the supervisor made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StashEntry {
    /// The stash commit's SHA.
    pub sha: String,
    /// The round whose work it holds.
    pub round_num: u64,
    /// The stash's message (`ORPHAN R<N> ts=<UTC>`).
    pub message: String,
    /// How many paths it took.
    pub file_count: usize,
    /// The first of them (as many as `dirty_detected` lists), work-dir-relative.
    pub paths: Vec<String>,
    /// What was stashed ([`change_of`]); `None` when it was not computed.
    #[serde(default)]
    pub change: Option<String>,
    /// Found missing from the stash list (and reported) after this round.
    #[serde(default)]
    pub dropped_after_round: Option<u64>,
}

/// `stashes.json`: oldest first.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Journal {
    stashes: Vec<StashEntry>,
}

fn read(state_dir: &Path) -> Journal {
    read_json(&state_dir.join(JOURNAL_FILE))
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Adds `entry` to the journal in `state_dir`, forgetting the oldest beyond
/// [`MAX_ENTRIES`].
///
/// Errors: the journal cannot be written (the caller logs it: the stash stands).
pub(crate) fn record(state_dir: &Path, entry: StashEntry) -> std::io::Result<()> {
    let mut journal = read(state_dir);
    journal.stashes.retain(|e| e.sha != entry.sha);
    journal.stashes.push(entry);
    let excess = journal.stashes.len().saturating_sub(MAX_ENTRIES);
    journal.stashes.drain(..excess);
    write_json_atomic(&state_dir.join(JOURNAL_FILE), &journal)
}

/// The recorded change of stash `sha`, when the journal has it.
pub(crate) fn change_of_stash(state_dir: &Path, sha: &str) -> Option<String> {
    read(state_dir)
        .stashes
        .into_iter()
        .find(|e| e.sha == sha)
        .and_then(|e| e.change)
}

/// What stashing `paths` (work-dir-relative, as [`Repo::dirty_files`] names them) would
/// take, as one hex SHA-256: each path in order with its kind and content (a file's
/// bytes and executable bit, a link's target, a directory, or its absence). Two equal
/// answers are the same change; any edit, new file or removal gives another.
pub(crate) fn change_of(work_dir: &Path, paths: &[String]) -> String {
    let mut sorted: Vec<&String> = paths.iter().collect();
    sorted.sort_unstable();
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    for path in sorted {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        let full = work_dir.join(path_name::os(path));
        match std::fs::symlink_metadata(&full) {
            Err(_) => hasher.update(b"-"),
            Ok(meta) if meta.file_type().is_symlink() => {
                hasher.update(b"l");
                if let Ok(target) = std::fs::read_link(&full) {
                    hasher.update(target.as_os_str().as_encoded_bytes());
                }
            }
            Ok(meta) if meta.is_file() => {
                hasher.update(if meta.permissions().mode() & 0o111 != 0 {
                    b"x"
                } else {
                    b"f"
                });
                if let Ok(mut file) = std::fs::File::open(&full) {
                    while let Ok(n) = file.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        hasher.update(&buf[..n]);
                    }
                }
            }
            Ok(_) => hasher.update(b"d"),
        }
        hasher.update([0]);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// After round `round_num`: each journaled stash not yet reported that is no longer in
/// the repository's stash list is reported once (`orphan_stash_dropped`), with whether
/// git still has its commit and how to get it back. A stash list git cannot read reports
/// nothing (it is looked at again after the next round).
pub(crate) async fn check(state_dir: &Path, repo: &Repo, round_num: u64, events: &EventLog) {
    let mut journal = read(state_dir);
    if journal
        .stashes
        .iter()
        .all(|e| e.dropped_after_round.is_some())
    {
        return;
    }
    let Some(listed) = repo.stash_list().await else {
        return;
    };
    let listed: HashSet<&str> = listed.iter().map(String::as_str).collect();
    let mut changed = false;
    for entry in journal.stashes.iter_mut() {
        if entry.dropped_after_round.is_some() || listed.contains(entry.sha.as_str()) {
            continue;
        }
        let recoverable = repo.commit_exists(&entry.sha).await;
        let what_to_do = if recoverable {
            format!(
                "the agent's git removed it from the stash list; git still has it: `git stash store -m \"{}\" {}` puts it back (then `git stash apply` restores the work), or `git branch recovered-r{} {}` keeps it",
                entry.message, entry.sha, entry.round_num, entry.sha
            )
        } else {
            "its objects are gone (pruned): the work cannot be recovered from git".to_owned()
        };
        events.emit(Event::OrphanStashDropped {
            round_num,
            stash_ref: entry.sha.clone(),
            stashed_round: entry.round_num,
            message: entry.message.clone(),
            file_count: entry.file_count,
            files: entry.paths.clone(),
            recoverable,
            what_to_do,
        });
        entry.dropped_after_round = Some(round_num);
        changed = true;
    }
    if changed {
        if let Err(err) = write_json_atomic(&state_dir.join(JOURNAL_FILE), &journal) {
            tracing::error!(
                "cannot update the stash journal in {}: {err}",
                state_dir.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_content_is_the_same_change_and_any_edit_another() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("a.txt"), "one\n").unwrap();
        std::fs::write(dir.join("b.txt"), "two\n").unwrap();
        let paths = vec!["b.txt".to_owned(), "a.txt".to_owned()];
        let first = change_of(dir, &paths);
        let reordered = vec!["a.txt".to_owned(), "b.txt".to_owned()];
        assert_eq!(change_of(dir, &reordered), first);
        std::fs::write(dir.join("a.txt"), "one!\n").unwrap();
        let edited = change_of(dir, &paths);
        assert_ne!(edited, first);
        std::fs::remove_file(dir.join("b.txt")).unwrap();
        assert_ne!(change_of(dir, &paths), edited);
        assert_ne!(change_of(dir, &paths[..1]), change_of(dir, &paths));
    }

    #[test]
    fn the_journal_keeps_the_newest_entries_once_each() {
        let tmp = tempfile::tempdir().unwrap();
        let entry = |n: u64| StashEntry {
            sha: format!("{n:040}"),
            round_num: n,
            message: format!("ORPHAN R{n}"),
            file_count: 1,
            paths: vec!["a".into()],
            change: Some(format!("c{n}")),
            dropped_after_round: None,
        };
        for n in 0..(MAX_ENTRIES as u64 + 5) {
            record(tmp.path(), entry(n)).unwrap();
        }
        record(tmp.path(), entry(MAX_ENTRIES as u64 + 4)).unwrap();
        let journal = read(tmp.path());
        assert_eq!(journal.stashes.len(), MAX_ENTRIES);
        assert_eq!(journal.stashes[0].round_num, 5);
        assert_eq!(
            change_of_stash(tmp.path(), &entry(7).sha).as_deref(),
            Some("c7")
        );
        assert_eq!(change_of_stash(tmp.path(), &entry(1).sha), None);
    }
}
