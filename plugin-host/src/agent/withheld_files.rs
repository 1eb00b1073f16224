//! The files the agent never reads, by identity: the device and inode number of each
//! credential store and of everything beneath it, for the seccomp observer's prediction of
//! Landlock's refused reads (docs/security.md "Denials told, not silent").
//!
//! Landlock refuses a read where the file the open reaches lies outside every read grant,
//! whatever path named it; the observer `stat`s the path an open names (links followed, as
//! the kernel opens it) and looks the identity up here. The walk is made once per round,
//! before the agent starts, in the supervisor's view: entries are never followed (a link
//! beneath a store leads elsewhere, where Landlock judges the target), what a grant gives
//! back inside a store (`/etc/ssl/certs` in `/etc/ssl`) is left out, and the walk stops
//! after [`MAX_WITHHELD_FILES`] entries: a read beyond them is still refused by Landlock
//! but not recognised, which [`WithheldFiles::truncated`] says (recorded once per round as
//! `agent_scan_truncated`; `doctor` warns).

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// The most entries the walk records (a home with a large cloud SDK config beneath a
/// store stays cheap to walk).
pub const MAX_WITHHELD_FILES: usize = 20_000;

/// The identities (device, inode) of the withheld paths and of what lies beneath them.
#[derive(Debug, Clone, Default)]
pub struct WithheldFiles {
    ids: HashSet<(u64, u64)>,
    truncated: bool,
}

impl WithheldFiles {
    /// Walks `roots` (missing ones skipped, links not followed), at most
    /// [`MAX_WITHHELD_FILES`] entries in all, leaving out each path of `granted` and what
    /// lies beneath it (a grant inside a store: those reads are not refused).
    pub fn walk(roots: impl IntoIterator<Item = PathBuf>, granted: &[PathBuf]) -> Self {
        let mut ids = HashSet::new();
        let mut truncated = false;
        let mut stack: Vec<PathBuf> = roots.into_iter().collect();
        stack.reverse();
        while let Some(path) = stack.pop() {
            if granted.iter().any(|g| path.starts_with(g)) {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if ids.len() >= MAX_WITHHELD_FILES {
                truncated = true;
                break;
            }
            ids.insert((meta.dev(), meta.ino()));
            if meta.is_dir() {
                for entry in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                    stack.push(entry.path());
                }
            }
        }
        WithheldFiles { ids, truncated }
    }

    /// Whether the walk stopped at [`MAX_WITHHELD_FILES`] with entries left: reads of
    /// those are refused but not recognised.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Whether the file of identity `id` (device, inode) is withheld.
    pub fn contains(&self, id: (u64, u64)) -> bool {
        self.ids.contains(&id)
    }

    /// How many identities were recorded.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether none were.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(path: &std::path::Path) -> (u64, u64) {
        let m = std::fs::metadata(path).unwrap();
        (m.dev(), m.ino())
    }

    #[test]
    fn a_store_and_what_lies_beneath_are_withheld_and_a_link_s_target_is_not() {
        let home = tempfile::tempdir().unwrap();
        let ssh = home.path().join(".ssh");
        std::fs::create_dir(&ssh).unwrap();
        std::fs::write(ssh.join("id_rsa"), "key").unwrap();
        std::fs::write(home.path().join(".npmrc"), "token").unwrap();
        let elsewhere = home.path().join("notes.md");
        std::fs::write(&elsewhere, "notes").unwrap();
        std::os::unix::fs::symlink(&elsewhere, ssh.join("link")).unwrap();
        let public = ssh.join("public");
        std::fs::create_dir(&public).unwrap();
        std::fs::write(public.join("known_hosts"), "hosts").unwrap();
        let withheld = WithheldFiles::walk(
            [
                ssh.clone(),
                home.path().join(".npmrc"),
                home.path().join(".missing"),
            ],
            std::slice::from_ref(&public),
        );
        assert!(withheld.contains(id(&ssh)));
        assert!(withheld.contains(id(&ssh.join("id_rsa"))));
        assert!(withheld.contains(id(&home.path().join(".npmrc"))));
        // The link itself is recorded, never what it leads to.
        assert!(!withheld.contains(id(&elsewhere)));
        // What a grant gives back inside a store is not withheld.
        assert!(!withheld.contains(id(&public)));
        assert!(!withheld.contains(id(&public.join("known_hosts"))));
        assert_eq!(withheld.len(), 4);
        assert!(!withheld.truncated());
    }

    #[test]
    fn the_walk_stops_at_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(MAX_WITHHELD_FILES + 10) {
            std::fs::write(dir.path().join(i.to_string()), "").unwrap();
        }
        let withheld = WithheldFiles::walk([dir.path().to_owned()], &[]);
        assert_eq!(withheld.len(), MAX_WITHHELD_FILES);
        assert!(withheld.truncated());
        // Exactly at the cap: nothing left out.
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(MAX_WITHHELD_FILES - 1) {
            std::fs::write(dir.path().join(i.to_string()), "").unwrap();
        }
        let withheld = WithheldFiles::walk([dir.path().to_owned()], &[]);
        assert_eq!(withheld.len(), MAX_WITHHELD_FILES);
        assert!(!withheld.truncated());
    }
}
