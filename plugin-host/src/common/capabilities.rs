//! No host keeps a capability: every set is emptied between fork and exec.
//!
//! A root supervisor's child holds every capability, and `execve` by uid 0 would hand them
//! all back to the host (capabilities(7), "Capabilities and execution of programs by
//! root"). Landlock and seccomp do not take them away: with `CAP_SYS_ADMIN` a host can
//! freeze or shut down a filesystem through any descriptor it may open (`FIFREEZE`,
//! `EXT4_IOC_SHUTDOWN`), with `CAP_LINUX_IMMUTABLE` make the event log immutable, with
//! `CAP_SYS_TIME` set the clock, and so on. [`drop_all`] therefore, in the child, in
//! this order:
//!
//! 1. if it holds `CAP_SETPCAP` (root, or the host's own user namespace): sets and locks the
//!    secure bits `SECBIT_NOROOT`, `SECBIT_NO_SETUID_FIXUP`, `SECBIT_NO_CAP_AMBIENT_RAISE`
//!    and `SECBIT_KEEP_CAPS_LOCKED` (uid 0 gains nothing at `execve`, nothing can be
//!    raised again), then drops every capability from the bounding set;
//! 2. clears the ambient set;
//! 3. empties the effective, permitted and inheritable sets (`capset`);
//! 4. reads them back: anything left is an error, and the launch fails (fail closed).
//!
//! An unprivileged supervisor outside a user namespace holds no capability and cannot
//! change its bounding set (no `CAP_SETPCAP`); `no_new_privs` (set right after, see
//! [`crate::host::launch`]) keeps `execve` from granting any through set-user-ID or file
//! capabilities. Only raw system calls on the stack: usable between fork and exec.

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// `CAP_SETPCAP` (`<linux/capability.h>`): may change the bounding set and the secure bits.
const CAP_SETPCAP: u32 = 8;

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The secure bits set (and locked) before the bounding set is dropped. `SECBIT_KEEP_CAPS`
/// stays off, locked.
const SECURE_BITS: libc::c_int = libc::SECBIT_NOROOT
    | libc::SECBIT_NOROOT_LOCKED
    | libc::SECBIT_NO_SETUID_FIXUP
    | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
    | libc::SECBIT_KEEP_CAPS_LOCKED
    | libc::SECBIT_NO_CAP_AMBIENT_RAISE
    | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// The calling process's effective, permitted and inheritable sets (two words each).
fn capget() -> std::io::Result<[CapData; 2]> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes two cap_data structs (version 3) into the live array and reads
    // the live header.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if r != 0 {
        return Err(last_error());
    }
    Ok(data)
}

/// `PR_CAPBSET_READ` of `cap`: 1 if in the bounding set, 0 if not, -1 past the last
/// capability the kernel knows.
fn bounding_has(cap: libc::c_ulong) -> libc::c_int {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) }
}

/// Whether `cap` is in the effective set `data`.
fn effective(data: &[CapData; 2], cap: u32) -> bool {
    data[(cap / 32) as usize].effective & (1 << (cap % 32)) != 0
}

/// Empties every capability set of the calling process (module docs, steps 1–4).
///
/// # Errors
/// The OS error of the failing step, or `EPERM` if a capability is still held afterwards.
pub(crate) fn drop_all() -> std::io::Result<()> {
    let before = capget()?;
    let setpcap = effective(&before, CAP_SETPCAP);
    if setpcap {
        // SAFETY: prctl with integer arguments only.
        if unsafe {
            libc::prctl(
                libc::PR_SET_SECUREBITS,
                SECURE_BITS as libc::c_ulong,
                0,
                0,
                0,
            )
        } != 0
        {
            return Err(last_error());
        }
        // Every capability the kernel knows (PR_CAPBSET_READ fails with EINVAL past the last).
        for cap in 0..64 {
            let held = bounding_has(cap);
            if held < 0 {
                break;
            }
            // SAFETY: prctl with integer arguments only.
            let dropped = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
            if held == 1 && dropped != 0 {
                return Err(last_error());
            }
        }
    }
    // SAFETY: prctl with integer arguments only.
    if unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(last_error());
    }
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let empty = [CapData::default(); 2];
    // SAFETY: capset reads the live header and two cap_data structs (version 3).
    if unsafe { libc::syscall(libc::SYS_capset, &mut header, empty.as_ptr()) } != 0 {
        return Err(last_error());
    }
    let bounding_left = setpcap && (0..64).any(|cap| bounding_has(cap) == 1);
    if capget()? != empty || bounding_left {
        return Err(std::io::Error::from_raw_os_error(libc::EPERM));
    }
    Ok(())
}
