//! `[goal]` and `[[goal.checks]]`: the one place their keys are read, checked and given
//! defaults (docs/configuration.md, "[goal]"). The keys, bounds and ledger rules are the
//! reference system's 0.3.12 (`docs/reference-system.md`, "Goal checks"); `stop_when` is
//! ours.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::keys::config_table;
use super::vocabulary::StopWhen;

/// The largest `timeout_s` a check may have: a check is a quick objective look (a test
/// run, a count), not another round. Larger values are refused, not clamped.
pub(crate) const MAX_CHECK_TIMEOUT_S: u64 = 30;

/// The grace between a check's SIGTERM and the SIGKILL of its process group, and the
/// bound on reading its output after the kill.
pub(crate) const CHECK_KILL_GRACE: Duration = Duration::from_secs(3);

config_table! {
    /// `[goal]` as serde sees it.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawGoal = "goal" {
        /// the lessons ledger, a markdown file the supervisor prepends advisories to. It must
        /// be one of the prompt files of every phase at index 1 or later (`[prompt] files`, or
        /// the phase's `[phases.<name>.prompt] files`; the single `file =` form cannot carry
        /// it, and a missing first prompt file is fatal while the ledger does not exist before
        /// its first advisory), and lie under `log_dir` or outside `work_dir` (a stash of the
        /// dirty tree would take it otherwise). Each rule is checked at load (exit 78, key
        /// `goal.ledger`)
        ledger: String = (required) label "path (`~`, `{project}`, relative to `work_dir`)"
            reload Next into (ledger: PathBuf = hand);
        /// ours: with `"all_satisfied"`, the first round after which every check passed ends
        /// `serve` with exit 0 and `goal_reached{round_num, checks, rounds_completed}` (after
        /// the round's dirty tree was handled, its post-round hooks and detectors asked).
        /// Needs at least one check
        stop_when: String as StopWhen = (StopWhen::Never) reload Next;
        @sub checks: Vec<RawCheck>;
    }
    => /// `[goal]`, resolved.
    #[derive(Clone, Debug, PartialEq)]
    pub struct GoalConfig by GoalHand {
        /// The objective checks (`[[goal.checks]]`), run in this order after each round's
        /// agent exits.
        checks: Vec<GoalCheck>,
    }
}

config_table! {
    /// One `[[goal.checks]]` entry as serde sees it (its keys are table `goal.checks`).
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawCheck = "goal.checks" {
        /// `goal_check.name`
        name: String = (required) reload Next;
        /// the check's argv; `cmd[0]` is looked up on PATH
        cmd: Vec<String> = (required) label "list of strings, non-empty" reload Next;
        /// where it runs (`~` expanded, relative to `work_dir`)
        cwd: String = (computed "`work_dir`") label "path" reload Next
            into (cwd: PathBuf = hand);
        /// then its process group gets SIGTERM, and SIGKILL 3 s later
        timeout_s: u64 = (10) range(1..=MAX_CHECK_TIMEOUT_S) reload Next
            into (timeout: Duration = secs);
        /// ours: TCP ports a check confined by the agent sandbox may connect to (none
        /// otherwise: docs/security.md "Goal checks")
        connect_ports: Vec<u16> = (empty) label "list of integers 1..=65535" reload Next;
    }
    => /// One `[[goal.checks]]` entry, resolved (its process group gets SIGKILL
    /// [`CHECK_KILL_GRACE`] after the SIGTERM of its timeout).
    #[derive(Clone, Debug, PartialEq)]
    pub struct GoalCheck by CheckHand {}
}

/// What [`resolve`] checks the ledger against.
pub(super) struct Places<'a> {
    /// The work dir (canonical).
    pub work_dir: &'a Path,
    /// The log dir (absolute).
    pub log_dir: &'a Path,
    /// `expand_path` of the config layer: `~`, `{project}`, relative to `work_dir`.
    pub expand: &'a dyn Fn(&str) -> Result<PathBuf, super::bad_path::BadPath>,
    /// Each phase's prompt files, by where they are set (`prompt` or
    /// `phases.<name>.prompt`); the base alone without phases.
    pub prompt_files: Vec<(String, &'a [PathBuf])>,
}

/// Checks `[goal]` and fills its defaults. The ledger rules (the reference system's):
/// it must be one of the prompt files of every phase at index 1 or later (it does not
/// exist before the first advisory, and a missing first prompt file is fatal), and it must
/// lie under `log_dir` or outside `work_dir`, so a stash of the dirty tree cannot take it.
///
/// Errors: `(dotted key, what was expected)`.
pub(super) fn resolve(
    mut raw: RawGoal,
    places: &Places<'_>,
) -> Result<GoalConfig, (String, String)> {
    let ledger =
        (places.expand)(&raw.ledger).map_err(|m| ("goal.ledger".to_owned(), m.to_string()))?;
    for (where_, files) in &places.prompt_files {
        if files.iter().skip(1).all(|f| *f != ledger) {
            return Err((
                "goal.ledger".into(),
                format!(
                    "{} is not one of [{where_}] files at index 1 or later; list it there after the main prompt (the single `file =` form cannot carry it)",
                    ledger.display()
                ),
            ));
        }
    }
    let log_dir = normalize_existing(places.log_dir);
    let resolved = normalize_existing(&ledger);
    if resolved.starts_with(places.work_dir) && !resolved.starts_with(&log_dir) {
        return Err((
            "goal.ledger".into(),
            format!(
                "{} is inside runtime.work_dir ({}) but outside runtime.log_dir ({}): a stash of the dirty tree would take it after the round it was written for; put it under log_dir or outside work_dir",
                ledger.display(),
                places.work_dir.display(),
                places.log_dir.display()
            ),
        ));
    }
    let mut checks = Vec::with_capacity(raw.checks.len());
    for (i, check) in std::mem::take(&mut raw.checks).into_iter().enumerate() {
        let key = |k: &str| format!("goal.checks[{i}].{k}");
        // The definitions name `goal.checks.<key>`; the message names the entry.
        let at = |(k, m): (String, String)| (key(k.trim_start_matches("goal.checks.")), m);
        if check.name.trim().is_empty() {
            return Err((key("name"), "expected a non-empty name".into()));
        }
        if check.cmd.first().is_none_or(String::is_empty) {
            return Err((
                key("cmd"),
                "expected a non-empty argv, e.g. [\"make\", \"test\"]".into(),
            ));
        }
        if check.connect_ports().contains(&0) {
            return Err((key("connect_ports"), "expected ports 1..=65535".into()));
        }
        let cwd = match check.cwd().map_err(at)?.filter(|c| !c.is_empty()) {
            None => places.work_dir.to_owned(),
            Some(text) => (places.expand)(&text).map_err(|m| (key("cwd"), m.to_string()))?,
        };
        checks.push(check.resolve_with(CheckHand { cwd }).map_err(at)?);
    }
    let goal = raw.resolve_with(GoalHand { ledger, checks })?;
    if goal.stop_when == StopWhen::AllSatisfied && goal.checks.is_empty() {
        return Err((
            "goal.stop_when".into(),
            "\"all_satisfied\" needs at least one [[goal.checks]] entry".into(),
        ));
    }
    Ok(goal)
}

/// `path` with its longest existing ancestor made canonical (symlinks resolved), the rest
/// appended: a ledger and a log dir that do not exist yet compare like the ones that do.
fn normalize_existing(path: &Path) -> PathBuf {
    let mut base = path.to_owned();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = base.canonicalize() {
            return rest.iter().rev().fold(canonical, |p, c| p.join(c));
        }
        match (base.file_name().map(ToOwned::to_owned), base.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                base = parent.to_owned();
            }
            _ => return path.to_owned(),
        }
    }
}
