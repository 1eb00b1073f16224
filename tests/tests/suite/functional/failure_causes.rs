//! Every `hook_failed` names its real cause (docs/protocol.md §6, "What the message says"):
//! one test per cause, each a real Python host pinned and run confined under `require`,
//! failing on purpose in `initialize` or in its spawn hook `gate`, and the exact
//! `hook_failed` fields it leaves in the events file: the call in flight, the exit status
//! or the signal by name, the config key of the bound that ended the host, the envelope
//! rule an answer broke, and `stderr_tail` on every failure that ends the host. Every case
//! runs with the supervisor run by root and by an unprivileged user.

use agent_runner_e2e::serde_json::{json, Value};
use agent_runner_e2e::{wait_until, HostSpec, Operator, Project, EVENT_TIMEOUT, RUN_TIMEOUT};
use std::cell::Cell;
use std::path::{Path, PathBuf};

thread_local! {
    /// Who runs the supervisor in the current test (each test runs on its own thread).
    static OPERATOR: Cell<Operator> = const { Cell::new(Operator::Root) };
}

/// Every cause runs twice, `<cause>::as_root` and `<cause>::as_unprivileged_user`: the
/// host is then the child of a reaper in its own user namespace, which passes its status
/// on (`agent_runner_plugin_host::common::user_namespace`), and the message must not change.
macro_rules! as_root_and_unprivileged {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                use super::*;

                #[test]
                fn as_root() {
                    OPERATOR.set(Operator::Root);
                    super::$name();
                }

                #[test]
                fn as_unprivileged_user() {
                    OPERATOR.set(Operator::Unprivileged);
                    super::$name();
                }
            }
        )*
    };
}

as_root_and_unprivileged!(
    exit_status_zero_without_answering,
    exit_status_during_initialize,
    a_signal_is_named,
    a_sigkill_not_sent_by_the_supervisor_says_so,
    the_state_max_mb_kill_names_the_key,
    running_out_of_memory_names_memory_max_mb,
    a_timeout_names_timeout_s,
    a_timeout_names_the_family_default,
    an_initialize_timeout_names_init_timeout_s,
    stdout_closed_by_a_live_host,
    a_sandbox_kill_names_the_call_and_the_system_call,
    an_error_answer_keeps_the_host_and_has_no_tail,
    a_wrong_jsonrpc_version_is_named,
    a_missing_id_is_named,
    a_null_id_is_named,
    a_wrong_id_names_both_ids,
);

/// The hook every test host declares.
const HOOK: &str = "gate";
/// The call in flight when a test host fails in its hook.
const IN_GATE: &str = "spawn_hook/before_spawn (hook gate)";

/// A Python spawn-hook host (`<tmp>/causes.py`): it runs `on_init` (Python statements,
/// indented by the template) before it answers `initialize`, and `on_call` in place of
/// an answer to `before_spawn`. Both may use `send(obj)` (one compact JSON line on
/// stdout), `say(text)` (one stderr line), `rid` (the request's id) and `state` (the
/// host's state directory).
fn python_host(p: &Project, on_init: &str, on_call: &str) -> PathBuf {
    let indent = |body: &str| {
        body.lines()
            .map(|l| format!("        {l}\n"))
            .collect::<String>()
    };
    let script = format!(
        r#"#!/usr/bin/python3
import json, os, socket, sys
def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()
def say(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
state = None
for line in sys.stdin:
    req = json.loads(line)
    rid = req["id"]
    if req["method"] == "initialize":
        state = req["params"]["state_dir"]
{init}        send({{"jsonrpc": "2.0", "id": rid, "result": {{"protocol_version": 1,
              "name": "causes", "version": "1",
              "hooks": [{{"family": "spawn_hook", "name": "{HOOK}"}}]}}}})
    elif req["method"] == "spawn_hook/before_spawn":
{call}    else:
        send({{"jsonrpc": "2.0", "id": rid, "result": None}})
"#,
        init = indent(if on_init.is_empty() { "pass" } else { on_init }),
        call = indent(on_call),
    );
    let path = p.tmp_dir().join("causes.py");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Runs one `round` under `require` with `host` as host `c` (`host_keys`: extra lines of
/// its table); asserts the round completed and returns the one `hook_failed` event.
fn failed_round(p: &Project, host: &PathBuf, host_keys: &str) -> Value {
    let text = p
        .config()
        .sandbox("require")
        .host(HostSpec::new("c", host))
        .render()
        .replace(
            "[plugins.hosts.c]\n",
            &format!("[plugins.hosts.c]\n{host_keys}"),
        );
    p.write_config_text(&text);
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 1, "{all}");
    assert_eq!(p.events_of("round_end").len(), 1, "{all}");
    failed[0].clone()
}

/// The fields of the one `hook_failed` event a round leaves when host `c` is
/// [`python_host`]`(on_init, on_call)` with `host_keys` in its table ([`failed_round`]).
fn cause_of(on_init: &str, on_call: &str, host_keys: &str) -> Value {
    let p = Project::new_as(OPERATOR.get());
    let host = python_host(&p, on_init, on_call);
    fields(&failed_round(&p, &host, host_keys))
}

/// The fields of a `hook_failed` event of host `c` (`stderr_tail` left out when empty, as
/// the event leaves it out).
fn hook_failed(hook: (&str, &str), error_type: &str, message: &str, tail: &[&str]) -> Value {
    let mut event = json!({
        "hook_name": hook.0,
        "hook_kind": hook.1,
        "host": "c",
        "error_type": error_type,
        "error_message": message,
    });
    if !tail.is_empty() {
        event["stderr_tail"] = json!(tail);
    }
    event
}

/// The `hook_failed` event of a failure in `gate`.
fn in_gate(error_type: &str, error_message: &str, stderr_tail: &[&str]) -> Value {
    hook_failed((HOOK, "spawn_hook"), error_type, error_message, stderr_tail)
}

/// The `hook_failed` event of a failure in `initialize` (its hook name is the host's).
fn in_initialize(error_type: &str, error_message: &str, stderr_tail: &[&str]) -> Value {
    hook_failed(("c", "initialize"), error_type, error_message, stderr_tail)
}

/// `event` without `ts` and `event`, for comparing its fields.
fn fields(event: &Value) -> Value {
    let mut event = event.clone();
    let map = event.as_object_mut().unwrap();
    map.remove("ts");
    map.remove("event");
    event
}

fn exit_status_zero_without_answering() {
    let failed = cause_of("", "say('nothing to add')\nsys.exit(0)", "");
    assert_eq!(
        failed,
        in_gate(
            "crashed",
            &format!("host exited with status 0 before answering {IN_GATE}; its stderr ends: nothing to add"),
            &["nothing to add"],
        )
    );
}

fn exit_status_during_initialize() {
    let failed = cause_of("say('no config file')\nsys.exit(3)", "pass", "");
    assert_eq!(
        failed,
        in_initialize(
            "crashed",
            "host exited with status 3 before answering initialize; its stderr ends: no config file",
            &["no config file"],
        )
    );
}

fn a_signal_is_named() {
    let failed = cause_of(
        "",
        // A real fault: a host may be PID 1 of its own PID namespace, which ignores the
        // signals it sends itself.
        "say('about to fault')\nimport ctypes\nctypes.string_at(0)",
        "",
    );
    assert_eq!(
        failed,
        in_gate(
            "crashed",
            &format!(
                "host died of SIGSEGV before answering {IN_GATE}; its stderr ends: about to fault"
            ),
            &["about to fault"],
        )
    );
}

/// Another process (here the test) kills the host while it holds the call.
fn a_sigkill_not_sent_by_the_supervisor_says_so() {
    let p = Project::new_as(OPERATOR.get());
    let host = python_host(
        &p,
        "",
        "open(os.path.join(state, 'asked'), 'w').close()\nsys.stdin.readline()",
    );
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(HostSpec::new("c", &host)),
    );
    let running = p.spawn(&["round"]);
    let asked = p.log_dir().join("plugins/c/asked");
    wait_until("the host holds the call", EVENT_TIMEOUT, || {
        asked.exists().then_some(())
    });
    let python = p.host_pids(&[Path::new("/usr/bin/python3")]);
    assert!(!python.is_empty(), "no host process");
    for pid in python {
        // SAFETY: kill(2) takes integers only; the pid is a host of this project.
        unsafe { libc::kill(libc::pid_t::try_from(pid).unwrap(), libc::SIGKILL) };
    }
    running.wait(RUN_TIMEOUT).assert_code(0);
    let all = p.events_text();
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 1, "{all}");
    assert_eq!(
        fields(&failed[0]),
        in_gate(
            "crashed",
            &format!("host died of SIGKILL before answering {IN_GATE}; not sent by the supervisor: the kernel's OOM killer or another process"),
            &[],
        ),
        "{all}"
    );
}

/// The write watch kills the host once its state directory holds more than
/// `state_max_mb`; the host waits for that (its stdin stays silent while a call is in
/// flight).
fn the_state_max_mb_kill_names_the_key() {
    let p = Project::new_as(OPERATOR.get());
    let host = python_host(
        &p,
        "",
        "say('filling the state dir')\n\
         with open(os.path.join(state, 'big'), 'wb') as f:\n    f.write(b'x' * (2 << 20))\n\
         sys.stdin.readline()",
    );
    let failed = failed_round(&p, &host, "state_max_mb = 1\n");
    assert_eq!(
        fields(&failed),
        in_gate(
            "crashed",
            &format!("host died of SIGKILL before answering {IN_GATE}; the supervisor killed it: its state directory went over state_max_mb = 1 of [plugins.hosts.c]; its stderr ends: filling the state dir"),
            &["filling the state dir"],
        )
    );
    assert_eq!(p.events_of("plugin_write_limit").len(), 1);
}

fn running_out_of_memory_names_memory_max_mb() {
    let failed = cause_of(
        "",
        "try:\n    bytearray(1 << 30)\nexcept MemoryError:\n    say('MemoryError: no room for 1 GiB')\n    sys.exit(1)",
        "memory_max_mb = 128\n",
    );
    assert_eq!(
        failed,
        in_gate(
            "crashed",
            &format!("host exited with status 1 before answering {IN_GATE}; its stderr says memory ran out: memory_max_mb = 128 of [plugins.hosts.c] bounds its address space; its stderr ends: MemoryError: no room for 1 GiB"),
            &["MemoryError: no room for 1 GiB"],
        )
    );
}

fn a_timeout_names_timeout_s() {
    let failed = cause_of(
        "",
        "say('thinking')\nsys.stdin.readline()",
        "timeout_s = 1\n",
    );
    assert_eq!(
        failed,
        in_gate(
            "timeout",
            &format!("no answer to {IN_GATE} within 1 s (timeout_s = 1 of [plugins.hosts.c]); its stderr ends: thinking"),
            &["thinking"],
        )
    );
}

fn a_timeout_names_the_family_default() {
    let failed = cause_of("", "sys.stdin.readline()", "");
    assert_eq!(
        failed,
        in_gate(
            "timeout",
            &format!("no answer to {IN_GATE} within 10 s (the spawn_hook default; timeout_s of [plugins.hosts.c] is unset)"),
            &[],
        )
    );
}

fn an_initialize_timeout_names_init_timeout_s() {
    let failed = cause_of(
        "say('loading')\nsys.stdin.readline()",
        "pass",
        "init_timeout_s = 1\n",
    );
    assert_eq!(
        failed,
        in_initialize(
            "timeout",
            "no answer to initialize within 1 s (init_timeout_s = 1 of [plugins.hosts.c]); its stderr ends: loading",
            &["loading"],
        )
    );
}

fn stdout_closed_by_a_live_host() {
    let failed = cause_of(
        "",
        "say('closing stdout')\nos.close(1)\nsys.stdin.readline()",
        "",
    );
    assert_eq!(
        failed,
        in_gate(
            "protocol_violation",
            &format!("host closed its stdout before answering {IN_GATE} but kept running; killed; its stderr ends: closing stdout"),
            &["closing stdout"],
        )
    );
}

fn a_sandbox_kill_names_the_call_and_the_system_call() {
    let failed = cause_of(
        "",
        "say('opening a socket')\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)",
        "",
    );
    assert_eq!(
        failed,
        in_gate(
            "killed_by_sandbox",
            &format!("killed by the sandbox before answering {IN_GATE}: it called socket(), which a confined host may not (docs/protocol.md §8); its stderr ends: opening a socket"),
            &["opening a socket"],
        )
    );
}

/// An error answer keeps the host: no `stderr_tail`, whatever the host wrote.
fn an_error_answer_keeps_the_host_and_has_no_tail() {
    let failed = cause_of(
        "",
        "say('refusing')\n\
         send({'jsonrpc': '2.0', 'id': rid, 'error': {'code': -32000, 'message': 'no gate today'}})",
        "",
    );
    assert_eq!(
        failed,
        in_gate("rpc_error", "error -32000: no gate today", &[])
    );
}

/// A host answering `gate` with `line` (compact JSON, the request's id where `RID` is):
/// the round's `hook_failed` event, and `plugin check`'s detail of rule `hook_calls`
/// (the same envelope validator judges both).
fn bad_answer(answer: &str) -> (Value, String) {
    let p = Project::new_as(OPERATOR.get());
    let host = python_host(
        &p,
        "",
        &format!("say('answering')\nsys.stdout.write('{answer}'.replace('RID', str(rid)) + '\\n')\nsys.stdout.flush()"),
    );
    let failed = failed_round(&p, &host, "");
    let check = p.run(&["plugin", "check", "--json", "c"]);
    assert_eq!(check.code(), 1, "{check}");
    let report: Value = agent_runner_e2e::serde_json::from_str(&check.stdout).unwrap();
    let rule = agent_runner_e2e::check_rule(&report, "hook_calls");
    assert_eq!(rule["status"], "fail", "{report:#}");
    (fields(&failed), rule["detail"].as_str().unwrap().to_owned())
}

/// The request id of the first hook call: jsonrpsee numbers a host's requests from 0, and
/// `initialize` is the first.
const FIRST_CALL_ID: u64 = 1;

fn a_wrong_jsonrpc_version_is_named() {
    let (failed, detail) = bad_answer(r#"{"jsonrpc":"1.0","id":RID,"result":{}}"#);
    let line = format!(r#"{{"jsonrpc":"1.0","id":{FIRST_CALL_ID},"result":{{}}}}"#);
    let said = r#"response with "jsonrpc": "1.0"; every response carries "jsonrpc": "2.0""#;
    assert_eq!(
        failed,
        in_gate(
            "protocol_violation",
            &format!("in answer to {IN_GATE}: {said}: {line:?}; its stderr ends: answering"),
            &["answering"],
        )
    );
    assert!(detail.contains(said), "{detail}");
}

fn a_missing_id_is_named() {
    let (failed, detail) = bad_answer(r#"{"jsonrpc":"2.0","result":{}}"#);
    let said = format!(
        "response without an id to request id {FIRST_CALL_ID}; echo the request's id unchanged"
    );
    assert_eq!(
        failed,
        in_gate(
            "protocol_violation",
            &format!(
                "in answer to {IN_GATE}: {said}: {:?}; its stderr ends: answering",
                r#"{"jsonrpc":"2.0","result":{}}"#
            ),
            &["answering"],
        )
    );
    assert!(
        detail.contains("response without an id to request id"),
        "{detail}"
    );
}

fn a_null_id_is_named() {
    let answer = r#"{"jsonrpc":"2.0","id":null,"result":{}}"#;
    let (failed, detail) = bad_answer(answer);
    let said = format!("response id null does not match request id {FIRST_CALL_ID}; a null id says the host could not parse the request");
    assert_eq!(
        failed,
        in_gate(
            "protocol_violation",
            &format!("in answer to {IN_GATE}: {said}: {answer:?}; its stderr ends: answering"),
            &["answering"],
        )
    );
    assert!(
        detail.contains("response id null does not match request id"),
        "{detail}"
    );
}

fn a_wrong_id_names_both_ids() {
    let (failed, detail) = bad_answer(r#"{"jsonrpc":"2.0","id":RID0,"result":{}}"#);
    let line = format!(r#"{{"jsonrpc":"2.0","id":{FIRST_CALL_ID}0,"result":{{}}}}"#);
    let said = format!("response id {FIRST_CALL_ID}0 does not match request id {FIRST_CALL_ID}; echo the request's id unchanged");
    assert_eq!(
        failed,
        in_gate(
            "protocol_violation",
            &format!("in answer to {IN_GATE}: {said}: {line:?}; its stderr ends: answering"),
            &["answering"],
        )
    );
    assert!(detail.contains("0 does not match request id"), "{detail}");
}
