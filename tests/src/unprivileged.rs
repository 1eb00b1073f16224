//! Running tests as an unprivileged operator: the system user `ar-e2e`.
//!
//! The suite runs as root here (and in CI), but most operators run the supervisor as their
//! own user, where the kernel offers less (no `pids` cgroup, no PID namespace without a user
//! namespace). [`unprivileged_user`] creates the user once (`useradd --system
//! --create-home`, idempotent and safe when several test processes race for it);
//! [`TestUser::command`] runs a built binary as that user (uid and gid set, supplementary
//! groups cleared, `HOME`, `USER`, `LOGNAME` and a `PATH` without root's private tool
//! directories); [`TestUser::own`] hands a directory tree to the user.
//!
//! Run built binaries as the user, never `cargo`: rustup and cargo live under `/root`.

use std::ffi::CString;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The name of the test user.
pub const TEST_USER_NAME: &str = "ar-e2e";

/// The `PATH` commands run with as the test user: system directories only (root's `PATH`
/// holds tool shims under `/root`, which the user cannot search).
pub const TEST_USER_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// An unprivileged system user with a real home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestUser {
    /// Login name ([`TEST_USER_NAME`]).
    pub name: String,
    /// User id (not 0).
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Home directory (exists, owned by the user).
    pub home: PathBuf,
}

/// Which operator a test runs the supervisor as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// The test process's own user (root here and in CI).
    Root,
    /// [`unprivileged_user`].
    Unprivileged,
}

impl Operator {
    /// The user to run as, `None` for [`Operator::Root`].
    pub fn user(self) -> Option<&'static TestUser> {
        match self {
            Operator::Root => None,
            Operator::Unprivileged => Some(unprivileged_user()),
        }
    }
}

/// The test user, created with `useradd` on first use in this machine's lifetime.
///
/// Idempotent across test processes running in parallel: `useradd` takes the system's
/// passwd lock, and a loser of the race (exit 9, "already exists") or a `useradd` that
/// failed on the lock simply looks the user up again. Also makes the build directory and
/// the checkout reachable (`o+x` on their ancestors) for the user.
///
/// # Panics
/// When the user neither exists nor can be created (the suite needs root for that).
pub fn unprivileged_user() -> &'static TestUser {
    static USER: OnceLock<TestUser> = OnceLock::new();
    USER.get_or_init(|| {
        // The user runs the built binaries and reads the test hosts of the checkout, which
        // may sit below a private directory (a clone in /root).
        searchable_ancestors(&crate::bin_dir().join("x"));
        searchable_ancestors(&crate::workspace_root().join("x"));
        for attempt in 0..20 {
            if let Some(user) = lookup(TEST_USER_NAME) {
                return user;
            }
            let out = Command::new("useradd")
                .args([
                    "--system",
                    "--create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                    "--comment",
                    "agent-runner end-to-end tests",
                    TEST_USER_NAME,
                ])
                .output()
                .expect("run useradd (the end-to-end tests need it, as root)");
            if out.status.success() {
                continue;
            }
            // 9: the user exists (another process won); 10: cannot update the group file,
            // 1: cannot update the password file — both mean another useradd holds the lock.
            std::thread::sleep(std::time::Duration::from_millis(50 * (attempt + 1)));
        }
        panic!("cannot create the test user {TEST_USER_NAME} with useradd");
    })
}

/// The user `name` from the passwd database, with its home directory created if missing
/// (a `useradd` that lost a race may have left it absent).
fn lookup(name: &str) -> Option<TestUser> {
    let cname = CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer into static storage or null; we copy every field
    // out before any other passwd call (tests call this under the OnceLock only).
    let pw = unsafe { libc::getpwnam(cname.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: pw is non-null and points at a valid passwd record (see above).
    let (uid, gid, home) = unsafe {
        let home = std::ffi::CStr::from_ptr((*pw).pw_dir);
        (
            (*pw).pw_uid,
            (*pw).pw_gid,
            PathBuf::from(home.to_string_lossy().into_owned()),
        )
    };
    let user = TestUser {
        name: name.to_owned(),
        uid,
        gid,
        home,
    };
    if !user.home.is_dir() {
        fs::create_dir_all(&user.home).ok()?;
        user.own(&user.home);
    }
    Some(user)
}

impl TestUser {
    /// Makes `cmd` run as this user: uid and gid set, supplementary groups cleared (by
    /// std's `Command::uid`/`gid`, which call `setgroups(0)` when run as root), `HOME`,
    /// `USER`, `LOGNAME` set and `PATH` = [`TEST_USER_PATH`].
    pub fn apply(&self, cmd: &mut Command) {
        cmd.uid(self.uid)
            .gid(self.gid)
            .env("USER", &self.name)
            .env("LOGNAME", &self.name)
            .env("HOME", &self.home)
            .env("PATH", TEST_USER_PATH);
    }

    /// A command running `program` as this user (see [`TestUser::apply`]).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        self.apply(&mut cmd);
        cmd
    }

    /// Gives `path` and everything beneath it to this user (`lchown`, symlinks not
    /// followed), and makes every ancestor up to `/` searchable by it when it is not.
    ///
    /// # Panics
    /// On an I/O error (the tests cannot go on as the user then).
    pub fn own(&self, path: &Path) {
        chown_tree(path, self.uid, self.gid);
        searchable_ancestors(path);
    }
}

/// Adds search permission for others (`o+x`) to every ancestor directory of `path` that
/// lacks it, so another user can reach `path`.
fn searchable_ancestors(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut dir = path.parent();
    while let Some(d) = dir {
        let meta = fs::metadata(d).unwrap_or_else(|e| panic!("stat {}: {e}", d.display()));
        let mode = meta.permissions().mode();
        if mode & 0o001 == 0 {
            fs::set_permissions(d, fs::Permissions::from_mode(mode | 0o001))
                .unwrap_or_else(|e| panic!("chmod {}: {e}", d.display()));
        }
        dir = d.parent();
    }
}

fn chown_tree(path: &Path, uid: u32, gid: u32) {
    chown_one(path, uid, gid).unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
    chown_below(path, uid, gid);
}

/// `lchown` of `path` unless it is `uid`:`gid`'s already: a `chown`, even to the same
/// owner, moves the entry's `ctime`, which the supervisor reads as "touched" (dirt
/// attribution, the protected paths' scan), as an operator's own tree never sees.
fn chown_one(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::symlink_metadata(path)?;
    if meta.uid() == uid && meta.gid() == gid {
        return Ok(());
    }
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))
}

/// Gives everything beneath the directory `dir` to `uid`:`gid`. An entry that vanishes
/// during the walk is skipped: a supervisor of the project may be running git (whose lock
/// files come and go) while a command is prepared for the user.
fn chown_below(dir: &Path, uid: u32, gid: u32) {
    let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    let meta = match fs::symlink_metadata(dir) {
        Err(e) if gone(&e) => return,
        meta => meta.unwrap_or_else(|e| panic!("{}: {e}", dir.display())),
    };
    if !meta.is_dir() {
        return;
    }
    let entries = match fs::read_dir(dir) {
        Err(e) if gone(&e) => return,
        entries => entries.unwrap_or_else(|e| panic!("{}: {e}", dir.display())),
    };
    for entry in entries {
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        match chown_one(&path, uid, gid) {
            Err(e) if gone(&e) => continue,
            done => done.unwrap_or_else(|e| panic!("chown {}: {e}", path.display())),
        }
        chown_below(&path, uid, gid);
    }
}

/// Set in the environment of a test binary re-run by [`rerun_as_unprivileged_user`].
pub const RERUN_ENV: &str = "AR_E2E_RERUN_AS_USER";

/// True inside a re-run started by [`rerun_as_unprivileged_user`].
pub fn is_rerun() -> bool {
    std::env::var_os(RERUN_ENV).is_some()
}

/// Runs the calling test binary again, as [`unprivileged_user`], with every test but
/// `this_test` (the caller), and panics with its output unless all pass. This is how a
/// suite of in-process confinement tests runs twice: once as root, once as an operator
/// without privileges (the test binary, not `cargo`, runs as the user). Returns at once
/// inside such a re-run.
///
/// # Panics
/// When the re-run fails or cannot start.
pub fn rerun_as_unprivileged_user(this_test: &str) {
    if is_rerun() {
        return;
    }
    let user = unprivileged_user();
    let exe = std::env::current_exe().expect("current_exe");
    let out = user
        .command(&exe)
        .args(["--skip", this_test, "--test-threads", "2"])
        .env(RERUN_ENV, "1")
        .current_dir("/")
        .output()
        .unwrap_or_else(|e| panic!("run {} as {}: {e}", exe.display(), user.name));
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{} as {} (uid {}): {}\n{text}",
        exe.display(),
        user.name,
        user.uid,
        out.status
    );
    // A run that filtered everything out would pass too: insist tests ran.
    assert!(
        text.lines()
            .any(|l| l.starts_with("test result: ok.") && !l.contains(" 0 passed")),
        "no test ran as {}: {text}",
        user.name
    );
}
