//! Typed reads of a host's free config table (`initialize.params.config`, the host's
//! `[plugins.hosts.<name>.config]` table verbatim, `docs/protocol.md` §3).

use serde_json::{Map, Value};

use crate::HookError;

/// Read access to a host's config table with clear errors for wrong types, meant for
/// [`crate::Host::setup`]: every error names the key and what was expected, and returning
/// it from setup makes the supervisor refuse the host with that message.
#[derive(Clone, Copy, Debug)]
pub struct ConfigTable<'a> {
    table: &'a Map<String, Value>,
}

impl<'a> ConfigTable<'a> {
    /// Wraps `table` (usually `&init.config`).
    pub fn new(table: &'a Map<String, Value>) -> Self {
        ConfigTable { table }
    }

    /// The raw value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }

    /// Errors when the table has a key not in `known` (most likely a typo), naming it and
    /// listing the known keys.
    pub fn expect_only(&self, known: &[&str]) -> Result<(), HookError> {
        match self.table.keys().find(|k| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some(key) => Err(HookError::new(format!(
                "config: unknown key `{key}` (known keys: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ))),
        }
    }

    /// The string at `key`, or `default` when absent. Errors when present but not a string.
    pub fn string_or(&self, key: &str, default: &str) -> Result<String, HookError> {
        match self.table.get(key) {
            None => Ok(default.to_owned()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(wrong_type(key, "a string", other)),
        }
    }

    /// The non-negative integer at `key`, or `default` when absent. Errors when present but
    /// not an integer in `0..=max`.
    pub fn u64_or(&self, key: &str, default: u64, max: u64) -> Result<u64, HookError> {
        match self.table.get(key) {
            None => Ok(default),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if v <= max => Ok(v),
                _ => Err(HookError::new(format!(
                    "config: `{key}` must be an integer in 0..={max}, got {n}"
                ))),
            },
            Some(other) => Err(wrong_type(key, &format!("an integer in 0..={max}"), other)),
        }
    }

    /// The list of strings at `key`, or `default` when absent. Errors when present but not
    /// a list of strings.
    pub fn string_list_or(&self, key: &str, default: &[&str]) -> Result<Vec<String>, HookError> {
        match self.table.get(key) {
            None => Ok(default.iter().map(|s| (*s).to_owned()).collect()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(wrong_type(key, "a list of strings", other)),
                })
                .collect(),
            Some(other) => Err(wrong_type(key, "a list of strings", other)),
        }
    }

    /// The boolean at `key`, or `default` when absent. Errors when present but not a
    /// boolean.
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, HookError> {
        match self.table.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(wrong_type(key, "a boolean", other)),
        }
    }
}

fn wrong_type(key: &str, expected: &str, got: &Value) -> HookError {
    let kind = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a table",
    };
    HookError::new(format!(
        "config: `{key}` must be {expected}, got {kind} ({got})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn reads_defaults_values_and_names_bad_keys() {
        let t = table(json!({"file": "p", "defer_s": 30, "on": true, "bad": "x"}));
        let c = ConfigTable::new(&t);
        assert_eq!(c.string_or("file", "d").unwrap(), "p");
        assert_eq!(c.string_or("missing", "d").unwrap(), "d");
        assert_eq!(c.u64_or("defer_s", 60, 86_400).unwrap(), 30);
        assert_eq!(c.u64_or("missing", 60, 86_400).unwrap(), 60);
        assert!(c.bool_or("on", false).unwrap());
        let err = c.u64_or("file", 1, 10).unwrap_err();
        assert_eq!(
            err.message(),
            "config: `file` must be an integer in 0..=10, got a string (\"p\")"
        );
        let err = c.u64_or("defer_s", 1, 10).unwrap_err();
        assert_eq!(
            err.message(),
            "config: `defer_s` must be an integer in 0..=10, got 30"
        );
        assert!(c.string_or("defer_s", "").is_err());
        assert!(c.bool_or("file", false).is_err());
        let err = c.expect_only(&["file", "defer_s", "on"]).unwrap_err();
        assert_eq!(
            err.message(),
            "config: unknown key `bad` (known keys: file, defer_s, on)"
        );
        assert!(c.expect_only(&["file", "defer_s", "on", "bad"]).is_ok());
    }
}
