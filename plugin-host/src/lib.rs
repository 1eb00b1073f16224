//! Confinement for agent-runner: plugin hosts, the agent of each round and its goal checks.
//!
//! A plugin *host* is a third-party program the supervisor talks to over newline-delimited
//! JSON-RPC on stdio (protocol v1); the *agent* is the coding CLI a round runs. Neither is
//! confined by the supervisor's own process: the supervisor writes a plan
//! ([`common::plan`]) and starts the `plugin-host` launcher on it
//! ([`common::launcher`]), a small single-threaded executable ([`launcher`]) that applies
//! every layer in its own fresh process and then runs the target. So, before a host's
//! first instruction:
//!
//! * it runs exactly the bytes whose sha256 was pinned ([`host::pin`]): the file is opened
//!   once, hashed from that descriptor, and that same descriptor is executed with
//!   `execveat(fd, "", AT_EMPTY_PATH)`;
//! * Landlock and seccomp are in force ([`host::policy`], [`common::landlock`]);
//! * its environment holds only the allowlist of `docs/protocol.md` §8 ([`host::env`]);
//! * resource limits apply and it dies with the supervisor, and every process it starts dies
//!   with it (it is PID 1 of its own PID namespace);
//! * with [`host::launch::spawn_with_listener`], a seccomp denial is named: the supervisor
//!   learns which system call stopped the host ([`common::notify`]).
//!
//! The agent is confined with the same building blocks and a policy of its own
//! ([`agent::policy`], [`agent::confine`]). [`host`] and [`agent`] use [`common`] and never
//! each other; only the launcher uses all three.
//!
//! [`common::probe`] tells which confinement layers this kernel offers; [`host::resolve`]
//! turns a configured command into a canonical executable path.
//!
//! Only Linux on x86_64 is supported (the seccomp policy and loader paths are
//! architecture-specific).

#![deny(missing_docs)]

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
compile_error!("agent-runner-plugin-host supports only Linux on x86_64");

pub mod agent;
pub mod common;
pub mod host;
pub mod launcher;

pub use common::launcher::{Launcher, LauncherError};
pub use common::notify::{syscall_name, DenialListener, Denied, Observed};
pub use common::probe::{probe, Capabilities, Tier};
pub use host::launch::{kill_group, spawn, spawn_with_listener, LaunchError, LaunchSpec};
pub use host::pin::{open_and_hash, Interpreter, PinError, Sha256Pin, VerifiedExecutable};
pub use host::resolve::{resolve_executable, ResolveError};
