//! The supervisor keeps its own contract (docs/protocol.md §1, §3, §6, §7), and `serve`
//! and `plugin check` judge a host by the same rules:
//!
//! * `before_spawn` carries the agent's command, never the prompt: a 100 KB prompt
//!   delivered by argv still gives a request line under the limit;
//! * a response with a wrong or mistyped `id`, or an unknown envelope member, is a
//!   `protocol_violation` naming what was seen (both ids), in serve and in check;
//! * a host declaring no hooks is refused by serve, as check says;
//! * an overlong response line is reported as such by check, at once.

use agent_runner_e2e::serde_json::Value;
use agent_runner_e2e::{HostSpec, Project};
use std::path::PathBuf;

/// A POSIX sh host (builtins only: it runs confined) that answers `initialize` with
/// `init_reply` (a printf format with one `%s` for the id) and every other request like a
/// proceeding spawn hook.
fn sh_host(p: &Project, name: &str, prelude: &str, init_reply: &str) -> PathBuf {
    let script = format!(
        "#!/bin/sh\n{prelude}\nwhile IFS= read -r line; do\n\
         rest=${{line#*\\\"id\\\":}}; id=${{rest%%[,\\}}]*}}\n\
         case \"$line\" in\n\
         *'\"method\":\"initialize\"'*) printf '{init_reply}\\n' \"$id\" ;;\n\
         *'\"method\":\"shutdown\"'*) printf '{{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":null}}\\n' \"$id\" ;;\n\
         *'\"method\":\"spawn_hook/'*) printf '{{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{{\"action\":\"proceed\"}}}}\\n' \"$id\" ;;\n\
         *) printf '{{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{{\"code\":-32601,\"message\":\"no\"}}}}\\n' \"$id\" ;;\n\
         esac\ndone\n"
    );
    let path = p.tmp_dir().join(name);
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

const HOOKS: &str = r#""hooks":[{"family":"spawn_hook","name":"gate"}]"#;

fn init_result(id: &str, extra: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocol_version":1,"name":"h","version":"1",{HOOKS}}}{extra}}}"#
    )
}

/// Runs a round with `host` under `require`; returns the one `hook_failed` event, and
/// `plugin check`'s detail for rule `rule`.
fn serve_and_check(p: &Project, host: &PathBuf, rule: &str) -> (Value, String) {
    p.write_config(&p.config().sandbox("require").host(HostSpec::new("h", host)));
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 1, "{all}");
    let check = p.run(&["plugin", "check", "--json", "h"]);
    assert_eq!(check.code(), 1, "{check}");
    let report: Value = agent_runner_e2e::serde_json::from_str(&check.stdout).unwrap();
    let outcome = agent_runner_e2e::check_rule(&report, rule);
    assert_eq!(outcome["status"], "fail", "{report:#}");
    (
        failed[0].clone(),
        outcome["detail"].as_str().unwrap().to_owned(),
    )
}

/// The two ids of "response id X … does not match request id Y" in `text`.
fn ids(text: &str) -> (String, String) {
    let got = text
        .split("response id ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("no response id in {text}"));
    let expected = text
        .split("does not match request id ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap_or_else(|| panic!("no request id in {text}"));
    (got.to_owned(), expected.to_owned())
}

#[test]
fn a_string_id_is_a_protocol_violation_naming_both_ids() {
    let p = Project::new();
    let host = sh_host(&p, "string-id.sh", "", &init_result("\"%s\"", ""));
    let (failed, detail) = serve_and_check(&p, &host, "initialize");
    assert_eq!(failed["hook_kind"], "initialize", "{failed}");
    assert_eq!(failed["error_type"], "protocol_violation", "{failed}");
    for text in [failed["error_message"].as_str().unwrap(), &detail] {
        assert!(text.contains("(a string) does not match"), "{text}");
        let (got, expected) = ids(text);
        assert_eq!(got, format!("\"{expected}\""), "{text}");
    }
}

#[test]
fn another_number_is_a_protocol_violation_naming_both_ids() {
    let p = Project::new();
    let host = sh_host(&p, "other-id.sh", "", &init_result("7%s", ""));
    let (failed, detail) = serve_and_check(&p, &host, "initialize");
    assert_eq!(failed["error_type"], "protocol_violation", "{failed}");
    for text in [failed["error_message"].as_str().unwrap(), &detail] {
        let (got, expected) = ids(text);
        assert_eq!(got, format!("7{expected}"), "{text}");
    }
}

#[test]
fn an_unknown_envelope_member_is_refused_by_both() {
    let p = Project::new();
    let host = sh_host(&p, "extra.sh", "", &init_result("%s", r#","extra":1"#));
    let (failed, detail) = serve_and_check(&p, &host, "initialize");
    assert_eq!(failed["error_type"], "protocol_violation", "{failed}");
    let message = failed["error_message"].as_str().unwrap();
    assert!(message.contains("unknown member \"extra\""), "{message}");
    assert!(detail.contains("unknown member \"extra\""), "{detail}");
}

#[test]
fn a_host_without_hooks_is_refused_by_both() {
    let p = Project::new();
    let reply = r#"{"jsonrpc":"2.0","id":%s,"result":{"protocol_version":1,"name":"h","version":"1","hooks":[]}}"#;
    let host = sh_host(&p, "no-hooks.sh", "", reply);
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(HostSpec::new("h", &host)),
    );
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let refused = p.events_of("plugin_refused");
    assert_eq!(refused.len(), 1, "{all}");
    assert!(
        refused[0]["reason"]
            .as_str()
            .unwrap()
            .contains("declares no hooks"),
        "{all}"
    );
    let check = p.run(&["plugin", "check", "--json", "h"]);
    let report: Value = agent_runner_e2e::serde_json::from_str(&check.stdout).unwrap();
    let rule = agent_runner_e2e::check_rule(&report, "hook_names");
    assert_eq!(rule["status"], "fail", "{report:#}");
    assert!(
        rule["detail"]
            .as_str()
            .unwrap()
            .contains("declares no hooks"),
        "{rule}"
    );
}

#[test]
fn an_overlong_answer_is_named_by_check() {
    let p = Project::new();
    // 2^17 bytes of padding inside the initialize answer: one line over 65,536 bytes.
    let prelude = "pad=x; i=0\nwhile [ $i -lt 17 ]; do pad=\"$pad$pad\"; i=$((i+1)); done";
    let reply = format!(
        r#"{{"jsonrpc":"2.0","id":%s,"result":{{"protocol_version":1,"name":"$pad","version":"1",{HOOKS}}}}}"#
    );
    let host = sh_host(
        &p,
        "overlong.sh",
        prelude,
        &reply.replace("$pad", "'\"$pad\"'"),
    );
    let (failed, detail) = serve_and_check(&p, &host, "initialize");
    assert_eq!(failed["error_type"], "protocol_violation", "{failed}");
    assert!(detail.contains("longer than 65536 bytes"), "{detail}");
    assert!(!detail.contains("buffered"), "{detail}");
}

/// A 100 KB prompt delivered by argv: `before_spawn` carries the command with `{prompt}`
/// in place of the prompt, and the hook answers normally.
#[test]
fn the_spawn_view_carries_the_command_not_the_prompt() {
    let p = Project::new();
    p.write("prompts/main.md", &"a long prompt line\n".repeat(5_600));
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "long prompt"]);
    // The spawn hook defers once with the argv it saw as its reason, then proceeds.
    let host = p.tmp_dir().join("argv.py");
    std::fs::write(
        &host,
        r#"#!/usr/bin/python3
import json, sys
asked = False
for line in sys.stdin:
    req = json.loads(line)
    m = req["method"]
    if m == "initialize":
        res = {"protocol_version": 1, "name": "argv", "version": "1",
               "hooks": [{"family": "spawn_hook", "name": "gate"}]}
    elif m == "spawn_hook/before_spawn":
        if asked:
            res = {"action": "proceed"}
        else:
            asked = True
            argv = req["params"]["spawn"]["argv"]
            res = {"action": "defer", "defer_s": 1,
                   "reason": "%d bytes: %s" % (len(line), json.dumps(argv[1:]))}
    else:
        res = None
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": res}) + "\n")
    sys.stdout.flush()
"#,
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.write_config(
        &p.config()
            .sandbox("require")
            .spawn_override_allow(&["gate"])
            .host(HostSpec::new("argv", &host)),
    );
    p.run(&["serve", "--max-rounds", "1"]).assert_code(0);
    let all = p.events_text();
    assert!(p.events_of("hook_failed").is_empty(), "{all}");
    let decisions = p.events_of("plugin_spawn_decision");
    assert_eq!(decisions.len(), 1, "{all}");
    let reason = decisions[0]["reason"].as_str().unwrap();
    assert!(reason.ends_with(r#"bytes: ["{prompt}"]"#), "{reason}");
    let bytes: usize = reason.split(' ').next().unwrap().parse().unwrap();
    assert!(bytes < 4_096, "before_spawn line of {bytes} bytes");
    p.assert_agent_ran(1);
}
