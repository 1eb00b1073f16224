//! Hook families, declared once: each family's wire and config spelling, its JSON-RPC
//! method and its default call timeout (`docs/protocol.md` §3 and §5). The config
//! loader, the CLI, the supervisor's host calls, `plugin check` and `plugin new` all read
//! this table; adding a family starts here (checklist in `ARCHITECTURE.md`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

use crate::limits::{
    DEFAULT_DIRTY_HANDLER_TIMEOUT_S, DEFAULT_OUTPUT_WATCH_TIMEOUT_S, DEFAULT_ROUND_HOOK_TIMEOUT_S,
    DEFAULT_SERVE_STARTUP_TIMEOUT_S, DEFAULT_SPAWN_HOOK_TIMEOUT_S,
};
use crate::methods;

/// A hook family (`docs/protocol.md` §3, `hooks[].family`), spelled on the wire and in
/// config as its [`FamilySpec::name`]: `"spawn_hook"`, `"dirty_handler"`, `"pre_round"`,
/// `"context_enricher"`, `"serve_startup"`, `"detector"`, `"post_round"`, `"output_watch"`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Consulted before each agent spawn: proceed, defer or skip.
    SpawnHook,
    /// Consulted after a clean round left the tree dirty: commit, stash or ignore.
    DirtyHandler,
    /// Consulted before a round's context is written: proceed or skip this round.
    PreRound,
    /// Asked for a JSON object merged into the round context under the hook's name.
    ContextEnricher,
    /// Called once when `serve` boots; a failure stops `serve` (exit 78).
    ServeStartup,
    /// Polled with the project's state after each round; may raise an alert.
    Detector,
    /// Consulted after every round the agent ran: continue, back off or stop.
    PostRound,
    /// Shown the round's log while the agent runs, chunk by chunk; answers the usage of
    /// the model calls each chunk completed (`docs/protocol.md` §5.10).
    OutputWatch,
}

/// What the supervisor knows about one family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FamilySpec {
    /// The wire and config spelling (`provides = ["spawn_hook"]`, `HookDecl.family`); the
    /// same as the serde name of the [`Family`] variant.
    pub name: &'static str,
    /// The JSON-RPC method a hook of this family answers, `<name>/<verb>`.
    pub method: &'static str,
    /// The call timeout in seconds when the host's table sets no `timeout_s`.
    pub default_timeout_s: u64,
    /// The name of this family's registry in the reference system (cli-agent-runner
    /// 0.3.2), kept by `peek --json` as a key of its `plugins` block and in
    /// `plugins.sandbox.covers` (`docs/operations.md`).
    pub registry_key: &'static str,
}

impl FamilySpec {
    /// The method's last path segment (`before_spawn`), which also names the family's
    /// schema files, `docs/schema/<verb>.params.json` / `.result.json`.
    pub fn verb(&self) -> &'static str {
        self.method.rsplit('/').next().unwrap_or(self.method)
    }
}

impl Family {
    /// Every family, in the order messages list them.
    pub const ALL: &'static [Family] = &[
        Family::SpawnHook,
        Family::DirtyHandler,
        Family::PreRound,
        Family::ContextEnricher,
        Family::ServeStartup,
        Family::Detector,
        Family::PostRound,
        Family::OutputWatch,
    ];

    /// The family's declaration.
    pub const fn spec(self) -> FamilySpec {
        match self {
            Family::SpawnHook => FamilySpec {
                name: "spawn_hook",
                method: methods::BEFORE_SPAWN,
                default_timeout_s: DEFAULT_SPAWN_HOOK_TIMEOUT_S,
                registry_key: "spawn_hooks",
            },
            Family::DirtyHandler => FamilySpec {
                name: "dirty_handler",
                method: methods::HANDLE_DIRTY,
                default_timeout_s: DEFAULT_DIRTY_HANDLER_TIMEOUT_S,
                registry_key: "dirty_handlers",
            },
            Family::PreRound => FamilySpec {
                name: "pre_round",
                method: methods::BEFORE_ROUND,
                default_timeout_s: DEFAULT_ROUND_HOOK_TIMEOUT_S,
                registry_key: "pre_round_hooks",
            },
            Family::ContextEnricher => FamilySpec {
                name: "context_enricher",
                method: methods::ENRICH,
                default_timeout_s: DEFAULT_ROUND_HOOK_TIMEOUT_S,
                registry_key: "context_enrichers",
            },
            Family::ServeStartup => FamilySpec {
                name: "serve_startup",
                method: methods::ON_START,
                default_timeout_s: DEFAULT_SERVE_STARTUP_TIMEOUT_S,
                registry_key: "serve_startup_hooks",
            },
            Family::Detector => FamilySpec {
                name: "detector",
                method: methods::DETECT,
                default_timeout_s: DEFAULT_ROUND_HOOK_TIMEOUT_S,
                registry_key: "detectors",
            },
            Family::PostRound => FamilySpec {
                name: "post_round",
                method: methods::AFTER_ROUND,
                default_timeout_s: DEFAULT_ROUND_HOOK_TIMEOUT_S,
                registry_key: "post_round_hooks",
            },
            Family::OutputWatch => FamilySpec {
                name: "output_watch",
                method: methods::OBSERVE,
                default_timeout_s: DEFAULT_OUTPUT_WATCH_TIMEOUT_S,
                registry_key: "output_watches",
            },
        }
    }

    /// The reference system's registry name ([`FamilySpec::registry_key`]).
    pub const fn registry_key(self) -> &'static str {
        self.spec().registry_key
    }

    /// The call timeout in seconds unless the host sets `timeout_s`.
    pub const fn default_timeout_s(self) -> u64 {
        self.spec().default_timeout_s
    }

    /// The wire and config spelling (`spawn_hook`, `detector`, `post_round`, …).
    pub const fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// The JSON-RPC method its hooks answer (`spawn_hook/before_spawn`).
    pub const fn method(self) -> &'static str {
        self.spec().method
    }

    /// The family spelled `name`, if any.
    pub fn parse(name: &str) -> Option<Family> {
        Family::ALL.iter().copied().find(|f| f.as_str() == name)
    }

    /// Every spelling joined for a message: `quote` wraps each name, `last` goes before the
    /// final one and `", "` between the others (`spawn_hook or dirty_handler`;
    /// `"a", "b" or "c"`).
    pub fn spelled(quote: &str, last: &str) -> String {
        let names: Vec<String> = Family::ALL
            .iter()
            .map(|f| format!("{quote}{}{quote}", f.as_str()))
            .collect();
        match names.split_last() {
            Some((final_name, [])) => final_name.clone(),
            Some((final_name, rest)) => format!("{}{last}{final_name}", rest.join(", ")),
            None => String::new(),
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_spelled_the_same_on_the_wire_in_config_and_in_its_method() {
        for family in Family::ALL {
            let spec = family.spec();
            let wire = serde_json::to_value(family).unwrap();
            assert_eq!(wire, spec.name, "{family:?}");
            assert_eq!(Family::parse(spec.name), Some(*family));
            assert!(
                spec.method.starts_with(&format!("{}/", spec.name)),
                "{}",
                spec.method
            );
            assert!(spec.default_timeout_s > 0);
        }
        assert_eq!(Family::parse("other"), None);
        assert_eq!(Family::SpawnHook.spec().verb(), "before_spawn");
        assert_eq!(
            Family::spelled("\"", " or "),
            "\"spawn_hook\", \"dirty_handler\", \"pre_round\", \"context_enricher\", \"serve_startup\", \"detector\", \"post_round\" or \"output_watch\""
        );
        assert_eq!(Family::Detector.spec().verb(), "detect");
        assert_eq!(Family::PostRound.spec().verb(), "after_round");
    }
}
