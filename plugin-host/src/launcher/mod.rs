//! The `plugin-host` launcher: one small executable that confines hosts, the agent and goal
//! checks in its own fresh process, then runs them (docs/security.md "The launcher").
//!
//! The supervisor is multi-threaded; between `fork` and `exec` only raw system calls are
//! safe there. So it does not confine anything itself: it writes a [`crate::common::plan::Plan`] (grants,
//! the seccomp program to build, limits, namespaces, the environment, what to run) and
//! starts this launcher on it ([`crate::common::launcher::Launcher::command`]), whose only pre-exec step
//! keeps the plan's descriptors open. The launcher is single-threaded and has no async
//! runtime; it checks the plan's format and build ([`BUILD_ID`]), builds the Landlock
//! ruleset and the seccomp program, and applies, in this order, what the plan asks for:
//!
//! 1. join a cgroup (a host's `pids` cgroup, the round's cgroup);
//! 2. fork a guard into the process group, which kills the group if the supervisor dies
//!    ([`crate::common::group_guard`]);
//! 3. resource limits;
//! 4. `PR_SET_PDEATHSIG` = `SIGKILL`, and the supervisor's pidfd must show it alive;
//! 5. the agent's network namespace with its forwarder ([`crate::agent::egress_bridge`]);
//! 6. user, PID and mount namespaces and a reaper (unprivileged;
//!    [`crate::common::user_namespace`]), then step 4 again;
//! 7. a mount namespace (root), the read-only bind mounts (the agent's config file);
//! 8. a private `tmpfs` over TMPDIR (hosts; [`crate::common::write_limits`]);
//! 9. IPC and UTS namespaces (root hosts);
//! 10. an init: PID 1 of the PID namespace stays behind and reaps (the agent, goal checks;
//!     [`crate::agent::confine`]), then step 4 again;
//! 11. `SIGXFSZ` ignored, every capability dropped, `PR_SET_NO_NEW_PRIVS`;
//! 12. the descriptors the target inherits (a script host's verified script);
//! 13. `landlock_restrict_self`;
//! 14. the seccomp filter, its user-notification listener sent to the supervisor over an
//!     inherited socket and closed here;
//! 15. the exec: a host's verified descriptor (`execveat`, the bytes hashed are the bytes
//!     run), or the agent's or a goal check's program by the path the supervisor resolved.
//!
//! Root's PID namespace is made by the supervisor's spawning thread for its next child, so
//! the launcher, and the target after it, is PID 1 of it ([`crate::common::pid_namespace`]).
//!
//! A step that fails ends the launcher with status 127 after writing a
//! [`crate::common::plan::Failure`] to the status pipe; the target never runs. A successful exec closes
//! the pipe empty (it is close-on-exec), which is how the supervisor knows the target runs.

mod run;

use std::os::fd::RawFd;

use crate::common::plan::{BUILD_ID, PLAN_FORMAT};

/// The launcher's `main`: `plugin-host --plan-fd N --status-fd M` runs a plan;
/// `plugin-host --build-id` prints [`BUILD_ID`] (from its section,
/// [`crate::common::build_note`]); `--version` the version and build.
/// Never returns.
pub fn main() -> ! {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["--build-id"] => {
            // The bytes of its section, which the supervisor reads without running it.
            println!("{}", crate::common::build_note::embedded());
            std::process::exit(0)
        }
        ["--version"] => {
            println!(
                "plugin-host {} (build {BUILD_ID}, plan format {PLAN_FORMAT})",
                env!("CARGO_PKG_VERSION")
            );
            std::process::exit(0)
        }
        ["--plan-fd", plan, "--status-fd", status] => {
            match (plan.parse::<RawFd>(), status.parse::<RawFd>()) {
                (Ok(plan), Ok(status)) => launch(plan, status),
                _ => usage(),
            }
        }
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!(
        "plugin-host: the confinement launcher of agent-runner, started by agent-runner itself.\n\
         usage: plugin-host --build-id | --version"
    );
    std::process::exit(2)
}

/// Runs the plan on `plan_fd`, reporting a failure on `status_fd`. Never returns.
fn launch(plan_fd: RawFd, status_fd: RawFd) -> ! {
    // The status pipe must close at the target's exec, and be held by nothing we fork.
    if run::set_cloexec(status_fd, true).is_err() {
        std::process::exit(127);
    }
    let failure = match run::read_plan(plan_fd) {
        Ok(plan) => run::apply(plan),
        Err(failure) => failure,
    };
    let report = serde_json::to_vec(&failure).unwrap_or_default();
    // SAFETY: write of a live buffer to the inherited status descriptor.
    unsafe { libc::write(status_fd, report.as_ptr().cast(), report.len()) };
    std::process::exit(127)
}
