//! The one place that runs git. Every call is bounded (docs/configuration.md, `[vcs]
//! git_timeout_s`): no controlling terminal, killed with its process group on timeout or
//! stop. The repository is held by identity (docs/security.md, "The supervisor is not the
//! agent's deputy"): its git dir, common dir and work tree are discovered once, with git's
//! own ownership check (`safe.directory`), and every later call is pinned to them
//! (`GIT_DIR`, `GIT_COMMON_DIR`, `GIT_WORK_TREE`: no discovery, so no `.git` file, no
//! `core.worktree` or `core.bare` the agent wrote moves it), with every other `GIT_*`
//! variable of the supervisor's environment removed ([`KEPT_ENV`] aside); a git dir that
//! changed kind or place since ([`Place::changed`]) fails every call, naming what changed.
//! Every call runs in `work_dir` and runs no program the repository configured
//! ([`program_overrides`], docs/security.md "The supervisor's git"): hooks are off
//! (`core.hooksPath=/dev/null`), `core.fsmonitor` is off, and every setting of the
//! repository's own config (`.git/config`, `config.worktree` and what they include: the
//! agent can write them) that makes git run a program — filters, diff and merge drivers,
//! pagers, editors, credential helpers, signing programs — is overridden on the command
//! line with the operator's own (global or system) value, or with one that runs nothing.
//! The config is listed again only when a file it is read from changed ([`ConfigSeen`]).
//! No nested repository's program runs either: `status` does not look inside submodules
//! (`--ignore-submodules=dirty`) and a stash never names one ([`Repo::scope`]), the only
//! two ways the supervisor's git would start a git in a nested repository.
//! Paths a host or the agent named go to git on its stdin (`--stdin`,
//! `--pathspec-from-file=-`), never as arguments (there may be more than an argument list
//! holds), and as `:(literal)` pathspecs, so no path is ever read as a pattern.

use agent_runner_protocol::reflog::reflog_action;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

use crate::config::DEFAULT_GIT_TIMEOUT_S;
use crate::record::stop::StopWatch;
use crate::runtime::git::attribution::OwnFiles;
use crate::runtime::git::config_keys as git_config_keys;
use crate::runtime::git::exec_surface;
use crate::runtime::git::index_file::{self, Marks};
use crate::runtime::git::no_terminal;
use crate::runtime::git::path_name;
use crate::runtime::git::place::{self as git_place, ConfigSeen, Place};

/// The rest of a `git status --porcelain=v2` entry after its first `n` space-separated
/// fields (the path, which may hold spaces).
fn nth_rest(entry: &[u8], n: usize) -> Option<&[u8]> {
    entry.splitn(n + 1, |b| *b == b' ').nth(n)
}

/// Field `n` (from 0) of a `git status --porcelain=v2` entry.
fn nth_field(entry: &[u8], n: usize) -> Option<&[u8]> {
    entry.split(|b| *b == b' ').nth(n)
}

/// SIGKILLs the process group a git command leads (a signer it started included).
fn kill_group(group: Option<Pid>) {
    if let Some(group) = group {
        let _ = killpg(group, Signal::SIGKILL);
    }
}

/// `-c` settings every call carries, whatever any config says: no hooks, no fsmonitor, no
/// untracked cache, no automatic gc or maintenance after a commit (they would outlive the call's bound), never
/// a bare repository (the pinned work tree is the one), never into submodules (a git
/// started there reads the nested repository's own config).
const ALWAYS: [&str; 8] = [
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    // No untracked cache: an index the agent wrote could hold a stale one that hides an
    // untracked file from `status` (docs/security.md, "What hides a change").
    "core.untrackedCache=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "core.bare=false",
    "submodule.recurse=false",
    "status.submoduleSummary=false",
];

/// The `GIT_*` variables of the supervisor's environment its git keeps: the operator's
/// identity and which global and system config to read. Every other one (`GIT_DIR`,
/// `GIT_WORK_TREE`, `GIT_INDEX_FILE`, `GIT_OBJECT_DIRECTORY`, `GIT_CONFIG_PARAMETERS`,
/// `GIT_SSH_COMMAND`, `GIT_EXEC_PATH` …) is removed: none may move where git reads or
/// writes, or what it runs.
const KEPT_ENV: [&str; 9] = [
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
];

/// Whether config key `key` (as `git config --list` prints it: section and name in lower
/// case) names a program for git to run, or shapes how one is called: the reviewed list's
/// [`git_config_keys::overridden`]. (Whether to sign, `commit.gpgSign`, is the
/// repository's to say; the signing program is the operator's or git's default.)
fn runs_a_program(key: &str) -> bool {
    git_config_keys::overridden(key)
}

/// The value for an overridden `key` the operator did not set: one that runs nothing, for a
/// signing program git's default for its format (the machine's, not the agent's), for a key
/// that hides a change git's default ([`git_config_keys::Effect::Hides`]).
fn inert_value(key: &str) -> String {
    let value = match key {
        // git's own default: `$XDG_CONFIG_HOME/git/ignore`, else `~/.config/git/ignore`.
        "core.excludesfile" => {
            return std::env::var_os("XDG_CONFIG_HOME")
                .filter(|d| !d.is_empty())
                .map_or("~/.config/git/ignore".to_owned(), |d| {
                    format!("{}/git/ignore", d.to_string_lossy())
                })
        }
        "core.ignorestat" => "false",
        "core.checkstat" => "default",
        "core.trustctime" => "true",
        "status.showuntrackedfiles" => "normal",
        "core.ignorecase" | "core.untrackedcache" | "feature.manyfiles" => "false",
        "index.threads" => "1",
        "index.recordoffsettable" | "index.recordendofindexentries" => "false",
        "diff.ignoresubmodules" => "none",
        _ if key.starts_with("submodule.") && key.ends_with(".ignore") => "none",
        "core.fsmonitor" => "false",
        "core.hookspath" => "/dev/null",
        "gpg.program" | "gpg.openpgp.program" => "gpg",
        "gpg.x509.program" => "gpgsm",
        "gpg.ssh.program" => "ssh-keygen",
        _ if key.ends_with(".required") => "false",
        // An empty command is no command: git runs no filter, pager or helper.
        _ => "",
    };
    value.to_owned()
}

/// The entries of `listing`, the output of `git config --list --show-scope --show-origin
/// -z` (`scope NUL origin NUL key LF value NUL`, or `… key NUL` for a key without a value):
/// `(scope, origin, key, value)`.
fn config_entries(listing: &[u8]) -> Vec<(String, String, String, String)> {
    let mut fields = listing.split(|b| *b == 0);
    let mut entries = Vec::new();
    while let (Some(scope), Some(origin), Some(entry)) =
        (fields.next(), fields.next(), fields.next())
    {
        let entry = String::from_utf8_lossy(entry);
        let (key, value) = entry.split_once('\n').unwrap_or((&entry, ""));
        entries.push((
            String::from_utf8_lossy(scope).into_owned(),
            String::from_utf8_lossy(origin).into_owned(),
            key.to_owned(),
            value.to_owned(),
        ));
    }
    entries
}

/// Whether config scope `scope` is the repository's own (the agent can write it): `local`
/// and `worktree`, includes counted as their includer's.
fn repository_scope(scope: &str) -> bool {
    matches!(scope, "local" | "worktree")
}

/// `-c key=value` arguments overriding every program-running setting of the repository's
/// own config ([`repository_scope`]) among `entries` ([`config_entries`]): with the
/// operator's last `global` or `system` value of the key when there is one, else with
/// [`inert_value`].
pub(crate) fn program_overrides(entries: &[(String, String, String, String)]) -> Vec<String> {
    let mut operator: Vec<(&str, &str)> = Vec::new();
    let mut repository: Vec<&str> = Vec::new();
    for (scope, _, key, value) in entries {
        if !runs_a_program(key) {
            continue;
        }
        match scope.as_str() {
            "global" | "system" => operator.push((key, value)),
            s if repository_scope(s) => repository.push(key),
            _ => {}
        }
    }
    repository.sort();
    repository.dedup();
    repository
        .into_iter()
        .map(|key| {
            let value = operator
                .iter()
                .rev()
                .find(|(k, _)| *k == key)
                .map_or_else(|| inert_value(key), |(_, v)| (*v).to_owned());
            format!("{key}={value}")
        })
        .collect()
}

/// The filter drivers the supervisor's git will not run: those whose `clean` or `process`
/// program is set only in the repository's own config (scopes `local`, `worktree`), which
/// [`program_overrides`] blanks, with no `global` or `system` value to take its place.
/// From the config's entries as [`program_overrides`] reads them; sorted.
fn repository_only_filters(entries: &[(String, String, String, String)]) -> Vec<String> {
    let mut repository = std::collections::BTreeSet::new();
    let mut operator = HashSet::new();
    for (scope, _, key, _) in entries {
        let Some(rest) = key.strip_prefix("filter.") else {
            continue;
        };
        let Some(name) = rest
            .strip_suffix(".clean")
            .or_else(|| rest.strip_suffix(".process"))
        else {
            continue;
        };
        match scope.as_str() {
            "global" | "system" => {
                operator.insert(name.to_owned());
            }
            "local" | "worktree" => {
                repository.insert(name.to_owned());
            }
            _ => {}
        }
    }
    repository
        .into_iter()
        .filter(|name| !operator.contains(name))
        .collect()
}

/// What one listing of the repository's config gave, kept while the files it was read
/// from are unchanged ([`ConfigSeen`]).
#[derive(Clone, Debug)]
struct Listed {
    seen: ConfigSeen,
    /// [`program_overrides`].
    overrides: Vec<String>,
    /// Whether any scope sets `user.email`.
    has_email: bool,
    /// The last `core.hooksPath` of a config file.
    hooks_path: Option<String>,
    /// [`repository_only_filters`].
    repository_only_filters: Vec<String>,
}

/// The state of the work dir in one `git status`: `HEAD` and the dirty paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Look {
    /// `HEAD`'s SHA, `None` before the first commit.
    pub head: Option<String>,
    /// The branch `HEAD` is on, `None` when detached.
    pub branch: Option<String>,
    /// The dirty paths ([`Repo::dirty_files`]).
    pub files: Vec<String>,
    /// The untracked directories status lists whole (`? dir/`: with
    /// `--untracked-files=all`, only a repository nested in the tree), and the changed
    /// entries whose work-tree side is a nested repository (mode `160000` where the index
    /// holds a file), paths from the repository's top, without the slash: the operator's
    /// next `git add` makes each a gitlink (`config_watch::revert_nested`).
    pub nested: Vec<Vec<u8>>,
}

/// How a call on a repository that changed since boot fails ([`Place::changed`]).
pub(crate) const REPOSITORY_CHANGED: &str = "the repository changed since agent-runner started";

/// `args` space-joined, for messages.
fn joined_args<S: AsRef<OsStr>>(args: &[S]) -> String {
    args.iter()
        .map(|a| a.as_ref().to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A git invocation that failed: the command and what git said. Display names only the
/// subcommand (`git commit failed: …`), so a capped event keeps git's reason rather than
/// a long list of paths.
#[derive(Debug, thiserror::Error)]
#[error("git {} failed: {detail}", subcommand(args))]
pub(crate) struct GitError {
    /// The arguments, space-joined.
    pub args: String,
    /// git's stderr (trimmed), the spawn error, or why it was killed.
    pub detail: String,
}

/// The first word of `args` that is neither an option nor the value of a `-c`.
fn subcommand(args: &str) -> &str {
    let mut words = args.split(' ');
    while let Some(word) = words.next() {
        if word == "-c" {
            words.next();
        } else if !word.starts_with('-') {
            return word;
        }
    }
    args
}

/// git made stash `sha` (the round's work is in it) and then failed.
#[derive(Debug, thiserror::Error)]
#[error("git made stash {sha} (the round's work is in it) but then failed, so the tree was not cleaned: {error}")]
pub(crate) struct StashMadeButFailed {
    /// The stash commit git made.
    pub sha: String,
    /// What git said.
    pub error: GitError,
}

/// Why [`Repo::stash_push`] failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StashError {
    /// No stash was made.
    #[error(transparent)]
    Git(#[from] GitError),
    /// A stash was made, then git failed.
    #[error(transparent)]
    MadeButFailed(StashMadeButFailed),
}

/// Why a work dir is not a git working tree the supervisor can use
/// ([`Repo::not_a_work_tree`]): what is wrong and how to fix it.
#[derive(Clone, Debug)]
pub(crate) struct NotWorkTree {
    /// What is wrong, naming the work dir.
    pub reason: String,
    /// What the operator can do.
    pub fix: String,
    /// The work dir lies in no git repository at all (not: git refuses it, or it is not
    /// writable): rounds run there without git (docs/operations.md, "Without git").
    pub outside_git: bool,
}

impl std::fmt::Display for NotWorkTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.reason, self.fix)
    }
}

/// How the repository is found ([`Repo::place`]): git's own discovery from the work dir,
/// with its ownership check.
const DISCOVERY: [&str; 6] = [
    "rev-parse",
    "--is-inside-work-tree",
    "--show-prefix",
    "--show-toplevel",
    "--absolute-git-dir",
    "--git-common-dir",
];

/// A git working tree seen from `work_dir` (which may be a subdirectory of a bigger
/// repository: everything is limited to it), with the supervisor's own files, which never
/// count as dirty.
#[derive(Clone, Debug)]
pub(crate) struct Repo {
    work_dir: PathBuf,
    own: OwnFiles,
    timeout: Duration,
    stop: Option<StopWatch>,
    /// The repository every call is pinned to, found by the first call
    /// ([`Repo::not_a_work_tree`] at boot); shared by the clones.
    place: Arc<OnceLock<Place>>,
    /// The discovery started ahead of the first call ([`Repo::discover_ahead`]), whose
    /// answer that call takes; shared by the clones.
    discovery: Arc<Mutex<Option<Child>>>,
    /// The last listing of its config; shared by the clones.
    listed: Arc<Mutex<Option<Listed>>>,
    /// The `git` to run and the `PATH` it gets, as last resolved ([`Repo::git_program`]);
    /// shared by the clones.
    program: Arc<Mutex<Option<Program>>>,
    /// What [`Repo::index_marks`] set aside since [`Repo::take_index_set_aside`] was last
    /// called; shared by the clones.
    index_set_aside: Arc<Mutex<Vec<String>>>,
    /// The index's identity and marks as last read in process ([`Repo::read_index`]);
    /// shared by the clones.
    last_index: Arc<Mutex<Option<ReadIndex>>>,
    /// A file whose change, while a command runs, means the command is past its point of
    /// no return ([`Repo::finishing_when`]).
    committed_by: Option<PathBuf>,
    /// Where the listing of the config is kept across processes
    /// ([`git_place::LISTING_FILE`]); `None`: not kept.
    listing_record: Option<PathBuf>,
}

/// An index's identity (device, inode, size, modification and change times) and its
/// marks as read then ([`Repo::read_index`]).
type ReadIndex = ([u64; 7], Marks);

/// The `git` found for a work tree and a `PATH` ([`Repo::git_program`]).
#[derive(Clone, Debug)]
struct Program {
    tree: PathBuf,
    path: OsString,
    /// The program ([`git_place::git_on_path`]) and the `PATH` git gets
    /// ([`git_place::path_outside_tree`]); `None`: no git there.
    found: Option<(PathBuf, OsString)>,
}

impl Repo {
    /// The tree at `work_dir`; paths in `own` are never dirt. Each git command may run
    /// [`DEFAULT_GIT_TIMEOUT_S`] until [`Repo::with_timeout`] says otherwise.
    pub(crate) fn new(work_dir: &Path, own: OwnFiles) -> Self {
        Repo {
            work_dir: work_dir.to_owned(),
            own,
            timeout: Duration::from_secs(DEFAULT_GIT_TIMEOUT_S),
            stop: None,
            place: Arc::default(),
            discovery: Arc::default(),
            listed: Arc::default(),
            program: Arc::default(),
            index_set_aside: Arc::default(),
            last_index: Arc::default(),
            committed_by: None,
            listing_record: None,
        }
    }

    /// The same repository, whose config listing is kept in the state dir `state_dir`
    /// ([`git_place::LISTING_FILE`]) and reused by the next process while everything it
    /// was listed from is the same ([`git_place::listing_key`]).
    pub(crate) fn with_listing_kept_in(mut self, state_dir: &Path) -> Self {
        self.listing_record = Some(state_dir.join(git_place::LISTING_FILE));
        self
    }

    /// The same repository, whose commands, when their timeout runs out after `file`
    /// changed (its size or modification time), are given one more timeout to finish
    /// before being killed: past that change git has done what cannot be taken back (a
    /// `git stash push` that stored its stash, appending to `logs/refs/stash`, goes on to
    /// clean the tree), and killing it then would leave the work half in the stash, half
    /// in the tree (docs/operations.md, "Large trees").
    fn finishing_when(&self, file: PathBuf) -> Repo {
        Repo {
            committed_by: Some(file),
            ..self.clone()
        }
    }

    /// Each git command is killed (with its process group) after `timeout`.
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// A stop that arrives while a git command runs (a `stop`, `kill`, SIGTERM or SIGINT
    /// raising the level) kills it with its process group.
    pub(crate) fn stop_on(&mut self, stop: &StopWatch) {
        self.stop = Some(stop.clone());
    }

    /// Runs one git command, bounded: without a controlling terminal, so nothing can prompt
    /// on one (a passphrase prompt fails instead of waiting: [`no_terminal::detach`]), stdin from
    /// `/dev/null`, killed with its process group after the timeout or when a stop arrives.
    async fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<String, GitError> {
        self.run_with_env(args, &[]).await
    }

    /// [`Repo::run`] with variables `env` added to git's environment.
    async fn run_with_env<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        env: &[(&str, &str)],
    ) -> Result<String, GitError> {
        self.run_input(args, env, None).await
    }

    /// [`Repo::run_with_env`] with `stdin` (when given) written to git's standard input
    /// instead of `/dev/null`: how a list of paths of any length reaches git (`--stdin`,
    /// `--pathspec-from-file=-`) without meeting the kernel's limit on the size of the
    /// arguments (`E2BIG`, "Argument list too long").
    async fn run_input<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        env: &[(&str, &str)],
        stdin: Option<&[u8]>,
    ) -> Result<String, GitError> {
        self.run_bytes_with_env(args, env, stdin)
            .await
            .map(|out| String::from_utf8_lossy(&out).into_owned())
    }

    /// [`Repo::run`], stdout as bytes (file names are bytes).
    async fn run_bytes<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Vec<u8>, GitError> {
        self.run_bytes_with_env(args, &[], None).await
    }

    /// [`Repo::run_bytes`] with variables `env` added to git's environment and `stdin`
    /// ([`Repo::run_input`]), pinned to the repository found at boot ([`Repo::place`]) and
    /// with the overrides of its config ([`Repo::listed`]). Fails, naming what changed,
    /// when the repository changed kind or place since boot ([`Place::changed`]).
    async fn run_bytes_with_env<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        env: &[(&str, &str)],
        stdin: Option<&[u8]>,
    ) -> Result<Vec<u8>, GitError> {
        let listed = self.listed().await.map_err(|err| GitError {
            args: joined_args(args),
            detail: err.detail,
        })?;
        self.run_confined(
            Some(self.place().await?),
            &listed.overrides,
            args,
            env,
            stdin,
        )
        .await
    }

    /// Starts the discovery of the repository ([`Repo::place`]) now and returns at once:
    /// git runs while the supervisor goes on booting, and the first call takes its answer
    /// (docs/performance.md, "Processes of one round"). It only reads; one that cannot
    /// start is started again, and its failure told, by that call.
    pub(crate) fn discover_ahead(&self) {
        if self.place.get().is_some() {
            return;
        }
        if let Ok(child) = self.spawn_confined(None, &[], &DISCOVERY, &[], false) {
            *self.discovery.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
        }
    }

    /// The repository the calls are pinned to: found by the first call, with git's own
    /// discovery from `work_dir` and its ownership check ([`Place::hold`]).
    async fn place(&self) -> Result<&Place, GitError> {
        if let Some(place) = self.place.get() {
            return Ok(place);
        }
        let args = DISCOVERY;
        let started = self
            .discovery
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let out = match started {
            Some(child) => self.finish(child, joined_args(&args), None).await?,
            None => self.run_confined(None, &[], &args, &[], None).await?,
        };
        let text = String::from_utf8_lossy(&out);
        let refused = |detail: String| GitError {
            args: joined_args(&args),
            detail,
        };
        let lines: Vec<&str> = text.lines().collect();
        let [inside, prefix, top, git_dir, common] = lines[..] else {
            return Err(refused(format!("unexpected output: {}", text.trim())));
        };
        if inside != "true" {
            return Err(refused("not inside a work tree".to_owned()));
        }
        let place = Place::hold(
            &self.work_dir,
            PathBuf::from(top),
            PathBuf::from(git_dir),
            Path::new(common),
            prefix.as_bytes().to_vec(),
        )
        .map_err(refused)?;
        Ok(self.place.get_or_init(|| place))
    }

    /// The overrides and facts of the repository's config: listed (`git config --list`,
    /// which runs nothing) when no listing stands, else the last listing while the files it
    /// was read from are unchanged ([`ConfigSeen`]): the agent may write the config, or a
    /// file it includes, at any time, and then it is listed again. A listing that fails (a
    /// broken config, a timeout, a stop) fails the command: it would not run safely.
    async fn listed(&self) -> Result<Listed, GitError> {
        let place = self.place().await?;
        if let Some(listed) = self
            .listed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            if listed.seen.unchanged() {
                return Ok(listed.clone());
            }
        }
        let env = git_place::listing_env();
        let key_of = |listing: &[u8]| {
            git_place::listing_key(&ALWAYS, place, &env, listing, &config_entries(listing))
        };
        let kept = self
            .listing_record
            .as_deref()
            .and_then(|file| git_place::load_listing(file, key_of));
        let listing = match kept {
            Some(listing) => listing,
            None => {
                let listing = self
                    .run_confined(
                        Some(place),
                        &[],
                        &["config", "--list", "--show-scope", "--show-origin", "-z"],
                        &[],
                        None,
                    )
                    .await
                    .map_err(|err| GitError {
                        args: err.args.clone(),
                        detail: format!("reading its config: {}", err.detail),
                    })?;
                if let Some(file) = &self.listing_record {
                    git_place::store_listing(file, key_of(&listing), &listing);
                }
                listing
            }
        };
        let entries = config_entries(&listing);
        let seen = ConfigSeen::of(
            place,
            entries
                .iter()
                .filter(|(scope, ..)| repository_scope(scope))
                .map(|(_, origin, key, value)| (origin.as_str(), key.as_str(), value.as_str())),
        );
        let listed = Listed {
            seen,
            overrides: program_overrides(&entries),
            has_email: entries.iter().any(|(_, _, key, _)| key == "user.email"),
            hooks_path: entries
                .iter()
                .rev()
                .find(|(scope, _, key, _)| key == "core.hookspath" && scope != "command")
                .map(|(.., value)| value.clone()),
            repository_only_filters: repository_only_filters(&entries),
        };
        *self.listed.lock().unwrap_or_else(|e| e.into_inner()) = Some(listed.clone());
        Ok(listed)
    }

    /// One bounded git command with [`ALWAYS`] and `overrides` as `-c` settings, git's
    /// pager, editors and external diff disabled through the environment too, no `GIT_*`
    /// of the supervisor's environment but [`KEPT_ENV`]; pinned to `place` (`GIT_DIR`,
    /// `GIT_COMMON_DIR`, `GIT_WORK_TREE`, no replace refs) unless it is `None` (the
    /// discovery at boot) and refused when `place` changed since boot; `stdin` written to
    /// its standard input (`/dev/null` when `None`).
    async fn run_confined<S: AsRef<OsStr>>(
        &self,
        place: Option<&Place>,
        overrides: &[String],
        args: &[S],
        env: &[(&str, &str)],
        stdin: Option<&[u8]>,
    ) -> Result<Vec<u8>, GitError> {
        let child = self.spawn_confined(place, overrides, args, env, stdin.is_some())?;
        self.finish(child, joined_args(args), stdin).await
    }

    /// Starts the git command [`Repo::run_confined`] runs, its standard input a pipe when
    /// `piped_stdin`, else `/dev/null`.
    fn spawn_confined<S: AsRef<OsStr>>(
        &self,
        place: Option<&Place>,
        overrides: &[String],
        args: &[S],
        env: &[(&str, &str)],
        piped_stdin: bool,
    ) -> Result<Child, GitError> {
        let failed = |detail: String| GitError {
            args: joined_args(args),
            detail,
        };
        let tree = place.map_or(self.work_dir.as_path(), |p| p.top.as_path());
        let Some((program, search)) = self.git_program(tree) else {
            return Err(failed(format!(
                "no git on PATH outside the work tree {} (relative entries and those inside the tree are skipped: a git there may be the agent's)",
                tree.display()
            )));
        };
        let mut cmd = Command::new(program);
        // As a shell would start it: git finds its own programs from `argv[0]` as before.
        cmd.arg0("git");
        // What git starts (a signer, a filter of the operator's global config) is found on
        // the same directories, none of them the agent's.
        cmd.env("PATH", search);
        for (name, _) in std::env::vars_os() {
            let name_bytes = name.as_bytes();
            if name_bytes.starts_with(b"GIT_")
                && !KEPT_ENV.iter().any(|k| k.as_bytes() == name_bytes)
            {
                cmd.env_remove(name);
            }
        }
        if let Some(place) = place {
            if let Some(changed) = place.changed() {
                return Err(failed(format!(
                    "{REPOSITORY_CHANGED}: {changed}; the supervisor's git no longer touches it (restart agent-runner once the repository is as it should be)"
                )));
            }
            cmd.env("GIT_DIR", &place.git_dir)
                .env("GIT_COMMON_DIR", &place.common_dir)
                .env("GIT_WORK_TREE", &place.top)
                .env("GIT_NO_REPLACE_OBJECTS", "1");
        }
        for setting in ALWAYS
            .iter()
            .copied()
            .chain(overrides.iter().map(String::as_str))
        {
            cmd.arg("-c").arg(setting);
        }
        cmd.args(args)
            .env("GIT_PAGER", "cat")
            .env("GIT_EDITOR", "true")
            .env("GIT_SEQUENCE_EDITOR", "true")
            .env_remove("GIT_EXTERNAL_DIFF")
            .env_remove("GIT_ASKPASS")
            .env_remove("SSH_ASKPASS")
            .envs(env.iter().copied())
            .current_dir(&self.work_dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env_remove("GPG_TTY")
            .stdin(if piped_stdin {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        no_terminal::detach(cmd.as_std_mut());
        cmd.spawn().map_err(|e| failed(e.to_string()))
    }

    /// The `git` to run for the work tree `tree` and the `PATH` it gets
    /// ([`git_place::git_on_path`], [`git_place::path_outside_tree`]): resolved again only
    /// when the tree or the supervisor's `PATH` differ from the last call's (each
    /// resolution takes the real path of every `PATH` entry). The directories it resolves
    /// lie outside the tree, out of the confined agent's reach.
    fn git_program(&self, tree: &Path) -> Option<(PathBuf, OsString)> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut last = self.program.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = last.as_ref().filter(|p| p.tree == tree && p.path == path) {
            return known.found.clone();
        }
        let found = git_place::git_on_path(Some(&path), tree).map(|program| {
            let search =
                std::env::join_paths(git_place::path_outside_tree(&path, tree)).unwrap_or_default();
            (program, search)
        });
        *last = Some(Program {
            tree: tree.to_path_buf(),
            path,
            found: found.clone(),
        });
        found
    }

    /// Waits for `child` (the git command `joined`, started by [`Repo::spawn_confined`])
    /// with `stdin` written to it, bounded by the timeout and the stop; its standard output
    /// when it succeeds.
    async fn finish(
        &self,
        mut child: Child,
        joined: String,
        stdin: Option<&[u8]>,
    ) -> Result<Vec<u8>, GitError> {
        let failed = |detail: String| GitError {
            args: joined.clone(),
            detail,
        };
        let group = child.id().map(|pid| Pid::from_raw(pid as i32));
        // Written while the output is read, so neither side waits on a full pipe; a git
        // that exits before reading everything ends the write (its status tells).
        let feed = child.stdin.take().zip(stdin);
        let write_stdin = async move {
            if let Some((mut pipe, bytes)) = feed {
                let _ = pipe.write_all(bytes).await;
            }
        };
        let run = async { tokio::join!(child.wait_with_output(), write_stdin).0 };
        tokio::pin!(run);
        let mut stop = self.stop.clone();
        let level = stop.as_ref().map(|s| *s.borrow());
        let stopped = async {
            match (stop.as_mut(), level) {
                (Some(stop), Some(level)) => {
                    if stop.wait_for(|l| *l > level).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
                _ => std::future::pending::<()>().await,
            }
        };
        tokio::pin!(stopped);
        let mark = |file: &Path| {
            std::fs::metadata(file)
                .ok()
                .map(|m| (m.len(), m.modified().ok()))
        };
        let committed_before = self.committed_by.as_deref().map(mark);
        let mut extended = false;
        let out = loop {
            tokio::select! {
                out = &mut run => break out.map_err(|e| failed(e.to_string()))?,
                _ = tokio::time::sleep(self.timeout) => {
                    let past_no_return = !extended
                        && self.committed_by.as_deref().map(mark) != committed_before;
                    if past_no_return {
                        tracing::warn!(
                            "git {joined} ran out of git_timeout_s ({} s) after doing what cannot be taken back; it gets {} s more to finish",
                            self.timeout.as_secs(),
                            self.timeout.as_secs()
                        );
                        extended = true;
                        continue;
                    }
                    kill_group(group);
                    return Err(failed(format!(
                        "timed out after {} s ([vcs] git_timeout_s) and was killed with its process group; it runs without a terminal, so a prompt (a signing passphrase, credentials) cannot be answered",
                        self.timeout.as_secs()
                    )));
                }
                _ = &mut stopped => {
                    kill_group(group);
                    return Err(failed("killed with its process group by a stop request".into()));
                }
            }
        };
        if out.status.success() {
            Ok(out.stdout)
        } else {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let detail = if stderr.trim().is_empty() {
                stdout
            } else {
                stderr
            };
            Err(GitError {
                args: joined,
                detail: format!("{} ({})", detail.trim(), out.status),
            })
        }
    }

    /// Why `work_dir` is not a git working tree the supervisor can use, with the fix to
    /// print; `None` when it is one. This finds the repository every later call is pinned
    /// to ([`Repo::place`]). git's refusal of a repository owned by another user ("dubious
    /// ownership", its `safe.directory` rule) is told as such, not as a missing repository;
    /// a work dir this user cannot write (`access(2)` `W_OK`: permissions or a read-only
    /// mount) is refused too.
    pub(crate) async fn not_a_work_tree(&self) -> Option<NotWorkTree> {
        let dir = self.work_dir.display();
        let missing = NotWorkTree {
            reason: format!(
                "{dir} is not inside a git working tree: rounds run without git, so nothing the agent leaves is stashed or committed (dirty_action `ignore`) and `git_head` is null"
            ),
            fix: "run `git init` there (and restart) for the stash, the auto-commit and the attribution of edits".to_owned(),
            outside_git: true,
        };
        match self.place().await {
            Ok(_) => {}
            Err(e) if e.detail.contains("dubious ownership") => {
                return Some(NotWorkTree {
                    reason: format!(
                        "git refuses the repository at {dir}: it belongs to another user (git's \"dubious ownership\" check: {})",
                        e.detail.lines().next().unwrap_or_default()
                    ),
                    fix: "run agent-runner as the repository's owner, or trust it with `git config --global --add safe.directory <repository top>`".to_owned(),
                    outside_git: false,
                })
            }
            // A work tree whose own `.git` does not name its git dir (`core.worktree`
            // elsewhere): refused, never followed.
            Err(e) if e.detail.contains("core.worktree") => {
                return Some(NotWorkTree {
                    reason: format!("{dir}: {}", e.detail),
                    fix: "remove core.worktree from the repository's config (`git config --unset core.worktree`)".to_owned(),
                    outside_git: false,
                })
            }
            // Inside a git directory or a bare repository: git knows a repository, not a
            // work tree.
            Err(e)
                if e.detail.contains("must be run in a work tree")
                    || e.detail.contains("not inside a work tree") =>
            {
                return Some(NotWorkTree {
                    reason: format!("{dir} is inside a git directory or a bare repository, not a working tree"),
                    fix: "point [runtime] work_dir at a working tree (or at a directory outside any repository)".to_owned(),
                    outside_git: false,
                })
            }
            // Only git's own word that there is no repository runs rounds without git; any
            // other failure (no git, a broken config, a timeout) is refused: fail closed.
            Err(e) if e.detail.contains("not a git repository") => return Some(missing),
            Err(e) => {
                return Some(NotWorkTree {
                    reason: format!("git cannot tell whether {dir} is a git working tree: {e}"),
                    fix: "make `git -C <work_dir> rev-parse --is-inside-work-tree` work (git installed, the repository's config readable)".to_owned(),
                    outside_git: false,
                })
            }
        }
        // Every round writes the tree (the agent, the stash, the commit): a read-only one
        // (permissions, a read-only mount) is refused here, not failed round after round.
        if let Err(errno) = nix::unistd::access(
            &self.work_dir,
            nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
        ) {
            return Some(NotWorkTree {
                reason: format!("{dir} is not writable by this user: {}", errno.desc()),
                fix: "give this user write access to the work tree (or mount it read-write), or point [runtime] work_dir at a writable one".to_owned(),
                outside_git: false,
            });
        }
        None
    }

    /// The same tree with `own` as the supervisor's files; what was learned of the tree
    /// (where it is pinned, its config's listing) is kept.
    pub(crate) fn with_own(mut self, own: OwnFiles) -> Self {
        self.own = own;
        self
    }

    /// The work tree's root and the repository's hooks directories, for the agent's
    /// protected paths ([`agent_runner_plugin_host::agent::protected`]): `<common dir>/hooks`
    /// (a `.git` file's `gitdir:` followed, as pinned at boot: a linked work tree's hooks are
    /// the main one's) and, when a config file sets `core.hooksPath`, that directory too
    /// (relative to the top, or absolute; one under `~` is left to Landlock, which does not
    /// let the agent write the home directory). Canonical where git gave them so: the top
    /// and the common dir. Third, the directories of rules git reads by name in the common
    /// dir: `info` (whose `exclude` and `attributes` every status reads), `remotes` and
    /// `branches` (remotes defined by files). `None` when the repository cannot be found.
    pub(crate) async fn protected_roots(&self) -> Option<(PathBuf, Vec<PathBuf>, Vec<PathBuf>)> {
        let place = self.place().await.ok()?;
        let mut hooks = vec![place.common_dir.join("hooks")];
        if let Some(path) = self.listed().await.ok().and_then(|l| l.hooks_path) {
            if !path.starts_with('~') && !path.is_empty() {
                let dir = place.top.join(&path);
                if !hooks.contains(&dir) {
                    hooks.push(dir);
                }
            }
        }
        let repo_dirs = ["info", "remotes", "branches"]
            .iter()
            .map(|name| place.common_dir.join(name))
            .collect();
        Some((place.top.clone(), hooks, repo_dirs))
    }

    /// What changed in the repository since boot ([`Place::changed`]); `None` when
    /// nothing did or it was never found.
    pub(crate) fn changed(&self) -> Option<String> {
        self.place.get().and_then(Place::changed)
    }

    /// Sets aside what a round planted in the repository ([`Place::set_aside_plants`]);
    /// what was done, one line each.
    pub(crate) fn set_aside_plants(&self) -> Vec<String> {
        self.place
            .get()
            .map(Place::set_aside_plants)
            .unwrap_or_default()
    }

    /// What the index marks now ([`Marks`]: the entries git does not compare with their
    /// file, the gitlinks): read in process from the git dir's `index` (never through a
    /// link, never a FIFO, at most 256 MiB: [`index_file::read_file`]), else — a split or sparse
    /// index, a format the reader does not take, a link or an oversized file there — as
    /// `git ls-files -v -s -z --full-name` lists it. An index with an offset table (whose
    /// entries git's threaded read may take from elsewhere: [`index_file::OFFSET_TABLE`])
    /// is first written again by git, read in order and without one, so every later git
    /// sees the entries read here. No index yet: nothing marked.
    pub(crate) async fn index_marks(&self) -> Result<Marks, GitError> {
        let path = self.place().await?.git_dir.join("index");
        let read = || self.read_index(&path);
        let mut marks = read();
        if matches!(marks, Err(index_file::MALFORMED)) {
            let done = self.set_index_aside(&path).await?;
            self.index_set_aside
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(done);
            marks = read();
        }
        if matches!(marks, Err(index_file::OFFSET_TABLE)) {
            self.run(&[
                "-c",
                "index.threads=1",
                "-c",
                "index.recordOffsetTable=false",
                "-c",
                "index.recordEndOfIndexEntries=false",
                "update-index",
                "--force-write-index",
            ])
            .await?;
            marks = read();
        }
        match marks {
            Ok(marks) => Ok(marks),
            Err(_) => Ok(Marks::listed(
                &self
                    .run_bytes(&["ls-files", "-v", "-s", "-z", "--full-name", "--", ":(top)"])
                    .await?,
            )),
        }
    }

    /// The index at `path` read in process ([`index_file::read_file`]), or its marks as
    /// last read while the file is the same one, unchanged (device, inode, size,
    /// modification and change times: a write or a rename over it changes the change
    /// time, which no process sets back): a round reads it before and after the agent for
    /// its flags and again for the nested repositories' watch.
    fn read_index(&self, path: &Path) -> Result<Marks, index_file::Unread> {
        use std::os::unix::fs::MetadataExt;
        let identity = || {
            std::fs::symlink_metadata(path).ok().map(|m| {
                [
                    m.dev(),
                    m.ino(),
                    m.size(),
                    m.mtime() as u64,
                    m.mtime_nsec() as u64,
                    m.ctime() as u64,
                    m.ctime_nsec() as u64,
                ]
            })
        };
        let before = identity();
        let mut last = self.last_index.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(now), Some((seen, marks))) = (before, last.as_ref()) {
            if now == *seen {
                return Ok(marks.clone());
            }
        }
        let marks = index_file::read_file(path)?;
        *last = match (before, identity()) {
            (Some(before), Some(after)) if before == after => Some((before, marks.clone())),
            _ => None,
        };
        Ok(marks)
    }

    /// Sets the index at `path` aside (`index.agent-runner-set-aside-<pid>-<ns>` beside it)
    /// and reads it again from `HEAD` (`git read-tree HEAD`; without a commit yet, empty):
    /// for an index whose entries this supervisor cannot read as git does
    /// ([`index_file::MALFORMED`]: damaged, or forged so that git and a reader see other
    /// paths). Nothing in the tree is touched; every difference from `HEAD` then shows in
    /// `git status`. What was done, one line.
    async fn set_index_aside(&self, path: &Path) -> Result<String, GitError> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let aside = path.with_file_name(format!(
            "index.agent-runner-set-aside-{}-{stamp}",
            std::process::id()
        ));
        if let Err(e) = std::fs::rename(path, &aside) {
            return Err(GitError {
                args: "set the index aside".to_owned(),
                detail: format!("{}: {e}", path.display()),
            });
        }
        if self.run(&["read-tree", "HEAD"]).await.is_err() {
            self.run(&["read-tree", "--empty"]).await?;
        }
        Ok(format!(
            "{} set aside as {} (git and this supervisor read other entries in it) and read again from HEAD",
            path.display(),
            aside.display()
        ))
    }

    /// What [`Repo::index_marks`] set aside since the last call, one line each.
    pub(crate) fn take_index_set_aside(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .index_set_aside
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        )
    }

    /// Clears `assume-unchanged` and `skip-worktree` from the entries of `now` (the index's
    /// marks, updated) whose flag is new since `before` (the round set it: the file changed
    /// or deleted shows again), and from those of the exec surface
    /// ([`exec_surface::covers`]) whose file is present, whoever set the flag: `git
    /// status`, the supervisor's and the operator's, sees the file again (docs/security.md,
    /// "What hides a change"). An older flag on an absent file (a sparse checkout's) stays. The paths cleared,
    /// work-dir-relative ([`path_name::encode`]), in index order; the error of a `git
    /// update-index` that failed (two at most, only when there is a flag to clear).
    pub(crate) async fn clear_hiding_flags(
        &self,
        before: Option<&Marks>,
        now: &mut Marks,
    ) -> Result<Vec<String>, GitError> {
        let place = self.place().await?;
        let cleared: Vec<(Vec<u8>, String)> = now
            .hidden
            .iter()
            .filter_map(|path| {
                let inside = path.strip_prefix(place.prefix.as_slice())?;
                Some((path.clone(), path_name::encode(inside)))
            })
            .filter(|(path, shown)| {
                let new = before.is_some_and(|b| !b.hidden.contains(path));
                let present =
                    std::fs::symlink_metadata(place.top.join(OsStr::from_bytes(path))).is_ok();
                new || (present && exec_surface::covers(shown))
            })
            .collect();
        if cleared.is_empty() {
            return Ok(Vec::new());
        }
        let mut stdin = Vec::new();
        for (path, _) in &cleared {
            stdin.extend_from_slice(
                &place
                    .top
                    .join(OsStr::from_bytes(path))
                    .into_os_string()
                    .into_vec(),
            );
            stdin.push(0);
        }
        // One flag a call: `update-index` applies only the first `--no-*` it is given.
        for flag in ["--no-assume-unchanged", "--no-skip-worktree"] {
            self.run_input(&["update-index", flag, "-z", "--stdin"], &[], Some(&stdin))
                .await?;
        }
        Ok(cleared
            .into_iter()
            .map(|(path, shown)| {
                now.hidden.remove(&path);
                shown
            })
            .collect())
    }

    /// Dirty paths inside the work dir, relative to it (docs/protocol.md: `dirty_files`),
    /// the supervisor's own files left out ([`Repo::look`]).
    pub(crate) async fn dirty_files(&self) -> Result<Vec<String>, GitError> {
        Ok(self.look().await?.files)
    }

    /// `HEAD` and the dirty paths inside the work dir in one `git status --porcelain=v2
    /// --branch -z --untracked-files=all -- .`, paths relative to the work dir, untracked
    /// files listed one by one, the supervisor's own files left out. A staged rename lists
    /// both sides, new path then source (the source only when it lies inside the work
    /// dir); a copy only the new path (its source is unchanged). A submodule is dirty when
    /// its commit moved, not for changes inside it (`--ignore-submodules=dirty`: telling
    /// those would start a git in the submodule, under its own config).
    pub(crate) async fn look(&self) -> Result<Look, GitError> {
        let mut look = self.status().await?;
        look.files.retain(|path| !self.own.contains(path));
        Ok(look)
    }

    /// [`Repo::look`] with the supervisor's own files left in.
    async fn status(&self) -> Result<Look, GitError> {
        // `--no-optional-locks`: status leaves the index as it is rather than refreshing
        // it on disk, so it never takes `index.lock` from under an agent's own git, and it
        // costs less.
        let out = self
            .run_bytes(&[
                "--no-optional-locks",
                "status",
                "--porcelain=v2",
                "--branch",
                "-z",
                "--untracked-files=all",
                "--ignore-submodules=dirty",
                "--",
                ".",
            ])
            .await?;
        let prefix = &self.place().await?.prefix;
        let mut look = Look::default();
        let mut entries = out.split(|b| *b == 0).filter(|e| !e.is_empty());
        while let Some(entry) = entries.next() {
            let (path, renamed_from) = match entry.first() {
                Some(b'#') => {
                    if let Some(oid) = entry.strip_prefix(b"# branch.oid ") {
                        look.head = (oid != b"(initial)")
                            .then(|| String::from_utf8_lossy(oid).into_owned());
                    }
                    if let Some(name) = entry.strip_prefix(b"# branch.head ") {
                        look.branch = (name != b"(detached)")
                            .then(|| String::from_utf8_lossy(name).into_owned());
                    }
                    continue;
                }
                Some(b'1') => {
                    // A nested repository where the index holds something else (a file
                    // entry made in the agent's index): the work tree's mode is a gitlink's.
                    if nth_field(entry, 5) == Some(b"160000") {
                        if let Some(path) = nth_rest(entry, 8) {
                            look.nested.push(path.to_vec());
                        }
                    }
                    (nth_rest(entry, 8), None)
                }
                Some(b'2') => {
                    let source = entries.next();
                    let renamed = nth_field(entry, 8).is_some_and(|f| f.starts_with(b"R"));
                    (nth_rest(entry, 9), source.filter(|_| renamed))
                }
                Some(b'u') => (nth_rest(entry, 10), None),
                Some(b'?') => {
                    if let Some(dir) = entry.get(2..).and_then(|p| p.strip_suffix(b"/")) {
                        look.nested.push(dir.to_vec());
                    }
                    (entry.get(2..), None)
                }
                _ => continue,
            };
            for path in path.into_iter().chain(renamed_from) {
                // status prints paths from the repository's top; ours are the work dir's
                // (a rename's source outside the work dir is not ours to hand on).
                let Some(inside) = path.strip_prefix(prefix.as_slice()) else {
                    continue;
                };
                look.files.push(path_name::encode(inside));
            }
        }
        Ok(look)
    }

    /// The submodules (gitlinks) of the index inside the work dir, work-dir-relative: a
    /// stash never names them ([`Repo::scope`]), or it would start a git in each.
    async fn gitlinks(&self) -> Result<Vec<String>, GitError> {
        let out = self.run_bytes(&["ls-files", "-s", "-z", "--", "."]).await?;
        let prefix = &self.place().await?.prefix;
        Ok(out
            .split(|b| *b == 0)
            .filter(|e| e.starts_with(b"160000 "))
            .filter_map(|e| e.splitn(2, |b| *b == b'\t').nth(1))
            .filter_map(|path| path.strip_prefix(prefix.as_slice()))
            .map(path_name::encode)
            .collect())
    }

    /// `git stash push -u -m <message>` of exactly `paths` (work-dir-relative, as
    /// [`Repo::dirty_files`] gives them), named in the fewest pathspecs ([`Repo::scope`]);
    /// returns the stash commit's SHA, or `None` when git found nothing to stash. A stash
    /// that git made but then reported a failure for (a sparse checkout's paths outside
    /// its definition, say: the tree is then not cleaned) is an error naming the stash
    /// ([`StashMadeButFailed`]): the work is in it, by SHA, but the tree is not as a stash
    /// leaves it.
    pub(crate) async fn stash_push(
        &self,
        message: &str,
        paths: &[String],
    ) -> Result<Option<String>, StashError> {
        let gitlinks = self.gitlinks().await?;
        if paths.iter().all(|p| gitlinks.contains(p)) {
            return Ok(None);
        }
        let scope = self.scope(paths, &gitlinks).await?;
        let before = self.stash_head().await;
        let mut args = vec!["stash", "push", "-u", "-m", message];
        if scope.is_some() {
            args.extend(["--pathspec-from-file=-", "--pathspec-file-nul"]);
        }
        // Once git stored the stash (appending to its reflog), it is let finish cleaning
        // the tree rather than killed half-way.
        let reflog = self.place().await?.common_dir.join("logs/refs/stash");
        let result = self
            .finishing_when(reflog)
            .run_input(&args, &[], scope.as_deref())
            .await;
        let after = self.stash_head().await;
        match (after.filter(|a| Some(a) != before.as_ref()), result) {
            (Some(sha), Ok(_)) => Ok(Some(sha)),
            (Some(sha), Err(error)) => {
                Err(StashError::MadeButFailed(StashMadeButFailed { sha, error }))
            }
            (None, Ok(out)) if out.contains("No local changes") => Ok(None),
            (None, Ok(out)) => Err(StashError::Git(GitError {
                args: "stash push".to_owned(),
                detail: format!("no stash was created: {}", out.trim()),
            })),
            (None, Err(error)) => Err(StashError::Git(error)),
        }
    }

    /// Of `paths` (work-dir-relative), those whose `filter` attribute names a driver the
    /// supervisor's git will not run ([`repository_only_filters`]), by driver, in order:
    /// stashing or committing them would store their content raw, unfiltered (a Git LFS
    /// asset in history instead of its pointer). Empty when there is no such driver.
    pub(crate) async fn unrun_filters(
        &self,
        paths: &[String],
    ) -> Result<Vec<(String, Vec<String>)>, GitError> {
        let drivers = self.listed().await?.repository_only_filters;
        if drivers.is_empty() || paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut list = Vec::new();
        for path in paths {
            list.extend_from_slice(path_name::os(path).as_bytes());
            list.push(0);
        }
        let out = self
            .run_bytes_with_env(&["check-attr", "-z", "--stdin", "filter"], &[], Some(&list))
            .await?;
        let mut found: Vec<(String, Vec<String>)> =
            drivers.into_iter().map(|d| (d, Vec::new())).collect();
        let mut fields = out.split(|b| *b == 0);
        while let (Some(path), Some(_attr), Some(value)) =
            (fields.next(), fields.next(), fields.next())
        {
            let value = String::from_utf8_lossy(value);
            if let Some((_, held)) = found.iter_mut().find(|(d, _)| *d == value) {
                held.push(path_name::encode(path));
            }
        }
        found.retain(|(_, held)| !held.is_empty());
        Ok(found)
    }

    /// The pathspecs (NUL-terminated, for `--pathspec-from-file=- --pathspec-file-nul`)
    /// that take exactly `paths` of the work dir's dirty paths, as few as can say it: git
    /// matches every path against every pathspec, so thousands of them cost minutes on a
    /// large tree (docs/operations.md, "Large trees"). `None`, no pathspec, when `paths`
    /// are every dirty path and the work dir is the repository's top; else `.` and an
    /// exclusion for each other dirty path (the operator's, the supervisor's own) and each
    /// submodule when those are fewer than `paths`; else `paths` themselves. Never a
    /// submodule ([`Repo::gitlinks`]). All literal: no path is read as a pattern.
    async fn scope(
        &self,
        paths: &[String],
        gitlinks: &[String],
    ) -> Result<Option<Vec<u8>>, GitError> {
        let paths: Vec<&String> = paths.iter().filter(|p| !gitlinks.contains(p)).collect();
        let wanted: HashSet<&str> = paths.iter().map(|p| p.as_str()).collect();
        let dirty = self.status().await?.files;
        let others: Vec<&String> = dirty
            .iter()
            .chain(gitlinks)
            .filter(|p| !wanted.contains(p.as_str()))
            .collect();
        if others.is_empty() && self.place().await?.prefix.is_empty() {
            return Ok(None);
        }
        let mut specs = Vec::new();
        let mut push = |magic: &str, path: &str| {
            specs.extend_from_slice(magic.as_bytes());
            specs.extend_from_slice(path_name::os(path).as_bytes());
            specs.push(0);
        };
        if others.len() < paths.len() {
            push("", ".");
            for path in others {
                push(":(exclude,literal)", path);
            }
        } else {
            for path in paths {
                push(":(literal)", path);
            }
        }
        Ok(Some(specs))
    }

    /// The work tree's top, as found at boot. Errors: git cannot tell where the repository
    /// is.
    pub(crate) async fn top(&self) -> Result<PathBuf, GitError> {
        Ok(self.place().await?.top.clone())
    }

    /// The repository's own config files, with their scope as git names it: the common
    /// dir's `config` (`local`) and the git dir's `config.worktree` (`worktree`), present
    /// or not.
    pub(crate) async fn config_files(&self) -> Result<[(PathBuf, &'static str); 2], GitError> {
        let place = self.place().await?;
        Ok([
            (place.common_dir.join("config"), "local"),
            (place.git_dir.join("config.worktree"), "worktree"),
        ])
    }

    /// The entries of the config text `text` as git reads it, includes not followed
    /// (`git config --file - --no-includes --list -z`, which runs nothing): `(key,
    /// value)` in file order, keys as `--list` prints them, `None` for a key written
    /// without a value. Errors: git cannot parse it.
    pub(crate) async fn config_text_entries(
        &self,
        text: &[u8],
    ) -> Result<Vec<(String, Option<String>)>, GitError> {
        let out = self
            .run_bytes_with_env(
                &["config", "--file", "-", "--no-includes", "--list", "-z"],
                &[],
                Some(text),
            )
            .await?;
        Ok(out
            .split(|b| *b == 0)
            .filter(|e| !e.is_empty())
            .map(|entry| {
                let entry = String::from_utf8_lossy(entry);
                match entry.split_once('\n') {
                    Some((key, value)) => (key.to_owned(), Some(value.to_owned())),
                    None => (entry.into_owned(), None),
                }
            })
            .collect())
    }

    /// Sets key `key` of the config file `file` to exactly `values` (in order), or removes
    /// it when `values` is empty, with git's own writer (`git config --file`), so comments
    /// and every other key stay as they are. The caller has checked that `file` is no
    /// symbolic link.
    pub(crate) async fn config_file_set(
        &self,
        file: &Path,
        key: &str,
        values: &[String],
    ) -> Result<(), GitError> {
        let with = |args: &[&str]| {
            let mut all: Vec<&OsStr> = vec!["config".as_ref(), "--file".as_ref(), file.as_os_str()];
            all.extend(args.iter().map(OsStr::new));
            all.into_iter()
                .map(OsStr::to_owned)
                .collect::<Vec<OsString>>()
        };
        match values.split_first() {
            None => {
                self.run(&with(&["--unset-all", key])).await?;
            }
            Some((first, rest)) => {
                self.run(&with(&["--replace-all", key, first])).await?;
                for value in rest {
                    self.run(&with(&["--add", key, value])).await?;
                }
            }
        }
        Ok(())
    }

    /// The paths inside the work dir (work-dir-relative) that differ between commit
    /// `before` (`None`: no commit, every path of `after` counts) and commit `after`:
    /// what the agent's own commits of a round changed (`git diff-tree -r --name-only
    /// --no-renames --relative`, or `git ls-tree -r --name-only`, neither of which runs a
    /// diff driver).
    pub(crate) async fn changed_between(
        &self,
        before: Option<&str>,
        after: &str,
    ) -> Result<Vec<String>, GitError> {
        let out = match before {
            Some(before) => {
                self.run_bytes(&[
                    "diff-tree",
                    "-r",
                    "-z",
                    "--name-only",
                    "--no-renames",
                    "--relative",
                    before,
                    after,
                ])
                .await?
            }
            None => {
                self.run_bytes(&["ls-tree", "-r", "-z", "--name-only", after])
                    .await?
            }
        };
        Ok(out
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(path_name::encode)
            .collect())
    }

    /// Whether the stash commit `sha` is still in the stash list.
    pub(crate) async fn stash_contains(&self, sha: &str) -> bool {
        self.stash_list()
            .await
            .is_some_and(|list| list.iter().any(|l| l == sha))
    }

    /// The stash list's commits, newest first; `None` when git fails.
    pub(crate) async fn stash_list(&self) -> Option<Vec<String>> {
        let out = self.run(&["stash", "list", "--format=%H"]).await.ok()?;
        Some(out.lines().map(|l| l.trim().to_owned()).collect())
    }

    /// Whether git still has commit `sha` (reachable or not: `git cat-file -e`).
    pub(crate) async fn commit_exists(&self, sha: &str) -> bool {
        let object = format!("{sha}^{{commit}}");
        self.run(&["cat-file", "-e", &object]).await.is_ok()
    }

    /// The SHA of `HEAD`, `None` before the first commit or when git fails.
    pub(crate) async fn head(&self) -> Option<String> {
        self.run(&["rev-parse", "-q", "--verify", "HEAD"])
            .await
            .ok()
            .map(|s| s.trim().to_owned())
    }

    async fn stash_head(&self) -> Option<String> {
        self.run(&["rev-parse", "-q", "--verify", "refs/stash"])
            .await
            .ok()
            .map(|s| s.trim().to_owned())
    }

    /// Stages `paths` and commits exactly those paths with `message` on the current branch
    /// (no push). Returns the new commit's SHA. On failure the index is restored for those
    /// paths and the working tree is left as it was.
    pub(crate) async fn commit_paths(
        &self,
        paths: &[String],
        message: &str,
    ) -> Result<String, GitError> {
        self.commit(paths, message, &[]).await
    }

    /// [`Repo::commit_paths`] for dirty handler `hook`: the reflog entry reads
    /// `agent-runner dirty handler <hook>: <subject>`, so a host reading `.git` tells the
    /// supervisor's commits from the agent's (docs/protocol.md §5.2, "The supervisor's
    /// commits").
    pub(crate) async fn commit_for_handler(
        &self,
        paths: &[String],
        message: &str,
        hook: &str,
    ) -> Result<String, GitError> {
        let action = reflog_action(hook);
        self.commit(paths, message, &[("GIT_REFLOG_ACTION", &action)])
            .await
    }

    /// [`Repo::commit_paths`] with variables `env` added to git's environment for the
    /// commit itself. The commit is made from a scratch index, `HEAD`'s tree with `paths`
    /// taken from the work tree (what `git commit -- <paths>` commits, whatever else is
    /// staged), the paths handed to git on stdin rather than as pathspecs, so the cost
    /// grows with the number of paths, not with paths times files (docs/operations.md,
    /// "Large trees"). The real index is touched only after the commit is made: a failed
    /// commit leaves it as it was.
    async fn commit(
        &self,
        paths: &[String],
        message: &str,
        env: &[(&str, &str)],
    ) -> Result<String, GitError> {
        let mut list = Vec::new();
        for path in paths {
            list.extend_from_slice(path_name::os(path).as_bytes());
            list.push(0);
        }
        let scratch = self.scratch_index().await?;
        let made = self.commit_from(&scratch, &list, message, env).await;
        let _ = std::fs::remove_file(&scratch);
        let sha = made?;
        // The real index learns the committed paths (as `git commit -- <paths>` leaves
        // it); should that fail the commit stands, and `git status` shows them staged
        // for removal or unstaged: nothing is lost.
        if let Err(err) = self.stage(None, &list).await {
            tracing::warn!("commit {sha} made; the index was not updated for its paths: {err}");
        }
        Ok(sha)
    }

    /// Makes the commit of [`Repo::commit`] through the index file `scratch`.
    async fn commit_from(
        &self,
        scratch: &Path,
        list: &[u8],
        message: &str,
        env: &[(&str, &str)],
    ) -> Result<String, GitError> {
        let _ = std::fs::remove_file(scratch);
        let scratch_os = scratch.as_os_str();
        if self.head().await.is_some() {
            // `--reset` (a one-tree merge that never refuses for the index's state, staged
            // or unmerged) keeps the stat data of the entries that match HEAD, so the
            // commit's refresh of the scratch index does not read every file again.
            let mut output = OsString::from("--index-output=");
            output.push(scratch_os);
            let args: [&OsStr; 4] = [
                "read-tree".as_ref(),
                "--reset".as_ref(),
                &output,
                "HEAD".as_ref(),
            ];
            self.run(&args).await?;
        }
        let index = scratch_os.to_str().ok_or_else(|| GitError {
            args: "commit".to_owned(),
            detail: format!("the index path {} is not UTF-8", scratch.display()),
        })?;
        self.stage(Some(index), list).await?;
        let identity = self.identity_args().await;
        let mut args: Vec<&str> = identity.iter().map(String::as_str).collect();
        args.extend(["commit", "--no-verify", "-q", "-m", message]);
        let mut with_index = env.to_vec();
        with_index.push(("GIT_INDEX_FILE", index));
        self.run_with_env(&args, &with_index).await?;
        Ok(self.run(&["rev-parse", "HEAD"]).await?.trim().to_owned())
    }

    /// `git update-index --add --remove -z --stdin` of the NUL-terminated `list` into
    /// index file `index` (the repository's own when `None`): each path's work-tree state
    /// staged, a deleted one removed.
    async fn stage(&self, index: Option<&str>, list: &[u8]) -> Result<String, GitError> {
        let env: Vec<(&str, &str)> = index.map(|i| ("GIT_INDEX_FILE", i)).into_iter().collect();
        self.run_input(
            &["update-index", "--add", "--remove", "-z", "--stdin"],
            &env,
            Some(list),
        )
        .await
    }

    /// Where [`Repo::commit`] builds its index: beside the repository's own index in the
    /// pinned git dir (the same file system, as `read-tree --index-output` needs), named
    /// for this process.
    async fn scratch_index(&self) -> Result<PathBuf, GitError> {
        let index = self.place().await?.git_dir.join("index");
        let mut name = index.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".agent-runner-{}", std::process::id()));
        Ok(index.with_file_name(name))
    }

    /// Whether HEAD is detached (a commit, not a branch): `git symbolic-ref -q HEAD` exits
    /// 1. `false` before the first commit or when git cannot tell.
    pub(crate) async fn head_detached(&self) -> bool {
        self.head().await.is_some()
            && matches!(
                self.run(&["symbolic-ref", "-q", "HEAD"]).await,
                Err(ref e) if e.detail.contains("exit status: 1")
            )
    }

    /// The repository's commit hooks, which the supervisor's commits never run (hooks
    /// are off in its git, [`ALWAYS`]): the hooks dir (the operator's or repository's
    /// `core.hooksPath`, relative to the repository's top, else the git dir's `hooks`) and
    /// the executable `pre-commit`, `prepare-commit-msg`, `commit-msg` and `post-commit`
    /// in it. `None` when there are none.
    pub(crate) async fn commit_hooks(&self) -> Option<(PathBuf, Vec<String>)> {
        use std::os::unix::fs::PermissionsExt;
        let listed = self.listed().await.ok()?;
        let place = self.place().await.ok()?;
        let dir = match listed.hooks_path {
            Some(path) => place.top.join(path),
            None => place.common_dir.join("hooks"),
        };
        let hooks: Vec<String> = [
            "pre-commit",
            "prepare-commit-msg",
            "commit-msg",
            "post-commit",
        ]
        .into_iter()
        .filter(|name| {
            std::fs::metadata(dir.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .map(str::to_owned)
        .collect();
        (!hooks.is_empty()).then_some((dir, hooks))
    }

    /// `-c user.name=… -c user.email=…` when the repository has no identity configured, so
    /// a commit on a fresh machine does not fail for want of one.
    async fn identity_args(&self) -> Vec<String> {
        if self.listed().await.is_ok_and(|listed| listed.has_email) {
            return Vec::new();
        }
        [
            "-c",
            "user.name=agent-runner",
            "-c",
            "user.email=agent-runner@localhost",
        ]
        .map(String::from)
        .to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn git_in(dir: &Path, args: &[&str]) -> String {
        String::from_utf8(crate::runtime::git::test_git(dir, args)).unwrap()
    }

    #[tokio::test]
    async fn hiding_flags_are_cleared_on_the_exec_surface_and_where_the_round_set_them() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        git_in(&top, &["init", "-q"]);
        for (path, text) in [
            (".github/workflows/ci.yml", "on: push"),
            ("operators.txt", "local"),
            ("rounds.txt", "r"),
            ("gone.txt", "g"),
            ("sparse.txt", "s"),
        ] {
            std::fs::create_dir_all(top.join(path).parent().unwrap()).unwrap();
            std::fs::write(top.join(path), text).unwrap();
        }
        git_in(&top, &["add", "."]);
        git_in(&top, &["commit", "-qm", "i"]);
        // The operator's: assume-unchanged on a file of their own, skip-worktree on the
        // exec surface, a sparse checkout's absent file.
        git_in(
            &top,
            &["update-index", "--assume-unchanged", "operators.txt"],
        );
        git_in(
            &top,
            &[
                "update-index",
                "--skip-worktree",
                ".github/workflows/ci.yml",
                "sparse.txt",
            ],
        );
        std::fs::remove_file(top.join("sparse.txt")).unwrap();
        let repo = Repo::new(&top, OwnFiles::default());
        let mut before = repo.index_marks().await.unwrap();
        assert_eq!(before.hidden.len(), 3, "{before:?}");

        // Before a round: only the exec surface's flag goes.
        let cleared = repo.clear_hiding_flags(None, &mut before).await.unwrap();
        assert_eq!(cleared, [".github/workflows/ci.yml"]);
        assert_eq!(
            git_in(&top, &["ls-files", "-v"]),
            "H .github/workflows/ci.yml\nH gone.txt\nh operators.txt\nH rounds.txt\nS sparse.txt\n"
        );

        // The round hides its own change, and a deletion.
        git_in(&top, &["update-index", "--assume-unchanged", "rounds.txt"]);
        git_in(&top, &["update-index", "--skip-worktree", "gone.txt"]);
        std::fs::remove_file(top.join("gone.txt")).unwrap();
        std::fs::write(top.join("rounds.txt"), "changed").unwrap();
        std::fs::write(top.join("operators.txt"), "changed too").unwrap();
        assert_eq!(git_in(&top, &["status", "--porcelain"]), "");
        let mut after = repo.index_marks().await.unwrap();
        let cleared = repo
            .clear_hiding_flags(Some(&before), &mut after)
            .await
            .unwrap();
        assert_eq!(cleared, ["gone.txt", "rounds.txt"]);
        assert_eq!(
            git_in(&top, &["status", "--porcelain"]),
            " D gone.txt\n M rounds.txt\n"
        );
        assert_eq!(
            after.hidden,
            BTreeSet::from([b"operators.txt".to_vec(), b"sparse.txt".to_vec()])
        );
        // Nothing left to clear: no git runs.
        assert!(repo
            .clear_hiding_flags(Some(&after.clone()), &mut after)
            .await
            .unwrap()
            .is_empty());
    }

    #[tokio::test]
    async fn a_discovery_started_ahead_finds_what_the_first_call_would() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        let work_dir = top.join("src");
        std::fs::create_dir(&work_dir).unwrap();
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(&top)
            .status()
            .unwrap();
        assert!(init.success());

        let ahead = Repo::new(&work_dir, OwnFiles::default());
        ahead.discover_ahead();
        assert!(ahead.discovery.lock().unwrap().is_some());
        assert!(ahead.not_a_work_tree().await.is_none());
        assert!(
            ahead.discovery.lock().unwrap().is_none(),
            "its answer was taken"
        );
        let called = Repo::new(&work_dir, OwnFiles::default());
        assert!(called.not_a_work_tree().await.is_none());
        let (ahead, called) = (ahead.place.get().unwrap(), called.place.get().unwrap());
        assert_eq!(ahead.top, top);
        assert_eq!(
            (&ahead.top, &ahead.git_dir, &ahead.common_dir),
            (&called.top, &called.git_dir, &called.common_dir)
        );

        // Outside any repository: the same answer as a discovery started by the call.
        let outside = tempfile::tempdir().unwrap();
        let repo = Repo::new(outside.path(), OwnFiles::default());
        repo.discover_ahead();
        assert!(repo.not_a_work_tree().await.unwrap().outside_git);
    }

    #[test]
    fn repository_settings_that_run_programs_are_overridden_with_the_operators() {
        let listing = b"global\0file:/h/.gitconfig\0gpg.program\n/usr/bin/gpg2\0\
local\0file:/p/.git/config\0core.fsmonitor\n./monitor\0\
local\0file:/p/.git/config\0filter.lfs.process\n./evil\0\
local\0file:/p/.git/config\0filter.lfs.required\0\
local\0file:/p/.git/config\0gpg.program\n./sign\0\
local\0file:/p/.git/config\0user.email\na@b\0\
worktree\0file:/p/.git/config.worktree\0diff.x.textconv\n./conv\0\
global\0file:/h/.gitconfig\0core.pager\nless\0\
command\0command line:\0core.editor\nvi\0";
        let listing = config_entries(listing);
        assert_eq!(
            program_overrides(&listing),
            [
                "core.fsmonitor=false",
                "diff.x.textconv=",
                "filter.lfs.process=",
                "filter.lfs.required=false",
                "gpg.program=/usr/bin/gpg2",
            ]
        );
        assert_eq!(repository_only_filters(&listing), ["lfs"]);
        let operators = config_entries(b"global\0file:/h/.gitconfig\0filter.lfs.clean\ngit-lfs clean -- %f\0local\0file:/p/.git/config\0filter.lfs.process\n./evil\0local\0file:/p/.git/config\0filter.x.smudge\n./s\0");
        assert!(repository_only_filters(&operators).is_empty());
        assert!(!runs_a_program("user.email"));
        assert!(runs_a_program("credential.https://x.example.helper"));
        assert!(!runs_a_program("diff.renames"));
    }
}
