//! The round runtime: what `serve` and `round` do, from boot to the end of a round, in
//! folders by what they do (ARCHITECTURE.md, "Layers": a folder imports only from a folder
//! on a lower row of "Inside runtime"):
//!
//! - [`cycle`]: the loop — `serve`'s boot and rounds back to back, one round, and what
//!   decides between rounds (config follow, back-off, schedule, bounds, the work tree's
//!   lock).
//! - [`outward`]: what leaves the machine for the operator's own systems: webhooks and
//!   each round's trace.
//! - [`steps`]: the steps around the agent: the hook families as the round sees them and
//!   the goal checks.
//! - [`agent`]: the agent process and its confinement: spawn, stop, log, sandbox,
//!   environment, sessions, what it is told and what it spends.
//! - [`egress`]: the agent's network: the egress proxy, the routes of its namespace's
//!   ports, the key broker, the operator's upstream proxy.
//! - [`git`]: the only place that runs git, and what the supervisor keeps of the
//!   repository (its place, its config, its stashes, whose dirt is whose).
//! - [`machine`]: what this machine has to give: disk, memory and pressure, cgroups, the
//!   process table.
//!
//! What it writes, and the stop level it obeys, stand a floor below in [`crate::record`];
//! `[schedule]` and where the state dir lies in [`crate::config`].

pub mod agent;
pub(crate) mod cycle;
pub(crate) mod egress;
pub(crate) mod git;
pub(crate) mod machine;
pub(crate) mod outward;
pub mod steps;
