//! {{NAME}}: an agent-runner plugin host with one output watch, `{{HOOK}}`.
//!
//! Edit `observe`, then `cargo build --release` and
//! `agent-runner plugin check -- target/release/{{NAME}}`. The contract: docs/protocol.md
//! §5.10. Log with `eprintln!`; the SDK keeps stdout for the protocol.

use agent_runner_sdk::{
    serde_json, HookError, Hooks, Host, Observation, ObserveParams, OutputWatch, TokenUsage,
};
use std::process::ExitCode;
use std::sync::Mutex;

/// The start of a line the last chunk cut, by round.
#[derive(Default)]
struct Watch {
    carry: Mutex<(u64, String)>,
}

impl OutputWatch for Watch {
    fn observe(&self, params: &ObserveParams) -> Result<Option<Observation>, HookError> {
        // `params.chunk`: offset (0 starts a round), skipped_bytes, text (untrusted: the
        // agent wrote it). Answer the usage of each model call the chunk completed.
        let mut carry = self.carry.lock().unwrap_or_else(|p| p.into_inner());
        if params.chunk.offset == 0 || carry.0 != params.ctx.round_num {
            *carry = (params.ctx.round_num, String::new());
        }
        let text = std::mem::take(&mut carry.1) + &params.chunk.text;
        let (whole, rest) = text.rsplit_once('\n').unwrap_or(("", &text));
        carry.1 = rest.chars().take(65_536).collect();
        let mut usage = Vec::new();
        for line in whole.lines().filter(|l| l.starts_with('{')) {
            let Ok(record) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if let Some(input) = record["usage"]["input_tokens"].as_u64() {
                usage.push(TokenUsage {
                    input_tokens: input,
                    output_tokens: record["usage"]["output_tokens"].as_u64().unwrap_or(0),
                    cache_read_tokens: None,
                    cache_write_tokens: None,
                    cost_usd: None,
                    model: None,
                });
            }
        }
        usage.truncate(64);
        Ok((!usage.is_empty()).then_some(Observation { usage }))
    }
}

fn main() -> ExitCode {
    Host::new("{{NAME}}", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            if let Some(key) = init.config.keys().next() {
                return Err(HookError::new(format!("config: unknown key `{key}`")));
            }
            Ok(Hooks::new().output_watch("{{HOOK}}", Watch::default()))
        })
        .run()
}
