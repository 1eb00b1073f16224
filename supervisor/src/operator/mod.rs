//! The operator's verbs besides running rounds.
//!
//! - Read-only views (never write under `log_dir`, never start a host): [`peek`] (with
//!   [`peek_render`], [`recent`], [`round_history`], [`system_metrics`],
//!   [`schedule_view`]), [`watch`],
//!   [`event_query`] (both reading the record through [`event_read`])
//!   and [`doctor`] (with [`agent_preconditions`]); [`monitor`] (detectors, the ssh relay,
//!   the live page and `/metrics`).
//! - [`event_summary`]: the summary of the record that `serve` keeps for those views.
//! - Control of a running `serve`: [`control`] (`status`/`stop`/`kill`/`start`/`restart`
//!   over `<state_dir>/control.sock`) and [`service`] (`service.json`).
//! - Set-up: [`init`] (config and prompt from a preset), [`install`] (the systemd unit) and
//!   [`migrate`] (a reference system's config made ours).

pub(crate) mod agent_preconditions;
pub(crate) mod control;
pub(crate) mod defenses;
pub(crate) mod doctor;
pub(crate) mod event_query;
pub(crate) mod event_read;
pub(crate) mod event_summary;
pub(crate) mod init;
pub(crate) mod install;
pub(crate) mod interrupt;
pub(crate) mod migrate;
pub(crate) mod monitor;
pub(crate) mod peek;
pub(crate) mod peek_render;
pub(crate) mod peer_check;
pub(crate) mod recent;
pub(crate) mod round_history;
pub(crate) mod schedule_view;
pub mod schema;
pub(crate) mod schema_fields;
pub(crate) mod service;
pub(crate) mod system_metrics;
pub(crate) mod watch;
