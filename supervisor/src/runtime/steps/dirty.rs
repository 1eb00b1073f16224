//! The dirty tree after a clean round (`docs/design-notes.md`, "One round", step 5), limited
//! to the round's dirt ([`crate::runtime::git::attribution`]): dirty handlers in ascending
//! priority, third-party hooks and the built-in default ([`BUILTIN_DIRTY_HANDLER`], priority
//! [`BUILTIN_PRIORITY`]); the first non-null answer wins. Hosts only *answer*; the
//! supervisor performs the git work itself through [`crate::runtime::git::repo`] and records it:
//! `dirty_auto_committed` / `dirty_commit_failed`, `orphan_stashed` /
//! `orphan_idempotent_skip` / `orphan_stash_failed`, `dirty_ignored`, each naming the hook;
//! a submodule with changes inside is never handed on: [`submodule_skipped`]; a commit
//! leaves the exec surface in the tree unless `[vcs] commit_exec_surface`
//! ([`exec_surface::held_from_commit`]).
//! A failed git step is recorded, never raised, and leaves the tree as it was.

use agent_runner_protocol::limits::{fit_list, MAX_DIRTY_FILES_BYTES};
use agent_runner_protocol::redact::{redact, redact_and_cap};
use agent_runner_protocol::{decode_dirty_result, Context, DirtyAction, Family, HandleDirtyParams};
use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::config::{Config, DirtyAction as BuiltinAction, SandboxMode};
use crate::hosts::{HostManager, BUILTIN_DIRTY_HANDLER};
use crate::record::events::{timestamp, Event, EventLog};
use crate::record::state::{read_json, write_json_atomic, OrphanState, ORPHAN_FILE};
use crate::record::stop::{StopLevel, StopWatch};
use crate::runtime::git::attribution::Split;
use crate::runtime::git::exec_surface;
use crate::runtime::git::operation as git_operation;
use crate::runtime::git::repo::{Repo, StashError};
use crate::runtime::git::stash_journal::{self, StashEntry};

/// Priority of the built-in default dirty handler.
pub(crate) const BUILTIN_PRIORITY: i64 = 1000;
/// At most this many files are listed in `dirty_detected`.
pub(crate) const MAX_LISTED_FILES: usize = 20;

/// What happened to the dirty tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Committed: the new commit's SHA.
    Committed(String),
    /// Stashed: the stash commit's SHA.
    Stashed(String),
    /// Left dirty (by choice, by the idempotency window, or because a git step failed).
    Ignored,
    /// A git step failed; the tree is as it was.
    Failed,
}

impl Outcome {
    /// The event spelling (`committed` / `stashed` / `ignored` / `failed`).
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Outcome::Committed(_) => "committed",
            Outcome::Stashed(_) => "stashed",
            Outcome::Ignored => "ignored",
            Outcome::Failed => "failed",
        }
    }
}

/// Everything the primitives need about the round.
pub(crate) struct DirtyRound<'a> {
    /// The configuration.
    pub config: &'a Config,
    /// The repository.
    pub repo: &'a Repo,
    /// Where events go.
    pub events: &'a EventLog,
    /// The round's context (sent to hosts too).
    pub ctx: &'a Context,
    /// Whose dirt the dirty paths are.
    pub attribution: &'a Split,
    /// The branch `HEAD` is on after the agent; `None` when detached.
    pub branch: Option<String>,
}

/// Runs the dirty handlers over `files` (non-empty) and performs the winning answer. A
/// graceful stop abandons a host call in flight (the host is killed) and goes straight to
/// the built-in handler, so the tree is still handled and the stop is not held up.
pub(crate) async fn handle(
    round: &DirtyRound<'_>,
    hosts: &mut HostManager,
    files: &[String],
    stop: &mut StopWatch,
) -> Outcome {
    round.events.emit(Event::DirtyDetected {
        round_num: round.ctx.round_num,
        files: files.iter().take(MAX_LISTED_FILES).cloned().collect(),
        file_count: files.len(),
        changed_preexisting: (round.attribution.changed_preexisting.iter())
            .take(MAX_LISTED_FILES)
            .cloned()
            .collect(),
        left_to_operator: round.attribution.operator.len(),
        branch: round.branch.clone(),
    });
    let held = held_by_filters(round, files).await;
    let kept: Vec<String>;
    let files = if held.is_empty() {
        files
    } else {
        kept = files
            .iter()
            .filter(|f| !held.contains(f.as_str()))
            .cloned()
            .collect();
        if kept.is_empty() {
            return Outcome::Ignored;
        }
        &kept
    };
    for hook in hosts.hooks(Family::DirtyHandler) {
        if hook.priority >= BUILTIN_PRIORITY {
            break; // the built-in always answers
        }
        let params = HandleDirtyParams {
            hook: hook.name.clone(),
            ctx: round.ctx.clone(),
            // Capped so that the request fits a line (docs/protocol.md §7); a commit
            // without `paths` still commits every dirty file.
            dirty_files: fit_list(files, MAX_DIRTY_FILES_BYTES),
        };
        let params = serde_json::to_value(params).expect("params serialize");
        let value = match hosts
            .call_unless_stopped(&hook, params, stop, StopLevel::Graceful)
            .await
        {
            None => break,
            Some(Ok(Some(value))) => value,
            Some(Ok(None) | Err(_)) => continue,
        };
        match decode_dirty_result(value, files) {
            Ok(Some(action)) => return perform(round, hook.name.as_str(), action, files).await,
            Ok(None) => continue,
            Err(err) => hosts.invalid_result(&hook, format!("handle_dirty result {err}")),
        }
    }
    let builtin = match round.config.vcs.dirty_action {
        BuiltinAction::Stash => DirtyAction::Stash { message: None },
        BuiltinAction::Ignore => DirtyAction::Ignore,
        BuiltinAction::AutoCommit => DirtyAction::Commit {
            message: format!(
                "agent-runner auto-commit: R{} {}",
                round.ctx.round_num,
                round.ctx.phase.as_deref().unwrap_or("")
            )
            .trim_end()
            .to_owned(),
            paths: None,
        },
    };
    perform(round, BUILTIN_DIRTY_HANDLER, builtin, files).await
}

async fn perform(
    round: &DirtyRound<'_>,
    hook: &str,
    action: DirtyAction,
    files: &[String],
) -> Outcome {
    let round_num = round.ctx.round_num;
    match action {
        DirtyAction::Ignore => {
            round.events.emit(Event::DirtyIgnored {
                round_num,
                hook: hook.to_owned(),
            });
            Outcome::Ignored
        }
        DirtyAction::Commit { message, paths } => {
            // The exec surface stays in the tree for the operator unless the config says
            // otherwise; `exec_surface_changed` already named it.
            let (paths, _held) = exec_surface::held_from_commit(
                paths.unwrap_or_else(|| files.to_vec()),
                round.config.vcs.commit_exec_surface,
            );
            if paths.is_empty() {
                return Outcome::Ignored;
            }
            let message = redact(&message);
            match round.repo.commit_for_handler(&paths, &message, hook).await {
                Ok(sha) => {
                    round.events.emit(Event::DirtyAutoCommitted {
                        round_num,
                        hook: hook.to_owned(),
                        sha: sha.clone(),
                        files: paths.iter().take(MAX_LISTED_FILES).cloned().collect(),
                        subject: redact_and_cap(message.lines().next().unwrap_or("")),
                        branch: round.branch.clone(),
                    });
                    warn_about_commit(round, hook, &sha).await;
                    Outcome::Committed(sha)
                }
                Err(err) => {
                    round.events.emit(Event::DirtyCommitFailed {
                        round_num,
                        hook: hook.to_owned(),
                        error: redact_and_cap(&err.to_string()),
                        tree: tree_after_failure(round, files).await,
                    });
                    Outcome::Failed
                }
            }
        }
        DirtyAction::Stash { message } => stash(round, hook, message.as_deref(), files).await,
    }
}

/// The paths of `files` whose filter driver the supervisor's git will not run
/// ([`Repo::unrun_filters`]), each driver told once as `dirty_filter_not_run`: they are
/// held out of the handlers' stash or commit, which would store them raw. When git cannot
/// tell, nothing is held (the handlers' git fails closed on a required filter by itself).
async fn held_by_filters(round: &DirtyRound<'_>, files: &[String]) -> HashSet<String> {
    let found = match round.repo.unrun_filters(files).await {
        Ok(found) => found,
        Err(err) => {
            tracing::warn!("cannot read the filter attributes of the dirty paths: {err}");
            return HashSet::new();
        }
    };
    let mut held = HashSet::new();
    for (filter, paths) in found {
        round.events.emit(Event::DirtyFilterNotRun {
            round_num: round.ctx.round_num,
            files: paths.iter().take(MAX_LISTED_FILES).cloned().collect(),
            file_count: paths.len(),
            what_to_do: format!(
                "the repository's own config sets the `{filter}` filter, which the supervisor's git never runs (the agent can write that config), so these files were left in the tree, neither committed nor stashed: set the filter in your global config (`git config --global filter.{filter}.clean …` and `.smudge`/`.process`, or for Git LFS `git lfs install`), then the next round handles them; or commit them yourself"
            ),
            filter,
        });
        held.extend(paths);
    }
    held
}

/// The paths of `files` that bear a protected name
/// ([`agent_runner_plugin_host::agent::protected::PROTECTED_IN_TREE`], at any depth) when
/// the agent ran confined: held out of the stash. A stash writes `HEAD`'s version of each
/// path it takes back into the tree, and the agent, which cannot write such a file (the
/// protected tier), can still commit one through the index: the stash would write it for
/// the agent. Left in the tree, they are told as `exec_surface_changed`
/// (docs/security.md, "Protected paths").
fn held_as_protected(round: &DirtyRound<'_>, files: &[String]) -> Vec<String> {
    if round.config.agent_sandbox.mode == SandboxMode::Off {
        return Vec::new();
    }
    let protected = agent_runner_plugin_host::agent::protected::PROTECTED_IN_TREE;
    files
        .iter()
        .filter(|f| {
            protected.iter().any(|n| {
                f.as_str() == n.rel || f.strip_suffix(n.rel).is_some_and(|dir| dir.ends_with('/'))
            })
        })
        .cloned()
        .collect()
}

/// `dirty_submodule_skipped` for `path`, a submodule (or a repository nested in the work
/// tree) with changes inside after round `round_num`: this repository's git stashes and
/// commits only a submodule's recorded commit, never what is inside it, and the
/// supervisor runs nothing inside it (its hooks and config are the agent's to write), so
/// the changes stay where they are (docs/operations.md, "Submodules").
pub(crate) fn submodule_skipped(round_num: u64, path: &str) -> Event {
    let path = path.trim_end_matches('/');
    Event::DirtySubmoduleSkipped {
        round_num,
        path: path.to_owned(),
        reason: format!(
            "{path} is a submodule or a repository nested in the work tree with changes inside it: this repository's git cannot stash or commit them, and the supervisor runs no git inside it, so they were left as they are and are not counted as the operator's"
        ),
        what_to_do: format!(
            "review them with `git -C {path} status`; commit them inside it, then record its new commit here with `git add {path}`, or discard them there"
        ),
    }
}

/// What the operator should know about commit `sha` just made: it skipped the
/// repository's commit hooks (`dirty_commit_hooks_skipped`), or it sits on a detached HEAD
/// where no branch holds it (`dirty_commit_detached_head`). The commit stands either way.
async fn warn_about_commit(round: &DirtyRound<'_>, hook: &str, sha: &str) {
    let round_num = round.ctx.round_num;
    if let Some((hooks_dir, hooks)) = round.repo.commit_hooks().await {
        round.events.emit(Event::DirtyCommitHooksSkipped {
            round_num,
            hook: hook.to_owned(),
            sha: sha.to_owned(),
            hooks_dir,
            hooks,
        });
    }
    if round.repo.head_detached().await {
        round.events.emit(Event::DirtyCommitDetachedHead {
            round_num,
            hook: hook.to_owned(),
            sha: sha.to_owned(),
            what_to_do: format!(
                "HEAD is detached: no branch holds {sha}; keep it with `git branch <name> {sha}` before checking out anything else, or put the work tree on a branch (`git switch <branch>`) so later rounds commit there"
            ),
        });
    }
}

/// The built-in stash: `git stash push -u -m "ORPHAN R<N> ts=<UTC>"`, remembered by SHA in
/// `orphan-state.json` and in the stash journal ([`stash_journal`]), skipped when the last
/// one is younger than `stash_idempotency_s` *and* took the same change (the reference
/// system skips any change within the window: a different one is stashed here).
async fn stash(
    round: &DirtyRound<'_>,
    hook: &str,
    note: Option<&str>,
    files: &[String],
) -> Outcome {
    let held = held_as_protected(round, files);
    let kept: Vec<String>;
    let files = if held.is_empty() {
        files
    } else {
        tracing::warn!(
            "not stashed, so the stash does not write HEAD's version of them into the tree: {}",
            held.join(", ")
        );
        kept = files
            .iter()
            .filter(|f| !held.contains(f))
            .cloned()
            .collect();
        if kept.is_empty() {
            return Outcome::Ignored;
        }
        &kept
    };
    let round_num = round.ctx.round_num;
    let state_dir = &round.config.runtime.state_dir;
    let now = SystemTime::now();
    let now_s = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let record_path = state_dir.join(ORPHAN_FILE);
    let window = round.config.vcs.stash_idempotency.as_secs();
    let change =
        (window > 0).then(|| stash_journal::change_of(&round.config.runtime.work_dir, files));
    if let Ok(Some(last)) = read_json::<OrphanState>(&record_path) {
        // A stash recorded in the future means the clock stepped back since: its age is
        // unknown, so it holds nothing up (a skip would last as long as the step).
        let age = now_s.checked_sub(last.unix_s);
        let same_change =
            change.is_some() && stash_journal::change_of_stash(state_dir, &last.sha) == change;
        if same_change && age.is_some_and(|age| age < window) {
            round.events.emit(Event::OrphanIdempotentSkip {
                round_num,
                hook: hook.to_owned(),
                stash_ref: last.sha,
                reason: format!(
                    "a stash of the same change was made {} s ago (stash_idempotency_s = {window})",
                    now_s.saturating_sub(last.unix_s),
                ),
            });
            return Outcome::Ignored;
        }
    }
    let ts = timestamp(now);
    let message = format!("ORPHAN R{round_num} ts={ts}");
    let reason = note.map(redact_and_cap).unwrap_or_else(|| {
        let mut reason = format!(
            "the round left {} file(s) dirty after a clean agent exit",
            files.len()
        );
        let changed = round.attribution.changed_preexisting.len();
        if changed > 0 {
            reason.push_str(&format!(
                " ({changed} of them already dirty before the round and changed by it)"
            ));
        }
        let operator = round.attribution.operator.len();
        if operator > 0 {
            reason.push_str(&format!(
                "; {operator} file(s) dirty before the round and unchanged were left in place"
            ));
        }
        reason
    });
    let journal_entry = |sha: &str| StashEntry {
        sha: sha.to_owned(),
        round_num,
        message: message.clone(),
        file_count: files.len(),
        paths: files.iter().take(MAX_LISTED_FILES).cloned().collect(),
        change: change.clone(),
        dropped_after_round: None,
    };
    let git_dir = git_operation::git_dir(&round.config.runtime.work_dir);
    let leftovers_before = git_dir.as_deref().map(stash_leftovers).unwrap_or_default();
    match round.repo.stash_push(&message, files).await {
        Ok(Some(sha)) => {
            let record = OrphanState {
                sha: sha.clone(),
                round_num,
                ts,
                unix_s: now_s,
            };
            if let Err(err) = write_json_atomic(&record_path, &record) {
                tracing::error!(
                    "cannot record stash {sha} in {}: {err}",
                    record_path.display()
                );
            }
            if let Err(err) = stash_journal::record(state_dir, journal_entry(&sha)) {
                tracing::error!("cannot record stash {sha} in the stash journal: {err}");
            }
            round.events.emit(Event::OrphanStashed {
                round_num,
                hook: hook.to_owned(),
                stash_ref: sha.clone(),
                message,
                reason,
                branch: round.branch.clone(),
            });
            Outcome::Stashed(sha)
        }
        Ok(None) => Outcome::Ignored,
        Err(err) => {
            // A stash git made before failing is still remembered by SHA: the work is in it.
            if let StashError::MadeButFailed(made) = &err {
                let record = OrphanState {
                    sha: made.sha.clone(),
                    round_num,
                    ts,
                    unix_s: now_s,
                };
                if let Err(e) = write_json_atomic(&record_path, &record) {
                    tracing::error!(
                        "cannot record stash {} in {}: {e}",
                        made.sha,
                        record_path.display()
                    );
                }
                if let Err(e) = stash_journal::record(state_dir, journal_entry(&made.sha)) {
                    tracing::error!("cannot record stash {} in the stash journal: {e}", made.sha);
                }
            }
            // A git killed mid-stash leaves its index locks behind (`index.lock`, the
            // stash's own `index.stash.<pid>.lock`), which would fail the agent's next git
            // command: those it made, and only those, are removed (no git of the agent's
            // runs while the round's dirt is handled).
            let mut tree = tree_after_failure(round, files).await;
            if let Some(dir) = &git_dir {
                let removed: Vec<String> = stash_leftovers(dir)
                    .difference(&leftovers_before)
                    .filter(|name| std::fs::remove_file(dir.join(name)).is_ok())
                    .cloned()
                    .collect();
                if !removed.is_empty() {
                    tree.push_str(&format!(
                        "; removed what the stopped git left in {}: {}",
                        dir.display(),
                        removed.join(", ")
                    ));
                }
                // One there before the stash is not the supervisor's to remove (an agent's
                // git may have stopped mid-command), but it fails every stash: named.
                if leftovers_before.contains("index.lock") {
                    tree.push_str(&format!(
                        "; {} was there before the stash (a git stopped mid-command leaves it) and makes every stash fail: remove it when no git runs in the tree",
                        dir.join("index.lock").display()
                    ));
                }
            }
            let timeout = round.config.vcs.git_timeout.as_secs();
            let what_to_do = err.to_string().contains("([vcs] git_timeout_s)").then(|| {
                format!(
                    "git needed more than git_timeout_s ({timeout} s) to stash {} file(s) on this machine: raise [vcs] git_timeout_s; the files are still in the tree, the next clean round stashes them",
                    files.len()
                )
            });
            round.events.emit(Event::OrphanStashFailed {
                round_num,
                hook: hook.to_owned(),
                error: redact_and_cap(&err.to_string()),
                tree,
                what_to_do,
            });
            Outcome::Failed
        }
    }
}

/// The index lock files in git dir `dir` a stopped `git stash` can leave: `index.lock`
/// and the stash's temporary index and its lock (`index.stash.<pid>`,
/// `index.stash.<pid>.lock`).
fn stash_leftovers(dir: &std::path::Path) -> HashSet<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name == "index.lock" || name.starts_with("index.stash."))
        .collect()
}

/// What a failed git step left: `"left as it was"` when the same files are still dirty,
/// otherwise a pointer to look (git can fail after doing part of its work).
async fn tree_after_failure(round: &DirtyRound<'_>, before: &[String]) -> String {
    let operator: HashSet<&String> = round.attribution.operator.iter().collect();
    match round.repo.dirty_files().await {
        Ok(now)
            if now
                .iter()
                .filter(|f| !operator.contains(f))
                .eq(before.iter()) =>
        {
            "left as it was".to_owned()
        }
        Ok(_) => {
            "changed by the failed git step; inspect `git status` and `git stash list`".to_owned()
        }
        Err(err) => format!("unknown: {err}"),
    }
}
