//! Where the supervisor's git reads and writes, held by identity (docs/security.md, "The
//! supervisor is not the agent's deputy"): the work tree's top, its git dir and common dir,
//! found once by git's own discovery (with its ownership check, `safe.directory`), and
//! what each of them and the paths git writes through were when found ([`Place::changed`]
//! tells what moved since). Also what the repository's config was read from
//! ([`ConfigSeen`]), so it is listed again only when one of those files changed.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::tree_file::{regular_file_sha256, Symlink};

/// What one path was when looked at: missing, a directory, a regular file (with its
/// content's hash), a symbolic link (with its target) or something else, each with its
/// device and inode.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Missing,
    Dir(u64, u64),
    File(u64, u64, Option<[u8; 32]>),
    Link(PathBuf),
    Other(u64, u64, u32),
}

impl Seen {
    /// `path` as it is now, the final symbolic link followed or not.
    fn of(path: &Path, follow: bool) -> Seen {
        let meta = if follow {
            std::fs::metadata(path)
        } else {
            std::fs::symlink_metadata(path)
        };
        let Ok(meta) = meta else {
            return Seen::Missing;
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            return Seen::Link(std::fs::read_link(path).unwrap_or_default());
        }
        let (dev, ino) = (meta.dev(), meta.ino());
        if kind.is_dir() {
            Seen::Dir(dev, ino)
        } else if kind.is_file() {
            let symlink = if follow {
                Symlink::Follow
            } else {
                Symlink::Refuse
            };
            Seen::File(dev, ino, regular_file_sha256(path, symlink))
        } else {
            Seen::Other(dev, ino, meta.mode())
        }
    }

    /// The kind, for messages.
    fn kind(&self) -> &'static str {
        match self {
            Seen::Missing => "missing",
            Seen::Dir(..) => "a directory",
            Seen::File(..) => "a file",
            Seen::Link(_) => "a symbolic link",
            Seen::Other(..) => "neither a file nor a directory",
        }
    }
}

/// One path held: its name in messages, whether its final link is followed, what it was.
#[derive(Clone, Debug)]
struct Mark {
    path: PathBuf,
    follow: bool,
    seen: Seen,
}

impl Mark {
    fn of(path: PathBuf, follow: bool) -> Mark {
        let seen = Seen::of(&path, follow);
        Mark { path, follow, seen }
    }

    /// Whether `now` is what the mark held, or a directory where there was nothing (git
    /// makes `logs` with a repository's first reference update).
    fn holds(&self, now: &Seen) -> bool {
        *now == self.seen || (self.seen == Seen::Missing && matches!(now, Seen::Dir(..)))
    }
}

/// The repository the supervisor's git is pinned to, found at boot.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    /// The work tree's top (`git rev-parse --show-toplevel`).
    pub top: PathBuf,
    /// The git dir (`--absolute-git-dir`): `GIT_DIR` of every later call.
    pub git_dir: PathBuf,
    /// The common dir (`--git-common-dir`; the git dir itself but in a linked worktree).
    pub common_dir: PathBuf,
    /// The work dir's path from the top, with its trailing `/` (empty at the top).
    pub prefix: Vec<u8>,
    marks: Vec<Mark>,
}

impl Place {
    /// The place found by `git rev-parse --show-toplevel --absolute-git-dir
    /// --git-common-dir` (`top`, `git_dir`, `common`: `common` relative to `work_dir` unless
    /// absolute), with what each path git reads or writes through is now. Errors (a message
    /// naming the path and the fix): the top's `.git` does not name `git_dir` (a
    /// `core.worktree` moved the work tree away from its git dir, or git found another
    /// repository than the top's own).
    pub(crate) fn hold(
        work_dir: &Path,
        top: PathBuf,
        git_dir: PathBuf,
        common: &Path,
        prefix: Vec<u8>,
    ) -> Result<Place, String> {
        let common_dir =
            std::fs::canonicalize(work_dir.join(common)).unwrap_or_else(|_| work_dir.join(common));
        let dot_git = top.join(".git");
        let named = match Seen::of(&dot_git, false) {
            Seen::Dir(..) | Seen::Link(_) => Some(dot_git.clone()),
            Seen::File(..) => gitdir_of_file(&dot_git).map(|d| top.join(d)),
            _ => None,
        };
        let same = named.is_some_and(|named| {
            Seen::of(&named, true) == Seen::of(&git_dir, true)
                && matches!(Seen::of(&git_dir, true), Seen::Dir(..))
        });
        if !same {
            return Err(format!(
                "git found the git dir {} for the work tree {}, but {} does not name it (a `core.worktree` setting, or a `.git` that is not this work tree's own); agent-runner works only on a work tree whose own `.git` is its repository: unset `core.worktree`, or point [runtime] work_dir at the repository's own work tree",
                git_dir.display(),
                top.display(),
                dot_git.display()
            ));
        }
        let mut marks = vec![
            Mark::of(dot_git, false),
            Mark::of(git_dir.clone(), true),
            Mark::of(common_dir.clone(), true),
        ];
        // Where git writes objects, refs and their logs (a link there would take the
        // supervisor's writes elsewhere), and where it reads other repositories' objects
        // from (`objects/info/alternates`) or its common dir (`commondir`).
        for dir in [&git_dir, &common_dir] {
            for name in ["objects", "refs", "logs", "commondir"] {
                marks.push(Mark::of(dir.join(name), false));
            }
            marks.push(Mark::of(dir.join("objects/info/alternates"), true));
        }
        let place = Place {
            top,
            git_dir,
            common_dir,
            prefix,
            marks,
        };
        match place.unsound() {
            Some(refused) => Err(refused),
            None => Ok(place),
        }
    }

    /// Why the repository found at boot is not one the supervisor's git may be pinned to,
    /// `None` when it is: a `commondir` in a git dir that is not a linked worktree's
    /// (`<common dir>/worktrees/<name>`), which would make git read another repository's
    /// config, hooks, objects and refs; or a symbolic link at `objects`, `refs`, `logs` or
    /// a log a stash or commit appends to, through which the supervisor's writes would go
    /// elsewhere. What an agent left before a boot is taken as nothing more than what it
    /// is: these are refused whoever made them (docs/security.md, "The supervisor is not
    /// the agent's deputy").
    fn unsound(&self) -> Option<String> {
        let commondir = self.git_dir.join("commondir");
        if std::fs::symlink_metadata(&commondir).is_ok() {
            let parent = std::fs::canonicalize(&self.git_dir)
                .ok()
                .and_then(|d| d.parent().map(Path::to_path_buf));
            let worktrees = self.common_dir.join("worktrees");
            let worktrees_real = std::fs::canonicalize(&worktrees).ok();
            // A linked worktree's `.git` is a file naming `<common dir>/worktrees/<name>`,
            // a real directory of a common dir that is not in the work tree; a main
            // repository's git dir (the top's `.git` directory) has no `commondir`.
            let top_git_is_dir = matches!(Seen::of(&self.top.join(".git"), false), Seen::Dir(..));
            let worktrees_is_link = matches!(Seen::of(&worktrees, false), Seen::Link(_));
            let real_top = std::fs::canonicalize(&self.top).unwrap_or_else(|_| self.top.clone());
            let common_in_tree = std::fs::canonicalize(&self.common_dir)
                .is_ok_and(|common| common.starts_with(&real_top));
            if top_git_is_dir
                || worktrees_is_link
                || common_in_tree
                || parent.is_none()
                || parent != worktrees_real
            {
                return Some(format!(
                    "{} names {} as the repository's common dir, but {} is not one of its linked worktrees (<common dir>/worktrees/<name>): git would read another repository's config, hooks, objects and refs; agent-runner refuses it whoever wrote it (an agent can): remove {} if it is not yours",
                    commondir.display(),
                    self.common_dir.display(),
                    self.git_dir.display(),
                    commondir.display()
                ));
            }
        }
        let written: Vec<PathBuf> = [&self.git_dir, &self.common_dir]
            .iter()
            .flat_map(|dir| ["objects", "refs", "logs"].map(|name| dir.join(name)))
            .chain(self.appended_logs())
            .chain(self.written_by_name())
            .collect();
        written.iter().find_map(|path| match Seen::of(path, false) {
            Seen::Link(target) => Some(format!(
                "{} is a symbolic link (to {}): the supervisor's git writes objects, references and their logs through it, so it must be the repository's own; agent-runner refuses it whoever made it (an agent can): replace the link with what it names, or remove it if it is not yours",
                path.display(),
                target.display()
            )),
            _ => None,
        })
    }

    /// Sets aside what a round planted where git finds its repository or writes through
    /// ([`Place::changed`] tells it): a `commondir` that was not there at boot, and a
    /// symbolic link at `objects`, `refs`, `logs` or a log a stash or commit appends to,
    /// each renamed to `<name>.agent-runner-set-aside-<pid>-<ns>` beside it — kept, but no
    /// longer read by the operator's own git (whose hooks and config a planted `commondir`
    /// would choose). Returns `<path> set aside as <new path>` for each, or the error.
    pub(crate) fn set_aside_plants(&self) -> Vec<String> {
        let mut planted: Vec<PathBuf> = Vec::new();
        for mark in &self.marks {
            let name = mark.path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let in_repo = mark.path.parent().is_some_and(|dir| {
                dir == self.git_dir.as_path() || dir == self.common_dir.as_path()
            });
            if !in_repo || !["commondir", "objects", "refs", "logs"].contains(&name) {
                continue;
            }
            let now = Seen::of(&mark.path, false);
            let new_commondir =
                name == "commondir" && mark.seen == Seen::Missing && now != Seen::Missing;
            if new_commondir || (matches!(now, Seen::Link(_)) && mark.seen != now) {
                planted.push(mark.path.clone());
            }
        }
        for path in self
            .appended_logs()
            .into_iter()
            .chain(self.written_by_name())
        {
            if matches!(Seen::of(&path, false), Seen::Link(_)) {
                planted.push(path);
            }
        }
        planted.dedup();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        planted
            .into_iter()
            .map(|path| {
                let mut name = path.file_name().unwrap_or_default().to_os_string();
                name.push(format!(
                    ".agent-runner-set-aside-{}-{stamp}",
                    std::process::id()
                ));
                let aside = path.with_file_name(name);
                let mut renamed = std::fs::rename(&path, &aside);
                // A git dir the round made read-only (`chmod 555 .git`) is the
                // supervisor's user's to open again.
                if renamed.is_err() {
                    if let Some(dir) = path.parent() {
                        if crate::tree_file::give_back_owner_rwx(dir).is_some() {
                            renamed = std::fs::rename(&path, &aside);
                        }
                    }
                }
                match renamed {
                    Ok(()) => format!("{} set aside as {}", path.display(), aside.display()),
                    Err(e) => format!("{} could not be set aside: {e}", path.display()),
                }
            })
            .collect()
    }

    /// What changed since boot, `None` when nothing did: each path git reads or writes
    /// through that is no longer what it was (another directory or file, a file with other
    /// content, a link), and a link where git appends a reference's log (`logs/HEAD`,
    /// `logs/refs/stash`, the branch's log: git would append through it, outside the
    /// repository).
    pub(crate) fn changed(&self) -> Option<String> {
        let mut changes = Vec::new();
        for mark in &self.marks {
            let now = Seen::of(&mark.path, mark.follow);
            if !mark.holds(&now) {
                let how = if now.kind() == mark.seen.kind() {
                    format!(
                        "is another {} than at boot",
                        now.kind().trim_start_matches("a ")
                    )
                } else {
                    format!("was {} at boot, is {} now", mark.seen.kind(), now.kind())
                };
                changes.push(format!("{} {how}", mark.path.display()));
            }
        }
        for path in self
            .appended_logs()
            .into_iter()
            .chain(self.written_by_name())
        {
            if let Seen::Link(target) = Seen::of(&path, false) {
                changes.push(format!(
                    "{} is a symbolic link (to {}): git would write to its target",
                    path.display(),
                    target.display()
                ));
            }
        }
        (!changes.is_empty()).then(|| changes.join("; "))
    }

    /// The files in the git dir git writes by name, opening them for writing (`fopen(…,
    /// "w")`, which follows a link): a link at one would have the supervisor's commit
    /// truncate and overwrite the file it names.
    fn written_by_name(&self) -> Vec<PathBuf> {
        [
            "COMMIT_EDITMSG",
            "MERGE_MSG",
            "SQUASH_MSG",
            "TAG_EDITMSG",
            "FETCH_HEAD",
            "ORIG_HEAD",
            "AUTO_MERGE",
            "index",
        ]
        .iter()
        .map(|name| self.git_dir.join(name))
        .collect()
    }

    /// The logs (and refs) a stash or commit appends to or replaces: `HEAD`'s,
    /// `refs/stash`'s and the current branch's, and the directories they lie in.
    fn appended_logs(&self) -> Vec<PathBuf> {
        let mut paths = vec![
            self.git_dir.join("logs/HEAD"),
            self.git_dir.join("HEAD"),
            self.common_dir.join("logs/refs"),
            self.common_dir.join("logs/refs/stash"),
            self.common_dir.join("refs/stash"),
            self.common_dir.join("packed-refs"),
        ];
        // Opened non-blocking, read only as a regular file: a FIFO the agent put at `HEAD`
        // must not stall the supervisor.
        let head = crate::tree_file::head_chars(&self.git_dir.join("HEAD"), Symlink::Follow, 4096);
        if let Some(branch) = head.trim_end().strip_prefix("ref: ") {
            let mut dir = PathBuf::new();
            for part in Path::new(branch).components() {
                dir.push(part);
                paths.push(self.common_dir.join("logs").join(&dir));
                paths.push(self.common_dir.join(&dir));
            }
        }
        paths
    }
}

/// The path a `.git` file names (`gitdir: <path>`), as written.
fn gitdir_of_file(file: &Path) -> Option<PathBuf> {
    let text = crate::tree_file::head_chars(file, Symlink::Refuse, 4096);
    let line = text.lines().next()?;
    Some(PathBuf::from(line.strip_prefix("gitdir: ")?.trim_end()))
}

/// The files the repository's config was read from, as they were when listed: its own
/// config files (present or not), the files each entry came from (`--show-origin`), the
/// files its includes name (present or not) and `HEAD` (`includeIf "onbranch:"`). While
/// none of them changed, the listing stands.
#[derive(Clone, Debug)]
pub(crate) struct ConfigSeen {
    files: Vec<(PathBuf, Seen)>,
}

impl ConfigSeen {
    /// What `place`'s config files and `entries` (`scope`, `origin`, `key`, `value` of the
    /// repository's own scopes) name are now.
    pub(crate) fn of<'a>(
        place: &Place,
        entries: impl Iterator<Item = (&'a str, &'a str, &'a str)>,
    ) -> ConfigSeen {
        let home = std::env::var_os("HOME");
        let paths = config_paths(place, entries, home.as_deref());
        ConfigSeen::of_paths(paths)
    }

    /// What each of `paths` is now.
    fn of_paths(paths: Vec<PathBuf>) -> ConfigSeen {
        ConfigSeen {
            files: paths
                .into_iter()
                .map(|p| {
                    let seen = Seen::of(&p, true);
                    (p, seen)
                })
                .collect(),
        }
    }

    /// Whether every file is still what it was.
    pub(crate) fn unchanged(&self) -> bool {
        self.files
            .iter()
            .all(|(p, seen)| Seen::of(p, true) == *seen)
    }
}

/// The files a listing of `place`'s config with `entries` (`origin`, `key`, `value`) was
/// read from: the repository's own config files (present or not), `HEAD`, each entry's
/// origin and each file an include names (`~/` taken from `home`). Sorted, no duplicates.
fn config_paths<'a>(
    place: &Place,
    entries: impl Iterator<Item = (&'a str, &'a str, &'a str)>,
    home: Option<&std::ffi::OsStr>,
) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = [
        place.git_dir.join("config"),
        place.git_dir.join("config.worktree"),
        place.common_dir.join("config"),
        place.common_dir.join("config.worktree"),
        place.git_dir.join("HEAD"),
    ]
    .into();
    for (origin, key, value) in entries {
        let Some(origin) = origin.strip_prefix("file:") else {
            continue;
        };
        let origin = place.top.join(origin);
        let included =
            key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path"));
        if included {
            let target = match value.strip_prefix("~/") {
                Some(rest) => home
                    .map(|home| PathBuf::from(home).join(rest))
                    .unwrap_or_default(),
                None => origin
                    .parent()
                    .map(|dir| dir.join(value))
                    .unwrap_or_default(),
            };
            paths.push(target);
        }
        paths.push(origin);
    }
    paths.sort();
    paths.dedup();
    paths
}

/// Where the last listing of the repository's whole config (`git config --list`, every
/// scope) is kept in the state dir, out of the agent's reach, with the key of everything
/// that listing was made from ([`listing_key`]). The next process (the next `agent-runner
/// round`) reuses it only when the key it computes now is the same, saving the boot's git
/// process; a record missing, unreadable or keyed otherwise is listed by git again (and
/// replaced). A view to rebuild, never the record of anything: written without `fsync`.
pub(crate) const LISTING_FILE: &str = "git-config-listing.json";

/// The contents of [`LISTING_FILE`].
#[derive(serde::Serialize, serde::Deserialize)]
struct ListingRecord {
    /// [`listing_key`] when the listing was made, hex.
    key: String,
    /// What `git config --list --show-scope --show-origin -z` printed.
    listing: Vec<u8>,
}

/// The environment a listing depends on: every `GIT_*` variable (git reads some, and which
/// ones the supervisor's git keeps is its own rule, keyed here by all of them), `HOME`,
/// `XDG_CONFIG_HOME` (where the global files are) and `PATH` (which git runs). Sorted.
pub(crate) fn listing_env() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    use std::os::unix::ffi::OsStrExt;
    let mut env: Vec<_> = std::env::vars_os()
        .filter(|(name, _)| {
            let name = name.as_bytes();
            name.starts_with(b"GIT_") || matches!(name, b"HOME" | b"XDG_CONFIG_HOME" | b"PATH")
        })
        .collect();
    env.sort();
    env
}

/// The directories of `PATH` (`path`) a program the supervisor starts may be found in:
/// those that are absolute and lie outside the work tree `tree` (by their path and by
/// where they resolve). An empty or relative entry (`.`, `node_modules/.bin`, resolved
/// from the work dir) or one inside the tree would find a program the agent planted — the
/// `git` itself, or what git starts: `ssh-keygen` to sign, `git-lfs` for a filter. The
/// supervisor's git gets exactly these as its `PATH`.
pub(crate) fn path_outside_tree(path: &std::ffi::OsStr, tree: &Path) -> Vec<PathBuf> {
    let real_tree = std::fs::canonicalize(tree).unwrap_or_else(|_| tree.to_path_buf());
    std::env::split_paths(path)
        .filter(|dir| {
            dir.is_absolute()
                && !dir.starts_with(tree)
                && !std::fs::canonicalize(dir).is_ok_and(|real| real.starts_with(&real_tree))
        })
        .collect()
}

/// The `git` the supervisor runs with `PATH`: the first executable regular file `git` in
/// its directories that are absolute and lie outside the work tree `tree` — an empty or
/// relative entry (`.`, `node_modules/.bin`, resolved from the work dir) or one inside the
/// tree would run a `git` the agent planted, with the supervisor's rights (docs/security.md,
/// "The supervisor's git"). `None` when there is none.
pub(crate) fn git_on_path(path: Option<&std::ffi::OsStr>, tree: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    path_outside_tree(path?, tree).into_iter().find_map(|dir| {
        let candidate = dir.join("git");
        let meta = std::fs::metadata(&candidate).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(candidate)
    })
}

/// The key of a listing of `place`'s config: a SHA-256 over `always` (the supervisor's own
/// `-c` settings), `place`, `env` ([`listing_env`]), the identity of the `git` binary `PATH`
/// finds (device, inode, size, change and modification times), the listing itself, and
/// what every file it may have been read from is now (device, inode, content hash, or
/// missing): the repository's config files, `HEAD`, each entry's origin (every scope) and
/// each included file, and the global and system files git reads when present —
/// `GIT_CONFIG_GLOBAL` or `~/.gitconfig` and `$XDG_CONFIG_HOME/git/config` (else
/// `~/.config/git/config`), `GIT_CONFIG_SYSTEM` or `/etc/gitconfig` and git's own
/// `<prefix>/etc/gitconfig`. Any of those changed: another key.
pub(crate) fn listing_key(
    always: &[&str],
    place: &Place,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    listing: &[u8],
    entries: &[(String, String, String, String)],
) -> String {
    use sha2::{Digest, Sha256};
    use std::os::unix::ffi::OsStrExt;
    let var = |name: &str| {
        env.iter()
            .find(|(k, _)| k.as_bytes() == name.as_bytes())
            .map(|(_, v)| v.as_os_str())
    };
    let home = var("HOME");
    let mut paths = config_paths(
        place,
        entries
            .iter()
            .map(|(_, o, k, v)| (o.as_str(), k.as_str(), v.as_str())),
        home,
    );
    let git = git_on_path(var("PATH"), &place.top);
    if let Some(home) = home {
        paths.push(PathBuf::from(home).join(".gitconfig"));
        paths.push(PathBuf::from(home).join(".config/git/config"));
    }
    if let Some(xdg) = var("XDG_CONFIG_HOME") {
        paths.push(PathBuf::from(xdg).join("git/config"));
    }
    for name in ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"] {
        if let Some(file) = var(name) {
            paths.push(PathBuf::from(file));
        }
    }
    paths.push(PathBuf::from("/etc/gitconfig"));
    if let Some(prefix) = git.as_deref().and_then(Path::parent).and_then(Path::parent) {
        paths.push(prefix.join("etc/gitconfig"));
    }
    let mut hasher = Sha256::new();
    let mut feed = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    feed(b"git-config-listing v1");
    for setting in always {
        feed(setting.as_bytes());
    }
    for part in [&place.top, &place.git_dir, &place.common_dir] {
        feed(part.as_os_str().as_bytes());
    }
    for (name, value) in env {
        feed(name.as_bytes());
        feed(value.as_bytes());
    }
    let binary = git
        .as_deref()
        .and_then(|git| std::fs::metadata(git).ok())
        .map(|m| {
            format!(
                "{:?} {} {} {} {}.{} {}.{}",
                git,
                m.dev(),
                m.ino(),
                m.size(),
                m.ctime(),
                m.ctime_nsec(),
                m.mtime(),
                m.mtime_nsec()
            )
        });
    feed(format!("{binary:?}").as_bytes());
    feed(listing);
    for (path, seen) in ConfigSeen::of_paths(paths).files {
        feed(path.as_os_str().as_bytes());
        feed(format!("{seen:?}").as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The listing kept in `file` when its key is `key` now; `None` when the record is
/// missing, unreadable or keyed otherwise. `key_of` computes the key of a listing now.
pub(crate) fn load_listing(file: &Path, key_of: impl FnOnce(&[u8]) -> String) -> Option<Vec<u8>> {
    let bytes = std::fs::read(file).ok()?;
    let record: ListingRecord = serde_json::from_slice(&bytes).ok()?;
    (key_of(&record.listing) == record.key).then_some(record.listing)
}

/// Keeps `listing` with its `key` in `file` (written beside it, then renamed: a reader
/// sees the old record or the new one). A failure is logged only: the next process lists
/// again.
pub(crate) fn store_listing(file: &Path, key: String, listing: &[u8]) {
    let record = ListingRecord {
        key,
        listing: listing.to_vec(),
    };
    let Ok(bytes) = serde_json::to_vec(&record) else {
        return;
    };
    let mut name = std::ffi::OsString::from(".");
    name.push(file.file_name().unwrap_or_default());
    name.push(format!(".tmp-{}", std::process::id()));
    let tmp = file.with_file_name(name);
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, file));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        tracing::debug!(
            "cannot keep the git config listing in {}: {e}",
            file.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_listing_is_keyed_by_every_file_and_variable_it_came_from() {
        let (dir, place) = repo();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".config/git")).unwrap();
        let env = |extra: &[(&str, &str)]| {
            let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![
                ("HOME".into(), home.clone().into()),
                ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ];
            env.extend(extra.iter().map(|(k, v)| ((*k).into(), (*v).into())));
            env.sort();
            env
        };
        let listing = b"global\0file:/h/.gitconfig\0user.name\nA\0".to_vec();
        let key = |env: &[_]| listing_key(&["core.bare=false"], &place, env, &listing, &[]);
        let first = key(&env(&[]));
        // Control: nothing changed, the same key (the listing is reused).
        assert_eq!(first, key(&env(&[])));
        let mut keys = vec![first];
        let mut changed = |what: &str, now: String| {
            assert!(
                !keys.contains(&now),
                "{what}: the kept listing would be reused"
            );
            keys.push(now);
        };
        std::fs::write(
            home.join(".gitconfig"),
            "[diff \"x\"]\n\ttextconv = \"cat\"\n",
        )
        .unwrap();
        changed("~/.gitconfig made", key(&env(&[])));
        std::fs::write(
            home.join(".config/git/config"),
            "[core]\n\tpager = \"less\"\n",
        )
        .unwrap();
        changed("the XDG config made", key(&env(&[])));
        std::fs::write(place.git_dir.join("config"), "[core]\n\tbare = false\n").unwrap();
        changed("the repository's config", key(&env(&[])));
        changed(
            "GIT_CONFIG_PARAMETERS",
            key(&env(&[("GIT_CONFIG_PARAMETERS", "'x.y'='z'")])),
        );
        changed(
            "XDG_CONFIG_HOME",
            key(&env(&[("XDG_CONFIG_HOME", "/elsewhere")])),
        );
        changed(
            "another git on PATH",
            key(&env(&[])
                .into_iter()
                .map(|(k, v)| {
                    if k == "PATH" {
                        (k, "/nowhere".into())
                    } else {
                        (k, v)
                    }
                })
                .collect::<Vec<_>>()),
        );
        changed(
            "the supervisor's own settings",
            listing_key(&["core.bare=true"], &place, &env(&[]), &listing, &[]),
        );

        // Kept and loaded: only while the key is the same.
        let file = dir.path().join(LISTING_FILE);
        let now = key(&env(&[]));
        store_listing(&file, now.clone(), &listing);
        assert_eq!(load_listing(&file, |_| now.clone()), Some(listing.clone()));
        assert_eq!(load_listing(&file, |_| "other".to_owned()), None);
        std::fs::write(&file, b"{").unwrap();
        assert_eq!(load_listing(&file, |_| now.clone()), None);
    }

    fn repo() -> (tempfile::TempDir, Place) {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join(".git/refs/heads")).unwrap();
        std::fs::create_dir_all(top.join(".git/objects")).unwrap();
        std::fs::write(top.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let git_dir = top.join(".git");
        let place = Place::hold(&top, top.clone(), git_dir.clone(), &git_dir, Vec::new()).unwrap();
        (dir, place)
    }

    #[test]
    fn a_git_dir_replaced_or_linked_is_named() {
        let (_dir, place) = repo();
        assert_eq!(place.changed(), None);
        std::fs::write(place.git_dir.join("objects/info-alternates-like"), "x").unwrap();
        assert_eq!(place.changed(), None, "a new object file is no change");
        let elsewhere = place.top.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::create_dir_all(place.git_dir.join("logs/refs/heads")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, place.git_dir.join("logs/refs/heads/main")).unwrap();
        let changed = place.changed().unwrap();
        assert!(
            changed.contains("logs/refs/heads/main is a symbolic link"),
            "{changed}"
        );
        std::fs::rename(place.git_dir.clone(), place.top.join("old")).unwrap();
        std::fs::write(place.top.join(".git"), "gitdir: /elsewhere\n").unwrap();
        let changed = place.changed().unwrap();
        assert!(
            changed.contains("/.git was a directory at boot, is a file now"),
            "{changed}"
        );
    }

    #[test]
    fn a_work_tree_moved_away_from_its_git_dir_is_refused() {
        let (_dir, place) = repo();
        let other = place.top.join("sub");
        std::fs::create_dir(&other).unwrap();
        let refused = Place::hold(
            &other,
            other.clone(),
            place.git_dir.clone(),
            &place.git_dir,
            Vec::new(),
        )
        .unwrap_err();
        assert!(refused.contains("core.worktree"), "{refused}");
    }

    #[test]
    fn a_planted_commondir_or_link_is_refused_at_boot_and_set_aside_after_a_round() {
        let hold = |place: &Place| {
            Place::hold(
                &place.top,
                place.top.clone(),
                place.git_dir.clone(),
                &place.git_dir,
                Vec::new(),
            )
        };
        // A `commondir` naming another repository (or a copy in the tree), left before a
        // boot: refused, whoever wrote it.
        let (_dir, place) = repo();
        let other = place.top.join(".cache/cd");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(place.git_dir.join("commondir"), "../.cache/cd\n").unwrap();
        let refused = hold(&place).unwrap_err();
        assert!(refused.contains("commondir names"), "{refused}");
        // The same, made during a round: named, then set aside (kept, no longer read).
        std::fs::remove_file(place.git_dir.join("commondir")).unwrap();
        let place = hold(&place).unwrap();
        std::fs::write(place.git_dir.join("commondir"), "../.cache/cd\n").unwrap();
        let changed = place.changed().unwrap();
        assert!(
            changed.contains("commondir was missing at boot"),
            "{changed}"
        );
        let aside = place.set_aside_plants();
        assert_eq!(aside.len(), 1, "{aside:?}");
        assert!(aside[0].contains("commondir set aside as"), "{aside:?}");
        assert!(!place.git_dir.join("commondir").exists());
        assert_eq!(place.changed(), None, "{aside:?}");
        // A link at `logs` (the supervisor's reflog writes would go through it): refused at
        // boot; made during a round, set aside, its target untouched.
        let target = place.top.join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        std::fs::rename(place.git_dir.join("refs"), place.git_dir.join("refs.old")).unwrap();
        std::os::unix::fs::symlink(&target, place.git_dir.join("refs")).unwrap();
        let refused = hold(&place).unwrap_err();
        assert!(refused.contains("refs is a symbolic link"), "{refused}");
        let aside = place.set_aside_plants();
        assert!(
            aside.iter().any(|a| a.contains("/refs set aside as")),
            "{aside:?}"
        );
        assert!(std::fs::symlink_metadata(place.git_dir.join("refs")).is_err());
        assert!(target.is_dir());
        // A FIFO at `HEAD` (nothing ever writes it) is looked at without waiting on it.
        std::fs::remove_file(place.git_dir.join("HEAD")).unwrap();
        nix::unistd::mkfifo(
            &place.git_dir.join("HEAD"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        let (sent, looked) = std::sync::mpsc::channel();
        let looking = place.clone();
        std::thread::spawn(move || sent.send(looking.changed()).unwrap());
        assert!(
            looked
                .recv_timeout(std::time::Duration::from_secs(10))
                .is_ok(),
            "the supervisor waited on a FIFO at HEAD"
        );
        std::fs::remove_file(place.git_dir.join("HEAD")).unwrap();
        std::fs::write(place.git_dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        // A link where git writes by name (`COMMIT_EDITMSG`, opened for writing by every
        // commit): named, refused at boot, set aside with its target untouched.
        let target = place.top.join("bashrc");
        std::fs::write(&target, "the operator's\n").unwrap();
        let message = place.git_dir.join("COMMIT_EDITMSG");
        std::os::unix::fs::symlink(&target, &message).unwrap();
        assert!(place
            .changed()
            .unwrap()
            .contains("COMMIT_EDITMSG is a symbolic link"));
        assert!(hold(&place)
            .unwrap_err()
            .contains("COMMIT_EDITMSG is a symbolic link"));
        let aside = place.set_aside_plants();
        assert!(
            aside
                .iter()
                .any(|a| a.contains("COMMIT_EDITMSG set aside as")),
            "{aside:?}"
        );
        assert!(std::fs::symlink_metadata(&message).is_err());
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "the operator's\n"
        );
        // A fake common dir whose `worktrees` links back above the git dir, so that the git
        // dir looks like one of its worktrees: refused (the top's `.git` is a directory, the
        // common dir lies in the tree, its `worktrees` is a link).
        let fake = place.top.join(".cache/cd");
        std::os::unix::fs::symlink("../..", fake.join("worktrees")).unwrap();
        std::fs::write(place.git_dir.join("commondir"), "../.cache/cd\n").unwrap();
        let refused = Place::hold(
            &place.top,
            place.top.clone(),
            place.git_dir.clone(),
            &fake,
            Vec::new(),
        )
        .unwrap_err();
        assert!(refused.contains("commondir names"), "{refused}");
        std::fs::remove_file(place.git_dir.join("commondir")).unwrap();
        // A linked worktree's own `commondir` is git's, and held.
        std::fs::rename(place.git_dir.join("refs.old"), place.git_dir.join("refs")).unwrap();
        let linked = place.git_dir.join("worktrees/side");
        std::fs::create_dir_all(&linked).unwrap();
        std::fs::write(linked.join("commondir"), "../..\n").unwrap();
        std::fs::write(linked.join("HEAD"), "ref: refs/heads/side\n").unwrap();
        let side = place.top.join("side");
        std::fs::create_dir(&side).unwrap();
        std::fs::write(side.join(".git"), format!("gitdir: {}\n", linked.display())).unwrap();
        Place::hold(
            &side,
            side.clone(),
            linked.clone(),
            &place.git_dir,
            Vec::new(),
        )
        .unwrap();
    }

    #[test]
    fn git_is_never_taken_from_the_tree_or_a_relative_path_entry() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, place) = repo();
        let planted = |dir: &Path| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("git"), "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(dir.join("git"), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        };
        let in_tree = place.top.join("node_modules/.bin");
        planted(&in_tree);
        let outside = place.top.parent().unwrap().join(format!(
            "{}-bin",
            place.top.file_name().unwrap().to_string_lossy()
        ));
        planted(&outside);
        let path = std::env::join_paths([
            PathBuf::from("node_modules/.bin"),
            PathBuf::from(""),
            in_tree.clone(),
            outside.clone(),
        ])
        .unwrap();
        assert_eq!(
            git_on_path(Some(&path), &place.top),
            Some(outside.join("git"))
        );
        // What git itself starts is looked for in the same directories.
        assert_eq!(
            path_outside_tree(&path, &place.top),
            std::slice::from_ref(&outside),
            "relative, empty and in-tree entries dropped"
        );
        // Only entries of the tree: none.
        let path = std::env::join_paths([in_tree.clone()]).unwrap();
        assert_eq!(git_on_path(Some(&path), &place.top), None);
        // The control: the tree is another directory, the same entry is taken.
        assert_eq!(
            git_on_path(Some(&path), Path::new("/nonexistent-tree")),
            Some(in_tree.join("git"))
        );
        std::fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn an_included_file_that_appears_changes_the_config() {
        let (_dir, place) = repo();
        let origin = format!("file:{}", place.git_dir.join("config").display());
        let seen = ConfigSeen::of(
            &place,
            [(origin.as_str(), "include.path", "extra.inc")].into_iter(),
        );
        assert!(seen.unchanged());
        std::fs::write(place.git_dir.join("extra.inc"), "[x]\n").unwrap();
        assert!(!seen.unchanged());
    }
}
