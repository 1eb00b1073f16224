//! Git: the only place that runs it, and what the supervisor keeps of the repository
//! (docs/security.md, "The supervisor is not the agent's deputy").
//!
//! - [`repo`]: `Repo`, every git call (bounded; repository hooks disabled, no program of
//!   any repository run); [`place`]: the repository it is pinned to, found at boot and
//!   held by identity; [`operation`]: a rebase, merge… under way (the tree is then left
//!   untouched).
//! - [`config_keys`]: the reviewed git config keys that run a program; [`config_watch`]:
//!   those a round added to the repository's config and its nested repositories',
//!   reverted after it;
//!   [`exec_surface`]: the tracked files that run in CI or an editor, told when a round
//!   changes them; [`index_file`]: the index read in process (the flags that hide a file
//!   from `git status`, the gitlinks).
//! - [`stash_journal`]: every stash made, kept in the state dir; [`attribution`]: whose
//!   dirt it is (the round's, the operator's, never the supervisor's own files or the
//!   paths hosts own).
//! - [`no_terminal`]: every git the supervisor starts is kept from a terminal;
//!   [`path_name`]: file names as lossless text (non-UTF-8 names in git's quoted form).

pub(crate) mod attribution;
pub(crate) mod config_keys;
pub(crate) mod config_watch;
pub(crate) mod exec_surface;
pub(crate) mod index_file;
pub(crate) mod no_terminal;
pub(crate) mod operation;
pub(crate) mod path_name;
pub(crate) mod place;
pub(crate) mod repo;
pub(crate) mod stash_journal;

/// Tests: `git <args…>` in `dir` with a test identity; panics unless it succeeds; its
/// standard output.
#[cfg(test)]
pub(crate) fn test_git(dir: &std::path::Path, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    out.stdout
}
