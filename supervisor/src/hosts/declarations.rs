//! The rules a host's declared hooks and event kinds must meet (docs/protocol.md §3), in
//! one place for serve (which refuses the host on the first problem) and `plugin check`
//! (which reports each under its rule).

use agent_runner_protocol::{Family, HookDecl, HookName};
use std::collections::BTreeSet;
use std::fmt::Write;

use crate::record::events::BUILTIN_KINDS;

/// Names reserved for built-in hooks; a host declaring one is refused
/// (`plugin_builtin_name_squat`, `docs/protocol.md` §3). Ours (the default dirty handler),
/// then the reference system's built-in hook names (its default dirty handler, its Claude
/// rate-limit spawn hook and its per-agent presets), so that no host's events can pass for
/// a built-in's to an auditor who knows either system.
pub(crate) const BUILTIN_HOOK_NAMES: &[&str] = &[
    BUILTIN_DIRTY_HANDLER,
    "default_dirty_handler",
    "claude_rate_limit",
    "gemini",
    "codewhale",
    "kimi",
    "pi",
];

/// Whether `name` is reserved for a built-in hook: one of [`BUILTIN_HOOK_NAMES`] or a
/// built-in error detector's name (`crate::detectors::names`). Only the built-in detector
/// host may declare the detectors' names; any other host declaring a reserved name is
/// refused (`plugin_builtin_name_squat`).
pub(crate) fn is_builtin_hook_name(name: &str) -> bool {
    BUILTIN_HOOK_NAMES.contains(&name)
        || crate::detectors::names().any(|n| n == name)
        || crate::detectors::watch_names().any(|n| n == name)
}

/// The name of the built-in dirty handler (`runtime::steps::dirty`, which answers at priority
/// 1000), reserved (see [`is_builtin_hook_name`]).
pub(crate) const BUILTIN_DIRTY_HANDLER: &str = "default";

/// The round context's own top-level keys; a context enricher may not be named after one
/// (its object is put under its name, `docs/protocol.md` §5.4); the serde names of
/// `crate::runtime::agent::round_context::RoundContext`'s own fields.
pub(crate) const RESERVED_CONTEXT_KEYS: &[&str] = &[
    "round_num",
    "started_at",
    "phase",
    "previous",
    "orphan_stash",
];

/// One broken declaration rule; `Display` says what was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DeclarationProblem {
    /// The `initialize` result declared no hook at all.
    NoHooks,
    /// A hook takes a built-in's name (`plugin_builtin_name_squat`).
    BuiltinName(String),
    /// A hook's family is not in the host table's `provides`.
    OutsideProvides {
        /// The family declared.
        family: Family,
        /// The hook's name.
        name: String,
    },
    /// Another host of the project already registered this name.
    Taken(String),
    /// The built-in detector host declared a name that is not a built-in detector's.
    NotADetector(String),
    /// A context enricher named after one of the round context's own keys
    /// (`docs/protocol.md` §5.4): its object would replace that key.
    ReservedContextKey(String),
    /// A declared event kind is one of the supervisor's own kinds (`docs/protocol.md` §5.7).
    BuiltinEventKind(String),
}

impl DeclarationProblem {
    /// The `plugin check` rule this problem fails.
    pub(crate) fn rule(&self) -> &'static str {
        match self {
            DeclarationProblem::OutsideProvides { .. } => "families_in_provides",
            _ => "hook_names",
        }
    }
}

impl std::fmt::Display for DeclarationProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeclarationProblem::NoHooks => {
                f.write_str("declares no hooks; declare at least one hook")
            }
            DeclarationProblem::BuiltinName(name) => {
                write!(
                    f,
                    "hook name {name:?} belongs to a built-in; pick another name"
                )
            }
            DeclarationProblem::OutsideProvides { family, name } => {
                write!(f, "declares a {family} hook {name:?} outside `provides`")
            }
            DeclarationProblem::Taken(name) => {
                write!(f, "hook name {name:?} is already taken by another host")
            }
            DeclarationProblem::NotADetector(name) => {
                write!(f, "hook name {name:?} is not one of the built-in detectors")
            }
            DeclarationProblem::ReservedContextKey(name) => write!(
                f,
                "context enricher {name:?} would replace the round context's own key of that name"
            ),
            DeclarationProblem::BuiltinEventKind(kind) => {
                write!(f, "event kind {kind:?} is a built-in event kind")
            }
        }
    }
}

/// Every problem of `decls` and `event_kinds` for a host whose table provides `provides`,
/// given the names other hosts already registered (`taken`); empty when the host may be
/// registered. Names unique within the host and valid in shape are already checked by
/// `decode_initialize_result`.
pub(crate) fn declaration_problems(
    decls: &[HookDecl],
    event_kinds: &[String],
    provides: &BTreeSet<Family>,
    taken: &[HookName],
) -> Vec<DeclarationProblem> {
    if decls.is_empty() {
        return vec![DeclarationProblem::NoHooks];
    }
    let mut problems: Vec<DeclarationProblem> = event_kinds
        .iter()
        .filter(|k| BUILTIN_KINDS.contains(&k.as_str()))
        .map(|k| DeclarationProblem::BuiltinEventKind(k.clone()))
        .collect();
    for decl in decls {
        let name = decl.name.as_str().to_owned();
        if is_builtin_hook_name(&name) {
            problems.push(DeclarationProblem::BuiltinName(name));
        } else if !provides.contains(&decl.family) {
            problems.push(DeclarationProblem::OutsideProvides {
                family: decl.family,
                name,
            });
        } else if taken.contains(&decl.name) {
            problems.push(DeclarationProblem::Taken(name));
        } else if decl.family == Family::ContextEnricher
            && RESERVED_CONTEXT_KEYS.contains(&name.as_str())
        {
            problems.push(DeclarationProblem::ReservedContextKey(name));
        }
    }
    problems
}

/// What one `initialize` declared, in a form to compare: hooks (`family/name`, with
/// `@priority` when not 0, the default), event kinds and owned paths, each as a set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Declarations {
    hooks: BTreeSet<String>,
    event_kinds: BTreeSet<String>,
    owned_paths: BTreeSet<String>,
}

impl Declarations {
    /// From hooks as `(family, name, priority)`, event kinds and owned paths.
    pub(super) fn new<'a>(
        hooks: impl IntoIterator<Item = (Family, &'a str, i64)>,
        event_kinds: &[String],
        owned_paths: &[String],
    ) -> Declarations {
        Declarations {
            hooks: hooks
                .into_iter()
                .map(|(family, name, priority)| match priority {
                    0 => format!("{family}/{name}"),
                    p => format!("{family}/{name}@{p}"),
                })
                .collect(),
            event_kinds: event_kinds.iter().cloned().collect(),
            owned_paths: owned_paths.iter().cloned().collect(),
        }
    }

    /// The fields in which `now` differs from `self` (`hooks`, `event_kinds`,
    /// `owned_paths`), and a line giving each one's values first and now. Empty when the
    /// same: a restarted host keeps its first declarations (docs/protocol.md §3, "A
    /// restarted host").
    pub(super) fn changed(&self, now: &Declarations) -> (Vec<String>, String) {
        let mut changed = Vec::new();
        let mut detail = String::new();
        for (field, first, again) in [
            ("hooks", &self.hooks, &now.hooks),
            ("event_kinds", &self.event_kinds, &now.event_kinds),
            ("owned_paths", &self.owned_paths, &now.owned_paths),
        ] {
            if first != again {
                if !detail.is_empty() {
                    detail.push_str("; ");
                }
                let _ = write!(detail, "{field}: {first:?} then {again:?}");
                changed.push(field.to_owned());
            }
        }
        (changed, detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redeclaration_is_compared_as_sets_field_by_field() {
        let kinds = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let first = Declarations::new(
            [
                (Family::PreRound, "gate", 0),
                (Family::DirtyHandler, "wip", 100),
            ],
            &kinds(&["a", "b"]),
            &kinds(&["reports/"]),
        );
        let reordered = Declarations::new(
            [
                (Family::DirtyHandler, "wip", 100),
                (Family::PreRound, "gate", 0),
            ],
            &kinds(&["b", "a"]),
            &kinds(&["reports/"]),
        );
        assert_eq!(first.changed(&reordered), (Vec::new(), String::new()));
        let other = Declarations::new(
            [
                (Family::PreRound, "gate", 0),
                (Family::DirtyHandler, "wip", 5),
            ],
            &kinds(&["a", "c"]),
            &kinds(&["reports/"]),
        );
        let (changed, detail) = first.changed(&other);
        assert_eq!(changed, ["hooks", "event_kinds"]);
        assert!(
            detail.contains("dirty_handler/wip@100") && detail.contains("dirty_handler/wip@5"),
            "{detail}"
        );
        assert!(
            detail.contains(r#"event_kinds: {"a", "b"} then {"a", "c"}"#),
            "{detail}"
        );
    }
}
