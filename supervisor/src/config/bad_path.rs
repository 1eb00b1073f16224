//! Why a path a config key names cannot be used ([`BadPath`]): shared by the resolvers of
//! `[prompt]`, `[agent.sandbox]`, `[goal]` and the hosts' `read_paths`.

use std::path::PathBuf;

/// A path that starts with `~` while `HOME` is not set.
#[derive(Debug, thiserror::Error)]
#[error("uses ~ but HOME is not set; give an absolute path")]
pub(super) struct HomeNotSet;

/// Why a path a key names cannot be used. Display is the message after the key.
#[derive(Debug, thiserror::Error)]
pub(super) enum BadPath {
    /// It starts with `~` and `HOME` is not set.
    #[error(transparent)]
    Home(#[from] HomeNotSet),
    /// It cannot be made canonical (it does not exist, or a component cannot be read).
    #[error("{text:?} ({}): {source}; expected an existing file or directory", path.display())]
    Missing {
        /// The path as the file writes it.
        text: String,
        /// The path expanded.
        path: PathBuf,
        /// Why `canonicalize` failed.
        source: std::io::Error,
    },
    /// It covers (or, for a write grant, lies in) a path its holder must not reach.
    #[error("{text:?} covers {}, which {who} must not {verb}; name a narrower directory{hint}", protected.display())]
    Covers {
        /// The path as the file writes it.
        text: String,
        /// The protected path it covers.
        protected: PathBuf,
        /// Who the grant is for: `a host`, `the agent`.
        who: &'static str,
        /// What it must not do there: `read`, `write`.
        verb: &'static str,
        /// Advice after the message (empty, or starting with a space).
        hint: &'static str,
    },
    /// The first prompt file (the one that must exist) is missing or not a regular file
    /// (`what` says which: a FIFO, a directory, …).
    #[error("{} {what}; expected a readable prompt file", path.display())]
    NoPromptFile {
        /// The path expanded.
        path: PathBuf,
        /// What is there: `does not exist`, `is a directory`, `is not a regular file`.
        what: &'static str,
    },
}
