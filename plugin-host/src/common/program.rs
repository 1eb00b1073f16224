//! A program (the agent of a round, a goal check) started through the `plugin-host`
//! launcher: by the path the supervisor resolved, with an environment given in full, and
//! whatever else the caller adds to its plan (a cgroup, a guard of its process group, the
//! agent's network bridge and confinement).

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use crate::common::fd_passing::above_stdio;
use crate::common::group_guard::GroupGuard;
use crate::common::launcher::{Launcher, LauncherError, Pending};
use crate::common::pid_namespace::own_pidfd;
use crate::common::plan::{env_entry, Egress, Plan};

/// One launch of a program: its plan and the descriptors the launcher inherits for it.
/// Keep it until the launch is confirmed ([`Pending::confirm`]), then drop it: the
/// descriptors it owns (the guard's read end, the bridge's forwarder end) must then be held
/// only by the launched process.
#[derive(Debug)]
pub struct Program {
    plan: Plan,
    fds: Vec<RawFd>,
    owned: Vec<OwnedFd>,
}

impl Program {
    /// Runs `path` with `argv` (`argv[0]` as given) and exactly `env`, dying with this
    /// process (`PR_SET_PDEATHSIG`). `name` names it in messages.
    ///
    /// # Errors
    /// A pidfd of this process cannot be opened.
    pub fn new(
        name: &str,
        path: PathBuf,
        argv: &[String],
        env: &[(OsString, OsString)],
    ) -> std::io::Result<Program> {
        let supervisor = own_pidfd().and_then(above_stdio)?;
        let plan = Plan::program(
            name,
            supervisor.as_raw_fd(),
            path,
            argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
            env.iter().map(|(k, v)| env_entry(k, v)).collect(),
        );
        Ok(Program {
            plan,
            fds: vec![supervisor.as_raw_fd()],
            owned: vec![supervisor],
        })
    }

    /// The plan, for a caller that adds steps of its own (the agent's confinement); the
    /// descriptors those steps name go to [`Program::pass`].
    pub fn plan_mut(&mut self) -> &mut Plan {
        &mut self.plan
    }

    /// Passes `fds` (owned by the caller, close-on-exec, above stdio) to the launcher.
    pub fn pass(&mut self, fds: impl IntoIterator<Item = RawFd>) {
        self.fds.extend(fds);
    }

    /// The program joins the cgroup whose `cgroup.procs` is `procs` before anything else.
    pub fn join_cgroup(&mut self, procs: OwnedFd) {
        self.plan.cgroup_procs = Some(procs.as_raw_fd());
        self.take(procs);
    }

    /// A guard process in the program's process group kills the group when the returned
    /// [`GroupGuard`] drops or this process dies.
    ///
    /// # Errors
    /// The pipe cannot be made.
    pub fn group_guard(&mut self) -> std::io::Result<GroupGuard> {
        let (guard, read) = GroupGuard::new()?;
        self.plan.group_guard = Some(read.as_raw_fd());
        self.take(read);
        Ok(guard)
    }

    /// The program enters a network namespace with only loopback and a forwarder on
    /// `forwarder` (the agent's egress bridge; `ids`: also a user namespace around it;
    /// `ports`: the loopback ports it forwards besides the proxy's).
    pub fn egress(&mut self, forwarder: OwnedFd, ids: Option<(u32, u32)>, ports: Vec<u16>) {
        self.plan.egress = Some(Egress {
            forwarder: forwarder.as_raw_fd(),
            user_namespace: ids,
            ports,
        });
        self.take(forwarder);
    }

    /// The launcher's command for this program (see [`Launcher::command`]); the caller sets
    /// stdio, the working directory and the process group, spawns it, and confirms.
    ///
    /// # Errors
    /// [`LauncherError`]: no launcher, or the plan cannot be written.
    pub fn command(&self) -> Result<(std::process::Command, Pending), LauncherError> {
        Launcher::get()?.command(&self.plan, &self.fds)
    }

    fn take(&mut self, fd: OwnedFd) {
        self.fds.push(fd.as_raw_fd());
        self.owned.push(fd);
    }
}
