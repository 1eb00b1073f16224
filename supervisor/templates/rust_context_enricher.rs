//! {{NAME}}: an agent-runner plugin host with one context enricher, `{{HOOK}}`.
//!
//! Edit `enrich`, then `cargo build --release` and
//! `agent-runner plugin check -- target/release/{{NAME}}`. The contract: docs/protocol.md.
//! Log with `eprintln!`; the SDK keeps stdout for the protocol.

use agent_runner_sdk::{serde_json, HookError, Hooks, Host, EnrichParams, Enrichment, ContextEnricher};
use std::process::ExitCode;

struct Answer;

impl ContextEnricher for Answer {
    fn enrich(&self, params: &EnrichParams) -> Result<Enrichment, HookError> {
        // `params.ctx`: the round about to start. The object (at most 16,384 bytes of JSON)
        // appears in the round context under "{{HOOK}}".
        let mut context = serde_json::Map::new();
        context.insert("note".into(), format!("round {}", params.ctx.round_num).into());
        Ok(Enrichment {
            context,
            events: Vec::new(),
        })
    }
}

fn main() -> ExitCode {
    Host::new("{{NAME}}", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            // init.config is your [plugins.hosts.<name>.config] table.
            if let Some(key) = init.config.keys().next() {
                return Err(HookError::new(format!("config: unknown key `{key}`")));
            }
            Ok(Hooks::new().context_enricher("{{HOOK}}", Answer))
        })
        .run()
}
