//! {{NAME}}: an agent-runner plugin host with one post-round hook, `{{HOOK}}`.
//!
//! Edit `after_round`, then `cargo build --release` and
//! `agent-runner plugin check -- target/release/{{NAME}}`. The contract: docs/protocol.md.
//! Log with `eprintln!`; the SDK keeps stdout for the protocol.

use agent_runner_sdk::{
    back_off, AfterRoundParams, ErrorKind, HookError, Hooks, Host, PostRound, PostRoundVerdict,
};
use std::process::ExitCode;

struct Judge;

impl PostRound for Judge {
    fn after_round(
        &self,
        params: &AfterRoundParams,
    ) -> Result<Option<PostRoundVerdict>, HookError> {
        // `params.outcome`: exit code, signal, cause, duration; `params.log_tail`: the end
        // of the round log (untrusted text the agent wrote).
        // Return None, back_off(..), back_off_until(..), stop(..) or a continue verdict.
        if params.outcome.exit_code != Some(0) && params.log_tail.contains("429") {
            return Ok(Some(back_off(ErrorKind::RateLimit, 60, "HTTP 429 in the round log")));
        }
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
            Ok(Hooks::new().post_round("{{HOOK}}", Judge))
        })
        .run()
}
