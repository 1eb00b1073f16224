//! The supervisor's side of the protocol with real, confined, pinned hosts under
//! `sandbox = "require"`: rpc_error and invalid_result failures, -32601 as a failed call,
//! version refusal, restart after a crash, disable after 5 consecutive failures, host
//! stderr forwarding, and a Python host behaving exactly like its Rust twin.
//! (Crash, hang and garbage-on-stdout are covered by `hook_failures.rs`.)

use agent_runner_e2e::serde_json::{json, Value};
use agent_runner_e2e::{pause_host_bin, workspace_root, HostSpec, Project};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn faulty(name: &str, mode: &str) -> HostSpec {
    HostSpec::new(name, workspace_root().join("tests/fixtures/faulty_host.py"))
        .config(json!({"mode": mode}))
}

/// How many times the faulty host `name` was asked `before_spawn` (its own count).
fn calls(p: &Project, name: &str) -> usize {
    let file = p.log_dir().join("plugins").join(name).join("calls");
    std::fs::read_to_string(file).map_or(0, |t| t.lines().count())
}

/// One `round` with `host`; returns the project and its `hook_failed` events.
fn round_with(host: HostSpec) -> (Project, Vec<Value>) {
    let p = Project::new();
    p.write_config(&p.config().sandbox("require").host(host));
    p.run(&["round"]).assert_code(0);
    let failed = p.events_of("hook_failed");
    (p, failed)
}

#[test]
fn rpc_error_is_recorded_redacted_and_five_in_a_row_disable_the_host() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(faulty("erring", "rpc_error")),
    );
    p.run(&["serve", "--max-rounds", "6"]).assert_code(0);
    let all = p.events_text();
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 5, "{all}");
    for f in &failed {
        assert_eq!(f["error_type"], "rpc_error", "{all}");
        assert_eq!(f["hook_name"], "probe");
        let message = f["error_message"].as_str().unwrap();
        assert!(
            message.contains("-32000") && message.contains("token=[REDACTED]"),
            "{message}"
        );
        assert!(!all.contains("s3cr3tvalue99"), "{all}");
    }
    let disabled = p.events_of("plugin_disabled");
    assert_eq!(disabled.len(), 1, "{all}");
    assert_eq!(disabled[0]["name"], "erring");
    assert_eq!(disabled[0]["consecutive_failures"], 5);
    // Failed calls count as proceed: every round ran; the disabled host was not asked again.
    assert_eq!(p.events_of("round_end").len(), 6, "{all}");
    assert_eq!(calls(&p, "erring"), 5);
}

#[test]
fn crashed_host_is_restarted_for_a_later_call() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(faulty("flaky", "crash_once")),
    );
    p.run(&["serve", "--max-rounds", "3"]).assert_code(0);
    let all = p.events_text();
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 1, "{all}");
    assert_eq!(failed[0]["error_type"], "crashed", "{all}");
    assert!(p.events_of("plugin_disabled").is_empty(), "{all}");
    assert_eq!(
        calls(&p, "flaky"),
        3,
        "the restarted host answered the later calls"
    );
}

#[test]
fn wrong_result_shape_is_invalid_result() {
    let (p, failed) = round_with(faulty("shape", "wrong_shape"));
    assert_eq!(failed.len(), 1, "{}", p.events_text());
    assert_eq!(failed[0]["error_type"], "invalid_result");
    let message = failed[0]["error_message"].as_str().unwrap();
    assert!(message.contains("verdict"), "{message}");
}

#[test]
fn python_host_opening_a_socket_is_killed_by_the_sandbox() {
    let (p, failed) = round_with(faulty("netty", "socket"));
    let all = p.events_text();
    assert_eq!(failed.len(), 1, "{all}");
    assert_eq!(failed[0]["error_type"], "killed_by_sandbox", "{all}");
    let kills = p.events_of("plugin_sandbox_kill");
    assert_eq!(kills.len(), 1, "{all}");
    assert_eq!(kills[0]["syscall"], "socket", "{all}");
}

#[test]
fn method_not_found_counts_as_a_failed_call() {
    let (p, failed) = round_with(faulty("nomethod", "no_method"));
    assert_eq!(failed.len(), 1, "{}", p.events_text());
    assert_eq!(failed[0]["error_type"], "rpc_error");
    let message = failed[0]["error_message"].as_str().unwrap();
    assert!(message.contains("-32601"), "{message}");
}

#[test]
fn host_speaking_only_version_2_is_refused_naming_both_versions() {
    let (p, failed) = round_with(faulty("future", "v2_only"));
    let all = p.events_text();
    assert_eq!(failed.len(), 1, "{all}");
    assert_eq!(failed[0]["hook_kind"], "initialize", "{all}");
    let message = failed[0]["error_message"].as_str().unwrap();
    assert!(
        message.contains("protocol version 1") && message.contains("[2]"),
        "{message}"
    );
    let refused = p.events_of("plugin_refused");
    assert_eq!(refused.len(), 1, "{all}");
    assert_eq!(refused[0]["name"], "future");
    assert_eq!(refused[0]["reason"], failed[0]["error_message"]);
    assert_eq!(calls(&p, "future"), 0);
}

#[test]
fn host_stderr_reaches_the_log_tagged_and_redacted() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(faulty("leaky", "stderr_secret")),
    );
    let out = p.run(&["round"]);
    out.assert_code(0);
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("connecting with"))
        .unwrap_or_else(|| panic!("host stderr line not forwarded:\n{}", out.stderr));
    assert!(line.contains("leaky"), "{line}");
    assert!(line.contains("api_key=[REDACTED]"), "{line}");
    assert!(
        !out.stderr.contains("hunter2hunter2") && !out.stderr.contains("ghp_abcdefgh"),
        "{line}"
    );
}

/// Builds the Python example host into `dir`.
fn python_pause_host(dir: &Path) -> PathBuf {
    let out = dir.join("python-pause-file.pyz");
    let status = Command::new("bash")
        .arg(workspace_root().join("examples/python-pause-file/build.sh"))
        .arg(&out)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    out
}

/// The events of two rounds (pause file present, then removed) with the pause host `exe`,
/// keeping only what does not vary between runs.
fn pause_rounds(exe: &Path) -> Vec<Value> {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("require")
            .dirty_action("ignore")
            .spawn_override_allow(&["pause_file"])
            .host(
                HostSpec::new("pause", exe)
                    .config(json!({"defer_s": 30, "reason": "paused for review"})),
            ),
    );
    p.write(".agent-runner-pause", "");
    p.run(&["round"]).assert_code(75);
    std::fs::remove_file(p.dir().join(".agent-runner-pause")).unwrap();
    p.run(&["round"]).assert_code(0);
    let volatile = [
        "ts",
        "pid",
        "duration_s",
        "peak_bytes",
        "started_at",
        "log_path",
        "agent_log_path",
        "sha",
        "head",
        "run_id",
        // Each project's own: the digest covers the prompt files' paths, the head its
        // commit's time.
        "config_digest",
        "git_head",
    ];
    p.events()
        .into_iter()
        .map(|mut e| {
            let obj = e.as_object_mut().unwrap();
            obj.retain(|k, v| !volatile.contains(&k.as_str()) && !v.to_string().contains('/'));
            e
        })
        .collect()
}

#[test]
fn python_and_rust_hosts_with_the_same_logic_give_the_same_events() {
    let dir = tempfile::tempdir().unwrap();
    let python = pause_rounds(&python_pause_host(dir.path()));
    let rust = pause_rounds(&pause_host_bin());
    let kinds = |events: &[Value]| -> Vec<String> {
        events
            .iter()
            .map(|e| e["event"].as_str().unwrap().to_owned())
            .collect()
    };
    let kinds = kinds(&rust);
    assert_eq!(kinds[0], "plugin_spawn_decision", "{rust:#?}");
    assert_eq!(rust[0]["action"], "defer");
    assert_eq!(rust[0]["defer_s"], 30);
    assert!(kinds.contains(&"round_end".to_owned()), "{kinds:?}");
    assert_eq!(python, rust);
}
