//! Drives the built `spawn-pause-file` binary over pipes.

use agent_runner_sdk::serde_json::{json, Value};
use agent_runner_sdk::testing::{context, initialize_params, HostProcess};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn work_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("spawn-pause-file-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn start(dir: &str, config: Value) -> (HostProcess, Value) {
    let mut host =
        HostProcess::spawn(Command::new(env!("CARGO_BIN_EXE_spawn-pause-file"))).unwrap();
    let init = host
        .call("initialize", initialize_params(dir, config))
        .unwrap();
    (host, init)
}

fn ask(host: &mut HostProcess, dir: &str) -> Value {
    let params = json!({"hook": "pause_file", "ctx": context(dir, 3),
                        "spawn": {"argv": ["claude"], "env_names": []}});
    host.call("spawn_hook/before_spawn", params).unwrap()["result"].clone()
}

#[test]
fn defers_while_the_default_pause_file_exists() {
    let dir = work_dir("default");
    let d = dir.to_str().unwrap();
    let (mut host, init) = start(d, json!({}));
    assert_eq!(
        init["result"]["hooks"],
        json!([{"family": "spawn_hook", "name": "pause_file"}])
    );
    assert_eq!(ask(&mut host, d)["action"], "proceed");
    std::fs::write(dir.join(".agent-runner-pause"), "").unwrap();
    assert_eq!(
        ask(&mut host, d),
        json!({"action": "defer", "defer_s": 60, "reason": "paused: pause file present"})
    );
    std::fs::remove_file(dir.join(".agent-runner-pause")).unwrap();
    assert_eq!(ask(&mut host, d)["action"], "proceed");
    assert!(host
        .close_and_wait(Duration::from_secs(2))
        .unwrap()
        .unwrap()
        .success());
}

#[test]
fn honours_configured_file_defer_and_reason() {
    let dir = work_dir("configured");
    let d = dir.to_str().unwrap();
    let config = json!({"file": "ctl/PAUSE", "defer_s": 5, "reason": "maintenance"});
    let (mut host, _) = start(d, config);
    std::fs::write(dir.join(".agent-runner-pause"), "").unwrap();
    assert_eq!(ask(&mut host, d)["action"], "proceed");
    std::fs::create_dir_all(dir.join("ctl")).unwrap();
    std::fs::write(dir.join("ctl/PAUSE"), "").unwrap();
    assert_eq!(
        ask(&mut host, d),
        json!({"action": "defer", "defer_s": 5, "reason": "maintenance"})
    );
}

#[test]
fn declares_the_configured_hook_name() {
    let dir = work_dir("named");
    let d = dir.to_str().unwrap();
    let (mut host, init) = start(d, json!({"hook": "pause_file_2"}));
    assert_eq!(
        init["result"]["hooks"],
        json!([{"family": "spawn_hook", "name": "pause_file_2"}])
    );
    let params = json!({"hook": "pause_file_2", "ctx": context(d, 3),
                        "spawn": {"argv": ["claude"], "env_names": []}});
    let answer = host.call("spawn_hook/before_spawn", params).unwrap();
    assert_eq!(answer["result"]["action"], "proceed", "{answer}");
}

#[test]
fn rejects_bad_config_at_initialize() {
    let dir = work_dir("bad");
    let d = dir.to_str().unwrap();
    for (config, message) in [
        (
            json!({"defer_s": "60"}),
            "config: `defer_s` must be an integer in 0..=86400, got a string (\"60\")",
        ),
        (
            json!({"defer_s": 86401}),
            "config: `defer_s` must be an integer in 0..=86400, got 86401",
        ),
        (
            json!({"file": 3}),
            "config: `file` must be a string, got a number (3)",
        ),
        (
            json!({"reason": null}),
            "config: `reason` must be a string, got null (null)",
        ),
        (
            json!({"path": "x"}),
            "config: unknown key `path` (known keys: file, defer_s, reason, hook)",
        ),
    ] {
        let (_host, init) = start(d, config);
        assert_eq!(init["error"]["code"], -32000, "{init}");
        assert_eq!(init["error"]["message"], message);
    }
}
