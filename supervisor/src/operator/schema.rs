//! JSON Schemas (draft 2020-12) of the operator's documents, generated from their types:
//! `peek --json` ([`PeekDoc`]), `doctor --json` ([`DoctorDoc`]), `status --json`
//! ([`StatusDoc`]) and the live page's `GET /api/state` ([`StateDoc`], as
//! `monitor-state`). They are committed under `docs/schema/` as `<verb>.schema.json`;
//! `supervisor/tests/schema.rs` fails when the committed files drift from the types (the
//! protocol's own schemas come from `agent_runner_protocol::schema`).

use schemars::{schema_for, JsonSchema};
use serde_json::Value;

use crate::operator::control::StatusDoc;
use crate::operator::doctor::DoctorDoc;
use crate::operator::monitor::http::StateDoc;
use crate::operator::peek::PeekDoc;

fn schema<T: JsonSchema>() -> Value {
    Value::from(schema_for!(T))
}

/// Every schema file: `(file name, schema)`, in a stable order.
pub fn all() -> Vec<(&'static str, Value)> {
    vec![
        ("peek.schema.json", schema::<PeekDoc>()),
        ("doctor.schema.json", schema::<DoctorDoc>()),
        ("status.schema.json", schema::<StatusDoc>()),
        ("monitor-state.schema.json", schema::<StateDoc>()),
    ]
}

/// `value` as committed: pretty-printed JSON with a trailing newline (the same form as the
/// protocol's schemas).
pub fn render(value: &Value) -> String {
    agent_runner_protocol::schema::render(value)
}
