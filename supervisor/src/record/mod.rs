//! The record: what `serve` writes and every view reads, a floor below the round runtime,
//! the hosts and the operator's verbs, which all stand on it (ARCHITECTURE.md, "Layers").
//!
//! - [`events`]: the operator's record, one JSON line per event (the `Event` enum, the
//!   writer, `Recorded`, a line read back), and everything that reads it back:
//!   [`events::read`] (backwards in blocks or forwards from a point), [`events::summary`]
//!   and [`events::recent`] (the summary `serve` keeps beside it and what a look sees of
//!   the recent past); [`rounds`]: rounds as the record and their logs tell them.
//! - [`state`]: the project lock, the round counter and the orphan stash record (atomic
//!   writes), and the record readied at boot; [`retention`]: round log pruning;
//!   [`mem_loops`]: the memory loops of earlier `serve` runs (exit 71 or 70).
//! - [`service`]: `service.json`, what a running `serve` is doing, and its writer;
//!   [`status`]: what `serve` publishes for `status`; both filled from the hosts through
//!   a trait the host manager implements ([`service::ServiceHosts`],
//!   [`status::StatusHosts`]). [`schema_fields`]: which fields their schemas require.
//! - [`stop`]: signals and control requests → the stop level every layer above obeys.
//! - [`agent_changes`]: what an agent changed that the supervisor refused (a prompt link, a
//!   rewritten goal check), held across boots.

pub(crate) mod agent_changes;
pub mod events;
pub(crate) mod mem_loops;
pub(crate) mod retention;
pub(crate) mod rounds;
pub(crate) mod schema_fields;
pub(crate) mod service;
pub(crate) mod state;
pub(crate) mod status;
pub mod stop;
