//! The operator's verbs besides running rounds.
//!
//! - Read-only views (never write under `log_dir`, never start a host): [`peek`] (with
//!   [`peek_render`], [`recent`], [`round_history`], [`system_metrics`],
//!   [`schedule_view`]), [`watch`],
//!   [`event_query`] (both reading the record through [`event_read`])
//!   and [`doctor`] (with [`agent_preconditions`]); [`monitor`] (detectors, the ssh relay,
//!   the live page and `/metrics`).
//! - [`event_summary`]: the summary of the record that `serve` keeps for those views.
//! - Control of a running `serve`: [`control`] (`status`/`stop`/`kill`/`start` over
//!   `<state_dir>/control.sock`) and [`service`] (`service.json`).
//! - Set-up: [`init`] (config and prompt from a preset) and [`install`] (the systemd unit).

pub mod agent_preconditions;
pub mod control;
pub mod defenses;
pub mod doctor;
pub mod event_query;
pub mod event_read;
pub mod event_summary;
pub mod init;
pub mod install;
pub mod interrupt;
pub mod monitor;
pub mod peek;
pub mod peek_render;
pub mod peer_check;
pub mod recent;
pub mod round_history;
pub mod schedule_view;
pub mod schema;
pub mod schema_fields;
pub mod service;
pub mod system_metrics;
pub mod watch;
