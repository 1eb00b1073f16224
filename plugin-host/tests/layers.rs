//! The crate's layers (docs/security.md "The launcher"): `host` and `agent` build on `common`
//! and never on each other; `common` builds on neither; only `launcher` uses all three.
//! Read from the sources, so a new import across the lines fails here.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(file, line)` of each use of `crate::<module>` in the code (not in comments) of
/// `src/<folder>/`.
fn uses(folder: &str, module: &str) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src")
            .join(folder),
        &mut files,
    );
    assert!(!files.is_empty(), "no sources in src/{folder}");
    let needle = format!("crate::{module}::");
    let mut found = Vec::new();
    for file in files {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let code = line.split("//").next().unwrap_or_default();
            if code.contains(&needle) {
                found.push((file.clone(), line.trim().to_owned()));
            }
        }
    }
    found
}

#[test]
fn host_and_agent_use_common_and_never_each_other() {
    for (folder, forbidden) in [
        ("host", "agent"),
        ("agent", "host"),
        ("host", "launcher"),
        ("agent", "launcher"),
        ("common", "host"),
        ("common", "agent"),
        ("common", "launcher"),
    ] {
        let found = uses(folder, forbidden);
        assert!(
            found.is_empty(),
            "src/{folder} uses crate::{forbidden}: {found:#?}"
        );
    }
    // The check can fail: the launcher does use both.
    assert!(!uses("launcher", "host").is_empty());
    assert!(!uses("launcher", "agent").is_empty());
}
