//! Names that belong to the supervisor (docs/protocol.md §3): a host declaring a built-in's
//! hook name, ours or the reference system's, is refused with
//! `plugin_builtin_name_squat` and never called; `plugin check` fails its `hook_names`
//! rule. `doctor` warns about a host living inside the work tree.

use agent_runner_e2e::serde_json::{json, Value};
use agent_runner_e2e::{HostSpec, Project};

const HOSTILE: &str = env!("CARGO_BIN_EXE_ar-e2e-hostile");

#[test]
fn built_in_names_are_refused() {
    for name in [
        "default",
        "default_dirty_handler",
        "claude_rate_limit",
        "gemini",
        "codewhale",
        "kimi",
        "pi",
    ] {
        let p = Project::new();
        p.write_config(&p.config().sandbox("require").host(
            HostSpec::new("squatter", HOSTILE).config(json!({"attempt": "crash", "hook": name})),
        ));
        p.run(&["round"]).assert_code(0);
        let all = p.events_text();
        let squat = p.events_of("plugin_builtin_name_squat");
        assert_eq!(squat.len(), 1, "{name}: {all}");
        assert_eq!(squat[0]["name"], name, "{all}");
        assert_eq!(squat[0]["host"], "squatter", "{all}");
        let refused = p.events_of("plugin_refused");
        assert_eq!(refused.len(), 1, "{name}: {all}");
        // Refused hosts are never called: the hook would have crashed the host.
        assert!(p.events_of("hook_failed").is_empty(), "{name}: {all}");
        p.assert_agent_ran(1);

        let check = p.run(&["plugin", "check", "--json", "squatter"]);
        assert_eq!(check.code(), 1, "{check}");
        let report: Value = agent_runner_e2e::serde_json::from_str(&check.stdout).unwrap();
        let rule = agent_runner_e2e::check_rule(&report, "hook_names");
        assert_eq!(rule["status"], "fail", "{rule}");
        assert!(rule["detail"].as_str().unwrap().contains(name), "{rule}");
    }
}

#[test]
fn doctor_warns_about_a_host_inside_the_work_tree() {
    let p = Project::new();
    let inside = p.dir().join("tools/host");
    std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
    std::fs::copy(HOSTILE, &inside).unwrap();
    let outside = p.tmp_dir().join("host");
    std::fs::copy(HOSTILE, &outside).unwrap();
    p.write_config(
        &p.config()
            .host(HostSpec::new("inside", &inside))
            .host(HostSpec::new("outside", &outside)),
    );
    let out = p.run(&["doctor", "--json"]);
    let doc: Value = agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    let hosts = doc["hosts"].as_array().unwrap();
    let warnings = |name: &str| {
        hosts.iter().find(|h| h["name"] == name).unwrap()["warnings"]
            .as_array()
            .unwrap()
            .clone()
    };
    let w = warnings("inside");
    assert_eq!(w.len(), 1, "{doc:#}");
    assert!(
        w[0].as_str().unwrap().contains("inside the work tree"),
        "{w:?}"
    );
    assert!(warnings("outside").is_empty(), "{doc:#}");
    let text = p.run(&["doctor"]).stdout;
    assert!(
        text.contains("warning: ") && text.contains("tools/host"),
        "{text}"
    );
}
