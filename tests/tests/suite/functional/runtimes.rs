//! The runtime matrix (docs/protocol.md "Runtimes"): the same spawn hook `gate` and dirty
//! handler `wip` written in bash, POSIX sh, Python (the system interpreter, a virtual
//! environment, one installed under the home directory and reached through a
//! `#!/usr/bin/env` pyenv-style shim, and whatever `python3` the test's PATH finds), Node,
//! Perl, Ruby and Rust. Each row, pinned under `sandbox = "require"`, passes
//! `plugin check NAME` and runs one real round: `before_spawn` defers once (the verdict is
//! honoured, with the row's runtime as its reason), then proceeds, and the dirty
//! handler's commit lands in git.
//!
//! The script hosts live in `tests/runtimes/`; each row copies its host next to the
//! project with the row's `#!` line, so the pin, the interpreter resolution and the policy
//! are the ones serve uses. Ruby is installed by `.ci/run` when missing.
//!
//! Every row runs twice: `<row>::as_root` and `<row>::as_unprivileged_user` (the supervisor
//! runs as the test user, whose confinement is the user + PID + mount namespaces; its
//! `PATH` holds system directories only, so `python_on_path` finds the system Python).

use agent_runner_e2e::{workspace_bin, HostSpec, Operator, Project};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Copies `tests/runtimes/<file>` to `<tmp>/hosts/<file>`, replacing its `#!` line with
/// `shebang` when given, and makes it executable.
fn host_script(p: &Project, file: &str, shebang: Option<&str>) -> PathBuf {
    let text = std::fs::read_to_string(
        agent_runner_e2e::workspace_root()
            .join("tests/runtimes")
            .join(file),
    )
    .expect("runtime host");
    let text = match shebang {
        Some(line) => {
            let rest = text.split_once('\n').map(|(_, r)| r).unwrap_or("");
            format!("#!{line}\n{rest}")
        }
        None => text,
    };
    let dir = p.tmp_dir().join("hosts");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    set_executable(&path);
    path
}

/// [`host_script`] with `tests/runtimes/<prologue>` inserted right after the `#!` line: work
/// the host does before it answers anything (the `*_busy` rows).
fn busy_host_script(p: &Project, file: &str, prologue: &str) -> PathBuf {
    let path = host_script(p, file, None);
    let text = std::fs::read_to_string(&path).unwrap();
    let work = std::fs::read_to_string(
        agent_runner_e2e::workspace_root()
            .join("tests/runtimes")
            .join(prologue),
    )
    .expect("prologue");
    let (shebang, rest) = text.split_once('\n').unwrap();
    std::fs::write(&path, format!("{shebang}\n{work}\n{rest}")).unwrap();
    path
}

fn set_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Runs `cmd` and panics with its output unless it succeeds.
fn must(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One row: `host` (pinned, both families, `sandbox = "require"`) passes `plugin check`
/// and a real round; `runtime` is the word its commit message carries. `path` replaces the
/// PATH agent-runner runs with (for `#!/usr/bin/env` rows).
fn round_under_require(p: &Project, host: &Path, runtime: &str, path: Option<&str>) {
    p.write_config(
        &p.config()
            .sandbox("require")
            .spawn_override_allow(&["gate"])
            .host(
                HostSpec::new("rt", host)
                    .provides(&["spawn_hook", "dirty_handler"])
                    .timeout_s(20),
            ),
    );
    let env: Vec<(&str, &str)> = path.map(|v| ("PATH", v)).into_iter().collect();
    let check = p.run_env(&["plugin", "check", "rt"], &env);
    assert_eq!(
        check.code(),
        0,
        "plugin check of the {runtime} host:\n{check}"
    );
    let round = p.run_env(&["serve", "--max-rounds", "1"], &env);
    round.assert_code(0);
    let all = p.events_text();
    assert!(p.events_of("hook_failed").is_empty(), "{runtime}: {all}");
    let decisions = p.events_of("plugin_spawn_decision");
    assert_eq!(decisions.len(), 1, "{runtime}: {all}");
    assert_eq!(decisions[0]["hook"], "gate", "{all}");
    assert_eq!(decisions[0]["action"], "defer", "{all}");
    assert_eq!(decisions[0]["reason"], runtime, "{all}");
    let subjects = p.log_subjects();
    assert_eq!(
        subjects.first().map(String::as_str),
        Some(format!("wip {runtime}: round 1").as_str()),
        "{runtime}: {subjects:?}\n{all}"
    );
    assert!(
        p.status_porcelain().is_empty(),
        "{:?}",
        p.status_porcelain()
    );
}

fn bash(operator: Operator) {
    let p = Project::new_as(operator);
    let host = host_script(&p, "host.bash", Some("/bin/bash"));
    round_under_require(&p, &host, "bash", None);
}

fn posix_sh(operator: Operator) {
    let p = Project::new_as(operator);
    let host = host_script(&p, "host.sh", Some("/bin/sh"));
    round_under_require(&p, &host, "sh", None);
}

fn python_system(operator: Operator) {
    let p = Project::new_as(operator);
    let host = host_script(&p, "host.py", Some("/usr/bin/python3"));
    round_under_require(&p, &host, "python", None);
}

fn python_venv(operator: Operator) {
    let p = Project::new_as(operator);
    let venv = p.tmp_dir().join("venv");
    must(
        Command::new("/usr/bin/python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv),
    );
    let shebang = venv.join("bin/python3");
    let host = host_script(&p, "host.py", Some(shebang.to_str().unwrap()));
    round_under_require(&p, &host, "python", None);
}

/// A Python installed under the home directory (a `--copies` environment laid out as pyenv
/// lays out its versions) and reached through `#!/usr/bin/env python3` and a pyenv shim
/// first on PATH, as a developer's machine does it.
fn python_under_home_through_env_shim(operator: Operator) {
    let p = Project::new_as(operator);
    let home = p.tmp_dir().join("home");
    let root = home.join(".pyenv");
    let version = root.join("versions/3-test");
    must(
        Command::new("/usr/bin/python3")
            .args(["-m", "venv", "--copies", "--without-pip"])
            .arg(&version),
    );
    std::fs::write(root.join("version"), "3-test\n").unwrap();
    let shims = root.join("shims");
    std::fs::create_dir_all(&shims).unwrap();
    let shim = shims.join("python3");
    std::fs::write(
        &shim,
        "#!/usr/bin/env bash\nset -e\nexport PYENV_ROOT=\"$(dirname \"$(dirname \"$0\")\")\"\nexec pyenv exec \"${0##*/}\" \"$@\"\n",
    )
    .unwrap();
    set_executable(&shim);
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", shims.display());
    let host = host_script(&p, "host.py", Some("/usr/bin/env python3"));
    round_under_require(&p, &host, "python", Some(&path));
}

/// Whatever `python3` the test's own PATH finds (on the development machine: pyenv under
/// /root, through its shim).
fn python_on_path(operator: Operator) {
    let p = Project::new_as(operator);
    let host = host_script(&p, "host.py", None);
    round_under_require(&p, &host, "python", None);
}

/// The system Python doing ordinary standard-library work first (`tests/runtimes/busy.py`:
/// SQLite, files, threads, asyncio with a subprocess, subprocess): the seccomp allow-list
/// covers more than the matrix's small hosts call.
fn python_busy(operator: Operator) {
    let p = Project::new_as(operator);
    let host = busy_host_script(&p, "host.py", "busy.py");
    round_under_require(&p, &host, "python", None);
}

/// Node doing ordinary work first (`tests/runtimes/busy.js`: files, zlib, crypto, a child
/// process, a worker thread with asynchronous file I/O and a timer).
fn node_busy(operator: Operator) {
    let p = Project::new_as(operator);
    let host = busy_host_script(&p, "host.js", "busy.js");
    round_under_require(&p, &host, "node", None);
}

fn node(operator: Operator) {
    let p = Project::new_as(operator);
    let host = host_script(&p, "host.js", None);
    round_under_require(&p, &host, "node", None);
}

fn perl(operator: Operator) {
    let p = Project::new_as(operator);
    let host = host_script(&p, "host.pl", None);
    round_under_require(&p, &host, "perl", None);
}

fn ruby(operator: Operator) {
    let p = Project::new_as(operator);
    let host = host_script(&p, "host.rb", None);
    round_under_require(&p, &host, "ruby", None);
}

fn rust(operator: Operator) {
    let p = Project::new_as(operator);
    round_under_require(&p, &workspace_bin("ar-e2e-runtime"), "rust", None);
}

/// Each row twice: `<row>::as_root` and `<row>::as_unprivileged_user`.
macro_rules! as_root_and_unprivileged {
    ($($row:ident),* $(,)?) => {
        $(
            mod $row {
                use super::*;

                #[test]
                fn as_root() {
                    super::$row(Operator::Root);
                }

                #[test]
                fn as_unprivileged_user() {
                    super::$row(Operator::Unprivileged);
                }
            }
        )*
    };
}

as_root_and_unprivileged!(
    bash,
    posix_sh,
    python_system,
    python_venv,
    python_under_home_through_env_shim,
    python_on_path,
    python_busy,
    node,
    node_busy,
    perl,
    ruby,
    rust,
);
