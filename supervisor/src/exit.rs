//! Exit codes and the one top-level error type of the CLI (the reference system's codes:
//! 0 clean, 1 failure, 2 usage, 70 memory loop across restarts, 71 memory loop, 75
//! deferred/skipped/crash loop, 76 environmental, 78 permanent config error, 130
//! interrupted), plus ours: 77 stopped on a login failure (`[monitor] auto_stop_on`), and
//! the two exits of `serve --job`: 79 ended without its goal, 143 drained by a stop signal,
//! and 80 the `[budget]` spent.
//! docs/operations.md, "Leaving it unattended", has the table; "Running as a Job" maps
//! them onto a Kubernetes Job's `podFailurePolicy`.

use std::fmt;
use std::process::ExitCode;

/// Clean exit.
pub(crate) const OK: u8 = 0;
/// A failure: agent failed or timed out, serve already running, a check failed.
pub(crate) const FAILURE: u8 = 1;
/// Bad command-line usage (clap's own code).
pub(crate) const USAGE: u8 = 2;
/// Temporary: a spawn hook deferred or skipped the round; no agent started (EX_TEMPFAIL).
/// From `serve`: a deliberate stop (crash loop, `transient_error_action = "stop"`, a
/// detector hook's auto-stop), which the systemd unit does not restart.
pub(crate) const TEMPFAIL: u8 = 75;
/// `serve` stopped on a post-round stop the operator allowed (`[monitor] auto_stop_on`):
/// an expired or missing login, typically. Restarting cannot help until someone acts, so
/// the systemd unit does not restart on it (EX_NOPERM).
pub(crate) const NOPERM: u8 = 77;
/// `upgrade` refused before the swap: the new binary failed a check, another upgrade
/// runs, the directory is not writable; nothing changed (docs/operations.md, "upgrade").
pub(crate) const UPGRADE_REFUSED: u8 = 3;
/// `upgrade` swapped, the new binary did not come up, and neither did the old one put
/// back: nothing runs, a person must look (the reference system exits 2 here, which is
/// our usage code).
pub(crate) const ROLLBACK_FAILED: u8 = 4;
/// `serve` gave up on a memory loop that came back across restarts (`mem_loop_persistent`:
/// the third `mem_loop` within two hours, [`crate::record::mem_loops`]). Restarting has
/// not helped, so the systemd unit does not restart on it (EX_SOFTWARE, the reference
/// system's code).
pub(crate) const MEM_LOOP_PERSISTENT: u8 = 70;
/// `serve` gave up after rounds ended by memory in a row (`mem_loop`: the in-round memory
/// floor or an OOM kill in the round's cgroup). The host's memory may have recovered by
/// the time a fresh `serve` starts, so the systemd unit restarts it (EX_OSERR, the
/// reference system's code).
pub(crate) const MEM_LOOP: u8 = 71;
/// The environment failed `serve`: the state dir or log dir cannot be written (disk full,
/// a read-only or vanished mount, a lock file that cannot be used), at boot or for
/// rounds in a row after growing waits (`environment_unusable`). It may heal, so the
/// systemd unit restarts it, bounded by its start limit (EX_PROTOCOL, the reference
/// system's code for an environmental failure).
pub(crate) const ENVIRONMENT: u8 = 76;
/// `serve --job` ended without its goal reached (`[goal] stop_when = "all_satisfied"`): a
/// bound (`max_rounds`, `--max-rounds`, `--once`, `max_duration_s`), the stop file or the
/// agent's `.agent-done`. The budget is spent and the task is not done; a new start would
/// spend another, so the systemd unit does not restart on it and a Job fails on it
/// (docs/operations.md, "Running as a Job"). Past the sysexits range, which has no word
/// for it.
pub(crate) const GOAL_NOT_REACHED: u8 = 79;
/// `serve --job` drained by a stop (SIGTERM, SIGINT, `agent-runner stop`) before its goal
/// and its bound (a stop once a bound is reached ends it with [`GOAL_NOT_REACHED`]):
/// the pod was deleted, evicted or preempted, and the round under way finished and was
/// recorded. 128 + SIGTERM, what a kubelet reports for a process the signal killed, so a
/// drain and a kill by the grace period's end read alike. A Job retries it without
/// counting it against `backoffLimit`; the systemd unit restarts on it.
pub(crate) const DRAINED: u8 = 143;
/// `serve` stopped on a `[budget]` `total_usd` or `total_tokens` cap reached
/// (`budget_exhausted`): every new start would stop at once until the cap is raised or
/// `agent-runner budget reset` is run, so the systemd unit does not restart on it and a
/// Job fails on it (docs/operations.md, "Budget"). Past the sysexits range.
pub(crate) const BUDGET_EXHAUSTED: u8 = 80;
/// Interrupted by a stop before the work could start.
pub(crate) const INTERRUPTED: u8 = 130;
/// Permanent configuration error: bad config, or `sandbox = "require"` cannot engage
/// (EX_CONFIG). systemd units use it in `RestartPreventExitStatus`.
pub(crate) const CONFIG: u8 = 78;

/// The exits of `serve` that mean "stay stopped": a person must act before a new start can
/// help (usage, a memory loop restarts did not cure, a deliberate stop, a login failure, a
/// config error, a Job's goal not reached, the budget spent). The systemd unit lists them in
/// `RestartPreventExitStatus=` (docs/operations.md, "Leaving it unattended") and a Job's
/// `podFailurePolicy` fails the Job on them ("Running as a Job"); [`MEM_LOOP`] and
/// [`ENVIRONMENT`] are left out on purpose: a new start may find the host healed.
pub(crate) const STAY_STOPPED: [u8; 7] = [
    USAGE,
    MEM_LOOP_PERSISTENT,
    TEMPFAIL,
    NOPERM,
    CONFIG,
    GOAL_NOT_REACHED,
    BUDGET_EXHAUSTED,
];

/// The exits of `serve` that mean "stopped from outside, start again": a Job's
/// `podFailurePolicy` retries them without counting them against `backoffLimit` (the
/// pod's disruption is not the run's failure). Every other non-zero exit is retried and
/// counted, as the systemd unit restarts it within its start limit.
pub(crate) const DISRUPTED: [u8; 1] = [DRAINED];

/// What a Kubernetes Job does with an exit of `serve --job`: success, or the action of the
/// Job's `podFailurePolicy` rule the exit matches (the rule's `action` word: FailJob,
/// Ignore, Count). deploy/kubernetes/ generates that policy from [`STAY_STOPPED`] and
/// [`DISRUPTED`]; a unit test holds it to [`JobAction::of`] for every exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobAction {
    /// Exit 0: the Job is complete.
    Complete,
    /// The Job fails at once, whatever `backoffLimit` allows ([`STAY_STOPPED`]).
    FailJob,
    /// A new pod starts, not counted against `backoffLimit` ([`DISRUPTED`]).
    Ignore,
    /// A new pod starts, counted against `backoffLimit` (every other exit).
    Count,
}

impl JobAction {
    /// The action for exit `code`.
    pub(crate) fn of(code: u8) -> Self {
        if code == OK {
            JobAction::Complete
        } else if STAY_STOPPED.contains(&code) {
            JobAction::FailJob
        } else if DISRUPTED.contains(&code) {
            JobAction::Ignore
        } else {
            JobAction::Count
        }
    }

    /// What the Job does, in words.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            JobAction::Complete => "completes",
            JobAction::FailJob => "fails",
            JobAction::Ignore => "starts a new pod, not counted against backoffLimit",
            JobAction::Count => "starts a new pod, counted against backoffLimit",
        }
    }
}

/// An error that ends the command: one message for stderr and its exit code.
#[derive(Debug)]
pub(crate) struct CliError {
    /// One of the constants of this module.
    pub code: u8,
    /// What went wrong and what to do, one line.
    pub message: String,
}

impl CliError {
    /// A configuration error (exit 78).
    pub(crate) fn config(message: impl Into<String>) -> Self {
        CliError {
            code: CONFIG,
            message: message.into(),
        }
    }

    /// A runtime failure (exit 1).
    pub(crate) fn failure(message: impl Into<String>) -> Self {
        CliError {
            code: FAILURE,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// Converts a numeric code into the process exit code.
pub(crate) fn code(value: u8) -> ExitCode {
    ExitCode::from(value)
}
