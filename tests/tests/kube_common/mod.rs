//! Shared by `kube_manifests.rs` and `job_exits.rs`: the manifests of deploy/kubernetes/
//! read as JSON, PyPI's `kubernetes-validate`, and Kubernetes' reading of a Job's
//! `podFailurePolicy`. The validator and PyYAML live in the venv tests/setup.d's
//! `50-kubernetes-validate.sh` makes under target/kubernetes-validate/; without it the
//! tests fail, saying to run tests/setup.sh.

#![allow(dead_code)] // each test target uses its own subset

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::workspace_root;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The venv's `bin/`.
fn venv_bin() -> PathBuf {
    let bin = workspace_root().join("target/kubernetes-validate/venv/bin");
    assert!(
        bin.join("kubernetes-validate").is_file(),
        "{} is missing: run tests/setup.sh (tests/setup.d/50-kubernetes-validate.sh)",
        bin.display()
    );
    bin
}

/// Every manifest under deploy/kubernetes/, sorted.
pub fn manifests() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("deploy/kubernetes").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&workspace_root().join("deploy/kubernetes"), &mut out);
    out.sort();
    out
}

/// The documents of `file` (relative to the workspace or absolute), empty ones left out.
pub fn documents(file: &Path) -> Vec<Value> {
    let file = workspace_root().join(file);
    let out = Command::new(venv_bin().join("python"))
        .args([
            "-c",
            "import json, sys, yaml\nprint(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))",
        ])
        .arg(&file)
        .output()
        .expect("run the venv's python");
    assert!(
        out.status.success(),
        "{}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    match serde_json::from_slice(&out.stdout).expect("JSON") {
        Value::Array(docs) => docs,
        other => panic!("not a list: {other}"),
    }
}

/// The one document of `kind` in `file`.
pub fn document(file: &str, kind: &str) -> Value {
    let mut found: Vec<Value> = documents(Path::new(file))
        .into_iter()
        .filter(|d| d["kind"] == kind)
        .collect();
    assert_eq!(found.len(), 1, "{file}: one {kind}");
    found.remove(0)
}

/// `kubernetes-validate --strict` on `files`: (passed, its output).
pub fn validate(files: &[PathBuf]) -> (bool, String) {
    let out = Command::new(venv_bin().join("kubernetes-validate"))
        .arg("--strict")
        .args(files)
        .output()
        .expect("run kubernetes-validate");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// What a Job does with a pod whose container `container` ended with `code`, the pod
/// carrying `conditions` (types, status True): "Complete" for 0, else the `action` of the
/// first rule of `policy` (a `podFailurePolicy`) that matches, else "Count" (batch/v1: a
/// failed pod no rule matches counts against `backoffLimit`). A rule's `onExitCodes`
/// matches when its `containerName` is absent or `container`, and `code` is (`In`) or is
/// not (`NotIn`) among its values; `onPodConditions` when the pod has one of its types.
pub fn job_action(policy: &Value, container: &str, code: i64, conditions: &[&str]) -> String {
    if code == 0 {
        return "Complete".to_owned();
    }
    for rule in policy["rules"].as_array().expect("rules") {
        let on = &rule["onExitCodes"];
        let matched = if on.is_object() {
            let name_ok = on["containerName"].is_null() || on["containerName"] == container;
            let listed = on["values"]
                .as_array()
                .expect("values")
                .iter()
                .any(|v| v.as_i64() == Some(code));
            let code_ok = match on["operator"].as_str() {
                Some("In") => listed,
                Some("NotIn") => !listed,
                other => panic!("operator {other:?}"),
            };
            name_ok && code_ok
        } else {
            rule["onPodConditions"]
                .as_array()
                .expect("onExitCodes or onPodConditions")
                .iter()
                .any(|c| {
                    conditions.iter().any(|t| c["type"] == *t)
                        && (c["status"].is_null() || c["status"] == "True")
                })
        };
        if matched {
            return rule["action"].as_str().expect("action").to_owned();
        }
    }
    "Count".to_owned()
}
