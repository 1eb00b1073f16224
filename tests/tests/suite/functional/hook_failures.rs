//! Failing spawn hooks, pinned and confined under `require`: a crash, a hang past the call
//! timeout, and non-protocol bytes on stdout are each recorded as `hook_failed` with the
//! right `error_type`, count as proceed, and the round completes.

use agent_runner_e2e::serde_json::{json, Value};
use agent_runner_e2e::{HostSpec, Project};

const HOSTILE: &str = env!("CARGO_BIN_EXE_ar-e2e-hostile");
const RAW: &str = env!("CARGO_BIN_EXE_ar-e2e-raw");

/// Runs one `round` with `host` as the only host; asserts it completed and returns the
/// single `hook_failed` event.
fn failed_round(host: HostSpec) -> (Project, Value) {
    let p = Project::new();
    p.write_config(&p.config().sandbox("require").host(host));
    let out = p.run(&["round"]);
    out.assert_code(0);
    let all = p.events_text();
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 1, "{all}");
    assert_eq!(failed[0]["hook_kind"], "spawn_hook", "{all}");
    assert_eq!(p.events_of("round_start").len(), 1, "{all}");
    assert_eq!(p.events_of("round_end").len(), 1, "{all}");
    assert_eq!(p.events_of("agent_exit")[0]["exit_code"], 0, "{all}");
    p.assert_agent_ran(1);
    let failed = failed[0].clone();
    (p, failed)
}

#[test]
fn crashing_host() {
    let (p, failed) = failed_round(
        HostSpec::new("crashy", HOSTILE).config(json!({"attempt": "crash", "hook": "crashy"})),
    );
    assert_eq!(failed["hook_name"], "crashy");
    assert_eq!(failed["error_type"], "crashed", "{}", p.events_text());
    assert!(p.events_of("plugin_sandbox_kill").is_empty());
}

#[test]
fn hanging_host_times_out() {
    let (p, failed) = failed_round(
        HostSpec::new("sleepy", HOSTILE)
            .timeout_s(1)
            .config(json!({"attempt": "hang", "hook": "sleepy"})),
    );
    assert_eq!(failed["hook_name"], "sleepy");
    assert_eq!(failed["error_type"], "timeout", "{}", p.events_text());
    // The hung host was killed, not left behind.
    let left = p.host_pids(&[std::path::Path::new(HOSTILE)]);
    assert!(left.is_empty(), "hung host still running: {left:?}");
}

#[test]
fn garbage_on_stdout_is_a_protocol_violation() {
    let (p, failed) = failed_round(
        HostSpec::new("noisy", RAW).config(json!({"before_spawn": "garbage", "hook": "noisy"})),
    );
    assert_eq!(failed["hook_name"], "noisy");
    assert_eq!(
        failed["error_type"],
        "protocol_violation",
        "{}",
        p.events_text()
    );
    let message = failed["error_message"].as_str().unwrap();
    assert!(message.contains("stdout is reserved"), "{message}");
    assert!(message.contains("hello"), "{message}");
}

#[test]
fn well_behaved_raw_host_is_not_a_failure() {
    // Control for the garbage case: the same non-SDK host answering properly is fine.
    let p = Project::new();
    p.write_config(&p.config().sandbox("require").host(
        HostSpec::new("polite", RAW).config(json!({"before_spawn": "proceed", "hook": "polite"})),
    ));
    p.run(&["round"]).assert_code(0);
    assert!(p.events_of("hook_failed").is_empty(), "{}", p.events_text());
    assert_eq!(p.events_of("round_end").len(), 1);
}

/// A host that dies before answering `initialize` (here: what Node did when it could not
/// read openssl.cnf) is recorded with the last lines of its stderr, redacted, so the
/// operator reads the cause, not only the exit status.
#[test]
fn host_dying_before_initialize_names_its_stderr() {
    let p = Project::new();
    let host = p.tmp_dir().join("dies.sh");
    std::fs::write(
        &host,
        "#!/bin/sh\n\
         echo 'starting with api_key=hunter2hunter2' >&2\n\
         echo '' >&2\n\
         echo 'fopen(/etc/ssl/openssl.cnf): Permission denied' >&2\n\
         exit 13\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(HostSpec::new("dies", &host)),
    );
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 1, "{all}");
    assert_eq!(failed[0]["hook_kind"], "initialize", "{all}");
    assert_eq!(failed[0]["error_type"], "crashed", "{all}");
    let message = failed[0]["error_message"].as_str().unwrap();
    assert!(message.contains("status 13"), "{message}");
    assert!(
        message.contains("fopen(/etc/ssl/openssl.cnf): Permission denied"),
        "{message}"
    );
    assert_eq!(
        failed[0]["stderr_tail"],
        json!([
            "starting with api_key=[REDACTED]",
            "fopen(/etc/ssl/openssl.cnf): Permission denied"
        ]),
        "{all}"
    );
    assert!(!all.contains("hunter2"), "{all}");
}
