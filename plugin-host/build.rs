//! Makes `AGENT_RUNNER_PLUGIN_HOST_BUILD_ID`: the first 16 hex digits of the sha256 of this
//! crate's version, manifest and every source file (sorted by path). The supervisor and the
//! `plugin-host` launcher both carry it, and a launcher refuses a plan of another build
//! (docs/security.md "The launcher").

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.sort();
    let mut hasher = Sha256::new();
    hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
    for path in std::iter::once(root.join("Cargo.toml")).chain(files) {
        hasher.update(
            path.strip_prefix(&root)
                .unwrap_or(&path)
                .to_string_lossy()
                .as_bytes(),
        );
        hasher.update(std::fs::read(&path).unwrap_or_default());
    }
    let digest: String = hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("cargo:rustc-env=AGENT_RUNNER_PLUGIN_HOST_BUILD_ID={digest}");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
}
