//! {{NAME}}: an agent-runner plugin host with one pre-round hook, `{{HOOK}}`.
//!
//! Edit `before_round`, then `cargo build --release` and
//! `agent-runner plugin check -- target/release/{{NAME}}`. The contract: docs/protocol.md.
//! Log with `eprintln!`; the SDK keeps stdout for the protocol.

use agent_runner_sdk::{run_round, HookError, Hooks, Host, BeforeRoundParams, RoundDecision, PreRoundHook};
use std::process::ExitCode;

struct Answer;

impl PreRoundHook for Answer {
    fn before_round(&self, params: &BeforeRoundParams) -> Result<RoundDecision, HookError> {
        // `params.ctx`: the round about to start. Return run_round() or skip_round(reason)
        // (a skip is honoured only for hooks in [plugins] spawn_override_allow).
        let _ = params;
        Ok(run_round())
    }
}

fn main() -> ExitCode {
    Host::new("{{NAME}}", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            // init.config is your [plugins.hosts.<name>.config] table.
            if let Some(key) = init.config.keys().next() {
                return Err(HookError::new(format!("config: unknown key `{key}`")));
            }
            Ok(Hooks::new().pre_round("{{HOOK}}", Answer))
        })
        .run()
}
