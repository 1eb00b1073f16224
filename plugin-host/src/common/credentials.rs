//! The credential stores under the home directory that no grant may cover by implication,
//! for hosts (an operator's `read_paths`) and the agent alike (docs/security.md).

use std::path::{Path, PathBuf};

/// Reviewed data: credential directories and files under the home directory that no grant
/// may cover implicitly (docs/security.md). An operator's `read_paths` entry that contains
/// one of them (`~`, `~/.config`) is refused; naming one exactly (or a path inside it) is
/// a deliberate choice and allowed.
pub const CREDENTIAL_PATHS: &[(&str, &str)] = &[
    (".ssh", "SSH keys"),
    (".aws", "AWS credentials"),
    (".config/gcloud", "Google Cloud credentials"),
    (".claude", "Claude Code credentials"),
    (".claude.json", "Claude Code account state"),
    (".gnupg", "GnuPG keys"),
    (".netrc", "passwords for hosts"),
    (".docker", "registry credentials"),
    (".kube", "Kubernetes credentials"),
    (".config/gh", "GitHub CLI token"),
    (".azure", "Azure credentials"),
    (".git-credentials", "git's stored passwords"),
    (".gemini", "Gemini CLI credentials"),
];

/// The first of `protected` that `path` covers without naming it: `path` is a strict
/// ancestor of it. `None` when `path` is safe to grant read-only.
pub fn covers_protected<'a>(path: &Path, protected: &'a [PathBuf]) -> Option<&'a PathBuf> {
    protected
        .iter()
        .find(|p| p.starts_with(path) && p.as_path() != path)
}
