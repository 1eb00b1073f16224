//! The Python SDK (`sdk/python/agent_runner_host.py`) over real pipes: stdout protection,
//! silence before `initialize`, every error code the Rust SDK answers, result validation,
//! and a clean exit on EOF, with JSON through `_json` and through the `json` fallback.
//! The host is `tests/fixtures/sdk_probe_host.py`. Also `sdk/python/build_pyz.py`: the
//! zipapp it builds loads its modules from bytecode and is the same bytes when rebuilt.

use agent_runner_e2e::serde_json::{self, json, Value};
use agent_runner_e2e::workspace_root;
use std::io::Write;
use std::process::{Command, Stdio};

fn init() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocol_version": 1, "supervisor": {"name": "agent-runner", "version": "0.1.0"},
        "host": "probe", "project": "p", "work_dir": "/tmp", "log_dir": "/tmp", "state_dir": "/tmp",
        "config": {}, "sandbox": {"requested": "off", "achieved_tier": "unconfined",
        "landlock_abi": null, "seccomp": false}}})
}

fn call(id: u64, method: &str, hook: &str) -> Value {
    let ctx = json!({"work_dir": "/tmp", "log_dir": "/tmp", "project": "p", "round_num": 3,
        "phase": null, "agent_name": null, "agent_binary": "a", "agent_log_path": null,
        "dry_run": false, "vcs": null});
    let params = if method == "dirty_handler/handle_dirty" {
        json!({"hook": hook, "ctx": ctx, "dirty_files": ["a.rs", "b.rs"]})
    } else {
        json!({"hook": hook, "ctx": ctx, "spawn": {"argv": ["a"], "env_names": []}})
    };
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// How the probe host's interpreter finds JSON.
#[derive(Clone, Copy)]
enum Json {
    /// As shipped: the `_json` accelerator.
    Accelerated,
    /// `_json` blocked (`sys.modules["_json"] = None`), as on an interpreter without it:
    /// the SDK falls back to the `json` module.
    Fallback,
}

/// Feeds `lines` to the probe host, closes stdin, and returns (stdout lines as JSON,
/// stderr, exit code).
fn converse(lines: &[String]) -> (Vec<Value>, String, i32) {
    converse_with(Json::Accelerated, lines)
}

fn converse_with(json_path: Json, lines: &[String]) -> (Vec<Value>, String, i32) {
    let probe = workspace_root().join("tests/fixtures/sdk_probe_host.py");
    let mut command = Command::new("python3");
    match json_path {
        Json::Accelerated => command.arg(&probe),
        Json::Fallback => command.arg("-c").arg(format!(
            "import runpy, sys\nsys.modules['_json'] = None\n\
             runpy.run_path({:?}, run_name='__main__')",
            probe.display().to_string()
        )),
    };
    let mut child = command
        .env("PYTHONPATH", workspace_root().join("sdk/python"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let replies = stdout
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout line not JSON ({e}): {l}"))
        })
        .collect();
    (
        replies,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn error_code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

#[test]
fn python_sdk_speaks_the_protocol() {
    speaks_the_protocol(Json::Accelerated);
}

#[test]
fn python_sdk_speaks_the_protocol_without_the_json_accelerator() {
    speaks_the_protocol(Json::Fallback);
}

fn speaks_the_protocol(json_path: Json) {
    let big = format!("{{\"pad\": \"{}\"}}", "x".repeat(70_000));
    let lines = vec![
        call(9, "spawn_hook/before_spawn", "printer").to_string(), // before initialize
        init().to_string(),
        init().to_string().replace("\"id\":1", "\"id\":2"), // second initialize
        call(3, "spawn_hook/before_spawn", "printer").to_string(),
        call(4, "spawn_hook/before_spawn", "raiser").to_string(),
        call(5, "spawn_hook/before_spawn", "buggy").to_string(),
        call(6, "spawn_hook/before_spawn", "bad").to_string(),
        call(7, "spawn_hook/before_spawn", "nope").to_string(),
        call(8, "dirty_handler/handle_dirty", "wip").to_string(),
        "not json".into(),
        "[1, 2]".into(),
        "".into(),
        big,
        json!({"jsonrpc": "2.0", "id": 10, "method": "future/method"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 11, "method": "spawn_hook/before_spawn", "params": {"hook": "printer"}}).to_string(),
        json!({"jsonrpc": "2.0", "method": "note"}).to_string(), // notification: no reply
        json!({"jsonrpc": "2.0", "id": 12, "method": "shutdown"}).to_string(),
    ];
    let (replies, stderr, code) = converse_with(json_path, &lines);
    assert_eq!(code, 0, "exits cleanly on EOF; stderr: {stderr}");
    assert_eq!(replies.len(), 15, "{replies:#?}");
    let by_id = |id: u64| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no reply {id}"))
    };
    assert_eq!(error_code(by_id(9)), -32600);
    assert_eq!(
        by_id(1)["result"]["hooks"][4],
        json!({"family": "dirty_handler", "name": "wip", "priority": 50})
    );
    assert_eq!(by_id(1)["result"]["version"], "1.2.3");
    assert_eq!(error_code(by_id(2)), -32600);
    assert_eq!(
        by_id(3)["result"],
        json!({"action": "proceed", "defer_s": 0, "reason": "fine"})
    );
    assert_eq!(error_code(by_id(4)), -32000);
    assert_eq!(by_id(4)["error"]["data"], json!({"retry": true}));
    assert_eq!(error_code(by_id(5)), -32000);
    assert!(by_id(5)["error"]["message"]
        .as_str()
        .unwrap()
        .contains("ValueError: oops"));
    assert_eq!(error_code(by_id(6)), -32603);
    assert!(by_id(6)["error"]["message"]
        .as_str()
        .unwrap()
        .contains("`action`"));
    assert_eq!(error_code(by_id(7)), -32602);
    assert_eq!(
        by_id(8)["result"],
        json!({"action": "commit", "message": "wip", "paths": ["a.rs"]})
    );
    let null_ids: Vec<i64> = replies
        .iter()
        .filter(|r| r["id"].is_null())
        .map(error_code)
        .collect();
    assert_eq!(
        null_ids,
        [-32700, -32600, -32600],
        "parse error, batch, overlong line"
    );
    assert_eq!(error_code(by_id(10)), -32601);
    assert_eq!(error_code(by_id(11)), -32602);
    assert_eq!(by_id(12)["result"], Value::Null);
    // print() went to stderr, at import time and inside a hook.
    assert!(
        stderr.contains("imported: this must reach stderr"),
        "{stderr}"
    );
    assert!(stderr.contains("deciding round 3"), "{stderr}");
}

#[test]
fn python_sdk_refuses_other_versions_and_bad_config() {
    let v2 = init()
        .to_string()
        .replace("\"protocol_version\":1", "\"protocol_version\":2");
    let refuse = init()
        .to_string()
        .replace("\"config\":{}", "\"config\":{\"refuse\":true}");
    let (replies, _, code) = converse(&[v2, refuse]);
    assert_eq!(code, 0);
    assert_eq!(error_code(&replies[0]), -32001);
    assert_eq!(replies[0]["error"]["data"], json!({"supported": [1]}));
    assert_eq!(error_code(&replies[1]), -32000);
    assert!(replies[1]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("refuse"));
}

#[test]
fn python_sdk_is_silent_until_initialize() {
    let (replies, stderr, code) = converse(&[]);
    assert_eq!((replies.len(), code), (0, 0), "{stderr}");
}

/// Builds `examples/python-pause-file` with `sdk/python/build_pyz.py` into `dir`; returns
/// the zipapp and what the builder printed.
fn build_pause_pyz(dir: &std::path::Path, name: &str) -> (std::path::PathBuf, String) {
    let out = dir.join(name);
    let built = Command::new("python3")
        .arg(workspace_root().join("sdk/python/build_pyz.py"))
        .arg(workspace_root().join("examples/python-pause-file/src"))
        .arg(&out)
        .output()
        .expect("python3 build_pyz.py");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    (out, String::from_utf8(built.stdout).unwrap())
}

#[test]
fn zipapps_load_their_modules_from_bytecode_and_rebuild_to_the_same_pin() {
    let dir = tempfile::tempdir().unwrap();
    let (first, told) = build_pause_pyz(dir.path(), "a.pyz");
    let (second, _) = build_pause_pyz(dir.path(), "b.pyz");
    let bytes = std::fs::read(&first).unwrap();
    assert!(bytes.starts_with(b"#!/usr/bin/env -S python3 -I -S\n"));
    assert_eq!(bytes, std::fs::read(&second).unwrap(), "reproducible");
    let pin = format!("a = \"sha256:{}\"", agent_runner_e2e::sha256_hex(&first));
    assert!(told.lines().any(|l| l == pin), "{told}");
    // `-v -v` lists each place zipimport tries, in the order .pyc, .py: a module loaded
    // from its bytecode stops at the .pyc (a rejected .pyc would go on to the .py).
    let run = Command::new("python3")
        .args(["-v", "-v"])
        .arg(&first)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0));
    let verbose = String::from_utf8_lossy(&run.stderr);
    for module in ["agent_runner_host", "__main__"] {
        let tried = |suffix: &str| format!("# trying {}/{module}{suffix}\n", first.display());
        assert!(verbose.contains(&tried(".pyc")), "{verbose}");
        assert!(
            !verbose.contains(&tried(".py")),
            "{module} compiled from source:\n{verbose}"
        );
    }
}
