//! `dirty-commit`: a dirty handler, `wip_commit` (priority 100), that asks the supervisor to
//! commit every dirty file with a message naming the round and the files (see README.md).

use agent_runner_sdk::protocol::limits::{truncate_chars, MAX_COMMIT_MESSAGE_CHARS};
use agent_runner_sdk::{
    ConfigTable, DirtyAction, DirtyHandler, HandleDirtyParams, HookError, Hooks, Host,
};
use std::process::ExitCode;

/// Files named in the message before the rest are counted as "… and K more".
const LISTED_FILES: usize = 10;

/// The `wip_commit` handler, configured at `initialize`.
struct WipCommit {
    /// Put before `round <N>: ...` (config `prefix`).
    prefix: String,
}

impl DirtyHandler for WipCommit {
    fn handle_dirty(&self, params: &HandleDirtyParams) -> Result<Option<DirtyAction>, HookError> {
        let files = &params.dirty_files;
        if files.is_empty() {
            return Ok(None);
        }
        let mut listed: Vec<&str> = files
            .iter()
            .take(LISTED_FILES)
            .map(String::as_str)
            .collect();
        let more = files.len().saturating_sub(LISTED_FILES);
        let more_text = format!("… and {more} more");
        if more > 0 {
            listed.push(&more_text);
        }
        let message = format!(
            "{}round {}: {}",
            self.prefix,
            params.ctx.round_num,
            listed.join(", ")
        );
        Ok(Some(DirtyAction::Commit {
            message: truncate_chars(&message, MAX_COMMIT_MESSAGE_CHARS).to_owned(),
            paths: Some(files.clone()),
        }))
    }
}

fn main() -> ExitCode {
    Host::new("dirty-commit", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            let config = ConfigTable::new(&init.config);
            config.expect_only(&["prefix"])?;
            let prefix = config.string_or("prefix", "wip: ")?;
            Ok(Hooks::new().dirty_handler("wip_commit", 100, WipCommit { prefix }))
        })
        .run()
}
