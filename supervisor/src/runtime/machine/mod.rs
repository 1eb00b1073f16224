//! What this machine has to give a round, as the kernel tells it.
//!
//! - [`host_health`]: disk, available memory and pressure (PSI) before a round and during
//!   it; [`memory_brake`]: the soft brake on the supervisor's own cgroup under in-round
//!   pressure; [`round_cgroup`]: each round in a child of a delegated memory cgroup.
//! - [`processes`]: who is whose child in `/proc` (the orphan reaper, result grace).

pub(crate) mod host_health;
pub(crate) mod memory_brake;
pub(crate) mod processes;
pub(crate) mod round_cgroup;
