//! Every message type rejects every malformed shape with an error naming the field:
//! missing fields, unknown fields (at any depth), wrong types, out-of-range values, bad
//! hook names, and non-objects.

use agent_runner_protocol::{
    decode, decode_dirty_result, decode_initialize_result, decode_spawn_decision,
    BeforeSpawnParams, HandleDirtyParams, InitializeParams, InvalidMessage,
};
use serde_json::{json, Value};

fn ctx() -> Value {
    json!({"work_dir": "/w", "log_dir": "/l", "project": "p", "round_num": 1, "phase": null,
        "agent_name": null, "agent_binary": null, "agent_log_path": null, "dry_run": false,
        "vcs": null})
}

fn init_params() -> Value {
    json!({"protocol_version": 1, "supervisor": {"name": "agent-runner", "version": "0.1.0"},
        "host": "h", "project": "p", "work_dir": "/w", "log_dir": "/l", "state_dir": "/s",
        "config": {}, "sandbox": {"requested": "require", "achieved_tier": "landlock+seccomp",
        "landlock_abi": 7, "seccomp": true}})
}

/// `base` with the value at `path` (dot-separated) replaced, or removed when `None`.
fn with(base: &Value, path: &str, value: Option<Value>) -> Value {
    let mut out = base.clone();
    let mut keys: Vec<&str> = path.split('.').collect();
    let last = keys.pop().unwrap();
    let mut cursor = &mut out;
    for key in keys {
        cursor = cursor.get_mut(key).unwrap();
    }
    let obj = cursor.as_object_mut().unwrap();
    match value {
        Some(v) => {
            obj.insert(last.to_owned(), v);
        }
        None => {
            obj.remove(last);
        }
    }
    out
}

fn expect_field(result: Result<impl std::fmt::Debug, InvalidMessage>, field: &str, case: &str) {
    let err = result.expect_err(case);
    assert_eq!(err.field, field, "{case}: {err}");
    assert!(!err.message.is_empty(), "{case}");
}

#[test]
fn initialize_params() {
    let base = init_params();
    assert!(decode::<InitializeParams>(base.clone()).is_ok());
    let cases = [
        ("host", None, "."),
        ("protocol_version", Some(json!(-1)), "protocol_version"),
        ("protocol_version", Some(json!(1.5)), "protocol_version"),
        ("config", Some(json!([])), "config"),
        ("extra", Some(json!(1)), "extra"),
        ("supervisor.name", Some(json!(7)), "supervisor.name"),
        ("supervisor.extra", Some(json!(7)), "supervisor.extra"),
        ("sandbox.seccomp", Some(json!("yes")), "sandbox.seccomp"),
        (
            "sandbox.landlock_abi",
            Some(json!(-3)),
            "sandbox.landlock_abi",
        ),
        ("sandbox.extra", Some(json!(true)), "sandbox.extra"),
    ];
    for (path, value, field) in cases {
        let case = format!("{path} = {value:?}");
        expect_field(
            decode::<InitializeParams>(with(&base, path, value)),
            field,
            &case,
        );
    }
    for not_object in [json!(null), json!([]), json!("x"), json!(1)] {
        expect_field(
            decode::<InitializeParams>(not_object.clone()),
            ".",
            &not_object.to_string(),
        );
    }
}

#[test]
fn before_spawn_params() {
    let base = json!({"hook": "q", "ctx": ctx(), "spawn": {"argv": ["a"], "env_names": []}});
    assert!(decode::<BeforeSpawnParams>(base.clone()).is_ok());
    let cases = [
        ("hook", Some(json!("Not Valid")), "hook"),
        ("hook", Some(json!("-lead")), "hook"),
        ("hook", Some(json!("x".repeat(65))), "hook"),
        ("spawn", None, "."),
        ("spawn.argv", Some(json!("a b")), "spawn.argv"),
        ("spawn.env_names", Some(json!([1])), "spawn.env_names[0]"),
        ("spawn.env", Some(json!({"K": "V"})), "spawn.env"),
        ("ctx.round_num", Some(json!(-1)), "ctx.round_num"),
        ("ctx.dry_run", Some(json!(0)), "ctx.dry_run"),
        ("ctx.secret", Some(json!("x")), "ctx.secret"),
        ("ctx.vcs", Some(json!({"dirty_action": "stash"})), "ctx.vcs"),
        ("ctx.work_dir", None, "ctx"),
    ];
    for (path, value, field) in cases {
        let case = format!("{path} = {value:?}");
        expect_field(
            decode::<BeforeSpawnParams>(with(&base, path, value)),
            field,
            &case,
        );
    }
}

#[test]
fn handle_dirty_params() {
    let base = json!({"hook": "w", "ctx": ctx(), "dirty_files": ["a"]});
    assert!(decode::<HandleDirtyParams>(base.clone()).is_ok());
    for (path, value, field) in [
        ("dirty_files", Some(json!([null])), "dirty_files[0]"),
        ("dirty_files", None, "."),
        ("spawn", Some(json!({})), "spawn"),
    ] {
        let case = format!("{path} = {value:?}");
        expect_field(
            decode::<HandleDirtyParams>(with(&base, path, value)),
            field,
            &case,
        );
    }
}

#[test]
fn initialize_results() {
    let base = json!({"protocol_version": 1, "name": "h", "version": "1", "hooks": []});
    assert!(decode_initialize_result(base.clone()).is_ok());
    for (path, value, field) in [
        ("hooks", Some(json!({})), "hooks"),
        ("hooks", None, "."),
        ("name", Some(json!(null)), "name"),
        ("hooks", Some(json!([{"family": "spawn_hook"}])), "hooks[0]"),
        (
            "hooks",
            Some(json!([{"family": "dirty_handler", "name": "d", "priority": 1.5}])),
            "hooks[0].priority",
        ),
        (
            "hooks",
            Some(json!([{"family": "dirty_handler", "name": "d", "extra": 1}])),
            "hooks[0].extra",
        ),
        ("hooks", Some(json!(["spawn_hook"])), "hooks[0]"),
    ] {
        let case = format!("{path} = {value:?}");
        expect_field(
            decode_initialize_result(with(&base, path, value)),
            field,
            &case,
        );
    }
}

#[test]
fn spawn_decisions() {
    for (value, field) in [
        (json!({}), "."),
        (json!({"action": "defer", "defer_s": 1.5}), "defer_s"),
        (json!({"action": "defer", "defer_s": "60"}), "defer_s"),
        (json!({"action": "PROCEED"}), "action"),
        (json!({"action": null}), "action"),
        (json!("proceed"), "."),
        (json!(null), "."),
    ] {
        expect_field(
            decode_spawn_decision(value.clone()),
            field,
            &value.to_string(),
        );
    }
}

#[test]
fn dirty_results() {
    let files = ["a".to_owned()];
    for (value, field) in [
        (json!({"action": "commit"}), "."),
        (json!({"action": "commit", "message": 5}), "message"),
        (
            json!({"action": "commit", "message": "m", "paths": "a"}),
            "paths",
        ),
        (json!({"action": "ignore", "message": "x"}), "message"),
        (json!({"action": 3}), "action"),
        (json!({"action": "delete"}), "action"),
        (json!({"message": "x"}), "action"),
        (json!("ignore"), "."),
        (json!([]), "."),
    ] {
        expect_field(
            decode_dirty_result(value.clone(), &files),
            field,
            &value.to_string(),
        );
    }
}
