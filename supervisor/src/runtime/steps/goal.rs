//! `[goal]` (docs/configuration.md, "[goal]"): the objective checks run after each
//! round's agent exits, and the treadmill advisory prepended to the lessons ledger before
//! a round starts. Both only inform: nothing here can end a round, kill an agent or make
//! `serve` give up; the one way a goal ends `serve` is the operator's opt-in
//! `[goal] stop_when = "all_satisfied"`, decided by `serve` from [`Checked`].
//!
//! A check runs code the agent could have written (its script, a module it imports), after
//! the agent's round: it is confined like the agent (docs/security.md "Goal checks"). It is
//! started by the `plugin-host` launcher (docs/security.md "The launcher"), found on `PATH`
//! (a relative path against its `cwd`), with the environment the agent gets; where the
//! agent sandbox is on, under the agent's tier and policy, in a PID namespace of its own
//! (nothing it starts outlives it), with TCP only to its own `connect_ports`; it dies with
//! the supervisor, and a guard in its process group kills the group if the supervisor dies.
//! A check whose command file, or a file named in its arguments, changed since the run's
//! first round began is recorded as `goal_check_tampered` and does not count as satisfied
//! ([`Fingerprints`]; a module the check imports is not caught). It runs in its own process group under its `timeout_s`: on breach the group gets
//! SIGTERM, then SIGKILL [`CHECK_KILL_GRACE`] later; whatever is left in the group when
//! the check ends is killed too. Its output is read for at most [`CHECK_KILL_GRACE`] after
//! it ends (a descendant that left the group cannot hold the round), and only its last
//! [`OUTPUT_TAIL`] bytes are kept: `goal_check.value` is the last finite number printed.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::AsyncReadExt;

use agent_runner_plugin_host::common::program::Program;

use crate::config::{Config, GoalCheck, GoalConfig, CHECK_KILL_GRACE};
use crate::record::events::read::Backwards;
use crate::record::events::{Event, EventLog};
use crate::runtime::agent::sandbox::AgentSandboxGate;
use crate::runtime::machine::round_cgroup::RoundCgroup;
use crate::tree_file::KnownLinks;

/// Bytes of a check's stdout kept (its end): enough for the last number of a report.
const OUTPUT_TAIL: usize = 64 * 1024;

/// Completed rounds the treadmill advisory looks at (the reference system's).
const TREADMILL_ROUNDS: usize = 3;

/// The ledger is cut to at most this many bytes, oldest advisories first (the newest is
/// always kept).
const LEDGER_MAX_BYTES: usize = 8192;

/// Lines of the record read back at most when looking for the treadmill: the episode walk
/// stops there (about a thousand rounds of a typical record).
const TREADMILL_SCAN_LINES: usize = 50_000;

/// One check's result, as `goal_check` records it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CheckResult {
    /// The check's name.
    pub name: String,
    /// Exited 0 within its timeout.
    pub satisfied: bool,
    /// The last finite number its stdout printed.
    pub value: Option<f64>,
    /// Its timeout ran out.
    pub timed_out: bool,
}

/// What the checks of one round came to.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Checked {
    /// Each check's result, in config order (empty under `dry_run`: checks are skipped).
    pub results: Vec<CheckResult>,
    /// When each check that ran started and ended, and why it could not start (the round's
    /// trace: docs/operations.md "Traces"), in config order.
    pub timings: Vec<CheckTiming>,
}

/// When one check ran, for the round's trace.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CheckTiming {
    /// The check's name.
    pub name: String,
    /// Just before it was started.
    pub started: std::time::SystemTime,
    /// When its result was known.
    pub ended: std::time::SystemTime,
    /// Why it could not start; `None`: it ran.
    pub error: Option<String>,
}

impl Checked {
    /// Every check ran and passed (and there was at least one).
    pub(crate) fn all_satisfied(&self) -> bool {
        !self.results.is_empty() && self.results.iter().all(|r| r.satisfied)
    }
}

/// Runs every check of `goal` in order, each recorded as `goal_check`; under `dry_run`
/// none is started and each is recorded as skipped.
pub(crate) async fn run_checks(
    goal: &GoalConfig,
    dry_run: bool,
    round_num: u64,
    events: &EventLog,
    launch: &CheckLaunch<'_>,
    before: &Fingerprints,
) -> Checked {
    let mut results = Vec::with_capacity(goal.checks.len());
    let mut timings = Vec::with_capacity(goal.checks.len());
    for check in &goal.checks {
        if dry_run {
            events.emit(Event::GoalCheck {
                name: check.name.clone(),
                satisfied: false,
                value: None,
                timed_out: false,
                skipped: true,
                error: None,
                denied: Vec::new(),
                oom_killed: false,
                round_num,
            });
            continue;
        }
        let tampered = before.changed(check);
        if !tampered.is_empty() {
            events.emit(Event::GoalCheckTampered {
                name: check.name.clone(),
                paths: tampered.clone(),
                round_num,
            });
        }
        let started = std::time::SystemTime::now();
        let (mut result, error, denied, oom_killed) = match run_one(check, launch).await {
            Ok(ran) => (ran.result, None, ran.denied, ran.oom_killed),
            Err(e) => (
                CheckResult {
                    name: check.name.clone(),
                    satisfied: false,
                    value: None,
                    timed_out: false,
                },
                Some(agent_runner_protocol::limits::fit_text(
                    &format!("cannot start {:?}: {e}", check.cmd[0]),
                    200,
                )),
                Vec::new(),
                false,
            ),
        };
        result.satisfied &= tampered.is_empty();
        timings.push(CheckTiming {
            name: result.name.clone(),
            started,
            ended: std::time::SystemTime::now(),
            error: error.clone(),
        });
        events.emit(Event::GoalCheck {
            name: result.name.clone(),
            satisfied: result.satisfied,
            value: result.value,
            timed_out: result.timed_out,
            skipped: false,
            error,
            denied,
            oom_killed,
            round_num,
        });
        results.push(result);
    }
    Checked { results, timings }
}

/// How a round's checks are launched: the agent's sandbox gate, the config, the variables
/// the agent gets on top of the supervisor's environment, and the cgroup with the round's
/// memory bounds.
pub(crate) struct CheckLaunch<'a> {
    /// The agent's sandbox gate: a check is confined where the agent is.
    pub gate: &'a AgentSandboxGate,
    /// The config (the sandbox's grants).
    pub config: &'a Config,
    /// The agent's variables (`[agent.env]` and the round's).
    pub env: Vec<(String, String)>,
    /// What of the supervisor's environment a check inherits: the agent's allow-list
    /// without a CLI's provider variables; `None`: all of it (`mode = "off"`).
    pub inherit: Option<crate::runtime::agent::environment::AllowList>,
    /// Where the protected paths lie.
    pub tree: crate::runtime::agent::sandbox::TreeRoots,
    /// The cgroup the checks join, with the round's `round_high_mb` / `round_max_mb`
    /// (a child of the delegated cgroup, as the agent's; `None`: the supervisor's own).
    pub cgroup: Option<&'a RoundCgroup>,
}

/// How one check ran.
struct Ran {
    result: CheckResult,
    /// The system calls its sandbox refused, by name.
    denied: Vec<String>,
    /// The kernel's OOM killer killed in the checks' cgroup while it ran.
    oom_killed: bool,
}

/// Runs one check in its own process group under its timeout, in the round's cgroup and
/// confined like the agent where the agent sandbox is on.
///
/// Errors: it could not be started (not found, not executable, `cwd` missing, its
/// confinement could not be prepared).
async fn run_one(check: &GoalCheck, launch: &CheckLaunch<'_>) -> std::io::Result<Ran> {
    let env =
        crate::runtime::agent::process::environment_with(&launch.env, launch.inherit.as_ref());
    let path_var = env
        .iter()
        .find(|(k, _)| k.as_os_str() == "PATH")
        .map(|(_, v)| v.clone());
    let path = crate::runtime::agent::process::find_on_path(&check.cmd[0], path_var, &check.cwd);
    let confinement = launch
        .gate
        .check_confinement(launch.config, &launch.tree, check, &launch.env)
        .map_err(std::io::Error::other)?;
    let mut env = env;
    if let Some(c) = &confinement {
        env.retain(|(k, _)| k.as_os_str() != "TMPDIR");
        env.push(("TMPDIR".into(), c.tmp_dir().into()));
    }
    let mut program = Program::new(&check.name, path, &check.cmd, &env)?;
    if let Some(procs) = launch.cgroup.and_then(RoundCgroup::procs_for_one_more) {
        program.join_cgroup(procs);
    }
    let oom_before = launch.cgroup.map_or(0, RoundCgroup::oom_kills);
    let guard = program.group_guard()?;
    if let Some(c) = &confinement {
        let fds = c.fill_plan(program.plan_mut());
        program.pass(fds);
    }
    let (mut cmd, pending) = program.command().map_err(std::io::Error::other)?;
    cmd.current_dir(&check.cwd)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // Root's check is born in a PID namespace of its own, as the agent is.
    let mut child =
        crate::runtime::agent::process::spawn_launched(cmd, pending, confinement.as_ref())?;
    drop(program);
    let mut listener = match &confinement {
        Some(c) => c
            .denial_listener(child.id().unwrap_or(0))
            .unwrap_or_else(|e| {
                tracing::warn!(
                    "goal check seccomp listener not received; its denials go unreported: {e}"
                );
                None
            }),
        None => None,
    };
    let pgid = Pid::from_raw(child.id().map(|id| id as i32).unwrap_or(0));
    let mut stdout = child.stdout.take().expect("piped");
    let reader = tokio::spawn(async move {
        let mut tail = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = stdout.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > 2 * OUTPUT_TAIL {
                tail.drain(..tail.len() - OUTPUT_TAIL);
            }
        }
        tail
    });
    let (status, timed_out) = match tokio::time::timeout(check.timeout, child.wait()).await {
        Ok(status) => (status.ok(), false),
        Err(_) => {
            let _ = killpg(pgid, Signal::SIGTERM);
            let status = match tokio::time::timeout(CHECK_KILL_GRACE, child.wait()).await {
                Ok(status) => status.ok(),
                Err(_) => {
                    let _ = killpg(pgid, Signal::SIGKILL);
                    child.wait().await.ok()
                }
            };
            (status, true)
        }
    };
    // What the check left in its group (the guard included) goes with it, and is reaped
    // once reparented here (the supervisor is a child subreaper).
    let _ = killpg(pgid, Signal::SIGKILL);
    drop(guard);
    reap_group(pgid).await;
    let tail = match tokio::time::timeout(CHECK_KILL_GRACE, reader).await {
        Ok(Ok(tail)) => tail,
        _ => Vec::new(),
    };
    let satisfied = !timed_out && status.is_some_and(|s| s.success());
    let mut denied = Vec::new();
    while let Some(d) = listener.as_mut().and_then(|l| l.try_denial()) {
        let target = agent_runner_plugin_host::agent::policy::denial_target(d.nr, &d.args);
        if !denied.contains(&target) {
            denied.push(target);
        }
    }
    Ok(Ran {
        result: CheckResult {
            name: check.name.clone(),
            satisfied,
            value: last_number(&String::from_utf8_lossy(&tail)),
            timed_out,
        },
        denied,
        oom_killed: launch.cgroup.map_or(0, RoundCgroup::oom_kills) > oom_before,
    })
}

/// The files of each check that no round may change: its command file (as found on
/// `PATH`, or against its `cwd`) and every existing regular file its arguments name
/// (against its `cwd`), each with the sha256 of its bytes (`None`: missing). Taken before
/// the first round's agent runs ([`Fingerprints::add_new`]) and compared after each round
/// ([`Fingerprints::changed`]): a check the agent rewrote stays untrusted for the rest of
/// the run, not only for the round that rewrote it, and in later runs while it is still
/// what the agent left ([`Fingerprints::holding`]).
#[derive(Debug, Default)]
pub(crate) struct Fingerprints {
    files: BTreeMap<String, Vec<Fingerprint>>,
    /// Files an agent rewrote in an earlier process, with what it left
    /// ([`crate::record::agent_changes`]): still that, they count as changed.
    held: BTreeMap<PathBuf, String>,
}

/// One file and the sha256 of its bytes (`None`: missing).
type Fingerprint = (PathBuf, Option<[u8; 32]>);

impl Fingerprints {
    /// Fingerprints yet to take, holding the check files `changes` says an agent rewrote.
    pub(crate) fn holding(changes: &crate::record::agent_changes::AgentChanges) -> Fingerprints {
        use crate::record::agent_changes::Kind;
        Fingerprints {
            files: BTreeMap::new(),
            held: changes
                .of_kind(Kind::GoalCheck)
                .map(|c| (c.path.clone(), c.left.clone()))
                .collect(),
        }
    }

    /// Takes the fingerprints of the checks of `goal` not yet taken (all of them the first
    /// time; a check a reload added, later).
    pub(crate) fn add_new(&mut self, goal: &GoalConfig) {
        for check in &goal.checks {
            self.files.entry(check.name.clone()).or_insert_with(|| {
                check_files(check)
                    .into_iter()
                    .map(|path| {
                        let digest = digest(&path);
                        (path, digest)
                    })
                    .collect()
            });
        }
    }

    /// The files of `check` whose bytes changed (or that appeared or went) since they were
    /// taken.
    pub(crate) fn changed(&self, check: &GoalCheck) -> Vec<PathBuf> {
        self.files
            .get(&check.name)
            .into_iter()
            .flatten()
            .filter(|(path, before)| {
                digest(path) != *before
                    || self.held.get(path).is_some_and(|left| {
                        *left == crate::record::agent_changes::content_identity(path)
                    })
            })
            .map(|(path, _)| path.clone())
            .collect()
    }
}

/// The command file and argument files of `check` (see [`Fingerprints`]).
pub(crate) fn check_files(check: &GoalCheck) -> Vec<PathBuf> {
    let command = crate::runtime::agent::process::find_on_path(
        &check.cmd[0],
        std::env::var_os("PATH"),
        &check.cwd,
    );
    let mut files = vec![command];
    for arg in &check.cmd[1..] {
        let path = check.cwd.join(arg);
        if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            files.push(path);
        }
    }
    files.retain(|p| p.is_absolute());
    files.dedup();
    files
}

/// The sha256 of the regular file at `path` (links followed); `None` when there is none.
fn digest(path: &Path) -> Option<[u8; 32]> {
    let mut file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).ok()?;
    Some(hasher.finalize().into())
}

/// Reaps the supervisor's children in process group `pgid` (a killed check's
/// descendants, reparented here), waiting at most [`CHECK_KILL_GRACE`] for them.
async fn reap_group(pgid: Pid) {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    let deadline = std::time::Instant::now() + CHECK_KILL_GRACE;
    let group = Pid::from_raw(-pgid.as_raw());
    loop {
        match waitpid(group, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// The last whitespace-separated word of `text` that is a finite number.
fn last_number(text: &str) -> Option<f64> {
    text.split_whitespace()
        .rev()
        .filter_map(|w| w.parse::<f64>().ok())
        .find(|v| v.is_finite())
}

/// Per check name, `(satisfied, value)` as one round recorded it.
type Signature = BTreeMap<String, (bool, Option<u64>)>;

/// What one completed round of the record shows.
#[derive(Debug, Default)]
struct RoundSeen {
    /// Dirt, an auto-commit, or `HEAD` moved between `round_substrate_before` and
    /// `_after`.
    activity: bool,
    /// Its checks (values compared by their bits).
    signature: Signature,
    /// A `goal_assessment` was recorded in it (or before its next round started).
    assessed: bool,
    head_before: Option<String>,
    head_after: Option<String>,
}

/// Reads the record of `state_dir` back and, when the treadmill shows (the last
/// [`TREADMILL_ROUNDS`] completed rounds before `current_round` each had activity; every
/// check kept the same `(satisfied, value)` over them; at least one is unsatisfied; and no
/// `goal_assessment` since the episode began), returns the advisory's observation.
fn treadmill(state_dir: &Path, current_round: u64) -> Option<String> {
    let mut rounds: BTreeMap<u64, RoundSeen> = BTreeMap::new();
    // Events without `round_num` (`goal_assessment`) belong to the round before them:
    // going back, they are held until the round they follow is met.
    let mut pending_assessment = false;
    let mut back = Backwards::open(state_dir).ok()?;
    for _ in 0..TREADMILL_SCAN_LINES {
        let Ok(Some(found)) = back.next_event() else {
            break;
        };
        let kind = found.head.event.as_str();
        if kind == "goal_assessment" {
            pending_assessment = true;
            continue;
        }
        let Some(round_num) = found.head.round_num.filter(|n| *n < current_round) else {
            continue;
        };
        let seen = rounds.entry(round_num).or_default();
        if std::mem::take(&mut pending_assessment) {
            seen.assessed = true;
        }
        match kind {
            "dirty_detected" | "dirty_auto_committed" => seen.activity = true,
            "round_substrate_before" | "round_substrate_after" | "goal_check" => {
                let Ok(value) = serde_json::from_slice::<serde_json::Value>(found.line) else {
                    continue;
                };
                if kind == "goal_check" {
                    if value["skipped"] == true {
                        continue;
                    }
                    let Some(name) = value["name"].as_str() else {
                        continue;
                    };
                    let number = value["value"].as_f64().filter(|v| v.is_finite());
                    seen.signature
                        .entry(name.to_owned())
                        .or_insert((value["satisfied"] == true, number.map(f64::to_bits)));
                } else {
                    let head = value["git_head"].as_str().map(str::to_owned);
                    if kind == "round_substrate_before" {
                        seen.head_before = head;
                    } else {
                        seen.head_after = head;
                    }
                }
            }
            _ => {}
        }
    }
    let active = |seen: &RoundSeen| {
        seen.activity
            || matches!((&seen.head_before, &seen.head_after), (Some(b), Some(a)) if a != b)
    };
    let newest: Vec<&RoundSeen> = rounds.values().rev().collect();
    if newest.len() < TREADMILL_ROUNDS {
        return None;
    }
    let window = &newest[..TREADMILL_ROUNDS];
    let signature = &window[0].signature;
    if signature.is_empty()
        || signature.values().all(|(satisfied, _)| *satisfied)
        || window
            .iter()
            .any(|seen| !active(seen) || seen.signature != *signature)
    {
        return None;
    }
    // The episode: the window and every earlier round that still matches it.
    let episode = newest
        .iter()
        .take_while(|seen| active(seen) && seen.signature == *signature);
    if episode.into_iter().any(|seen| seen.assessed) {
        return None;
    }
    let names: Vec<&str> = signature.keys().map(String::as_str).collect();
    Some(format!(
        "For the last {TREADMILL_ROUNDS} rounds the working tree kept changing, but goal check(s) {} never changed status or value.",
        names.join(", ")
    ))
}

/// Before round `current_round` starts: when the treadmill shows, prepends one advisory to
/// the ledger (written whole and renamed into place, cut to [`LEDGER_MAX_BYTES`] at an
/// advisory's boundary) and records `goal_assessment`. A failure is logged, never raised:
/// the advisory never holds a round up. The ledger (one of the prompt files, in the
/// agent's reach) is read only where it resolved as `links` knew it.
pub(crate) fn assess(
    goal: &GoalConfig,
    state_dir: &Path,
    current_round: u64,
    events: &EventLog,
    links: &KnownLinks,
) {
    let Some(observation) = treadmill(state_dir, current_round) else {
        return;
    };
    let question = "What specifically blocks progress on the unmet check(s): is there a concrete next step, or does the check measure the wrong thing?";
    let confidence = "medium";
    let observation = agent_runner_protocol::redact::redact(&observation);
    let block = format!(
        "### Goal assessment -- {}\n- Observation: {observation}\n- Question: {question}\n- Confidence: {confidence}",
        crate::record::events::timestamp(std::time::SystemTime::now())
    );
    if let Err(e) = prepend(&goal.ledger, &block, links) {
        tracing::warn!(
            "goal advisory skipped: cannot write {}: {e}",
            goal.ledger.display()
        );
        return;
    }
    events.emit(Event::GoalAssessment {
        observation,
        question: question.to_owned(),
        confidence: confidence.to_owned(),
    });
}

/// Separates advisories in the ledger.
const BLOCK_SEP: &str = "\n\n";

/// Prepends `block` to the ledger at `path`, dropping the oldest blocks past
/// [`LEDGER_MAX_BYTES`]; written to `<path>.tmp`, synced, renamed over `path`. The ledger
/// is read only where it resolved as `links` knew it ([`KnownLinks::check`]) and only as a
/// regular file: a link the agent put there (to a key, which the rewrite would copy into
/// the ledger, a prompt file) or a FIFO is refused, never read.
///
/// Errors: the ledger is refused, or cannot be read or written.
fn prepend(path: &Path, block: &str, links: &KnownLinks) -> std::io::Result<()> {
    links.check(path)?;
    let existing = match crate::tree_file::read_regular(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let mut kept: Vec<&str> = Vec::new();
    let mut total = 0;
    for part in
        std::iter::once(block).chain(existing.split(BLOCK_SEP).filter(|b| !b.trim().is_empty()))
    {
        let add = part.len() + if kept.is_empty() { 0 } else { BLOCK_SEP.len() };
        if !kept.is_empty() && total + add > LEDGER_MAX_BYTES {
            break;
        }
        kept.push(part);
        total += add;
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_file_name(format!(
        "{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    let written = (|| {
        use std::io::Write;
        // Never through a name the agent may have planted (a ledger outside the tree can
        // still sit in a log dir inside it).
        let mut file = crate::record::state::create_exclusive(&tmp)?;
        file.write_all(kept.join(BLOCK_SEP).as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_finite_number_is_the_value() {
        assert_eq!(last_number("passed 12 of 14\nscore: 0.75\n"), Some(0.75));
        assert_eq!(last_number("3 nan inf"), Some(3.0));
        assert_eq!(last_number("no numbers"), None);
    }

    #[test]
    fn the_ledger_is_never_written_through_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "the operator's file\n").unwrap();
        let ledger = dir.path().join("lessons.md");
        std::os::unix::fs::symlink(&victim, dir.path().join("lessons.md.tmp")).unwrap();
        prepend(&ledger, "### advisory", &KnownLinks::default()).unwrap();
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "the operator's file\n"
        );
        assert_eq!(std::fs::read_to_string(&ledger).unwrap(), "### advisory");
        // The control: a plain create follows the link.
        std::os::unix::fs::symlink(&victim, dir.path().join("followed")).unwrap();
        std::fs::write(dir.path().join("followed"), "x").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "x");
    }

    #[test]
    fn a_ledger_the_agent_linked_to_a_key_is_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let key = root.join("id_rsa");
        std::fs::write(&key, "PRIVATE KEY").unwrap();
        let ledger = root.join("logs/lessons.md");
        std::fs::create_dir_all(ledger.parent().unwrap()).unwrap();
        std::fs::write(&ledger, "### old").unwrap();
        let links = KnownLinks::of(std::slice::from_ref(&ledger));
        // The agent replaces the ledger by a link to the key.
        std::fs::remove_file(&ledger).unwrap();
        std::os::unix::fs::symlink(&key, &ledger).unwrap();
        let err = prepend(&ledger, "### advisory", &links).unwrap_err();
        assert!(err.to_string().contains("never followed"), "{err}");
        assert!(std::fs::symlink_metadata(&ledger).unwrap().is_symlink());
        // A FIFO is not waited on.
        std::fs::remove_file(&ledger).unwrap();
        nix::unistd::mkfifo(&ledger, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(prepend(&ledger, "### advisory", &links).is_err());
        // The control: without the check, the key is read into the ledger.
        std::fs::remove_file(&ledger).unwrap();
        std::os::unix::fs::symlink(&key, &ledger).unwrap();
        assert_eq!(std::fs::read_to_string(&ledger).unwrap(), "PRIVATE KEY");
    }

    #[test]
    fn the_ledger_keeps_the_newest_blocks_within_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("logs/lessons.md");
        let big = "x".repeat(3000);
        for i in 0..4 {
            prepend(&ledger, &format!("### {i}\n{big}"), &KnownLinks::default()).unwrap();
        }
        let text = std::fs::read_to_string(&ledger).unwrap();
        assert!(text.len() <= LEDGER_MAX_BYTES, "{}", text.len());
        assert!(text.starts_with("### 3\n"), "newest first");
        assert!(text.contains("### 2\n") && !text.contains("### 1\n"));
        // The newest block is kept even when it alone is over the cap.
        prepend(
            &ledger,
            &format!("### huge\n{}", "y".repeat(10_000)),
            &KnownLinks::default(),
        )
        .unwrap();
        let text = std::fs::read_to_string(&ledger).unwrap();
        assert!(text.starts_with("### huge\n") && !text.contains("### 3"));
    }
}
