//! `agent-runner plugin new --lang rust|python NAME`: writes a working host (one hook of
//! the `--family` asked for) that passes `plugin check` as generated. Templates live in
//! `supervisor/templates/`; the Python scaffold carries a copy of the Python SDK module and
//! is built into one pinnable zipapp (`NAME.pyz`).

use agent_runner_protocol::{Family, HookName};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::exit::CliError;

/// The Python SDK module, copied into every Python scaffold.
pub const PYTHON_SDK: &str = include_str!("../../../sdk/python/agent_runner_host.py");

/// The language of a scaffold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// A Cargo project using `agent-runner-sdk`.
    Rust,
    /// A Python script with the stdlib-only SDK, built into a zipapp.
    Python,
}

/// What to scaffold.
#[derive(Debug)]
pub struct NewOptions {
    /// The language.
    pub lang: Lang,
    /// The host's name (also the project directory and the executable's name).
    pub name: String,
    /// The family of its one hook.
    pub family: Family,
    /// The parent directory of the new project.
    pub dir: PathBuf,
    /// Rust only: depend on the SDK at this path instead of the registry version.
    pub sdk_path: Option<PathBuf>,
}

/// Writes the scaffold and returns what to tell the user, line by line.
///
/// Errors: a bad name (usage, exit 2), an existing target directory or an I/O failure
/// (exit 1), and for Python a failed zipapp build (exit 1, naming the command).
pub fn run(opts: &NewOptions) -> Result<Vec<String>, CliError> {
    HookName::try_from(opts.name.clone()).map_err(|msg| CliError {
        code: crate::exit::USAGE,
        message: format!("plugin new: host name: {msg}"),
    })?;
    let hook = opts.name.replace('-', "_");
    let root = opts.dir.join(&opts.name);
    if root.exists() {
        return Err(CliError::failure(format!(
            "plugin new: {} already exists; pick another NAME or --dir",
            root.display()
        )));
    }
    let fill = |template: &str| {
        template
            .replace("{{NAME}}", &opts.name)
            .replace("{{HOOK}}", &hook)
    };
    let mut lines = Vec::new();
    match opts.lang {
        Lang::Python => {
            let main = python_template(opts.family);
            write(&root.join("src/__main__.py"), &fill(main))?;
            write(&root.join("src/agent_runner_host.py"), PYTHON_SDK)?;
            let build = root.join("build.sh");
            write(
                &build,
                &fill(include_str!("../../templates/python_build.sh")),
            )?;
            let out = Command::new("bash").arg(&build).output().map_err(|e| {
                CliError::failure(format!(
                    "plugin new: cannot run bash {}: {e}",
                    build.display()
                ))
            })?;
            if !out.status.success() {
                return Err(CliError::failure(format!(
                    "plugin new: `bash {}` failed: {}",
                    build.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            let exe = root.join(format!("{}.pyz", opts.name));
            lines.push(format!(
                "created {} ({} `{hook}`), built {}",
                root.display(),
                opts.family,
                exe.display()
            ));
            lines.push(format!(
                "check it:  agent-runner plugin check -- {}",
                exe.display()
            ));
            lines.push(format!("rebuild after edits:  bash {}", build.display()));
            push_config_hint(&mut lines, &opts.name, &exe, opts.family);
        }
        Lang::Rust => {
            let main = rust_template(opts.family);
            let dep = match &opts.sdk_path {
                Some(path) => format!(
                    "agent-runner-sdk = {{ path = {:?} }}",
                    absolute(path).display().to_string()
                ),
                None => format!("agent-runner-sdk = \"{}\"", env!("CARGO_PKG_VERSION")),
            };
            let manifest =
                fill(include_str!("../../templates/rust_Cargo.toml")).replace("{{SDK_DEP}}", &dep);
            write(&root.join("Cargo.toml"), &manifest)?;
            write(&root.join("src/main.rs"), &fill(main))?;
            let exe = root.join("target/release").join(&opts.name);
            lines.push(format!(
                "created {} ({} `{hook}`)",
                root.display(),
                opts.family
            ));
            lines.push(format!(
                "build it:  cargo build --release --manifest-path {}",
                root.join("Cargo.toml").display()
            ));
            lines.push(format!(
                "check it:  agent-runner plugin check -- {}",
                exe.display()
            ));
            push_config_hint(&mut lines, &opts.name, &exe, opts.family);
        }
    }
    Ok(lines)
}

/// The Python scaffold's `__main__.py` for a host with one hook of `family`.
fn python_template(family: Family) -> &'static str {
    match family {
        Family::SpawnHook => include_str!("../../templates/python_spawn_hook.py"),
        Family::DirtyHandler => include_str!("../../templates/python_dirty_handler.py"),
        Family::PreRound => include_str!("../../templates/python_pre_round.py"),
        Family::ContextEnricher => include_str!("../../templates/python_context_enricher.py"),
        Family::ServeStartup => include_str!("../../templates/python_serve_startup.py"),
        Family::Detector => include_str!("../../templates/python_detector.py"),
    }
}

/// The Rust scaffold's `main.rs` for a host with one hook of `family`.
fn rust_template(family: Family) -> &'static str {
    match family {
        Family::SpawnHook => include_str!("../../templates/rust_spawn_hook.rs"),
        Family::DirtyHandler => include_str!("../../templates/rust_dirty_handler.rs"),
        Family::PreRound => include_str!("../../templates/rust_pre_round.rs"),
        Family::ContextEnricher => include_str!("../../templates/rust_context_enricher.rs"),
        Family::ServeStartup => include_str!("../../templates/rust_serve_startup.rs"),
        Family::Detector => include_str!("../../templates/rust_detector.rs"),
    }
}

fn push_config_hint(lines: &mut Vec<String>, name: &str, exe: &Path, family: Family) {
    lines.push("then in agent-runner.toml:".into());
    lines.push(format!(
        "  [plugins.pin]\n  {name} = \"<sha256sum of {}>\"",
        exe.display()
    ));
    lines.push(format!(
        "  [plugins.hosts.{name}]\n  command = [{:?}]\n  provides = [\"{family}\"]",
        exe.display().to_string()
    ));
}

fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            CliError::failure(format!(
                "plugin new: cannot create {}: {e}",
                parent.display()
            ))
        })?;
    }
    std::fs::write(path, text)
        .map_err(|e| CliError::failure(format!("plugin new: cannot write {}: {e}", path.display())))
}
