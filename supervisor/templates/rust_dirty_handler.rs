//! {{NAME}}: an agent-runner plugin host with one dirty handler, `{{HOOK}}`.
//!
//! Edit `handle_dirty`, then `cargo build --release` and
//! `agent-runner plugin check -- target/release/{{NAME}}`. The contract: docs/protocol.md.
//! Log with `eprintln!`; the SDK keeps stdout for the protocol.

use agent_runner_sdk::{DirtyAction, DirtyHandler, HandleDirtyParams, HookError, Hooks, Host};
use std::process::ExitCode;

struct Decide;

impl DirtyHandler for Decide {
    fn handle_dirty(&self, _params: &HandleDirtyParams) -> Result<Option<DirtyAction>, HookError> {
        // `_params.dirty_files`: paths relative to the work dir. Return an action
        // (commit / stash / ignore) or None to pass to the next handler.
        Ok(None)
    }
}

fn main() -> ExitCode {
    Host::new("{{NAME}}", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            // init.config is your [plugins.hosts.<name>.config] table.
            if let Some(key) = init.config.keys().next() {
                return Err(HookError::new(format!("config: unknown key `{key}`")));
            }
            Ok(Hooks::new().dirty_handler("{{HOOK}}", 100, Decide))
        })
        .run()
}
