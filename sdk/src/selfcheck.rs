//! Whether this process runs confined: NoNewPrivs and seccomp from `/proc/self/status`,
//! and a Landlock hint (`docs/protocol.md` §8 describes the confinement a host can expect).

use std::fmt;

/// The seccomp mode of this process (`Seccomp:` in `/proc/self/status`, proc(5)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeccompMode {
    /// `0`: no seccomp.
    Disabled,
    /// `1`: strict mode (read, write, exit only).
    Strict,
    /// `2`: one or more BPF filters are in force.
    Filter,
    /// The field could not be read (no `/proc`, or not readable under confinement).
    Unknown,
}

/// What [`confinement_self_check`] found. `Display` gives one line for stderr, e.g.
/// `no_new_privs=yes seccomp=filter(1 filter) landlock=likely (opening / denied)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelfCheck {
    /// `NoNewPrivs:` of `/proc/self/status`; `None` if unreadable.
    pub no_new_privs: Option<bool>,
    /// `Seccomp:` of `/proc/self/status`.
    pub seccomp: SeccompMode,
    /// `Seccomp_filters:` (number of filters in force); `None` if unreadable.
    pub seccomp_filters: Option<u32>,
    /// A Landlock hint. A process cannot ask the kernel whether it is Landlock-restricted,
    /// so this tries to open `/` for reading, which a confined host may not (`docs/protocol.md` §8):
    /// `Some(false)` when that was refused with `EACCES`, `Some(true)` when it succeeded,
    /// `None` for any other outcome.
    pub root_readable: Option<bool>,
}

impl SelfCheck {
    /// NoNewPrivs is set and a seccomp filter is in force: the minimum a supervisor-launched
    /// host under `sandbox = "require"` or `"prefer"` (seccomp tiers) has.
    pub fn is_confined(&self) -> bool {
        self.no_new_privs == Some(true) && self.seccomp == SeccompMode::Filter
    }
}

impl fmt::Display for SelfCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nnp = match self.no_new_privs {
            Some(true) => "yes",
            Some(false) => "no",
            None => "unknown",
        };
        write!(f, "no_new_privs={nnp} seccomp=")?;
        match (self.seccomp, self.seccomp_filters) {
            (SeccompMode::Disabled, _) => f.write_str("off")?,
            (SeccompMode::Strict, _) => f.write_str("strict")?,
            (SeccompMode::Filter, Some(1)) => f.write_str("filter(1 filter)")?,
            (SeccompMode::Filter, Some(n)) => write!(f, "filter({n} filters)")?,
            (SeccompMode::Filter, None) => f.write_str("filter")?,
            (SeccompMode::Unknown, _) => f.write_str("unknown")?,
        }
        f.write_str(match self.root_readable {
            Some(false) => " landlock=likely (opening / denied)",
            Some(true) => " landlock=no (/ is readable)",
            None => " landlock=unknown",
        })
    }
}

/// Reports whether this process runs confined, for a diagnostic line on stderr. Reads
/// `/proc/self/status` (NoNewPrivs, Seccomp, Seccomp_filters) and tries to open `/`
/// (the Landlock hint, see [`SelfCheck::root_readable`]). Only ordinary `open`/`read`
/// calls are made, so it is safe to call under any seccomp filter that lets the host run.
/// Never fails: what cannot be read is reported as unknown.
pub fn confinement_self_check() -> SelfCheck {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mut check = parse_status(&status);
    check.root_readable = match std::fs::File::open("/") {
        Ok(_) => Some(true),
        Err(err) if err.raw_os_error() == Some(libc::EACCES) => Some(false),
        Err(_) => None,
    };
    check
}

fn parse_status(status: &str) -> SelfCheck {
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key == name).then(|| value.trim().parse::<u32>().ok())?
        })
    };
    SelfCheck {
        no_new_privs: field("NoNewPrivs").map(|v| v != 0),
        seccomp: match field("Seccomp") {
            Some(0) => SeccompMode::Disabled,
            Some(1) => SeccompMode::Strict,
            Some(2) => SeccompMode::Filter,
            _ => SeccompMode::Unknown,
        },
        seccomp_filters: field("Seccomp_filters"),
        root_readable: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_fields() {
        let check = parse_status("Name:\thost\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t3\n");
        assert_eq!(check.no_new_privs, Some(true));
        assert_eq!(check.seccomp, SeccompMode::Filter);
        assert_eq!(check.seccomp_filters, Some(3));
        assert!(check.is_confined());
        assert_eq!(
            check.to_string(),
            "no_new_privs=yes seccomp=filter(3 filters) landlock=unknown"
        );
        let empty = parse_status("");
        assert_eq!(empty.no_new_privs, None);
        assert_eq!(empty.seccomp, SeccompMode::Unknown);
        assert!(!empty.is_confined());
    }

    #[test]
    fn reads_this_process() {
        let check = confinement_self_check();
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let nnp_line = status
            .lines()
            .find(|l| l.starts_with("NoNewPrivs:"))
            .unwrap();
        assert_eq!(check.no_new_privs, Some(nnp_line.ends_with('1')));
        assert_ne!(check.seccomp, SeccompMode::Unknown);
    }
}
