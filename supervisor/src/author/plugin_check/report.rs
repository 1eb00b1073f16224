//! The result of `plugin check`: one [`Outcome`] per rule of [`RULES`], rendered as text
//! (`pass  <rule>` / `FAIL  <rule>: …` / `skip  <rule>: …`) or JSON (`--json`).

use serde::Serialize;

/// Every rule, in the order it is checked, with what it requires.
pub(crate) const RULES: &[(&str, &str)] = &[
    (
        "launch",
        "the host resolves, is pinned as the config requires, and starts confined",
    ),
    (
        "silent_before_initialize",
        "nothing on stdout before initialize",
    ),
    (
        "initialize",
        "initialize answered in time with a valid version-1 result",
    ),
    (
        "families_in_provides",
        "every declared family is in `provides`",
    ),
    (
        "hook_names",
        "hook names are unique and not a built-in's (nor, for enrichers, a round-context key); event kinds are not built-in kinds",
    ),
    (
        "hook_calls",
        "every declared hook answers representative calls with a valid result",
    ),
    ("unknown_method", "an unknown method gets error -32601"),
    ("shutdown", "shutdown is answered with null"),
    (
        "exit_on_eof",
        "the host exits within 2 s of stdin end-of-file",
    ),
    (
        "stdout_protocol_only",
        "nothing on stdout but protocol responses",
    ),
    (
        "no_process_left",
        "no process of the host's group outlives it",
    ),
];

/// How a rule went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// The host meets the rule.
    Pass,
    /// It does not; the detail says what was seen and how to fix it.
    Fail,
    /// Not checked: an earlier failure made it impossible.
    Skip,
}

impl Status {
    /// The text and JSON spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
        }
    }
}

/// One rule's outcome.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    /// The rule (a name of [`RULES`]).
    pub rule: &'static str,
    /// How it went.
    pub status: Status,
    /// For a failure: what was seen; how to fix it. For a skip: why.
    pub detail: String,
}

/// `plugin check --json`: the host, how it was launched, whether it passed, and each rule.
#[derive(Debug, Serialize)]
pub(crate) struct CheckDoc<'a> {
    /// The host's name.
    pub host: &'a str,
    /// The resolved executable, if it resolved.
    pub path: Option<&'a str>,
    /// The confinement tier it ran under.
    pub tier: &'a str,
    /// `verified`, `unpinned` or `mismatch`.
    pub pin: &'a str,
    /// Whether every rule passed.
    pub passed: bool,
    /// One entry per rule, in [`RULES`] order.
    pub rules: Vec<RuleDoc<'a>>,
    /// The host's last stderr lines (redacted).
    pub host_stderr: &'a [String],
}

/// One rule in [`CheckDoc`].
#[derive(Debug, Serialize)]
pub(crate) struct RuleDoc<'a> {
    /// The rule's name.
    pub rule: &'a str,
    /// `pass`, `fail` or `skip`.
    pub status: String,
    /// What was seen and how to fix it, or why it was skipped (empty on a pass).
    pub detail: &'a str,
}

/// The whole check.
#[derive(Debug)]
pub(crate) struct Report {
    /// The host's name.
    pub host: String,
    /// The resolved executable, if it resolved.
    pub path: Option<String>,
    /// The confinement tier it ran under.
    pub tier: &'static str,
    /// `verified`, `unpinned` or `mismatch`.
    pub pin: &'static str,
    /// One outcome per rule, in [`RULES`] order.
    pub outcomes: Vec<Outcome>,
    /// The host's last stderr lines (redacted).
    pub stderr: Vec<String>,
}

impl Report {
    /// Whether every rule passed.
    pub(crate) fn passed(&self) -> bool {
        self.outcomes.iter().all(|o| o.status == Status::Pass)
    }

    /// The text form: a header, one line per rule, a summary, and on failure the host's
    /// last stderr lines.
    pub(crate) fn render(&self) -> String {
        let mut out = format!(
            "plugin check: host `{}` ({}), sandbox {}, pin {}\n",
            self.host,
            self.path.as_deref().unwrap_or("unresolved"),
            self.tier,
            self.pin
        );
        for o in &self.outcomes {
            if o.detail.is_empty() {
                out.push_str(&format!("{}  {}\n", o.status.as_str(), o.rule));
            } else {
                out.push_str(&format!(
                    "{}  {}: {}\n",
                    o.status.as_str(),
                    o.rule,
                    o.detail
                ));
            }
        }
        let passed = self
            .outcomes
            .iter()
            .filter(|o| o.status == Status::Pass)
            .count();
        out.push_str(&format!(
            "{passed} of {} rules passed\n",
            self.outcomes.len()
        ));
        if !self.passed() && !self.stderr.is_empty() {
            out.push_str("last lines of the host's stderr:\n");
            for line in &self.stderr {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out
    }

    /// The `--json` form.
    pub(crate) fn to_doc(&self) -> CheckDoc<'_> {
        CheckDoc {
            host: &self.host,
            path: self.path.as_deref(),
            tier: self.tier,
            pin: self.pin,
            passed: self.passed(),
            rules: self
                .outcomes
                .iter()
                .map(|o| RuleDoc {
                    rule: o.rule,
                    status: o.status.as_str().to_ascii_lowercase(),
                    detail: &o.detail,
                })
                .collect(),
            host_stderr: &self.stderr,
        }
    }
}
