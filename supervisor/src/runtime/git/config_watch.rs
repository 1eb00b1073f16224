//! The repository's config, watched across a round (docs/security.md, "What runs later:
//! the watched tier"). `.git/config` stays writable for the agent (its `remote add`,
//! `push -u`, `config user.email`, `worktree add`, `submodule update` write it), but a key
//! of the reviewed list ([`git_config_keys::watched`]: it runs a program, moves the work
//! tree or includes another file) that the round added or changed is reverted after the
//! round — restored to its values before, or removed — so the operator's next plain `git
//! status` runs nothing the agent planted. Keys present before the round (the
//! operator's) stay; a key the round only removed stays removed (nothing runs).
//!
//! Before each round [`ConfigBefore::record`] keeps the bytes and entries of every file
//! the repository's config is read from: the common dir's `config`, the git dir's
//! `config.worktree`, and each file an `include.path` or `includeIf.<condition>.path` in
//! them names (whatever its condition, transitively), present or not. After the round
//! [`revert`] compares each file with what it was: an unchanged file costs no git
//! process; a changed one is listed by git (`git config --file - --no-includes --list`)
//! and each watched key that differs is set back with git's own writer (`git config
//! --file`), so comments and every other key survive. Includes are settled first: a
//! file only a reverted include named is no longer read and is left alone (it may be the
//! agent's work in the tree). A file that is a symbolic link is never written through (its
//! target could be any file): a link the round made or re-pointed is undone — the file
//! before the round put back, what the link led to never read into the tree —; the
//! operator's own link (leading where it led before the round) is left, a watched key in it
//! told with the error. Nothing is written through the path by name ([`spot`]): a link
//! the round planted on the way to a file's directory is set aside when it lies in the
//! tree or the repository, else the include naming the file is dropped; keys are rewritten
//! by git on a private copy and written back under the file's lock, and a revert that
//! still cannot be written sets the file aside with its bytes before the round put back.
//!
//! The repositories nested in the tree that the operator's `git status` goes into
//! ([`nested`]: gitlinks, untracked nested repositories) are watched the same way, by the
//! same code over their own config files ([`ConfigBefore::record_nested`],
//! [`revert_nested`]); one the round made has no record, so each watched key it holds
//! counts as added. One whose config lies where the watch may not write is never written:
//! its `.git` is set aside when the round made it or changed where it leads.

use agent_runner_protocol::limits::truncate_chars;
use agent_runner_protocol::redact::redact;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::runtime::git::config_keys::{self as git_config_keys, Effect};
use crate::runtime::git::repo::{GitError, Repo};
use crate::tree_file::{open_regular, read_regular_at_most, Symlink};

mod nested;
mod spot;

use nested::{Nested, Reach};
use spot::{Fix, Spot, Way};

/// How deep includes are followed (git's own limit).
const MAX_INCLUDE_DEPTH: usize = 10;
/// A config file larger than this is not read (nor reverted): told as an error.
const MAX_CONFIG_BYTES: u64 = 16 << 20;
/// The value a reverted key had is shown cut at this many characters.
pub(crate) const SHOWN_VALUE_CHARS: usize = 80;

/// One config file as it was seen.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Seen {
    path: PathBuf,
    /// Its bytes (through a final link), `None` when it does not exist.
    bytes: Option<Vec<u8>>,
    /// Where the path leads when it is a symbolic link.
    link: Option<PathBuf>,
    /// Its entries ([`Repo::config_text_entries`]).
    entries: Vec<(String, Option<String>)>,
    /// How its path resolved: what the revert writes through must resolve the same
    /// ([`spot::settle`]); the default (a record of an older version) is a path that did
    /// not resolve.
    #[serde(default)]
    way: Way,
}

/// The repository's config files before a round, and those of the repositories nested in
/// its tree ([`ConfigBefore::record_nested`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct ConfigBefore {
    files: Vec<Seen>,
    /// The nested repositories found before the round (their files are in `files`).
    #[serde(default)]
    nested: Vec<Nested>,
    /// The directories of those found past the limit before the round (not watched).
    #[serde(default)]
    past_limit: Vec<PathBuf>,
}

/// Where the record before a round is kept while the agent runs, in the state dir (out of
/// the agent's reach): a supervisor killed during a round finds it at its next round and
/// reverts that round's keys then ([`Pending`]).
pub(crate) const PENDING_FILE: &str = "git-config-before.json";

/// Where the record of the last round stays once that round was reverted against, in the
/// state dir (the record of [`PENDING_FILE`], renamed): the entries git listed for each
/// config file's bytes, which the next process (the next `agent-runner round`) reuses for
/// a file whose bytes are byte for byte the same ([`ConfigBefore::record`]'s `last`),
/// saving a git process per round. Nothing else of it is used: a file whose bytes differ,
/// or a record that is missing or unreadable, is listed by git as before.
pub(crate) const SEEN_FILE: &str = "git-config-seen.json";

/// The record of [`PENDING_FILE`] (and [`SEEN_FILE`]): the round and its config before.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Pending {
    /// The round the record was taken for.
    pub round_num: u64,
    /// The config before it.
    pub before: ConfigBefore,
}

/// One key a round added or changed, as reverted (or not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reverted {
    /// The key, as `git config --list` prints it; empty when a whole file could not be
    /// read (`error` says why).
    pub key: String,
    /// `local` or `worktree` (an included file: its includer's).
    pub scope: &'static str,
    /// The file it was set in.
    pub file: PathBuf,
    /// The round's value (the last one), secrets redacted, cut at
    /// [`SHOWN_VALUE_CHARS`]; `None` for a key without a value.
    pub value: Option<String>,
    /// `removed` (none before), `restored` (the values before are back), `set_aside` (the
    /// file could not be read, or its reverted keys not written back: moved aside, `value`
    /// where, the file before the round put back), `link_undone` (the round made the file,
    /// or a directory on the way to it, a symbolic link, `value` its target: the file
    /// before the round put back or the link moved aside), `include_dropped` (the file an
    /// include names now leads elsewhere: the include removed from `file`),
    /// `lock_set_aside` and `permission_restored` (what was cleared so the revert could be
    /// written) or `unread` (the whole file could not be read: `error` says why).
    pub action: &'static str,
    /// Why the key is watched (the reviewed list's why).
    pub why: &'static str,
    /// Why it could not be reverted (it is then as the round left it); `None` when it was.
    pub error: Option<String>,
}

/// What `path` holds now: `(bytes, link)`, bytes `None` when missing, `link` where it
/// leads when it is a symbolic link. Errors: it is not a
/// regular file, is larger than [`MAX_CONFIG_BYTES`], or cannot be read.
fn read(path: &Path) -> Result<(Option<Vec<u8>>, Option<PathBuf>), String> {
    let link = std::fs::read_link(path).ok();
    let bytes =
        read_regular_at_most(path, Symlink::Follow, MAX_CONFIG_BYTES).map_err(|e| {
            match e.kind() {
                std::io::ErrorKind::FileTooLarge => e.to_string(),
                _ => format!("cannot read it: {e}"),
            }
        })?;
    Ok((bytes, link))
}

/// The files `entries` of the config file `file` include, each with the key and value
/// that names it: each `include.path` and `includeif.<condition>.path` value, `~/` from
/// `HOME`, a relative one from `file`'s directory (git's rules).
fn included(file: &Path, entries: &[(String, Option<String>)]) -> Vec<(PathBuf, String, String)> {
    entries
        .iter()
        .filter(|(key, _)| is_include(key))
        .filter_map(|(key, value)| {
            let value = value.as_deref().filter(|v| !v.is_empty())?;
            let path = match value.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME")
                    .map(|home| PathBuf::from(home).join(rest))
                    .unwrap_or_else(|| PathBuf::from(value)),
                None => file
                    .parent()
                    .map_or_else(|| PathBuf::from(value), |dir| dir.join(value)),
            };
            Some((path, key.clone(), value.to_owned()))
        })
        .collect()
}

/// Whether `key` makes git read another file.
fn is_include(key: &str) -> bool {
    git_config_keys::watched(key, ["x"]).is_some_and(|row| row.effect == Effect::Includes)
}

/// `entries` grouped by key, first appearance first, each key's values in file order.
fn by_key(entries: &[(String, Option<String>)]) -> Vec<(&str, Vec<Option<&str>>)> {
    let mut keys: Vec<(&str, Vec<Option<&str>>)> = Vec::new();
    for (key, value) in entries {
        match keys.iter_mut().find(|(k, _)| k == key) {
            Some((_, values)) => values.push(value.as_deref()),
            None => keys.push((key, vec![value.as_deref()])),
        }
    }
    keys
}

/// An entry without a value is boolean `true` to git: how it is compared and written back.
fn text(value: Option<&str>) -> &str {
    value.unwrap_or("true")
}

/// The keys of a file that went from `before` to `after` entries and are reverted: each
/// watched key whose values differ and are not empty now, with its values before, its
/// last value now and its row.
fn to_revert(
    before: &[(String, Option<String>)],
    after: &[(String, Option<String>)],
) -> Vec<(
    String,
    Vec<String>,
    Option<String>,
    &'static git_config_keys::Key,
)> {
    let before = by_key(before);
    let mut found = Vec::new();
    for (key, now) in by_key(after) {
        let then = before
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        if now == then {
            continue;
        }
        let Some(row) = git_config_keys::watched(key, now.iter().map(|v| text(*v))) else {
            continue;
        };
        found.push((
            key.to_owned(),
            then.iter().map(|v| text(*v).to_owned()).collect(),
            now.last().copied().flatten().map(str::to_owned),
            row,
        ));
    }
    // Includes first: a file only a reverted include named is then no longer read.
    found.sort_by_key(|(.., row)| row.effect != Effect::Includes);
    found
}

impl ConfigBefore {
    /// Whether it holds no file (the default: no record taken yet).
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The record [`SEEN_FILE`] in `state_dir` keeps, for [`ConfigBefore::record`]'s
    /// `last`; empty when there is none or it cannot be read.
    pub(crate) fn last_seen(state_dir: &Path) -> ConfigBefore {
        crate::record::state::read_json::<Pending>(&state_dir.join(SEEN_FILE))
            .ok()
            .flatten()
            .map(|seen| seen.before)
            .unwrap_or_default()
    }

    /// The repository's config files now (see the module's doc). `last`, the previous
    /// round's record, saves a git process for each file whose bytes are unchanged and
    /// whose entries it holds.
    /// Errors: git cannot tell where the repository is.
    pub(crate) async fn record(repo: &Repo, last: &ConfigBefore) -> Result<Self, GitError> {
        let mut files: Vec<Seen> = Vec::new();
        let own = repo.config_files().await?;
        record_files(repo, &own, last, &mut files).await;
        Ok(ConfigBefore {
            files,
            nested: Vec::new(),
            past_limit: Vec::new(),
        })
    }

    /// Adds the config files of the repositories nested in the tree now (see
    /// [`nested`]'s doc: the gitlinks of the index, `untracked`, the untracked directories
    /// `git status` listed whole, paths from the top), as [`ConfigBefore::record`] does
    /// the top's. With neither a gitlink nor `untracked`, nothing is read and no git
    /// started. Errors: git cannot tell where the repository is, or the index cannot be
    /// listed.
    pub(crate) async fn record_nested(
        &mut self,
        repo: &Repo,
        last: &ConfigBefore,
        untracked: &[Vec<u8>],
    ) -> Result<(), GitError> {
        let Some((found, own)) = find_nested(repo, untracked).await? else {
            return Ok(());
        };
        for nested in &found.repos {
            record_files(repo, &nested_files(nested, &own), last, &mut self.files).await;
        }
        self.nested = found.repos;
        self.past_limit = found.past_limit.into_iter().map(|n| n.dir).collect();
        Ok(())
    }
}

/// The repositories nested in the tree now ([`nested::find`]) and the top's own config
/// files (canonical); `None`, and nothing read, when the index holds no gitlink and
/// `untracked` is empty. Errors: git cannot tell where the repository is, or the index
/// cannot be listed.
async fn find_nested(
    repo: &Repo,
    untracked: &[Vec<u8>],
) -> Result<Option<(nested::Found, Vec<PathBuf>)>, GitError> {
    let gitlinks = repo.index_marks().await?.gitlinks;
    if gitlinks.is_empty() && untracked.is_empty() {
        return Ok(None);
    }
    let tree = repo.top().await?;
    let own = repo.config_files().await?;
    let found = nested::find(&tree, &roots(&tree, &own), &gitlinks, untracked);
    let own = own.iter().filter_map(|(path, _)| canonical(path)).collect();
    Ok(Some((found, own)))
}

/// `path` with its directory canonical (the file itself need not exist).
fn canonical(path: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(path.parent()?).ok()?;
    Some(dir.join(path.file_name()?))
}

/// The config files of `nested` less the top's own (`own`, canonical): a `.git` file
/// naming the top's git dir gives nothing to watch twice.
fn nested_files(nested: &Nested, own: &[PathBuf]) -> Vec<(PathBuf, &'static str)> {
    nested
        .config_files()
        .into_iter()
        .filter(|(path, _)| !own.contains(path))
        .collect()
}

/// Adds to `files` each of the files `own` (a repository's own config files, with their
/// scope) and the files they include, as they are now (see [`ConfigBefore::record`]).
async fn record_files(
    repo: &Repo,
    own: &[(PathBuf, &'static str)],
    last: &ConfigBefore,
    files: &mut Vec<Seen>,
) {
    let mut queue: Vec<(PathBuf, &'static str, usize)> = own
        .iter()
        .map(|(path, scope)| (path.clone(), *scope, 0))
        .collect();
    while let Some((path, scope, depth)) = queue.pop() {
        if files.iter().any(|f| f.path == path) {
            continue;
        }
        let Ok((bytes, link)) = read(&path) else {
            // Unreadable now: compared as missing, so whatever it holds after the
            // round is the round's.
            files.push(Seen {
                way: spot::way(&path),
                path,
                bytes: None,
                link: None,
                entries: Vec::new(),
            });
            continue;
        };
        // A file known with no entries is listed again: its listing may have failed
        // (a timeout), and that must not stand for its bytes from then on.
        let entries = match last
            .files
            .iter()
            .find(|f| f.path == path && f.bytes == bytes && !f.entries.is_empty())
        {
            Some(known) => known.entries.clone(),
            None => match &bytes {
                Some(b) if !b.is_empty() => repo.config_text_entries(b).await.unwrap_or_default(),
                _ => Vec::new(),
            },
        };
        if depth < MAX_INCLUDE_DEPTH {
            queue.extend(
                included(&path, &entries)
                    .into_iter()
                    .map(|(p, ..)| (p, scope, depth + 1)),
            );
        }
        files.push(Seen {
            way: spot::way(&path),
            path,
            bytes,
            link,
            entries,
        });
    }
}

impl ConfigBefore {
    /// The watched keys set now ([`git_config_keys::watched`]), each once, in file order:
    /// what a round leaves alone as the operator's (`doctor` names them).
    pub(crate) fn watched_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for file in &self.files {
            for (key, values) in by_key(&file.entries) {
                let watched =
                    git_config_keys::watched(key, values.iter().map(|v| text(*v))).is_some();
                if watched && !keys.iter().any(|k| k == key) {
                    keys.push(key.to_owned());
                }
            }
        }
        keys
    }
}

/// An include a file was reached by: the file that names it, the key and its value.
#[derive(Clone, Debug)]
struct Include {
    file: PathBuf,
    key: String,
    value: String,
}

/// A file the repository's config is read from, to look at after the round.
struct Item {
    path: PathBuf,
    /// `local` or `worktree` (an included file: its includer's).
    scope: &'static str,
    depth: usize,
    /// The include that named it; `None` for the repository's own files.
    from: Option<Include>,
}

/// A file looked at after the round: where it lies and the entries git reads from it now.
struct Settled {
    spot: Spot,
    effective: Vec<(String, Option<String>)>,
}

/// Why a whole file is told (`key` empty).
const FILE_WHY: &str = "the file the repository's config is read from";
/// Why a link on the way to a config file is undone.
const DIR_LINK_WHY: &str = "a symbolic link the round made or re-pointed on the way to a file the repository's config is read from: git, and the revert, would reach whatever file it leads to";
/// Why an include is dropped.
const INCLUDE_WHY: &str = "the file this include names now leads elsewhere than before the round, through a symbolic link the supervisor may not undo: never written; the include is removed so git reads that file no more (add it back once the path is as it should be)";
/// Why a file is set aside when its reverted keys could not be written back.
const WRITE_FAILED_WHY: &str = "the reverted keys could not be written back: the file was set aside and its bytes before the round put back, so no key of the round's stays";

impl Reverted {
    /// What was done to the whole `file` (`key` empty, no value, no error).
    fn about(scope: &'static str, file: &Path, action: &'static str, why: &'static str) -> Self {
        Reverted {
            key: String::new(),
            scope,
            file: file.to_owned(),
            value: None,
            action,
            why,
            error: None,
        }
    }

    /// What was done to make a write possible ([`Fix`]).
    fn fix(scope: &'static str, fix: Fix) -> Self {
        let why = match fix.action {
            "lock_set_aside" => "a lock beside the file that was no regular file (git's writer, and the revert, could not take theirs): moved aside",
            _ => "the directory had lost its owner's write permission (git's writer, and the revert, could not write there): given back",
        };
        Reverted {
            value: Some(fix.value),
            ..Reverted::about(scope, &fix.path, fix.action, why)
        }
    }
}

/// `s` cut for an event.
fn shown(s: &str) -> String {
    truncate_chars(s, SHOWN_VALUE_CHARS).to_owned()
}

/// The directories the watch writes in whatever a path looked like before the round: the
/// work tree's top and the directories of the repository's own config files (the git dir,
/// the common dir), canonical.
fn roots(tree: &Path, own: &[(PathBuf, &'static str)]) -> Vec<PathBuf> {
    std::iter::once(tree)
        .chain(own.iter().filter_map(|(path, _)| path.parent()))
        .filter_map(|dir| std::fs::canonicalize(dir).ok())
        .collect()
}

/// Reverts every watched key the round added or changed in the repository's config
/// (`before`: [`ConfigBefore::record`] before the round) and tells each, the failures
/// too. Errors: git cannot tell where the repository is.
pub(crate) async fn revert(repo: &Repo, before: &ConfigBefore) -> Result<Vec<Reverted>, GitError> {
    let tree = repo.top().await?;
    let own = repo.config_files().await?;
    let roots = roots(&tree, &own);
    let mut told = Vec::new();
    revert_repository(repo, &own, &roots, before, &mut told).await;
    Ok(told)
}

/// Why a nested repository's `.git` is set aside.
const NESTED_OUT_WHY: &str = "a nested repository's `.git` the round made or changed, leading to a git dir or common dir the watch may not write (outside the work tree and the repository, or through a symbolic link): set aside, so git takes the directory for a plain one and reads no config of it";
/// Why a nested repository's `.git` is set aside when its index cannot be read.
const NESTED_INDEX_WHY: &str = "a nested repository the round made, or whose index it made unreadable in process (split, sparse, a link, too large): the repositories nested in it cannot be looked for, so its `.git` is set aside and git takes the directory for a plain one";
/// Why a nested repository past the limit, made in the round, is set aside.
const NESTED_PAST_WHY: &str = "a nested repository the round made past the number the watch looks into: its `.git` is set aside, so git takes the directory for a plain one and reads no config of it";
/// Why a nested repository is told when it could not be looked into.
const NESTED_UNREAD_WHY: &str = "a repository nested in the tree, which the operator's `git status` in the top goes into: the repositories nested in it (or, past the limit, it) are not watched";

/// Reverts every watched key the round added or changed in the config of each repository
/// nested in the tree the operator's git may go into ([`nested`]'s doc: the gitlinks of
/// the index now, `untracked`, the untracked directories the `git status` after the round
/// listed whole, paths from the top), as [`revert`] does the top's; a nested repository
/// the round made has no record: each watched key it holds counts as added. A nested
/// repository out of the watch's reach ([`Reach::Out`]) that was not so before the round
/// has its `.git` set aside (`set_aside`); one that was is left. So has one whose own
/// index cannot be read in process (a split index would hide the repositories nested in
/// it), unless it was so before the round (then told as `unread`). With neither a gitlink
/// nor `untracked`, nothing is read and no git started. Errors: git cannot tell where the
/// repository is, or the index cannot be listed.
pub(crate) async fn revert_nested(
    repo: &Repo,
    before: &ConfigBefore,
    untracked: &[Vec<u8>],
) -> Result<Vec<Reverted>, GitError> {
    let mut told = Vec::new();
    let Some((found, own)) = find_nested(repo, untracked).await? else {
        return Ok(told);
    };
    let tree = repo.top().await?;
    let roots = roots(&tree, &repo.config_files().await?);
    for (path, error) in found.unread {
        told.push(Reverted {
            error: Some(error),
            ..Reverted::about("local", &path, "unread", NESTED_UNREAD_WHY)
        });
    }
    // Past the limit: the operator's (there before the round) told once; the round's own
    // set aside, so none of them is a repository the operator's git goes into unwatched.
    let (operators, rounds): (Vec<&Nested>, Vec<&Nested>) =
        found.past_limit.iter().partition(|n| {
            before.past_limit.contains(&n.dir) || before.nested.iter().any(|b| b.dir == n.dir)
        });
    if let Some(first) = operators.first() {
        told.push(Reverted {
            error: Some(format!(
                "more than {} nested repositories: {} of them, there before the round, are not watched",
                nested::MAX_NESTED,
                operators.len()
            )),
            ..Reverted::about("local", &first.entry(), "unread", NESTED_UNREAD_WHY)
        });
    }
    for nested in rounds {
        let why = format!(
            "more than {} nested repositories, this one made in the round",
            nested::MAX_NESTED
        );
        set_aside_entry(nested, &why, NESTED_PAST_WHY, &roots, &mut told);
    }
    for nested in &found.repos {
        match &nested.reach {
            Reach::Config { .. } => {
                let files = nested_files(nested, &own);
                revert_repository(repo, &files, &roots, before, &mut told).await;
                let Some(why) = &nested.index_unread else {
                    continue;
                };
                // The operator's own (its index unreadable before the round too) is told:
                // what is nested in it is not watched.
                if before.nested.contains(nested) {
                    told.push(Reverted {
                        error: Some(why.clone()),
                        ..Reverted::about(
                            "local",
                            &nested.index().unwrap_or_else(|| nested.entry()),
                            "unread",
                            NESTED_UNREAD_WHY,
                        )
                    });
                } else {
                    set_aside_entry(nested, why, NESTED_INDEX_WHY, &roots, &mut told);
                }
            }
            Reach::Out(_) if before.nested.contains(nested) => {}
            Reach::Out(why) => set_aside_entry(nested, why, NESTED_OUT_WHY, &roots, &mut told),
        }
    }
    Ok(told)
}

/// Sets aside the `.git` of `nested`, which the watch cannot follow (`why`, in words;
/// `told_why`, the row's why), with its directory where it was (no link on the way to
/// it: [`nested::find`]).
fn set_aside_entry(
    nested: &Nested,
    why: &str,
    told_why: &'static str,
    roots: &[PathBuf],
    told: &mut Vec<Reverted>,
) {
    let entry = nested.entry();
    let mut row = Reverted::about("local", &entry, "set_aside", told_why);
    let (spot, _) = spot::settle(&entry, &spot::way(&entry), roots);
    match spot {
        Ok(Some(spot)) => {
            let (aside, fixes) = spot.set_aside(None);
            told.extend(fixes.into_iter().map(|fix| Reverted::fix("local", fix)));
            match aside {
                Ok(aside) => {
                    tracing::warn!(
                        "{why}: {} set aside as {}",
                        entry.display(),
                        aside.display()
                    );
                    row.value = Some(shown(&aside.to_string_lossy()));
                }
                Err(e) => row.error = Some(format!("{why}; {e}")),
            }
        }
        Ok(None) => row.error = Some(format!("{why}; its directory is gone")),
        Err(e) => row.error = Some(format!("{why}; {e}")),
    }
    told.push(row);
}

/// Reverts the watched keys the round added or changed in the files `own` (a repository's
/// own config files, with their scope) and the files they include, writing only where
/// [`spot::settle`] allows with `roots`; tells each in `told`.
async fn revert_repository(
    repo: &Repo,
    own: &[(PathBuf, &'static str)],
    roots: &[PathBuf],
    before: &ConfigBefore,
    told: &mut Vec<Reverted>,
) {
    let unrecorded = Way::default();
    let mut visited: HashSet<PathBuf> = HashSet::new();
    let mut moved: HashSet<PathBuf> = HashSet::new();
    let mut settled: HashMap<PathBuf, Settled> = HashMap::new();
    let mut queue: Vec<Item> = own
        .iter()
        .map(|&(ref path, scope)| Item {
            path: path.clone(),
            scope,
            depth: 0,
            from: None,
        })
        .collect();
    while let Some(item) = queue.pop() {
        if !visited.insert(item.path.clone()) {
            if moved.contains(&item.path) {
                told.push(drop_include(repo, &item, &mut settled).await);
            }
            continue;
        }
        let then = before.files.iter().find(|f| f.path == item.path);
        let (spot, undone) = spot::settle(&item.path, then.map_or(&unrecorded, |f| &f.way), roots);
        told.extend(undone.into_iter().map(|(link, target, result)| Reverted {
            value: Some(shown(&target.to_string_lossy())),
            error: result.err(),
            ..Reverted::about(item.scope, &link, "link_undone", DIR_LINK_WHY)
        }));
        let spot = match spot {
            Ok(spot) => spot,
            Err(reason) => {
                tracing::warn!("{reason}");
                moved.insert(item.path.clone());
                told.push(drop_include(repo, &item, &mut settled).await);
                continue;
            }
        };
        let Some(spot) = spot else {
            // Its directory does not resolve: git reads nothing there.
            continue;
        };
        let Some(effective) = revert_file(repo, &item, then, &spot, told).await else {
            continue;
        };
        if item.depth < MAX_INCLUDE_DEPTH {
            queue.extend(
                included(&item.path, &effective)
                    .into_iter()
                    .map(|(path, key, value)| Item {
                        path,
                        scope: item.scope,
                        depth: item.depth + 1,
                        from: Some(Include {
                            file: item.path.clone(),
                            key,
                            value,
                        }),
                    }),
            );
        }
        settled.insert(item.path, Settled { spot, effective });
    }
}

/// Makes git no longer read the file of `item`, whose path now leads elsewhere than
/// before the round: the include that named it is removed from its includer (written like
/// a reverted key, [`rewrite`]), told as `include_dropped`; a repository's own file, which
/// no include names, is told as `unread` with the error.
async fn drop_include(
    repo: &Repo,
    item: &Item,
    settled: &mut HashMap<PathBuf, Settled>,
) -> Reverted {
    let Some(from) = &item.from else {
        return Reverted {
            error: Some(format!(
                "{} now leads elsewhere than before the round: never written",
                item.path.display()
            )),
            ..Reverted::about(item.scope, &item.path, "unread", FILE_WHY)
        };
    };
    let mut told = Reverted {
        key: from.key.clone(),
        value: Some(shown(&redact(&from.value))),
        ..Reverted::about(item.scope, &from.file, "include_dropped", INCLUDE_WHY)
    };
    let Some(includer) = settled.get_mut(&from.file) else {
        told.error = Some("the file that names it could not be written".to_owned());
        return told;
    };
    let values: Vec<String> = includer
        .effective
        .iter()
        .filter(|(k, v)| *k == from.key && v.as_deref() != Some(from.value.as_str()))
        .map(|(_, v)| text(v.as_deref()).to_owned())
        .collect();
    let edits = [(from.key.clone(), values.clone())];
    let (errors, written, _) = rewrite(repo, &includer.spot, &edits).await;
    told.error = errors.into_iter().flatten().next().or(written.err());
    if told.error.is_none() {
        includer.effective.retain(|(k, _)| *k != from.key);
        includer
            .effective
            .extend(values.into_iter().map(|v| (from.key.clone(), Some(v))));
    }
    told
}

/// Reverts the watched keys the round added or changed in the file of `item` (`then`: as
/// it was before the round; `spot`: where it lies, [`spot::settle`]) and tells each in
/// `told`. Returns the entries git reads from it now, for its includes; `None` when they
/// cannot be told (its includes are then not followed).
async fn revert_file(
    repo: &Repo,
    item: &Item,
    then: Option<&Seen>,
    spot: &Spot,
    told: &mut Vec<Reverted>,
) -> Option<Vec<(String, Option<String>)>> {
    let (bytes, link) = match read(&spot.at()) {
        Ok(now) => now,
        Err(error) => {
            // git reads what the watch cannot (a file padded past the limit): a file the
            // round made unreadable to the watch, or one git always reads, is set aside
            // and its bytes before the round put back, never left to run.
            let before = then.and_then(|f| f.bytes.as_deref());
            set_aside_unread(item, spot, before, error, told);
            (Some(before?.to_vec()), None)
        }
    };
    // A link the round made or re-pointed: the file before the round is put back, what
    // the link led to (any file the operator can read) is never copied into the tree.
    let (bytes, link) = match &link {
        Some(target) if then.and_then(|f| f.link.as_ref()) != Some(target) => {
            let error = spot
                .undo_link(
                    then.and_then(|f| f.link.as_deref()),
                    then.and_then(|f| f.bytes.as_deref()),
                )
                .err();
            told.push(Reverted {
                value: Some(shown(&target.to_string_lossy())),
                error,
                ..Reverted::about(item.scope, &item.path, "link_undone", "a symbolic link the round made where the repository's config is read from: git would read whatever file it names")
            });
            (
                then.and_then(|f| f.bytes.clone()),
                then.and_then(|f| f.link.clone()),
            )
        }
        _ => (bytes, link),
    };
    let then_entries = then.map(|f| f.entries.as_slice()).unwrap_or_default();
    if bytes.as_ref() == then.and_then(|f| f.bytes.as_ref()) {
        return Some(then_entries.to_vec());
    }
    let now = match &bytes {
        Some(b) if !b.is_empty() => match repo.config_text_entries(b).await {
            Ok(entries) => entries,
            Err(err) => {
                told.push(Reverted {
                    error: Some(format!("git cannot read it: {}", err.detail)),
                    ..Reverted::about(item.scope, &item.path, "unread", FILE_WHY)
                });
                return None;
            }
        },
        _ => Vec::new(),
    };
    let found = to_revert(then_entries, &now);
    if found.is_empty() {
        return Some(now);
    }
    // A link is never written through (its target could be any file); one left here leads
    // where it led before the round: the operator's, left alone.
    let unwritable = link.is_some().then(|| {
        "the file is the operator's symbolic link, which the supervisor never writes through: remove the key yourself".to_owned()
    });
    Some(write_back(repo, item, spot, then, now, found, unwritable, told).await)
}

/// Tells the file of `item`, which the watch cannot read (`error`), and, when the round
/// changed it (`before`: its bytes before the round) or git always reads it, sets it aside
/// and puts those bytes back ([`Spot::set_aside`]).
fn set_aside_unread(
    item: &Item,
    spot: &Spot,
    before: Option<&[u8]>,
    error: String,
    told: &mut Vec<Reverted>,
) {
    let mut unread = Reverted {
        error: Some(error),
        ..Reverted::about(item.scope, &item.path, "unread", FILE_WHY)
    };
    if before.is_some() || item.depth == 0 {
        let (aside, fixes) = spot.set_aside(before);
        told.extend(fixes.into_iter().map(|fix| Reverted::fix(item.scope, fix)));
        match aside {
            Ok(aside) => {
                tracing::warn!(
                    "{}: {}; set aside as {}",
                    item.path.display(),
                    unread.error.take().unwrap_or_default(),
                    aside.display()
                );
                unread.action = "set_aside";
                unread.value = Some(shown(&aside.to_string_lossy()));
            }
            Err(e) => {
                unread.error = Some(format!("{}; {e}", unread.error.unwrap_or_default()));
            }
        }
    }
    told.push(unread);
}

/// One key to revert: the key, its values before, its last value now, its row.
type Found = (
    String,
    Vec<String>,
    Option<String>,
    &'static git_config_keys::Key,
);

/// Writes the keys `found` back in the file of `item` at `spot` (`now`: its entries now;
/// `unwritable`: why it may not be written, for every key) and tells each; when that
/// fails, the file is set aside and its bytes before the round (`then`) put back
/// ([`Spot::set_aside`]), so no key of the round's stays. Returns the entries git reads
/// from it now.
#[allow(clippy::too_many_arguments)]
async fn write_back(
    repo: &Repo,
    item: &Item,
    spot: &Spot,
    then: Option<&Seen>,
    now: Vec<(String, Option<String>)>,
    found: Vec<Found>,
    unwritable: Option<String>,
    told: &mut Vec<Reverted>,
) -> Vec<(String, Option<String>)> {
    let edits: Vec<(String, Vec<String>)> = found
        .iter()
        .map(|(key, values, ..)| (key.clone(), values.clone()))
        .collect();
    let mut errors: Vec<Option<String>> = vec![unwritable.clone(); edits.len()];
    let mut effective = now;
    if unwritable.is_none() {
        let (refused, written, fixes) = rewrite(repo, spot, &edits).await;
        told.extend(fixes.into_iter().map(|fix| Reverted::fix(item.scope, fix)));
        let failed = written
            .err()
            .or_else(|| refused.iter().flatten().next().cloned());
        match failed {
            None => {
                for (key, values) in &edits {
                    effective.retain(|(k, _)| k != key);
                    effective.extend(values.iter().map(|v| (key.clone(), Some(v.clone()))));
                }
            }
            Some(error) => {
                let before = then.and_then(|f| f.bytes.as_deref());
                let (aside, fixes) = spot.set_aside(before);
                told.extend(fixes.into_iter().map(|fix| Reverted::fix(item.scope, fix)));
                match aside {
                    Ok(aside) => {
                        tracing::warn!(
                            "{}: {error}; set aside as {}",
                            item.path.display(),
                            aside.display()
                        );
                        told.push(Reverted {
                            value: Some(shown(&aside.to_string_lossy())),
                            ..Reverted::about(item.scope, &item.path, "set_aside", WRITE_FAILED_WHY)
                        });
                        effective = then.map(|f| f.entries.clone()).unwrap_or_default();
                    }
                    Err(e) => errors = vec![Some(format!("{error}; {e}")); edits.len()],
                }
            }
        }
    }
    for ((key, values, value, row), error) in found.into_iter().zip(errors) {
        told.push(Reverted {
            key,
            scope: item.scope,
            file: item.path.clone(),
            value: value.map(|v| shown(&redact(&v))),
            action: if values.is_empty() {
                "removed"
            } else {
                "restored"
            },
            why: row.why,
            error,
        });
    }
    effective
}

/// The file at `spot` with each of `edits` (`(key, values)`, [`Repo::config_file_set`])
/// made by git's own writer on a private copy of its bytes now, then written back with
/// [`Spot::put`] (never through a link, nor by git at the file's path). Returns one error
/// per edit git refused (`None`: made), the write-back's result (nothing is written back
/// when an edit was refused) and what was done to make it possible.
async fn rewrite(
    repo: &Repo,
    spot: &Spot,
    edits: &[(String, Vec<String>)],
) -> (Vec<Option<String>>, Result<(), String>, Vec<Fix>) {
    let mut refused = vec![None; edits.len()];
    let copy = match private_copy(spot) {
        Ok(copy) => copy,
        Err(e) => return (refused, Err(e), Vec::new()),
    };
    let file = copy.path().join("config");
    for ((key, values), refused) in edits.iter().zip(refused.iter_mut()) {
        *refused = repo
            .config_file_set(&file, key, values)
            .await
            .err()
            .map(|e| e.detail);
    }
    if refused.iter().any(Option::is_some) {
        return (refused, Ok(()), Vec::new());
    }
    let (written, fixes) = match std::fs::read(&file) {
        Ok(bytes) => spot.put(&bytes),
        Err(e) => (
            Err(format!("reading the private copy failed: {e}")),
            Vec::new(),
        ),
    };
    (refused, written, fixes)
}

/// A private directory (`0700`, the system's temporary directory) holding `config`, a copy
/// of the file at `spot` as it is now (a regular file, read without following a link).
/// Errors: the reason, in words.
fn private_copy(spot: &Spot) -> Result<tempfile::TempDir, String> {
    let copied = (|| {
        let mut bytes = Vec::new();
        open_regular(&spot.at(), Symlink::Refuse)?
            .take(MAX_CONFIG_BYTES + 1)
            .read_to_end(&mut bytes)?;
        let dir = tempfile::Builder::new()
            .prefix("agent-runner-config-")
            .tempdir()?;
        std::fs::write(dir.path().join("config"), bytes)?;
        Ok::<_, std::io::Error>(dir)
    })();
    copied.map_err(|e| format!("copying it to revert its keys failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_owned)))
            .collect()
    }

    #[test]
    fn added_and_changed_program_keys_are_reverted_the_rest_stays() {
        let before = entries(&[
            ("core.pager", Some("less")),
            ("user.email", Some("op@x")),
            ("credential.helper", Some("store")),
        ]);
        let after = entries(&[
            ("core.pager", Some("less")),
            ("user.email", Some("agent@x")),
            ("credential.helper", Some("store")),
            ("credential.helper", Some("!./steal")),
            ("remote.origin.url", Some("https://x.example/b.git")),
            ("core.fsmonitor", Some("./m")),
            ("include.path", Some("evil.inc")),
            ("alias.x", Some("!id")),
        ]);
        let found: Vec<(String, Vec<String>)> = to_revert(&before, &after)
            .into_iter()
            .map(|(k, v, ..)| (k, v))
            .collect();
        assert_eq!(
            found,
            [
                ("include.path".to_owned(), vec![]),
                ("credential.helper".to_owned(), vec!["store".to_owned()]),
                ("remote.origin.url".to_owned(), vec![]),
                ("core.fsmonitor".to_owned(), vec![]),
                ("alias.x".to_owned(), vec![]),
            ]
        );
        // Removed only: nothing runs, nothing is restored.
        assert!(to_revert(&before, &entries(&[("user.email", Some("op@x"))])).is_empty());
    }

    /// A new repository in a temporary directory (kept while the first is held) and its
    /// canonical path.
    fn new_repository() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        assert!(git(&dir, &["init", "-q", "."]).status.success());
        (tmp, dir)
    }

    /// The supervisor's view of the repository at `dir`.
    fn repo_at(dir: &Path) -> Repo {
        Repo::new(dir, crate::runtime::git::attribution::OwnFiles::default())
    }

    /// `git args` in `dir`, as the operator types it (no override of ours).
    fn git(dir: &Path, args: &[&str]) -> std::process::Output {
        std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap()
    }

    /// A repository whose config plants an fsmonitor hook after `record`, and whether the
    /// operator's plain `git status` then ran it, with and without [`revert`].
    async fn planted_fsmonitor_runs(revert_it: bool) -> (bool, Vec<Reverted>, String) {
        let (_tmp, dir) = new_repository();
        git(&dir, &["config", "core.pager", "less -R"]);
        let repo = repo_at(&dir);
        let before = ConfigBefore::record(&repo, &ConfigBefore::default())
            .await
            .unwrap();
        // The round: the agent's own keys and a planted hook.
        let marker = dir.join("../ran-fsmonitor");
        let hook = dir.join(".git/monitor.sh");
        std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        git(&dir, &["config", "user.email", "agent@example.com"]);
        git(&dir, &["config", "core.fsmonitor", hook.to_str().unwrap()]);
        // A lock left to make git's writer refuse the revert.
        std::fs::write(dir.join(".git/config.lock"), "").unwrap();
        let told = if revert_it {
            revert(&repo, &before).await.unwrap()
        } else {
            Vec::new()
        };
        let _ = std::fs::remove_file(&marker);
        assert!(git(&dir, &["status"]).status.success());
        let ran = marker.exists();
        let _ = std::fs::remove_file(&marker);
        let config = std::fs::read_to_string(dir.join(".git/config")).unwrap();
        (ran, told, config)
    }

    /// The kept record ([`SEEN_FILE`]) is used only for a file of the same bytes: here
    /// its entries are made up (a key the file does not hold), so whether they show tells
    /// whether the record was used instead of git's listing.
    #[tokio::test(flavor = "current_thread")]
    async fn the_kept_record_is_used_for_the_same_bytes_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        let state_dir = tmp.path().join("state");
        assert!(git(&dir, &["init", "-q", "."]).status.success());
        git(&dir, &["config", "core.pager", "less -R"]);
        let config = dir.join(".git/config");
        let repo = repo_at(&dir);
        let keep = |bytes: Vec<u8>| {
            let made_up = Seen {
                path: config.clone(),
                bytes: Some(bytes),
                link: None,
                entries: vec![("made.up".to_owned(), Some("kept".to_owned()))],
                way: Way::default(),
            };
            let pending = Pending {
                round_num: 1,
                before: ConfigBefore {
                    files: vec![made_up],
                    ..ConfigBefore::default()
                },
            };
            crate::record::state::write_json_atomic(&state_dir.join(SEEN_FILE), &pending).unwrap();
        };
        let keys = |before: &ConfigBefore| -> Vec<String> {
            before
                .files
                .iter()
                .filter(|f| f.path == config)
                .flat_map(|f| f.entries.iter().map(|(k, _)| k.clone()))
                .collect()
        };
        // No record: git lists the file.
        assert!(ConfigBefore::last_seen(&state_dir).is_empty());
        let listed = ConfigBefore::record(&repo, &ConfigBefore::last_seen(&state_dir))
            .await
            .unwrap();
        assert!(keys(&listed).contains(&"core.pager".to_owned()));
        // The same bytes: the record's entries are taken (the control: reuse is real).
        keep(std::fs::read(&config).unwrap());
        let reused = ConfigBefore::record(&repo, &ConfigBefore::last_seen(&state_dir))
            .await
            .unwrap();
        assert_eq!(keys(&reused), ["made.up"]);
        // One byte of difference: listed by git again, the record ignored.
        let mut other = std::fs::read(&config).unwrap();
        other.push(b'\n');
        keep(other);
        let relisted = ConfigBefore::record(&repo, &ConfigBefore::last_seen(&state_dir))
            .await
            .unwrap();
        assert!(!keys(&relisted).contains(&"made.up".to_owned()));
        assert!(keys(&relisted).contains(&"core.pager".to_owned()));
        // A record of the same bytes without entries (a listing that failed) is not used.
        let mut nothing = ConfigBefore::last_seen(&state_dir);
        nothing.files[0].bytes = Some(std::fs::read(&config).unwrap());
        nothing.files[0].entries.clear();
        let relisted = ConfigBefore::record(&repo, &nothing).await.unwrap();
        assert!(keys(&relisted).contains(&"core.pager".to_owned()));
        // A record that cannot be read is no record.
        std::fs::write(state_dir.join(SEEN_FILE), b"{not json").unwrap();
        assert!(ConfigBefore::last_seen(&state_dir).is_empty());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_planted_fsmonitor_is_reverted_and_the_operators_status_runs_nothing() {
        let (ran, told, config) = planted_fsmonitor_runs(true).await;
        assert!(!ran, "the operator's git status ran the planted hook");
        assert_eq!(told.len(), 1, "{told:?}");
        assert_eq!(told[0].key, "core.fsmonitor");
        assert_eq!((told[0].scope, told[0].action), ("local", "removed"));
        assert_eq!(told[0].error, None);
        assert!(config.contains("agent@example.com"), "{config}");
        assert!(config.contains("less -R"), "{config}");
        // The control: the same plant, not reverted, runs at the operator's status.
        let (ran, _, _) = planted_fsmonitor_runs(false).await;
        assert!(
            ran,
            "the control's hook did not run: the test proves nothing"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn includes_are_followed_a_new_one_reverted_and_links_never_written_through() {
        let (_tmp, dir) = new_repository();
        let git_dir = dir.join(".git");
        // The operator's own include, present before the round.
        std::fs::write(git_dir.join("mine.inc"), "[core]\n\tpager = less\n").unwrap();
        git(&dir, &["config", "include.path", "mine.inc"]);
        let repo = repo_at(&dir);
        let before = ConfigBefore::record(&repo, &ConfigBefore::default())
            .await
            .unwrap();
        // The round: a key added to the operator's included file, a new include of the
        // agent's, and a `config.worktree` that is a link to a file of the agent's.
        std::fs::write(
            git_dir.join("mine.inc"),
            "[core]\n\tpager = less\n\tsshCommand = ./ssh\n",
        )
        .unwrap();
        std::fs::write(git_dir.join("evil.inc"), "[core]\n\tfsmonitor = ./m\n").unwrap();
        git(&dir, &["config", "--add", "include.path", "evil.inc"]);
        let elsewhere = dir.join("elsewhere.cfg");
        std::fs::write(&elsewhere, "[alias]\n\tx = !id\n[secret]\n\tkey = S3CRET\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, git_dir.join("config.worktree")).unwrap();
        let mut told = revert(&repo, &before).await.unwrap();
        told.sort_by(|a, b| a.key.cmp(&b.key));
        let summary: Vec<(&str, &str, &str, bool)> = told
            .iter()
            .map(|r| {
                (
                    r.key.as_str(),
                    r.file.file_name().unwrap().to_str().unwrap(),
                    r.action,
                    r.error.is_none(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("", "config.worktree", "link_undone", true),
                ("core.sshcommand", "mine.inc", "removed", true),
                ("include.path", "config", "restored", true),
            ],
            "{told:?}"
        );
        assert_eq!(told[0].scope, "worktree");
        assert_eq!(told[1].scope, "local");
        // The agent's included file is no longer read, and is left as it was.
        let config = std::fs::read_to_string(git_dir.join("config")).unwrap();
        assert!(
            config.contains("mine.inc") && !config.contains("evil.inc"),
            "{config}"
        );
        assert!(std::fs::read_to_string(git_dir.join("evil.inc"))
            .unwrap()
            .contains("fsmonitor"));
        let mine = std::fs::read_to_string(git_dir.join("mine.inc")).unwrap();
        assert!(
            mine.contains("pager = less") && !mine.contains("sshCommand"),
            "{mine}"
        );
        // The link the round made is gone (there was no file before): nothing of what it
        // led to was copied into the repository, and its target was not written through.
        assert!(std::fs::symlink_metadata(git_dir.join("config.worktree")).is_err());
        assert!(
            !String::from_utf8_lossy(&std::fs::read(git_dir.join("config")).unwrap())
                .contains("S3CRET")
        );
        assert_eq!(
            std::fs::read_to_string(&elsewhere).unwrap(),
            "[alias]\n\tx = !id\n[secret]\n\tkey = S3CRET\n"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_config_swapped_for_a_link_gets_its_bytes_before_back_and_nothing_of_the_target() {
        let (tmp, dir) = new_repository();
        let config = dir.join(".git/config");
        let before_bytes = std::fs::read(&config).unwrap();
        let repo = repo_at(&dir);
        let before = ConfigBefore::record(&repo, &ConfigBefore::default())
            .await
            .unwrap();
        // The round: `.git/config` swapped for a link to a file the agent cannot read,
        // which parses as config and sets a watched key (the copy a revert once made
        // carried the rest of it into the tree).
        let secret = tmp.path().join("id_rsa");
        std::fs::write(
            &secret,
            "[core]\n\tfsmonitor = x\n[secret]\n\tkey = S3CRET\n",
        )
        .unwrap();
        std::fs::remove_file(&config).unwrap();
        std::os::unix::fs::symlink(&secret, &config).unwrap();
        let told = revert(&repo, &before).await.unwrap();
        let summary: Vec<(&str, &str, Option<&str>)> = told
            .iter()
            .map(|r| (r.key.as_str(), r.action, r.value.as_deref()))
            .collect();
        assert_eq!(
            summary,
            [("", "link_undone", Some(secret.to_str().unwrap()))],
            "{told:?}"
        );
        assert!(!std::fs::symlink_metadata(&config)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&config).unwrap(), before_bytes);
        assert!(std::fs::read_to_string(&secret).unwrap().contains("S3CRET"));
    }

    #[test]
    fn includes_resolve_as_git_does() {
        let file = Path::new("/p/.git/config");
        let found = included(
            file,
            &entries(&[
                ("include.path", Some("extra.inc")),
                ("includeif.onbranch:main.path", Some("/abs/x")),
                ("include.path", Some("")),
                ("user.name", Some("n")),
            ]),
        );
        let paths: Vec<PathBuf> = found.into_iter().map(|(p, ..)| p).collect();
        assert_eq!(
            paths,
            [PathBuf::from("/p/.git/extra.inc"), PathBuf::from("/abs/x")]
        );
    }

    /// `(key, file's name, action, no error)` of each row told, in order.
    fn rows(told: &[Reverted]) -> Vec<(String, String, &'static str, bool)> {
        told.iter()
            .map(|r| {
                (
                    r.key.clone(),
                    r.file
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    r.action,
                    r.error.is_none(),
                )
            })
            .collect()
    }

    /// The names in `dir` that start with `prefix`.
    fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
            .map(|e| e.path())
            .collect()
    }

    /// A repository in `<tmp>/repo` and the operator's home `<tmp>/home` with its
    /// `.gitconfig` (an editor and a credential helper) and a directory `big` (what a
    /// set-aside once renamed): returns the repository, the home and the `.gitconfig`'s
    /// bytes.
    fn repo_and_home(tmp: &Path) -> (PathBuf, PathBuf, Vec<u8>) {
        let (dir, home) = (tmp.join("repo"), tmp.join("home"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(home.join("big")).unwrap();
        std::fs::write(home.join("big/kept"), "x").unwrap();
        let gitconfig = b"[core]\n\teditor = vi\n[credential]\n\thelper = store\n".to_vec();
        std::fs::write(home.join(".gitconfig"), &gitconfig).unwrap();
        assert!(git(&dir, &["init", "-q", "."]).status.success());
        (dir, home, gitconfig)
    }

    /// The agent replaces the tree's `shared/`, which two of the operator's includes name
    /// (`shared/.gitconfig`, with a `core.editor` of its own, and `shared/big`), by a link
    /// to the operator's home: the revert sets the link aside and writes, renames and
    /// unsets nothing in the home (under the old code `~/.gitconfig` lost its
    /// `credential.helper` and got the tree's editor, and `~/big` was renamed aside).
    #[tokio::test(flavor = "current_thread")]
    async fn a_directory_link_planted_on_an_include_path_is_set_aside_and_the_home_never_written() {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = tmp.path().canonicalize().unwrap();
        let (dir, home, gitconfig) = repo_and_home(&tmp);
        std::fs::create_dir(dir.join("shared")).unwrap();
        std::fs::write(dir.join("shared/.gitconfig"), "[core]\n\teditor = ./ed\n").unwrap();
        std::fs::write(dir.join("shared/big"), "[user]\n\tname = n\n").unwrap();
        git(&dir, &["config", "include.path", "../shared/.gitconfig"]);
        git(&dir, &["config", "--add", "include.path", "../shared/big"]);
        let repo = repo_at(&dir);
        let before = ConfigBefore::record(&repo, &ConfigBefore::default())
            .await
            .unwrap();
        // The round.
        std::fs::remove_dir_all(dir.join("shared")).unwrap();
        std::os::unix::fs::symlink(&home, dir.join("shared")).unwrap();
        // The control: the path the revert once wrote through leads to the home now.
        assert_eq!(
            std::fs::read(dir.join("shared/.gitconfig")).unwrap(),
            gitconfig
        );
        let told = revert(&repo, &before).await.unwrap();
        assert_eq!(
            rows(&told),
            [(String::new(), "shared".to_owned(), "link_undone", true)],
            "{told:?}"
        );
        assert_eq!(told[0].file, dir.join("shared"));
        assert_eq!(told[0].value.as_deref(), home.to_str());
        assert_eq!(std::fs::read(home.join(".gitconfig")).unwrap(), gitconfig);
        assert!(home.join("big/kept").is_file());
        assert_eq!(named(&home, "big").len(), 1);
        assert_eq!(named(&home, ".gitconfig").len(), 1);
        // The link lies aside in the tree, nothing lost; `shared` is no more.
        let aside = named(&dir, "shared.agent-runner-unread-");
        assert_eq!(aside.len(), 1);
        assert_eq!(std::fs::read_link(&aside[0]).unwrap(), home);
        assert!(std::fs::symlink_metadata(dir.join("shared")).is_err());
        // The operator's includes stay (their files are gone with the agent's deletion).
        let config = std::fs::read_to_string(dir.join(".git/config")).unwrap();
        assert!(config.contains("../shared/.gitconfig"), "{config}");
    }

    /// A link of the operator's outside the tree, on the way to an included file, leading
    /// where it led before the round: a key the round added there is reverted through it
    /// (the watch refuses links that changed, not links).
    #[tokio::test(flavor = "current_thread")]
    async fn an_operators_link_outside_the_tree_that_did_not_change_is_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = tmp.path().canonicalize().unwrap();
        let (dir, home, _) = repo_and_home(&tmp);
        std::fs::create_dir_all(home.join("gc/a")).unwrap();
        std::fs::write(home.join("gc/a/x.inc"), "[core]\n\tpager = less\n").unwrap();
        std::os::unix::fs::symlink("a", home.join("gc/cur")).unwrap();
        let include = home.join("gc/cur/x.inc");
        git(&dir, &["config", "include.path", include.to_str().unwrap()]);
        let repo = repo_at(&dir);
        let before = ConfigBefore::record(&repo, &ConfigBefore::default())
            .await
            .unwrap();
        std::fs::write(
            home.join("gc/a/x.inc"),
            "[core]\n\tpager = less\n\tfsmonitor = ./m\n",
        )
        .unwrap();
        let told = revert(&repo, &before).await.unwrap();
        assert_eq!(
            rows(&told),
            [(
                "core.fsmonitor".to_owned(),
                "x.inc".to_owned(),
                "removed",
                true
            )],
            "{told:?}"
        );
        let now = std::fs::read_to_string(home.join("gc/a/x.inc")).unwrap();
        assert!(
            now.contains("pager = less") && !now.contains("fsmonitor"),
            "{now}"
        );
        assert_eq!(
            std::fs::read_link(home.join("gc/cur")).unwrap(),
            Path::new("a")
        );
    }

    /// A link outside the tree re-pointed during the round (not the watch's to undo): the
    /// file it leads to now is never written, the include naming it is dropped from
    /// `.git/config` so git reads it no more. And an include of an include: a link the
    /// round planted at a directory inside the tree (`shared/sub`, through `..`) is set
    /// aside, the file outside it led to never written.
    #[tokio::test(flavor = "current_thread")]
    async fn a_path_led_elsewhere_outside_the_tree_drops_its_include_and_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = tmp.path().canonicalize().unwrap();
        let (dir, home, _) = repo_and_home(&tmp);
        for sub in ["gc/a", "gc/b"] {
            std::fs::create_dir_all(home.join(sub)).unwrap();
        }
        std::fs::write(home.join("gc/a/x.inc"), "[core]\n\tpager = less\n").unwrap();
        let elsewhere = b"[core]\n\tpager = more\n[credential]\n\thelper = store\n";
        std::fs::write(home.join("gc/b/x.inc"), elsewhere).unwrap();
        std::fs::write(home.join("gc/b/two.inc"), elsewhere).unwrap();
        std::os::unix::fs::symlink("a", home.join("gc/cur")).unwrap();
        let include = home.join("gc/cur/x.inc");
        git(&dir, &["config", "include.path", include.to_str().unwrap()]);
        std::fs::create_dir_all(dir.join("shared/sub")).unwrap();
        std::fs::write(
            dir.join("shared/one.inc"),
            "[include]\n\tpath = sub/../sub/two.inc\n",
        )
        .unwrap();
        std::fs::write(dir.join("shared/sub/two.inc"), "[core]\n\tpager = cat\n").unwrap();
        git(
            &dir,
            &["config", "--add", "include.path", "../shared/one.inc"],
        );
        let repo = repo_at(&dir);
        let before = ConfigBefore::record(&repo, &ConfigBefore::default())
            .await
            .unwrap();
        // The round (the outside link re-pointed as an unconfined agent could).
        std::fs::remove_file(home.join("gc/cur")).unwrap();
        std::os::unix::fs::symlink("b", home.join("gc/cur")).unwrap();
        std::fs::remove_dir_all(dir.join("shared/sub")).unwrap();
        std::os::unix::fs::symlink(home.join("gc/b"), dir.join("shared/sub")).unwrap();
        let mut told = revert(&repo, &before).await.unwrap();
        told.sort_by(|a, b| a.action.cmp(b.action));
        assert_eq!(
            rows(&told),
            [
                (
                    "include.path".to_owned(),
                    "config".to_owned(),
                    "include_dropped",
                    true
                ),
                (String::new(), "sub".to_owned(), "link_undone", true),
            ],
            "{told:?}"
        );
        assert_eq!(told[0].value.as_deref(), include.to_str());
        for file in ["gc/b/x.inc", "gc/b/two.inc"] {
            assert_eq!(std::fs::read(home.join(file)).unwrap(), elsewhere, "{file}");
        }
        let config = std::fs::read_to_string(dir.join(".git/config")).unwrap();
        assert!(
            !config.contains("x.inc") && config.contains("../shared/one.inc"),
            "{config}"
        );
        assert_eq!(
            named(&dir.join("shared"), "sub.agent-runner-unread-").len(),
            1
        );
    }

    /// A repository whose `.git/config` gets a planted `core.fsmonitor` (its program
    /// touching a marker) after the record, then `make_fail` run on the git dir; reverted.
    /// Returns the rows, whether the operator's `git status` ran the program, and whether
    /// git's own writer could write the file then.
    async fn planted_then(make_fail: impl Fn(&Path)) -> (Vec<Reverted>, bool, bool) {
        let (_tmp, dir) = new_repository();
        let repo = repo_at(&dir);
        let before = ConfigBefore::record(&repo, &ConfigBefore::default())
            .await
            .unwrap();
        let marker = dir.join("../ran-fsmonitor");
        let _ = std::fs::remove_file(&marker);
        git(
            &dir,
            &[
                "config",
                "core.fsmonitor",
                &format!("touch {}; false", marker.display()),
            ],
        );
        make_fail(&dir.join(".git"));
        // Git's writer on the same file (a key the watch leaves alone).
        let gits_writer = git(&dir, &["config", "user.probe", "x"]).status.success();
        let told = revert(&repo, &before).await.unwrap();
        assert!(git(&dir, &["status"]).status.success());
        let ran = marker.exists();
        let _ = std::fs::remove_file(&marker);
        (told, ran, gits_writer)
    }

    /// A directory planted at `.git/config.lock`: git's writer fails on it ("File
    /// exists", the control), the revert moves it aside and removes the key.
    #[tokio::test(flavor = "current_thread")]
    async fn a_directory_at_the_lock_is_set_aside_and_the_key_reverted() {
        let (told, ran, gits_writer) = planted_then(|git_dir: &Path| {
            std::fs::create_dir(git_dir.join("config.lock")).unwrap();
            std::fs::write(git_dir.join("config.lock/x"), "").unwrap();
        })
        .await;
        assert!(!gits_writer, "control: git's writer went past the lock");
        assert_eq!(
            rows(&told),
            [
                (
                    String::new(),
                    "config.lock".to_owned(),
                    "lock_set_aside",
                    true
                ),
                (
                    "core.fsmonitor".to_owned(),
                    "config".to_owned(),
                    "removed",
                    true
                ),
            ],
            "{told:?}"
        );
        assert!(!ran, "the operator's git status ran the planted fsmonitor");
        assert!(told[0]
            .value
            .as_deref()
            .is_some_and(|v| v.contains("config.lock.agent-runner-unread-")));
    }

    /// `.git` made `0555`: the owner's write permission is given back and the key removed
    /// (as root git's writer is not refused there; the unprivileged operator's is, which
    /// `hostile_leftovers` shows).
    #[tokio::test(flavor = "current_thread")]
    async fn a_git_dir_made_read_only_gets_its_write_permission_back_and_the_key_reverted() {
        use std::os::unix::fs::PermissionsExt;
        let (told, ran, _) = planted_then(|git_dir: &Path| {
            std::fs::set_permissions(git_dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        })
        .await;
        assert_eq!(
            rows(&told),
            [
                (
                    String::new(),
                    ".git".to_owned(),
                    "permission_restored",
                    true
                ),
                (
                    "core.fsmonitor".to_owned(),
                    "config".to_owned(),
                    "removed",
                    true
                ),
            ],
            "{told:?}"
        );
        assert_eq!(told[0].value.as_deref(), Some("0555 -> 0755"));
        assert!(!ran, "the operator's git status ran the planted fsmonitor");
    }

    /// A temporary directory (canonical) holding the repository `top`: what is made beside
    /// The record before a round of `repo`'s config and its nested repositories'.
    async fn recorded_with_nested(repo: &Repo) -> ConfigBefore {
        let mut before = ConfigBefore::record(repo, &ConfigBefore::default())
            .await
            .unwrap();
        before
            .record_nested(repo, &ConfigBefore::default(), &[])
            .await
            .unwrap();
        before
    }

    /// it lies outside the tree.
    fn top_in_tmp() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let dir = base.join("top");
        std::fs::create_dir(&dir).unwrap();
        assert!(git(&dir, &["init", "-q", "."]).status.success());
        (tmp, base, dir)
    }

    /// `git args` in `dir` with an identity (the operator's, to commit).
    fn git_id(dir: &Path, args: &[&str]) {
        let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@t"];
        all.extend_from_slice(args);
        let out = git(dir, &all);
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    /// Makes `dir` a repository with one commit (so it has an index and a `HEAD`), its git
    /// dir `separate` when given (a `.git` file naming it, as a submodule's).
    fn nested_repository(dir: &Path, separate: Option<&Path>) {
        std::fs::create_dir_all(dir).unwrap();
        match separate {
            Some(git_dir) => git_id(
                dir,
                &[
                    "init",
                    "-q",
                    "--separate-git-dir",
                    git_dir.to_str().unwrap(),
                    ".",
                ],
            ),
            None => git_id(dir, &["init", "-q", "."]),
        }
        std::fs::write(dir.join("f"), "f\n").unwrap();
        git_id(dir, &["add", "f"]);
        git_id(dir, &["commit", "-qm", "nested"]);
    }

    /// The shell command a planted `core.fsmonitor` runs: notes `marker` (and fails, so
    /// git scans the tree itself).
    fn noting(marker: &Path) -> String {
        format!("touch {}; false", marker.display())
    }

    /// Whether the operator's plain `git status` in `top` ran a program that touched
    /// `marker` (removed after).
    fn operators_status_runs(top: &Path, marker: &Path) -> bool {
        let _ = std::fs::remove_file(marker);
        assert!(git(top, &["status"]).status.success());
        let ran = marker.exists();
        let _ = std::fs::remove_file(marker);
        ran
    }

    /// A tree with a committed gitlink `vendor/x` (its own `.git`, the operator's
    /// `core.pager` set in it) before the round; the round plants `core.fsmonitor` there,
    /// and makes `vendor/y`, a submodule-like repository whose git dir is
    /// `.git/modules/y` (committed as a gitlink), and `vendor/z`, an untracked nested
    /// repository, each with a planted `core.fsmonitor`. Returns the rows told (none
    /// without `revert_it`), whether the operator's `git status` ran a planted program,
    /// whether it did after the operator's `git add vendor/z`, and the top.
    async fn nested_plants(
        revert_it: bool,
    ) -> (Vec<Reverted>, bool, bool, PathBuf, tempfile::TempDir) {
        let (tmp, base, dir) = top_in_tmp();
        nested_repository(&dir.join("vendor/x"), None);
        git(&dir.join("vendor/x"), &["config", "core.pager", "less -R"]);
        git_id(&dir, &["add", "vendor/x"]);
        git_id(&dir, &["commit", "-qm", "a nested repository"]);
        let repo = repo_at(&dir);
        let untracked = repo.look().await.unwrap().nested;
        assert!(untracked.is_empty(), "{untracked:?}");
        let mut before = ConfigBefore::record(&repo, &ConfigBefore::default())
            .await
            .unwrap();
        before
            .record_nested(&repo, &ConfigBefore::default(), &untracked)
            .await
            .unwrap();
        assert_eq!(before.nested.len(), 1, "{before:?}");
        // The round.
        let marker = base.join("ran");
        git(
            &dir.join("vendor/x"),
            &["config", "core.fsmonitor", &noting(&marker)],
        );
        std::fs::create_dir_all(dir.join(".git/modules")).unwrap();
        nested_repository(&dir.join("vendor/y"), Some(&dir.join(".git/modules/y")));
        git(
            &dir.join("vendor/y"),
            &["config", "core.fsmonitor", &noting(&marker)],
        );
        nested_repository(&dir.join("vendor/z"), None);
        git(
            &dir.join("vendor/z"),
            &["config", "core.fsmonitor", &noting(&marker)],
        );
        git_id(&dir, &["add", "vendor/y"]);
        git_id(&dir, &["commit", "-qm", "the agent's gitlink"]);
        let untracked = repo.look().await.unwrap().nested;
        assert_eq!(untracked, [b"vendor/z".to_vec()]);
        let told = if revert_it {
            let mut told = revert(&repo, &before).await.unwrap();
            told.extend(revert_nested(&repo, &before, &untracked).await.unwrap());
            told
        } else {
            Vec::new()
        };
        let ran = operators_status_runs(&dir, &marker);
        git_id(&dir, &["add", "vendor/z"]);
        let ran_after_add = operators_status_runs(&dir, &marker);
        (told, ran, ran_after_add, dir, tmp)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_nested_repositorys_planted_fsmonitor_is_reverted_and_the_operators_status_runs_nothing(
    ) {
        let (told, ran, ran_after_add, dir, _tmp) = nested_plants(true).await;
        assert!(
            !ran,
            "the operator's git status ran a nested plant: {told:?}"
        );
        assert!(
            !ran_after_add,
            "the operator's status after git add ran a plant"
        );
        let mut rows: Vec<(String, PathBuf, &str, bool)> = told
            .iter()
            .map(|r| (r.key.clone(), r.file.clone(), r.action, r.error.is_none()))
            .collect();
        rows.sort();
        assert_eq!(
            rows,
            [
                (
                    "core.fsmonitor".to_owned(),
                    dir.join(".git/modules/y/config"),
                    "removed",
                    true
                ),
                (
                    "core.fsmonitor".to_owned(),
                    dir.join("vendor/x/.git/config"),
                    "removed",
                    true
                ),
                (
                    "core.fsmonitor".to_owned(),
                    dir.join("vendor/z/.git/config"),
                    "removed",
                    true
                ),
            ],
            "{told:?}"
        );
        // The operator's own key in the nested repository stays.
        let x = std::fs::read_to_string(dir.join("vendor/x/.git/config")).unwrap();
        assert!(x.contains("less -R") && !x.contains("fsmonitor"), "{x}");
        // The control: the same plants, not reverted, run at the operator's status.
        let (_, ran, ran_after_add, _, _tmp) = nested_plants(false).await;
        assert!(
            ran,
            "control: the nested fsmonitor did not run: the test proves nothing"
        );
        assert!(
            ran_after_add,
            "control: the untracked one did not run once added"
        );
    }

    /// A nested repository whose `.git` file the round made to name a repository outside
    /// the tree (the agent's, say in a directory of its own outside the tree): its config
    /// is never written, the `.git` file is set aside, and the operator's `git status`
    /// runs nothing (the control, left, runs that repository's fsmonitor). One that named
    /// it before the round (the operator's) is left.
    #[tokio::test(flavor = "current_thread")]
    async fn a_nested_git_file_the_round_pointed_outside_is_set_aside_and_that_config_never_written(
    ) {
        for revert_it in [true, false] {
            let (_tmp, base, dir) = top_in_tmp();
            let marker = base.join("ran");
            let outside = base.join("outside");
            nested_repository(&outside, None);
            git(&outside, &["config", "core.fsmonitor", &noting(&marker)]);
            let outside_config = std::fs::read(outside.join(".git/config")).unwrap();
            let repo = repo_at(&dir);
            let before = recorded_with_nested(&repo).await;
            // The round: `vendor/o` made a gitlink of the outside repository.
            std::fs::create_dir_all(dir.join("vendor/o")).unwrap();
            let pointer = format!("gitdir: {}\n", outside.join(".git").display());
            std::fs::write(dir.join("vendor/o/.git"), &pointer).unwrap();
            git_id(&dir, &["add", "vendor/o"]);
            git_id(&dir, &["commit", "-qm", "the agent's gitlink"]);
            if !revert_it {
                assert!(
                    operators_status_runs(&dir, &marker),
                    "control: the outside fsmonitor did not run: the test proves nothing"
                );
                continue;
            }
            let told = revert_nested(&repo, &before, &[]).await.unwrap();
            assert_eq!(
                rows(&told),
                [(String::new(), ".git".to_owned(), "set_aside", true)],
                "{told:?}"
            );
            assert_eq!(told[0].file, dir.join("vendor/o/.git"));
            assert!(!operators_status_runs(&dir, &marker));
            assert_eq!(
                std::fs::read(outside.join(".git/config")).unwrap(),
                outside_config
            );
            let aside = named(&dir.join("vendor/o"), ".git.agent-runner-unread-");
            assert_eq!(aside.len(), 1);
            assert_eq!(std::fs::read_to_string(&aside[0]).unwrap(), pointer);
            // The operator's own pointer, there before the round, is left.
            std::fs::rename(&aside[0], dir.join("vendor/o/.git")).unwrap();
            let before = recorded_with_nested(&repo).await;
            assert!(matches!(
                before.nested[..],
                [Nested {
                    reach: Reach::Out(_),
                    ..
                }]
            ));
            let told = revert_nested(&repo, &before, &[]).await.unwrap();
            assert!(told.is_empty(), "{told:?}");
            assert!(dir.join("vendor/o/.git").is_file());
        }
    }

    /// Gitlinks in `dir` at `n/000` … for `count` copies of one nested repository (one git
    /// process for the index, whatever `count`); the last one's path.
    fn many_nested(dir: &Path, count: usize) -> PathBuf {
        use std::io::Write;
        nested_repository(&dir.join("n/000"), None);
        let head = git(&dir.join("n/000"), &["rev-parse", "HEAD"]);
        let oid = String::from_utf8(head.stdout).unwrap().trim().to_owned();
        let mut info = String::new();
        for i in 0..count {
            let name = format!("n/{i:03}");
            if i > 0 {
                let out = std::process::Command::new("cp")
                    .args(["-a", "n/000", &name])
                    .current_dir(dir)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{out:?}");
            }
            info.push_str(&format!("160000 {oid}\t{name}\n"));
        }
        let mut child = std::process::Command::new("git")
            .args(["update-index", "--index-info"])
            .current_dir(dir)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(info.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
        dir.join(format!("n/{:03}", count - 1))
    }

    /// More nested repositories than the watch looks into, made in one round: those past
    /// [`nested::MAX_NESTED`] have their `.git` set aside (the control: the last one's
    /// planted fsmonitor runs at the operator's `git status` before); the same number
    /// there before the round (the operator's) is told once, left.
    #[tokio::test(flavor = "current_thread")]
    async fn nested_repositories_the_round_made_past_the_limit_are_set_aside() {
        let (_tmp, base, dir) = top_in_tmp();
        let marker = base.join("ran");
        let repo = repo_at(&dir);
        let before = recorded_with_nested(&repo).await;
        let last = many_nested(&dir, nested::MAX_NESTED + 2);
        assert!(git(&last, &["config", "core.fsmonitor", &noting(&marker)])
            .status
            .success());
        assert!(
            operators_status_runs(&dir, &marker),
            "control: the plant past the limit did not run"
        );
        let told = revert_nested(&repo, &before, &[]).await.unwrap();
        let aside: Vec<_> = told.iter().filter(|r| r.action == "set_aside").collect();
        assert_eq!(aside.len(), 2, "{told:?}");
        assert!(aside.iter().all(|r| r.error.is_none()), "{aside:?}");
        assert!(!last.join(".git").exists());
        assert!(!operators_status_runs(&dir, &marker));

        // The operator's own, found before the round: told once, left.
        let (_tmp, _, dir) = top_in_tmp();
        let repo = repo_at(&dir);
        let last = many_nested(&dir, nested::MAX_NESTED + 2);
        let before = recorded_with_nested(&repo).await;
        let told = revert_nested(&repo, &before, &[]).await.unwrap();
        assert_eq!(
            rows(&told),
            [(String::new(), ".git".to_owned(), "unread", false)],
            "{told:?}"
        );
        assert!(last.join(".git").is_dir());
    }

    /// A nested `.git` that is a symbolic link (to a git dir in the tree, the agent's), and
    /// a gitlink nested in a nested repository (found through that one's own index, read
    /// in process): the link is set aside, the deeper plant reverted.
    #[tokio::test(flavor = "current_thread")]
    async fn a_nested_git_link_is_set_aside_and_a_gitlink_of_a_nested_repository_is_watched() {
        let (_tmp, base, dir) = top_in_tmp();
        let marker = base.join("ran");
        let repo = repo_at(&dir);
        let before = recorded_with_nested(&repo).await;
        // The round: `a` holds the gitlink `a/b`, whose config plants an fsmonitor; `l`'s
        // `.git` is a link to `a`'s git dir.
        nested_repository(&dir.join("a/b"), None);
        git(
            &dir.join("a/b"),
            &["config", "core.fsmonitor", &noting(&marker)],
        );
        nested_repository(&dir.join("a"), None);
        git_id(&dir.join("a"), &["add", "b"]);
        git_id(&dir.join("a"), &["commit", "-qm", "b"]);
        std::fs::create_dir(dir.join("l")).unwrap();
        std::os::unix::fs::symlink(dir.join("a/.git"), dir.join("l/.git")).unwrap();
        git_id(&dir, &["add", "a", "l"]);
        git_id(&dir, &["commit", "-qm", "the agent's gitlinks"]);
        assert!(
            operators_status_runs(&dir, &marker),
            "control: the deeper plant did not run"
        );
        let told = revert_nested(&repo, &before, &[]).await.unwrap();
        let mut found = rows(&told);
        found.sort();
        assert_eq!(
            found,
            [
                (String::new(), ".git".to_owned(), "set_aside", true),
                (
                    "core.fsmonitor".to_owned(),
                    "config".to_owned(),
                    "removed",
                    true
                ),
            ],
            "{told:?}"
        );
        assert!(told.iter().any(|r| r.file == dir.join("a/b/.git/config")));
        assert!(told.iter().any(|r| r.file == dir.join("l/.git")));
        assert!(std::fs::symlink_metadata(dir.join("l/.git")).is_err());
        assert!(!operators_status_runs(&dir, &marker));
    }

    /// A nested repository whose index the round made split (the repositories nested in it
    /// no longer readable in process): its `.git` is set aside, and the operator's `git
    /// status` runs nothing of the gitlink it hid (the control: it did before). One split
    /// before the round (the operator's) is told as `unread`, left.
    #[tokio::test(flavor = "current_thread")]
    async fn a_nested_index_the_round_made_split_sets_that_repository_aside() {
        let (_tmp, base, dir) = top_in_tmp();
        let marker = base.join("ran");
        let repo = repo_at(&dir);
        let before = recorded_with_nested(&repo).await;
        // The round: `a`, its index split, holds the gitlink `a/b` and its fsmonitor.
        nested_repository(&dir.join("a/b"), None);
        git(
            &dir.join("a/b"),
            &["config", "core.fsmonitor", &noting(&marker)],
        );
        nested_repository(&dir.join("a"), None);
        git_id(&dir.join("a"), &["update-index", "--split-index"]);
        git_id(&dir.join("a"), &["add", "b"]);
        git_id(&dir.join("a"), &["commit", "-qm", "b"]);
        git_id(&dir, &["add", "a"]);
        git_id(&dir, &["commit", "-qm", "the agent's gitlink"]);
        assert!(
            operators_status_runs(&dir, &marker),
            "control: the hidden plant did not run"
        );
        let told = revert_nested(&repo, &before, &[]).await.unwrap();
        assert_eq!(
            rows(&told),
            [(String::new(), ".git".to_owned(), "set_aside", true)],
            "{told:?}"
        );
        assert_eq!(told[0].file, dir.join("a/.git"));
        assert!(!operators_status_runs(&dir, &marker));
        // The operator's own split index, so before the round: told, left.
        let aside = named(&dir.join("a"), ".git.agent-runner-unread-");
        std::fs::rename(&aside[0], dir.join("a/.git")).unwrap();
        let before = recorded_with_nested(&repo).await;
        let told = revert_nested(&repo, &before, &[]).await.unwrap();
        assert_eq!(
            rows(&told),
            [(String::new(), "index".to_owned(), "unread", false)],
            "{told:?}"
        );
        assert!(dir.join("a/.git").is_dir());
    }
}
