//! The operator's verbs besides running rounds.
//!
//! - Read-only views (never write under `log_dir`, never start a host): [`peek`] (with
//!   [`peek_render`], [`round_history`], [`system_metrics`]), [`watch`], [`event_query`] (over
//!   [`event_read`]) and [`doctor`].
//! - Control of a running `serve`: [`control`] (`status`/`stop`/`kill`/`start` over
//!   `<log_dir>/control.sock`) and [`service`] (`service.json`).
//! - Set-up: [`init`] (config and prompt from a preset) and [`install`] (the systemd unit).

pub mod control;
pub mod defenses;
pub mod doctor;
pub mod event_query;
pub mod event_read;
pub mod init;
pub mod install;
pub mod peek;
pub mod peek_render;
pub mod round_history;
pub mod service;
pub mod system_metrics;
pub mod watch;
