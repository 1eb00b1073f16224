//! `[runtime] substrate_fingerprint_paths`: what the round stood on, before and after it
//! (`round_substrate_before` / `round_substrate_after`: git `HEAD` and a hash of the
//! matching files), so an operator can see which rounds changed what (the reference
//! system's feature; docs/configuration.md).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

use crate::tree_file::{regular_file_sha256, Symlink};

/// The sha256 (64 hex digits, as the reference system writes it) fingerprint of the files under `work_dir` matching `patterns`
/// (globs relative to `work_dir`): over the sorted, de-duplicated relative paths, each
/// path followed by NUL, the sha256 of its content and a newline. `None` when no pattern
/// matches a readable file. Unreadable files are left out, and so is anything that is not
/// a regular file when opened ([`regular_file_sha256`]: bounded, never blocking).
pub(crate) fn fingerprint(work_dir: &Path, patterns: &[String]) -> Option<String> {
    let mut files: Vec<PathBuf> = patterns
        .iter()
        .filter_map(|p| glob::glob(&work_dir.join(p).to_string_lossy()).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.dedup();
    let mut hasher = Sha256::new();
    let mut any = false;
    for file in &files {
        let Some(content) = regular_file_sha256(file, Symlink::Follow) else {
            continue;
        };
        let rel = file.strip_prefix(work_dir).unwrap_or(file);
        hasher.update(rel.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update(content);
        hasher.update(b"\n");
        any = true;
    }
    any.then(|| {
        let digest = hasher.finalize();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        hex
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_content_and_names_and_ignores_what_does_not_match() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/a.md"), "a").unwrap();
        std::fs::write(root.join("docs/b.md"), "b").unwrap();
        std::fs::write(root.join("notes.txt"), "n").unwrap();
        let patterns = vec!["docs/*.md".to_owned(), "docs/a.md".to_owned()];
        let first = fingerprint(root, &patterns).unwrap();
        assert!(
            first.len() == 64 && first.bytes().all(|b| b.is_ascii_hexdigit()),
            "{first}"
        );
        std::fs::write(root.join("notes.txt"), "changed").unwrap();
        assert_eq!(fingerprint(root, &patterns).unwrap(), first);
        std::fs::write(root.join("docs/b.md"), "B").unwrap();
        assert_ne!(fingerprint(root, &patterns).unwrap(), first);
        assert_eq!(fingerprint(root, &["*.rs".to_owned()]), None);
        assert_eq!(fingerprint(root, &[]), None);
    }
}
