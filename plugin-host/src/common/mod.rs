//! What every confined process of agent-runner is confined with, hosts and the agent alike:
//! the kernel's offer ([`probe`]), the one Landlock ruleset builder ([`landlock`]), the
//! shared parts of the seccomp programs ([`seccomp`]) and the naming of their denials
//! ([`notify`]), namespaces ([`pid_namespace`], [`user_namespace`], [`id_map`]), cgroups
//! ([`cgroup`], [`pids_limit`]), limits on writes ([`write_limits`]), capabilities, the
//! credential stores no grant may cover ([`credentials`]), and descriptor passing
//! ([`fd_passing`]). [`crate::host`] and [`crate::agent`] build on this module and never on
//! each other.

pub mod build_note;
pub(crate) mod capabilities;
pub mod cgroup;
pub mod credentials;
pub(crate) mod fd_passing;
pub mod group_guard;
pub(crate) mod id_map;
pub mod landlock;
pub mod launcher;
pub mod layers;
pub mod notify;
pub mod pid_namespace;
pub mod pids_limit;
pub mod plan;
pub mod probe;
pub mod program;
pub mod seccomp;
mod syscall_table;
pub mod user_namespace;
pub mod write_limits;
