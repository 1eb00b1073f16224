//! Agent-aware rounds, end to end (docs/detectors.md): fake agents named after each preset
//! CLI replay that CLI's failure output (`supervisor/tests/fixtures/agent-output`), and the
//! built-in detectors — the supervisor's own executable in its host mode, confined like any
//! host — diagnose it; `serve` backs off until a printed reset time and recovers, stops on
//! a login failure with the operator's hint (exit 77), and lands a stop, SIGTERM or the
//! stop file during a back-off at once.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{wait_until, workspace_root, ConfigBuilder, Operator, Project};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn fixtures() -> PathBuf {
    workspace_root().join("supervisor/tests/fixtures/agent-output")
}

/// Installs the fake CLI agent as `<tmp>/bin/<cli>` and returns a config running it on
/// `fixture` (relative to the fixtures dir), failing with `exit` until `reset_in` seconds
/// after its first run.
fn fake_cli(p: &Project, cli: &str, fixture: &str, exit: i64, reset_in: u64) -> ConfigBuilder {
    let bin = p.tmp_dir().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let agent = bin.join(cli);
    std::fs::copy(
        workspace_root().join("tests/fixtures/fake-cli-agent.sh"),
        &agent,
    )
    .unwrap();
    let state = p
        .tmp_dir()
        .join(format!("reset-{cli}-{}", fixture.replace('/', "_")));
    let _ = std::fs::remove_file(&state);
    ConfigBuilder::new(&agent)
        .dirty_action("ignore")
        .agent_env(
            "AR_FIXTURE",
            &fixtures().join(fixture).display().to_string(),
        )
        .agent_env("AR_STATE", &state.display().to_string())
        .agent_env("AR_EXIT", &exit.to_string())
        .agent_env("AR_RESET_IN", &reset_in.to_string())
}

fn status_json(p: &Project) -> Value {
    let out = p.run(&["status", "--json"]);
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("status --json: {e}: {out}"))
}

#[test]
fn every_cli_fixture_is_diagnosed_by_the_confined_detector_host() {
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("cases.json")).unwrap())
            .unwrap();
    for case in manifest["cases"].as_array().unwrap() {
        let file = case["file"].as_str().unwrap();
        let cli = file.split('/').next().unwrap();
        let exit = case["exit_code"].as_i64().unwrap();
        let p = Project::new();
        p.write_config(&fake_cli(&p, cli, file, exit, 7200).sandbox("require"));
        let out = p.run(&["round", "--json"]);
        let want_code = if case["action"] == "stop" {
            77
        } else {
            exit as i32
        };
        assert_eq!(out.code(), want_code, "{file}: {out}");
        assert!(
            p.events_of("hook_failed").is_empty(),
            "{file}: {}",
            p.events_text()
        );
        let decisions = p.events_of("plugin_post_round_decision");
        match case["action"].as_str() {
            Some(action @ ("back_off" | "stop")) => {
                assert_eq!(decisions.len(), 1, "{file}: {}", p.events_text());
                let d = &decisions[0];
                assert_eq!(d["action"], action, "{file}: {d}");
                assert_eq!(d["kind"], case["kind"], "{file}: {d}");
                assert_eq!(d["hook"], format!("{cli}_error_detector"), "{file}: {d}");
                match &case["wait"] {
                    Value::String(_) => assert!(d["until"].is_string(), "{file}: {d}"),
                    Value::Number(n) => {
                        assert_eq!(d["back_off_s"].as_u64(), n.as_u64(), "{file}: {d}")
                    }
                    _ => {}
                }
                if action == "stop" {
                    let auth = p.events_of("agent_auth_error_detected");
                    assert_eq!(auth.len(), 1, "{file}: {}", p.events_text());
                    assert!(out.stderr.contains("login"), "{file}: {out}");
                }
            }
            _ => assert!(decisions.is_empty(), "{file}: {decisions:?}"),
        }
        let usage = p.events_of("agent_usage_recorded");
        match case["usage"].as_array() {
            Some(want) => {
                assert_eq!(usage.len(), 1, "{file}: {}", p.events_text());
                assert_eq!(usage[0]["input_tokens"], want[0], "{file}");
                assert_eq!(usage[0]["output_tokens"], want[1], "{file}");
                // The reference system's fields beside ours.
                assert_eq!(usage[0]["agent"], cli, "{file}");
                let model = case["model"].as_str().unwrap_or("unknown");
                assert_eq!(usage[0]["model"], model, "{file}");
                let cached = usage[0]["cache_read_tokens"].as_u64().unwrap_or(0);
                assert_eq!(usage[0]["cached_tokens"], cached, "{file}");
            }
            None if case["action"].is_null() => assert!(usage.is_empty(), "{file}"),
            None => {}
        }
        p.assert_events_whole();
    }
}

/// The process that runs the host's code: as root, the pid `status` reports; for an
/// unprivileged operator that pid is the reaper outside the host's user and PID namespaces
/// (plugin-host's `user_namespace`), and the host is its one child, PID 1 inside them.
fn confined_process(operator: Operator, pid: u64) -> u64 {
    if operator == Operator::Root {
        return pid;
    }
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    let children: Vec<u64> = children
        .split_whitespace()
        .map(|c| c.parse().unwrap())
        .collect();
    let [host] = children[..] else {
        panic!("the reaper {pid} has children {children:?}, not one host");
    };
    let status = std::fs::read_to_string(format!("/proc/{host}/status")).unwrap();
    let nspid = status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .unwrap_or_default();
    assert_eq!(
        nspid.split_whitespace().last(),
        Some("1"),
        "the host is not its PID namespace's init: {status}"
    );
    host
}

/// The built-in host is confined like any host, for root and for an unprivileged operator
/// (user and PID namespaces, docs/security.md).
#[test]
fn the_detector_host_runs_confined_and_its_detectors_can_be_disabled() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        let config = fake_cli(&p, "claude", "claude/rate_limit.txt", 1, 7200)
            .sandbox("require")
            .restart_delay_s(600);
        p.write_config(&config);
        let serve = p.spawn(&["serve"]);
        p.wait_for_event("transient_error_detected");
        let st = status_json(&p);
        let host = st["hosts"]
            .as_array()
            .and_then(|hosts| hosts.iter().find(|h| h["name"] == "builtin-detectors"))
            .unwrap_or_else(|| panic!("{operator:?}: no built-in host in {st}"))
            .clone();
        let pid = host["pid"]
            .as_u64()
            .unwrap_or_else(|| panic!("{operator:?}: {host}"));
        let pid = confined_process(operator, pid);
        let proc_status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        assert!(
            proc_status.contains("NoNewPrivs:\t1"),
            "{operator:?}: {proc_status}"
        );
        assert!(
            proc_status.contains("Seccomp:\t2"),
            "{operator:?}: {proc_status}"
        );
        // It is the supervisor's own executable, in host mode.
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        assert_eq!(
            exe.canonicalize().unwrap(),
            agent_runner_e2e::agent_runner_bin().canonicalize().unwrap(),
            "{operator:?}"
        );
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        assert!(String::from_utf8_lossy(&cmdline).contains("__builtin-detector-host"));
        serve.signal(libc::SIGTERM);
        serve.wait(Duration::from_secs(30)).assert_code(0);
    }

    // `[plugins] disable` turns one detector off by its name.
    let p = Project::new();
    let config = fake_cli(&p, "claude", "claude/rate_limit.txt", 1, 7200).sandbox("require");
    let text = config.render().replace(
        "[plugins]\n",
        "[plugins]\ndisable = [\"claude_error_detector\"]\n",
    );
    p.write_config_text(&text);
    p.run(&["round"]).assert_code(1);
    assert!(
        p.events_of("plugin_post_round_decision").is_empty(),
        "{}",
        p.events_text()
    );
    assert!(p.events_of("transient_error_detected").is_empty());
}

#[test]
fn a_usage_limit_backs_off_until_the_printed_reset_then_recovers() {
    let p = Project::new();
    // The reset is 3 s after the first run; every round before it fails at once.
    p.write_config(&fake_cli(
        &p,
        "claude",
        "claude/usage_limit-epoch.jsonl",
        1,
        3,
    ));
    let serve = p.spawn(&["serve", "--max-rounds", "2"]);
    let detected = p.wait_for_event("transient_error_detected");
    assert_eq!(detected["kind"], "usage_limit", "{detected}");
    assert_eq!(detected["action"], "back_off");
    let reset_at = detected["reset_at"]
        .as_str()
        .expect("a reset time")
        .to_owned();
    // While it waits, status says so.
    let st = wait_until("status to say backing off", Duration::from_secs(10), || {
        let st = status_json(&p);
        st["state"]
            .as_str()
            .is_some_and(|s| s.starts_with("backing off until "))
            .then_some(st)
    });
    assert!(
        st["state"].as_str().unwrap().ends_with("(usage_limit)"),
        "{st}"
    );
    let out = serve.wait(Duration::from_secs(60));
    out.assert_code(0);
    let kinds = p.event_kinds();
    for kind in [
        "plugin_post_round_decision",
        "transient_error_detected",
        "transient_error_recovered",
        "max_rounds_reached",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} missing: {kinds:?}");
    }
    assert!(!kinds.iter().any(|k| k == "crash_loop"), "{kinds:?}");
    // Round 2 started at the reset time, not a restart delay after round 1.
    let starts = p.events_of("round_start");
    assert_eq!(starts.len(), 2, "{}", p.events_text());
    let second = starts[1]["ts"].as_str().unwrap();
    assert!(
        second >= reset_at.as_str(),
        "round 2 at {second}, reset at {reset_at}"
    );
    let recovered = &p.events_of("transient_error_recovered")[0];
    assert_eq!(
        (recovered["round_num"].as_u64(), recovered["kind"].as_str()),
        (Some(2), Some("usage_limit"))
    );
    p.assert_events_whole();
}

/// Starts serve on a usage limit ten minutes away and waits until it is backing off.
fn backing_off(p: &Project, extra: &str) -> agent_runner_e2e::Running {
    let text = fake_cli(p, "claude", "claude/usage_limit-epoch.jsonl", 1, 600)
        .render()
        .replace(
            "restart_delay_s = 1\n",
            &format!("restart_delay_s = 1\n{extra}"),
        );
    p.write_config_text(&text);
    let serve = p.spawn(&["serve"]);
    p.wait_for_event("transient_error_detected");
    wait_until(
        "service.json to say backing_off",
        Duration::from_secs(10),
        || {
            std::fs::read_to_string(p.state_dir().join("service.json"))
                .ok()
                .filter(|t| t.contains("\"backing_off\""))
        },
    );
    serve
}

fn stopped_quickly(serve: agent_runner_e2e::Running, asked: Instant) -> Duration {
    let out = serve.wait(Duration::from_secs(30));
    out.assert_code(0);
    let took = asked.elapsed();
    // The back-off had ten minutes to go: anything near that means it was not interrupted.
    // (The ≤ 1 s target is measured by bench/stop_latency.sh.)
    assert!(took < Duration::from_secs(5), "stop took {took:?}");
    took
}

#[test]
fn a_stop_sigterm_or_the_stop_file_ends_a_back_off_at_once() {
    let p = Project::new();
    let serve = backing_off(&p, "");
    let peek = p.run(&["peek", "--json"]);
    let doc: Value = serde_json::from_str(&peek.stdout).unwrap();
    let state = doc["service"]["state"].as_str().unwrap_or_default();
    assert!(
        state.starts_with("backing off until ") && state.ends_with("(usage_limit)"),
        "{doc}"
    );
    assert_eq!(
        doc["service"]["rate_limit"]["limit_type"], "usage_limit",
        "{doc}"
    );
    assert_eq!(doc["service"]["rate_limit"]["agent"], "claude", "{doc}");
    let asked = Instant::now();
    serve.signal(libc::SIGTERM);
    stopped_quickly(serve, asked);

    let p = Project::new();
    let serve = backing_off(&p, "");
    let asked = Instant::now();
    p.run(&["stop"]).assert_code(0);
    stopped_quickly(serve, asked);
    assert_eq!(
        p.events_of("serve_stopping").len(),
        1,
        "{}",
        p.events_text()
    );

    let p = Project::new();
    let stop_file = p.tmp_dir().join("STOP");
    let serve = backing_off(
        &p,
        &format!(
            "stop_file = {}\n",
            agent_runner_e2e::toml_string(&stop_file.display().to_string())
        ),
    );
    let asked = Instant::now();
    std::fs::write(&stop_file, "").unwrap();
    stopped_quickly(serve, asked);
    assert_eq!(
        p.events_of("stop_file_detected").len(),
        1,
        "{}",
        p.events_text()
    );
}

#[test]
fn a_sighup_during_a_back_off_rereads_the_config_and_the_back_off_goes_on() {
    let p = Project::new();
    let serve = backing_off(&p, "");
    let st = status_json(&p);
    let builtin = st["hosts"]
        .as_array()
        .and_then(|hosts| hosts.iter().find(|h| h["name"] == "builtin-detectors"))
        .and_then(|h| h["pid"].as_u64())
        .unwrap_or_else(|| panic!("no running built-in host in {st}"));
    // Every detector off: the built-in host goes; the back-off (ten minutes) goes on.
    let text = std::fs::read_to_string(p.config_path()).unwrap().replace(
        "[plugins]\n",
        "[plugins]\ndisable = [\"builtin-detectors\"]\n",
    );
    std::fs::write(p.config_path(), text).unwrap();
    serve.signal(libc::SIGHUP);
    let reloaded = p.wait_for_event("config_reloaded");
    assert_eq!(reloaded["trigger"], "sighup", "{reloaded}");
    assert_eq!(
        reloaded["hosts_stopped"],
        serde_json::json!(["builtin-detectors"]),
        "{reloaded}"
    );
    assert_eq!(
        reloaded["hosts_restarted"],
        serde_json::json!([]),
        "{reloaded}"
    );
    wait_until("the built-in host to exit", Duration::from_secs(10), || {
        (!std::path::Path::new(&format!("/proc/{builtin}")).exists()).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
    let service = std::fs::read_to_string(p.state_dir().join("service.json")).unwrap();
    assert!(service.contains("\"backing_off\""), "{service}");
    let asked = Instant::now();
    p.run(&["stop"]).assert_code(0);
    stopped_quickly(serve, asked);
}

#[test]
fn a_login_failure_stops_serve_with_the_hint_and_exit_77() {
    let p = Project::new();
    let text = fake_cli(&p, "claude", "claude/auth-api-key.jsonl", 1, 7200).render()
        + "\n[monitor]\nauth_fail_hint = \"Log in again: run `claude /login` on this machine.\"\n";
    p.write_config_text(&text);
    let out = p.spawn(&["serve"]).wait(Duration::from_secs(60));
    out.assert_code(77);
    assert!(
        out.stderr
            .contains("Log in again: run `claude /login` on this machine."),
        "{out}"
    );
    let auth = &p.events_of("agent_auth_error_detected")[0];
    assert_eq!(auth["auto_stop"], true, "{auth}");
    assert_eq!(
        auth["hint"],
        "Log in again: run `claude /login` on this machine."
    );
    let stopping = &p.events_of("serve_stopping")[0];
    assert_eq!(stopping["reason"], "auth", "{stopping}");
    assert_eq!(p.events_of("round_start").len(), 1);

    // Without `oauth_fail` in auto_stop_on the failure is recorded and serve goes on.
    let p = Project::new();
    let text = fake_cli(&p, "claude", "claude/auth-api-key.jsonl", 1, 7200).render()
        + "\n[monitor]\nauto_stop_on = []\n";
    p.write_config_text(&text);
    let out = p.run(&["serve", "--max-rounds", "2"]);
    out.assert_code(0);
    assert_eq!(
        p.events_of("agent_auth_error_detected").len(),
        2,
        "{}",
        p.events_text()
    );
    assert_eq!(p.events_of("plugin_post_round_override_ignored").len(), 2);
}

/// `transient_error_action = "stop"`: the first diagnosed rate limit stops serve with exit
/// 75 (`serve_stopping` reason `transient_error`, and `agent_self_terminated` reason
/// `rate_limit` as the reference records it), after one round, without a back-off.
#[test]
fn the_stop_action_ends_serve_at_the_first_transient_failure() {
    let p = Project::new();
    let text = fake_cli(&p, "claude", "claude/rate_limit.txt", 1, 7200)
        .render()
        .replace(
            "restart_delay_s = 1\n",
            "restart_delay_s = 1\ntransient_error_action = \"stop\"\n",
        );
    assert!(text.contains("transient_error_action = \"stop\""), "{text}");
    p.write_config_text(&text);
    let out = p.spawn(&["serve"]).wait(Duration::from_secs(60));
    out.assert_code(75);
    assert!(
        out.stderr
            .contains("transient_error_action = \"stop\"; stopping"),
        "{out}"
    );
    let detected = &p.events_of("transient_error_detected")[0];
    assert_eq!(detected["kind"], "rate_limit", "{detected}");
    assert_eq!(detected["action"], "stop", "{detected}");
    let stopping = &p.events_of("serve_stopping")[0];
    assert_eq!(stopping["reason"], "transient_error", "{stopping}");
    // The reference system's record of the same stop.
    let ended = p.events_of("agent_self_terminated");
    assert_eq!(ended.len(), 1, "{}", p.events_text());
    assert_eq!(ended[0]["reason"], "rate_limit", "{}", ended[0]);
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
    p.assert_events_whole();
}

#[test]
fn a_custom_auth_pattern_is_matched_inside_the_host() {
    let p = Project::new();
    let fixture = p.tmp_dir().join("sso.txt");
    std::fs::write(&fixture, "error: corporate SSO session revoked\n").unwrap();
    // An absolute fixture path replaces the fixtures dir in the join.
    let text = fake_cli(&p, "claude", &fixture.display().to_string(), 1, 7200).render()
        + "\n[monitor]\nauth_fail_patterns = [\"(?i)sso session revoked\"]\n";
    p.write_config_text(&text);
    p.run(&["round"]).assert_code(77);
    assert_eq!(
        p.events_of("agent_auth_error_detected").len(),
        1,
        "{}",
        p.events_text()
    );
}

#[test]
fn a_bad_auth_pattern_is_a_config_error() {
    let p = Project::new();
    let text = fake_cli(&p, "claude", "claude/rate_limit.txt", 1, 7200).render()
        + "\n[monitor]\nauth_fail_patterns = [\"(unclosed\"]\n";
    p.write_config_text(&text);
    let out = p.run(&["round"]);
    out.assert_code(78);
    assert!(
        out.stderr.contains("monitor.auth_fail_patterns[0]"),
        "{out}"
    );
}

/// Scaffolds (`plugin new --lang python --family post_round`) and builds a Python host
/// `name` whose one hook `name` imports `helper` and runs `body` (indented by four spaces,
/// `params` in scope); returns its zipapp.
fn python_post_round_host(p: &Project, name: &str, helper: &str, body: &str) -> PathBuf {
    let out = p.run(&[
        "plugin",
        "new",
        "--lang",
        "python",
        "--family",
        "post_round",
        "--dir",
        p.tmp_dir().to_str().unwrap(),
        name,
    ]);
    out.assert_code(0);
    let root = p.tmp_dir().join(name);
    std::fs::write(
        root.join("src/__main__.py"),
        format!(
            "import sys\nfrom agent_runner_host import Host, {helper}\n\
             host = Host(\"{name}\", \"0.1.0\")\n\n\
             @host.post_round(\"{name}\")\ndef hook(params):\n    {body}\n\n\
             sys.exit(host.run())\n"
        ),
    )
    .unwrap();
    let build = std::process::Command::new("bash")
        .arg(root.join("build.sh"))
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );
    root.join(format!("{name}.pyz"))
}

/// The one `[monitor] auto_stop_on` rule, for a third-party host: its login stop is
/// recorded and not honoured under the default list (which covers the built-in detectors
/// only); once the operator writes `auto_stop_on` naming `oauth_fail`, the same stop ends
/// the round with 77.
#[test]
fn a_hosts_login_stop_needs_an_auto_stop_on_the_operator_wrote() {
    let p = Project::new();
    let pyz = python_post_round_host(
        &p,
        "gatekeeper",
        "stop",
        "return stop(\"auth\", message=\"token expired\")",
    );
    let config = ConfigBuilder::new(std::path::Path::new("/bin/true"))
        .sandbox("require")
        .host(agent_runner_e2e::HostSpec::new("gatekeeper", &pyz).provides(&["post_round"]));
    p.write_config(&config);
    p.run(&["round"]).assert_code(0);
    let ignored = p.events_of("plugin_post_round_override_ignored");
    assert_eq!(ignored.len(), 1, "{}", p.events_text());
    assert_eq!(ignored[0]["hook"], "gatekeeper", "{}", ignored[0]);
    let auth = p.events_of("agent_auth_error_detected");
    assert_eq!(auth[0]["auto_stop"], false, "{}", auth[0]);

    p.write_config_text(&(config.render() + "\n[monitor]\nauto_stop_on = [\"oauth_fail\"]\n"));
    let out = p.run(&["round"]);
    out.assert_code(77);
    assert!(out.stderr.contains("token expired"), "{out}");
    assert_eq!(p.events_of("plugin_post_round_override_ignored").len(), 1);
    assert_eq!(
        p.events_of("agent_auth_error_detected")[1]["auto_stop"],
        true
    );
}

/// A third-party post-round host written with the Python SDK (scaffolded by `plugin new`,
/// confined and pinned like any host) diagnoses an agent that fails silently at once, round
/// after round: with `transient_error_action = "skip"` serve keeps going, because diagnosed
/// failures do not count toward the crash-loop breaker (which stops the same agent after 5
/// rounds without a diagnosis).
#[test]
fn a_python_post_round_host_diagnoses_failures_and_the_breaker_counts_them() {
    let p = Project::new();
    let pyz = python_post_round_host(
        &p,
        "judge",
        "back_off",
        "if params[\"outcome\"][\"exit_code\"] != 0:\n        \
             return back_off(\"network\", back_off_s=1, message=\"the agent cannot reach its API\")\n    \
         return None",
    );
    let agent = p.tmp_dir().join("silent-fail.sh");
    std::fs::write(&agent, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = ConfigBuilder::new(&agent)
        .sandbox("require")
        .host(agent_runner_e2e::HostSpec::new("judge", &pyz).provides(&["post_round"]));
    let text = config.render().replace(
        "restart_delay_s = 1\n",
        "restart_delay_s = 1\ntransient_error_action = \"skip\"\n",
    );
    p.write_config_text(&text);
    // Diagnosed, skipped, and counted: five failed rounds in a row stop serve.
    let out = p.run(&["serve", "--max-rounds", "7"]);
    out.assert_code(75);
    let detected = p.events_of("transient_error_detected");
    assert_eq!(detected.len(), 5, "{}", p.events_text());
    assert!(detected
        .iter()
        .all(|e| e["hook"] == "judge" && e["action"] == "skip" && e["kind"] == "network"));
    assert_eq!(p.events_of("agent_network_blip").len(), 5);
    let crash = p.events_of("crash_loop");
    assert_eq!(crash.len(), 1, "{}", p.events_text());
    let reason = crash[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("round 5: exit 1 after ") && reason.contains("diagnosed"),
        "{reason}"
    );

    // The same agent without the host: the breaker stops serve after 5 rounds too.
    let p = Project::new();
    p.write_config(&ConfigBuilder::new(&agent));
    p.run(&["serve", "--max-rounds", "7"]).assert_code(75);
    assert_eq!(p.events_of("crash_loop").len(), 1);
}

/// `peek --json` reads back what a real `serve` recorded and is configured with: the
/// diagnosed network failure as one of `recent_blips` (the `agent_network_blip` event), and
/// `schedule` from the resolved `[schedule]` (docs/operations.md "peek --json"): open now,
/// until the pause window two hours ahead; then, with a pause window around the clock,
/// paused in it with no time to resume within eight days.
#[test]
fn peek_lists_the_network_blip_and_the_schedule_of_a_real_serve() {
    let p = Project::new();
    let hour = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / 3600;
    let pause_from = (hour + 2) % 24;
    let utc = |epoch_s: u64| {
        let out = std::process::Command::new("date")
            .args(["-u", "-d", &format!("@{epoch_s}"), "+%Y-%m-%dT%H:%M:%SZ"])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let window = format!("{pause_from:02}:00-{:02}:00", pause_from + 1);
    let config = fake_cli(&p, "claude", "claude/network.txt", 1, 7200)
        .render()
        .replace(
            "restart_delay_s = 1\n",
            "restart_delay_s = 1\ntransient_error_action = \"stop\"\n",
        );
    let schedule = |pause: &str| {
        format!("{config}\n[schedule]\ntimezone = \"UTC\"\npause_windows = [\"{pause}\"]\n")
    };
    p.write_config_text(&schedule(&window));
    p.spawn(&["serve"])
        .wait(Duration::from_secs(60))
        .assert_code(75);
    assert_eq!(
        p.events_of("agent_network_blip").len(),
        1,
        "{}",
        p.events_text()
    );

    let peek = || -> Value {
        let out = p.run(&["peek", "--json"]);
        out.assert_code(0);
        serde_json::from_str(&out.stdout).unwrap()
    };
    let doc = peek();
    let blips = doc["recent_blips"].as_array().unwrap();
    assert_eq!(blips.len(), 1, "{doc:#}");
    assert_eq!(blips[0]["event"], "agent_network_blip");
    assert_eq!(blips[0]["round_num"], 1);
    assert_eq!(blips[0]["hook"], "claude_error_detector");
    assert!(blips[0]["ts"].is_string(), "{doc:#}");

    let s = &doc["schedule"];
    assert_eq!(s["paused"], false, "{s:#}");
    assert_eq!(
        (s["resume_at"].as_str(), s["active_window"].as_str()),
        (Some(""), Some(""))
    );
    assert_eq!(s["phase"], "");
    assert_eq!(s["timezone"], "UTC");
    assert_eq!(s["pause_windows"], serde_json::json!([window]));
    assert_eq!(s["next_end"], utc((hour + 2) * 3600), "{s:#}");

    p.write_config_text(&schedule("00:00-24:00"));
    let s = peek()["schedule"].clone();
    assert_eq!(s["paused"], true, "{s:#}");
    assert_eq!(s["active_window"], "00:00-24:00");
    assert_eq!(s["resume_at"], "", "never opens within eight days: {s:#}");
    assert!(
        s["next_start"].is_null() && s["next_end"].is_null(),
        "{s:#}"
    );
}
