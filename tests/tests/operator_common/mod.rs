//! Shared by the `operator_*` tests (and the live page's): the document JSON Schemas, a byte-for-byte snapshot of a
//! directory, and `peek --json` as a value.

#![allow(dead_code)] // each test target uses its own subset

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{sha256_hex, workspace_root, Project};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// `docs/schema/<file>`, compiled.
fn document_validator(file: &str) -> jsonschema::Validator {
    let path = workspace_root().join("docs/schema").join(file);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read schema"))
        .expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

/// Panics with every violation when `doc` does not match `docs/schema/<file>`.
pub fn assert_schema(file: &str, doc: &Value) {
    let errors: Vec<String> = document_validator(file)
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the document breaks {file}:\n{}\n{doc:#}",
        errors.join("\n")
    );
}

/// Panics with every violation when `doc` does not match the peek schema.
pub fn assert_peek_schema(doc: &Value) {
    assert_schema("peek.schema.json", doc);
}

/// `peek --json` of `p` (exit 0 asserted).
pub fn peek_json(p: &Project, extra: &[&str]) -> Value {
    let mut args = vec!["peek", "--json"];
    args.extend_from_slice(extra);
    let out = p.run(&args);
    out.assert_code(0);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("peek --json: {e}\n{out}"))
}

/// Every entry under `dir`: path → (kind, sha256 of contents, size, mtime in ns). A
/// missing `dir` is an empty map.
pub fn snapshot(dir: &Path) -> BTreeMap<String, (char, String, u64, i128)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let e = e.expect("dir entry");
            let path = e.path();
            let meta = std::fs::symlink_metadata(&path).expect("metadata");
            let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if meta.is_dir() {
                out.insert(rel, ('d', String::new(), 0, mtime));
                stack.push(path);
            } else if !meta.is_file() {
                // The control socket (and any other special file): no content to hash.
                out.insert(rel, ('s', String::new(), 0, mtime));
            } else {
                out.insert(rel, ('f', sha256_hex(&path), meta.len(), mtime));
            }
        }
    }
    let meta = std::fs::metadata(dir).ok();
    if let Some(meta) = meta {
        out.insert(
            ".".into(),
            (
                'd',
                String::new(),
                0,
                i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ),
        );
    }
    out
}
