//! The launcher's side: read the plan, apply each step in this fresh single-threaded
//! process, run the target. The order is the one of [`crate::launcher`]'s module docs.

use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use crate::agent::confine::{
    become_init_of_agent, bind, bind_over_itself, bind_read_only, cover_link, make_mounts_private,
};
use crate::agent::egress_bridge::EgressBridge;
use crate::agent::policy::agent_seccomp_program;
use crate::common::capabilities::drop_all as drop_capabilities;
use crate::common::group_guard::fork_guard;
use crate::common::landlock::{ruleset, FsAccess, POLICY_LANDLOCK_ABI};
use crate::common::pid_namespace::die_with_supervisor;
use crate::common::plan::{
    Exec, Failure, Fd, Limit, Plan, SeccompChoice, UserNamespace, BUILD_ID, PLAN_FORMAT,
};
use crate::common::probe::kernel_landlock_abi;
use crate::common::seccomp::{install_filter, SeccompProgram};
use crate::common::user_namespace::UserNamespacePlan;
use crate::common::write_limits::{ignore_sigxfsz, PrivateTmp};
use crate::host::policy::{seccomp_program_for, DenyAction};

/// Reads the plan from `plan_fd` (a memory file, read from offset 0) and closes it.
///
/// # Errors
/// A [`Failure`] of step `plan`: unreadable, not JSON of this format, or of another build.
pub(crate) fn read_plan(plan_fd: RawFd) -> Result<Plan, Failure> {
    // SAFETY: the spawn passed this descriptor to us and nothing else in this process
    // owns it; it is closed when `file` drops.
    let mut file = unsafe { std::fs::File::from_raw_fd(plan_fd) };
    let mut text = Vec::new();
    file.read_to_end(&mut text)
        .map_err(|e| Failure::os("plan", &e))?;
    let value: serde_json::Value = serde_json::from_slice(&text).map_err(|e| Failure {
        step: "plan".into(),
        errno: None,
        message: format!("not a plan: {e}"),
    })?;
    let format = value.get("format").and_then(|f| f.as_u64());
    let build = value.get("build_id").and_then(|b| b.as_str());
    if format != Some(u64::from(PLAN_FORMAT)) || build != Some(BUILD_ID) {
        return Err(Failure {
            step: "plan".into(),
            errno: None,
            message: format!(
                "this launcher (plan format {PLAN_FORMAT}, build {BUILD_ID}) was not built with the supervisor that sent the plan (format {}, build {}); install agent-runner and plugin-host from the same build",
                format.map_or("?".into(), |f| f.to_string()),
                build.unwrap_or("?")
            ),
        });
    }
    serde_json::from_value(value).map_err(|e| Failure {
        step: "plan".into(),
        errno: None,
        message: format!("malformed plan: {e}"),
    })
}

/// An inherited descriptor of the plan, close-on-exec again (only [`Plan::inherit`] reaches
/// the target).
fn take(fd: Fd) -> Result<OwnedFd, Failure> {
    // SAFETY: the plan names descriptors the spawn passed to this process for this use;
    // each is taken once.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    set_cloexec(fd, true).map_err(|e| Failure::os("descriptors", &e))?;
    Ok(owned)
}

/// Sets or clears `FD_CLOEXEC` on `fd`.
pub(crate) fn set_cloexec(fd: RawFd, on: bool) -> std::io::Result<()> {
    let flag = if on { libc::FD_CLOEXEC } else { 0 };
    // SAFETY: fcntl on a descriptor number; no memory involved.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, flag) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Runs `step`, naming it in the failure.
fn step(name: &str, result: std::io::Result<()>) -> Result<(), Failure> {
    result.map_err(|e| Failure::os(name, &e))
}

/// `argv` and `envp` as C strings.
struct ExecArgs {
    argv: Vec<CString>,
    envp: Vec<CString>,
}

impl ExecArgs {
    fn new(argv: &[Vec<u8>], env: &[Vec<u8>]) -> Result<Self, Failure> {
        let nul = |what: &str| Failure {
            step: "exec".into(),
            errno: None,
            message: format!("{what} contains a NUL byte"),
        };
        let argv = argv
            .iter()
            .map(|a| CString::new(a.clone()).map_err(|_| nul("an argument")))
            .collect::<Result<Vec<_>, _>>()?;
        let envp = env
            .iter()
            .map(|e| CString::new(e.clone()).map_err(|_| nul("an environment entry")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ExecArgs { argv, envp })
    }
}

/// Applies `plan` and runs its target. Returns only with the failure (the target never
/// ran); a successful exec does not return.
pub(crate) fn apply(plan: Plan) -> Failure {
    match apply_steps(plan) {
        Ok(never) => match never {},
        Err(failure) => failure,
    }
}

fn apply_steps(plan: Plan) -> Result<std::convert::Infallible, Failure> {
    // Everything that reads the file system or allocates comes first, in the namespaces
    // the supervisor sees: the ruleset, the program, the exec arguments.
    let verified = plan
        .landlock
        .as_ref()
        .and_then(|l| l.verified)
        .map(|fd| {
            // SAFETY: a descriptor of the plan that stays open for the exec (the exec
            // descriptor itself, taken below); borrowed only to build the ruleset.
            unsafe { std::fs::File::from_raw_fd(fd) }
        })
        .map(std::mem::ManuallyDrop::new);
    let abi = kernel_landlock_abi().unwrap_or(0);
    let landlock = match &plan.landlock {
        Some(l) => {
            let grants: Vec<_> = l.grants.iter().map(|g| g.to_fs_grant()).collect();
            Some(
                ruleset(&grants, verified.as_deref(), &l.tcp, abi).map_err(|e| Failure {
                    step: "landlock".into(),
                    errno: None,
                    message: e.to_string(),
                })?,
            )
        }
        None => None,
    };
    let seccomp = match &plan.seccomp {
        Some(s) => Some((program(s.program)?, s.listener_to.map(take).transpose()?)),
        None => None,
    };
    let (exec_fd, path, args) = match &plan.exec {
        Exec::Descriptor { fd, argv, env } => (Some(take(*fd)?), None, ExecArgs::new(argv, env)?),
        Exec::Path { path, argv, env } => {
            let path = CString::new(path.as_os_str().as_bytes()).map_err(|_| Failure {
                step: "exec".into(),
                errno: None,
                message: "the program's path contains a NUL byte".into(),
            })?;
            (None, Some(path), ExecArgs::new(argv, env)?)
        }
    };
    let private_tmp = match &plan.private_tmp {
        Some(t) => {
            let level = abi.min(POLICY_LANDLOCK_ABI);
            let rights = FsAccess::ReadWrite
                .rights(landlock::ABI::from(level as i32))
                .bits();
            Some(
                PrivateTmp::new(&t.dir, t.max_mb, t.unshare, rights).ok_or_else(|| Failure {
                    step: "private tmp".into(),
                    errno: None,
                    message: "the TMPDIR path contains a NUL byte".into(),
                })?,
            )
        }
        None => None,
    };
    let c_path = |path: &std::path::Path| {
        CString::new(path.as_os_str().as_bytes()).map_err(|_| Failure {
            step: "read-only mounts".into(),
            errno: None,
            message: format!("{} contains a NUL byte", path.display()),
        })
    };
    let binds = plan
        .binds
        .iter()
        .map(|b| Ok((c_path(&b.source)?, c_path(&b.target)?)))
        .collect::<Result<Vec<_>, Failure>>()?;
    let pinned = plan
        .pinned
        .iter()
        .map(|p| c_path(p))
        .collect::<Result<Vec<_>, _>>()?;
    let read_only = plan
        .read_only
        .iter()
        .map(|f| {
            let cover = f.cover.as_deref().map(c_path).transpose()?;
            c_path(&f.path).map(|p| (p, f.locked as libc::c_ulong, cover))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mounts = !binds.is_empty() || !pinned.is_empty() || !read_only.is_empty();
    let cwd = if mounts {
        Some(std::env::current_dir().map_err(|e| Failure::os("read-only mounts", &e))?)
    } else {
        None
    };
    let supervisor = take(plan.supervisor)?;
    let cgroup = plan.cgroup_procs.map(take).transpose()?;
    let guard = plan.group_guard.map(take).transpose()?;
    let egress = match &plan.egress {
        Some(e) => Some(
            EgressBridge::from_parts(take(e.forwarder)?, e.user_namespace, &e.ports)
                .map_err(|e| Failure::os("egress bridge", &e))?,
        ),
        None => None,
    };
    let user_ns = plan.user_namespace.map(|u| match u {
        UserNamespace::Host { pids_max } => UserNamespacePlan::new(pids_max),
        UserNamespace::Agent => UserNamespacePlan::for_agent(),
    });

    if let Some(procs) = &cgroup {
        step("cgroup", join_cgroup(procs))?;
    }
    if let Some(read) = guard {
        step("group guard", fork_guard(read))?;
    }
    step("rlimits", set_rlimits(&plan.rlimits))?;
    step("die with the supervisor", die_with_supervisor(&supervisor))?;
    if let Some(bridge) = &egress {
        bridge.enter().map_err(|e| Failure {
            step: "egress bridge".into(),
            errno: Some(e.errno),
            message: e.to_string(),
        })?;
    }
    if let Some(user_ns) = &user_ns {
        step("user namespace", user_ns.enter())?;
        step("die with the supervisor", die_with_supervisor(&supervisor))?;
    }
    if plan.mount_namespace {
        step(
            "mount namespace",
            unshare(nix::sched::CloneFlags::CLONE_NEWNS),
        )?;
    }
    if mounts {
        step("read-only mounts", make_mounts_private())?;
    }
    for (source, target) in &binds {
        step("shadow home", bind(source, target))?;
    }
    for path in &pinned {
        step("pinned directories", bind_over_itself(path))?;
    }
    for (path, locked, cover) in &read_only {
        match cover {
            Some(cover) => step("read-only mounts", cover_link(cover, path))?,
            None => step("read-only mounts", bind_read_only(path, *locked))?,
        }
    }
    if let Some(cwd) = &cwd {
        // The working directory still refers to the mounts beneath: enter it again through
        // the new ones, or relative paths would bypass them.
        step("read-only mounts", std::env::set_current_dir(cwd))?;
    }
    if let Some(tmp) = &private_tmp {
        step(
            "private tmp",
            tmp.mount(landlock.as_ref().map(|fd| fd.as_raw_fd())),
        )?;
    }
    if plan.private_ipc_uts {
        step(
            "ipc and uts namespaces",
            unshare(nix::sched::CloneFlags::CLONE_NEWIPC | nix::sched::CloneFlags::CLONE_NEWUTS),
        )?;
    }
    if plan.init {
        step("init", become_init_of_agent())?;
        step("die with the supervisor", die_with_supervisor(&supervisor))?;
    }
    if plan.ignore_sigxfsz {
        step("SIGXFSZ", ignore_sigxfsz())?;
    }
    if plan.drop_capabilities {
        step("capabilities", drop_capabilities())?;
    }
    if plan.no_new_privs {
        step("no_new_privs", no_new_privs())?;
    }
    for fd in &plan.inherit {
        step("inherited descriptors", set_cloexec(*fd, false))?;
    }
    if let Some(ruleset) = &landlock {
        // SAFETY: landlock_restrict_self(ruleset_fd, flags=0) on a descriptor we own.
        let r =
            unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) };
        step("landlock", cvt(r as libc::c_int))?;
    }
    if let Some((program, listener_to)) = &seccomp {
        step("seccomp", install_filter(program, listener_to.as_ref()))?;
    }
    // The status pipe is close-on-exec: a successful exec closes it empty.
    let errno = match (&exec_fd, &path) {
        (Some(fd), _) => nix::unistd::execveat(
            fd,
            c"",
            &args.argv,
            &args.envp,
            nix::fcntl::AtFlags::AT_EMPTY_PATH,
        )
        .unwrap_err(),
        (None, Some(path)) => nix::unistd::execve(path, &args.argv, &args.envp).unwrap_err(),
        (None, None) => unreachable!("an Exec is a descriptor or a path"),
    };
    Err(Failure::os("exec", &std::io::Error::from(errno)))
}

/// The seccomp program of `choice`.
fn program(choice: SeccompChoice) -> Result<SeccompProgram, Failure> {
    let built = match choice {
        SeccompChoice::HostKill => seccomp_program_for(DenyAction::KillProcess),
        SeccompChoice::HostNotify => seccomp_program_for(DenyAction::Notify),
        SeccompChoice::Agent(switches) => agent_seccomp_program(switches),
    };
    built.map_err(|e| Failure {
        step: "seccomp".into(),
        errno: None,
        message: e.to_string(),
    })
}

/// `unshare(flags)` of this single-threaded process.
fn unshare(flags: nix::sched::CloneFlags) -> std::io::Result<()> {
    nix::sched::unshare(flags).map_err(std::io::Error::from)
}

/// `PR_SET_NO_NEW_PRIVS`: nothing executed from here on gains privileges.
fn no_new_privs() -> std::io::Result<()> {
    nix::sys::prctl::set_no_new_privs().map_err(std::io::Error::from)
}

/// `0` → `Ok`, else the last OS error.
fn cvt(r: libc::c_int) -> std::io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Writes `0` to `procs`, an open `cgroup.procs`: this process moves into that cgroup, so
/// nothing the target starts runs outside it (kernel `cgroup-v2.rst`, "Processes").
fn join_cgroup(procs: &OwnedFd) -> std::io::Result<()> {
    match nix::unistd::write(procs, b"0") {
        Ok(1) => Ok(()),
        Ok(_) => Err(std::io::ErrorKind::WriteZero.into()),
        Err(e) => Err(e.into()),
    }
}

/// Sets each limit as soft and hard value.
fn set_rlimits(limits: &[(Limit, u64)]) -> std::io::Result<()> {
    use nix::sys::resource::{setrlimit, Resource};
    for &(limit, value) in limits {
        let resource = match limit {
            Limit::CoreSize => Resource::RLIMIT_CORE,
            Limit::OpenFiles => Resource::RLIMIT_NOFILE,
            Limit::AddressSpace => Resource::RLIMIT_AS,
            Limit::FileSize => Resource::RLIMIT_FSIZE,
        };
        setrlimit(resource, value, value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::plan::Plan;
    use std::io::Write;
    use std::os::fd::IntoRawFd;

    /// A memory file holding `text`, read from offset 0, as the spawn hands it over.
    fn plan_fd(text: &[u8]) -> RawFd {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(text).unwrap();
        use std::io::Seek;
        file.rewind().unwrap();
        file.into_raw_fd()
    }

    fn plan() -> Plan {
        Plan::program(
            "check",
            9,
            "/bin/true".into(),
            vec![b"true".to_vec()],
            vec![],
        )
    }

    #[test]
    fn a_plan_of_this_build_is_read_whole() {
        let text = serde_json::to_vec(&plan()).unwrap();
        let read = read_plan(plan_fd(&text)).unwrap();
        assert_eq!(read.name, "check");
        assert_eq!(read.supervisor, 9);
        assert!(
            matches!(read.exec, Exec::Path { ref path, .. } if path.as_os_str() == "/bin/true")
        );
    }

    #[test]
    fn a_plan_of_another_build_or_format_is_refused() {
        let mut other_build = serde_json::to_value(plan()).unwrap();
        other_build["build_id"] = "0000000000000000".into();
        let mut other_format = serde_json::to_value(plan()).unwrap();
        other_format["format"] = (PLAN_FORMAT + 1).into();
        for (value, says) in [
            (other_build, "build 0000000000000000"),
            (other_format, &*format!("format {}", PLAN_FORMAT + 1)),
        ] {
            let failure = read_plan(plan_fd(&serde_json::to_vec(&value).unwrap())).unwrap_err();
            assert_eq!(failure.step, "plan");
            assert!(failure.message.contains(says), "{failure}");
            assert!(failure.message.contains("same build"), "{failure}");
        }
    }

    #[test]
    fn a_plan_that_is_not_one_is_refused_with_the_reason() {
        for (text, says) in [
            (&b"not json"[..], "not a plan"),
            (b"{\"format\": 1}", "was not built with"),
        ] {
            let failure = read_plan(plan_fd(text)).unwrap_err();
            assert_eq!(failure.step, "plan");
            assert!(failure.message.contains(says), "{failure}");
        }
        let mut missing = serde_json::to_value(plan()).unwrap();
        missing.as_object_mut().unwrap().remove("exec");
        let failure = read_plan(plan_fd(&serde_json::to_vec(&missing).unwrap())).unwrap_err();
        assert!(failure.message.contains("malformed plan"), "{failure}");
    }

    #[test]
    fn exec_arguments_refuse_a_nul_byte() {
        let args = ExecArgs::new(&[b"a".to_vec(), b"b".to_vec()], &[b"K=v".to_vec()]).unwrap();
        assert_eq!(args.argv, [c"a", c"b"]);
        assert_eq!(args.envp, [c"K=v"]);
        let failure = ExecArgs::new(&[b"a\0b".to_vec()], &[]).err().unwrap();
        assert!(failure.message.contains("NUL"), "{failure}");
    }

    #[test]
    fn each_seccomp_choice_builds_its_program() {
        for choice in [
            SeccompChoice::HostKill,
            SeccompChoice::HostNotify,
            SeccompChoice::Agent(Default::default()),
        ] {
            assert!(!program(choice).unwrap().is_empty());
        }
    }
}
