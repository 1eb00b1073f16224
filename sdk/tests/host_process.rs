//! Drives the real `ar-sdk-test-host` binary (built on this SDK, `src/bin/`) over pipes,
//! as the supervisor would, and checks the protocol v1 behaviour (`docs/protocol.md`) `run()` promises.

use agent_runner_sdk::serde_json::{json, Value};
use agent_runner_sdk::testing::{context, initialize_params, HostProcess};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

const WORK_DIR: &str = "/tmp";

fn host_command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ar-sdk-test-host"))
}

fn start() -> HostProcess {
    HostProcess::spawn(host_command()).expect("spawn ar-sdk-test-host")
}

fn started_and_initialized() -> HostProcess {
    let mut host = start();
    let init = host
        .call("initialize", initialize_params(WORK_DIR, json!({})))
        .unwrap();
    assert!(init.get("result").is_some(), "{init}");
    host
}

fn spawn_params(hook: &str, round: u64) -> Value {
    json!({"hook": hook, "ctx": context(WORK_DIR, round),
           "spawn": {"argv": ["claude", "-p", "hi"], "env_names": ["HOME", "PATH"]}})
}

fn dirty_params(hook: &str, files: &[&str]) -> Value {
    json!({"hook": hook, "ctx": context(WORK_DIR, 7), "dirty_files": files})
}

fn error_of(response: &Value) -> (i64, String) {
    let err = &response["error"];
    assert!(
        response.get("result").is_none() && err.is_object(),
        "expected an error response, got {response}"
    );
    (
        err["code"].as_i64().unwrap(),
        err["message"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn silent_until_initialize_then_lists_its_hooks() {
    let mut host = start();
    assert_eq!(host.read_line(Duration::from_millis(300)), None);
    let init = host
        .call("initialize", initialize_params(WORK_DIR, json!({})))
        .unwrap();
    assert_eq!(
        init,
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "protocol_version": 1, "name": "ar-sdk-test-host", "version": "9.9.9",
            "hooks": [{"family": "spawn_hook", "name": "gate"},
                      {"family": "dirty_handler", "name": "park", "priority": 5},
                      {"family": "post_round", "name": "judge"}]}})
    );
    // A second initialize is refused; the first one's hooks stay.
    let again = host
        .call("initialize", initialize_params(WORK_DIR, json!({})))
        .unwrap();
    assert_eq!(error_of(&again).0, -32600);
    let reply = host
        .call("spawn_hook/before_spawn", spawn_params("gate", 1))
        .unwrap();
    assert_eq!(reply["result"]["action"], "proceed");
}

#[test]
fn spawn_hook_decisions_and_failures() {
    let mut host = started_and_initialized();
    let odd = host
        .call("spawn_hook/before_spawn", spawn_params("gate", 7))
        .unwrap();
    assert_eq!(
        odd["result"],
        json!({"action": "proceed", "defer_s": 0, "reason": ""})
    );
    let even = host
        .call("spawn_hook/before_spawn", spawn_params("gate", 8))
        .unwrap();
    assert_eq!(
        even["result"],
        json!({"action": "defer", "defer_s": 30, "reason": "even round 8"})
    );

    // HookError → -32000 with its message and data.
    let failed = host
        .call("spawn_hook/before_spawn", spawn_params("gate", 13))
        .unwrap();
    assert_eq!(error_of(&failed), (-32000, "unlucky round".to_owned()));
    assert_eq!(failed["error"]["data"], json!({"round": 13}));

    // A panic → -32000, and the host keeps serving.
    let panicked = host
        .call("spawn_hook/before_spawn", spawn_params("gate", 14))
        .unwrap();
    let (code, message) = error_of(&panicked);
    assert_eq!(code, -32000);
    assert!(
        message.contains("spawn hook `gate` panicked: gate exploded"),
        "{message}"
    );

    // An out-of-range decision is never sent: -32603 naming the field.
    let invalid = host
        .call("spawn_hook/before_spawn", spawn_params("gate", 15))
        .unwrap();
    let (code, message) = error_of(&invalid);
    assert_eq!(code, -32603);
    assert!(message.contains("`defer_s`"), "{message}");

    let after = host
        .call("spawn_hook/before_spawn", spawn_params("gate", 1))
        .unwrap();
    assert_eq!(after["result"]["action"], "proceed");
}

fn after_round_params(exit_code: i32, log_tail: &str) -> Value {
    json!({"hook": "judge", "ctx": context(WORK_DIR, 4),
           "outcome": {"round_num": 4, "phase": null, "exit_code": exit_code, "signal": null,
                       "exit_cause": "exited", "duration_s": 0.5, "timed_out": false},
           "log_tail": log_tail})
}

#[test]
fn post_round_verdicts_are_validated_before_they_are_sent() {
    let mut host = started_and_initialized();
    let call = |host: &mut HostProcess, exit_code, tail| {
        host.call(
            "post_round/after_round",
            after_round_params(exit_code, tail),
        )
        .unwrap()
    };
    assert_eq!(call(&mut host, 0, "done")["result"], Value::Null);
    assert_eq!(
        call(&mut host, 1, "API Error: 429")["result"],
        json!({"action": "back_off", "kind": "rate_limit", "message": "HTTP 429", "back_off_s": 60})
    );
    assert_eq!(
        call(&mut host, 1, "Invalid API key")["result"],
        json!({"action": "stop", "kind": "auth", "message": "not logged in"})
    );
    // A back-off without a wait breaks the contract: not sent, -32603 naming the field.
    let (code, message) = error_of(&call(&mut host, 2, ""));
    assert_eq!(code, -32603);
    assert!(message.contains("back_off_s"), "{message}");
    // Params are decoded strictly: a missing log_tail is -32602.
    let mut params = after_round_params(1, "");
    params.as_object_mut().unwrap().remove("log_tail");
    let (code, message) = error_of(&host.call("post_round/after_round", params).unwrap());
    assert_eq!(code, -32602);
    assert!(message.contains("log_tail"), "{message}");
}

#[test]
fn dirty_handler_actions() {
    let mut host = started_and_initialized();
    let stash = host
        .call(
            "dirty_handler/handle_dirty",
            dirty_params("park", &["a.rs", "b.md"]),
        )
        .unwrap();
    assert_eq!(
        stash["result"],
        json!({"action": "stash", "message": "parked 2 files"})
    );
    let ignore = host
        .call(
            "dirty_handler/handle_dirty",
            dirty_params("park", &["secret.txt"]),
        )
        .unwrap();
    assert_eq!(ignore["result"], json!({"action": "ignore"}));
    let pass = host
        .call("dirty_handler/handle_dirty", dirty_params("park", &[]))
        .unwrap();
    assert_eq!(pass["result"], Value::Null);
    assert!(pass.get("error").is_none());
}

#[test]
fn stray_println_goes_to_stderr_not_stdout() {
    let mut host = started_and_initialized();
    let reply = host
        .call("spawn_hook/before_spawn", spawn_params("gate", 1))
        .unwrap();
    assert_eq!(reply["result"]["action"], "proceed");
    assert!(host.wait_for_stderr("stray println from gate", Duration::from_secs(2)));
    // Nothing else arrived on stdout: the call's response was the only line.
    assert_eq!(host.read_line(Duration::from_millis(200)), None);
}

#[test]
fn garbage_gets_parse_error_and_the_host_keeps_serving() {
    let mut host = started_and_initialized();
    host.send_raw(b"this is not json\n").unwrap();
    let reply = host.read_message(Duration::from_secs(5)).unwrap();
    assert_eq!(reply["id"], Value::Null);
    assert_eq!(error_of(&reply).0, -32700);

    host.send_raw(b"{\"id\": 9, \xff\xfe}\n").unwrap();
    let reply = host.read_message(Duration::from_secs(5)).unwrap();
    assert_eq!(
        (reply["id"].clone(), error_of(&reply).0),
        (Value::Null, -32700)
    );

    // Valid JSON that is not a request object, and a batch: -32600.
    host.send_raw(b"{\"id\": 4, \"method\": \"shutdown\"}\n")
        .unwrap();
    let reply = host.read_message(Duration::from_secs(5)).unwrap();
    assert_eq!(
        (reply["id"].clone(), error_of(&reply).0),
        (json!(4), -32600)
    );
    host.send_raw(b"[{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"shutdown\"}]\n")
        .unwrap();
    let reply = host.read_message(Duration::from_secs(5)).unwrap();
    assert_eq!(error_of(&reply).0, -32600);

    // A notification gets no reply at all.
    host.send_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"shutdown\"}\n")
        .unwrap();
    assert_eq!(host.read_line(Duration::from_millis(200)), None);

    let reply = host
        .call("spawn_hook/before_spawn", spawn_params("gate", 3))
        .unwrap();
    assert_eq!(reply["result"]["action"], "proceed");
}

#[test]
fn overlong_line_is_rejected_and_skipped() {
    let mut host = started_and_initialized();
    // A valid request padded with spaces so that the line, newline included, is `len`.
    let padded = |id: u64, len: usize| {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "spawn_hook/before_spawn",
                             "params": spawn_params("gate", 1)});
        let mut line = request.to_string().into_bytes();
        line.resize(len - 1, b' ');
        line.push(b'\n');
        line
    };
    // Exactly the limit (65,536 bytes with the newline) is served.
    host.send_raw(&padded(100, 65_536)).unwrap();
    let reply = host.read_message(Duration::from_secs(5)).unwrap();
    assert_eq!(reply["id"], json!(100));
    assert_eq!(reply["result"]["action"], "proceed");
    // One byte more is rejected with id null and skipped up to its newline.
    host.send_raw(&padded(101, 65_537)).unwrap();
    let reply = host.read_message(Duration::from_secs(5)).unwrap();
    assert_eq!(
        (reply["id"].clone(), error_of(&reply).0),
        (Value::Null, -32600)
    );
    // Much longer, arriving in pieces: one rejection, then the host still serves.
    let long = padded(102, 300_000);
    for chunk in long.chunks(50_000) {
        host.send_raw(chunk).unwrap();
    }
    let reply = host.read_message(Duration::from_secs(5)).unwrap();
    assert_eq!(error_of(&reply).0, -32600);
    let reply = host
        .call("spawn_hook/before_spawn", spawn_params("gate", 5))
        .unwrap();
    assert_eq!(reply["result"]["action"], "proceed");
    assert_eq!(host.read_line(Duration::from_millis(100)), None);
}

#[test]
fn unsupported_protocol_version_names_the_supported_ones() {
    let mut host = start();
    let mut params = initialize_params(WORK_DIR, json!({}));
    params["protocol_version"] = json!(2);
    params["something_new"] = json!(true);
    let reply = host.call("initialize", params).unwrap();
    assert_eq!(error_of(&reply).0, -32001);
    assert_eq!(reply["error"]["data"], json!({"supported": [1]}));
    // Still not initialized: hook calls are refused, a proper initialize works.
    let early = host
        .call("spawn_hook/before_spawn", spawn_params("gate", 1))
        .unwrap();
    assert_eq!(error_of(&early).0, -32600);
    let init = host
        .call("initialize", initialize_params(WORK_DIR, json!({})))
        .unwrap();
    assert_eq!(init["result"]["protocol_version"], 1);
}

#[test]
fn unknown_method_and_bad_params() {
    let mut host = started_and_initialized();
    let reply = host.call("spawn_hook/after_spawn", json!({})).unwrap();
    assert_eq!(error_of(&reply).0, -32601);

    // Wrong type deep in ctx: -32602 naming the field.
    let mut params = spawn_params("gate", 1);
    params["ctx"]["round_num"] = json!("seven");
    let reply = host.call("spawn_hook/before_spawn", params).unwrap();
    let (code, message) = error_of(&reply);
    assert_eq!(code, -32602);
    assert!(message.contains("`ctx.round_num`"), "{message}");
    assert_eq!(reply["error"]["data"], json!({"field": "ctx.round_num"}));

    // Unknown field.
    let mut params = dirty_params("park", &["a"]);
    params["extra"] = json!(1);
    let reply = host.call("dirty_handler/handle_dirty", params).unwrap();
    let (code, message) = error_of(&reply);
    assert_eq!(code, -32602);
    assert!(message.contains("extra"), "{message}");

    // Missing params altogether.
    host.send(&json!({"jsonrpc": "2.0", "id": 77, "method": "dirty_handler/handle_dirty"}))
        .unwrap();
    let reply = host.read_message(Duration::from_secs(5)).unwrap();
    assert_eq!(
        (reply["id"].clone(), error_of(&reply).0),
        (json!(77), -32602)
    );

    // Hook names this host did not declare, or of the other family.
    for (method, params) in [
        ("spawn_hook/before_spawn", spawn_params("nope", 1)),
        ("spawn_hook/before_spawn", spawn_params("park", 1)),
        ("dirty_handler/handle_dirty", dirty_params("gate", &["a"])),
    ] {
        let reply = host.call(method, params).unwrap();
        let (code, message) = error_of(&reply);
        assert_eq!(code, -32602, "{method}: {message}");
        assert_eq!(reply["error"]["data"], json!({"field": "hook"}));
    }

    // Strict initialize params, and shutdown takes none.
    let mut fresh = start();
    let mut params = initialize_params(WORK_DIR, json!({}));
    params["sandbox"]["seccomp"] = json!("yes");
    let reply = fresh.call("initialize", params).unwrap();
    assert_eq!(reply["error"]["data"], json!({"field": "sandbox.seccomp"}));
    let reply = fresh.call("shutdown", json!({"now": true})).unwrap();
    assert_eq!(error_of(&reply).0, -32602);
}

#[test]
fn setup_errors_answer_initialize_with_hook_failed() {
    let mut host = start();
    let reply = host
        .call(
            "initialize",
            initialize_params(WORK_DIR, json!({"fail_setup": true})),
        )
        .unwrap();
    assert_eq!(
        error_of(&reply),
        (-32000, "setup refused: fail_setup is set".to_owned())
    );
    let mut host = start();
    let reply = host
        .call(
            "initialize",
            initialize_params(WORK_DIR, json!({"fail_setup": "yes"})),
        )
        .unwrap();
    assert_eq!(
        error_of(&reply),
        (
            -32000,
            "config: `fail_setup` must be a boolean, got a string (\"yes\")".to_owned()
        )
    );
}

#[test]
fn invalid_or_duplicate_hook_names_fail_initialize() {
    for (name, expected) in [
        (
            "Bad Name",
            "host declares an invalid hook: hook name \"Bad Name\" must match",
        ),
        ("park", "host declares hook `park` twice"),
    ] {
        let mut host = start();
        let reply = host
            .call(
                "initialize",
                initialize_params(WORK_DIR, json!({"extra_hook": name})),
            )
            .unwrap();
        let (code, message) = error_of(&reply);
        assert_eq!(code, -32603);
        assert!(message.starts_with(expected), "{message}");
    }
    let mut host = start();
    let reply = host
        .call(
            "initialize",
            initialize_params(WORK_DIR, json!({"extra_hook": "later-1"})),
        )
        .unwrap();
    assert_eq!(
        reply["result"]["hooks"][3],
        json!({"family": "spawn_hook", "name": "later-1"})
    );
}

#[test]
fn exits_zero_promptly_on_eof() {
    // Before initialize, after a call, and after shutdown.
    let mut idle = start();
    let started = Instant::now();
    let status = idle.close_and_wait(Duration::from_secs(2)).unwrap();
    assert!(status.expect("exited within 2 s").success());
    assert!(started.elapsed() < Duration::from_secs(2));

    let mut host = started_and_initialized();
    host.call("spawn_hook/before_spawn", spawn_params("gate", 2))
        .unwrap();
    let reply = host.call("shutdown", Value::Null).unwrap();
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 3, "result": null}));
    let started = Instant::now();
    let status = host.close_and_wait(Duration::from_secs(2)).unwrap();
    assert_eq!(status.expect("exited within 2 s").code(), Some(0));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(host.read_line(Duration::from_millis(100)), None);
}

#[test]
fn self_check_reports_no_new_privs_set_by_the_launcher() {
    let mut command = host_command();
    // SAFETY: the closure runs in the forked child before exec and only makes one prctl
    // system call (async-signal-safe), touching no memory shared with the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut host = HostProcess::spawn(command).unwrap();
    host.call("initialize", initialize_params(WORK_DIR, json!({})))
        .unwrap();
    assert!(
        host.wait_for_stderr("ar-sdk-test-host: no_new_privs=yes", Duration::from_secs(2)),
        "{}",
        host.stderr()
    );

    let mut plain = started_and_initialized();
    let expected = if agent_runner_sdk::confinement_self_check().no_new_privs == Some(true) {
        "no_new_privs=yes"
    } else {
        "no_new_privs=no"
    };
    assert!(
        plain.wait_for_stderr(expected, Duration::from_secs(2)),
        "{}",
        plain.stderr()
    );
    assert!(plain
        .close_and_wait(Duration::from_secs(2))
        .unwrap()
        .is_some());
}
