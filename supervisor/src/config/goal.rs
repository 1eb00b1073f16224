//! `[goal]` and `[[goal.checks]]`: the one place their keys are read, checked and given
//! defaults (docs/configuration.md, "[goal]"). The keys, bounds and ledger rules are the
//! reference system's 0.3.12 (`docs/reference-system.md`, "Goal checks"); `stop_when` is
//! ours.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A check's `timeout_s` when the file gives none.
pub(crate) const DEFAULT_CHECK_TIMEOUT_S: u64 = 10;

/// The largest `timeout_s` a check may have: a check is a quick objective look (a test
/// run, a count), not another round. Larger values are refused, not clamped.
pub(crate) const MAX_CHECK_TIMEOUT_S: u64 = 30;

/// The grace between a check's SIGTERM and the SIGKILL of its process group, and the
/// bound on reading its output after the kill.
pub(crate) const CHECK_KILL_GRACE: Duration = Duration::from_secs(3);

/// `[goal]` as serde sees it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGoal {
    ledger: String,
    #[serde(default)]
    checks: Vec<RawCheck>,
    stop_when: Option<String>,
}

/// One `[[goal.checks]]` entry as serde sees it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    name: String,
    cmd: Vec<String>,
    cwd: Option<String>,
    timeout_s: Option<u64>,
}

/// When reaching the goal ends `serve` (`[goal] stop_when`, ours).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StopWhen {
    /// `"never"` (default, the reference system's behaviour): checks only inform.
    #[default]
    Never,
    /// `"all_satisfied"`: the first round after which every check passed ends `serve`
    /// with `goal_reached` and exit 0.
    AllSatisfied,
}

/// `[goal]`, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct GoalConfig {
    /// The lessons ledger (absolute): a markdown file the supervisor prepends advisories
    /// to and the agent reads as one of its prompt files.
    pub ledger: PathBuf,
    /// The objective checks, run in this order after each round's agent exits.
    pub checks: Vec<GoalCheck>,
    /// Whether every check passing ends `serve`.
    pub stop_when: StopWhen,
}

/// One `[[goal.checks]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct GoalCheck {
    /// Its name (`goal_check.name`).
    pub name: String,
    /// Its argv; `cmd[0]` is looked up on `PATH`.
    pub cmd: Vec<String>,
    /// Where it runs: `cwd` (`~` expanded, relative to `work_dir`), default `work_dir`.
    pub cwd: PathBuf,
    /// How long it may run before its process group gets SIGTERM, then SIGKILL
    /// ([`CHECK_KILL_GRACE`] later); 1..=[`MAX_CHECK_TIMEOUT_S`] s, default 10.
    pub timeout: Duration,
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
pub(super) fn resolve(raw: RawGoal, places: &Places<'_>) -> Result<GoalConfig, (String, String)> {
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
    for (i, check) in raw.checks.into_iter().enumerate() {
        let key = |k: &str| format!("goal.checks[{i}].{k}");
        if check.name.trim().is_empty() {
            return Err((key("name"), "expected a non-empty name".into()));
        }
        if check.cmd.first().is_none_or(String::is_empty) {
            return Err((
                key("cmd"),
                "expected a non-empty argv, e.g. [\"make\", \"test\"]".into(),
            ));
        }
        let timeout_s = check.timeout_s.unwrap_or(DEFAULT_CHECK_TIMEOUT_S);
        if !(1..=MAX_CHECK_TIMEOUT_S).contains(&timeout_s) {
            return Err((
                key("timeout_s"),
                format!(
                    "{timeout_s} is out of range; expected seconds in 1..={MAX_CHECK_TIMEOUT_S}"
                ),
            ));
        }
        let cwd = match check.cwd.as_deref().filter(|c| !c.is_empty()) {
            None => places.work_dir.to_owned(),
            Some(text) => (places.expand)(text).map_err(|m| (key("cwd"), m.to_string()))?,
        };
        checks.push(GoalCheck {
            name: check.name,
            cmd: check.cmd,
            cwd,
            timeout: Duration::from_secs(timeout_s),
        });
    }
    let stop_when = match raw.stop_when.as_deref() {
        None | Some("never") => StopWhen::Never,
        Some("all_satisfied") => StopWhen::AllSatisfied,
        Some(other) => {
            return Err((
                "goal.stop_when".into(),
                format!("{other:?}: expected \"never\" or \"all_satisfied\""),
            ))
        }
    };
    if stop_when == StopWhen::AllSatisfied && checks.is_empty() {
        return Err((
            "goal.stop_when".into(),
            "\"all_satisfied\" needs at least one [[goal.checks]] entry".into(),
        ));
    }
    Ok(GoalConfig {
        ledger,
        checks,
        stop_when,
    })
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
