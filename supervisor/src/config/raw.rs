//! The file's shape, as serde sees it: every table rejects unknown keys.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

use super::ConfigError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub schema_version: Option<i64>,
    pub agent: RawAgent,
    #[serde(default)]
    pub runtime: RawRuntime,
    #[serde(default)]
    pub prompt: RawPrompt,
    #[serde(default)]
    pub vcs: RawVcs,
    #[serde(default)]
    pub plugins: RawPlugins,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgent {
    pub command: Vec<String>,
    #[serde(default)]
    pub prompt_arg_template: Option<Vec<String>>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub prompt_delivery: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRuntime {
    pub work_dir: Option<String>,
    pub log_dir: Option<String>,
    pub round_budget_s: Option<u64>,
    pub restart_delay_s: Option<u64>,
    pub max_rounds: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrompt {
    pub file: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVcs {
    pub dirty_action: Option<String>,
    pub stash_idempotency_s: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPlugins {
    pub sandbox: Option<String>,
    #[serde(default)]
    pub spawn_override_allow: Vec<String>,
    #[serde(default)]
    pub disable: Vec<String>,
    #[serde(default)]
    pub pin: BTreeMap<String, String>,
    #[serde(default)]
    pub hosts: BTreeMap<String, RawHost>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHost {
    pub command: Vec<String>,
    pub provides: Vec<String>,
    pub timeout_s: Option<u64>,
    pub init_timeout_s: Option<u64>,
    pub memory_max_mb: Option<u64>,
    #[serde(default)]
    pub config: serde_json::Map<String, serde_json::Value>,
}

/// Parses `text` into the raw shape; a shape error names the dotted key.
pub(super) fn parse(path: &Path, text: &str) -> Result<RawConfig, ConfigError> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let key = err.path().to_string();
        let inner = err.into_inner();
        let message = explain(inner.message());
        if key == "." {
            if message.starts_with("unknown field") || message.starts_with("missing field") {
                return ConfigError::Key {
                    path: path.to_owned(),
                    key: field_of(&message).unwrap_or_default(),
                    message,
                };
            }
            return ConfigError::Syntax {
                path: path.to_owned(),
                message: inner.to_string().replace('\n', " "),
            };
        }
        ConfigError::Key {
            path: path.to_owned(),
            key,
            message,
        }
    })
}

/// Serde's words, with the fix spelled out for the common case of a bare string where a
/// list belongs.
fn explain(message: &str) -> String {
    if message.contains("expected a sequence") {
        format!("{message}; expected a list of strings, e.g. [\"value\"]")
    } else {
        message.to_owned()
    }
}

fn field_of(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_owned())
}
