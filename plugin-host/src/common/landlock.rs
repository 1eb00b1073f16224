//! The one Landlock ruleset builder, for hosts and the agent alike: the kinds of access
//! ([`FsAccess`]), one grant ([`FsGrant`]), and [`ruleset`], which handles every filesystem
//! right of the policy's ABI and allows only the grants. What each of them is granted is
//! reviewed data of its own ([`crate::host::policy::fs_grants`],
//! [`crate::agent::policy::agent_fs_grants`]).

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

/// The newest Landlock ABI this policy was written and tested against. Newer kernels are
/// used at this level (rights introduced later are not handled, i.e. not restricted).
pub const POLICY_LANDLOCK_ABI: u32 = 7;

/// A kind of access granted on a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FsAccess {
    /// Read and execute one file (a program or the loader).
    ReadExecute,
    /// Read files and list directories beneath the path; no execute, no write.
    ReadOnly,
    /// Read, write, create and remove files and directories beneath the path (no execute, no
    /// device nodes).
    ReadWrite,
    /// Read and write an existing device file (`/dev/null`), including `O_TRUNC` and ioctls.
    Device,
    /// Read, list and execute beneath the path; no write (the agent's system and toolchain
    /// trees, [`crate::agent::policy`]).
    ReadExecuteTree,
    /// Everything [`FsAccess::ReadWrite`] allows, plus execute (the agent's work tree, its
    /// own state and TMPDIR: it builds and runs programs there).
    ReadWriteExecute,
}

impl FsAccess {
    /// The Landlock rights of this kind at `abi`.
    pub fn rights(self, abi: ABI) -> BitFlags<AccessFs> {
        let all = AccessFs::from_all(abi);
        let r = match self {
            FsAccess::ReadExecute => AccessFs::ReadFile | AccessFs::Execute,
            FsAccess::ReadOnly => AccessFs::ReadFile | AccessFs::ReadDir,
            FsAccess::ReadWrite => {
                AccessFs::from_all(abi)
                    & !(AccessFs::Execute
                        | AccessFs::MakeChar
                        | AccessFs::MakeBlock
                        | AccessFs::IoctlDev)
            }
            FsAccess::Device => {
                AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev
            }
            FsAccess::ReadExecuteTree => AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute,
            FsAccess::ReadWriteExecute => {
                AccessFs::from_all(abi)
                    & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev)
            }
        };
        r & all
    }
}

/// One Landlock grant: `access` on `path` (a file, or a directory and everything beneath).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsGrant {
    /// The path (canonical where it matters; Landlock follows symlinks when opening it).
    pub path: PathBuf,
    /// What is allowed.
    pub access: FsAccess,
    /// Why the host needs it.
    pub why: &'static str,
    /// If false, a missing path is skipped (system library locations vary); if true, a
    /// missing path is an error.
    pub required: bool,
    /// If true, the rule is added through the verified executable's open descriptor rather
    /// than by opening `path` again, so it names the inode that was hashed even if the path
    /// was replaced since.
    pub via_verified_fd: bool,
}

/// Why a policy could not be built.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A required path of the policy could not be opened.
    #[error(
        "landlock policy: cannot open {path} ({reason}); it must exist before the host starts"
    )]
    Path {
        /// The path.
        path: PathBuf,
        /// The error.
        reason: String,
    },
    /// The kernel rejected the ruleset.
    #[error("landlock policy: {0}; check `agent-runner doctor` for the kernel's Landlock support")]
    Landlock(#[from] landlock::RulesetError),
    /// The kernel has no Landlock.
    #[error("landlock policy: Landlock is not available on this kernel; use a lower sandbox tier or enable Landlock")]
    LandlockUnavailable,
    /// The seccomp filter could not be compiled.
    #[error("seccomp policy: {0}")]
    Seccomp(String),
}

/// What a ruleset does with TCP (Landlock ABI ≥ 4; below it TCP is not restricted).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TcpRule {
    /// Bind and connect handled, nothing granted: no TCP at all (hosts, docs/protocol.md §8).
    None,
    /// Connect handled and granted to these ports only; bind not handled (the agent,
    /// `[agent.sandbox] connect_ports`).
    ConnectTo(Vec<u16>),
}

/// Builds a Landlock ruleset on a kernel with ABI `kernel_abi` and returns its descriptor,
/// for `landlock_restrict_self`.
///
/// Every filesystem right of `min(kernel_abi, POLICY_LANDLOCK_ABI)` is handled (a hard
/// requirement) and only `grants` are allowed: a grant marked `via_verified_fd` names the
/// inode of `verified` (the descriptor that was hashed), the others are opened by path, and a
/// grant that is not `required` is skipped when its path cannot be opened. TCP follows `tcp`
/// at ABI ≥ 4; at ABI ≥ 6 abstract UNIX sockets and signals are scoped to the process's own
/// domain.
///
/// # Errors
/// [`PolicyError`]: Landlock is unavailable, a required path cannot be opened, a grant needs
/// `verified` and none was given, or the kernel rejects the ruleset.
pub fn ruleset(
    grants: &[FsGrant],
    verified: Option<&File>,
    tcp: &TcpRule,
    kernel_abi: u32,
) -> Result<OwnedFd, PolicyError> {
    let level = kernel_abi.min(POLICY_LANDLOCK_ABI);
    if level == 0 {
        return Err(PolicyError::LandlockUnavailable);
    }
    let abi = ABI::from(level as i32);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))?;
    if level >= 4 {
        ruleset = match tcp {
            TcpRule::None => ruleset.handle_access(AccessNet::from_all(abi))?,
            TcpRule::ConnectTo(_) => ruleset.handle_access(AccessNet::ConnectTcp)?,
        };
    }
    if level >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi))?;
    }
    let mut created = ruleset.create()?;
    for grant in grants {
        let rights = |is_dir: bool| {
            let rights = grant.access.rights(abi);
            if is_dir {
                rights
            } else {
                rights & AccessFs::from_file(abi)
            }
        };
        if grant.via_verified_fd {
            let verified = verified.ok_or_else(|| PolicyError::Path {
                path: grant.path.clone(),
                reason: "granted through the verified descriptor, and none was given".into(),
            })?;
            let is_dir = verified.metadata().is_ok_and(|m| m.is_dir());
            created = created.add_rule(PathBeneath::new(verified.as_fd(), rights(is_dir)))?;
            continue;
        }
        let fd = match PathFd::new(&grant.path) {
            Ok(fd) => fd,
            Err(_) if !grant.required => continue,
            Err(e) => {
                return Err(PolicyError::Path {
                    path: grant.path.clone(),
                    reason: e.to_string(),
                })
            }
        };
        let is_dir = std::fs::metadata(&grant.path).is_ok_and(|m| m.is_dir());
        created = created.add_rule(PathBeneath::new(fd, rights(is_dir)))?;
    }
    if level >= 4 {
        if let TcpRule::ConnectTo(ports) = tcp {
            for port in ports {
                created = created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
            }
        }
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or(PolicyError::LandlockUnavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_are_what_they_say() {
        let abi = ABI::V7;
        assert!(!FsAccess::ReadOnly.rights(abi).contains(AccessFs::Execute));
        assert!(!FsAccess::ReadOnly.rights(abi).contains(AccessFs::WriteFile));
        assert!(!FsAccess::ReadWrite.rights(abi).contains(AccessFs::Execute));
        assert!(FsAccess::ReadWrite
            .rights(abi)
            .contains(AccessFs::MakeDir | AccessFs::RemoveFile));
    }
}
