//! `init`: writes `agent-runner.toml` (from a preset) and `prompts/main.md`, adds the log
//! dir to `.gitignore` when it lies inside the tree, and commits them (unless
//! `--no-commit`). Refuses to overwrite without `--force`. Presets follow the reference
//! system's (`docs/reference-system.md`, "Presets"), plus `codex`.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::config::keys::{Init, Toml};
use crate::config::vocabulary::Vocabulary;
use crate::exit::CliError;
use crate::runtime::git::attribution::OwnFiles;
use crate::runtime::git::path_name;
use crate::runtime::git::repo::Repo;

/// A preset: how one agent CLI is run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Preset {
    /// `--preset` name.
    pub name: &'static str,
    /// `[agent] command`.
    pub command: &'static [&'static str],
    /// `[agent] prompt_arg_template`.
    pub template: &'static [&'static str],
    /// `[agent] prompt_delivery`.
    pub delivery: &'static str,
    /// `[agent.env]`.
    pub env: &'static [(&'static str, &'static str)],
    /// `[agent] terminal_marker` when it differs from claude's (the default).
    pub terminal_marker: Option<&'static str>,
    /// `[runtime] grace_kill_ignore_patterns`: helpers of the CLI that outlive its result.
    pub grace_ignore: &'static [&'static str],
    /// `[monitor] auth_fail_hint`: how to log this CLI in again.
    pub auth_hint: &'static str,
    /// The CLI version the preset was verified with (docs/agent-clis.md; the tests' pin in
    /// tests/agent-clis/versions.env), if it was: `doctor` warns outside its series.
    pub verified_with: Option<&'static str>,
    /// Entries `init` adds to the work tree's `.gitignore`: files the CLI writes there on
    /// every round that are not the agent's work (so a round does not end dirty).
    pub gitignore: &'static [&'static str],
}

/// Every preset `init --preset` knows.
pub(crate) const PRESETS: &[Preset] = &[
    Preset {
        name: "claude",
        command: &[
            "claude",
            "--model",
            "sonnet",
            "--dangerously-skip-permissions",
            "--verbose",
            "--output-format",
            "stream-json",
        ],
        template: &["-p"],
        delivery: "stdin",
        // No update checks, telemetry, error reports or other non-essential traffic:
        // unsent telemetry is spooled under ~/.claude/telemetry, a file a round
        // (docs/operations.md, "The agent's CLI state on disk").
        env: &[
            ("DISABLE_AUTOUPDATER", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
        ],
        terminal_marker: None,
        grace_ignore: &["\\.claude/shell-snapshots/snapshot-bash-"],
        verified_with: Some("2.1.332"),
        gitignore: &[],
        auth_hint: "Log in again on this machine: run `claude` and use /login, or set ANTHROPIC_API_KEY for the service.",
    },
    Preset {
        name: "aider",
        command: &[
            "aider",
            "--yes-always",
            "--no-stream",
            "--analytics-disable",
            "--no-check-update",
            "--no-gitignore",
        ],
        template: &["--message", "{prompt}"],
        delivery: "argv",
        env: &[],
        terminal_marker: None,
        grace_ignore: &[],
        verified_with: Some("0.86.2"),
        gitignore: &[".aider*"],
        auth_hint: "Check the provider key aider uses (OPENAI_API_KEY, ANTHROPIC_API_KEY, …) in the service's environment; `aider --models` lists what it finds.",
    },
    Preset {
        name: "gemini",
        command: &["gemini", "--yolo", "--skip-trust", "-o", "stream-json"],
        template: &["-p", "{prompt}"],
        delivery: "argv",
        // Its OpenTelemetry export off whatever the settings say; usage statistics are a
        // setting only (`privacy.usageStatisticsEnabled` in ~/.gemini/settings.json).
        env: &[("GEMINI_TELEMETRY_ENABLED", "false")],
        terminal_marker: None,
        grace_ignore: &[],
        verified_with: Some("0.61.0"),
        gitignore: &[],
        auth_hint: "Log in again with `gemini` on this machine, or set GEMINI_API_KEY for the service.",
    },
    Preset {
        name: "codewhale",
        command: &[
            "codewhale",
            "exec",
            "--auto",
            "--output-format",
            "stream-json",
        ],
        template: &["{prompt}"],
        delivery: "argv",
        env: &[],
        terminal_marker: Some("\"type\":\"metadata\""),
        grace_ignore: &[],
        verified_with: None,
        gitignore: &[],
        auth_hint: "Check the provider credentials with `codewhale auth status`, or set DEEPSEEK_API_KEY for the service.",
    },
    Preset {
        name: "kimi",
        command: &["kimi", "--print", "--output-format", "stream-json"],
        template: &["-p", "{prompt}"],
        delivery: "argv",
        env: &[],
        terminal_marker: None,
        grace_ignore: &[],
        verified_with: Some("1.50.0"),
        gitignore: &[],
        auth_hint: "Log in again with `kimi login` on this machine; `kimi doctor` checks the model settings.",
    },
    Preset {
        name: "pi",
        command: &["pi", "-p", "--mode", "json"],
        template: &["{prompt}"],
        delivery: "argv",
        env: &[],
        terminal_marker: Some("\"type\":\"agent_end\""),
        grace_ignore: &[],
        verified_with: Some("0.73.1"),
        gitignore: &[],
        auth_hint: "Configure a reachable provider for pi on this machine (`pi` then /login, or its models.json); `pi -p ok` checks it.",
    },
    Preset {
        name: "codex",
        // Analytics off, and no prompt history (~/.codex/history.jsonl, every prompt
        // appended for ever; resume reads the session's own rollout).
        command: &[
            "codex",
            "exec",
            "-c",
            "analytics.enabled=false",
            "-c",
            "history.persistence=\"none\"",
            "--sandbox",
            "workspace-write",
            "--json",
        ],
        template: &["{prompt}"],
        delivery: "argv",
        env: &[],
        terminal_marker: None,
        grace_ignore: &[],
        verified_with: Some("0.171.0"),
        gitignore: &[],
        auth_hint: "Log in again with `codex login` on this machine, or set OPENAI_API_KEY for the service.",
    },
];

/// Looks a preset up by name.
pub(crate) fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// A preset's value for a key, as `init`'s template writes it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PresetValue {
    /// A TOML value: `key = <text>`.
    Toml(String),
    /// A table of strings, written as a `[table.key]` section.
    Table(&'static [(&'static str, &'static str)]),
}

impl Preset {
    /// Its value for the config key `key` (dotted, as defined in `crate::config::keys`),
    /// `None` where the preset leaves the key to its default.
    pub(crate) fn value(&self, key: &str) -> Option<PresetValue> {
        let list = |items: &[&str]| {
            PresetValue::Toml(Toml::toml(
                &items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            ))
        };
        let text = |s: &str| PresetValue::Toml(Toml::toml(&s.to_owned()));
        Some(match key {
            "agent.name" => text(self.name),
            "agent.command" => list(self.command),
            "agent.prompt_arg_template" => list(self.template),
            "agent.prompt_delivery" => text(self.delivery),
            // No empty table: the reference system's presets write `[agent.env]` only when
            // they set a variable (claude's), and its tests read that as "no env".
            "agent.env" if self.env.is_empty() => return None,
            "agent.env" => PresetValue::Table(self.env),
            "agent.terminal_marker" => text(self.terminal_marker?),
            "agent.sandbox.mode" => text(NEW_PROJECT_AGENT_SANDBOX.word()),
            "runtime.grace_kill_ignore_patterns" => list(self.grace_ignore),
            "monitor.auth_fail_hint" => text(self.auth_hint),
            _ => return None,
        })
    }
}

/// `[agent.sandbox] mode` in a new project's config (a config without the key keeps
/// `off`, today's behaviour). `prefer`, like `[plugins] sandbox`: every layer this machine
/// offers, a shortfall announced (`agent_sandbox_degraded`, `doctor`), so a new project
/// runs on any Linux machine (a container without user namespaces, an older kernel) and is
/// confined wherever it can be; `require`, which refuses to start on such a machine, is the
/// operator's choice once `doctor` shows every layer on (docs/security.md, "What `init`
/// writes").
pub(crate) const NEW_PROJECT_AGENT_SANDBOX: crate::config::SandboxMode =
    crate::config::SandboxMode::Prefer;

/// The tables `init` writes, in order.
const TEMPLATE_TABLES: &[&str] = &[
    "agent",
    "agent.sandbox",
    "runtime",
    "monitor",
    "prompt",
    "vcs",
    "plugins",
];

/// The config text `init` writes for `preset`: each key of [`TEMPLATE_TABLES`] as its
/// definition says ([`Init`]), the preset's value or the key's default.
pub(crate) fn config_text(preset: &Preset) -> String {
    let mut out = format!(
        "# agent-runner configuration (preset: {}). Reference: docs/configuration.md\n\
         schema_version = {}\n",
        preset.name,
        crate::config::SCHEMA_VERSION
    );
    for table in TEMPLATE_TABLES {
        out.push_str(&format!("\n[{table}]\n"));
        let keys = crate::config::TABLES
            .iter()
            .filter(|t| t.name == *table)
            .flat_map(|t| t.keys);
        let mut sections = String::new();
        for key in keys {
            let value = preset.value(key.name);
            let default = (key.default_toml)().map(PresetValue::Toml);
            let (value, comment) = match key.init {
                Init::Omit => continue,
                Init::Preset => (value, None),
                Init::Write(comment) => (value.or(default), comment),
                Init::Commented(note) => {
                    if let Some(PresetValue::Toml(default)) = default {
                        out.push_str(&format!("# {} = {default}   ({note})\n", key.field));
                    }
                    continue;
                }
            };
            if let Some(comment) = comment {
                out.push_str(&format!("# {comment}\n"));
            }
            match value {
                None => {}
                Some(PresetValue::Toml(text)) => out.push_str(&format!("{} = {text}\n", key.field)),
                Some(PresetValue::Table(entries)) => {
                    sections.push_str(&format!("\n[{}]\n", key.name));
                    for (k, v) in entries {
                        sections.push_str(&format!("{k} = {}\n", Toml::toml(&(*v).to_owned())));
                    }
                }
            }
        }
        out.push_str(&sections);
        if *table == "agent.sandbox" {
            out.push_str(&egress_text(preset.name));
        }
    }
    out.push_str(
        r#"
[plugins.pin]
# name = "sha256:<64 hex>"   (`agent-runner doctor` prints these lines)

# A third-party host, confined and pinned:
# [plugins.hosts.pause]
# command = ["./hosts/spawn-pause-file"]
# provides = ["spawn_hook"]
# config = { file = ".agent-runner-pause", defer_s = 60 }
"#,
    );
    out
}

/// The commented `allow_hosts` (inside `init`'s `[agent.sandbox]`) of a preset whose CLI's hosts are known
/// (`crate::config::allow_hosts::preset_hosts`): the operator turns egress filtering on by
/// uncommenting it (docs/security.md, "Egress by host name"). Off by default: package
/// registries and git remotes would be refused too.
fn egress_text(preset: &str) -> String {
    let hosts = crate::config::allow_hosts::preset_hosts(preset);
    if hosts.is_empty() {
        return String::new();
    }
    let key = crate::config::TABLES
        .iter()
        .find(|t| t.name == "agent.sandbox")
        .and_then(|t| t.keys.iter().find(|k| k.field == "allow_hosts"))
        .expect("[agent.sandbox] allow_hosts is defined");
    format!(
        "# Egress by host name: the agent in a network namespace of its own, reaching only these\n\
         # hosts through agent-runner's proxy (add your registries and git hosts; docs/security.md).\n\
         # {} = {}\n",
        key.field,
        Toml::toml(&hosts.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>())
    )
}

/// `config_text` with `connect_ports` written in `[agent.sandbox]` for the agent's
/// endpoints on ports the sandbox would otherwise refuse (`init --endpoint URL`, and the
/// base-URL and proxy variables `init` sees: [`endpoint_ports`]), each source named in a
/// comment above the line.
pub(crate) fn with_connect_ports(text: &str, ports: &[(u16, String)]) -> String {
    if ports.is_empty() {
        return text.to_owned();
    }
    let mut list: Vec<u16> = ports.iter().map(|(p, _)| *p).collect();
    list.sort_unstable();
    list.dedup();
    let sources: Vec<&str> = ports.iter().map(|(_, s)| s.as_str()).collect();
    let list: Vec<String> = list.iter().map(u16::to_string).collect();
    let line = format!(
        "# The agent's endpoint ({}): TCP besides 443 (docs/security.md)\nconnect_ports = [{}]\n",
        sources.join(", "),
        list.join(", ")
    );
    let header = "\n[agent.sandbox]\n";
    match text.find(header) {
        Some(at) => {
            let at = at + header.len();
            format!("{}{line}{}", &text[..at], &text[at..])
        }
        None => format!("{text}{header}{line}"),
    }
}

/// The ports of the agent's endpoints that the sandbox's connect rule would refuse (not
/// 443): `endpoint` (`init --endpoint URL`) and the base-URL and proxy variables of `env`,
/// each with where it came from.
///
/// Errors: `endpoint` is not an `http://` or `https://` URL (the message says so).
pub(crate) fn endpoint_ports(
    endpoint: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(u16, String)>, String> {
    use crate::runtime::agent::endpoint::{host_port, BASE_URL_VARS, PROXY_VARS};
    let default = agent_runner_plugin_host::agent::policy::DEFAULT_CONNECT_PORTS;
    let mut out = Vec::new();
    if let Some(url) = endpoint {
        let (_, port) = host_port(url).ok_or_else(|| {
            format!(
                "--endpoint {url:?} is not an http:// or https:// URL (e.g. http://127.0.0.1:4010)"
            )
        })?;
        out.push((port, format!("--endpoint {url}")));
    }
    for name in BASE_URL_VARS.iter().chain(PROXY_VARS) {
        for n in [name.to_string(), name.to_ascii_lowercase()] {
            if let Some((_, port)) = env(&n).as_deref().and_then(host_port) {
                out.push((port, n.clone()));
            }
        }
    }
    out.retain(|(p, _)| !default.contains(p));
    out.dedup();
    Ok(out)
}

/// The prompt `init` writes.
pub(crate) const PROMPT_TEXT: &str =
    "# Task\n\nDescribe the work the agent should do in each round here.\n";

/// `init` options.
#[derive(Clone, Debug)]
pub(crate) struct InitOptions {
    /// Where the config goes.
    pub config_path: PathBuf,
    /// Preset name (default `claude`).
    pub preset: String,
    /// Overwrite existing files.
    pub force: bool,
    /// Do not commit the new files.
    pub no_commit: bool,
    /// `--endpoint URL`: the agent's model endpoint, whose port goes into `connect_ports`.
    pub endpoint: Option<String>,
}

/// What `init` did: the lines it prints, and `init --json`'s object (the reference
/// system's keys: `work_dir`, `files_created`, `committed`, `preset`).
#[derive(Debug)]
pub(crate) struct InitOutcome {
    /// The human lines.
    pub lines: Vec<String>,
    /// The `--json` object.
    pub doc: InitDoc,
}

/// `init --json`'s object.
#[derive(Debug, serde::Serialize)]
pub(crate) struct InitDoc {
    /// The work tree.
    pub work_dir: PathBuf,
    /// Files written or changed: the config, the prompt, `.gitignore` when touched.
    pub files_created: Vec<PathBuf>,
    /// Whether they were committed.
    pub committed: bool,
    /// The preset used.
    pub preset: String,
}

/// Runs `init`; returns what it did.
///
/// Errors: unknown preset (2), an existing file without `--force` (1), I/O failures (1).
pub(crate) async fn run(options: &InitOptions) -> Result<InitOutcome, CliError> {
    let preset = preset(&options.preset).ok_or_else(|| CliError {
        code: crate::exit::USAGE,
        message: format!(
            "unknown preset {:?}; expected one of {}",
            options.preset,
            PRESETS
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })?;
    let ports = endpoint_ports(options.endpoint.as_deref(), |n| std::env::var(n).ok()).map_err(
        |message| CliError {
            code: crate::exit::USAGE,
            message,
        },
    )?;
    let config_path =
        std::path::absolute(&options.config_path).map_err(|e| CliError::failure(e.to_string()))?;
    let dir = config_path.parent().unwrap_or(Path::new(".")).to_owned();
    let prompt_path = dir.join("prompts").join("main.md");
    for path in [&config_path, &prompt_path] {
        if path.exists() && !options.force {
            return Err(CliError::failure(format!(
                "{} already exists; pass --force to overwrite it",
                path.display()
            )));
        }
    }
    let io = |path: &Path, e: std::io::Error| {
        CliError::failure(format!("cannot write {}: {e}", path.display()))
    };
    std::fs::create_dir_all(prompt_path.parent().expect("has parent"))
        .map_err(|e| io(&prompt_path, e))?;
    let text = with_connect_ports(&config_text(preset), &ports);
    std::fs::write(&config_path, text).map_err(|e| io(&config_path, e))?;
    std::fs::write(&prompt_path, PROMPT_TEXT).map_err(|e| io(&prompt_path, e))?;
    let mut lines = vec![
        format!("wrote {} (preset {})", config_path.display(), preset.name),
        format!("wrote {}", prompt_path.display()),
    ];
    for (port, source) in &ports {
        lines.push(format!(
            "[agent.sandbox] connect_ports has {port}: the agent's endpoint ({source})"
        ));
    }
    let config = crate::config::load(&config_path)?;
    let mut to_commit = vec![config_path.clone(), prompt_path.clone()];
    if let Ok(rel) = config
        .runtime
        .log_dir
        .strip_prefix(&config.runtime.work_dir)
    {
        let entry = format!("/{}/", rel.display());
        lines.push(ensure_gitignored(&config.runtime.work_dir, &entry)?);
        to_commit.push(config.runtime.work_dir.join(".gitignore"));
    }
    for entry in preset.gitignore {
        lines.push(ensure_gitignored(&config.runtime.work_dir, entry)?);
        let gitignore = config.runtime.work_dir.join(".gitignore");
        if !to_commit.contains(&gitignore) {
            to_commit.push(gitignore);
        }
    }
    let mut committed = false;
    if !options.no_commit && dir.join(".git").exists() {
        // Through the one git runner: bounded, no terminal, hooks disabled.
        let repo = Repo::new(&dir, OwnFiles::default()).with_timeout(config.vcs.git_timeout);
        let paths: Vec<String> = to_commit
            .iter()
            .filter_map(|p| p.strip_prefix(&dir).ok())
            .map(|p| path_name::encode(p.as_os_str().as_bytes()))
            .collect();
        match repo.commit_paths(&paths, "agent-runner init").await {
            Ok(_) => {
                committed = true;
                lines.push("committed the new files".into());
            }
            Err(e) => lines.push(format!(
                "note: could not commit the new files ({e}); commit them yourself"
            )),
        }
    }
    Ok(InitOutcome {
        lines,
        doc: InitDoc {
            work_dir: config.runtime.work_dir.clone(),
            files_created: to_commit,
            committed,
            preset: preset.name.to_owned(),
        },
    })
}

/// Appends `entry` to `<dir>/.gitignore` unless a line already says it.
pub(crate) fn ensure_gitignored(dir: &Path, entry: &str) -> Result<String, CliError> {
    let path = dir.join(".gitignore");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    if text
        .lines()
        .any(|l| l.trim() == entry || l.trim() == entry.trim_end_matches('/'))
    {
        return Ok(format!("{} already ignores {entry}", path.display()));
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str(entry);
    new.push('\n');
    std::fs::write(&path, new)
        .map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))?;
    Ok(format!("added {entry} to {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The versions the presets say they were verified with are the ones the tests pin and
    /// run (tests/agent-clis/versions.env).
    /// The keys presets set are defined keys that `init` writes, and the template of every
    /// preset loads to the defaults its definitions give.
    #[test]
    fn presets_set_defined_keys_and_the_template_loads() {
        let mut set = std::collections::BTreeSet::new();
        for preset in PRESETS {
            for key in crate::config::TABLES.iter().flat_map(|t| t.keys) {
                if preset.value(key.name).is_some() {
                    assert_ne!(key.init, Init::Omit, "{}: {}", preset.name, key.name);
                    set.insert(key.name);
                }
            }
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("prompts")).unwrap();
            std::fs::write(dir.path().join("prompts/main.md"), PROMPT_TEXT).unwrap();
            let text = config_text(preset);
            let config = crate::config::parse_str(&dir.path().join("c.toml"), &text)
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", preset.name));
            assert_eq!(config.agent.name.as_deref(), Some(preset.name));
            // A new project's agent is confined (a config without the key keeps `off`).
            assert_eq!(
                config.agent_sandbox.mode, NEW_PROJECT_AGENT_SANDBOX,
                "{text}"
            );
            assert_eq!(
                NEW_PROJECT_AGENT_SANDBOX,
                crate::config::SandboxMode::Prefer
            );
            // Uncommenting the preset's `allow_hosts` line leaves a file that loads.
            if let Some(line) = text.lines().find(|l| l.starts_with("# allow_hosts = ")) {
                let on = text.replacen(line, &line[2..], 1);
                let config = crate::config::parse_str(&dir.path().join("c.toml"), &on)
                    .unwrap_or_else(|e| panic!("{}: {e}\n{on}", preset.name));
                assert!(config.agent.allow_hosts.is_some(), "{on}");
            }
            assert_eq!(config.runtime.round_budget.as_secs(), 1800, "{text}");
            assert!(text.contains("round_budget_s = 1800\n"), "{text}");
            assert_eq!(
                text.contains("\n[agent.env]\n"),
                !preset.env.is_empty(),
                "{text}"
            );
            assert!(
                text.contains("# auto_stop_on = [\"oauth_fail\", \"disk_critical\"]"),
                "{text}"
            );
        }
        // Every key a preset can set is answered by some preset (no arm of
        // `Preset::value` names a key that is not defined).
        assert_eq!(
            set.into_iter().collect::<Vec<_>>(),
            [
                "agent.command",
                "agent.env",
                "agent.name",
                "agent.prompt_arg_template",
                "agent.prompt_delivery",
                "agent.sandbox.mode",
                "agent.terminal_marker",
                "monitor.auth_fail_hint",
                "runtime.grace_kill_ignore_patterns",
            ]
        );
    }

    #[test]
    fn verified_versions_are_the_tests_pins() {
        let pins = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/agent-clis/versions.env"),
        )
        .unwrap();
        let pin = |key: &str| {
            pins.lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .unwrap_or_else(|| panic!("{key} missing"))
                .to_owned()
        };
        for (preset_name, key) in [
            ("claude", "CLAUDE_CODE_VERSION"),
            ("codex", "CODEX_VERSION"),
            ("gemini", "GEMINI_CLI_VERSION"),
            ("aider", "AIDER_CHAT_VERSION"),
            ("pi", "PI_CODING_AGENT_VERSION"),
            ("kimi", "KIMI_CLI_VERSION"),
        ] {
            let verified = preset(preset_name).unwrap().verified_with;
            assert_eq!(verified, Some(pin(key).as_str()), "{preset_name}");
        }
    }

    #[test]
    fn endpoint_ports_go_into_connect_ports() {
        let env = |n: &str| match n {
            "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:4010".to_owned()),
            "https_proxy" => Some("http://proxy.corp:3128".to_owned()),
            "OPENAI_BASE_URL" => Some("https://api.example.org/v1".to_owned()),
            _ => None,
        };
        let ports = endpoint_ports(Some("http://localhost:8000/v1"), env).unwrap();
        let got: Vec<u16> = ports.iter().map(|(p, _)| *p).collect();
        assert_eq!(got, [8000, 4010, 3128], "{ports:?}");
        assert!(endpoint_ports(Some("ftp://x"), |_| None).is_err());
        let preset = preset("claude").unwrap();
        let text = with_connect_ports(&config_text(preset), &ports);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("prompts")).unwrap();
        std::fs::write(dir.path().join("prompts/main.md"), PROMPT_TEXT).unwrap();
        let config = crate::config::parse_str(&dir.path().join("c.toml"), &text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(config.agent_sandbox.connect_ports, [3128, 4010, 8000]);
        assert_eq!(with_connect_ports("x", &[]), "x");
    }
}
