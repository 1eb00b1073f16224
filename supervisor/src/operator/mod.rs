//! The operator's verbs besides running rounds.
//!
//! - Read-only views (never write under `log_dir`, never start a host): [`peek`] (with
//!   [`peek_render`], [`system_metrics`], [`schedule_view`]), [`watch`],
//!   [`event_query`] (all reading the record through [`crate::record`]'s readers)
//!   and [`doctor`] (with [`crate::runtime::agent::preconditions`], which `serve` checks too,
//!   and [`deviations`], the reference system's an operator would trip on); [`monitor`] (detectors, the ssh relay,
//!   the live page and `/metrics`).
//! - Control of a running `serve`: [`control`] (`status`/`stop`/`kill`/`start`/`restart`
//!   over `<state_dir>/control.sock`; what `serve` publishes for it is
//!   [`crate::record::status`]).
//! - Set-up: [`init`] (config and prompt from a preset), [`install`] (the systemd unit) and
//!   [`migrate`] (a reference system's config made ours); [`upgrade`] (a new binary swapped in
//!   with [`binary_swap`], the service restarted on it, rolled back when it does not come up).

pub(crate) mod agent_version;
pub(crate) mod binary_swap;
pub(crate) mod budget;
pub(crate) mod control;
pub(crate) mod defenses;
pub(crate) mod deviations;
pub(crate) mod doctor;
pub(crate) mod doctor_check;
pub(crate) mod event_query;
pub(crate) mod init;
pub(crate) mod install;
pub(crate) mod interrupt;
pub(crate) mod migrate;
pub(crate) mod monitor;
pub(crate) mod peek;
pub(crate) mod peek_render;
pub(crate) mod peer_check;
pub(crate) mod schedule_view;
pub mod schema;
pub(crate) mod system_metrics;
pub(crate) mod upgrade;
pub(crate) mod watch;
