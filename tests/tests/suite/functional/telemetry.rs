//! One OpenTelemetry trace per round (docs/operations.md, "Traces"), checked at a real
//! OTLP/HTTP receiver on 127.0.0.1 that decodes with OpenTelemetry's own protobuf
//! definitions (`tests/fixtures/otlp_receiver.py`, PyPI's opentelemetry-proto installed by
//! tests/setup.d/45-otlp-receiver.sh): each round an `invoke_agent` span with the GenAI
//! attributes, its hook calls and goal checks as children, a failed round's status; the
//! agent's `TRACEPARENT` is its round's span. A collector that refuses connections, or
//! takes them and never answers, slows no round (event timestamps against a run without
//! telemetry) and is recorded once.

use agent_runner_e2e::{wait_until, workspace_root, ConfigBuilder, Project};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

/// A running receiver: its port and the file its spans land in.
struct Receiver {
    child: Child,
    port: u16,
    spans: PathBuf,
}

impl Receiver {
    fn start(dir: &Path) -> Receiver {
        let python = workspace_root().join("target/otlp-receiver/bin/python");
        assert!(
            python.exists(),
            "{} missing: run tests/setup.sh (tests/setup.d/45-otlp-receiver.sh)",
            python.display()
        );
        let port_file = dir.join("otlp.port");
        let spans = dir.join("spans.jsonl");
        let child = Command::new(python)
            .arg(workspace_root().join("tests/fixtures/otlp_receiver.py"))
            .arg(&port_file)
            .arg(&spans)
            .spawn()
            .expect("start the OTLP receiver");
        let port = wait_until("the receiver listens", Duration::from_secs(20), || {
            std::fs::read_to_string(&port_file)
                .ok()?
                .trim()
                .parse()
                .ok()
        });
        Receiver { child, port, spans }
    }

    fn spans(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.spans)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a whole JSON line"))
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `claude` script printing claude's stream records, its round's usage (1000 input
/// tokens, 200 read from the cache, 100 output) and, on its `$FAIL_AT`-th run, exit 1. It
/// writes the `TRACEPARENT` and `OTEL_RESOURCE_ATTRIBUTES` it got to `$SEEN/<run>`.
fn fake_claude(p: &Project) -> PathBuf {
    let dir = p.tmp_dir().join("bin");
    std::fs::create_dir_all(dir.join("seen")).unwrap();
    let path = dir.join("claude");
    std::fs::write(
        &path,
        "#!/bin/sh\n\
         n=$(ls \"$SEEN\" | wc -l); n=$((n + 1))\n\
         printf '%s\\n%s\\n' \"$TRACEPARENT\" \"$OTEL_RESOURCE_ATTRIBUTES\" > \"$SEEN/$n\"\n\
         echo '{\"type\":\"system\",\"subtype\":\"init\"}'\n\
         echo '{\"type\":\"assistant\",\"message\":{\"model\":\"claude-opus-4-5\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}'\n\
         echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"total_cost_usd\":0.01,\"usage\":{\"input_tokens\":1000,\"output_tokens\":100,\"cache_read_input_tokens\":200,\"cache_creation_input_tokens\":0}}'\n\
         [ \"$n\" = \"${FAIL_AT:-0}\" ] && exit 1\n\
         exit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The config: the fake claude run with `--model opus-test`, a goal check that never
/// passes (so serve runs on), `extra` appended.
fn config(p: &Project, fail_at: u32, extra: &str) -> String {
    let agent = fake_claude(p);
    ConfigBuilder::new(&agent)
        .agent_env("SEEN", &p.tmp_dir().join("bin/seen").display().to_string())
        .agent_env("FAIL_AT", &fail_at.to_string())
        .extra("[goal]\nledger = \"./logs/lessons.md\"\n[[goal.checks]]\nname = \"tests\"\ncmd = [\"sh\", \"-c\", \"exit 1\"]\n")
        .extra(extra)
        .render()
        .replace(
            "file = \"./prompts/main.md\"",
            "files = [\"./prompts/main.md\", \"./logs/lessons.md\"]",
        )
        .replace(
            &format!("command = [\"{}\"]", agent.display()),
            &format!(
                "command = [\"{}\", \"--model\", \"opus-test\"]",
                agent.display()
            ),
        )
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// What the agent of run `n` saw: its `TRACEPARENT` and `OTEL_RESOURCE_ATTRIBUTES`.
fn seen(p: &Project, n: u32) -> (String, String) {
    let text = std::fs::read_to_string(p.tmp_dir().join(format!("bin/seen/{n}"))).unwrap();
    let mut lines = text.lines();
    (
        lines.next().unwrap_or("").to_owned(),
        lines.next().unwrap_or("").to_owned(),
    )
}

#[test]
fn each_round_is_an_invoke_agent_span_with_its_hook_calls_checks_and_outcome() {
    let p = Project::new();
    let receiver = Receiver::start(p.tmp_dir());
    p.write_config_text(&config(
        &p,
        3,
        &format!(
            "[telemetry]\notlp_endpoint = \"http://127.0.0.1:{}\"\n",
            receiver.port
        ),
    ));
    // The environment names another collector: the key wins.
    let out = p.run_env(
        &["serve", "--max-rounds", "3"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")],
    );
    assert_eq!(out.code(), 0, "{}\n{}", out.stderr, p.events_text());
    // The exit flush sent them: no wait needed.
    let spans = receiver.spans();
    assert!(
        spans.iter().all(|s| s.get("error").is_none()),
        "undecodable export: {spans:?}"
    );
    let mut rounds: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "invoke_agent demo-agent")
        .collect();
    rounds.sort_by_key(|s| attr(s, "agent_runner.round_num").as_i64());
    assert_eq!(rounds.len(), 3, "{spans:#?}");
    let project = p.dir().file_name().unwrap().to_str().unwrap().to_owned();
    for (i, round) in rounds.iter().enumerate() {
        let n = i as u32 + 1;
        assert_eq!(attr(round, "agent_runner.round_num"), i as i64 + 1);
        assert_eq!(attr(round, "gen_ai.operation.name"), "invoke_agent");
        assert_eq!(attr(round, "gen_ai.agent.name"), "demo-agent");
        assert_eq!(attr(round, "gen_ai.provider.name"), "anthropic");
        assert_eq!(attr(round, "gen_ai.request.model"), "opus-test");
        assert_eq!(attr(round, "gen_ai.response.model"), "claude-opus-4-5");
        // 1000 not cached + 200 read from the cache.
        assert_eq!(attr(round, "gen_ai.usage.input_tokens"), 1200, "{round}");
        assert_eq!(attr(round, "gen_ai.usage.output_tokens"), 100);
        assert_eq!(attr(round, "gen_ai.usage.cache_read.input_tokens"), 200);
        assert_eq!(round["parent_span_id"], "", "a round is its trace's root");
        assert_eq!(round["resource"]["service.name"], "agent-runner");
        assert_eq!(round["resource"]["agent_runner.project"], project.as_str());
        // The first round starts its session; later ones resume it.
        if n == 1 {
            assert!(attr(round, "gen_ai.conversation.id").is_null(), "{round}");
        } else {
            let resumed = p.events_of("session_resumed");
            assert_eq!(
                attr(round, "gen_ai.conversation.id"),
                &resumed[0]["session_id"]
            );
        }
        // The agent saw its round's span as its parent.
        let (traceparent, resource) = seen(&p, n);
        assert_eq!(
            traceparent,
            format!(
                "00-{}-{}-01",
                round["trace_id"].as_str().unwrap(),
                round["span_id"].as_str().unwrap()
            )
        );
        assert!(
            resource.ends_with(&format!("agent_runner.round_num={n}")),
            "{resource}"
        );
        // Its children: the built-in detector's after_round call and the goal check.
        let children: Vec<&Value> = spans
            .iter()
            .filter(|s| s["parent_span_id"] == round["span_id"])
            .collect();
        let names: Vec<&str> = children
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"post_round/after_round claude_error_detector"),
            "{names:?}"
        );
        assert!(names.contains(&"goal_check tests"), "{names:?}");
        for child in &children {
            assert_eq!(child["trace_id"], round["trace_id"]);
            assert!(
                child["start_ns"].as_u64() >= round["start_ns"].as_u64(),
                "{child}"
            );
            assert!(
                child["end_ns"].as_u64() <= round["end_ns"].as_u64(),
                "{child}"
            );
        }
        let hook = children
            .iter()
            .find(|c| c["name"] == "post_round/after_round claude_error_detector")
            .unwrap();
        assert_eq!(attr(hook, "agent_runner.host"), "builtin-detectors");
        // Status: OK = 1, ERROR = 2.
        if n == 3 {
            assert_eq!(round["status"]["code"], 2, "{round}");
            assert_eq!(round["status"]["message"], "the agent exited 1");
            assert_eq!(attr(round, "agent_runner.exit_code"), 1);
        } else {
            assert_eq!(round["status"]["code"], 1, "{round}");
        }
    }
    // Three traces, one per round.
    let mut traces: Vec<&str> = rounds
        .iter()
        .map(|r| r["trace_id"].as_str().unwrap())
        .collect();
    traces.dedup();
    assert_eq!(traces.len(), 3);
    assert!(
        p.events_of("telemetry_export_failed").is_empty(),
        "{}",
        p.events_text()
    );
}

/// An attempt that starts no agent is a trace too: while the pause file is there the
/// spawn hook `pause_file` defers the round, and each deferred attempt is a
/// `round_attempt` span (no `invoke_agent`: nothing was invoked) saying `deferred`, the
/// hook and its reason, its spawn hook call as its child; once the file is gone round 1
/// runs and is the `invoke_agent` span as ever.
#[test]
fn an_attempt_that_starts_no_agent_is_a_round_attempt_span_saying_why() {
    use agent_runner_e2e::{pause_host_bin, HostSpec};
    let p = Project::new();
    let receiver = Receiver::start(p.tmp_dir());
    let agent = fake_claude(&p);
    let pause = p.dir().join(".agent-runner-pause");
    std::fs::write(&pause, "").unwrap();
    p.write_config(
        &ConfigBuilder::new(&agent)
            .agent_env("SEEN", &p.tmp_dir().join("bin/seen").display().to_string())
            .spawn_override_allow(&["pause_file"])
            .host(
                HostSpec::new("pause", pause_host_bin()).config(serde_json::json!({"defer_s": 1})),
            )
            .extra(&format!(
                "[telemetry]\notlp_endpoint = \"http://127.0.0.1:{}\"\n",
                receiver.port
            )),
    );
    let serve = p.spawn(&["serve", "--max-rounds", "1"]);
    wait_until("two deferred attempts", Duration::from_secs(60), || {
        (p.events_of("plugin_spawn_decision").len() >= 2).then_some(())
    });
    std::fs::remove_file(&pause).unwrap();
    let out = serve.wait(Duration::from_secs(60));
    assert_eq!(out.code(), 0, "{out}\n{}", p.events_text());
    let spans = receiver.spans();
    let attempts: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "round_attempt")
        .collect();
    assert!(attempts.len() >= 2, "{spans:#?}");
    for attempt in &attempts {
        assert_eq!(
            attr(attempt, "agent_runner.attempt.outcome"),
            "deferred",
            "{attempt}"
        );
        assert_eq!(
            attr(attempt, "agent_runner.hook"),
            "pause_file",
            "{attempt}"
        );
        assert_eq!(attr(attempt, "agent_runner.round_num"), 1, "{attempt}");
        let reason = attr(attempt, "agent_runner.attempt.reason")
            .as_str()
            .unwrap();
        assert!(reason.contains("paused: pause file present"), "{reason}");
        assert_eq!(attempt["parent_span_id"], "", "its own trace");
        // Status unset (0): deferring is not a failure.
        assert_eq!(attempt["status"]["code"], 0, "{attempt}");
        let children: Vec<&str> = spans
            .iter()
            .filter(|s| s["parent_span_id"] == attempt["span_id"])
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert!(
            children.iter().any(|c| c.ends_with(" pause_file")),
            "{children:?}"
        );
    }
    let rounds: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "invoke_agent demo-agent")
        .collect();
    assert_eq!(rounds.len(), 1, "{spans:#?}");
    assert_eq!(attr(rounds[0], "agent_runner.round_num"), 1);
}

/// Seconds from the first `round_start` to the last `round_end` of the record.
fn rounds_span_s(p: &Project) -> f64 {
    let ts = |e: &Value| {
        humantime::parse_rfc3339(e["ts"].as_str().unwrap())
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let starts = p.events_of("round_start");
    let ends = p.events_of("round_end");
    ts(ends.last().unwrap()) - ts(&starts[0])
}

/// `serve --max-rounds N` with `env`; its rounds' span (s) and the whole run's wall time.
fn timed_serve(p: &Project, rounds: u32, env: &[(&str, &str)]) -> (f64, Duration) {
    let started = std::time::Instant::now();
    let out = p.run_env(&["serve", "--max-rounds", &rounds.to_string()], env);
    let wall = started.elapsed();
    assert_eq!(out.code(), 0, "{}\n{}", out.stderr, p.events_text());
    (rounds_span_s(p), wall)
}

#[test]
fn a_collector_that_is_down_slows_no_round_and_is_recorded_once() {
    const ROUNDS: u32 = 4;
    // Without telemetry: what rounds take here and now.
    let base = Project::new();
    base.write_config_text(&config(&base, 0, ""));
    let (base_s, _) = timed_serve(&base, ROUNDS, &[]);

    // A refused port (bound, then closed), named by the standard variable.
    let refused_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let refused = Project::new();
    refused.write_config_text(&config(&refused, 0, ""));
    let url = format!("http://127.0.0.1:{refused_port}");
    let (refused_s, _) = timed_serve(
        &refused,
        ROUNDS,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str())],
    );
    let failed = refused.events_of("telemetry_export_failed");
    assert_eq!(failed.len(), 1, "{}", refused.events_text());
    assert_eq!(
        failed[0]["endpoint"],
        format!("http://127.0.0.1:{refused_port}/v1/traces")
    );
    assert_eq!(
        failed[0]["source"],
        "the environment's OTEL_EXPORTER_OTLP_ENDPOINT"
    );
    assert!(refused.events_of("telemetry_export_recovered").is_empty());

    // A collector that takes the connection and never answers: each export waits out its
    // timeout on the exporter's thread, never in the round.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hung = Project::new();
    hung.write_config_text(&config(
        &hung,
        0,
        &format!(
            "[telemetry]\notlp_endpoint = \"http://127.0.0.1:{}\"\n",
            silent.local_addr().unwrap().port()
        ),
    ));
    let (hung_s, hung_wall) = timed_serve(&hung, ROUNDS, &[]);
    assert_eq!(
        hung.events_of("telemetry_export_failed").len(),
        1,
        "{}",
        hung.events_text()
    );
    drop(silent);
    eprintln!(
        "rounds of {ROUNDS}: {base_s:.2} s without telemetry, {refused_s:.2} s to a refused port, {hung_s:.2} s to a silent collector (serve's wall time {:.2} s, its exit flush bounded at 3 s)",
        hung_wall.as_secs_f64()
    );
    // Not a speed test: the runs' own spread, plus one export timeout (3 s) the rounds
    // would have waited had an export been in their way (each is 3 s against the silent one).
    for (what, s) in [("refused", refused_s), ("silent", hung_s)] {
        assert!(
            s < base_s * 1.5 + 2.0,
            "{what}: {s:.2} s against {base_s:.2} s without telemetry"
        );
    }
}

/// The exporter's cost per round against a working receiver, next to the same rounds
/// without it (printed for docs/operations.md "Traces"; bounded loosely, as above).
#[test]
fn the_exporters_cost_per_round() {
    const ROUNDS: u32 = 8;
    let base = Project::new();
    base.write_config_text(&config(&base, 0, ""));
    let (base_s, _) = timed_serve(&base, ROUNDS, &[]);
    let traced = Project::new();
    let receiver = Receiver::start(traced.tmp_dir());
    traced.write_config_text(&config(
        &traced,
        0,
        &format!(
            "[telemetry]\notlp_endpoint = \"http://127.0.0.1:{}\"\n",
            receiver.port
        ),
    ));
    let (traced_s, wall) = timed_serve(&traced, ROUNDS, &[]);
    let rounds = receiver
        .spans()
        .iter()
        .filter(|s| s["name"] == "invoke_agent demo-agent")
        .count();
    assert_eq!(rounds, ROUNDS as usize);
    let per_round_ms = (traced_s - base_s) * 1000.0 / f64::from(ROUNDS);
    eprintln!(
        "{ROUNDS} rounds: {base_s:.3} s without telemetry, {traced_s:.3} s with ({per_round_ms:+.1} ms a round; serve's wall time {:.2} s)",
        wall.as_secs_f64()
    );
    assert!(traced_s < base_s * 1.5 + 2.0, "{traced_s} against {base_s}");
}

#[test]
fn doctor_names_the_collector_and_the_agents_refused_export() {
    let p = Project::new();
    p.write_config_text(&config(
        &p,
        0,
        "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n",
    ));
    let out = p.run(&["--json", "doctor"]);
    let doc: Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    let told = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "telemetry")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert!(
        told["reason"]
            .as_str()
            .unwrap()
            .contains("http://127.0.0.1:4318/v1/traces"),
        "{told}"
    );
    // The agent's sandbox ("prefer": Landlock's connect rule where the kernel has it)
    // refuses 4318 unless connect_ports opens it; with it open, no warning.
    let warned = |doc: &Value| {
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["name"] == "telemetry")
    };
    let connect_rule = doc["agent_sandbox"]["achieved_tier"]
        .as_str()
        .is_some_and(|t| t.contains("landlock"))
        && doc["sandbox"]["landlock_abi"]
            .as_u64()
            .is_some_and(|abi| abi >= 4);
    if connect_rule {
        assert!(warned(&doc), "{doc:#}");
    }
    p.write_config_text(
        &config(
            &p,
            0,
            "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n",
        )
        .replace(
            "[plugins]\n",
            "[agent.sandbox]\nconnect_ports = [4318]\n\n[plugins]\n",
        ),
    );
    let out = p.run(&["--json", "doctor"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(!warned(&doc), "{doc:#}");
}
