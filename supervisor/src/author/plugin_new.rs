//! `agent-runner plugin new --lang rust|python NAME`: writes a working host (one hook of
//! the `--family` asked for) that passes `plugin check` as generated. Templates live in
//! `supervisor/templates/`; the Python scaffold carries a copy of the Python SDK module and
//! of its zipapp builder, and is built into one pinnable zipapp (`NAME.pyz`, with bytecode). The Rust scaffold carries a copy of the
//! Rust SDK and the protocol crate under `vendor/` (neither is published on crates.io), so
//! it builds on a machine that reaches only crates.io and has no checkout of this
//! repository.

use agent_runner_protocol::{Family, HookName};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::exit::CliError;

/// The Python SDK module, copied into every Python scaffold.
pub(crate) const PYTHON_SDK: &str = include_str!("../../../sdk/python/agent_runner_host.py");

/// The zipapp builder (`sdk/python/build_pyz.py`: sources plus checked bytecode, prints the
/// pin), copied into every Python scaffold beside `build.sh`.
const PYTHON_BUILD_PYZ: &str = include_str!("../../../sdk/python/build_pyz.py");

/// The Rust SDK and the protocol crate, copied into every Rust scaffold under `vendor/`:
/// (path inside the scaffold, contents). The manifests are templates with `{{VERSION}}`;
/// `vendored_manifests_match_the_workspace` keeps their dependencies those of `sdk/` and
/// `protocol/`.
const RUST_VENDOR: &[(&str, &str)] = &[
    (
        "vendor/agent-runner-sdk/Cargo.toml",
        include_str!("../../templates/vendor/sdk_Cargo.toml"),
    ),
    (
        "vendor/agent-runner-sdk/src/lib.rs",
        include_str!("../../../sdk/src/lib.rs"),
    ),
    (
        "vendor/agent-runner-sdk/src/config.rs",
        include_str!("../../../sdk/src/config.rs"),
    ),
    (
        "vendor/agent-runner-sdk/src/selfcheck.rs",
        include_str!("../../../sdk/src/selfcheck.rs"),
    ),
    (
        "vendor/agent-runner-sdk/src/serve.rs",
        include_str!("../../../sdk/src/serve.rs"),
    ),
    (
        "vendor/agent-runner-sdk/src/testing.rs",
        include_str!("../../../sdk/src/testing.rs"),
    ),
    (
        "vendor/agent-runner-protocol/Cargo.toml",
        include_str!("../../templates/vendor/protocol_Cargo.toml"),
    ),
    (
        "vendor/agent-runner-protocol/src/lib.rs",
        include_str!("../../../protocol/src/lib.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/error_codes.rs",
        include_str!("../../../protocol/src/error_codes.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/family.rs",
        include_str!("../../../protocol/src/family.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/limits.rs",
        include_str!("../../../protocol/src/limits.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/line.rs",
        include_str!("../../../protocol/src/line.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/methods.rs",
        include_str!("../../../protocol/src/methods.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/printable.rs",
        include_str!("../../../protocol/src/printable.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/redact.rs",
        include_str!("../../../protocol/src/redact.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/reflog.rs",
        include_str!("../../../protocol/src/reflog.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/schema.rs",
        include_str!("../../../protocol/src/schema.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/tail.rs",
        include_str!("../../../protocol/src/tail.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/types.rs",
        include_str!("../../../protocol/src/types.rs"),
    ),
    (
        "vendor/agent-runner-protocol/src/validate.rs",
        include_str!("../../../protocol/src/validate.rs"),
    ),
];

/// The language of a scaffold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Lang {
    /// A Cargo project using `agent-runner-sdk`.
    Rust,
    /// A Python script with the stdlib-only SDK, built into a zipapp.
    Python,
}

/// What to scaffold.
#[derive(Debug)]
pub(crate) struct NewOptions {
    /// The language.
    pub lang: Lang,
    /// The host's name (also the project directory and the executable's name).
    pub name: String,
    /// The family of its one hook.
    pub family: Family,
    /// The parent directory of the new project.
    pub dir: PathBuf,
    /// Rust only: depend on the SDK at this path (a checkout of this repository) instead of
    /// the copy written into the scaffold.
    pub sdk_path: Option<PathBuf>,
}

/// Writes the scaffold and returns what to tell the user, line by line.
///
/// Errors: a bad name (usage, exit 2), an existing target directory or an I/O failure
/// (exit 1), and for Python a failed zipapp build (exit 1, naming the command).
pub(crate) fn run(opts: &NewOptions) -> Result<Vec<String>, CliError> {
    HookName::try_from(opts.name.clone()).map_err(|msg| CliError {
        code: crate::exit::USAGE,
        message: format!("plugin new: host name: {msg}"),
    })?;
    let hook = opts.name.replace('-', "_");
    // Absolute, so the paths printed (for `plugin check` and the config's `command`, which
    // is taken relative to the config file's directory) hold from any directory.
    let dir = std::path::absolute(&opts.dir).map_err(|e| {
        CliError::failure(format!(
            "plugin new: cannot resolve {}: {e}",
            opts.dir.display()
        ))
    })?;
    let root = normalize(&dir).join(&opts.name);
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
            write(&root.join("build_pyz.py"), PYTHON_BUILD_PYZ)?;
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
            let pin = agent_runner_plugin_host::host::pin::open_and_hash(&exe)
                .map(|v| v.sha256.to_string())
                .map_err(|e| CliError::failure(format!("plugin new: {e}")))?;
            push_config_hint(&mut lines, &opts.name, &exe, opts.family, Some(&pin));
            return Ok(lines);
        }
        Lang::Rust => {
            let main = rust_template(opts.family);
            let dep = match &opts.sdk_path {
                Some(path) => format!(
                    "agent-runner-sdk = {{ path = {:?} }}",
                    absolute(path).display().to_string()
                ),
                None => {
                    for (path, text) in RUST_VENDOR {
                        let text = text.replace("{{VERSION}}", env!("CARGO_PKG_VERSION"));
                        write(&root.join(path), &text)?;
                    }
                    "agent-runner-sdk = { path = \"vendor/agent-runner-sdk\" }".to_owned()
                }
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
            push_config_hint(&mut lines, &opts.name, &exe, opts.family, None);
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
        Family::PostRound => include_str!("../../templates/python_post_round.py"),
        Family::OutputWatch => include_str!("../../templates/python_output_watch.py"),
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
        Family::PostRound => include_str!("../../templates/rust_post_round.rs"),
        Family::OutputWatch => include_str!("../../templates/rust_output_watch.rs"),
    }
}

/// The config lines to paste: the pin in the form a config accepts (`sha256:<hex>`) when
/// the executable exists (`pin`), else how to get it once built.
fn push_config_hint(
    lines: &mut Vec<String>,
    name: &str,
    exe: &Path,
    family: Family,
    pin: Option<&str>,
) {
    lines.push("then in agent-runner.toml:".into());
    match pin {
        Some(pin) => lines.push(format!("  [plugins.pin]\n  {name} = \"{pin}\"")),
        None => lines.push(format!(
            "  [plugins.pin]\n  {name} = \"sha256:…\"   # once built, `agent-runner doctor` prints this line ready to paste"
        )),
    }
    lines.push(format!(
        "  [plugins.hosts.{name}]\n  command = [{:?}]\n  provides = [\"{family}\"]",
        exe.display().to_string()
    ));
    lines.push(
        "keep the host outside the agent's work tree (copy it, then pin the copy): the agent \
         can rewrite files there, and `doctor` warns about a host inside it"
            .into(),
    );
}

/// `path` without `.` components (`std::path::absolute` keeps a trailing `./`).
fn normalize(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::RUST_VENDOR;
    use toml::Value;

    /// A dependency's version requirement and features, `workspace = true` resolved
    /// against the workspace manifest.
    fn dep(spec: &Value, workspace: &Value, name: &str) -> (Option<String>, Vec<String>) {
        let features = |v: &Value| -> Vec<String> {
            v.get("features")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let version = |v: &Value| match v {
            Value::String(s) => Some(s.clone()),
            other => other
                .get("version")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        if spec.get("workspace").and_then(Value::as_bool) == Some(true) {
            let base = &workspace["workspace"]["dependencies"][name];
            let mut all = features(base);
            all.extend(features(spec));
            (version(base), all)
        } else {
            (version(spec), features(spec))
        }
    }

    #[test]
    fn vendored_manifests_match_the_workspace() {
        let workspace: Value = include_str!("../../../Cargo.toml").parse().unwrap();
        for (real, vendored) in [
            (include_str!("../../../sdk/Cargo.toml"), RUST_VENDOR[0].1),
            (
                include_str!("../../../protocol/Cargo.toml"),
                RUST_VENDOR[6].1,
            ),
        ] {
            let real: Value = real.parse().unwrap();
            let vendored: Value = vendored.parse().unwrap();
            let real_deps = real["dependencies"].as_table().unwrap();
            let vendored_deps = vendored["dependencies"].as_table().unwrap();
            let names = |t: &toml::Table| t.keys().cloned().collect::<Vec<_>>();
            assert_eq!(names(real_deps), names(vendored_deps));
            for (name, spec) in real_deps {
                if name.starts_with("agent-runner-") {
                    continue;
                }
                let (want_version, want_features) = dep(spec, &workspace, name);
                let (got_version, got_features) = dep(&vendored_deps[name], &workspace, name);
                assert_eq!(want_version, got_version, "{name}");
                for f in want_features {
                    assert!(got_features.contains(&f), "{name}: feature {f} missing");
                }
            }
        }
        assert!(RUST_VENDOR[0].0.ends_with("agent-runner-sdk/Cargo.toml"));
        // Every source file of both crates is carried (binaries of the SDK excepted).
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (dir, vendored) in [
            ("sdk", "agent-runner-sdk"),
            ("protocol", "agent-runner-protocol"),
        ] {
            for entry in std::fs::read_dir(root.join(dir).join("src"))
                .unwrap()
                .flatten()
            {
                let name = entry.file_name().to_string_lossy().into_owned();
                if !name.ends_with(".rs") {
                    continue;
                }
                let want = format!("vendor/{vendored}/src/{name}");
                assert!(
                    RUST_VENDOR.iter().any(|(path, _)| *path == want),
                    "{dir}/src/{name} is not carried into the Rust scaffold"
                );
            }
        }
        assert!(RUST_VENDOR[6]
            .0
            .ends_with("agent-runner-protocol/Cargo.toml"));
    }
}
