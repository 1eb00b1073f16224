//! Exit codes and the one top-level error type of the CLI (the reference system's codes:
//! 0 clean, 1 failure, 2 usage, 70 memory loop across restarts, 71 memory loop, 75
//! deferred/skipped/crash loop, 76 environmental, 78 permanent config error, 130
//! interrupted), plus ours: 77 stopped on a login failure (`[monitor] auto_stop_on`).
//! docs/operations.md, "Leaving it unattended", has the table.

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
/// Interrupted by a stop before the work could start.
pub(crate) const INTERRUPTED: u8 = 130;
/// Permanent configuration error: bad config, or `sandbox = "require"` cannot engage
/// (EX_CONFIG). systemd units use it in `RestartPreventExitStatus`.
pub(crate) const CONFIG: u8 = 78;

/// The exits of `serve` that mean "stay stopped": a person must act before a new start can
/// help (usage, a memory loop restarts did not cure, a deliberate stop, a login failure, a
/// config error). The systemd unit lists them in `RestartPreventExitStatus=`
/// (docs/operations.md, "Leaving it unattended"); [`MEM_LOOP`] and [`ENVIRONMENT`] are
/// left out on purpose: a new start may find the host healed.
pub(crate) const STAY_STOPPED: [u8; 5] = [USAGE, MEM_LOOP_PERSISTENT, TEMPFAIL, NOPERM, CONFIG];

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
