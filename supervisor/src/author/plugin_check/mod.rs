//! `agent-runner plugin check`: runs a host through the protocol contract rule by rule
//! (docs/protocol.md "Checking a host") and reports one line per rule.
//!
//! The host is launched exactly as serve launches it ([`crate::hosts::launch_spec`]): for
//! `plugin check NAME`, from the config's `[plugins.hosts.NAME]` table, pin-checked and
//! confined per `[plugins] sandbox`; for `plugin check -- COMMAND…`, unpinned, confined at
//! the best tier the kernel offers, with a temporary work and log dir.

mod prepare;
mod report;
mod rules;
mod wire;

pub(crate) use prepare::Target;
pub(crate) use report::Report;

use crate::exit::CliError;

/// Checks `target`; the report says which rules passed.
///
/// Errors: the config cannot be loaded, has no such host, or its sandbox mode cannot
/// engage (exit 78).
pub(crate) async fn run(target: &Target) -> Result<Report, CliError> {
    let prepared = match target {
        Target::Configured { config, name } => prepare::prepare_configured(config, name)?,
        Target::Command { command, provides } => prepare::prepare_command(command, provides)?,
    };
    Ok(rules::check(prepared).await)
}
