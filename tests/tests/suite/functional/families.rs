//! Every hook family in one real `serve` run under `sandbox = "require"`, with one host per
//! family in two languages (docs/protocol.md §5): the Python `test-report` host (pre-round
//! gate on a JUnit report, serve-startup report check, recent-work context enricher), the
//! Rust `no-commit-detector`, and the Rust spawn-hook and dirty-handler examples. It shows
//! the three first producers' effect on real rounds (docs/hosts/), the order of the
//! families, their confinement, their events and `peek --json` under the reference
//! system's key names.

use agent_runner_e2e::serde_json::{json, Value};
use agent_runner_e2e::{
    dirty_commit_host_bin, no_commit_detector_bin, pause_host_bin, test_report_host, ConfigBuilder,
    HostSpec, Project,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A JUnit XML report with `failing` failed cases out of `total`.
fn junit(total: usize, failing: usize) -> String {
    let mut cases = String::new();
    for i in 0..total {
        if i < failing {
            cases.push_str(&format!(
                "<testcase classname=\"calc\" name=\"test_{i}\"><failure message=\"boom\"/></testcase>"
            ));
        } else {
            cases.push_str(&format!("<testcase classname=\"calc\" name=\"test_{i}\"/>"));
        }
    }
    format!(
        "<?xml version=\"1.0\"?><testsuite name=\"calc\" tests=\"{total}\">{cases}</testsuite>\n"
    )
}

/// An agent that records the prompt it got (the round context comes first in it) under
/// the log dir and changes the tree only in round 1.
fn recording_agent(p: &Project) -> PathBuf {
    let agent = p.tmp_dir().join("recording-agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\nset -e\nprintf '%s' \"$1\" > \"$AGENT_RUNNER_LOG_DIR/prompt-R$AGENT_RUNNER_ROUND_NUM.txt\"\n\
         if [ \"$AGENT_RUNNER_ROUND_NUM\" = 1 ]; then echo work > work.txt; fi\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("755")
        .arg(&agent)
        .status()
        .unwrap();
    agent
}

/// The config of the run: every family, `junit_gate` allowed to skip, the detector
/// configured through a reference-style `[plugins.<name>]` table and named in
/// `[monitor] auto_stop_on`.
fn all_families(agent: &Path, pyz: &Path) -> ConfigBuilder {
    ConfigBuilder::new(agent)
        .sandbox("require")
        .spawn_override_allow(&["junit_gate", "pause_file"])
        .host(
            HostSpec::new("tests", pyz)
                .provides(&["pre_round", "context_enricher", "serve_startup"])
                .config(json!({"report": "reports/junit.xml", "max_failures": 1, "commits": 3})),
        )
        .host(HostSpec::new("stall", no_commit_detector_bin()).provides(&["detector"]))
        .host(HostSpec::new("pause", pause_host_bin()).config(json!({"defer_s": 1})))
        .host(
            HostSpec::new("wip", dirty_commit_host_bin())
                .provides(&["dirty_handler"])
                .config(json!({"prefix": "wip: "})),
        )
        .extra("[plugins.stall]\nrounds = 2\nstop_service = true\n\n[monitor]\nauto_stop_on = [\"no_commit\"]")
        .restart_delay_s(1)
        .round_budget_s(30)
}

#[test]
fn one_serve_run_calls_every_family_and_the_producers_act_on_real_rounds() {
    let p = Project::new();
    let pyz = test_report_host(p.tmp_dir());
    let agent = recording_agent(&p);
    p.write_config(&all_families(&agent, &pyz));
    // Two failing tests, one allowed: the gate skips until the report improves.
    p.write("reports/junit.xml", &junit(3, 2));

    let serve = p.spawn(&["serve", "--max-rounds", "6"]);
    let skipped = p.wait_for_event("round_skipped");
    assert_eq!(skipped["hook"], "junit_gate");
    let reason = skipped["reason"].as_str().unwrap();
    assert!(
        reason.contains("2 of 3 tests failing in reports/junit.xml (allowed: 1)")
            && reason.contains("calc.test_0"),
        "{reason}"
    );
    assert!(
        p.events_of("round_start").is_empty(),
        "a round started while the gate skipped:\n{}",
        p.events_text()
    );
    p.write("reports/junit.xml", &junit(3, 1));

    // Round 1 changes the tree (wip commits it), rounds 2 and 3 make no commit: the
    // detector (K = 2) asks to stop after round 3 and auto_stop_on honours it.
    let out = serve.wait(Duration::from_secs(120));
    out.assert_code(75);
    let all = p.events_text();
    let starts = p.events_of("round_start");
    assert_eq!(starts.len(), 3, "{all}");
    assert_eq!(
        starts[0]["round_num"], 1,
        "skips do not advance the round number"
    );

    // serve_startup ran once, before anything else, and passed.
    assert!(p.events_of("serve_startup_hook_failed").is_empty(), "{all}");
    assert!(p.events_of("hook_failed").is_empty(), "{all}");

    // The gate's own event kind, namespaced by the host.
    let failing = p.events_of("tests.tests_failing");
    assert!(!failing.is_empty(), "{all}");
    assert_eq!(failing[0]["failing"], 2);
    assert_eq!(failing[0]["host"], "tests");
    assert_eq!(failing[0]["hook"], "junit_gate");

    // The enricher's object reaches the agent framed as data from its host, in a block of
    // its own after the round context (issue 38: not unmarked among the supervisor's own
    // fields); round-context.json keeps it beside them, as the reference system does.
    let prompt =
        std::fs::read_to_string(p.log_dir().join("prompt-R2.txt")).expect("round 2 prompt");
    let (own, rest) = prompt
        .strip_prefix("```json round-context\n")
        .and_then(|rest| rest.split_once("\n```\n"))
        .unwrap_or_else(|| panic!("no round-context block:\n{prompt}"));
    let own: Value = agent_runner_e2e::serde_json::from_str(own).unwrap();
    assert_eq!(own["round_num"], 2, "{prompt}");
    assert!(own.get("recent_work").is_none(), "{prompt}");
    assert!(
        rest.contains("data from the context enricher `recent_work` of the plugin host `tests`"),
        "{prompt}"
    );
    let block = rest
        .split_once("```json enrichment recent_work\n")
        .and_then(|(_, b)| b.split_once("\n```"))
        .map(|(json, _)| json)
        .unwrap_or_else(|| panic!("no enrichment block:\n{prompt}"));
    let work: Value = agent_runner_e2e::serde_json::from_str(block).unwrap();
    let ctx = agent_runner_e2e::serde_json::json!({ "recent_work": work });
    let work = &ctx["recent_work"];
    assert_eq!(work["failing_tests"], json!(["calc.test_0"]), "{ctx:#}");
    assert_eq!(work["tests_total"], 3, "{ctx:#}");
    let commits = work["recent_commits"].as_array().unwrap();
    assert!(
        commits[0].as_str().unwrap().starts_with("wip: "),
        "round 1's commit is the newest subject: {ctx:#}"
    );

    // The detector: baseline at round 1, alert after rounds 2 and 3 without a commit.
    let alerts = p.events_of("detector_alert");
    assert_eq!(alerts.len(), 1, "{all}");
    assert_eq!(alerts[0]["hook"], "no_commit");
    assert_eq!(alerts[0]["round_num"], 3);
    assert_eq!(alerts[0]["severity"], "warning");
    assert_eq!(alerts[0]["auto_stop"], true);
    assert!(alerts[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("no commit for 2 rounds"));
    assert_eq!(p.events_of("stall.stalled").len(), 1, "{all}");
    let stopping = p.events_of("serve_stopping");
    assert_eq!(stopping[0]["reason"], "auto_stop", "{all}");
    assert_eq!(stopping[0]["hook"], "no_commit", "{all}");

    // The spawn hook and the dirty handler took part: wip committed round 1's work.
    assert_eq!(p.events_of("dirty_auto_committed")[0]["hook"], "wip_commit");

    // The report is the host's owned path: never committed, never stashed, still there.
    let tracked = p.git(&["log", "--all", "--name-only", "--format="]);
    assert!(!tracked.contains("reports/junit.xml"), "{tracked}");
    assert!(p.stash_shas().is_empty(), "nothing was stashed");
    assert!(p.dir().join("reports/junit.xml").is_file());
    assert!(!p
        .events_of("dirty_detected")
        .iter()
        .any(|e| e["files"].to_string().contains("reports/")));

    // peek --json: every family under the reference system's key names, confined.
    let out = p.run(&["peek", "--json"]);
    out.assert_code(0);
    let doc: Value = agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    let plugins = &doc["plugins"];
    assert_eq!(doc["schema_version"], "2.6");
    assert_eq!(
        plugins["pre_round_hooks"],
        json!(["junit_gate"]),
        "{plugins:#}"
    );
    assert_eq!(plugins["context_enrichers"], json!(["recent_work"]));
    assert_eq!(
        plugins["serve_startup_hooks"],
        json!(["junit_report_check"])
    );
    assert_eq!(plugins["detectors"], json!(["no_commit"]));
    assert_eq!(plugins["spawn_hooks"], json!(["pause_file"]));
    assert_eq!(plugins["dirty_handlers"], json!(["wip_commit"]));
    assert_eq!(
        plugins["event_kinds"],
        json!(["stall.stalled", "tests.tests_failing"])
    );
    assert_eq!(plugins["owned_paths"], json!(["reports/junit.xml"]));
    assert_eq!(plugins["sandbox"]["achieved_tier"], "landlock+seccomp");
    assert_eq!(
        plugins["sandbox"]["covers"],
        json!([
            "context_enrichers",
            "detectors",
            "dirty_handlers",
            "pre_round_hooks",
            "serve_startup_hooks",
            "spawn_hooks"
        ])
    );
}

#[test]
fn a_failing_serve_startup_hook_stops_serve_with_78_before_any_round() {
    let p = Project::new();
    let pyz = test_report_host(p.tmp_dir());
    let agent = recording_agent(&p);
    // The report's directory does not exist: the startup check refuses the project.
    p.write_config(
        &ConfigBuilder::new(&agent).sandbox("require").host(
            HostSpec::new("tests", &pyz)
                .provides(&["pre_round", "context_enricher", "serve_startup"])
                .config(json!({"report": "build/test-results/junit.xml"})),
        ),
    );
    let out = p.run(&["serve", "--max-rounds", "1"]);
    out.assert_code(78);
    assert!(
        out.stderr
            .contains("serve-startup hook `junit_report_check` failed")
            && out.stderr.contains("build/test-results"),
        "{out}"
    );
    let failed = p.events_of("serve_startup_hook_failed");
    assert_eq!(failed.len(), 1, "{}", p.events_text());
    assert_eq!(failed[0]["hook"], "junit_report_check");
    assert_eq!(failed[0]["error_type"], "rpc_error");
    assert!(p.events_of("round_start").is_empty());
    // `round` does not call serve-startup hooks: one round runs.
    p.run(&["round"]).assert_code(0);
}

#[test]
fn a_skip_from_a_hook_not_in_spawn_override_allow_is_recorded_and_the_round_runs() {
    let p = Project::new();
    let pyz = test_report_host(p.tmp_dir());
    let agent = recording_agent(&p);
    p.write_config(
        &ConfigBuilder::new(&agent).host(
            HostSpec::new("tests", &pyz)
                .provides(&["pre_round", "context_enricher", "serve_startup"])
                .config(json!({"report": "junit.xml"})),
        ),
    );
    p.write("junit.xml", &junit(2, 2));
    p.run(&["round"]).assert_code(0);
    let ignored = p.events_of("plugin_round_override_ignored");
    assert_eq!(ignored.len(), 1, "{}", p.events_text());
    assert_eq!(ignored[0]["hook"], "junit_gate");
    assert_eq!(ignored[0]["action"], "skip");
    assert_eq!(p.events_of("round_start").len(), 1);
}

/// Hooks of different hosts in one batch are asked at the same time (docs/protocol.md
/// §5.9): two enricher hosts that each answer only once the other has been asked too
/// (`tests/hosts/rendezvous.py`). Asked one after the other, the first would wait past its
/// 10 s timeout (`hook_failed`) and its object would be missing from the round context.
#[test]
fn enrichers_of_different_hosts_are_asked_at_the_same_time() {
    let p = Project::new();
    let agent = recording_agent(&p);
    let host = agent_runner_e2e::workspace_root().join("tests/hosts/rendezvous.py");
    let enricher = |name: &str, hook: &str, peer: &str| {
        HostSpec::new(name, &host)
            .provides(&["context_enricher"])
            .timeout_s(10)
            .config(json!({"hook": hook, "peer": peer}))
    };
    p.write_config(
        &ConfigBuilder::new(&agent)
            .sandbox("require")
            .host(enricher("left", "meet_left", "right"))
            .host(enricher("right", "meet_right", "left")),
    );
    p.run(&["round"]).assert_code(0);
    let all = p.events_text();
    assert!(p.events_of("hook_failed").is_empty(), "{all}");
    let text = std::fs::read_to_string(p.log_dir().join("round-context.json")).unwrap();
    let ctx: Value = agent_runner_e2e::serde_json::from_str(&text).unwrap();
    assert_eq!(ctx["meet_left"], json!({"met": "right"}), "{ctx:#}");
    assert_eq!(ctx["meet_right"], json!({"met": "left"}), "{ctx:#}");
}

/// A host's detector hook that shares a built-in detector's name (`oauth_fail`, in the
/// default `[monitor] auto_stop_on`) does not stop `serve` unasked: its `stop_service`
/// alerts are only recorded until the operator writes `auto_stop_on` naming the hook
/// (docs/protocol.md §5.6; `tests/hosts/alarm.py` alerts after every round).
#[test]
fn a_host_detector_named_like_a_builtin_stops_serve_only_when_listed() {
    let p = Project::new();
    let agent = recording_agent(&p);
    let host = agent_runner_e2e::workspace_root().join("tests/hosts/alarm.py");
    let config = || {
        ConfigBuilder::new(&agent)
            .sandbox("require")
            .restart_delay_s(1)
            .host(
                HostSpec::new("alarm", &host)
                    .provides(&["detector"])
                    .config(json!({"hook": "oauth_fail"})),
            )
    };
    p.write_config(&config());
    p.run(&["serve", "--max-rounds", "2"]).assert_code(0);
    let all = p.events_text();
    let alerts = p.events_of("detector_alert");
    assert_eq!(alerts.len(), 2, "{all}");
    for alert in &alerts {
        assert_eq!(alert["hook"], "oauth_fail", "{all}");
        assert_eq!(alert["stop_service"], true, "{all}");
        assert_eq!(alert["auto_stop"], false, "{all}");
    }
    assert!(
        p.events_of("serve_stopping")
            .iter()
            .all(|e| e["reason"] != "auto_stop"),
        "{all}"
    );

    p.write_config(&config().extra("[monitor]\nauto_stop_on = [\"oauth_fail\"]"));
    p.run(&["serve", "--max-rounds", "2"]).assert_code(75);
    let all = p.events_text();
    let alerts = p.events_of("detector_alert");
    assert_eq!(alerts.len(), 3, "{all}");
    assert_eq!(alerts[2]["auto_stop"], true, "{all}");
    let stopping = p.events_of("serve_stopping");
    let last = stopping.last().expect("serve_stopping");
    assert_eq!(last["reason"], "auto_stop", "{all}");
    assert_eq!(last["hook"], "oauth_fail", "{all}");
    assert_eq!(p.events_of("round_start").len(), 3, "{all}");
}

/// `[runtime] disable_pre_round_hooks` (the reference system's key, overridable per
/// phase): while it holds, the pre-round gate is not asked and the round runs despite a
/// failing report; context enrichers are still asked. A phase that sets it back to
/// `false` is gated again, and `peek --json` says which holds for the next round.
#[test]
fn disable_pre_round_hooks_leaves_the_gate_out_and_the_enricher_in() {
    let p = Project::new();
    let pyz = test_report_host(p.tmp_dir());
    let agent = recording_agent(&p);
    let text = ConfigBuilder::new(&agent)
        .sandbox("require")
        .spawn_override_allow(&["junit_gate"])
        .host(
            HostSpec::new("tests", &pyz)
                .provides(&["pre_round", "context_enricher", "serve_startup"])
                .config(json!({"report": "junit.xml"})),
        )
        .extra("[phases]\nlist = [\"build\", \"check\"]\n\n[phases.check.runtime]\ndisable_pre_round_hooks = false")
        .render()
        .replace("[runtime]\n", "[runtime]\ndisable_pre_round_hooks = true\n");
    p.write_config_text(&text);
    p.write("junit.xml", &junit(2, 2));
    let peek = |p: &Project| -> Value {
        let out = p.run(&["peek", "--json"]);
        out.assert_code(0);
        agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap()
    };
    assert_eq!(peek(&p)["plugins"]["pre_round_hooks_disabled"], true);

    let out = p.run(&["round"]);
    out.assert_code(0);
    assert!(
        !out.stderr.contains("disable_pre_round_hooks"),
        "no not-implemented warning: {out}"
    );
    let all = p.events_text();
    assert!(p.events_of("round_skipped").is_empty(), "{all}");
    assert!(
        p.events_of("plugin_round_override_ignored").is_empty(),
        "{all}"
    );
    assert!(
        p.events_of("tests.tests_failing").is_empty(),
        "the gate was not asked: {all}"
    );
    assert_eq!(p.events_of("round_start").len(), 1, "{all}");
    let ctx: Value = agent_runner_e2e::serde_json::from_str(
        &std::fs::read_to_string(p.log_dir().join("round-context.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        ctx["recent_work"]["tests_total"], 2,
        "the enricher was asked: {ctx:#}"
    );

    // Round 2 is a `check` round, whose phase turns the pre-round hooks back on.
    assert_eq!(peek(&p)["plugins"]["pre_round_hooks_disabled"], false);
    p.run(&["round"]).assert_code(75);
    let skipped = p.events_of("round_skipped");
    assert_eq!(skipped.len(), 1, "{}", p.events_text());
    assert_eq!(skipped[0]["hook"], "junit_gate");
}

/// A host restarted after a crash keeps the hooks, event kinds and owned paths of its first
/// `initialize` (docs/protocol.md §3, "A restarted host"): `tests/hosts/redeclare.py`
/// crashes at its first call and, started again, declares a second hook, another event
/// kind and another owned path. The difference is recorded once per restart
/// (`plugin_redeclaration_ignored`) and ignored: its first kind is still recorded, its new
/// one is refused as undeclared, its first path stays owned and the new one is dirt.
#[test]
fn a_restarted_host_keeps_its_first_declarations() {
    let p = Project::new();
    let agent = p.script(
        "agent.sh",
        "#!/bin/sh\necho \"$AGENT_RUNNER_ROUND_NUM\" > first.txt\necho \"$AGENT_RUNNER_ROUND_NUM\" > second.txt\n",
    );
    let host = agent_runner_e2e::workspace_root().join("tests/hosts/redeclare.py");
    p.write_config(
        &ConfigBuilder::new(&agent)
            .sandbox("require")
            .dirty_action("ignore")
            .host(HostSpec::new("redecl", &host).provides(&["pre_round"])),
    );
    p.run(&["serve", "--max-rounds", "3"]).assert_code(0);
    let all = p.events_text();
    assert_eq!(p.events_of("round_start").len(), 3, "{all}");

    let failures = p.events_of("hook_failed");
    assert_eq!(failures.len(), 2, "{all}");
    assert_eq!(failures[0]["error_type"], "crashed", "{all}");
    assert_eq!(failures[1]["error_type"], "invalid_result", "{all}");
    assert!(
        failures[1]["error_message"]
            .as_str()
            .unwrap()
            .contains("second"),
        "the new kind is not declared: {all}"
    );

    let ignored = p.events_of("plugin_redeclaration_ignored");
    assert_eq!(ignored.len(), 1, "one restart: {all}");
    assert_eq!(ignored[0]["name"], "redecl");
    assert_eq!(
        ignored[0]["changed"],
        json!(["hooks", "event_kinds", "owned_paths"]),
        "{all}"
    );
    let detail = ignored[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("pre_round/gate_two") && detail.contains("second.txt"),
        "{detail}"
    );

    let kept = p.events_of("redecl.first");
    assert_eq!(kept.len(), 1, "{all}");
    assert_eq!(kept[0]["round"], 2);
    assert!(p.events_of("redecl.second").is_empty(), "{all}");

    // first.txt stays owned, second.txt is the round's dirt.
    for dirty in p.events_of("dirty_detected") {
        let files = dirty["files"].to_string();
        assert!(
            files.contains("second.txt") && !files.contains("first.txt"),
            "{dirty}"
        );
    }
    assert_eq!(p.events_of("dirty_detected").len(), 3, "{all}");

    let out = p.run(&["peek", "--json"]);
    let doc: Value = agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        doc["plugins"]["pre_round_hooks"],
        json!(["gate"]),
        "{doc:#}"
    );
    assert_eq!(doc["plugins"]["event_kinds"], json!(["redecl.first"]));
    assert_eq!(doc["plugins"]["owned_paths"], json!(["first.txt"]));
}

/// The no-commit detector counts only the agent's commits (docs/hosts/no-commit-detector.md):
/// the supervisor's own commits for the built-in `auto_commit` handler move the head every
/// round, but the reflog marks them (`agent-runner dirty handler default: …`,
/// docs/protocol.md §5.2), so with K = 2 the alert still comes two rounds after the agent's
/// own commit in round 2, and `serve` stops.
#[test]
fn the_no_commit_detector_does_not_count_the_supervisors_commits() {
    let p = Project::new();
    let agent = p.script(
        "agent.sh",
        "#!/bin/sh\nset -e\necho \"$AGENT_RUNNER_ROUND_NUM\" >> work.txt\n\
         if [ \"$AGENT_RUNNER_ROUND_NUM\" = 2 ]; then\n  git add work.txt\n  \
         git -c user.name=agent -c user.email=agent@example.com commit -qm 'agent: round 2'\n  \
         echo more >> work.txt\nfi\n",
    );
    p.write_config(
        &ConfigBuilder::new(&agent)
            .sandbox("require")
            .dirty_action("auto_commit")
            .host(HostSpec::new("stall", no_commit_detector_bin()).provides(&["detector"]))
            .extra("[plugins.stall]\nrounds = 2\nstop_service = true\n\n[monitor]\nauto_stop_on = [\"no_commit\"]"),
    );
    p.run(&["serve", "--max-rounds", "8"]).assert_code(75);
    let all = p.events_text();
    let commits = p.events_of("dirty_auto_committed");
    assert_eq!(
        commits.len(),
        4,
        "the supervisor committed every round: {all}"
    );
    assert!(commits.iter().all(|c| c["hook"] == "default"), "{all}");
    let reflog = p.git(&["reflog", "--format=%gs"]);
    assert!(
        reflog.contains("agent-runner dirty handler default: agent-runner auto-commit: R3")
            && reflog.contains("commit: agent: round 2"),
        "{reflog}"
    );

    let alerts = p.events_of("detector_alert");
    assert_eq!(alerts.len(), 1, "{all}");
    assert_eq!(alerts[0]["round_num"], 4, "{all}");
    assert!(
        alerts[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("no commit for 2 rounds"),
        "{all}"
    );
    assert_eq!(p.events_of("round_start").len(), 4, "{all}");
    assert_eq!(
        p.events_of("serve_stopping")[0]["reason"],
        "auto_stop",
        "{all}"
    );
}
