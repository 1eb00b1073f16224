//! The rules a host's declared hooks and event kinds must meet (docs/protocol.md §3), in
//! one place for serve (which refuses the host on the first problem) and `plugin check`
//! (which reports each under its rule).

use agent_runner_protocol::{Family, HookDecl, HookName};
use std::collections::BTreeSet;

use super::is_builtin_hook_name;
use crate::runtime::events::BUILTIN_KINDS;
use crate::runtime::round_context::RESERVED_CONTEXT_KEYS;

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
