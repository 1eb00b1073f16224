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
//! told with the error.

use agent_runner_protocol::limits::truncate_chars;
use agent_runner_protocol::redact::redact;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::runtime::git::config_keys::{self as git_config_keys, Effect};
use crate::runtime::git::repo::{GitError, Repo};
use crate::tree_file::{open_regular, Symlink};

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
}

/// The repository's config files before a round.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct ConfigBefore {
    files: Vec<Seen>,
    /// The work tree's top (a remote inside it is the agent's: [`git_config_keys::watched`]).
    #[serde(default)]
    tree: PathBuf,
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
    /// file could not be read: moved aside, the file before the round put back),
    /// `link_undone` (the round made the file a symbolic link, `value` its target: the file
    /// before the round put back) or `unread` (the whole file could not be read: `error`
    /// says why).
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
    let file = match open_regular(path, Symlink::Follow) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, link)),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(format!("it is larger than {MAX_CONFIG_BYTES} bytes"));
    }
    Ok((Some(bytes), link))
}

/// Removes the lock file git's writer takes beside `path` (`<path>.lock`) when one is
/// there: after the round no git of the agent's runs (its processes were killed with it),
/// so a lock left is stale or planted to make the revert fail.
fn clear_lock(path: &Path) {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    let lock = path.with_file_name(name);
    if std::fs::symlink_metadata(&lock).is_ok() {
        if let Err(e) = std::fs::remove_file(&lock) {
            tracing::warn!("cannot remove {}: {e}", lock.display());
        }
    }
}

/// Undoes the symbolic link the round made or re-pointed at `path`: puts back what was
/// there before the round (`then`: the operator's link, re-made, or the file's bytes,
/// written beside it exclusively and renamed over the link), or removes the link when
/// nothing was. What the link leads to is never read or written. Errors: the reason, in
/// words (the link then stays; git reads through it).
fn undo_link(path: &Path, then: Option<&Seen>) -> Result<(), String> {
    let undone = match (
        then.and_then(|f| f.link.as_ref()),
        then.and_then(|f| f.bytes.as_deref()),
    ) {
        (Some(target), _) => link_beside(path, target),
        (None, Some(bytes)) => write_beside(path, bytes),
        (None, None) => std::fs::remove_file(path),
    };
    undone.map_err(|e| format!("putting back the file before the round failed: {e}"))
}

/// Makes `path` a symbolic link to `target`: made beside it, then renamed over it.
fn link_beside(path: &Path, target: &Path) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".agent-runner-{}", std::process::id()));
    let beside = path.with_file_name(name);
    let _ = std::fs::remove_file(&beside);
    let made =
        std::os::unix::fs::symlink(target, &beside).and_then(|()| std::fs::rename(&beside, path));
    if made.is_err() {
        let _ = std::fs::remove_file(&beside);
    }
    made
}

/// Moves `path` (whatever it is: a file too large to read, a FIFO, a directory) aside to
/// `<path>.agent-runner-unread-<pid>-<ns>` and, when `before` is given, writes those bytes
/// at `path` (created exclusively beside it, never through a link, then renamed over it).
/// Returns where it went. Errors: the reason, in words.
fn set_aside(path: &Path, before: Option<&[u8]>) -> Result<PathBuf, String> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(
        ".agent-runner-unread-{}-{stamp}",
        std::process::id()
    ));
    let aside = path.with_file_name(name);
    std::fs::rename(path, &aside).map_err(|e| format!("setting it aside failed: {e}"))?;
    if let Some(bytes) = before {
        write_beside(path, bytes)
            .map_err(|e| format!("putting the file before back failed: {e}"))?;
    }
    Ok(aside)
}

/// Writes `bytes` at `path`: to a file beside it, created exclusively and never through a
/// link, then renamed over it (a link or file at `path` is replaced, never written through).
fn write_beside(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".agent-runner-{}", std::process::id()));
    let copy = path.with_file_name(name);
    let _ = std::fs::remove_file(&copy);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&copy)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| std::fs::rename(&copy, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&copy);
    }
    written
}

/// The files `entries` of the config file `file` include: each `include.path` and
/// `includeif.<condition>.path` value, `~/` from `HOME`, a relative one from `file`'s
/// directory (git's rules).
fn included(file: &Path, entries: &[(String, Option<String>)]) -> Vec<PathBuf> {
    entries
        .iter()
        .filter(|(key, _)| is_include(key))
        .filter_map(|(_, value)| value.as_deref().filter(|v| !v.is_empty()))
        .map(|value| match value.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(rest))
                .unwrap_or_else(|| PathBuf::from(value)),
            None => file
                .parent()
                .map_or_else(|| PathBuf::from(value), |dir| dir.join(value)),
        })
        .collect()
}

/// Whether `key` makes git read another file.
fn is_include(key: &str) -> bool {
    git_config_keys::watched(key, ["x"], Path::new("/"))
        .is_some_and(|row| row.effect == Effect::Includes)
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
    tree: &Path,
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
        let Some(row) = git_config_keys::watched(key, now.iter().map(|v| text(*v)), tree) else {
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
        let mut queue: Vec<(PathBuf, &'static str, usize)> = repo
            .config_files()
            .await?
            .into_iter()
            .map(|(path, scope)| (path, scope, 0))
            .collect();
        while let Some((path, scope, depth)) = queue.pop() {
            if files.iter().any(|f| f.path == path) {
                continue;
            }
            let Ok((bytes, link)) = read(&path) else {
                // Unreadable now: compared as missing, so whatever it holds after the
                // round is the round's.
                files.push(Seen {
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
                    Some(b) if !b.is_empty() => {
                        repo.config_text_entries(b).await.unwrap_or_default()
                    }
                    _ => Vec::new(),
                },
            };
            if depth < MAX_INCLUDE_DEPTH {
                queue.extend(
                    included(&path, &entries)
                        .into_iter()
                        .map(|p| (p, scope, depth + 1)),
                );
            }
            files.push(Seen {
                path,
                bytes,
                link,
                entries,
            });
        }
        let tree = repo.top().await?;
        Ok(ConfigBefore { files, tree })
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
                    git_config_keys::watched(key, values.iter().map(|v| text(*v)), &self.tree)
                        .is_some();
                if watched && !keys.iter().any(|k| k == key) {
                    keys.push(key.to_owned());
                }
            }
        }
        keys
    }
}

/// Reverts every watched key the round added or changed in the repository's config
/// (`before`: [`ConfigBefore::record`] before the round) and tells each, the failures
/// too. Errors: git cannot tell where the repository is.
pub(crate) async fn revert(repo: &Repo, before: &ConfigBefore) -> Result<Vec<Reverted>, GitError> {
    let mut told = Vec::new();
    let tree = repo.top().await?;
    let mut visited: HashSet<PathBuf> = HashSet::new();
    let mut queue: Vec<(PathBuf, &'static str, usize)> = repo
        .config_files()
        .await?
        .into_iter()
        .map(|(path, scope)| (path, scope, 0))
        .collect();
    while let Some((path, scope, depth)) = queue.pop() {
        if !visited.insert(path.clone()) {
            continue;
        }
        let then = before.files.iter().find(|f| f.path == path);
        let failed = |error: String| Reverted {
            key: String::new(),
            scope,
            file: path.clone(),
            value: None,
            action: "unread",
            why: "the file the repository's config is read from",
            error: Some(error),
        };
        let (bytes, link) = match read(&path) {
            Ok(now) => now,
            Err(error) => {
                // git reads what the watch cannot (a file padded past the limit): a file
                // the round made unreadable to the watch, or one git always reads, is set
                // aside and its bytes before the round put back, never left to run.
                let before = then.and_then(|f| f.bytes.as_deref());
                let mut unread = failed(error);
                if before.is_some() || depth == 0 {
                    match set_aside(&path, before) {
                        Ok(aside) => {
                            tracing::warn!(
                                "{}: {}; set aside as {}",
                                path.display(),
                                unread.error.unwrap_or_default(),
                                aside.display()
                            );
                            unread.action = "set_aside";
                            unread.error = None;
                        }
                        Err(e) => {
                            unread.error =
                                Some(format!("{}; {e}", unread.error.unwrap_or_default()));
                        }
                    }
                }
                told.push(unread);
                if before.is_none() {
                    continue;
                }
                (before.map(<[u8]>::to_vec), None)
            }
        };
        // A link the round made or re-pointed: the file before the round is put back, what
        // the link led to (any file the operator can read) is never copied into the tree.
        let (bytes, link) = match &link {
            Some(target) if then.and_then(|f| f.link.as_ref()) != Some(target) => {
                let error = undo_link(&path, then).err();
                told.push(Reverted {
                    key: String::new(),
                    scope,
                    file: path.clone(),
                    value: Some(truncate_chars(&target.to_string_lossy(), SHOWN_VALUE_CHARS).to_owned()),
                    action: "link_undone",
                    why: "a symbolic link the round made where the repository's config is read from: git would read whatever file it names",
                    error,
                });
                (
                    then.and_then(|f| f.bytes.clone()),
                    then.and_then(|f| f.link.clone()),
                )
            }
            _ => (bytes, link),
        };
        let then_bytes = then.and_then(|f| f.bytes.as_ref());
        let then_entries = then.map(|f| f.entries.as_slice()).unwrap_or_default();
        let mut effective: Vec<(String, Option<String>)>;
        if bytes.as_ref() == then_bytes {
            effective = then_entries.to_vec();
        } else {
            let now = match &bytes {
                Some(b) if !b.is_empty() => match repo.config_text_entries(b).await {
                    Ok(entries) => entries,
                    Err(err) => {
                        told.push(failed(format!("git cannot read it: {}", err.detail)));
                        continue;
                    }
                },
                _ => Vec::new(),
            };
            effective = now.clone();
            let found = to_revert(then_entries, &now, &tree);
            // A link is never written through (its target could be any file); one left
            // here leads where it led before the round: the operator's, left alone.
            let unwritable = match &link {
                Some(_) if !found.is_empty() => Some(
                    "the file is the operator's symbolic link, which the supervisor never writes through: remove the key yourself"
                        .to_owned(),
                ),
                _ => None,
            };
            if !found.is_empty() {
                clear_lock(&path);
            }
            for (key, values, value, row) in found {
                let error = match &unwritable {
                    Some(error) => Some(error.clone()),
                    None => repo
                        .config_file_set(&path, &key, &values)
                        .await
                        .err()
                        .map(|e| e.detail),
                };
                if error.is_none() {
                    effective.retain(|(k, _)| *k != key);
                    effective.extend(values.iter().map(|v| (key.clone(), Some(v.clone()))));
                }
                told.push(Reverted {
                    key,
                    scope,
                    file: path.clone(),
                    value: value.map(|v| truncate_chars(&redact(&v), SHOWN_VALUE_CHARS).to_owned()),
                    action: if values.is_empty() {
                        "removed"
                    } else {
                        "restored"
                    },
                    why: row.why,
                    error,
                });
            }
        }
        if depth < MAX_INCLUDE_DEPTH {
            queue.extend(
                included(&path, &effective)
                    .into_iter()
                    .map(|p| (p, scope, depth + 1)),
            );
        }
    }
    Ok(told)
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
        let found: Vec<(String, Vec<String>)> = to_revert(&before, &after, Path::new("/t"))
            .into_iter()
            .map(|(k, v, ..)| (k, v))
            .collect();
        assert_eq!(
            found,
            [
                ("include.path".to_owned(), vec![]),
                ("credential.helper".to_owned(), vec!["store".to_owned()]),
                ("core.fsmonitor".to_owned(), vec![]),
                ("alias.x".to_owned(), vec![]),
            ]
        );
        // Removed only: nothing runs, nothing is restored.
        assert!(to_revert(
            &before,
            &entries(&[("user.email", Some("op@x"))]),
            Path::new("/t")
        )
        .is_empty());
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
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        assert!(git(&dir, &["init", "-q", "."]).status.success());
        git(&dir, &["config", "core.pager", "less -R"]);
        let repo = Repo::new(&dir, crate::runtime::git::attribution::OwnFiles::default());
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
        let repo = Repo::new(&dir, crate::runtime::git::attribution::OwnFiles::default());
        let keep = |bytes: Vec<u8>| {
            let made_up = Seen {
                path: config.clone(),
                bytes: Some(bytes),
                link: None,
                entries: vec![("made.up".to_owned(), Some("kept".to_owned()))],
            };
            let pending = Pending {
                round_num: 1,
                before: ConfigBefore {
                    files: vec![made_up],
                    tree: PathBuf::new(),
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
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        assert!(git(&dir, &["init", "-q", "."]).status.success());
        let git_dir = dir.join(".git");
        // The operator's own include, present before the round.
        std::fs::write(git_dir.join("mine.inc"), "[core]\n\tpager = less\n").unwrap();
        git(&dir, &["config", "include.path", "mine.inc"]);
        let repo = Repo::new(&dir, crate::runtime::git::attribution::OwnFiles::default());
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
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        assert!(git(&dir, &["init", "-q", "."]).status.success());
        let config = dir.join(".git/config");
        let before_bytes = std::fs::read(&config).unwrap();
        let repo = Repo::new(&dir, crate::runtime::git::attribution::OwnFiles::default());
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
        assert_eq!(
            found,
            [PathBuf::from("/p/.git/extra.inc"), PathBuf::from("/abs/x")]
        );
    }
}
