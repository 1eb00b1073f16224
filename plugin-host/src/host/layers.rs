//! Each confinement layer a host gets on this machine, on or off with the reason, for
//! `doctor` and `peek` (docs/security.md "Layers").

use crate::common::layers::{landlock_layer, layer, Layer};
use crate::common::pids_limit::pids_cgroup;
use crate::common::probe::Tier;
use crate::common::user_namespace::user_namespaces;

/// The layers of a host launched at `tier` by this process, on a kernel with Landlock ABI
/// `landlock_abi` (0: none). Probes privileges (root, user namespaces, the `pids` cgroup)
/// the way [`crate::host::launch::spawn`] decides.
pub fn layers(tier: Tier, landlock_abi: u32) -> Vec<Layer> {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let userns = if root { Ok(()) } else { user_namespaces() };
    let mut out = Vec::new();
    let mut covers = vec!["filesystem (only the documented grants)"];
    if landlock_abi >= 4 {
        covers.push("TCP bind/connect denied");
    }
    if landlock_abi >= 6 {
        covers.push("abstract UNIX sockets and signals scoped to the host");
    }
    out.push(landlock_layer(tier, landlock_abi, &covers));
    out.push(if tier.seccomp() {
        layer(
            "seccomp",
            true,
            format!(
                "allow-list of {} system calls (policy::SECCOMP_ALLOW); any other call kills the host",
                crate::host::policy::SECCOMP_ALLOW.len()
            ),
        )
    } else {
        layer(
            "seccomp",
            false,
            format!("not applied at tier {}", tier.as_str()),
        )
    });
    out.push(match (&userns, root) {
        (_, true) => layer("pid_namespace", true, "own PID namespace (root)"),
        (Ok(()), false) => layer(
            "pid_namespace",
            true,
            "own user and PID namespaces (unprivileged user namespaces)",
        ),
        (Err(reason), false) => layer("pid_namespace", false, reason.to_string()),
    });
    out.push(match (root, pids_cgroup(), &userns) {
        (true, Ok(dir), _) => layer(
            "process_bound",
            true,
            format!("pids cgroup below {} (pids_max)", dir.display()),
        ),
        (true, Err(reason), _) => layer(
            "process_bound",
            false,
            format!("{reason}; RLIMIT_NPROC does not apply to root"),
        ),
        (false, _, Ok(())) => layer(
            "process_bound",
            true,
            "RLIMIT_NPROC = pids_max inside the host's own user namespace",
        ),
        (false, _, Err(reason)) => layer(
            "process_bound",
            false,
            format!("no pids cgroup and no user namespace: {reason}"),
        ),
    });
    out.push(layer("memory_bound", true, "RLIMIT_AS = memory_max_mb"));
    out.push(if tier.seccomp() {
        layer("unix_socket_rule", true, "socket(AF_UNIX) fails (EACCES); connect, bind, listen, accept kill; only socketpair(AF_UNIX, SOCK_STREAM)")
    } else {
        layer("unix_socket_rule", false, "needs seccomp: no Landlock ABI up to 7 restricts connect() to a pathname UNIX socket")
    });
    out.push(if root || userns.is_ok() {
        layer("write_limits", true, "file_max_mb per file (RLIMIT_FSIZE, EFBIG); TMPDIR a private tmpfs of tmp_max_mb; state dir measured against state_max_mb")
    } else {
        layer("write_limits", true, "file_max_mb per file (RLIMIT_FSIZE, EFBIG); TMPDIR and state dir measured by the supervisor (no mount namespace)")
    });
    out
}
