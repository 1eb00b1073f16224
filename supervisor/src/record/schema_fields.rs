//! Which fields of a document its JSON Schema requires. serde writes every field of the
//! operator's documents, `Option`s as `null`, except those marked
//! `skip_serializing_if`; schemars would list an `Option` field as optional, so the document
//! types use these as `#[schemars(transform = …)]` to say that it is always there.

use serde_json::Value;

/// A `#[schemars(transform = …)]` for documents whose every field is always written (a
/// missing value is `null`): every property is required.
pub(crate) fn every_field_required(schema: &mut schemars::Schema) {
    let keys: Vec<Value> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().map(Value::String).collect())
        .unwrap_or_default();
    schema.insert("required".into(), Value::Array(keys));
}

/// Adds `keys` to the schema's `required` (for a document with `Option` fields that are
/// always written, as `null` when missing, beside fields that are sometimes left out).
pub(crate) fn require(schema: &mut schemars::Schema, keys: &[&str]) {
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.extend(keys.iter().map(|k| Value::String((*k).to_owned())));
    }
}
