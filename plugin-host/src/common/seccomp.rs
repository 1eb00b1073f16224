//! What hosts' and the agent's seccomp programs share: the compiled program
//! ([`SeccompProgram`]), the architecture guard both begin with ([`arch_guard`]), the `ioctl`
//! requests neither may make ([`DENIED_IOCTLS`]), system call names, and installing a
//! program with its user-notification listener handed to the supervisor
//! ([`install_filter`]). Each allow- or deny-list is reviewed data of its own
//! ([`crate::host::policy::SECCOMP_ALLOW`], [`crate::agent::policy::AGENT_SECCOMP_DENY`]).

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::common::fd_passing::send_fd;

/// `_IOC(dir, type, nr, size)` of `<asm-generic/ioctl.h>`.
const fn ioc(dir: u64, ty: u8, nr: u8, size: u64) -> u64 {
    (dir << 30) | (size << 16) | ((ty as u64) << 8) | nr as u64
}
const IOC_WRITE: u64 = 1;
const IOC_READ: u64 = 2;

/// Reviewed data: the `ioctl` requests no host may make, on any descriptor. Landlock's
/// `IOCTL_DEV` right (ABI 5) only covers device files; these act on the *filesystem* of any
/// file or directory the host can open, even read-only (docs/security.md "What Landlock
/// does not cover").
pub const DENIED_IOCTLS: &[(u64, &str)] = &[
    (libc::TIOCSTI, "TIOCSTI (types into a terminal)"),
    (libc::TIOCLINUX, "TIOCLINUX (console tricks)"),
    (libc::TIOCSCTTY, "TIOCSCTTY (steals a controlling terminal)"),
    (libc::TIOCCONS, "TIOCCONS (redirects the console)"),
    (libc::TIOCSETD, "TIOCSETD (loads a line discipline)"),
    (
        ioc(IOC_READ | IOC_WRITE, b'X', 119, 4),
        "FIFREEZE (every write to the filesystem blocks)",
    ),
    (ioc(IOC_READ | IOC_WRITE, b'X', 120, 4), "FITHAW"),
    (
        ioc(IOC_READ, b'X', 125, 4),
        "EXT4_IOC_SHUTDOWN / XFS_IOC_GOINGDOWN (shuts the filesystem down)",
    ),
    (
        ioc(IOC_WRITE, b'f', 2, 8),
        "FS_IOC_SETFLAGS (immutable, append-only, ... inode flags)",
    ),
    (ioc(IOC_WRITE, b'f', 2, 4), "FS_IOC32_SETFLAGS"),
    (
        ioc(IOC_WRITE, b'v', 2, 8),
        "FS_IOC_SETVERSION (inode generation)",
    ),
    (ioc(IOC_WRITE, b'v', 2, 4), "FS_IOC32_SETVERSION"),
    (
        ioc(IOC_WRITE, b'X', 32, 28),
        "FS_IOC_FSSETXATTR (inode flags, project id)",
    ),
    (
        ioc(IOC_WRITE, 0x94, 50, 256),
        "FS_IOC_SETFSLABEL (renames the filesystem)",
    ),
    (ioc(IOC_READ, b'f', 19, 12), "FS_IOC_SET_ENCRYPTION_POLICY"),
    (
        ioc(IOC_READ | IOC_WRITE, b'f', 23, 80),
        "FS_IOC_ADD_ENCRYPTION_KEY",
    ),
    (ioc(IOC_WRITE, b'f', 133, 128), "FS_IOC_ENABLE_VERITY"),
];

/// A compiled seccomp filter, ready for `seccomp(SECCOMP_SET_MODE_FILTER, ...)`.
pub struct SeccompProgram {
    filters: Vec<libc::sock_filter>,
}

impl std::fmt::Debug for SeccompProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SeccompProgram({} instructions)", self.filters.len())
    }
}

impl SeccompProgram {
    /// A program of `filters` (built and checked by the caller).
    pub(crate) fn from_instructions(filters: Vec<libc::sock_filter>) -> Self {
        SeccompProgram { filters }
    }

    /// Number of BPF instructions.
    pub fn len(&self) -> usize {
        self.filters.len()
    }

    /// The instructions (for a test that installs the program in a thread of its own).
    pub fn instructions(&self) -> &[libc::sock_filter] {
        &self.filters
    }

    /// Whether the program is empty (never true for a built program).
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// The `sock_fprog` pointing into this program (valid while `self` lives, unmoved
    /// contents: the instructions are heap-allocated and never modified).
    pub(crate) fn fprog(&self) -> libc::sock_fprog {
        libc::sock_fprog {
            len: self.filters.len() as libc::c_ushort,
            filter: self.filters.as_ptr() as *mut libc::sock_filter,
        }
    }
}

pub(crate) const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
pub(crate) const X32_SYSCALL_BIT: u32 = 0x4000_0000;
pub(crate) const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
pub(crate) const SECCOMP_DATA_NR: u32 = 0;
pub(crate) const SECCOMP_DATA_ARCH: u32 = 4;
/// Offset of the low 32 bits of `args[0]` in `struct seccomp_data` (little-endian).
pub(crate) const SECCOMP_DATA_ARG0_LO: u32 = 16;
pub(crate) const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
pub(crate) const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
pub(crate) const BPF_JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
pub(crate) const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// One BPF instruction.
pub(crate) fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The name of the x86_64 system call `nr` (`"socket"`, `"ptrace"`, `"read"`, ...), allowed
/// or not, or `None` for a number no kernel up to 6.17 assigns.
pub fn syscall_name(nr: i64) -> Option<&'static str> {
    crate::common::syscall_table::name_of(nr)
}

/// Installs `prog` in this (forked, single-threaded) process. With `listener_tx`, asks for
/// the user-notification listener, sends it over `listener_tx` and closes it here: the
/// confined program must never hold it. Only raw system calls: usable between fork and exec
/// (hosts and the confined agent alike).
///
/// # Errors
/// The `seccomp`, `sendmsg` or `close` error.
pub(crate) fn install_filter(
    prog: &SeccompProgram,
    listener_tx: Option<&OwnedFd>,
) -> std::io::Result<()> {
    let fprog = prog.fprog();
    let flags = if listener_tx.is_some() {
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
    } else {
        0
    };
    // SAFETY: fprog points at the program's instructions, which live (unmoved, unmodified)
    // in `prog` for the duration of the call; the kernel copies them.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const libc::sock_fprog,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if let Some(sock) = listener_tx {
        // From here on the filter is in force: sendmsg, close and execveat are allowed.
        let listener = r as RawFd;
        let sent = send_fd(sock.as_raw_fd(), listener);
        // SAFETY: close of the listener descriptor seccomp(2) just returned to this process;
        // nothing else refers to it.
        let closed = unsafe { libc::close(listener) };
        sent?;
        if closed != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The first instructions of every program of ours: kill a call made with a foreign
/// architecture, and an x86_64 call with the x32 bit (0x40000000) set, which seccompiler
/// does not check (x32 numbers alias the x86_64 ones). Leaves the call's number loaded.
pub(crate) fn arch_guard() -> Vec<libc::sock_filter> {
    vec![
        insn(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARCH),
        insn(BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        insn(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        insn(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_NR),
        insn(BPF_JSET_K, 0, 1, X32_SYSCALL_BIT),
        insn(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
    ]
}

/// Reviewed data: the namespace flags no `clone` of a host or of the agent may carry
/// (docs/security.md "The allow-list", "UNIX sockets and new namespaces"). `CLONE_NEWTIME` (0x80) exists only for `unshare` and `clone3`: in
/// `clone`'s first argument the low byte is the exit signal.
pub const DENIED_CLONE_FLAGS: &[(u64, &str)] = &[
    (libc::CLONE_NEWNS as u64, "CLONE_NEWNS"),
    (libc::CLONE_NEWCGROUP as u64, "CLONE_NEWCGROUP"),
    (libc::CLONE_NEWUTS as u64, "CLONE_NEWUTS"),
    (libc::CLONE_NEWIPC as u64, "CLONE_NEWIPC"),
    (libc::CLONE_NEWUSER as u64, "CLONE_NEWUSER"),
    (libc::CLONE_NEWPID as u64, "CLONE_NEWPID"),
    (libc::CLONE_NEWNET as u64, "CLONE_NEWNET"),
];

/// The mask of [`DENIED_CLONE_FLAGS`].
pub const CLONE_NAMESPACE_MASK: u64 = {
    let mut m = 0;
    let mut i = 0;
    while i < DENIED_CLONE_FLAGS.len() {
        m |= DENIED_CLONE_FLAGS[i].0;
        i += 1;
    }
    m
};
