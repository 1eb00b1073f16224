//! {{NAME}}: an agent-runner plugin host with one serve-startup hook, `{{HOOK}}`.
//!
//! Edit `on_start`, then `cargo build --release` and
//! `agent-runner plugin check -- target/release/{{NAME}}`. The contract: docs/protocol.md.
//! Log with `eprintln!`; the SDK keeps stdout for the protocol.

use agent_runner_sdk::{HookError, Hooks, Host, OnStartParams, StartupResult, ServeStartupHook};
use std::process::ExitCode;

struct Answer;

impl ServeStartupHook for Answer {
    fn on_start(&self, params: &OnStartParams) -> Result<StartupResult, HookError> {
        // Called once when serve boots; an Err stops serve (exit 78).
        let _ = params;
        Ok(StartupResult::default())
    }
}

fn main() -> ExitCode {
    Host::new("{{NAME}}", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            // init.config is your [plugins.hosts.<name>.config] table.
            if let Some(key) = init.config.keys().next() {
                return Err(HookError::new(format!("config: unknown key `{key}`")));
            }
            Ok(Hooks::new().serve_startup("{{HOOK}}", Answer))
        })
        .run()
}
