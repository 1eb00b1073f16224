//! Confinement for agent-runner plugin hosts.
//!
//! A plugin *host* is a third-party program the supervisor talks to over newline-delimited
//! JSON-RPC on stdio (protocol v1). This crate holds everything needed to start such a
//! program so that, before its first instruction:
//!
//! * it runs exactly the bytes whose sha256 was pinned ([`pin`]): the file is opened once,
//!   hashed from that descriptor, and that same descriptor is executed with
//!   `execveat(fd, "", AT_EMPTY_PATH)`;
//! * Landlock and seccomp are in force ([`policy`], applied by [`launch`] between fork and
//!   exec, with everything prepared before the fork);
//! * its environment holds only the allowlist of `docs/protocol.md` §8 ([`env`](mod@env));
//! * resource limits apply and it dies with the supervisor ([`launch`]), and every process
//!   it starts dies with it (it is PID 1 of its own PID namespace);
//! * with [`spawn_with_listener`], a seccomp denial is named: the supervisor learns which
//!   system call stopped the host ([`notify`]).
//!
//! The agent of a round is confined with the same building blocks and a policy of its own
//! ([`agent_policy`], [`agent_confine`]).
//!
//! [`probe`](mod@probe) tells which confinement layers this kernel offers; [`resolve`] turns a
//! configured command into a canonical executable path.
//!
//! Only Linux on x86_64 is supported (the seccomp policy and loader paths are
//! architecture-specific).

#![deny(missing_docs)]

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
compile_error!("agent-runner-plugin-host supports only Linux on x86_64");

pub mod agent_confine;
pub mod agent_policy;
mod capabilities;
pub mod cgroup;
pub mod egress_bridge;
pub mod env;
pub mod launch;
pub mod layers;
pub mod notify;
pub mod pid_namespace;
pub mod pids_limit;
pub mod pin;
pub mod policy;
pub mod probe;
pub mod resolve;
mod syscall_table;
pub mod user_namespace;
pub mod write_limits;

pub use launch::{kill_group, spawn, spawn_with_listener, LaunchError, LaunchSpec};
pub use notify::{syscall_name, DenialListener, Denied};
pub use pin::{open_and_hash, Interpreter, PinError, Sha256Pin, VerifiedExecutable};
pub use probe::{probe, Capabilities, Tier};
pub use resolve::{resolve_executable, ResolveError};
