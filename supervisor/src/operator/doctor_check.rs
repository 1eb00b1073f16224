//! One line of `doctor`'s report ([`Check`]) and how one is made ([`check`]): shared by
//! `doctor` and the checks it gathers from other modules (`deviations`), which `doctor`
//! itself calls, so neither imports the other's file.

use schemars::JsonSchema;
use serde::Serialize;

/// One check of the report.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct Check {
    /// Short name (`config`, `work_dir`, `agent`, `sandbox`, `host:<name>`).
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// What was found.
    pub reason: String,
    /// What to do when it failed (empty when ok).
    pub how_to_fix: String,
}

/// A [`Check`]; `how_to_fix` is kept only when it failed.
pub(crate) fn check(
    name: impl Into<String>,
    ok: bool,
    reason: impl Into<String>,
    fix: impl Into<String>,
) -> Check {
    Check {
        name: name.into(),
        ok,
        reason: reason.into(),
        how_to_fix: if ok { String::new() } else { fix.into() },
    }
}
