//! Version managers' shims (docs/security.md, "Shims"): an agent command that resolves to
//! a shim — a small program a version manager puts on `PATH` that runs the manager, which
//! then picks and runs the real program — runs files of the manager's own tree, which the
//! agent's sandbox grants only when it lies in the agent's home directory or the system.
//! A pyenv root in another home (`/root/.pyenv` while the agent's `HOME` is elsewhere), or
//! under `/srv`, left a confined agent at `…/libexec/pyenv: Permission denied` (exit 126).
//!
//! So the grants follow what the shim runs: for each manager recognised here, the tree it
//! runs from is read and executed by the agent (passed with `[agent.sandbox] read_paths`,
//! Landlock's read + execute on the tree). Nothing is written there; nothing is granted that
//! holds or lies in a credential store or the supervisor's state dir. `doctor` says which
//! manager was found and what it grants (`agent_shim`).
//!
//! Recognised, from the shim itself (the executable the exec finds, before and after its
//! links):
//! - **pyenv**: a script `exec`ing `…/libexec/pyenv exec`; its tree is its
//!   `PYENV_ROOT` (written into every shim).
//! - **asdf**: a script running `asdf exec`; its tree is the shims directory's parent
//!   (`ASDF_DATA_DIR`), and the `asdf` it runs (the prefix of its `bin/`).
//! - **mise**: a link to the `mise` executable in a `shims` directory; its tree is the
//!   shims directory's parent (mise's data directory), and the `mise` executable.
//! - **volta**: a link to (or copy of) `volta-shim` in `<VOLTA_HOME>/bin`; its tree is
//!   `VOLTA_HOME`.
//!
//! A version a manager was pointed at rather than made (`mise link`, `asdf`'s and pyenv's
//! `system`-like links: an entry of its installs that is a link out of its tree) is granted
//! where the link leads, as the shim runs it there: pyenv's `versions/<v>`, asdf's and
//! mise's `installs/<tool>/<v>`.
//!
//! nvm, pipx and `uv tool` install no shims: their entry is a script or a link inside an
//! installation prefix (`…/versions/node/v22/bin`, `…/venvs/aider-chat/bin`) that the
//! sandbox's installation-prefix and interpreter rules already grant
//! (`agent_runner_plugin_host::agent::policy::install_prefix`).

use std::path::{Path, PathBuf};

/// At most this many bytes of a shim script are read.
const SHIM_MAX_BYTES: u64 = 16 * 1024;

/// A version manager's shim the agent's command resolves to, and what it runs from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shim {
    /// `pyenv`, `asdf`, `mise`, `volta`.
    pub manager: &'static str,
    /// The shim, as the exec finds it.
    pub path: PathBuf,
    /// The trees the agent reads and executes for it (existing, canonical).
    pub grants: Vec<PathBuf>,
}

impl Shim {
    /// One line for `doctor`.
    pub(crate) fn describe(&self) -> String {
        let grants: Vec<String> = self
            .grants
            .iter()
            .map(|g| g.display().to_string())
            .collect();
        format!(
            "{} is a {} shim: the agent's sandbox follows what it runs, granting read and execute on {}",
            self.path.display(),
            self.manager,
            grants.join(", ")
        )
    }
}

/// The shim `executable` (as found on `PATH`) is, if any; `path` is the agent's `PATH`
/// (for the `asdf` a shim runs by name); `refused` are the trees no grant may hold or lie
/// in (the credential stores, the state dir).
pub(crate) fn find(
    executable: &Path,
    path: Option<&std::ffi::OsStr>,
    refused: &[PathBuf],
) -> Option<Shim> {
    let real = executable.canonicalize().ok()?;
    let shims_parent = || {
        let dir = executable.parent()?;
        (dir.file_name()? == "shims").then(|| dir.parent().map(Path::to_owned))?
    };
    let real_name = real.file_name()?.to_str()?;
    let (manager, mut trees) = match real_name {
        "mise" => ("mise", vec![shims_parent()?, real.clone()]),
        "volta-shim" => ("volta", vec![executable.parent()?.parent()?.to_owned()]),
        _ => script_shim(&real, executable, path)?,
    };
    // Versions linked in from elsewhere run where their links lead.
    let (installs, depth) = match manager {
        "pyenv" => ("versions", 1),
        "asdf" | "mise" => ("installs", 2),
        _ => ("", 0),
    };
    if let Some(root) = trees.first().cloned() {
        linked_out(&root.join(installs), depth, &mut trees);
    }
    trees.retain(|t| t.exists());
    let mut grants: Vec<PathBuf> = Vec::new();
    for tree in trees {
        let tree = tree.canonicalize().unwrap_or(tree);
        let clashes = refused
            .iter()
            .any(|r| r.starts_with(&tree) || tree.starts_with(r));
        if !clashes && !is_system(&tree) && !grants.contains(&tree) {
            grants.push(tree);
        }
    }
    (!grants.is_empty()).then(|| Shim {
        manager,
        path: executable.to_owned(),
        grants,
    })
}

/// The targets of the links `depth` levels below `dir` (`installs/<tool>/<version>`).
fn linked_out(dir: &Path, depth: u32, out: &mut Vec<PathBuf>) {
    if depth == 0 {
        return;
    }
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
        if depth == 1 {
            if let Some(target) = is_link.then(|| path.canonicalize().ok()).flatten() {
                out.push(target);
            }
        } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
            linked_out(&path, depth - 1, out);
        }
    }
}

/// A tree the sandbox never grants whole (nor needs to).
fn is_system(tree: &Path) -> bool {
    ["/", "/usr", "/usr/local", "/home", "/root", "/tmp"]
        .iter()
        .any(|s| tree == Path::new(s))
}

/// pyenv's or asdf's shell shim at `real` (reached as `executable`): the manager and the
/// trees it runs from.
fn script_shim(
    real: &Path,
    executable: &Path,
    path: Option<&std::ffi::OsStr>,
) -> Option<(&'static str, Vec<PathBuf>)> {
    use std::io::Read;
    let file = std::fs::File::open(real).ok()?;
    let mut text = String::new();
    file.take(SHIM_MAX_BYTES).read_to_string(&mut text).ok()?;
    text.starts_with("#!").then_some(())?;
    let shims_dir = executable.parent()?;
    if text.contains("/libexec/pyenv\" exec") || text.contains("/libexec/pyenv exec") {
        let root = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("export PYENV_ROOT="))
            .map(|v| PathBuf::from(v.trim_matches('"')))
            .or_else(|| shims_dir.parent().map(Path::to_owned))?;
        return Some(("pyenv", vec![root]));
    }
    let runs_asdf = text.lines().find(|l| {
        let l = l.trim_start();
        l.starts_with("exec ") && l.contains("asdf") && l.contains(" exec ")
    })?;
    let mut trees: Vec<PathBuf> = shims_dir.parent().map(Path::to_owned).into_iter().collect();
    let program = runs_asdf.split_whitespace().nth(1)?.trim_matches('"');
    let asdf = if program.starts_with('/') {
        Some(PathBuf::from(program))
    } else {
        std::env::split_paths(path?)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    };
    if let Some(asdf) = asdf.and_then(|a| a.canonicalize().ok()) {
        let prefix = asdf
            .parent()
            .filter(|d| d.file_name().is_some_and(|n| n == "bin"))
            .and_then(Path::parent)
            .map(Path::to_owned);
        trees.push(prefix.unwrap_or(asdf));
    }
    Some(("asdf", trees))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn each_manager_s_shim_grants_its_tree() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        // pyenv: its root from the shim.
        let pyenv = d.join("srv/pyenv");
        write(
            &pyenv.join("shims/aider"),
            &format!(
                "#!/usr/bin/env bash\nset -e\nprogram=\"${{0##*/}}\"\nexport PYENV_ROOT=\"{}\"\nexec \"{}/libexec/pyenv\" exec \"$program\" \"$@\"\n",
                pyenv.display(),
                pyenv.display()
            ),
        );
        let shim = find(&pyenv.join("shims/aider"), None, &[]).unwrap();
        assert_eq!(
            (shim.manager, shim.grants.clone()),
            ("pyenv", vec![pyenv.clone()])
        );
        assert!(shim.describe().contains("pyenv shim"));
        // asdf: the data dir and the asdf it runs.
        let data = d.join("asdf-data");
        write(&d.join("asdf/bin/asdf"), "#!/bin/sh\n");
        write(
            &data.join("shims/node"),
            &format!(
                "#!/usr/bin/env bash\n# asdf-plugin: nodejs 22.0.0\nexec {} exec \"node\" \"$@\"\n",
                d.join("asdf/bin/asdf").display()
            ),
        );
        let shim = find(&data.join("shims/node"), None, &[]).unwrap();
        assert_eq!(shim.grants, [data.clone(), d.join("asdf")]);
        // mise: a link to its binary in its shims dir.
        write(&d.join("bin/mise"), "\x7fELF");
        std::fs::create_dir_all(d.join("mise/shims")).unwrap();
        std::os::unix::fs::symlink(d.join("bin/mise"), d.join("mise/shims/claude")).unwrap();
        let shim = find(&d.join("mise/shims/claude"), None, &[]).unwrap();
        assert_eq!(shim.grants, [d.join("mise"), d.join("bin/mise")]);
        // A version linked in (`mise link`) is granted where it lies.
        std::fs::create_dir_all(d.join("mise/installs/node")).unwrap();
        std::fs::create_dir_all(d.join("elsewhere/node-20")).unwrap();
        std::os::unix::fs::symlink(d.join("elsewhere/node-20"), d.join("mise/installs/node/20"))
            .unwrap();
        let shim = find(&d.join("mise/shims/claude"), None, &[]).unwrap();
        assert_eq!(
            shim.grants,
            [
                d.join("mise"),
                d.join("bin/mise"),
                d.join("elsewhere/node-20")
            ]
        );
        // volta.
        write(&d.join("volta/bin/volta-shim"), "\x7fELF");
        std::os::unix::fs::symlink(d.join("volta/bin/volta-shim"), d.join("volta/bin/claude"))
            .unwrap();
        let shim = find(&d.join("volta/bin/claude"), None, &[]).unwrap();
        assert_eq!(shim.grants, [d.join("volta")]);
        // Not shims: a plain script, a binary.
        write(&d.join("plain/run"), "#!/bin/sh\nexec claude\n");
        assert_eq!(find(&d.join("plain/run"), None, &[]), None);
        assert_eq!(find(&d.join("bin/mise"), None, &[]), None);
        // A tree holding a refused path is not granted.
        assert_eq!(
            find(&pyenv.join("shims/aider"), None, &[pyenv.join("secrets")]),
            None
        );
    }
}
