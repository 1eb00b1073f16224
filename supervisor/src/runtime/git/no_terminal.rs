//! Every git the supervisor starts is kept from a terminal: a prompt (a signing passphrase,
//! ssh or HTTP credentials) then fails at once instead of waiting on a terminal nobody
//! watches, and `git_timeout_s` is not spent on it (docs/operations.md, `[vcs]`).
//!
//! A process reaches a terminal through its session: it can open `/dev/tty` when its
//! session has a controlling terminal, and only a session leader can acquire one (by
//! opening a terminal device). So a supervisor with a terminal starts git in a session of
//! its own (`setsid`), and a supervisor without one — `serve` under systemd or in a
//! container, from `agent-runner start`, from a script — starts it in a process group of
//! its own, in its own session without a terminal and never its leader. The second needs
//! no code run in the child between `fork` and `exec`, so the standard library starts git
//! with `posix_spawn` (a `vfork`) instead of a `fork` of the whole supervisor: about 1 ms
//! less a git process on a small virtual machine (docs/performance.md, "Processes of one
//! round").

use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes `cmd` start without a way to a terminal ([module docs](self)). Either way the
/// child leads a process group of its own (its pid is the group's id), which the
/// supervisor signals to kill it with what it started.
pub(crate) fn detach(cmd: &mut Command) {
    if has_terminal() {
        // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                Ok(())
            });
        }
    } else {
        cmd.process_group(0);
    }
}

/// Whether this process's session has a controlling terminal: `/dev/tty` opens (`ENXIO`
/// when there is none). Asked at every start, as a session leader can still acquire one.
/// Any other error (no `/dev/tty` in this mount namespace) counts as a terminal: the
/// session of its own is the safe side.
fn has_terminal() -> bool {
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOCTTY)
        .open("/dev/tty")
    {
        Ok(_) => true,
        Err(e) => e.raw_os_error() != Some(libc::ENXIO),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// The terminal device the probe's children open (`/dev/pts/N`).
    const TTY: &str = "AR_TEST_NO_TERMINAL_TTY";

    /// What a child started with `start` reaches: `tty` when it can open `/dev/tty` after
    /// opening the device at `$AR_TEST_NO_TERMINAL_TTY` (which makes a session leader
    /// without a terminal acquire it), else `none`.
    fn reach(start: fn(&mut Command)) -> String {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            r#"exec 4<>"$AR_TEST_NO_TERMINAL_TTY"; if (exec 3</dev/tty) 2>/dev/null; then echo tty; else echo none; fi"#,
        ]);
        start(&mut cmd);
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn setsid_only(cmd: &mut Command) {
        // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                Ok(())
            });
        }
    }

    /// The test below, run again by itself in a session made for it: reports what each
    /// kind of child reaches there.
    fn probe() {
        let detached = reach(detach);
        println!(
            "PROBE has_terminal={} detach={detached} inherit={} setsid={}",
            has_terminal(),
            reach(|_| {}),
            reach(setsid_only)
        );
        assert_eq!(detached, "none");
    }

    /// Runs this test binary's test below as [`probe`] in a new session, with the
    /// pseudo-terminal as its controlling terminal or without one, and returns its report.
    fn probe_in_session(with_terminal: bool) -> String {
        let pty = nix::pty::openpty(None, None).unwrap();
        let path = nix::unistd::ttyname(&pty.slave).unwrap();
        let slave = pty.slave.as_raw_fd();
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "runtime::git::no_terminal::tests::a_started_git_reaches_no_terminal_with_one_or_without",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(TTY, &path);
        // SAFETY: setsid(2) and ioctl(2) are async-signal-safe; `slave` is an open
        // descriptor the child inherits, and nothing of the parent's memory is touched.
        unsafe {
            cmd.pre_exec(move || {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                if with_terminal && libc::ioctl(slave, libc::TIOCSCTTY, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "the probe failed: {stdout}");
        stdout
            .lines()
            .find_map(|l| l.split_once("PROBE ").map(|(_, report)| report))
            .unwrap_or_else(|| panic!("no report from the probe: {stdout}"))
            .to_owned()
    }

    #[test]
    fn a_started_git_reaches_no_terminal_with_one_or_without() {
        if std::env::var_os(TTY).is_some() {
            return probe();
        }
        // With a terminal: a child that inherits the session reaches it (the control);
        // a detached one does not.
        assert_eq!(
            probe_in_session(true),
            "has_terminal=true detach=none inherit=tty setsid=none"
        );
        // Without one: a session leader acquires the first terminal it opens (the
        // control); the detached child, in a process group of its own, cannot.
        assert_eq!(
            probe_in_session(false),
            "has_terminal=false detach=none inherit=none setsid=tty"
        );
    }
}
