//! The round context the agent sees (`[prompt] inject_context`, `context_injection_mode`):
//! the round number, its start time, its phase, how the previous round ended and the
//! orphan stash still left from an earlier round. It is written to
//! `<log_dir>/round-context.json` before every round (where the reference system writes
//! it) and, in `prepend` mode, also put before the prompt as a fenced block.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

use crate::runtime::git::Repo;
use crate::runtime::state::{
    read_json, read_round_state, write_json_atomic, OrphanState, ORPHAN_FILE,
};

/// Name of the context file in `log_dir`.
pub const CONTEXT_FILE: &str = "round-context.json";

/// The variable naming the context file in the agent's environment (`file` mode).
pub const CONTEXT_FILE_ENV: &str = "AGENT_RUNNER_CONTEXT_FILE";

/// The round context's own top-level keys; a context enricher may not be named after one
/// (its object is put under its name, docs/protocol.md §5.4).
pub const RESERVED_CONTEXT_KEYS: &[&str] = &[
    "round_num",
    "started_at",
    "phase",
    "previous",
    "orphan_stash",
];

/// Builds the context of round `round_num`. Missing or unreadable state leaves its part
/// out (the context is advice, never a reason to skip a round).
pub async fn build(
    log_dir: &Path,
    repo: &Repo,
    round_num: u64,
    started_at: &str,
    phase: Option<&str>,
) -> Value {
    let mut ctx = json!({"round_num": round_num, "started_at": started_at});
    if let Some(phase) = phase {
        ctx["phase"] = json!(phase);
    }
    if let Ok(state) = read_round_state(log_dir) {
        if let Some(previous) = state.previous {
            ctx["previous"] = json!(previous);
        }
    }
    if let Ok(Some(orphan)) = read_json::<OrphanState>(&log_dir.join(ORPHAN_FILE)) {
        if repo.stash_contains(&orphan.sha).await {
            ctx["orphan_stash"] = json!({"ref": orphan.sha, "round_num": orphan.round_num,
                                          "ts": orphan.ts,
                                          "hint": "an earlier round's uncommitted work is in this stash; `git stash apply <ref>` restores it"});
        }
    }
    ctx
}

/// Writes `ctx` to `<log_dir>/round-context.json` atomically; returns its path.
///
/// Errors: the file cannot be written.
pub fn write(log_dir: &Path, ctx: &Value) -> std::io::Result<PathBuf> {
    let path = log_dir.join(CONTEXT_FILE);
    write_json_atomic(&path, ctx)?;
    Ok(path)
}
