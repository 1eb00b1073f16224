//! The agent's own "done" (docs/reference-system.md, "Self-termination"): an agent that
//! judges its work finished writes `$AGENT_RUNNER_LOG_DIR/.agent-done`; `serve` looks for
//! it before each round and, when it is there, records `agent_self_terminated` with the
//! file's first 200 characters as `reason` and ends with exit 0. A file left by an earlier
//! run is removed when `serve` starts, so it never stops a fresh one.

use agent_runner_protocol::redact::redact;

use crate::held_dir::HeldDir;

use crate::tree_file::{head_chars, Symlink};

/// The sentinel's name inside `log_dir` (the reference system's).
pub(crate) const SENTINEL: &str = ".agent-done";

/// Characters of the sentinel kept as `agent_self_terminated.reason` (the reference's cap).
const REASON_CHARS: usize = 200;

/// Removes a sentinel an earlier run left behind (a missing one is no error). `Err` only
/// when one exists and cannot be removed, or the log dir cannot be reached without
/// following a link planted since boot ([`HeldDir::open`]): `serve` would stop before its
/// first round.
pub(crate) fn clear_stale(log_dir: &HeldDir) -> std::io::Result<()> {
    match std::fs::remove_file(log_dir.open()?.at().join(SENTINEL)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// `Some(reason)` when the agent has written the sentinel: its first 200 characters, lossy
/// UTF-8, secrets redacted (the agent wrote it). A sentinel that is not a regular file (a
/// symbolic link, a FIFO) still counts, with an empty reason: it is never read through.
/// None is looked for through a link planted at the log dir since boot.
pub(crate) fn reason(log_dir: &HeldDir) -> Option<String> {
    let dir = log_dir.open().ok()?;
    let path = dir.at().join(SENTINEL);
    std::fs::symlink_metadata(&path).ok()?;
    Some(redact(&head_chars(&path, Symlink::Refuse, REASON_CHARS)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_is_the_first_200_characters_and_a_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let held = HeldDir::resolve(dir.path());
        assert_eq!(reason(&held), None);
        std::fs::write(dir.path().join(SENTINEL), "é".repeat(300)).unwrap();
        assert_eq!(reason(&held), Some("é".repeat(200)));
        clear_stale(&held).unwrap();
        assert_eq!(reason(&held), None);
        clear_stale(&held).unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "hunter2").unwrap();
        std::os::unix::fs::symlink(&secret, dir.path().join(SENTINEL)).unwrap();
        assert_eq!(reason(&held), Some(String::new()));
        clear_stale(&held).unwrap();
        assert!(secret.exists(), "removing the link leaves its target");
    }
}
