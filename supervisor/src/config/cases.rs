//! Config parsing over a table of cases, in process: each case is a TOML snippet added to a
//! minimal valid file and what loading it must give — a value read back from the resolved
//! [`Config`], or the error's key and a piece of its message. (`tests/tests/suite/functional/config_errors.rs`
//! keeps the cases that need the binary: exit 78, one stderr line, nothing started.)

use std::path::Path;

use super::{parse_str, Config, ConfigError};

/// The smallest valid file; each case's snippet is appended.
const BASE: &str = "schema_version = 1\n[agent]\ncommand = [\"agent\"]\n";

/// A `[goal]` whose ledger passes its rules (a prompt file at index 1, under `log_dir`),
/// then `$rest`.
macro_rules! goal {
    ($rest:literal) => {
        concat!(
            "[runtime]\nlog_dir = \"logs\"\n",
            "[prompt]\nfiles = [\"prompts/main.md\", \"logs/ledger.md\"]\n",
            "[goal]\nledger = \"logs/ledger.md\"\n",
            $rest
        )
    };
}

/// What a case must give.
enum Want {
    /// Loads, and the check holds.
    Ok(fn(&Config) -> bool),
    /// Refused: the dotted key and a piece of the message.
    Err(&'static str, &'static str),
}

/// `(what the case is, the snippet, what it must give)`. A snippet starting with `!` is
/// the whole file (the base left out).
const CASES: &[(&str, &str, Want)] = &[
    // Defaults from the definitions.
    (
        "defaults",
        "",
        Want::Ok(|c| {
            c.runtime.round_budget.as_secs() == 1800
                && c.runtime.restart_delay.as_secs() == 3
                && c.runtime.round_log_max_bytes == 64 * 1024 * 1024
                && c.runtime.transient_backoff_cap.as_secs() == 1800
                && c.runtime.max_rounds.is_none()
                && c.vcs.git_timeout.as_secs() == 60
                && c.vcs.stash_idempotency.as_secs() == 5
                && c.prompt.concat_separator == "\n\n"
                && c.prompt.strip_yaml_frontmatter
                && c.agent.sigterm_grace.as_secs() == 10
                && c.agent.terminal_marker == "\"type\":\"result\""
                && c.agent.prompt_arg_template == ["{prompt}"]
                && c.agent.allow_hosts.is_none()
                && c.plugins.sandbox == super::SandboxMode::Prefer
                && c.monitor.host_health.disk.critical_pct == 95.0
                && c.monitor.host_health.pressure.sample_interval.as_secs() == 10
                && c.monitor.supervisor_stale_threshold.map(|d| d.as_secs()) == Some(2700)
                && c.monitor.round_progress_interval.is_none()
        }),
    ),
    (
        "a value replaces its default",
        "[runtime]\nround_budget_s = 60\nmax_rounds = 4\n",
        Want::Ok(|c| c.runtime.round_budget.as_secs() == 60 && c.runtime.max_rounds == Some(4)),
    ),
    (
        "a word",
        "[vcs]\ndirty_action = \"auto_commit\"\n",
        Want::Ok(|c| c.vcs.dirty_action == super::DirtyAction::AutoCommit),
    ),
    (
        "stdin delivery",
        "!schema_version = 1\n[agent]\ncommand = [\"a\"]\nprompt_delivery = \"stdin\"\n",
        Want::Ok(|c| c.agent.prompt_arg_template.is_empty()),
    ),
    // Shape errors: serde's, naming the dotted key.
    (
        "wrong type",
        "[runtime]\nround_budget_s = \"x\"\n",
        Want::Err("runtime.round_budget_s", "invalid type"),
    ),
    (
        "bare string where a list belongs",
        "!schema_version = 1\n[agent]\ncommand = \"claude\"\n",
        Want::Err("agent.command", "expected a list of strings"),
    ),
    (
        "unknown key",
        "[runtime]\nround_budget = 5\n",
        Want::Err("runtime.round_budget", "did you mean `round_budget_s`?"),
    ),
    (
        "unknown table key",
        "[monitor.host_health.disk]\ncritcal_pct = 5\n",
        Want::Err(
            "monitor.host_health.disk.critcal_pct",
            "did you mean `critical_pct`?",
        ),
    ),
    (
        "missing required key",
        "!schema_version = 1\n[agent]\nname = \"x\"\n",
        Want::Err("agent.command", "missing field"),
    ),
    (
        "missing schema_version",
        "![agent]\ncommand = [\"a\"]\n",
        Want::Err("schema_version", "schema_version = 1"),
    ),
    (
        "unsupported schema_version",
        "!schema_version = 2\n[agent]\ncommand = [\"a\"]\n",
        Want::Err("schema_version", "not supported"),
    ),
    ("invalid TOML", "[runtime\n", Want::Err("", "invalid TOML")),
    // Ranges from the definitions.
    (
        "below a range",
        "[runtime]\nround_budget_s = 0\n",
        Want::Err(
            "runtime.round_budget_s",
            "0 is out of range; expected integer ≥ 1",
        ),
    ),
    (
        "sigterm_grace_s above its range",
        "!schema_version = 1\n[agent]\ncommand = [\"a\"]\nsigterm_grace_s = 13\n",
        Want::Err("agent.sigterm_grace_s", "expected integer 1..=12"),
    ),
    (
        "round_log_max_bytes too small",
        "[runtime]\nround_log_max_bytes = 1023\n",
        Want::Err("runtime.round_log_max_bytes", "expected integer ≥ 1024"),
    ),
    (
        "an optional bound of 0",
        "[runtime]\nmax_duration_s = 0\n",
        Want::Err("runtime.max_duration_s", "out of range"),
    ),
    (
        "remote_failure_tolerance_s too large",
        "[monitor]\nremote_failure_tolerance_s = 3601\n",
        Want::Err("monitor.remote_failure_tolerance_s", "0..=3600"),
    ),
    (
        "round_progress_interval_s below zero",
        "[monitor]\nround_progress_interval_s = -1\n",
        Want::Err("monitor.round_progress_interval_s", "invalid value"),
    ),
    (
        "round_progress_interval_s not a number",
        "[monitor]\nround_progress_interval_s = \"30s\"\n",
        Want::Err("monitor.round_progress_interval_s", "invalid type"),
    ),
    (
        "round_progress_interval_s read",
        "[monitor]\nround_progress_interval_s = 30\n",
        Want::Ok(|c| c.monitor.round_progress_interval.map(|d| d.as_secs()) == Some(30)),
    ),
    (
        "a host bound of 0",
        "[plugins.hosts.h]\ncommand = [\"h\"]\nprovides = [\"detector\"]\ntimeout_s = 0\n",
        Want::Err("plugins.hosts.h.timeout_s", "out of range"),
    ),
    (
        "a host's write limit",
        "[plugins.hosts.h]\ncommand = [\"h\"]\nprovides = [\"detector\"]\ntmp_max_mb = 8\n",
        Want::Ok(|c| {
            c.plugins.hosts[0].writes.tmp_max_mb == 8 && c.plugins.hosts[0].memory_max_mb == 1024
        }),
    ),
    // Words outside their vocabulary.
    (
        "bad sandbox word",
        "[plugins]\nsandbox = \"strict\"\n",
        Want::Err(
            "plugins.sandbox",
            "expected \"require\", \"prefer\" or \"off\"",
        ),
    ),
    (
        "bad round_cgroup word",
        "[monitor.host_health.memory]\nround_cgroup = \"yes\"\n",
        Want::Err(
            "monitor.host_health.memory.round_cgroup",
            "expected \"auto\", \"on\" or \"off\"",
        ),
    ),
    (
        "bad transient_error_action",
        "[runtime]\ntransient_error_action = \"retry\"\n",
        Want::Err(
            "runtime.transient_error_action",
            "\"back_off\", \"skip\" or \"stop\"",
        ),
    ),
    // Rules across keys, kept where the keys are used.
    (
        "backoff cap below restart delay",
        "[runtime]\nrestart_delay_s = 10\ntransient_backoff_cap_s = 5\n",
        Want::Err("runtime.transient_backoff_cap_s", "restart_delay_s (10)"),
    ),
    (
        "brake not below the limit",
        "[monitor.host_health.memory]\nround_high_mb = 64\nround_max_mb = 64\n",
        Want::Err(
            "monitor.host_health.memory.round_high_mb",
            "round_max_mb (64)",
        ),
    ),
    (
        "a disk growth threshold that is not positive",
        "[monitor.host_health.disk]\ndisk_growth_pct_per_hr_warning = 0.0\n",
        Want::Err(
            "monitor.host_health.disk.disk_growth_pct_per_hr_warning",
            "expected a positive number",
        ),
    ),
    (
        "a brake step above 50 %",
        "[monitor.host_health.brake]\nmemory_high = true\nmemory_high_step_pct = 51\n",
        Want::Err("monitor.host_health.brake.memory_high_step_pct", "51"),
    ),
    (
        "no samples to engage the brake",
        "[monitor.host_health.brake]\nwarning_consecutive_samples = 0\n",
        Want::Err("monitor.host_health.brake.warning_consecutive_samples", "0"),
    ),
    (
        "a nudge that is not a boolean",
        "[monitor.host_health.pressure]\nin_round_nudge = \"yes\"\n",
        Want::Err("monitor.host_health.pressure.in_round_nudge", "yes"),
    ),
    (
        "an empty disk growth window",
        "[monitor.host_health.disk]\ngrowth_window_s = 0\n",
        Want::Err("monitor.host_health.disk.growth_window_s", "0"),
    ),
    (
        "a bad pin",
        "[plugins.pin]\npause = \"sha256:not-hex\"\n",
        Want::Err("plugins.pin.pause", "not-hex"),
    ),
    (
        "a bad allow_hosts entry",
        "[agent.sandbox]\nallow_hosts = [\"*.com\"]\n",
        Want::Err("agent.sandbox.allow_hosts", "`*.com`"),
    ),
    (
        "a phase's agent key names the phase",
        "[phases]\nlist = [\"a\"]\n[phases.a.agent]\nsigterm_grace_s = 0\n",
        Want::Err("phases.a.agent.sigterm_grace_s", "out of range"),
    ),
    (
        "the agent's sandbox as a plain word",
        "sandbox = \"require\"\n",
        Want::Ok(|c| c.agent_sandbox.mode == super::SandboxMode::Require),
    ),
    (
        "the agent's sandbox as an inline table",
        "sandbox = { mode = \"prefer\" }\n",
        Want::Ok(|c| c.agent_sandbox.mode == super::SandboxMode::Prefer),
    ),
    (
        "the agent's sandbox as a table",
        "[agent.sandbox]\nmode = \"require\"\n",
        Want::Ok(|c| c.agent_sandbox.mode == super::SandboxMode::Require),
    ),
    (
        "the agent's sandbox absent is off",
        "",
        Want::Ok(|c| c.agent_sandbox.mode == super::SandboxMode::Off),
    ),
    (
        "variables the confined agent inherits by name",
        "[agent.sandbox]\nmode = \"prefer\"\npass_env = [\"SSH_AUTH_SOCK\", \"NPM_TOKEN\"]\n",
        Want::Ok(|c| c.agent_sandbox.pass_env == ["SSH_AUTH_SOCK", "NPM_TOKEN"]),
    ),
    (
        "a pass_env entry that is no variable name",
        "[agent.sandbox]\npass_env = [\"A=B\"]\n",
        Want::Err("agent.sandbox.pass_env", "\"A=B\" is not a variable name"),
    ),
    (
        "a state dir inside the tree of a confined agent",
        "[agent.sandbox]\nmode = \"prefer\"\n[runtime]\nstate_dir = \"./.ar-state\"\n",
        Want::Err("runtime.state_dir", "inside the work tree"),
    ),
    (
        "a state dir inside the tree of an unconfined agent (doctor warns)",
        "[agent.sandbox]\nmode = \"off\"\n[runtime]\nstate_dir = \"./.ar-state\"\n",
        Want::Ok(|c| c.runtime.state_dir.ends_with(".ar-state")),
    ),
    (
        "a bad agent sandbox word",
        "sandbox = \"strict\"\n",
        Want::Err("agent.sandbox.mode", "strict"),
    ),
    (
        "an agent sandbox neither word nor table",
        "sandbox = true\n",
        Want::Err("agent.sandbox", "neither a mode nor a table"),
    ),
    (
        "the agent's sandbox spelled both ways",
        "sandbox = \"require\"\n[agent.sandbox]\nmode = \"off\"\n",
        Want::Err("agent.sandbox", "set twice"),
    ),
    (
        "the agent's sandbox spelled both ways, dotted",
        "sandbox = \"require\"\nsandbox.mode = \"off\"\n",
        Want::Err("agent.sandbox", "set twice"),
    ),
    (
        "the plugins' sandbox set twice is not the agent's",
        "[plugins]\nsandbox = \"require\"\nsandbox = \"off\"\n",
        Want::Err("", "invalid TOML"),
    ),
    (
        "a phase's agent sandbox",
        "[phases]\nlist = [\"a\"]\n[phases.a.agent]\nsandbox = \"off\"\n",
        Want::Err("phases.a.agent.sandbox", "one setting for every phase"),
    ),
    (
        "a phase's budget",
        "[phases]\nlist = [\"a\"]\n[phases.a]\nround_budget_s = 7\n",
        Want::Ok(|c| c.profile(Some("a")).round_budget.as_secs() == 7),
    ),
    (
        "a goal kind in auto_stop_on",
        "[monitor]\nauto_stop_on = [\"goal_reached\"]\n",
        Want::Err("monitor.auto_stop_on[0]", "never stop serve"),
    ),
    // The top level, `[phases]`, `[phases.<name>]`, `[goal]` and `[[goal.checks]]`.
    (
        "schema_version of the wrong type",
        "!schema_version = \"1\"\n[agent]\ncommand = [\"a\"]\n",
        Want::Err("schema_version", "invalid type"),
    ),
    (
        "phases' defaults",
        "",
        Want::Ok(|c| c.phases.list.is_empty() && c.phases.phase_policy == super::PhasePolicy::Wait),
    ),
    (
        "a phase_policy word",
        "[phases]\nlist = [\"a\"]\nphase_policy = \"skip\"\n",
        Want::Ok(|c| c.phases.phase_policy == super::PhasePolicy::Skip),
    ),
    (
        "a bad phase_policy word",
        "[phases]\nlist = [\"a\"]\nphase_policy = \"hurry\"\n",
        Want::Err("phases.phase_policy", "expected \"wait\" or \"skip\""),
    ),
    (
        "phases.list of the wrong type",
        "[phases]\nlist = \"a\"\n",
        Want::Err("phases.list", "expected a list of strings"),
    ),
    (
        "a phase's budget of 0",
        "[phases]\nlist = [\"a\"]\n[phases.a]\nround_budget_s = 0\n",
        Want::Err(
            "phases.a.round_budget_s",
            "0 is out of range; expected integer ≥ 1",
        ),
    ),
    (
        "a phase's budget of 0 under its runtime table",
        "[phases]\nlist = [\"a\"]\n[phases.a.runtime]\nround_budget_s = 0\n",
        Want::Err("phases.a.round_budget_s", "out of range"),
    ),
    (
        "a phase's key of the wrong type",
        "[phases]\nlist = [\"a\"]\n[phases.a]\ndisable_pre_round_hooks = \"yes\"\n",
        Want::Err("phases.a.disable_pre_round_hooks", "invalid type"),
    ),
    (
        "a goal's defaults",
        goal!("[[goal.checks]]\nname = \"t\"\ncmd = [\"true\"]\n"),
        Want::Ok(|c| {
            let goal = c.goal.as_ref().unwrap();
            goal.stop_when == super::StopWhen::Never
                && goal.checks[0].timeout.as_secs() == 10
                && goal.checks[0].cwd == c.runtime.work_dir
        }),
    ),
    (
        "a goal without its ledger",
        "[goal]\nstop_when = \"never\"\n",
        Want::Err("goal.ledger", "missing field"),
    ),
    (
        "a bad stop_when word",
        goal!("stop_when = \"soon\"\n"),
        Want::Err(
            "goal.stop_when",
            "\"soon\"; expected \"never\" or \"all_satisfied\"",
        ),
    ),
    (
        "stop_when without a check",
        goal!("stop_when = \"all_satisfied\"\n"),
        Want::Err("goal.stop_when", "at least one [[goal.checks]]"),
    ),
    (
        "a check's timeout above its range",
        goal!("[[goal.checks]]\nname = \"t\"\ncmd = [\"true\"]\ntimeout_s = 31\n"),
        Want::Err(
            "goal.checks[0].timeout_s",
            "31 is out of range; expected integer 1..=30",
        ),
    ),
    (
        "a check's timeout of 0",
        goal!("[[goal.checks]]\nname = \"t\"\ncmd = [\"true\"]\ntimeout_s = 0\n"),
        Want::Err("goal.checks[0].timeout_s", "out of range"),
    ),
    (
        "a check with an empty argv",
        goal!("[[goal.checks]]\nname = \"t\"\ncmd = []\n"),
        Want::Err("goal.checks[0].cmd", "non-empty argv"),
    ),
    (
        "a check's unknown key",
        goal!("[[goal.checks]]\nname = \"t\"\ncmd = [\"true\"]\ntimeot_s = 5\n"),
        Want::Err("goal.checks[0].timeot_s", "did you mean `timeout_s`?"),
    ),
    (
        "a percentage out of range",
        "[monitor.host_health.disk]\ncritical_pct = 120\n",
        Want::Err("monitor.host_health.disk.critical_pct", "percentage"),
    ),
];

#[test]
fn config_cases_load_or_name_their_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("prompts")).unwrap();
    std::fs::write(dir.path().join("prompts/main.md"), "task").unwrap();
    let path = dir.path().join("agent-runner.toml");
    let mut failures = Vec::new();
    for (what, snippet, want) in CASES {
        let text = match snippet.strip_prefix('!') {
            Some(whole) => whole.to_owned(),
            None => format!("{BASE}{snippet}"),
        };
        let got = parse_str(&path, &text);
        let verdict = match (want, &got) {
            (Want::Ok(check), Ok(config)) if check(config) => None,
            (Want::Ok(_), Ok(_)) => Some("loaded, but the check failed".to_owned()),
            (Want::Ok(_), Err(e)) => Some(format!("refused: {e}")),
            (Want::Err(..), Ok(_)) => Some("loaded; expected an error".to_owned()),
            (Want::Err(key, piece), Err(e)) => check_error(&path, e, key, piece),
        };
        if let Some(why) = verdict {
            failures.push(format!("{what}: {why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Whether `error` names `path`, the key `key` (any key for `""`) and contains `piece`.
fn check_error(path: &Path, error: &ConfigError, key: &str, piece: &str) -> Option<String> {
    let text = error.to_string();
    if !text.contains(&path.display().to_string()) {
        return Some(format!("the file is not named: {text}"));
    }
    if !text.contains(piece) {
        return Some(format!("{piece:?} missing: {text}"));
    }
    match error {
        ConfigError::Key { key: got, .. } if !key.is_empty() && got != key => {
            Some(format!("key {got:?}, expected {key:?}: {text}"))
        }
        ConfigError::Key { .. } | ConfigError::Syntax { .. } => None,
        ConfigError::Read { .. } => Some(format!("a read error: {text}")),
        ConfigError::Untrusted { .. } => Some(format!("an untrusted file: {text}")),
    }
}
