//! The sandbox gate: what `[plugins] sandbox` asks for against what the kernel offers
//! (`docs/design-notes.md`, "Host lifecycle"). The same gate runs in `serve`, `round` and `doctor`.
//!
//! - `require`: Landlock and seccomp must both engage, or nothing starts (exit 78, with a
//!   message on stderr saying what is missing); every host must be pinned.
//! - `prefer`: hosts run at the best tier available; a shortfall is announced once per boot.
//! - `off`: hosts run unconfined (environment allowlist and limits still apply).

use agent_runner_plugin_host::common::probe::{Capabilities, Tier};
use agent_runner_protocol::SandboxInfo;

use crate::config::SandboxMode;

/// The gate's verdict for this boot.
#[derive(Clone, Debug)]
pub struct SandboxGate {
    /// What the config asked for.
    pub requested: SandboxMode,
    /// What the kernel offers.
    pub caps: Capabilities,
    /// The layers hosts are launched with.
    pub applied: Tier,
}

/// `sandbox = "require"` on a kernel that does not offer both Landlock and seccomp
/// (exit 78 at boot; doctor's failed `sandbox` check).
#[derive(Clone, Debug, thiserror::Error)]
#[error("sandbox = \"require\" but the kernel offers only `{}` ({shortfall}); hosts need both Landlock and seccomp. Run on a kernel with Landlock enabled (lsm=landlock) and seccomp, or set [plugins] sandbox = \"prefer\"", available.as_str())]
pub struct SandboxRefused {
    /// The tier the kernel offers.
    pub available: Tier,
    /// What is missing and why.
    pub shortfall: String,
}

impl SandboxGate {
    /// Evaluates `requested` against `caps`.
    ///
    /// Errors: [`SandboxRefused`] under `require`, saying which layer is missing and why.
    pub fn evaluate(requested: SandboxMode, caps: Capabilities) -> Result<Self, SandboxRefused> {
        let available = caps.tier();
        let applied = match requested {
            SandboxMode::Off => Tier::Unconfined,
            SandboxMode::Prefer => available,
            SandboxMode::Require => {
                if available != Tier::LandlockSeccomp {
                    return Err(SandboxRefused {
                        available,
                        shortfall: shortfall(&caps),
                    });
                }
                available
            }
        };
        Ok(SandboxGate {
            requested,
            caps,
            applied,
        })
    }

    /// A description of what is missing under `prefer`, if anything (announced once).
    pub(crate) fn shortfall(&self) -> Option<String> {
        (self.requested == SandboxMode::Prefer && self.applied != Tier::LandlockSeccomp)
            .then(|| shortfall(&self.caps))
    }

    /// Whether unpinned hosts are refused (`require`).
    pub(crate) fn pins_required(&self) -> bool {
        self.requested == SandboxMode::Require
    }

    /// The `sandbox` object sent in `initialize`.
    pub(crate) fn info(&self) -> SandboxInfo {
        SandboxInfo {
            requested: self.requested.as_str().to_owned(),
            achieved_tier: self.applied.as_str().to_owned(),
            landlock_abi: self.caps.landlock_abi,
            seccomp: self.applied.seccomp(),
        }
    }
}

fn shortfall(caps: &Capabilities) -> String {
    let landlock = match caps.landlock_abi {
        Some(abi) => format!("Landlock ABI {abi}"),
        None => "no Landlock".to_owned(),
    };
    let seccomp = if caps.seccomp {
        "seccomp"
    } else {
        "no seccomp"
    };
    match &caps.unconfined_reason {
        Some(reason) => format!("{landlock}, {seccomp}: {reason}"),
        None => format!("{landlock}, {seccomp}"),
    }
}
