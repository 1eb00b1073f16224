//! {{NAME}}: an agent-runner plugin host with one detector, `{{HOOK}}`.
//!
//! Edit `detect`, then `cargo build --release` and
//! `agent-runner plugin check -- target/release/{{NAME}}`. The contract: docs/protocol.md.
//! Log with `eprintln!`; the SDK keeps stdout for the protocol.

use agent_runner_sdk::{HookError, Hooks, Host, DetectParams, Detection, Detector};
use std::process::ExitCode;

struct Answer;

impl Detector for Answer {
    fn detect(&self, params: &DetectParams) -> Result<Detection, HookError> {
        // `params.state`: rounds_completed and last_round. Return Detection::default() (no
        // alert) or alert(severity, message, stop_service).
        let _ = params;
        Ok(Detection::default())
    }
}

fn main() -> ExitCode {
    Host::new("{{NAME}}", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            // init.config is your [plugins.hosts.<name>.config] table.
            if let Some(key) = init.config.keys().next() {
                return Err(HookError::new(format!("config: unknown key `{key}`")));
            }
            Ok(Hooks::new().detector("{{HOOK}}", Answer))
        })
        .run()
}
