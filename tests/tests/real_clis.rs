//! `serve` on the real agent CLIs (docs/agent-clis.md): the config `init --preset` writes,
//! the pinned CLI it starts (tests/setup.d/30-agent-clis.sh installs them into
//! target/agent-clis), and the fake model server of the test suite
//! (tests/agent-clis/fake_model.py on 127.0.0.1) standing in for the provider. A normal
//! round changes the tree; each failure mode gets its decision from the built-in detector
//! running confined; a preset that fails every round stops serve after five rounds with
//! the reason.

use agent_runner_e2e::{workspace_root, Project, RunOutput};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The fake model server, killed when dropped.
struct FakeModel {
    child: Child,
    port: u16,
}

impl FakeModel {
    fn start(mode: &str) -> FakeModel {
        let mut child = Command::new("python3")
            .arg(workspace_root().join("tests/agent-clis/fake_model.py"))
            .args(["--mode", mode])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the fake model server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the fake model server's port line");
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("fake model server said {line:?}"));
        FakeModel { child, port }
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on (bound, then closed): connections to it are refused.
fn refused_port() -> u16 {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    socket.local_addr().unwrap().port()
}

fn agent_clis(args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(workspace_root().join("tests/agent-clis/agent-clis.sh"))
        .args(args)
        .output()
        .expect("run tests/agent-clis/agent-clis.sh");
    assert!(out.status.success(), "agent-clis.sh {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The directory holding `cli`'s executable; fails (never skips) when it is not installed.
fn cli_dir(cli: &str) -> PathBuf {
    let bin = PathBuf::from(agent_clis(&["bin", cli]).trim());
    assert!(
        bin.exists(),
        "{} is missing: run tests/setup.sh (tests/setup.d/30-agent-clis.sh installs the pinned agent CLIs)",
        bin.display()
    );
    bin.parent().unwrap().to_owned()
}

/// A project set up by `init --preset cli` (its config, with the record in `./logs`, the
/// loop's pauses short, and `edit` applied), then `serve --max-rounds N` with `cli` on PATH
/// and its environment pointing at `port`.
fn serve(
    p: &Project,
    cli: &str,
    port: u16,
    max_rounds: u32,
    edit: &dyn Fn(String) -> String,
) -> RunOutput {
    p.run(&["init", "--preset", cli, "--force"]).assert_code(0);
    let text = std::fs::read_to_string(p.config_path()).unwrap();
    // The record where Project looks for it (./logs); the loop's pauses short.
    let text = text
        .replace(
            "log_dir = \"~/.agent-runner/{project}/logs\"",
            "log_dir = \"logs\"",
        )
        .replace("restart_delay_s = 3\n", "restart_delay_s = 1\n")
        .replace("round_budget_s = 1800\n", "round_budget_s = 40\n");
    p.write_config_text(&edit(text));
    let home = p.home().to_str().unwrap().to_owned();
    let env = agent_clis(&["env", cli, &home, &port.to_string()]);
    let path = format!(
        "{}:{}",
        cli_dir(cli).display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = p.command(&["serve", "--max-rounds", &max_rounds.to_string()]);
    cmd.env("PATH", path);
    for line in env.lines() {
        let (k, v) = line.split_once('=').expect("KEY=VALUE");
        cmd.env(k, v);
    }
    p.run_with(cmd)
}

fn unchanged(text: String) -> String {
    text
}

/// What serve decided about its only round.
fn decision(p: &Project) -> (Vec<Value>, Vec<Value>) {
    (
        p.events_of("transient_error_detected"),
        p.events_of("agent_auth_error_detected"),
    )
}

/// A normal round: the CLI's shell tool call wrote the marker file (the tree changed:
/// the stash of the dirty tree names it), the detector reported usage, nothing diagnosed.
/// `retry_once`: the same after the CLI's own retry of an overloaded first answer.
fn normal_round_changes_the_tree(cli: &str, mode: &str) {
    let p = Project::new();
    let server = FakeModel::start(mode);
    let out = serve(&p, cli, server.port, 1, &unchanged);
    out.assert_code(0);
    let dirty = p.events_of("dirty_detected");
    assert!(
        dirty
            .iter()
            .any(|d| d["files"].to_string().contains("agent-was-here.txt")),
        "{cli} {mode}: the round did not write the file: {}",
        p.events_text()
    );
    assert_eq!(
        p.events_of("agent_usage_recorded").len(),
        1,
        "{}",
        p.events_text()
    );
    assert_eq!(decision(&p), (vec![], vec![]), "{}", p.events_text());
}

/// A transient failure mode: the round is diagnosed `kind` and backed off `back_off_s`.
fn failure_backs_off(cli: &str, mode: &str, kind: &str, back_off_s: u64) {
    let p = Project::new();
    let server;
    let port = if mode == "refused" {
        refused_port()
    } else {
        server = FakeModel::start(mode);
        server.port
    };
    let out = serve(&p, cli, port, 1, &unchanged);
    out.assert_code(0);
    let (detected, auth) = decision(&p);
    assert!(auth.is_empty(), "{}", p.events_text());
    assert_eq!(detected.len(), 1, "{cli} {mode}: {}", p.events_text());
    assert_eq!(detected[0]["kind"], kind, "{cli} {mode}: {}", detected[0]);
    assert_eq!(
        detected[0]["back_off_s"], back_off_s,
        "{cli} {mode}: {}",
        detected[0]
    );
    assert!(
        p.events_of("agent_usage_recorded").is_empty(),
        "{}",
        p.events_text()
    );
}

/// 401: serve stops at once with exit 77 and the preset's hint.
fn invalid_key_stops_with_77(cli: &str) {
    let p = Project::new();
    let server = FakeModel::start("auth");
    let out = serve(&p, cli, server.port, 3, &unchanged);
    out.assert_code(77);
    let (_, auth) = decision(&p);
    assert_eq!(auth.len(), 1, "{}", p.events_text());
    assert!(
        auth[0]["hint"].as_str().is_some_and(|h| !h.is_empty()),
        "{}",
        auth[0]
    );
    assert_eq!(p.events_of("agent_exit").len(), 1);
}

#[test]
fn claude_normal_round_changes_the_tree() {
    normal_round_changes_the_tree("claude", "normal");
}

#[test]
fn claude_success_after_a_retry_is_not_backed_off() {
    normal_round_changes_the_tree("claude", "retry_once");
}

#[test]
fn claude_rate_limit_waits_the_printed_reset() {
    failure_backs_off("claude", "rate_limit", "rate_limit", 3);
}

#[test]
fn claude_overload_backs_off() {
    failure_backs_off("claude", "overloaded", "overloaded", 30);
}

#[test]
fn claude_server_down_is_a_network_failure() {
    failure_backs_off("claude", "refused", "network", 10);
}

#[test]
fn claude_invalid_key_stops_with_77() {
    invalid_key_stops_with_77("claude");
}

#[test]
fn codex_normal_round_changes_the_tree() {
    normal_round_changes_the_tree("codex", "normal");
}

#[test]
fn codex_success_after_a_retry_is_not_backed_off() {
    normal_round_changes_the_tree("codex", "retry_once");
}

#[test]
fn codex_rate_limit_backs_off() {
    failure_backs_off("codex", "rate_limit", "rate_limit", 30);
}

#[test]
fn codex_overload_backs_off() {
    failure_backs_off("codex", "overloaded", "overloaded", 30);
}

/// codex never exits while the server is down ("Reconnecting... waiting for network"): the
/// round budget ends it, and its tail is read.
#[test]
fn codex_server_down_times_out_and_is_a_network_failure() {
    failure_backs_off("codex", "refused", "network", 10);
}

#[test]
fn codex_invalid_key_stops_with_77() {
    invalid_key_stops_with_77("codex");
}

/// The codex preset as it was (`--full-auto`, which today's codex refuses with exit 2):
/// every round fails with output, and serve stops after five, naming the failure.
#[test]
fn a_preset_that_fails_every_round_stops_after_five_with_the_reason() {
    let p = Project::new();
    let server = FakeModel::start("normal");
    let out = serve(&p, "codex", server.port, 20, &|text| {
        text.replace("\"--sandbox\", \"workspace-write\"", "\"--full-auto\"")
    });
    out.assert_code(75);
    assert_eq!(p.events_of("agent_exit").len(), 5, "{}", p.events_text());
    let crash = p.events_of("crash_loop");
    assert_eq!(crash.len(), 1, "{}", p.events_text());
    assert!(
        crash[0]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("round 5: exit 2 after ")),
        "{}",
        crash[0]
    );
    assert!(
        crash[0]["last_lines"].to_string().contains("--full-auto"),
        "{}",
        crash[0]
    );
}
