//! {{NAME}}: an agent-runner plugin host with one spawn hook, `{{HOOK}}`.
//!
//! Edit `before_spawn`, then `cargo build --release` and
//! `agent-runner plugin check -- target/release/{{NAME}}`. The contract: docs/protocol.md.
//! Log with `eprintln!`; the SDK keeps stdout for the protocol.

use agent_runner_sdk::{proceed, BeforeSpawnParams, HookError, Hooks, Host, SpawnDecision, SpawnHook};
use std::process::ExitCode;

struct Decide;

impl SpawnHook for Decide {
    fn before_spawn(&self, _params: &BeforeSpawnParams) -> Result<SpawnDecision, HookError> {
        // `_params.ctx`: the round; `_params.spawn`: argv and env_names.
        // Return proceed(), defer(seconds, reason) or skip(reason).
        Ok(proceed())
    }
}

fn main() -> ExitCode {
    Host::new("{{NAME}}", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            // init.config is your [plugins.hosts.<name>.config] table.
            if let Some(key) = init.config.keys().next() {
                return Err(HookError::new(format!("config: unknown key `{key}`")));
            }
            Ok(Hooks::new().spawn_hook("{{HOOK}}", Decide))
        })
        .run()
}
