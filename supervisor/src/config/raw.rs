//! The file's shape, as serde sees it: every table rejects unknown keys (with a
//! did-you-mean suggestion); keys the reference system reads but we do not implement yet
//! are taken out first and reported as warnings ([`UNIMPLEMENTED`]).

use serde::de::DeserializeOwned;
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
    #[serde(default)]
    pub monitor: super::monitor::RawMonitor,
    #[serde(default)]
    pub schedule: Option<RawSchedule>,
    /// `[goal]`: absent, no goal checks.
    #[serde(default)]
    pub goal: Option<super::goal::RawGoal>,
    /// `[phases]`, parsed by hand (phase names are free keys); see [`RawPhases`].
    #[serde(skip)]
    pub phases: RawPhases,
    /// Reference-style `[plugins.<name>]` tables, by name: a host's config
    /// (docs/configuration.md, "Plugins").
    #[serde(skip)]
    pub plugin_tables: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    /// Warnings for peer keys present in the file that we do not implement.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
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
    #[serde(default)]
    pub exec_prefix: Option<Vec<String>>,
    #[serde(default)]
    pub terminal_marker: Option<String>,
    #[serde(default)]
    pub sigterm_grace_s: Option<u64>,
    #[serde(default)]
    pub session_resume: Option<bool>,
    #[serde(default)]
    pub sandbox: Option<RawAgentSandbox>,
}

/// `[agent.sandbox]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgentSandbox {
    #[serde(default)]
    pub allow_hosts: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRuntime {
    pub work_dir: Option<String>,
    pub log_dir: Option<String>,
    pub state_dir: Option<String>,
    pub round_budget_s: Option<u64>,
    pub restart_delay_s: Option<u64>,
    pub max_rounds: Option<u64>,
    pub stop_file: Option<String>,
    pub round_log_retention: Option<u64>,
    pub round_log_max_bytes: Option<u64>,
    pub round_log_retention_bytes: Option<u64>,
    pub dry_run: Option<bool>,
    pub disable_pre_round_hooks: Option<bool>,
    pub transient_error_action: Option<String>,
    pub transient_backoff_cap_s: Option<u64>,
    pub max_grace_after_result_s: Option<u64>,
    pub grace_kill_ignore_patterns: Option<Vec<String>>,
    pub fresh_eyes_every_n: Option<u64>,
    pub narrative_file: Option<String>,
    pub substrate_fingerprint_paths: Option<Vec<String>>,
    pub max_duration_s: Option<u64>,
    pub max_rounds_per_hour: Option<u64>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSchedule {
    pub timezone: Option<String>,
    #[serde(default)]
    pub run_windows: Vec<String>,
    #[serde(default)]
    pub pause_windows: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrompt {
    pub file: Option<String>,
    pub files: Option<Vec<String>>,
    pub concat_separator: Option<String>,
    pub strip_yaml_frontmatter: Option<bool>,
    pub inject_context: Option<bool>,
    pub context_injection_mode: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVcs {
    pub dirty_action: Option<String>,
    pub stash_idempotency_s: Option<u64>,
    pub git_timeout_s: Option<u64>,
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
    pub file_max_mb: Option<u64>,
    pub tmp_max_mb: Option<u64>,
    pub state_max_mb: Option<u64>,
    #[serde(default)]
    pub read_paths: Vec<String>,
    #[serde(default)]
    pub config: serde_json::Map<String, serde_json::Value>,
}

/// `[phases]`: `list` plus one `[phases.<name>]` table per overridden phase.
#[derive(Debug, Default)]
pub(super) struct RawPhases {
    pub list: Option<Vec<String>>,
    pub phase_policy: Option<String>,
    pub overrides: BTreeMap<String, RawPhase>,
}

/// One `[phases.<name>]` table, the per-phase `agent` table already merged onto `[agent]`.
#[derive(Debug)]
pub(super) struct RawPhase {
    pub round_budget_s: Option<u64>,
    pub disable_pre_round_hooks: Option<bool>,
    pub prompt_files: Option<Vec<String>>,
    pub agent: Option<RawAgent>,
    pub schedule: Option<RawSchedule>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhaseTable {
    round_budget_s: Option<u64>,
    disable_pre_round_hooks: Option<bool>,
    runtime: Option<RawPhaseRuntime>,
    prompt: Option<RawPhasePrompt>,
    agent: Option<toml::Table>,
    schedule: Option<RawSchedule>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhaseRuntime {
    round_budget_s: Option<u64>,
    disable_pre_round_hooks: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhasePrompt {
    files: Vec<String>,
}

/// Keys of the reference system's config that this build reads but does not act on yet:
/// each present one is removed before validation and named in a warning. `*` matches any
/// phase name; a whole table is listed by its own path.
pub(crate) const UNIMPLEMENTED: &[&str] = &[
    "monitor.round_progress_interval_s",
    "monitor.host_health.disk.growth_window_s",
    "monitor.host_health.disk.disk_growth_pct_per_hr_warning",
    "monitor.host_health.disk.inode_growth_pct_per_hr_warning",
    "monitor.host_health.pressure.in_round_nudge",
    "monitor.host_health.brake",
];

/// Parses `text` into the raw shape; a shape error names the dotted key.
pub(super) fn parse(path: &Path, text: &str) -> Result<RawConfig, ConfigError> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Syntax {
        path: path.to_owned(),
        message: e.to_string().replace('\n', " "),
    })?;
    let mut warnings = Vec::new();
    for pattern in UNIMPLEMENTED {
        let segments: Vec<&str> = pattern.split('.').collect();
        remove_matching(&mut table, &segments, String::new(), &mut warnings);
    }
    let plugin_tables = match table.get_mut("plugins") {
        Some(toml::Value::Table(plugins)) => take_plugin_tables(path, plugins)?,
        _ => BTreeMap::new(),
    };
    let phases = table.remove("phases");
    let agent_table = table.get("agent").cloned();
    let mut raw: RawConfig = deserialize_at(path, "", toml::Value::Table(table))?;
    raw.phases = match phases {
        None => RawPhases::default(),
        Some(value) => parse_phases(path, value, agent_table)?,
    };
    raw.plugin_tables = plugin_tables;
    raw.warnings = warnings;
    Ok(raw)
}

/// Removes every key matching `segments` (with `*` for any key) and records a warning.
fn remove_matching(
    table: &mut toml::Table,
    segments: &[&str],
    prefix: String,
    warnings: &mut Vec<String>,
) {
    let Some((first, rest)) = segments.split_first() else {
        return;
    };
    let keys: Vec<String> = if *first == "*" {
        table.keys().cloned().collect()
    } else {
        table
            .contains_key(*first)
            .then(|| first.to_string())
            .into_iter()
            .collect()
    };
    for key in keys {
        let here = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if rest.is_empty() {
            table.remove(&key);
            warnings.push(format!(
                "config key `{here}` is read by the reference system but not implemented by this agent-runner; it is ignored"
            ));
        } else if let Some(toml::Value::Table(sub)) = table.get_mut(&key) {
            remove_matching(sub, rest, here, warnings);
        }
    }
}

/// The keys of `[plugins]` this build reads.
const PLUGINS_KEYS: &[&str] = &["sandbox", "spawn_override_allow", "disable", "pin", "hosts"];

/// The reference system gives each plugin its own `[plugins.<name>]` table: an unknown
/// key of `[plugins]` holding a table is taken out and kept as the config of the host of
/// that name (docs/configuration.md, "Plugins"). An unknown key holding a plain value
/// stays, so a misspelt setting (`sandox = "require"`) is still an error: fail closed.
fn take_plugin_tables(
    path: &Path,
    plugins: &mut toml::Table,
) -> Result<BTreeMap<String, serde_json::Map<String, serde_json::Value>>, ConfigError> {
    let foreign: Vec<String> = plugins
        .iter()
        .filter(|(k, v)| !PLUGINS_KEYS.contains(&k.as_str()) && v.is_table())
        .map(|(k, _)| k.clone())
        .collect();
    let mut tables = BTreeMap::new();
    for key in foreign {
        let value = plugins.remove(&key).expect("listed above");
        let config = deserialize_at(path, &format!("plugins.{key}"), value)?;
        tables.insert(key, config);
    }
    Ok(tables)
}

fn parse_phases(
    path: &Path,
    value: toml::Value,
    agent: Option<toml::Value>,
) -> Result<RawPhases, ConfigError> {
    let toml::Value::Table(mut table) = value else {
        return Err(key_error(path, "phases", "expected a table".into()));
    };
    let list = match table.remove("list") {
        None => None,
        Some(list) => Some(deserialize_at::<Vec<String>>(path, "phases.list", list)?),
    };
    let phase_policy = match table.remove("phase_policy") {
        None => None,
        Some(value) => Some(deserialize_at::<String>(
            path,
            "phases.phase_policy",
            value,
        )?),
    };
    let mut overrides = BTreeMap::new();
    for (name, value) in table {
        let prefix = format!("phases.{name}");
        let phase: RawPhaseTable = deserialize_at(path, &prefix, value)?;
        // The reference system's flat keys and their `[phases.<name>.runtime]` twins: one
        // of each pair.
        let runtime = phase.runtime.unwrap_or_default();
        for (key, flat, nested) in [
            (
                "round_budget_s",
                phase.round_budget_s.is_some(),
                runtime.round_budget_s.is_some(),
            ),
            (
                "disable_pre_round_hooks",
                phase.disable_pre_round_hooks.is_some(),
                runtime.disable_pre_round_hooks.is_some(),
            ),
        ] {
            if flat && nested {
                return Err(key_error(
                    path,
                    &format!("{prefix}.{key}"),
                    format!("set both here and in [{prefix}.runtime]; use one"),
                ));
            }
        }
        let agent = match phase.agent {
            None => None,
            Some(sub) => {
                let mut merged = match &agent {
                    Some(toml::Value::Table(base)) => base.clone(),
                    _ => toml::Table::new(),
                };
                merged.extend(sub);
                Some(deserialize_at::<RawAgent>(
                    path,
                    &format!("{prefix}.agent"),
                    toml::Value::Table(merged),
                )?)
            }
        };
        overrides.insert(
            name,
            RawPhase {
                round_budget_s: phase.round_budget_s.or(runtime.round_budget_s),
                disable_pre_round_hooks: phase
                    .disable_pre_round_hooks
                    .or(runtime.disable_pre_round_hooks),
                prompt_files: phase.prompt.map(|p| p.files),
                agent,
                schedule: phase.schedule,
            },
        );
    }
    Ok(RawPhases {
        list,
        phase_policy,
        overrides,
    })
}

fn key_error(path: &Path, key: &str, message: String) -> ConfigError {
    ConfigError::Key {
        path: path.to_owned(),
        key: key.to_owned(),
        message,
    }
}

/// Deserializes `value` as `T`; errors name the dotted key under `prefix`.
fn deserialize_at<T: DeserializeOwned>(
    path: &Path,
    prefix: &str,
    value: toml::Value,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let inner_path = err.path().to_string();
        let message = explain(&err.into_inner().to_string());
        let mut key = match (prefix, inner_path.as_str()) {
            (p, ".") => p.to_owned(),
            ("", inner) => inner.to_owned(),
            (p, inner) => format!("{p}.{inner}"),
        };
        if message.starts_with("unknown field") || message.starts_with("missing field") {
            if let Some(field) = field_of(&message).filter(|f| !key.ends_with(f.as_str())) {
                key = if key.is_empty() {
                    field
                } else {
                    format!("{key}.{field}")
                };
            }
        }
        key_error(path, &key, message)
    })
}

/// Serde's words, with the fix spelled out: a did-you-mean for an unknown key, an example
/// for a bare string where a list belongs.
fn explain(message: &str) -> String {
    let message = message.trim_end().replace('\n', " ");
    if message.contains("expected a sequence") {
        return format!("{message}; expected a list of strings, e.g. [\"value\"]");
    }
    if message.starts_with("unknown field") {
        // toml appends " in `<table>`": not a candidate.
        let listed = message
            .rsplit_once(" in `")
            .map_or(message.as_str(), |(l, _)| l);
        let names = backticked(listed);
        if let Some((unknown, expected)) = names.split_first() {
            if let Some(best) = did_you_mean(unknown, expected) {
                return format!("{message}; did you mean `{best}`?");
            }
        }
    }
    message
}

/// The closest of `candidates` to `word` (Damerau-Levenshtein distance at most 2, or at most a
/// third of the word), if any.
fn did_you_mean<'a>(word: &str, candidates: &'a [String]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, _)| *d <= 2.max(word.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.as_str())
}

fn backticked(message: &str) -> Vec<String> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn field_of(message: &str) -> Option<String> {
    backticked(message).into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_gets_a_suggestion_and_peer_keys_a_warning() {
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\nterminal_marker = \"m\"\n[prompt]\nfiels = [\"a\"]\n";
        match parse(Path::new("c.toml"), text) {
            Err(ConfigError::Key { key, message, .. }) => {
                assert_eq!(key, "prompt.fiels");
                assert!(message.contains("did you mean `files`?"), "{message}");
            }
            other => panic!("expected a key error, got {other:?}"),
        }
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\nterminal_marker = \"m\"\n[monitor]\nauth_fail_hint = \"h\"\nround_progress_interval_s = 5\n[monitor.host_health.disk]\nwarning_pct = 80.0\n";
        let raw = parse(Path::new("c.toml"), text).unwrap();
        assert_eq!(raw.warnings.len(), 1, "{:?}", raw.warnings);
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\n[plugins]\nsandox = \"require\"\n[plugins.throttle]\nmax = 3\n";
        match parse(Path::new("c.toml"), text) {
            Err(ConfigError::Key { key, message, .. }) => {
                assert_eq!(key, "plugins.sandox");
                assert!(message.contains("did you mean `sandbox`?"), "{message}");
            }
            other => panic!("expected a key error, got {other:?}"),
        }
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\n[plugins.throttle]\nmax = 3\n";
        let foreign = parse(Path::new("c.toml"), text).unwrap();
        assert_eq!(foreign.plugin_tables["throttle"]["max"], 3);
        assert!(foreign.warnings.is_empty(), "{:?}", foreign.warnings);
        assert!(raw
            .warnings
            .iter()
            .any(|w| w.contains("`monitor.round_progress_interval_s`")));
    }

    #[test]
    fn disable_pre_round_hooks_is_read_flat_or_nested_never_both() {
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\n[runtime]\ndisable_pre_round_hooks = true\n[phases]\nlist = [\"a\", \"b\"]\n[phases.a]\ndisable_pre_round_hooks = false\n[phases.b.runtime]\ndisable_pre_round_hooks = true\n";
        let raw = parse(Path::new("c.toml"), text).unwrap();
        assert!(raw.warnings.is_empty(), "{:?}", raw.warnings);
        assert_eq!(raw.runtime.disable_pre_round_hooks, Some(true));
        assert_eq!(
            raw.phases.overrides["a"].disable_pre_round_hooks,
            Some(false)
        );
        assert_eq!(
            raw.phases.overrides["b"].disable_pre_round_hooks,
            Some(true)
        );
        let both = "schema_version = 1\n[agent]\ncommand = [\"x\"]\n[phases]\nlist = [\"a\"]\n[phases.a]\ndisable_pre_round_hooks = false\n[phases.a.runtime]\ndisable_pre_round_hooks = true\n";
        match parse(Path::new("c.toml"), both) {
            Err(ConfigError::Key { key, .. }) => {
                assert_eq!(key, "phases.a.disable_pre_round_hooks")
            }
            other => panic!("expected a key error, got {other:?}"),
        }
        let bad = "schema_version = 1\n[agent]\ncommand = [\"x\"]\n[runtime]\ndisable_pre_round_hooks = \"yes\"\n";
        match parse(Path::new("c.toml"), bad) {
            Err(ConfigError::Key { key, .. }) => assert_eq!(key, "runtime.disable_pre_round_hooks"),
            other => panic!("expected a key error, got {other:?}"),
        }
    }

    #[test]
    fn phase_agent_tables_merge_onto_agent() {
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\nname = \"base\"\n[phases]\nlist = [\"a\", \"b\"]\n[phases.a]\nround_budget_s = 7\n[phases.a.agent]\nname = \"alpha\"\n[phases.b.prompt]\nfiles = [\"b.md\"]\n";
        let raw = parse(Path::new("c.toml"), text).unwrap();
        let a = &raw.phases.overrides["a"];
        assert_eq!(a.round_budget_s, Some(7));
        let agent = a.agent.as_ref().unwrap();
        assert_eq!(agent.command, ["x"]);
        assert_eq!(agent.name.as_deref(), Some("alpha"));
        assert_eq!(
            raw.phases.overrides["b"].prompt_files.as_deref(),
            Some(&["b.md".to_owned()][..])
        );
    }
}
