//! The confined agent's environment from an allow-list (docs/security.md, "The agent's
//! environment").
//!
//! Under `[agent.sandbox] mode = "prefer"` or `"require"` the agent (and a goal check,
//! confined where the agent is) inherits of the supervisor's environment only the variables
//! this list passes: [`ALLOWED`] (whatever the CLI), the CLI's own [`PROVIDER_VARIABLES`],
//! and the names `[agent.sandbox] pass_env` lists. What the supervisor sets on top —
//! `[agent.env]`, `AGENT_RUNNER_*`, the egress proxy's variables, `TMPDIR`, a resumed
//! session's, and with `[telemetry]` the round span's `TRACEPARENT` and
//! `OTEL_RESOURCE_ATTRIBUTES` (`crate::runtime::outward::round_trace`) — always passes: the
//! operator or the supervisor chose it. Under `off` the
//! agent gets the whole environment, as the reference system gives it.
//!
//! A variable a prefix of [`ALLOWED`] matches whose name ends like a credential
//! ([`CREDENTIAL_SUFFIXES`]: `MISE_GITHUB_TOKEN`) is not passed by that prefix; the CLI's
//! provider variables are passed whole (its key is what it needs). `SSH_AUTH_SOCK` is on no
//! list: the ssh agent is a credential, passed only when named. `doctor` lists every name
//! the list drops (`agent_env`), never a value.

use std::ffi::OsStr;

use crate::config::{Config, SandboxMode};

/// One entry of an allow-list: a variable's name, or a prefix written with a trailing `*`
/// (`LC_*`), and why the agent gets it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Allowed {
    /// `NAME` or `PREFIX*`.
    pub pattern: &'static str,
    /// Why the agent needs it.
    pub why: &'static str,
}

const fn allow(pattern: &'static str, why: &'static str) -> Allowed {
    Allowed { pattern, why }
}

const LOCALE: &str = "locale: the language and encoding programs print and read in";
const PROXY: &str = "the operator's HTTP proxy (both spellings): without it nothing reaches the network where a proxy is the only way out";
const CA: &str = "extra TLS roots (a corporate proxy's, a private registry's): without them every HTTPS request fails where such a root is needed";
const TOOLCHAIN: &str = "a version manager's or toolchain's own location and choice (pyenv, asdf, mise, nvm, volta, rustup, cargo, go, java, pipx, uv): the shims and programs on PATH need it to run (docs/security.md, \"Shims\")";

/// Reviewed data: what of the supervisor's environment every confined agent gets.
pub(crate) const ALLOWED: &[Allowed] = &[
    allow("PATH", "where programs are found"),
    allow("HOME", "the home directory (the CLI's own state lies there)"),
    allow("USER", "the user's name (git, ssh config, prompts)"),
    allow("LOGNAME", "the user's name (as USER)"),
    allow("SHELL", "the shell a CLI runs its commands with"),
    allow("TMPDIR", "the temporary directory (the confined agent's is replaced by its own)"),
    allow("TERM", "the terminal's type (colours, line editing)"),
    allow("COLORTERM", "the terminal's colour support"),
    allow("NO_COLOR", "plain output asked for"),
    allow("TZ", "the time zone"),
    allow("LANG", LOCALE),
    allow("LANGUAGE", LOCALE),
    allow("LC_*", LOCALE),
    allow("HTTP_PROXY", PROXY),
    allow("HTTPS_PROXY", PROXY),
    allow("ALL_PROXY", PROXY),
    allow("NO_PROXY", PROXY),
    allow("http_proxy", PROXY),
    allow("https_proxy", PROXY),
    allow("all_proxy", PROXY),
    allow("no_proxy", PROXY),
    allow("NODE_USE_ENV_PROXY", "Node's fetch and http follow the proxy variables only with it"),
    allow("SSL_CERT_FILE", CA),
    allow("SSL_CERT_DIR", CA),
    allow("NODE_EXTRA_CA_CERTS", CA),
    allow("REQUESTS_CA_BUNDLE", CA),
    allow("CURL_CA_BUNDLE", CA),
    allow("GIT_SSL_CAINFO", CA),
    allow("PYENV_*", TOOLCHAIN),
    allow("ASDF_*", TOOLCHAIN),
    allow("MISE_*", TOOLCHAIN),
    allow("NVM_*", TOOLCHAIN),
    allow("VOLTA_HOME", TOOLCHAIN),
    allow("RUSTUP_HOME", TOOLCHAIN),
    allow("RUSTUP_TOOLCHAIN", TOOLCHAIN),
    allow("CARGO_HOME", TOOLCHAIN),
    allow("GOPATH", TOOLCHAIN),
    allow("GOROOT", TOOLCHAIN),
    allow("GOBIN", TOOLCHAIN),
    allow("JAVA_HOME", TOOLCHAIN),
    allow("PIPX_HOME", TOOLCHAIN),
    allow("PIPX_BIN_DIR", TOOLCHAIN),
    allow("UV_TOOL_DIR", TOOLCHAIN),
    allow("UV_TOOL_BIN_DIR", TOOLCHAIN),
    allow("UV_PYTHON_INSTALL_DIR", TOOLCHAIN),
    allow("UV_CACHE_DIR", TOOLCHAIN),
    allow("VIRTUAL_ENV", "the Python virtual environment the operator activated"),
    allow("XDG_CONFIG_HOME", "where programs keep their configuration (the CLIs' state may lie there)"),
    allow("XDG_CACHE_HOME", "where programs keep their caches"),
    allow("XDG_DATA_HOME", "where programs keep their data (pipx, uv, mise)"),
    allow("XDG_STATE_HOME", "where programs keep their state"),
    allow("OTEL_*", "OpenTelemetry: where the CLI sends its traces and metrics (claude, codex, gemini export them when asked)"),
    allow("DO_NOT_TRACK", "the operator's telemetry opt-out, which many CLIs honour"),
];

/// Name endings a prefix of [`ALLOWED`] does not pass: such a variable (`MISE_GITHUB_TOKEN`,
/// `ASDF_…_PASSWORD`) holds a credential, given to the agent only when named in
/// `[agent.sandbox] pass_env`. `_HEADERS`: `OTEL_EXPORTER_OTLP_HEADERS` (and its
/// `_TRACES_`, `_METRICS_`, `_LOGS_` forms) is where OpenTelemetry's exporters take the
/// backend's API key (`x-honeycomb-team=…`, `Authorization=Basic …`), set for the
/// supervisor's own traces.
pub(crate) const CREDENTIAL_SUFFIXES: &[&str] = &[
    "_HEADERS",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_PASSWD",
    "_KEY",
    "_CREDENTIALS",
    "_AUTH",
];

/// One CLI's provider variables: what it reads to find and pay its model.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProviderVariables {
    /// The CLI's name (`crate::config::agent_cli::KNOWN`).
    pub cli: &'static str,
    /// Names and prefixes (`NAME*`), matched as [`Allowed::pattern`].
    pub patterns: &'static [&'static str],
    /// What the CLI reads them for (measured in the pinned CLIs of
    /// tests/agent-clis/versions.env, docs/agent-clis.md).
    pub why: &'static str,
}

/// Reviewed data: each preset CLI's provider variables, passed to that CLI's agent only.
/// A key a CLI's own config names (`env_key` in codex's `config.toml`, an `apiKey` in pi's
/// `models.json`) is not known here: `[agent.sandbox] pass_env` names it.
pub(crate) const PROVIDER_VARIABLES: &[ProviderVariables] = &[
    ProviderVariables {
        cli: "claude",
        patterns: &[
            "ANTHROPIC_*",
            "CLAUDE_CODE_*",
            "CLAUDE_CONFIG_DIR",
            "DISABLE_AUTOUPDATER",
            "DISABLE_TELEMETRY",
            "DISABLE_ERROR_REPORTING",
            "IS_SANDBOX",
            "MAX_THINKING_TOKENS",
            "BASH_MAX_OUTPUT_LENGTH",
            "CLOUD_ML_REGION",
        ],
        why: "Claude Code: its key, OAuth token, endpoint and model (ANTHROPIC_*), its own settings (CLAUDE_CODE_*, DISABLE_*, IS_SANDBOX, which root needs), Vertex's region",
    },
    ProviderVariables {
        cli: "codex",
        patterns: &["OPENAI_*", "CODEX_*"],
        why: "Codex CLI: its key and organization (OPENAI_*), its home and settings (CODEX_*)",
    },
    ProviderVariables {
        cli: "gemini",
        patterns: &["GEMINI_*", "GOOGLE_*"],
        why: "Gemini CLI: its key, model and settings (GEMINI_*), Google's key, endpoint, project and Vertex switch (GOOGLE_*)",
    },
    ProviderVariables {
        cli: "aider",
        patterns: &[
            "AIDER_*",
            "OPENAI_*",
            "ANTHROPIC_*",
            "GEMINI_API_KEY",
            "DEEPSEEK_API_KEY",
            "OPENROUTER_API_KEY",
            "GROQ_API_KEY",
            "MISTRAL_API_KEY",
            "COHERE_API_KEY",
            "XAI_API_KEY",
            "FIREWORKS_API_KEY",
            "TOGETHERAI_API_KEY",
            "AZURE_API_KEY",
            "AZURE_API_BASE",
            "AZURE_API_VERSION",
            "OLLAMA_API_BASE",
            "VERTEXAI_PROJECT",
            "VERTEXAI_LOCATION",
        ],
        why: "aider: its own options (AIDER_*) and the provider keys and endpoints it takes through litellm",
    },
    ProviderVariables {
        cli: "kimi",
        patterns: &[
            "KIMI_*",
            "MOONSHOT_*",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "GEMINI_API_KEY",
        ],
        why: "Kimi CLI: its key, endpoint, model and settings (KIMI_*, MOONSHOT_*), and the keys of the other provider types its config may choose",
    },
    ProviderVariables {
        cli: "pi",
        patterns: &[
            "PI_*",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "AZURE_OPENAI_*",
            "GOOGLE_CLOUD_PROJECT",
            "GOOGLE_CLOUD_LOCATION",
            "GOOGLE_CLOUD_API_KEY",
            "DEEPSEEK_API_KEY",
            "OPENROUTER_API_KEY",
            "GROQ_API_KEY",
            "CEREBRAS_API_KEY",
            "XAI_API_KEY",
            "ZAI_API_KEY",
            "MISTRAL_API_KEY",
            "FIREWORKS_API_KEY",
            "MINIMAX_API_KEY",
            "MINIMAX_CN_API_KEY",
            "KIMI_API_KEY",
            "MOONSHOT_API_KEY",
            "AI_GATEWAY_API_KEY",
            "OPENCODE_API_KEY",
        ],
        why: "pi: its own settings (PI_*) and the keys of the providers it knows",
    },
    ProviderVariables {
        cli: "codewhale",
        patterns: &["CODEWHALE_*", "DEEPSEEK_*"],
        why: "CodeWhale (unverified): its settings and DeepSeek's key",
    },
];

/// Whether `pattern` (`NAME` or `PREFIX*`) matches `name`: `Some(true)` as a prefix,
/// `Some(false)` exactly, `None` not at all.
fn matches(pattern: &str, name: &str) -> Option<bool> {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix).then_some(true),
        None => (pattern == name).then_some(false),
    }
}

/// What of the supervisor's environment a confined agent inherits (module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AllowList {
    /// The agent's CLI (its [`PROVIDER_VARIABLES`]); `None`: none agent-runner knows, or a
    /// goal check.
    cli: Option<&'static str>,
    /// `[agent.sandbox] pass_env`.
    pass_env: Vec<String>,
}

impl AllowList {
    /// The allow-list of an agent of CLI `cli` under `config`; `None` under `mode = "off"`
    /// (the whole environment is inherited).
    pub(crate) fn of(config: &Config, cli: Option<&'static str>) -> Option<AllowList> {
        (config.agent_sandbox.mode != SandboxMode::Off).then(|| AllowList {
            cli,
            pass_env: config.agent_sandbox.pass_env.clone(),
        })
    }

    /// Whether the agent inherits the variable `name` (a name that is not UTF-8 never).
    pub(crate) fn passes(&self, name: &OsStr) -> bool {
        self.why(name).is_some()
    }

    /// Why the agent inherits the variable `name` (the entry's reason); `None`: it does not.
    pub(crate) fn why(&self, name: &OsStr) -> Option<&'static str> {
        let name = name.to_str()?;
        if self.pass_env.iter().any(|n| n == name) {
            return Some("named in [agent.sandbox] pass_env");
        }
        let common = ALLOWED.iter().find(|a| match matches(a.pattern, name) {
            Some(true) => !CREDENTIAL_SUFFIXES.iter().any(|s| name.ends_with(s)),
            Some(false) => true,
            None => false,
        });
        common.map(|a| a.why).or_else(|| {
            PROVIDER_VARIABLES
                .iter()
                .filter(|p| Some(p.cli) == self.cli)
                .find(|p| p.patterns.iter().any(|pat| matches(pat, name).is_some()))
                .map(|p| p.why)
        })
    }

    /// The names of `names` the agent does not inherit, sorted, each once (non-UTF-8
    /// names lossily).
    pub(crate) fn dropped<I, N>(&self, names: I) -> Vec<String>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<OsStr>,
    {
        let mut out: Vec<String> = names
            .into_iter()
            .filter(|n| !self.passes(n.as_ref()))
            .map(|n| n.as_ref().to_string_lossy().into_owned())
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(cli: Option<&'static str>, pass_env: &[&str]) -> AllowList {
        AllowList {
            cli,
            pass_env: pass_env.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn passes(l: &AllowList, name: &str) -> bool {
        l.passes(OsStr::new(name))
    }

    #[test]
    fn the_common_list_passes_and_everything_else_is_dropped() {
        let l = list(None, &[]);
        for name in [
            "PATH",
            "HOME",
            "LC_ALL",
            "https_proxy",
            "NODE_EXTRA_CA_CERTS",
            "PYENV_ROOT",
            "MISE_DATA_DIR",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ] {
            assert!(passes(&l, name), "{name}");
        }
        for name in [
            "SSH_AUTH_SOCK",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "AR_TEST_SECRET",
            "MISE_GITHUB_TOKEN",
            "PYENV_PASSWORD",
            "PATHX",
            "ANTHROPIC_API_KEY",
        ] {
            assert!(!passes(&l, name), "{name}");
        }
        use std::os::unix::ffi::OsStrExt;
        assert!(!l.passes(OsStr::from_bytes(b"PATH\xff")));
    }

    #[test]
    fn a_cli_gets_its_own_provider_variables_only() {
        let claude = list(Some("claude"), &[]);
        assert!(passes(&claude, "ANTHROPIC_API_KEY"));
        assert!(passes(&claude, "CLAUDE_CODE_OAUTH_TOKEN"));
        assert!(passes(&claude, "IS_SANDBOX"));
        assert!(!passes(&claude, "OPENAI_API_KEY"));
        let codex = list(Some("codex"), &[]);
        assert!(passes(&codex, "OPENAI_API_KEY"));
        assert!(!passes(&codex, "ANTHROPIC_API_KEY"));
        let aider = list(Some("aider"), &[]);
        assert!(passes(&aider, "AIDER_MODEL") && passes(&aider, "OPENROUTER_API_KEY"));
        for known in crate::config::agent_cli::KNOWN {
            assert!(
                PROVIDER_VARIABLES.iter().any(|p| p.cli == *known),
                "{known} has no provider variables"
            );
        }
    }

    #[test]
    fn pass_env_names_one_exactly() {
        let l = list(Some("claude"), &["SSH_AUTH_SOCK", "MISE_GITHUB_TOKEN"]);
        assert!(passes(&l, "SSH_AUTH_SOCK"));
        assert!(passes(&l, "MISE_GITHUB_TOKEN"));
        assert!(!passes(&l, "SSH_AUTH"));
        assert_eq!(
            l.dropped(["PATH", "B_SECRET", "A_SECRET", "B_SECRET", "SSH_AUTH_SOCK"]),
            ["A_SECRET", "B_SECRET"]
        );
    }
}
