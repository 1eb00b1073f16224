//! What confinement this kernel offers.

use std::fmt;

/// Environment variable that forces [`probe`]'s answer. **For tests only**: it lets the test
/// suite exercise the degraded tiers on a fully capable machine. Its value must be one of the
/// [`Tier::as_str`] strings; any other value is ignored (with a warning).
pub const TEST_PROBE_ENV: &str = "AGENT_RUNNER_TEST_PROBE";

/// A confinement tier: which of the two layers (Landlock, seccomp) are in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Both Landlock and seccomp.
    LandlockSeccomp,
    /// Landlock only.
    Landlock,
    /// seccomp only.
    Seccomp,
    /// Neither.
    Unconfined,
}

impl Tier {
    /// All tiers, strongest first.
    pub const ALL: [Tier; 4] = [
        Tier::LandlockSeccomp,
        Tier::Landlock,
        Tier::Seccomp,
        Tier::Unconfined,
    ];

    /// The name used in events and configuration: `"landlock+seccomp"`, `"landlock"`,
    /// `"seccomp"` or `"unconfined"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::LandlockSeccomp => "landlock+seccomp",
            Tier::Landlock => "landlock",
            Tier::Seccomp => "seccomp",
            Tier::Unconfined => "unconfined",
        }
    }

    /// Parses an [`as_str`](Tier::as_str) name.
    pub fn from_name(name: &str) -> Option<Tier> {
        Tier::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Whether this tier includes Landlock.
    pub fn landlock(self) -> bool {
        matches!(self, Tier::LandlockSeccomp | Tier::Landlock)
    }

    /// Whether this tier includes seccomp.
    pub fn seccomp(self) -> bool {
        matches!(self, Tier::LandlockSeccomp | Tier::Seccomp)
    }

    /// The tier with the given layers.
    pub fn from_layers(landlock: bool, seccomp: bool) -> Tier {
        match (landlock, seccomp) {
            (true, true) => Tier::LandlockSeccomp,
            (true, false) => Tier::Landlock,
            (false, true) => Tier::Seccomp,
            (false, false) => Tier::Unconfined,
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The confinement features of the running kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// The Landlock ABI version (≥ 1), `None` if Landlock is unavailable.
    pub landlock_abi: Option<u32>,
    /// Whether seccomp filters with `SECCOMP_RET_KILL_PROCESS` can be installed.
    pub seccomp: bool,
    /// Why one or both layers are missing (`None` when both are available).
    pub unconfined_reason: Option<String>,
}

impl Capabilities {
    /// The strongest tier these capabilities allow.
    pub fn tier(&self) -> Tier {
        Tier::from_layers(self.landlock_abi.is_some(), self.seccomp)
    }
}

/// Probes the kernel (cheap: two syscalls and one small procfs read).
///
/// * Landlock: `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)` returns
///   the ABI version (Documentation/userspace-api/landlock.rst).
/// * seccomp: `prctl(PR_GET_SECCOMP)` must succeed (kernel built with seccomp) and
///   `/proc/sys/kernel/seccomp/actions_avail` must list `kill_process`
///   (Documentation/userspace-api/seccomp_filter.rst).
///
/// If [`TEST_PROBE_ENV`] holds a tier name, the answer is forced to that tier (for tests).
pub fn probe() -> Capabilities {
    let real = probe_kernel();
    match std::env::var(TEST_PROBE_ENV) {
        Ok(v) => match Tier::from_name(&v) {
            Some(t) => Capabilities {
                landlock_abi: if t.landlock() {
                    Some(real.landlock_abi.unwrap_or(1))
                } else {
                    None
                },
                seccomp: t.seccomp(),
                unconfined_reason: (t != Tier::LandlockSeccomp)
                    .then(|| format!("forced by {TEST_PROBE_ENV}")),
            },
            None => {
                tracing::warn!(value = %v, "{TEST_PROBE_ENV} is not a tier name; ignored");
                real
            }
        },
        Err(_) => real,
    }
}

/// The kernel's Landlock ABI version (≥ 1), whatever [`TEST_PROBE_ENV`] says:
/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`
/// (Documentation/userspace-api/landlock.rst).
///
/// # Errors
/// The call's error: `ENOSYS` when Landlock is not built into the kernel, `EOPNOTSUPP` when
/// it is disabled at boot.
pub fn kernel_landlock_abi() -> std::io::Result<u32> {
    // SAFETY: landlock_create_ruleset with a NULL attr, size 0 and the VERSION flag only
    // returns the ABI version (or -1/errno); it touches no memory.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, /* LANDLOCK_CREATE_RULESET_VERSION */
        )
    };
    if abi >= 1 {
        Ok(abi as u32)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn probe_kernel() -> Capabilities {
    let mut reasons = Vec::new();
    let landlock_abi = match kernel_landlock_abi() {
        Ok(abi) => Some(abi),
        Err(e) => {
            reasons.push(match e.raw_os_error() {
                Some(libc::ENOSYS) => "landlock: not built into this kernel (ENOSYS)".to_owned(),
                Some(libc::EOPNOTSUPP) => {
                    "landlock: disabled at boot (EOPNOTSUPP; add landlock to the lsm= kernel parameter)"
                        .to_owned()
                }
                _ => format!("landlock: unavailable ({e})"),
            });
            None
        }
    };
    // SAFETY: PR_GET_SECCOMP takes no pointer arguments.
    let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    let seccomp = if mode < 0 {
        reasons.push(format!(
            "seccomp: not available ({})",
            std::io::Error::last_os_error()
        ));
        false
    } else {
        match std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail") {
            Ok(s) if s.split_whitespace().any(|a| a == "kill_process") => true,
            Ok(s) => {
                reasons.push(format!(
                    "seccomp: kernel lacks the kill_process action (actions: {})",
                    s.trim()
                ));
                false
            }
            Err(e) => {
                reasons.push(format!(
                    "seccomp: cannot read /proc/sys/kernel/seccomp/actions_avail ({e})"
                ));
                false
            }
        }
    };
    Capabilities {
        landlock_abi,
        seccomp,
        unconfined_reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tier_names_round_trip() {
        for t in Tier::ALL {
            assert_eq!(Tier::from_name(t.as_str()), Some(t));
            assert_eq!(Tier::from_layers(t.landlock(), t.seccomp()), t);
        }
        assert_eq!(Tier::from_name("full"), None);
    }
}
