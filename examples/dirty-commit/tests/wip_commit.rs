//! Drives the built `dirty-commit` binary over pipes.

use agent_runner_sdk::serde_json::{json, Value};
use agent_runner_sdk::testing::{context, initialize_params, HostProcess};
use std::process::Command;
use std::time::Duration;

fn start(config: Value) -> (HostProcess, Value) {
    let mut host = HostProcess::spawn(Command::new(env!("CARGO_BIN_EXE_dirty-commit"))).unwrap();
    let init = host
        .call("initialize", initialize_params("/tmp", config))
        .unwrap();
    (host, init)
}

fn ask(host: &mut HostProcess, files: &[String]) -> Value {
    let params = json!({"hook": "wip_commit", "ctx": context("/tmp", 7), "dirty_files": files});
    host.call("dirty_handler/handle_dirty", params).unwrap()["result"].clone()
}

fn names(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("f{i}.rs")).collect()
}

#[test]
fn commits_all_dirty_files_naming_them() {
    let (mut host, init) = start(json!({}));
    assert_eq!(
        init["result"]["hooks"],
        json!([{"family": "dirty_handler", "name": "wip_commit", "priority": 100}])
    );
    let files = vec!["src/a.rs".to_owned(), "notes.md".to_owned()];
    assert_eq!(
        ask(&mut host, &files),
        json!({"action": "commit", "message": "wip: round 7: src/a.rs, notes.md", "paths": files})
    );
    assert_eq!(
        ask(&mut host, &names(10))["message"],
        "wip: round 7: f1.rs, f2.rs, f3.rs, f4.rs, f5.rs, f6.rs, f7.rs, f8.rs, f9.rs, f10.rs"
    );
    let twelve = ask(&mut host, &names(12));
    assert_eq!(
        twelve["message"],
        "wip: round 7: f1.rs, f2.rs, f3.rs, f4.rs, f5.rs, f6.rs, f7.rs, f8.rs, f9.rs, f10.rs, … and 2 more"
    );
    assert_eq!(twelve["paths"], json!(names(12)));
    assert_eq!(ask(&mut host, &[]), Value::Null);
    assert!(host
        .close_and_wait(Duration::from_secs(2))
        .unwrap()
        .unwrap()
        .success());
}

#[test]
fn uses_the_configured_prefix_and_caps_the_message() {
    let (mut host, _) = start(json!({"prefix": "[auto] "}));
    let files = vec!["x".repeat(3000), "y".repeat(3000)];
    let result = ask(&mut host, &files[..1]);
    assert_eq!(
        result["message"],
        format!("[auto] round 7: {}", "x".repeat(3000))
    );
    let long = ask(&mut host, &files);
    assert_eq!(long["message"].as_str().unwrap().chars().count(), 4096);
    assert_eq!(long["paths"], json!(files));
}

#[test]
fn rejects_bad_config_at_initialize() {
    let (_host, init) = start(json!({"prefix": 1}));
    assert_eq!(init["error"]["code"], -32000);
    assert_eq!(
        init["error"]["message"],
        "config: `prefix` must be a string, got a number (1)"
    );
    let (_host, init) = start(json!({"message": "x"}));
    assert_eq!(
        init["error"]["message"],
        "config: unknown key `message` (known keys: prefix)"
    );
}
