//! Who may talk to the supervisor's own sockets (docs/security.md "UNIX sockets"): never a
//! host, nor anything a host started.
//!
//! Hosts cannot create UNIX sockets under seccomp at all; this check covers the tiers
//! without seccomp and is the second lock on the door. A peer (its pid from `SO_PEERCRED`)
//! is refused when
//! * it lives in another PID namespace than the supervisor (every host is the init of its
//!   own, and everything it starts stays in it), or
//! * a live host's pid is the peer or one of its ancestors (the parent chain in
//!   `/proc/<pid>/stat`; this covers hosts launched without a PID namespace, and the reaper
//!   of a host in a user namespace), or
//! * its pid or namespace cannot be established (fail closed).

use std::path::Path;

/// Why the peer `pid` must be refused, given the pids of the live hosts; `None` to accept.
pub(crate) fn refusal(pid: Option<u32>, host_pids: &[u32]) -> Option<String> {
    let Some(pid) = pid.filter(|p| *p > 0) else {
        return Some("the peer's pid is unknown".into());
    };
    let ours = std::fs::read_link("/proc/self/ns/pid").ok();
    let theirs = std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
    match (ours, theirs) {
        (Some(a), Some(b)) if a == b => {}
        (Some(_), Some(_)) => {
            return Some(format!(
                "pid {pid} lives in another PID namespace (a host's)"
            ))
        }
        _ => return Some(format!("the PID namespace of pid {pid} cannot be read")),
    }
    let mut at = pid;
    for _ in 0..4096 {
        if host_pids.contains(&at) {
            return Some(format!(
                "pid {pid} is host pid {at} or one of its descendants"
            ));
        }
        match parent_of(at) {
            Some(parent) if parent > 0 && parent != at => at = parent,
            _ => break,
        }
    }
    None
}

/// The parent pid from `/proc/<pid>/stat` (the field after the parenthesized command).
fn parent_of(pid: u32) -> Option<u32> {
    let stat =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_of_a_host_are_refused_others_accepted() {
        let me = std::process::id();
        // SAFETY: getppid cannot fail.
        let parent = unsafe { libc::getppid() } as u32;
        assert_eq!(parent_of(me), Some(parent));
        assert_eq!(refusal(Some(me), &[]), None);
        assert!(refusal(Some(me), &[parent])
            .unwrap()
            .contains("descendants"));
        assert!(refusal(None, &[]).is_some());
        assert!(refusal(Some(u32::MAX - 1), &[]).is_some());
    }
}
