//! What ended a host, in the words `hook_failed.error_message` and `plugin check`'s report
//! use (docs/protocol.md §6, "What the message says"): the call in flight, the exit status
//! or the signal by name, and the config key of the bound that ended it. One place for
//! each of these rules; `host` and `plugin check` only assemble them.

use agent_runner_protocol::Family;
use std::fmt;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::HostConfig;

/// What a host's stderr says when an allocation failed: Python's `MemoryError`, Rust's
/// `memory allocation of N bytes failed`, glibc's `ENOMEM` text, C++'s `std::bad_alloc`,
/// Node's `JavaScript heap out of memory`, and the generic "out of memory". Matched
/// without regard to case.
const OUT_OF_MEMORY_WORDS: &[&str] = &[
    "memoryerror",
    "memory allocation of",
    "cannot allocate memory",
    "bad_alloc",
    "out of memory",
];

/// The name of `signal` (`SIGKILL`, `SIGSEGV`, …; signal(7), as `nix` spells it),
/// `SIGRTMIN+n` for a real-time one, or `signal N` for a number Linux does not name.
pub(crate) fn signal_name(signal: i32) -> String {
    match nix::sys::signal::Signal::try_from(signal) {
        Ok(named) => named.as_str().to_owned(),
        Err(_) if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&signal) => {
            format!("SIGRTMIN+{}", signal - libc::SIGRTMIN())
        }
        Err(_) => format!("signal {signal}"),
    }
}

/// How a process ended, for "the host … before answering …": `exited with status N`, or
/// `died of SIGSEGV`.
pub(crate) fn ending(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("died of {}", signal_name(signal)),
        (None, None) => "ended".to_owned(),
    }
}

/// Why the sandbox killed a host that called `syscall` (after "killed by the sandbox").
pub(crate) fn sandbox_denial(syscall: &str) -> String {
    format!("it called {syscall}(), which a confined host may not (docs/protocol.md §8)")
}

/// The call a host was answering: its method and, for a hook call, the hook's name.
#[derive(Clone, Debug)]
pub(crate) struct InFlight {
    /// The JSON-RPC method (`initialize`, `spawn_hook/before_spawn`, …).
    pub(crate) method: &'static str,
    /// The hook called; `None` for `initialize`.
    pub(crate) hook: Option<String>,
}

impl fmt::Display for InFlight {
    /// `initialize`, or `spawn_hook/before_spawn (hook gate)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.hook {
            Some(hook) => write!(f, "{} (hook {hook})", self.method),
            None => f.write_str(self.method),
        }
    }
}

/// How long a call may take, and the config key that says so, as the timeout message
/// names it (docs/configuration.md, `[plugins.hosts.<name>]`).
#[derive(Clone, Debug)]
pub(crate) struct Deadline {
    /// The time bound.
    pub(crate) after: Duration,
    /// Where it comes from: `init_timeout_s = 5 of [plugins.hosts.h]`, `timeout_s = 1 of
    /// …`, or the family default when `timeout_s` is unset.
    pub(crate) key: String,
}

impl Deadline {
    /// `initialize`'s bound: `init_timeout_s` (default 5 s, already applied in `cfg`).
    pub(crate) fn initialize(cfg: &HostConfig) -> Deadline {
        Deadline {
            after: cfg.init_timeout,
            key: format!(
                "init_timeout_s = {} of [plugins.hosts.{}]",
                cfg.init_timeout.as_secs(),
                cfg.name
            ),
        }
    }

    /// A hook call's bound: `timeout_s` of the host's table, else the family's default.
    pub(crate) fn call(cfg: &HostConfig, family: Family) -> Deadline {
        let after = cfg.call_timeout(family);
        let key = match cfg.timeout {
            Some(t) => format!(
                "timeout_s = {} of [plugins.hosts.{}]",
                t.as_secs(),
                cfg.name
            ),
            None => format!(
                "the {} default; timeout_s of [plugins.hosts.{}] is unset",
                family.as_str(),
                cfg.name
            ),
        };
        Deadline { after, key }
    }

    /// `no answer to <call> within N s (<key>)`.
    pub(crate) fn missed(&self, call: &InFlight) -> String {
        format!(
            "no answer to {call} within {} s ({})",
            self.after.as_secs_f32(),
            self.key
        )
    }
}

/// The bounds of one host's table that can end it, for naming them when they did.
#[derive(Clone, Debug)]
pub(crate) struct Bounds {
    /// `[plugins.hosts.<name>]`.
    table: String,
    /// `memory_max_mb`: `RLIMIT_AS`, so an allocation past it fails.
    memory_max_mb: u64,
    /// `state_max_mb`: the state directory's bound, enforced by a kill.
    state_max_mb: u64,
    /// `file_max_mb`: `RLIMIT_FSIZE` (`SIGXFSZ` if the host restored its default action).
    file_max_mb: u64,
    /// Set by the host's write watch before it kills the group (`super::write_watch`).
    write_breach: Arc<AtomicBool>,
}

impl Bounds {
    /// The bounds of `cfg`, with the flag its write watch sets.
    pub(crate) fn of(cfg: &HostConfig, write_breach: Arc<AtomicBool>) -> Bounds {
        Bounds {
            table: format!("[plugins.hosts.{}]", cfg.name),
            memory_max_mb: cfg.memory_max_mb,
            state_max_mb: cfg.writes.state_max_mb,
            file_max_mb: cfg.writes.file_max_mb,
            write_breach,
        }
    }

    /// Which bound a death by `signal` was, when one was: `SIGKILL` after the write watch
    /// tripped is the supervisor enforcing `state_max_mb`; any other `SIGKILL` came from
    /// outside (the supervisor kills only after a failure); `SIGXFSZ` is `file_max_mb`.
    pub(crate) fn signal_cause(&self, signal: i32) -> Option<String> {
        match signal {
            libc::SIGKILL if self.write_breach.load(Ordering::SeqCst) => Some(format!(
                "the supervisor killed it: its state directory went over state_max_mb = {} of {}",
                self.state_max_mb, self.table
            )),
            libc::SIGKILL => Some(
                "not sent by the supervisor: the kernel's OOM killer or another process".into(),
            ),
            libc::SIGXFSZ => Some(format!(
                "a file it wrote went over file_max_mb = {} of {}",
                self.file_max_mb, self.table
            )),
            _ => None,
        }
    }

    /// `memory_max_mb` named when the host's last stderr lines say memory ran out (see
    /// [`OUT_OF_MEMORY_WORDS`]).
    pub(crate) fn stderr_cause(&self, tail: &[String]) -> Option<String> {
        let ran_out = tail.iter().any(|line| {
            let line = line.to_ascii_lowercase();
            OUT_OF_MEMORY_WORDS.iter().any(|w| line.contains(w))
        });
        ran_out.then(|| {
            format!(
                "its stderr says memory ran out: memory_max_mb = {} of {} bounds its address space",
                self.memory_max_mb, self.table
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named() {
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(libc::SIGPWR), "SIGPWR");
        assert_eq!(signal_name(libc::SIGRTMIN() + 2), "SIGRTMIN+2");
        assert_eq!(signal_name(99), "signal 99");
        assert_eq!(
            ending(ExitStatus::from_raw(libc::SIGABRT)),
            "died of SIGABRT"
        );
        assert_eq!(ending(ExitStatus::from_raw(3 << 8)), "exited with status 3");
    }
}
