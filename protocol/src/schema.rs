//! JSON Schemas (draft 2020-12) of every request's params and every result of protocol v1,
//! generated from the types of this crate. They are committed under `docs/schema/`, one
//! file per message (`<method>.params.json` / `<method>.result.json`, the method's last
//! path segment); `protocol/tests/schema.rs` fails when the committed files drift.
//!
//! The schemas describe shapes and ranges. Rules that span fields (unique hook names,
//! `priority` on dirty handlers only, commit `paths` among `dirty_files`, `kind` and
//! `back_off_s`/`until` by post-round action) are enforced by
//! [`crate::validate`] and documented in `docs/protocol.md`.

use schemars::{schema_for, JsonSchema};
use serde_json::Value;

use crate::types::{
    AfterRoundParams, BeforeRoundParams, BeforeSpawnParams, DetectParams, Detection, DirtyAction,
    EnrichParams, Enrichment, HandleDirtyParams, InitializeParams, InitializeResult, Observation,
    ObserveParams, OnStartParams, PostRoundVerdict, RoundDecision, SpawnDecision, StartupResult,
};

fn schema<T: JsonSchema>() -> Value {
    Value::from(schema_for!(T))
}

/// The schema of `shutdown`'s params (absent or `null`) and of its result (`null`).
fn null_schema(title: &str, description: &str) -> Value {
    Value::from(schemars::json_schema!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "description": description,
        "type": "null"
    }))
}

/// Every schema file: `(file name, schema)`, in a stable order.
pub fn all() -> Vec<(&'static str, Value)> {
    vec![
        ("initialize.params.json", schema::<InitializeParams>()),
        ("initialize.result.json", schema::<InitializeResult>()),
        ("before_spawn.params.json", schema::<BeforeSpawnParams>()),
        ("before_spawn.result.json", schema::<SpawnDecision>()),
        ("handle_dirty.params.json", schema::<HandleDirtyParams>()),
        ("handle_dirty.result.json", schema::<Option<DirtyAction>>()),
        ("before_round.params.json", schema::<BeforeRoundParams>()),
        ("before_round.result.json", schema::<RoundDecision>()),
        ("enrich.params.json", schema::<EnrichParams>()),
        ("enrich.result.json", schema::<Enrichment>()),
        ("on_start.params.json", schema::<OnStartParams>()),
        ("on_start.result.json", schema::<Option<StartupResult>>()),
        ("detect.params.json", schema::<DetectParams>()),
        ("detect.result.json", schema::<Option<Detection>>()),
        ("after_round.params.json", schema::<AfterRoundParams>()),
        (
            "after_round.result.json",
            schema::<Option<PostRoundVerdict>>(),
        ),
        ("observe.params.json", schema::<ObserveParams>()),
        ("observe.result.json", schema::<Option<Observation>>()),
        (
            "shutdown.params.json",
            null_schema(
                "ShutdownParams",
                "`shutdown` takes no params: omit them or send null.",
            ),
        ),
        (
            "shutdown.result.json",
            null_schema(
                "ShutdownResult",
                "`shutdown` answers null, then the host exits on stdin EOF.",
            ),
        ),
    ]
}

/// `value` as committed: pretty-printed JSON with a trailing newline.
pub fn render(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("a JSON value always serializes");
    text.push('\n');
    text
}
