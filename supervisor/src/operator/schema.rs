//! JSON Schemas (draft 2020-12) of the operator's documents, generated from their types:
//! `peek --json` ([`PeekDoc`]), `doctor --json` ([`DoctorDoc`]) and `status --json`
//! ([`StatusDoc`]). They are committed under `docs/schema/` as `<verb>.schema.json`;
//! `supervisor/tests/schema.rs` fails when the committed files drift from the types (the
//! protocol's own schemas come from `agent_runner_protocol::schema`).

use schemars::{schema_for, JsonSchema};
use serde_json::Value;

use crate::operator::control::StatusDoc;
use crate::operator::doctor::DoctorDoc;
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
    ]
}

/// A `#[schemars(transform = …)]` for documents whose every field is always written (a
/// missing value is `null`): every property is required.
pub fn every_field_required(schema: &mut schemars::Schema) {
    let keys: Vec<Value> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().map(Value::String).collect())
        .unwrap_or_default();
    schema.insert("required".into(), Value::Array(keys));
}

/// Adds `keys` to the schema's `required` (for a document with `Option` fields that are
/// always written, as `null` when missing, beside fields that are sometimes left out).
pub fn require(schema: &mut schemars::Schema, keys: &[&str]) {
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.extend(keys.iter().map(|k| Value::String((*k).to_owned())));
    }
}

/// `value` as committed: pretty-printed JSON with a trailing newline (the same form as the
/// protocol's schemas).
pub fn render(value: &Value) -> String {
    agent_runner_protocol::schema::render(value)
}
