//! `peek --json`'s `defenses`: the loop's defenses against what breaks unattended runs, in
//! the reference system's shape (`name`, `value`, `codifies`, `guarded_by`,
//! `current_state`; `docs/operations.md`, "peek --json"). `value` is what this project's
//! config sets; `codifies` says what the defense prevents; `guarded_by` names the test that
//! proves it.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

use crate::config::{Config, SandboxMode};
use crate::hosts::sandbox::SandboxGate;
use crate::runtime::cycle::serve::{CRASH_LOOP_LIMIT, MIN_REASK};

/// One entry of `peek`'s `defenses`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct Defense {
    /// The defense's name (`round_budget_s`, `crash_loop_breaker`, …).
    pub name: String,
    /// What this project's config sets for it: a number, a string or `null`.
    pub value: Value,
    /// What it prevents.
    pub codifies: String,
    /// The test that proves it (a path under `tests/`).
    pub guarded_by: String,
    /// `active` or `inactive` with this config.
    #[schemars(extend("enum" = ["active", "inactive"]))]
    pub current_state: String,
}

/// One defense entry.
fn defense(name: &str, value: Value, codifies: &str, guarded_by: &str, active: bool) -> Defense {
    Defense {
        name: name.to_owned(),
        value,
        codifies: codifies.to_owned(),
        guarded_by: guarded_by.to_owned(),
        current_state: if active { "active" } else { "inactive" }.to_owned(),
    }
}

/// The defenses in force for `config` with the sandbox `gate` (`None`: the gate refuses
/// to boot).
pub(crate) fn list(config: &Config, gate: Option<&SandboxGate>) -> Vec<Defense> {
    let rt = &config.runtime;
    vec![
        defense(
            "round_budget_s",
            json!(rt.round_budget.as_secs()),
            "a hung agent holds the loop forever: the whole process group is killed at the budget",
            "tests/tests/suite/functional/loop_defenses.rs",
            true,
        ),
        defense(
            "process_group_isolation",
            json!("own process group, subreaper, guard process"),
            "descendants of an agent outlive its round",
            "tests/tests/suite/functional/loop_defenses.rs",
            true,
        ),
        defense(
            "orphan_stash_idempotency_s",
            json!(config.vcs.stash_idempotency.as_secs()),
            "several stashes of the same dirty tree within seconds",
            "tests/tests/suite/functional/dirty_builtin.rs",
            config.vcs.dirty_action == crate::config::DirtyAction::Stash,
        ),
        defense(
            "sha_locked_stash",
            json!("stashes remembered by SHA, never stash@{n}"),
            "a stash index that moved under a concurrent stash",
            "tests/tests/suite/functional/dirty_builtin.rs",
            true,
        ),
        defense(
            "crash_loop_breaker",
            json!(format!(
                "stop after {CRASH_LOOP_LIMIT} failed rounds in a row (exit 75)"
            )),
            "a crashing agent respawned without end",
            "tests/tests/suite/functional/loop_defenses.rs",
            true,
        ),
        defense(
            "defer_min_reask_s",
            json!(MIN_REASK.as_secs()),
            "a defer_s = 0 answer spinning the loop",
            "tests/tests/suite/functional/loop_defenses.rs",
            true,
        ),
        defense(
            "plugin_sandbox",
            json!(gate.map_or("refused", |g| g.applied.as_str())),
            "third-party hook code running with the supervisor's rights",
            "tests/tests/suite/confinement/confinement.rs",
            config.plugins.sandbox != SandboxMode::Off && gate.is_some(),
        ),
        defense(
            "host_pins",
            json!(config.plugins.pins.len()),
            "a host executable swapped after it was reviewed",
            "tests/tests/suite/confinement/pins.rs",
            !config.plugins.pins.is_empty(),
        ),
        defense(
            "git_config_watched",
            json!(format!(
                "{} reviewed keys reverted when a round adds or changes them",
                crate::runtime::git::config_keys::KEYS
                    .iter()
                    .filter(|k| k.effect != crate::runtime::git::config_keys::Effect::Shapes)
                    .count()
            )),
            "a git config key the agent planted (an fsmonitor hook, a pager, a filter, an alias) running at the operator's next git command",
            "tests/tests/suite/confinement/git_config_watch.rs",
            true,
        ),
        defense(
            "exec_surface",
            json!(if config.vcs.commit_exec_surface {
                "told, committed"
            } else {
                "told, left uncommitted"
            }),
            "a CI workflow or editor config the agent changed reaching CI or the operator's editor unseen",
            "tests/tests/suite/confinement/git_config_watch.rs",
            true,
        ),
        defense(
            "stop_file",
            json!(rt.stop_file.as_ref().map(|p| p.display().to_string())),
            "no way to stop an unattended loop without signals",
            "tests/tests/suite/functional/loop_defenses.rs",
            rt.stop_file.is_some(),
        ),
    ]
}
