//! `serve` on the real agent CLIs (docs/agent-clis.md): the config `init --preset` writes,
//! the pinned CLI it starts (tests/setup.d/30-agent-clis.sh installs them into
//! target/agent-clis), and the fake model server of the test suite
//! (tests/agent-clis/fake_model.py on 127.0.0.1) standing in for the provider. A normal
//! round changes the tree; each failure mode gets its decision from the built-in detector
//! running confined; a preset that fails every round stops serve after five rounds with
//! the reason; fast rounds that change nothing stop it as stalled.

use agent_runner_e2e::unprivileged::TEST_USER_PATH;
use agent_runner_e2e::{workspace_root, Operator, Project, RunOutput};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// How long one `serve` or `round` on a real CLI may take.
const CLI_RUN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// The fake model server, killed when dropped.
struct FakeModel {
    child: Child,
    port: u16,
}

impl FakeModel {
    fn start(mode: &str) -> FakeModel {
        FakeModel::start_at(mode, "127.0.0.1")
    }

    /// The server on another loopback address (`127.0.0.2`: not in the agent's
    /// `NO_PROXY`, so a confined agent reaches it through the egress proxy).
    fn start_at(mode: &str, addr: &str) -> FakeModel {
        Self::spawn(
            Command::new("python3")
                .arg(workspace_root().join("tests/agent-clis/fake_model.py"))
                .args(["--mode", mode, "--host", addr]),
        )
    }

    /// The server with more arguments (`--then CMD`: the shell tool call also runs CMD).
    fn start_with(mode: &str, addr: &str, extra: &[&str]) -> FakeModel {
        Self::spawn(
            Command::new("python3")
                .arg(workspace_root().join("tests/agent-clis/fake_model.py"))
                .args(["--mode", mode, "--host", addr])
                .args(extra),
        )
    }

    /// As [`FakeModel::start`], each request recorded in `log` (one JSON line each).
    fn start_logged(mode: &str, log: &std::path::Path) -> FakeModel {
        Self::spawn(
            Command::new("python3")
                .arg(workspace_root().join("tests/agent-clis/fake_model.py"))
                .args(["--mode", mode, "--host", "127.0.0.1"])
                .arg("--log")
                .arg(log),
        )
    }

    fn spawn(command: &mut Command) -> FakeModel {
        let mut child = command
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
    let max_rounds = max_rounds.to_string();
    run_cli(p, cli, port, edit, &["serve", "--max-rounds", &max_rounds])
}

/// `text` (init's config) with `[agent.sandbox] broker = "off"`: the provider key in the
/// agent's environment, its spend from the CLI's own report.
fn broker_off(text: &str) -> String {
    assert!(text.contains("broker = \"auto\""), "{text}");
    text.replacen("broker = \"auto\"", "broker = \"off\"", 1)
}

/// `agent-runner <args>` on a project set up as [`serve`] describes. As the unprivileged
/// user, claude gets no `IS_SANDBOX` (it needs none there) and `PATH` holds only system
/// directories besides the CLI's.
fn run_cli(
    p: &Project,
    cli: &str,
    port: u16,
    edit: &dyn Fn(String) -> String,
    args: &[&str],
) -> RunOutput {
    run_cli_at(p, cli, "127.0.0.1", port, edit, args)
}

/// [`run_cli`] with the fake server at `addr:port`.
fn run_cli_at(
    p: &Project,
    cli: &str,
    addr: &str,
    port: u16,
    edit: &dyn Fn(String) -> String,
    args: &[&str],
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
        .replace(
            "round_budget_s = 1800\n",
            &format!("round_budget_s = {}\n", round_budget_s(cli)),
        );
    // `init` confines the agent (`mode = "prefer"`): a provider's port (443) is granted,
    // the fake model's is not, so it is named as an operator with a local model would.
    assert!(text.contains("\nmode = \"prefer\"\n"), "{text}");
    // pi's models.json names its key's variable itself (`apiKey`), which no list knows: the
    // confined agent inherits it only by name (docs/security.md, "The agent's environment").
    let pass_env = if cli == "pi" {
        "pass_env = [\"FAKE_API_KEY\"]\n"
    } else {
        ""
    };
    let text = text.replacen(
        "\nmode = \"prefer\"\n",
        &format!("\nmode = \"prefer\"\nconnect_ports = [{port}]\n{pass_env}"),
        1,
    );
    let home = p.home().to_str().unwrap().to_owned();
    let env = agent_clis(&["env", cli, &home, &port.to_string(), addr]);
    // After the CLI's own config is written, so `edit` may change that too.
    p.write_config_text(&edit(text));
    let unprivileged = p.operator() == Operator::Unprivileged;
    let system_path = if unprivileged {
        TEST_USER_PATH.to_owned()
    } else {
        std::env::var("PATH").unwrap_or_default()
    };
    let mut cmd = p.command(args);
    cmd.env("PATH", format!("{}:{system_path}", cli_dir(cli).display()));
    for line in env.lines() {
        let (k, v) = line.split_once('=').expect("KEY=VALUE");
        if unprivileged && k == "IS_SANDBOX" {
            continue;
        }
        cmd.env(k, v);
    }
    // Real CLIs start slowly on a busy machine (node, a 400 MB binary): a longer bound
    // than the suite's usual two minutes.
    p.spawn_with(cmd).wait(CLI_RUN_TIMEOUT)
}

/// The round budget the tests give `cli`: 40 s, enough for a normal round and for a
/// failure after the CLI's own (cut) retries; kimi's and pi's client libraries add
/// retries of their own that honour `Retry-After` (a rate-limited kimi round took 37 s on
/// a loaded machine).
fn round_budget_s(cli: &str) -> u64 {
    if matches!(cli, "kimi" | "pi") {
        90
    } else {
        40
    }
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

/// Whether `cli`'s built-in detector reads token usage from its output (kimi prints none
/// in a form it reads: docs/detectors.md).
fn reports_usage(cli: &str) -> bool {
    cli != "kimi"
}

/// A normal round: the CLI's shell tool call wrote the marker file (the tree changed:
/// the stash of the dirty tree names it), the detector reported usage when the CLI
/// prints it, nothing diagnosed.
/// `retry_once`: the same after the CLI's own retry of an overloaded first answer.
fn normal_round_changes_the_tree(cli: &str, mode: &str) {
    normal_round_as(Operator::Root, cli, mode);
}

fn normal_round_as(operator: Operator, cli: &str, mode: &str) {
    let p = Project::new_as(operator);
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
        usize::from(reports_usage(cli)),
        "{}",
        p.events_text()
    );
    assert_eq!(decision(&p), (vec![], vec![]), "{}", p.events_text());
}

/// `serve --max-rounds N` on `cli` with `[vcs] dirty_action = "auto_commit"`: every round
/// appends a line to the marker file and ends in a commit of it (aider makes its own,
/// the others' serve makes), then serve stops cleanly: exit 0, `max_rounds_reached`,
/// nothing diagnosed, nothing of the agent left running, the tree clean.
fn serve_commits_every_round(operator: Operator, cli: &str, rounds: u32) {
    let p = Project::new_as(operator);
    let server = FakeModel::start("normal");
    let out = serve(&p, cli, server.port, rounds, &|text| {
        text.replace("dirty_action = \"stash\"", "dirty_action = \"auto_commit\"")
    });
    out.assert_code(0);
    let n = rounds as usize;
    let exits = p.events_of("agent_exit");
    assert_eq!(exits.len(), n, "{cli}: {}", p.events_text());
    for exit in &exits {
        assert_eq!(exit["exit_code"], 0, "{cli}: {exit}");
        assert_eq!(exit["exit_cause"], "exited", "{cli}: {exit}");
    }
    let commits = p.git(&["log", "--format=%H", "--", "agent-was-here.txt"]);
    assert_eq!(
        commits.lines().count(),
        n,
        "{cli}: commits of the marker file: {commits}\n{}",
        p.events_text()
    );
    let marker = std::fs::read_to_string(p.dir().join("agent-was-here.txt")).unwrap();
    if cli != "aider" {
        // One line appended per round (aider's whole-file edit replaces the file instead).
        assert_eq!(marker.lines().count(), n, "{cli}: {marker}");
        let committed = p.events_of("dirty_auto_committed");
        assert_eq!(committed.len(), n, "{cli}: {}", p.events_text());
        assert!(
            committed
                .iter()
                .all(|c| c["files"].to_string().contains("agent-was-here.txt")),
            "{cli}: {}",
            p.events_text()
        );
    }
    assert!(
        p.status_porcelain().is_empty(),
        "{cli}: {:?}",
        p.status_porcelain()
    );
    let reached = p.events_of("max_rounds_reached");
    assert_eq!(reached.len(), 1, "{cli}: {}", p.events_text());
    assert_eq!(reached[0]["rounds_completed"], u64::from(rounds));
    assert_eq!(
        p.events_of("agent_usage_recorded").len(),
        if reports_usage(cli) { n } else { 0 },
        "{cli}: {}",
        p.events_text()
    );
    assert_eq!(decision(&p), (vec![], vec![]), "{cli}: {}", p.events_text());
    for kind in ["crash_loop", "stalled_no_progress", "round_error"] {
        assert!(p.events_of(kind).is_empty(), "{cli}: {}", p.events_text());
    }
    assert!(
        p.processes().is_empty(),
        "{cli}: left running: {:?}",
        p.processes()
    );
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

/// The presets start their CLIs as an unprivileged operator too (claude without
/// `IS_SANDBOX`, codex's workspace-write sandbox as a plain user).
#[test]
fn claude_and_codex_rounds_run_as_an_unprivileged_user() {
    normal_round_as(Operator::Unprivileged, "claude", "normal");
    normal_round_as(Operator::Unprivileged, "codex", "normal");
}

/// claude's preset as root without a declared sandbox would fail every round: `serve`
/// and `round` refuse to start (exit 78) with doctor's finding and fix.
#[test]
fn claude_as_root_without_a_sandbox_is_refused_at_boot() {
    let p = Project::new();
    let server = FakeModel::start("normal");
    let no_sandbox =
        |text: String| text.replace("[agent.env]\n", "[agent.env]\nIS_SANDBOX = \"0\"\n");
    for args in [&["serve", "--max-rounds", "3"][..], &["round"][..]] {
        let out = run_cli(&p, "claude", server.port, &no_sandbox, args);
        out.assert_code(78);
        assert!(
            out.stderr
                .contains("claude refuses --dangerously-skip-permissions when run as root")
                && out.stderr.contains("IS_SANDBOX"),
            "{args:?}: {}",
            out.stderr
        );
        assert!(p.events_of("agent_spawn").is_empty(), "{}", p.events_text());
    }
}

/// `doctor` prints the installed CLI's version and whether the preset was verified with
/// it; a CLI outside that series is a warning.
#[test]
fn doctor_prints_the_cli_version_and_warns_outside_the_verified_series() {
    let p = Project::new();
    let server = FakeModel::start("normal");
    let out = run_cli(&p, "codex", server.port, &unchanged, &["doctor", "--json"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let version = agent_clis(&["version", "codex"]);
    let check = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "agent_version")
        .unwrap_or_else(|| panic!("no agent_version check: {doc}"));
    assert_eq!(check["ok"], true, "{check}");
    assert!(
        check["reason"]
            .as_str()
            .unwrap()
            .starts_with(&format!("codex {}", version.trim())),
        "{check}"
    );
    // A codex of another series.
    let fake = p.script("old-cli/codex", "#!/bin/sh\necho 'codex-cli 0.99.1'\n");
    let mut cmd = p.command(&["doctor", "--json"]);
    cmd.env(
        "PATH",
        format!(
            "{}:{}",
            fake.parent().unwrap().display(),
            std::env::var("PATH").unwrap()
        ),
    );
    let out = p.run_with(cmd);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let warning = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "agent_version")
        .unwrap_or_else(|| panic!("no agent_version warning: {doc}"));
    assert!(
        warning["reason"]
            .as_str()
            .unwrap()
            .contains("codex 0.99.1 is outside the series"),
        "{warning}"
    );
}

/// gemini's preset starts its CLI as root and as an unprivileged user: a normal round
/// writes the file.
#[test]
fn gemini_rounds_run_as_root_and_as_an_unprivileged_user() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        normal_round_as(operator, "gemini", "normal");
    }
}

/// A preset with egress filtered (docs/security.md, "Egress by host name"): the CLI in its
/// own network namespace reaches the fake model on `127.0.0.2` only through the
/// supervisor's proxy, and the round writes the file. Its other hosts (telemetry, update
/// checks), not listed, are refused and recorded; nothing reaches them.
fn round_through_the_egress_proxy(operator: Operator, cli: &str) {
    let p = Project::new_as(operator);
    let server = FakeModel::start_at("normal", "127.0.0.2");
    let allow = format!("allow_hosts = [\"127.0.0.2:{}\"]\n", server.port);
    let edit =
        move |text: String| text.replacen("\n[runtime]\n", &format!("{allow}\n[runtime]\n"), 1);
    let out = run_cli_at(
        &p,
        cli,
        "127.0.0.2",
        server.port,
        &edit,
        &["serve", "--max-rounds", "1"],
    );
    out.assert_code(0);
    let all = p.events_text();
    assert!(
        p.events_of("dirty_detected")
            .iter()
            .any(|d| d["files"].to_string().contains("agent-was-here.txt")),
        "{cli} {operator:?}: the round through the proxy did not write the file: {all}"
    );
    assert_eq!(p.events_of("agent_usage_recorded").len(), 1, "{all}");
    for refused in p.events_of("agent_egress_refused") {
        assert_eq!(refused["layer"], "proxy", "{all}");
        assert_ne!(
            refused["address"], "127.0.0.2",
            "{cli} {operator:?}: the listed host was refused: {all}"
        );
    }
}

/// Whether the round's agent wrote `agent-was-here.txt`: left dirty (then stashed), or
/// committed by the CLI itself (aider commits its own edits).
fn wrote_the_file(p: &Project) -> bool {
    let dirty = p
        .events_of("dirty_detected")
        .iter()
        .any(|d| d["files"].to_string().contains("agent-was-here.txt"));
    dirty
        || p.git(&["log", "--all", "--name-only", "--format="])
            .contains("agent-was-here.txt")
}

/// Issue 41 items 1 and 3 with a real CLI: a local model endpoint on `127.0.0.1`, and the
/// `allow_hosts` `init` writes for the CLI (its provider's hosts, uncommented). `doctor`
/// and the failed round name the refusal and the line that opens it (`source`: where the
/// endpoint was read); that line, applied as printed, gives a round that writes its file
/// through the proxy (a local endpoint by address).
fn local_endpoint_by_the_printed_fix(operator: Operator, cli: &str, source: &str) {
    let p = Project::new_as(operator);
    let server = FakeModel::start_at("normal", "127.0.0.1");
    let port = server.port;
    // The agent's own connection to the endpoint is what is told here: with the key
    // broker (claude, gemini, aider) the supervisor makes it instead, so the broker is off.
    let uncomment = |text: String| {
        let line = text
            .lines()
            .find(|l| l.starts_with("# allow_hosts = "))
            .expect("init writes claude's hosts")
            .to_owned();
        broker_off(&text.replacen(&line, &line[2..], 1))
    };
    let entry = format!("\"127.0.0.1:{port}\"");
    let told = format!(
        "egress to 127.0.0.1:{port} refused by the agent sandbox: add {entry} to [agent.sandbox] allow_hosts"
    );
    // doctor reads the endpoint from the CLI's variable and fails naming the entry.
    let out = run_cli_at(
        &p,
        "claude",
        "127.0.0.1",
        port,
        &uncomment,
        &["doctor", "--json"],
    );
    out.assert_code(1);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let check = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "agent_endpoint" && c["ok"] == false)
        .unwrap_or_else(|| panic!("no failed agent_endpoint check: {doc}"));
    assert!(
        check["reason"].as_str().unwrap().contains(&told)
            && check["reason"]
                .as_str()
                .unwrap()
                .contains("ANTHROPIC_BASE_URL"),
        "{check}"
    );
    // The round fails and says the same (the CLI connected to its own namespace's
    // loopback, which the supervisor does not see: the endpoint its variable names is).
    let out = run_cli_at(&p, cli, "127.0.0.1", port, &uncomment, &["round"]);
    let all = p.events_text();
    assert!(
        out.stderr
            .contains(&format!("{told} (the agent's endpoint, {source})")),
        "{operator:?}: {}\n{all}",
        out.stderr
    );
    assert!(!wrote_the_file(&p), "{all}");
    // The fix as printed: the entry added to the list.
    let fixed = |text: String| {
        uncomment(text).replacen("allow_hosts = [", &format!("allow_hosts = [{entry}, "), 1)
    };
    let p = Project::new_as(operator);
    let out = run_cli_at(&p, cli, "127.0.0.1", port, &fixed, &["round"]);
    let all = p.events_text();
    out.assert_code(0);
    assert!(
        wrote_the_file(&p),
        "{operator:?}: the fixed round did not write the file: {all}"
    );
    assert!(
        !p.events_of("agent_egress_refused")
            .iter()
            .any(|e| e["address"] == "127.0.0.1"),
        "{all}"
    );
}

/// Issue 41's newcomer with a real CLI: `init`'s config as written (the agent confined,
/// no `allow_hosts`, TCP to port 443 only) and a local model on another port. The failed
/// round says which port was refused and the key that opens it (the refused connect is
/// seen by the agent's seccomp observer); that one line added, the next round writes its
/// file. A CLI the key broker serves (claude, gemini, aider: docs/security.md "The key
/// broker") needs no line: the supervisor reaches the endpoint, and the round as `init`
/// wrote it writes its file.
fn newcomer_opens_the_port_it_was_told(operator: Operator, cli: &str) {
    let server = FakeModel::start_at("normal", "127.0.0.1");
    let port = server.port;
    let granted = format!("connect_ports = [{port}]\n");
    let as_init_wrote = |text: String| text.replacen(&granted, "", 1);
    if matches!(cli, "claude" | "gemini" | "aider") {
        let p = Project::new_as(operator);
        let out = run_cli_at(&p, cli, "127.0.0.1", port, &as_init_wrote, &["round"]);
        let all = p.events_text();
        out.assert_code(0);
        assert!(wrote_the_file(&p), "{operator:?} {cli}: {all}");
        assert!(p.events_of("agent_egress_refused").is_empty(), "{all}");
        return;
    }
    let told = format!(
        "egress to 127.0.0.1:{port} refused by the agent sandbox: add {port} to [agent.sandbox] connect_ports"
    );
    let p = Project::new_as(operator);
    let out = run_cli_at(&p, cli, "127.0.0.1", port, &as_init_wrote, &["round"]);
    let all = p.events_text();
    assert!(
        out.stderr.contains(&told),
        "{operator:?} {cli}: {}\n{all}",
        out.stderr
    );
    assert!(!wrote_the_file(&p), "{all}");
    // The line as printed.
    let p = Project::new_as(operator);
    let out = run_cli_at(&p, cli, "127.0.0.1", port, &|t| t, &["round"]);
    out.assert_code(0);
    assert!(
        wrote_the_file(&p),
        "{operator:?} {cli}: the fixed round did not write the file: {}",
        p.events_text()
    );
}

#[test]
fn every_preset_s_newcomer_opens_the_port_it_was_told_as_root_and_as_an_unprivileged_user() {
    for cli in ["claude", "codex", "gemini", "aider", "kimi", "pi"] {
        for operator in [Operator::Root, Operator::Unprivileged] {
            newcomer_opens_the_port_it_was_told(operator, cli);
        }
    }
}

#[test]
fn claude_reaches_a_local_endpoint_by_the_printed_fix_as_root_and_as_an_unprivileged_user() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        local_endpoint_by_the_printed_fix(
            operator,
            "claude",
            "the environment's ANTHROPIC_BASE_URL",
        );
    }
}

#[test]
fn codex_reaches_a_local_endpoint_by_the_printed_fix_as_root_and_as_an_unprivileged_user() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        local_endpoint_by_the_printed_fix(operator, "codex", "~/.codex/config.toml");
    }
}

#[test]
fn gemini_reaches_a_local_endpoint_by_the_printed_fix_as_root_and_as_an_unprivileged_user() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        local_endpoint_by_the_printed_fix(
            operator,
            "gemini",
            "the environment's GOOGLE_GEMINI_BASE_URL",
        );
    }
}

#[test]
fn aider_reaches_a_local_endpoint_by_the_printed_fix_as_root_and_as_an_unprivileged_user() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        local_endpoint_by_the_printed_fix(operator, "aider", "the environment's OPENAI_API_BASE");
    }
}

#[test]
fn kimi_reaches_a_local_endpoint_by_the_printed_fix_as_root_and_as_an_unprivileged_user() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        local_endpoint_by_the_printed_fix(operator, "kimi", "~/.kimi/config.toml");
    }
}

#[test]
fn pi_reaches_a_local_endpoint_by_the_printed_fix_as_root_and_as_an_unprivileged_user() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        local_endpoint_by_the_printed_fix(operator, "pi", "~/.pi/agent/models.json");
    }
}

#[test]
fn claude_rounds_through_the_egress_proxy_as_root_and_as_an_unprivileged_user() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        round_through_the_egress_proxy(operator, "claude");
    }
}

#[test]
fn codex_round_through_the_egress_proxy() {
    round_through_the_egress_proxy(Operator::Root, "codex");
}

#[test]
fn gemini_round_through_the_egress_proxy() {
    round_through_the_egress_proxy(Operator::Root, "gemini");
}

/// The key broker with the real Claude Code (docs/security.md, "The key broker"): `init`'s
/// config (the broker `auto`) and `ANTHROPIC_API_KEY` in the supervisor's environment; the
/// fake model accepts only that key. Claude's round writes its file, every model request
/// reached the server with the key, and the environment its shell tool call saw holds a
/// placeholder, not the key. The control, `broker = "off"`: the tool call's environment
/// holds the key.
fn claude_round_through_the_key_broker(operator: Operator) {
    // The key agent-clis.sh gives claude (tests/agent-clis/agent-clis.sh).
    const KEY: &str = "sk-ant-fake-key";
    for broker in ["auto", "off"] {
        let p = Project::new_as(operator);
        let log = p.tmp_dir().join("fake-model.jsonl");
        let server = FakeModel::spawn(
            Command::new("python3")
                .arg(workspace_root().join("tests/agent-clis/fake_model.py"))
                .args(["--mode", "normal", "--expect-key-env", "FAKE_EXPECTED_KEY"])
                .args(["--then", "env > claude-env.txt", "--log"])
                .arg(&log)
                .env("FAKE_EXPECTED_KEY", KEY),
        );
        let edit = |text: String| {
            // The tool call's environment dump stays in the tree (not stashed).
            text.replacen("broker = \"auto\"", &format!("broker = \"{broker}\""), 1)
                .replacen("dirty_action = \"stash\"", "dirty_action = \"ignore\"", 1)
        };
        let out = run_cli(&p, "claude", server.port, &edit, &["round"]);
        let all = p.events_text();
        out.assert_code(0);
        assert!(wrote_the_file(&p), "{operator:?} broker {broker}: {all}");
        let requests: Vec<Value> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|r: &Value| r["key"].is_string())
            .collect();
        assert!(!requests.is_empty(), "{all}");
        assert!(
            requests.iter().all(|r| r["key"] == "expected"),
            "{requests:?}"
        );
        let env = std::fs::read_to_string(p.dir().join("claude-env.txt")).unwrap();
        if broker == "auto" {
            assert!(!env.contains(KEY), "the key in claude's environment: {env}");
            assert!(
                env.contains("ANTHROPIC_API_KEY=agent-runner-placeholder-"),
                "{env}"
            );
        } else {
            assert!(env.contains(&format!("ANTHROPIC_API_KEY={KEY}")), "{env}");
        }
    }
}

#[test]
fn claude_round_through_the_key_broker_as_root_and_as_an_unprivileged_user() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        claude_round_through_the_key_broker(operator);
    }
}

/// The key a confined agent must not read: planted in the fake home's `~/.ssh`.
const PLANTED_KEY: &str = "-----BEGIN PLANTED TEST KEY----- not for the agent";

/// The issue's "done when" (docs/security.md, "The agent's confinement"): under
/// `[agent.sandbox] mode = "require"` (the fake model's port granted by `connect_ports`),
/// the real CLI completes its round (exit 0), its change is committed, nothing is
/// degraded; its shell tool call's attempt to read a planted `~/.ssh/id_rsa` failed
/// (the probe's output, committed too, holds the shell's refusal, not the key).
fn round_confined_under_require_commits_its_change(operator: Operator, cli: &str) {
    let p = Project::new_as(operator);
    let ssh = p.home().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), PLANTED_KEY).unwrap();
    if let Some(user) = operator.user() {
        // Owned by the operator, so only the confinement can refuse the read.
        user.own(&ssh);
    }
    let probe = format!(
        "cat {}/id_rsa > ssh-probe.txt 2>&1; echo \"exit $?\" >> ssh-probe.txt",
        ssh.display()
    );
    let server = FakeModel::start_with("normal", "127.0.0.1", &["--then", &probe]);
    // The preset's command as `init` wrote it: for codex, `--sandbox workspace-write`,
    // which the supervisor swaps for codex's bypass since ours confines it
    // (docs/security.md, "A CLI's own sandbox under ours").
    let edit = move |text: String| {
        text.replace("dirty_action = \"stash\"", "dirty_action = \"auto_commit\"")
            .replacen("\nmode = \"prefer\"\n", "\nmode = \"require\"\n", 1)
    };
    let out = serve(&p, cli, server.port, 1, &edit);
    let all = p.events_text();
    out.assert_code(0);
    let replaced = p.events_of("agent_own_sandbox_replaced");
    if cli == "codex" {
        assert!(
            std::fs::read_to_string(p.config_path())
                .unwrap()
                .contains("\"--sandbox\", \"workspace-write\""),
            "the codex preset's command changed"
        );
        assert_eq!(replaced.len(), 1, "{cli} {operator:?}: {all}");
        assert_eq!(replaced[0]["round_num"], 1, "{all}");
        assert_eq!(replaced[0]["cli"], "codex", "{all}");
        assert_eq!(
            replaced[0]["removed"],
            agent_runner_e2e::serde_json::json!(["--sandbox", "workspace-write"]),
            "{all}"
        );
        assert_eq!(
            replaced[0]["added"],
            agent_runner_e2e::serde_json::json!(["--dangerously-bypass-approvals-and-sandbox"]),
            "{all}"
        );
    } else {
        assert!(replaced.is_empty(), "{cli} {operator:?}: {all}");
    }
    let logs: String = p
        .round_logs()
        .iter()
        .map(|l| std::fs::read_to_string(l).unwrap_or_default())
        .collect();
    let all = format!("{all}\nround log:\n{logs}");
    let exits = p.events_of("agent_exit");
    assert_eq!(exits.len(), 1, "{cli} {operator:?}: {all}");
    assert_eq!(exits[0]["exit_code"], 0, "{cli} {operator:?}: {all}");
    assert!(
        p.events_of("agent_sandbox_degraded").is_empty(),
        "{cli} {operator:?}: {all}"
    );
    // Its connects all went to the listed port: Landlock's observer tells no refusal.
    assert!(
        p.events_of("agent_egress_refused").is_empty(),
        "{cli} {operator:?}: {all}"
    );
    let commits = p.git(&["log", "--format=%H", "--", "agent-was-here.txt"]);
    assert_eq!(
        commits.lines().count(),
        1,
        "{cli} {operator:?}: {commits}\n{all}"
    );
    assert!(
        p.status_porcelain().is_empty(),
        "{:?}",
        p.status_porcelain()
    );
    let probed = p.git(&["show", "HEAD:ssh-probe.txt"]);
    assert!(
        !probed.contains("PLANTED") && probed.contains("Permission denied"),
        "{cli} {operator:?}: the confined agent's read of ~/.ssh/id_rsa: {probed}"
    );
    assert!(
        !probed.trim_end().ends_with("exit 0"),
        "{cli} {operator:?}: {probed}"
    );
    if cli == "codex" {
        // doctor says so too (its JSON is printed whatever its other checks find).
        let doctor = p.run(&["doctor", "--json"]);
        let doc: agent_runner_e2e::serde_json::Value =
            agent_runner_e2e::serde_json::from_str(&doctor.stdout)
                .unwrap_or_else(|e| panic!("{e}: {doctor}"));
        let said = doc["agent_sandbox"]["own_sandbox_replaced"]
            .as_str()
            .unwrap_or_else(|| panic!("doctor does not say codex's sandbox is replaced: {doctor}"));
        assert!(
            said.contains("`--sandbox workspace-write`")
                && said.contains("--dangerously-bypass-approvals-and-sandbox"),
            "{said}"
        );
    }
}

#[test]
fn claude_round_confined_under_require_commits_its_change() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        round_confined_under_require_commits_its_change(operator, "claude");
    }
}

/// Codex CLI with its preset's command (`--sandbox workspace-write`, which the supervisor
/// replaces by codex's bypass, ours standing in), as root and as an unprivileged user.
#[test]
fn codex_round_confined_under_require_commits_its_change() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        round_confined_under_require_commits_its_change(operator, "codex");
    }
}

/// aider's preset starts its CLI as root and as an unprivileged user: a normal round
/// writes the file and aider commits it itself; its own files are ignored (`init` wrote
/// `.aider*` to `.gitignore`), so nothing is left dirty.
#[test]
fn aider_rounds_run_as_root_and_as_an_unprivileged_user() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        let server = FakeModel::start("normal");
        let out = serve(&p, "aider", server.port, 1, &unchanged);
        out.assert_code(0);
        assert!(
            p.dir().join("agent-was-here.txt").is_file(),
            "{operator:?}: aider did not write the file: {}",
            p.events_text()
        );
        assert!(
            p.events_of("dirty_detected").is_empty(),
            "{}",
            p.events_text()
        );
        assert_eq!(
            p.events_of("agent_usage_recorded").len(),
            1,
            "{}",
            p.events_text()
        );
    }
}

/// The fake model server's record of the model requests it answered: how many
/// conversation entries each carried.
fn request_turns(log: &std::path::Path) -> Vec<u64> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|r| r["turns"].as_u64())
        .collect()
}

/// The session files claude wrote (`.claude/projects/*/ID.jsonl`): in the agent's shadow
/// home (`<state_dir>/agent-home/claude`, docs/security.md "The shadow CLI home"), where
/// `init`'s confined rounds keep them; the operator's own `~/.claude/projects` stays
/// empty.
fn claude_sessions(p: &Project) -> Vec<PathBuf> {
    assert!(
        !p.home().join(".claude/projects").exists(),
        "a session in the operator's own ~/.claude"
    );
    let projects = p.state_dir().join("agent-home/claude/.claude/projects");
    let mut found = Vec::new();
    for dir in std::fs::read_dir(&projects).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if file.path().extension().is_some_and(|e| e == "jsonl") {
                found.push(file.path());
            }
        }
    }
    found
}

/// Claude Code's own files under its shadow home (docs/security.md, "The shadow CLI
/// home"): under `mode = "require"`, two rounds of the real claude record no
/// `agent_sandbox_denied` for a file of claude's own (`~/.claude.json`, its lock and its
/// temporary files, anything of `~/.claude`) — they land in the shadow's bound
/// `~/.claude` (`CLAUDE_CONFIG_DIR`) — and round 2 resumes round 1's session. The
/// control: the same shell tool call also appends to `~/.bashrc`, which is refused and
/// recorded in each round (a real refusal is still told). Root and `ar-e2e`.
#[test]
fn claude_s_own_files_are_not_refused_across_rounds_as_root_and_as_an_unprivileged_user() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        let bashrc = p.home().join(".bashrc");
        let plant = format!("echo planted >> {}", bashrc.display());
        let server = FakeModel::start_with("normal", "127.0.0.1", &["--then", &plant]);
        let edit =
            |text: String| text.replacen("\nmode = \"prefer\"\n", "\nmode = \"require\"\n", 1);
        serve(&p, "claude", server.port, 2, &edit).assert_code(0);
        let all = p.events_text();
        let ends = p.events_of("round_end");
        assert_eq!(ends.len(), 2, "{operator:?}: {all}");
        assert!(
            ends.iter()
                .all(|e| e["exit_code"] == 0 && e["exit_cause"] == "exited"),
            "{operator:?}: {all}"
        );
        let resumed = p.events_of("session_resumed");
        assert_eq!(resumed.len(), 1, "{operator:?}: {all}");
        assert_eq!(resumed[0]["round_num"], 2, "{operator:?}: {all}");
        assert_eq!(claude_sessions(&p).len(), 1, "{operator:?}: {all}");
        let denied = p.events_of("agent_sandbox_denied");
        let own: Vec<&Value> = denied
            .iter()
            .filter(|d| d["target"].as_str().is_some_and(|t| t.contains("/.claude")))
            .collect();
        assert!(
            own.is_empty(),
            "{operator:?}: claude's own files refused: {own:#?}"
        );
        // Its reads of the TLS roots are granted (`/etc/ssl/certs` inside the withheld
        // `/etc/ssl`): never told as refused.
        assert!(
            denied.iter().all(|d| !d["target"]
                .as_str()
                .is_some_and(|t| t.starts_with("/etc/ssl/certs"))),
            "{operator:?}: a granted read told as refused: {all}"
        );
        for round in [1, 2] {
            assert!(
                denied.iter().any(|d| d["round_num"] == round
                    && d["layer"] == "landlock"
                    && d["target"]
                        .as_str()
                        .is_some_and(|t| t.ends_with("/.bashrc"))),
                "{operator:?}: round {round}'s write of ~/.bashrc not recorded: {all}"
            );
        }
        assert!(!bashrc.exists(), "{operator:?}: ~/.bashrc was written");
    }
}

/// Session resume on the real claude (docs/agent-clis.md, "Session resume"): serve starts
/// round 1 under a session id it minted (`--session-id`) and round 2 resumes it
/// (`--resume`): `session_resumed` names the id, claude kept one session file of that id
/// holding both rounds, and round 2's model requests carried round 1's conversation (more
/// entries than a fresh round's: its prompt, the tool call and its result). With
/// `session_resume = false` each round starts afresh: no `session_resumed`, no request
/// longer than a fresh round's, and round 1's session file pruned after round 2.
#[test]
fn claude_second_round_resumes_the_first_rounds_session() {
    // A fresh round's requests: the prompt (claude sends two entries), then those, the
    // tool call and its result.
    const FRESH_ROUND_MAX_TURNS: u64 = 4;
    for resume in [true, false] {
        let p = Project::new();
        let log = p.home().join("fake-model.jsonl");
        let server = FakeModel::start_logged("normal", &log);
        let edit = |text: String| {
            if resume {
                text
            } else {
                text.replacen("[agent]\n", "[agent]\nsession_resume = false\n", 1)
            }
        };
        serve(&p, "claude", server.port, 2, &edit).assert_code(0);
        let ends = p.events_of("round_end");
        assert_eq!(ends.len(), 2, "{}", p.events_text());
        assert!(
            ends.iter()
                .all(|e| e["exit_code"] == 0 && e["exit_cause"] == "exited"),
            "{}",
            p.events_text()
        );
        let resumed = p.events_of("session_resumed");
        let sessions = claude_sessions(&p);
        let longest = request_turns(&log).into_iter().max().unwrap_or(0);
        if resume {
            assert_eq!(resumed.len(), 1, "{}", p.events_text());
            assert_eq!(resumed[0]["round_num"], 2, "{}", resumed[0]);
            let id = resumed[0]["session_id"].as_str().unwrap();
            assert_eq!(sessions.len(), 1, "{sessions:?}");
            assert_eq!(
                sessions[0].file_stem().unwrap().to_str().unwrap(),
                id,
                "{sessions:?}"
            );
            assert!(
                longest > FRESH_ROUND_MAX_TURNS,
                "round 2 did not carry round 1's conversation: at most {longest} entries"
            );
        } else {
            assert!(resumed.is_empty(), "{}", p.events_text());
            // Two sessions, the first pruned after round 2 (no round resumes it:
            // docs/operations.md, "The agent's CLI state on disk"): the newest is kept.
            assert_eq!(sessions.len(), 1, "{sessions:?}");
            let pruned = p.events_of("agent_home_pruned");
            assert!(
                pruned
                    .iter()
                    .any(|e| e["round_num"] == 2 && e["removed"].as_u64() >= Some(1)),
                "{}",
                p.events_text()
            );
            assert!(longest <= FRESH_ROUND_MAX_TURNS, "{longest} entries");
        }
    }
}

/// Session resume on a CLI that goes on with its last session (pi's `--continue`, codex's
/// `exec … resume --last`, aider's `--restore-chat-history`) or names its session (kimi's
/// `--session ID` every round, gemini's `--session-id ID` then `--resume ID`),
/// docs/agent-clis.md "Session resume": two rounds through serve, both committed (round 2, its session holding round 1's tool call and result,
/// still gets and runs its own), `session_resumed` on round 2, and round 2's model
/// requests carry round 1's conversation: longer than any request of the same two rounds
/// with `session_resume = false`.
fn second_round_resumes_the_first_rounds_session(cli: &str) {
    let mut longest = Vec::new();
    for resume in [true, false] {
        let p = Project::new();
        let log = p.home().join("fake-model.jsonl");
        let server = FakeModel::start_logged("normal", &log);
        let edit = |text: String| {
            let text = text.replace("dirty_action = \"stash\"", "dirty_action = \"auto_commit\"");
            if resume {
                text
            } else {
                text.replacen("[agent]\n", "[agent]\nsession_resume = false\n", 1)
            }
        };
        serve(&p, cli, server.port, 2, &edit).assert_code(0);
        let exits = p.events_of("agent_exit");
        assert_eq!(exits.len(), 2, "{cli}: {}", p.events_text());
        assert!(
            exits.iter().all(|e| e["exit_code"] == 0),
            "{cli}: {}",
            p.events_text()
        );
        let commits = p.git(&["log", "--format=%H", "--", "agent-was-here.txt"]);
        assert_eq!(
            commits.lines().count(),
            2,
            "{cli} (resume {resume}): {}",
            p.events_text()
        );
        let resumed = p.events_of("session_resumed");
        if resume {
            assert_eq!(resumed.len(), 1, "{cli}: {}", p.events_text());
            assert_eq!(resumed[0]["round_num"], 2, "{cli}: {}", resumed[0]);
        } else {
            assert!(resumed.is_empty(), "{cli}: {}", p.events_text());
        }
        longest.push(request_turns(&log).into_iter().max().unwrap_or(0));
    }
    assert!(
        longest[0] > longest[1],
        "{cli}: round 2 did not carry round 1's conversation: longest request {} entries resumed, {} fresh",
        longest[0],
        longest[1]
    );
}

/// pi goes on with its last session by `--continue`.
#[test]
fn pi_second_round_resumes_the_first_rounds_session() {
    second_round_resumes_the_first_rounds_session("pi");
}

/// kimi is handed the phase's session id every round (`--session ID`).
#[test]
fn kimi_second_round_resumes_the_first_rounds_session() {
    second_round_resumes_the_first_rounds_session("kimi");
}

/// codex goes on with its last session by `exec … resume --last`.
#[test]
fn codex_second_round_resumes_the_first_rounds_session() {
    second_round_resumes_the_first_rounds_session("codex");
}

/// gemini starts round 1 under the phase's session id (`--session-id ID`) and resumes it
/// in round 2 (`--resume ID`).
#[test]
fn gemini_second_round_resumes_the_first_rounds_session() {
    second_round_resumes_the_first_rounds_session("gemini");
}

/// aider goes on with the work tree's chat history by `--restore-chat-history`.
#[test]
fn aider_second_round_resumes_the_first_rounds_session() {
    second_round_resumes_the_first_rounds_session("aider");
}

/// gemini through `serve`: two rounds, each committed, then a clean stop.
#[test]
fn gemini_serve_commits_every_round_and_stops_cleanly() {
    serve_commits_every_round(Operator::Root, "gemini", 2);
}

/// aider through `serve`: two rounds, each committed by aider, then a clean stop.
#[test]
fn aider_serve_commits_every_round_and_stops_cleanly() {
    serve_commits_every_round(Operator::Root, "aider", 2);
}

/// gemini with an API key but no login method chosen exits 41 "Invalid auth method
/// selected." every round: a login problem, serve stops at once (exit 77) with the hint.
#[test]
fn gemini_without_a_login_method_stops_with_77() {
    let p = Project::new();
    let server = FakeModel::start("normal");
    let home = p.home().to_str().unwrap().to_owned();
    let out = run_cli(
        &p,
        "gemini",
        server.port,
        &|text| {
            // After agent-clis.sh wrote its settings (run_cli's env step), undo the login
            // choice: the script the capture uses for gemini/auth_method.
            agent_clis(&["unselect-auth", "gemini", &home]);
            text
        },
        &["serve", "--max-rounds", "3"],
    );
    out.assert_code(77);
    let exits = p.events_of("agent_exit");
    assert_eq!(exits.len(), 1, "{}", p.events_text());
    assert_eq!(exits[0]["exit_code"], 41, "{}", exits[0]);
    let (_, auth) = decision(&p);
    assert_eq!(auth.len(), 1, "{}", p.events_text());
    assert!(
        auth[0]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("gemini")),
        "{}",
        auth[0]
    );
}

/// pi's preset starts its CLI: as root, two rounds through serve, each committed; as an
/// unprivileged user, one round that writes the file.
#[test]
fn pi_rounds_commit_as_root_and_run_as_an_unprivileged_user() {
    serve_commits_every_round(Operator::Root, "pi", 2);
    normal_round_as(Operator::Unprivileged, "pi", "normal");
}

/// kimi's preset starts its CLI as root: two rounds through serve, each committed.
#[test]
fn kimi_rounds_commit_as_root() {
    serve_commits_every_round(Operator::Root, "kimi", 2);
}

/// kimi's preset starts its CLI as an unprivileged user: one round through serve exits 0
/// and its change is committed. kimi-cli needs Python >= 3.12; where the only one is closed
/// to that user (pyenv's under /root), tests/setup.d/30-agent-clis.sh builds kimi's venv
/// on a copy of it beside the CLIs (docs/agent-clis.md).
#[test]
fn kimi_rounds_commit_as_an_unprivileged_user() {
    serve_commits_every_round(Operator::Unprivileged, "kimi", 1);
}

/// pi exits 0 after every failure (its own retries spent): the JSON stream's error is
/// read whatever the exit, the printed reset is waited.
#[test]
fn pi_rate_limit_waits_the_printed_reset() {
    failure_backs_off("pi", "rate_limit", "rate_limit", 3);
}

#[test]
fn pi_invalid_key_stops_with_77() {
    invalid_key_stops_with_77("pi");
}

/// kimi exits 75 on a rate limit, its message wrapped at 80 columns across the printed
/// reset ("Please⏎try again in 3s."): the lines are joined, the reset waited.
#[test]
fn kimi_rate_limit_waits_the_printed_reset() {
    failure_backs_off("kimi", "rate_limit", "rate_limit", 3);
}

#[test]
fn kimi_invalid_key_stops_with_77() {
    invalid_key_stops_with_77("kimi");
}

/// kimi reports no token usage, so only the tree tells whether a round did anything:
/// against a model that answers but never calls a tool, kimi exits 0 in seconds having
/// changed nothing, and five such rounds in a row stop serve (exit 75,
/// `stalled_no_progress` with the last round's lines). A round slower than the 30 s
/// bound (a loaded machine) restarts the count, hence the room in `--max-rounds`.
#[test]
fn kimi_rounds_that_change_nothing_stop_serve_as_stalled() {
    let p = Project::new();
    let server = FakeModel::start("idle");
    let out = serve(&p, "kimi", server.port, 12, &unchanged);
    out.assert_code(75);
    let stalled = p.events_of("stalled_no_progress");
    assert_eq!(stalled.len(), 1, "{}", p.events_text());
    assert_eq!(stalled[0]["consecutive_rounds"], 5, "{}", stalled[0]);
    assert!(
        stalled[0]["last_lines"]
            .to_string()
            .contains("To resume this session: kimi -r"),
        "{}",
        stalled[0]
    );
    let exits = p.events_of("agent_exit");
    assert!((5..12).contains(&exits.len()), "{}", p.events_text());
    assert!(
        exits.iter().all(|e| e["exit_code"] == 0),
        "{}",
        p.events_text()
    );
    assert!(p.events_of("crash_loop").is_empty(), "{}", p.events_text());
    assert!(!p.dir().join("agent-was-here.txt").exists());
    assert!(out.stderr.contains("stalled_no_progress"), "{}", out.stderr);
}

/// A resumed run's recorded usage adds up to what the fake model server billed
/// (docs/detectors.md, "Usage"): three rounds of one session (`session_resumed` twice),
/// each request billed a fixed usage (claude's Messages API 120 input and 30 output
/// tokens, codex's Responses API 200 and 40), and the events' tokens sum to the requests
/// the server logged times that. codex reports its session's running token totals and
/// claude its session's running cost (`total_cost_usd`, measured here: 0.00108, 0.00216,
/// 0.00324 for three equal rounds); each event is the round's own, so claude's three
/// equal rounds cost the same each.
fn resumed_usage_adds_up_to_the_bill(cli: &str, billed: (u64, u64), from_totals: &str) {
    const ROUNDS: usize = 3;
    let p = Project::new();
    let log = p.home().join("fake-model.jsonl");
    let server = FakeModel::start_logged("normal", &log);
    serve(&p, cli, server.port, ROUNDS as u32, &|t| t).assert_code(0);
    assert_eq!(
        p.events_of("session_resumed").len(),
        ROUNDS - 1,
        "{cli}: {}",
        p.events_text()
    );
    let requests = request_turns(&log).len() as u64;
    let usage = p.events_of("agent_usage_recorded");
    assert_eq!(usage.len(), ROUNDS, "{cli}: {}", p.events_text());
    let sum = |key: &str| usage.iter().map(|u| u[key].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("input_tokens"), requests * billed.0, "{cli}: {usage:?}");
    assert_eq!(
        sum("output_tokens"),
        requests * billed.1,
        "{cli}: {usage:?}"
    );
    for u in &usage {
        assert_eq!(u["usage_scope"], "round", "{u}");
        // With the key brokered the counts are what the provider billed, per request
        // (`source` broker, docs/operations.md "Where spend comes from"); the CLI's own
        // report, its session's running totals turned into the round's own, stands beside
        // them as `reported_*`. Otherwise the counts are the CLI's, from its totals.
        if u["source"] == "broker" {
            assert_eq!(u["from_session_totals"], serde_json::json!([]), "{u}");
            assert!(u["reported_tokens"].as_u64().unwrap() > 0, "{u}");
        } else {
            assert!(
                u["from_session_totals"].to_string().contains(from_totals),
                "{u}"
            );
        }
    }
    if cli == "claude" {
        // Claude's own cost of each round (its running total's difference): the same
        // every round of the resumed session.
        let costs: Vec<f64> = usage
            .iter()
            .map(|u| {
                u.get("reported_cost_usd")
                    .unwrap_or(&u["cost_usd"])
                    .as_f64()
                    .unwrap()
            })
            .collect();
        assert!(costs[0] > 0.0, "{costs:?}");
        assert!(
            costs.iter().all(|c| (c - costs[0]).abs() < 1e-9),
            "each round's own cost: {costs:?}"
        );
    }
}

#[test]
fn claude_resumed_usage_adds_up_to_the_bill() {
    resumed_usage_adds_up_to_the_bill("claude", (120, 30), "cost_usd");
}

#[test]
fn codex_resumed_usage_adds_up_to_the_bill() {
    resumed_usage_adds_up_to_the_bill("codex", (200, 40), "input_tokens");
}

/// The real claude's own reported cost drives `[budget] total_usd` (docs/operations.md,
/// "Budget"): against the fake model server a round costs $0.00108 by claude's count
/// (the session's running total taken as each round's own), so a cap of $0.002 lets two
/// rounds run, then `budget_exhausted` and exit 80; the spend counted is the sum of the
/// rounds' recorded costs.
#[test]
fn claude_reported_cost_drives_the_total_cap() {
    let p = Project::new();
    let server = FakeModel::start("normal");
    // The key broker off: with it the provider's bill, priced by the table, would count
    // first (hostile_budget covers that); here claude's own report must.
    let out = serve(&p, "claude", server.port, 10, &|text| {
        format!("{}\n[budget]\ntotal_usd = 0.002\n", broker_off(&text))
    });
    out.assert_code(80);
    assert_eq!(p.events_of("round_start").len(), 2, "{}", p.events_text());
    // The round that crosses the cap may be stopped by the output watch before claude
    // prints its result: its usage is then recorded from the watch, priced by the table
    // (no `cost_usd`), and counts on top of claude's own costs.
    let costs: Vec<f64> = p
        .events_of("agent_usage_recorded")
        .iter()
        .filter_map(|u| u["cost_usd"].as_f64())
        .collect();
    let exhausted = p.events_of("budget_exhausted");
    assert_eq!(exhausted.len(), 1, "{}", p.events_text());
    let spent = exhausted[0]["spent"].as_f64().unwrap();
    assert!(
        spent >= costs.iter().sum::<f64>() - 1e-9,
        "{spent} {costs:?}"
    );
    assert!((0.002..0.004).contains(&spent), "{spent} {costs:?}");
}

/// The shadow home's bytes (`du`-like, links not followed) and its transcripts' count.
fn shadow_use(p: &Project, cli: &str) -> (u64, usize) {
    fn walk(dir: &std::path::Path, bytes: &mut u64, transcripts: &mut usize) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if meta.is_dir() {
                walk(&e.path(), bytes, transcripts);
            } else if meta.is_file() {
                *bytes += meta.len();
                if e.path().extension().is_some_and(|x| x == "jsonl") {
                    *transcripts += 1;
                }
            }
        }
    }
    let (mut bytes, mut transcripts) = (0, 0);
    walk(
        &p.state_dir().join("agent-home").join(cli),
        &mut bytes,
        &mut transcripts,
    );
    (bytes, transcripts)
}

/// The measurement behind `[agent] session_max_rounds`'s default (docs/operations.md,
/// "The agent's CLI state on disk"): 40 rounds of the real claude against the fake model,
/// bounded (`session_max_rounds = 10`) and not (`1000`), printing round times (median of
/// the first and the last ten), the longest model request (entries) and the shadow home's
/// size and transcripts after the run. Asserts only that the bound renewed and that the
/// bounded run's disk and longest request stay under the unbounded one's (about three
/// minutes of rounds).
#[test]
fn claude_forty_rounds_bounded_and_not() {
    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }
    let mut runs = Vec::new();
    for bound in [10, 1000] {
        let p = Project::new();
        let log = p.home().join("fake-model.jsonl");
        let server = FakeModel::start_logged("normal", &log);
        let edit = |text: String| {
            text.replace("dirty_action = \"stash\"", "dirty_action = \"auto_commit\"")
                .replacen(
                    "[agent]\n",
                    &format!("[agent]\nsession_max_rounds = {bound}\n"),
                    1,
                )
        };
        let started = std::time::Instant::now();
        serve(&p, "claude", server.port, 40, &edit).assert_code(0);
        let wall = started.elapsed().as_secs_f64();
        let times: Vec<f64> = p
            .events_of("agent_exit")
            .iter()
            .map(|e| e["duration_s"].as_f64().unwrap())
            .collect();
        assert_eq!(times.len(), 40, "{}", p.events_text());
        let (bytes, transcripts) = shadow_use(&p, "claude");
        let longest = request_turns(&log).into_iter().max().unwrap_or(0);
        let renewed = p.events_of("session_renewed").len();
        println!(
            "session_max_rounds = {bound}: rounds 1-10 median {:.2} s, 31-40 median {:.2} s; longest request {longest} entries; shadow home {bytes} bytes, {transcripts} transcripts; {renewed} renewals; {wall:.0} s in all",
            median(times[..10].to_vec()),
            median(times[30..].to_vec()),
        );
        runs.push((bytes, longest, renewed));
    }
    assert_eq!(runs[0].2, 3, "renewed after rounds 10, 20, 30");
    assert_eq!(runs[1].2, 0);
    assert!(runs[0].0 < runs[1].0 && runs[0].1 < runs[1].1, "{runs:?}");
}

/// `[budget]` within a round on the real claude (docs/operations.md, "Budget": "Within a
/// round"): its stream-json's `assistant` record of the first model call (120 input
/// tokens, priced as claude prices the fake model: $3/M input, $15/M output) crosses
/// `round_usd = 0.0003`, read by the confined built-in watch. While claude runs the tool
/// call (slowed to 5 s by `--then`) it is stopped before its second call: the fake model
/// answered one request. With a tool call that returns at once, the second call may
/// already be under way when the stop lands: at most one call more (the overshoot the
/// issue bounds). The control: with `round_usd = 1.0` the round makes both calls and
/// nothing is stopped.
#[test]
fn claude_is_stopped_mid_round_once_its_stream_crosses_round_usd() {
    for (cap, tool, requests, stopped) in [
        ("0.0003", "sleep 5", 1..=1, 1),
        ("0.0003", "true", 1..=2, 1),
        ("1.0", "sleep 5", 2..=2, 0),
    ] {
        let p = Project::new();
        let log = p.home().join("fake-model.jsonl");
        let server = FakeModel::spawn(
            Command::new("python3")
                .arg(workspace_root().join("tests/agent-clis/fake_model.py"))
                .args(["--mode", "normal", "--host", "127.0.0.1", "--then", tool])
                .arg("--log")
                .arg(&log),
        );
        // The key broker off, so the stream watch is what stops the round (the broker's
        // own in-round stop is hostile_budget's).
        let out = serve(&p, "claude", server.port, 1, &|text| {
            format!(
                "{}\n[budget]\nround_usd = {cap}\n\n[budget.prices.\"claude-sonnet-5-5\"]\ninput = 3.0\noutput = 15.0\n",
                broker_off(&text)
            )
        });
        out.assert_code(0);
        let events = p.events_of("budget_round_stopped");
        assert_eq!(events.len(), stopped, "{cap}: {}", p.events_text());
        let made = request_turns(&log).len();
        eprintln!(
            "claude, round_usd = {cap}, tool `{tool}`: model requests {made} (of 2), stopped: {}",
            events.len()
        );
        assert!(
            requests.contains(&made),
            "{cap} {tool}: {made}: {}",
            p.events_text()
        );
        let exit = &p.events_of("agent_exit")[0];
        if stopped == 1 {
            assert_eq!(events[0]["calls"], 1, "{}", events[0]);
            assert_eq!(events[0]["hook"], "claude_usage_watch");
            assert_eq!(exit["exit_cause"], "budget", "{exit}");
        } else {
            assert_eq!(exit["exit_cause"], "exited", "{exit}");
        }
    }
}
