//! `peek` for people and scripts: the `--json` document matches
//! `docs/schema/peek.schema.json` and keeps the reference system's field names and types,
//! on a fresh project, after rounds, and on a live `serve` (service state, host counters
//! from `service.json`); `--select`, `--round`, `--log`, `--events`; the human form.

use crate::operator_common;

use agent_runner_e2e::serde_json::{self, json, Value};
use agent_runner_e2e::{pause_host_bin, wait_until, HostSpec, Project, EVENT_TIMEOUT};
use operator_common::{assert_peek_schema, peek_json};

/// The reference system's `peek --json` (cli-agent-runner 0.3.2, run on this machine on a
/// project after two rounds), reduced to the blocks we share: names and value types only
/// matter here.
fn peer_document() -> Value {
    json!({
        "schema_version": "2.2",
        "plugins": {
            "disabled": [],
            "sandbox": {"requested": "prefer", "achieved_tier": "landlock+seccomp", "landlock_abi": 7,
                        "seccomp": true, "unconfined_reason": null, "covers": ["spawn_hooks"]},
            "pins": {},
            "spawn_override_allow": []
        },
        "project": "peerproj",
        "status": {"round_num": 2, "running": false, "last_completed_at": "2026-11-29T17:43:26.272Z",
                   "last_exit_code": 0, "last_duration_s": 0.2, "phase_index": 0},
        "current_round": null,
        "recent_rounds": [],
        "orphan": null,
        "system": {"mem_total_mb": 24105, "mem_available_mb": 23637, "disk_used_pct": 17.5, "disk_free_gb": 74.9,
                   "load_1m": 1.95, "cpu_pct": 54.5, "agent_process_count": 0},
        "service": {"mode": "none", "active": false, "pid": null, "uptime_s": null, "unit_file": null,
                    "rate_limit": null, "system_managed": false},
        "recent_events": [],
        "recent_hook_failures": []
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every key of `peer` exists in `ours`; where both values are non-null their JSON types
/// agree (an integer where the peer has a float is accepted: JSON readers see numbers).
fn assert_same_shape(peer: &Value, ours: &Value, path: &str) {
    let Value::Object(peer_map) = peer else {
        return;
    };
    let ours_map = ours
        .as_object()
        .unwrap_or_else(|| panic!("{path}: expected an object, got {ours}"));
    for (key, pv) in peer_map {
        let here = format!("{path}.{key}");
        let ov = ours_map
            .get(key)
            .unwrap_or_else(|| panic!("{here}: missing from peek --json"));
        if pv.is_null() || ov.is_null() {
            continue;
        }
        let (pk, ok) = (kind(pv), kind(ov));
        let numbers = matches!((pk, ok), ("float", "int") | ("int", "float"));
        assert!(
            pk == ok || numbers,
            "{here}: the peer has {pk}, we have {ok} ({ov})"
        );
        if pv.is_object() && !key.ends_with("pins") {
            assert_same_shape(pv, ov, &here);
        }
    }
}

/// The reference system's `peek --json` key list of schema `version` (every dotted path
/// of its document with the JSON type of its value; `[]` marks the items of a list),
/// captured on this machine from cli-agent-runner 0.3.2 (`2.2`) and 0.3.14 (`2.6`):
/// `tests/fixtures/README.md` says how.
fn reference_keys(version: &str) -> Value {
    let text = std::fs::read_to_string(
        agent_runner_e2e::workspace_root()
            .join(format!("tests/fixtures/reference-peek-{version}.keys.json")),
    )
    .expect("reference key list");
    let keys: Value = serde_json::from_str(&text).expect("reference key list is JSON");
    assert_eq!(keys["schema_version"], version);
    keys
}

/// The `schema_version` our `peek --json` says: the newest reference schema whose every
/// key it carries (docs/reference-system.md, "peek's schema_version").
const SCHEMA_VERSION: &str = "2.6";

/// The values at dotted `path` of `doc` (`a.b[].c` visits every item of `a.b`).
fn values_at<'a>(doc: &'a Value, path: &str) -> Vec<&'a Value> {
    let mut found = vec![doc];
    for part in path.split('.') {
        let (key, items) = match part.strip_suffix("[]") {
            Some(key) => (key, true),
            None => (part, false),
        };
        found = found
            .into_iter()
            .filter_map(|v| v.get(key))
            .flat_map(|v| match (items, v) {
                (true, Value::Array(list)) => list.iter().collect(),
                (true, _) => Vec::new(),
                (false, v) => vec![v],
            })
            .collect();
    }
    found
}

/// Holds `doc` against the reference key lists of 2.2 and of 2.6 (ours is a superset of
/// both: 2.6 dropped the plugin layer's keys, which we keep): every key present (list
/// items checked when the list is not empty), each non-null value of the reference's type.
fn assert_reference_keys(doc: &Value) {
    assert_eq!(doc["schema_version"], SCHEMA_VERSION);
    for version in ["2.2", "2.6"] {
        assert_keys_of(doc, &reference_keys(version));
    }
}

fn assert_keys_of(doc: &Value, reference: &Value) {
    for (path, kind) in reference["keys"].as_object().unwrap() {
        let (parent, last) = path.rsplit_once('.').unwrap_or(("", path));
        let holders: Vec<&Value> = if parent.is_empty() {
            vec![doc]
        } else {
            values_at(doc, parent)
        };
        if !parent.ends_with("[]") {
            assert!(!holders.is_empty(), "{parent}: missing from peek --json");
        }
        for holder in holders {
            let value = holder
                .get(last)
                .unwrap_or_else(|| panic!("{path}: missing from peek --json"));
            let ok = match (kind.as_str().unwrap(), value) {
                ("null" | "any", _) | (_, Value::Null) => true,
                ("string", v) => v.is_string(),
                ("number", v) => v.is_number(),
                ("bool", v) => v.is_boolean(),
                ("array", v) => v.is_array(),
                ("object", v) => v.is_object(),
                (other, _) => panic!("unknown type {other} in the reference key list"),
            };
            assert!(ok, "{path}: the reference has {kind}, we have {value}");
        }
    }
}

#[test]
fn peek_json_holds_every_reference_key_with_its_type() {
    let p = pause_project();
    let fresh = peek_json(&p, &[]);
    assert_reference_keys(&fresh);
    p.run(&["serve", "--max-rounds", "1"]).assert_code(0);
    let doc = peek_json(&p, &[]);
    assert_reference_keys(&doc);
    assert_eq!(doc["plugins"]["spawn_hooks"], json!(["pause_file"]));
    assert_eq!(doc["plugins"]["sandbox"]["covers"], json!(["spawn_hooks"]));
    let defenses = doc["defenses"].as_array().unwrap();
    let budget = defenses
        .iter()
        .find(|d| d["name"] == "round_budget_s")
        .expect("round_budget_s defense");
    assert_eq!(budget["value"], 60, "the config's budget: {budget}");
    assert_eq!(budget["current_state"], "active");
}

fn pause_project() -> Project {
    let p = Project::new();
    p.write_config(
        &p.config()
            .restart_delay_s(1)
            .spawn_override_allow(&["pause_file"])
            .host(HostSpec::new("pause", pause_host_bin()).config(json!({"defer_s": 30}))),
    );
    p
}

#[test]
fn fresh_project_and_after_rounds_match_schema_and_peer_shape() {
    let p = pause_project();
    let fresh = peek_json(&p, &[]);
    assert_peek_schema(&fresh);
    assert_same_shape(&peer_document(), &fresh, "");
    assert!(!p.log_dir().exists(), "peek created log_dir");
    assert_eq!(fresh["service"]["active"], false);
    assert_eq!(fresh["service"]["state"], "stopped");
    assert_eq!(fresh["plugins"]["pins"], json!({"pause": "verified"}));
    assert_eq!(
        fresh["plugins"]["spawn_override_allow"],
        json!(["pause_file"])
    );
    assert_eq!(fresh["hosts"][0]["state"], "stopped");
    assert_eq!(fresh["hosts"][0]["calls"], 0);
    assert!(fresh["recent_rounds"].as_array().unwrap().is_empty());

    p.run(&["serve", "--max-rounds", "2"]).assert_code(0);
    let doc = peek_json(&p, &["--events", "50"]);
    assert_peek_schema(&doc);
    assert_same_shape(&peer_document(), &doc, "");
    let rounds = doc["recent_rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{doc:#}");
    assert_eq!(rounds[0]["round_num"], 1);
    assert_eq!(rounds[1]["exit_code"], 0);
    assert!(rounds[1]["duration_s"].as_f64().unwrap() > 0.0);
    assert_eq!(doc["status"]["round_num"], 2);
    assert_eq!(doc["status"]["last_exit_code"], 0);
    // The counters of the last serve, as its final service.json recorded them.
    let host = &doc["hosts"][0];
    assert_eq!(host["name"], "pause");
    assert_eq!(host["state"], "stopped");
    assert_eq!(host["hooks"], json!(["pause_file"]));
    assert!(host["calls"].as_u64().unwrap() >= 2, "{host}");
    assert_eq!(host["failures"], 0);
    assert!(
        host["call_latency_p50_ms"].as_f64().unwrap() > 0.0,
        "{host}"
    );
    let kinds: Vec<&str> = doc["recent_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"round_end") && kinds.contains(&"max_rounds_reached"),
        "{kinds:?}"
    );
    let service: Value =
        serde_json::from_str(&std::fs::read_to_string(p.state_dir().join("service.json")).unwrap())
            .unwrap();
    assert_eq!(service["schema_version"], 1);
    assert_eq!(service["state"], "stopped");
    assert_eq!(service["config"], p.config_path().display().to_string());
}

#[test]
fn live_serve_shows_service_state_and_host_counters() {
    let p = pause_project();
    p.write(".agent-runner-pause", "");
    let serve = p.spawn(&["serve"]);
    let service_json = p.state_dir().join("service.json");
    wait_until("service.json says deferred", EVENT_TIMEOUT, || {
        let text = std::fs::read_to_string(&service_json).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        (v["state"] == "deferred").then_some(())
    });
    let doc = peek_json(&p, &[]);
    assert_peek_schema(&doc);
    let svc = &doc["service"];
    assert_eq!(svc["active"], true, "{svc}");
    assert_eq!(svc["pid"], serve.pid());
    assert_eq!(svc["state"], "deferred");
    assert_eq!(svc["mode"], "pid_file");
    assert!(svc["uptime_s"].as_f64().unwrap() >= 0.0);
    // The keys the reference added in its peek schema 2.3 – 2.5, with its meanings: each
    // preset's cooperative-stop signal, this agent's grace, and the memory brake (none
    // configured here).
    assert_eq!(doc["plugins"]["cooperative_stop"]["claude"], "SIGINT");
    assert_eq!(
        doc["plugins"]["resolved_sigterm_grace_s"], 5,
        "a non-cooperative agent"
    );
    assert_eq!(doc["brake"], "off");
    let host = &doc["hosts"][0];
    assert_eq!(host["state"], "running", "{host}");
    assert!(host["pid"].as_u64().is_some(), "{host}");
    assert_eq!(host["calls"], 1);
    assert!(host["call_latency_p50_ms"].as_f64().is_some());
    assert!(
        doc["current_round"].is_null(),
        "a deferred round has not started"
    );

    let human = p.run(&["peek"]);
    human.assert_code(0);
    assert!(human.stdout.contains("deferred (pid"), "{human}");
    assert!(
        human.stdout.contains("pause") && human.stdout.contains("verified"),
        "{human}"
    );
    assert!(
        !human.stdout.contains('\x1b'),
        "no colour off a terminal: {human}"
    );

    serve.signal(libc::SIGTERM);
    serve.wait(EVENT_TIMEOUT).assert_code(0);
    let doc = peek_json(&p, &[]);
    assert_eq!(doc["service"]["active"], false);
    assert_eq!(doc["service"]["stale"], false);
    assert_eq!(doc["hosts"][0]["state"], "stopped");
}

#[test]
fn select_round_and_log() {
    let p = Project::new();
    p.write_config(&p.config().restart_delay_s(1));
    p.run(&["serve", "--max-rounds", "2"]).assert_code(0);

    let out = p.run(&["peek", "--select", "plugins.sandbox.achieved_tier"]);
    out.assert_code(0);
    assert_eq!(out.stdout.trim(), "landlock+seccomp");
    let out = p.run(&["peek", "--select", "recent_rounds.1.round_num"]);
    assert_eq!(out.stdout.trim(), "2");
    let out = p.run(&["peek", "--json", "--select", "plugins.sandbox"]);
    let sandbox: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(sandbox["requested"], "prefer");
    let out = p.run(&["peek", "--select", "plugins.nope"]);
    out.assert_code(1);
    assert!(out.stderr.contains("plugins.nope"), "{out}");

    let doc = peek_json(&p, &["--round", "1"]);
    assert_peek_schema(&doc);
    assert_eq!(doc["round"]["round_num"], 1);
    let log_path = doc["round"]["log_path"].as_str().unwrap().to_owned();
    let log_text = std::fs::read_to_string(&log_path).unwrap();
    assert!(!log_text.is_empty());
    assert_eq!(doc["round"]["log_tail"].as_str().unwrap(), log_text);
    assert!(doc["round"]["recent_events"].as_array().unwrap().len() >= 4);
    assert_eq!(
        peek_json(&p, &["--round", "latest"])["round"]["round_num"],
        2
    );

    let out = p.run(&["peek", "--round", "1", "--log"]);
    out.assert_code(0);
    assert_eq!(out.stdout, log_text);
    let out = p.run(&["peek", "--round", "9", "--log"]);
    out.assert_code(1);
    assert!(out.stderr.contains("R9"), "{out}");
    p.run(&["peek", "--round", "x"]).assert_code(2);

    let out = p.run(&["peek", "--events", "3"]);
    out.assert_code(0);
    assert!(
        out.stdout.contains("events") && out.stdout.contains("max_rounds_reached"),
        "{out}"
    );
    assert!(
        out.stdout.contains("R2") && out.stdout.contains("exit 0"),
        "{out}"
    );
}

#[test]
fn running_round_is_current_with_its_age() {
    let p = Project::new();
    p.write_config(&p.config().agent_env("DEMO_AGENT_SLEEP", "4"));
    let serve = p.spawn(&["serve", "--once"]);
    p.wait_for_event("agent_spawn");
    let doc = peek_json(&p, &[]);
    assert_peek_schema(&doc);
    let current = &doc["current_round"];
    assert_eq!(current["round_num"], 1, "{doc:#}");
    assert!(current["duration_so_far_s"].as_f64().unwrap() >= 0.0);
    assert!(current["exit_code"].is_null());
    assert!(current["log_path"].as_str().unwrap().contains("R1-"));
    assert_eq!(doc["status"]["running"], true);
    assert_eq!(doc["service"]["state"], "running");
    assert_eq!(doc["service"]["serve_current_round"]["round_num"], 1);
    assert!(doc["recent_rounds"].as_array().unwrap().is_empty());
    let human = p.run(&["peek"]);
    assert!(human.stdout.contains("R1 running for"), "{human}");

    serve.wait(EVENT_TIMEOUT).assert_code(0);
    let doc = peek_json(&p, &[]);
    assert!(doc["current_round"].is_null());
    assert_eq!(doc["recent_rounds"][0]["round_num"], 1);
    assert_eq!(doc["service"]["state"], "stopped");
}

#[test]
fn host_failures_show_in_counters_and_recent_hook_failures() {
    let p = Project::new();
    p.write_config(
        &p.config().restart_delay_s(1).host(
            HostSpec::new("crashy", env!("CARGO_BIN_EXE_ar-e2e-hostile"))
                .config(json!({"attempt": "crash", "hook": "crashy"})),
        ),
    );
    p.run(&["serve", "--max-rounds", "2"]).assert_code(0);
    let doc = peek_json(&p, &[]);
    assert_peek_schema(&doc);
    let host = &doc["hosts"][0];
    assert_eq!(host["name"], "crashy");
    assert_eq!(host["calls"], 2, "{host}");
    assert_eq!(host["failures"], 2, "{host}");
    assert!(
        host["last_error"]
            .as_str()
            .unwrap()
            .starts_with("crashed: "),
        "{host}"
    );
    let failures = doc["recent_hook_failures"].as_array().unwrap();
    assert_eq!(failures.len(), 2, "{doc:#}");
    assert_eq!(failures[1]["error_type"], "crashed");
    let human = p.run(&["peek"]);
    assert!(human.stdout.contains("hook failures"), "{human}");
    assert!(human.stdout.contains("last error: crashed"), "{human}");
}

/// Colour only on a terminal (a pty from `script(1)`, util-linux), and never with
/// `NO_COLOR` set.
#[test]
fn colour_only_on_a_terminal_without_no_color() {
    let p = Project::new();
    p.write_config(&p.config());
    let line = format!(
        "{} --config {} peek",
        agent_runner_e2e::agent_runner_bin().display(),
        p.config_path().display()
    );
    let on_tty = |no_color: Option<&str>| {
        let mut cmd = std::process::Command::new("script");
        cmd.args(["-qec", &line, "/dev/null"]).current_dir(p.dir());
        match no_color {
            Some(v) => cmd.env("NO_COLOR", v),
            None => cmd.env_remove("NO_COLOR"),
        };
        let out = cmd.output().expect("run script(1)");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let coloured = on_tty(None);
    assert!(coloured.contains("\x1b[33mnot running"), "{coloured:?}");
    let plain = on_tty(Some("1"));
    assert!(
        plain.contains("not running") && !plain.contains('\x1b'),
        "{plain:?}"
    );
    // An empty NO_COLOR does not count (no-color.org).
    assert!(on_tty(Some("")).contains('\x1b'));
    assert!(!p.run(&["peek"]).stdout.contains('\x1b'), "not a terminal");
}

#[test]
fn a_round_leaves_the_records_summary_current_for_the_next_look() {
    // `round` writes the summary as `serve` does (docs/operations.md, "Reading the
    // record"): a look after it never reads back further than the summary's point.
    let p = Project::new();
    p.write_config(&p.config());
    for n in 1..=2 {
        p.run(&["round"]).assert_code(0);
        let summary: Value = serde_json::from_str(
            &std::fs::read_to_string(p.state_dir().join("events-summary.json"))
                .unwrap_or_else(|e| panic!("no summary after round {n}: {e}")),
        )
        .unwrap();
        let covered = p
            .state_dir()
            .join(summary["covers"]["file"].as_str().unwrap());
        assert_eq!(
            summary["covers"]["end"].as_u64(),
            Some(std::fs::metadata(&covered).unwrap().len()),
            "round {n}: the summary stops short of the record's end: {summary}"
        );
        let ends: Vec<&Value> = summary["round_events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == "round_end")
            .map(|e| &e["round_num"])
            .collect();
        assert_eq!(ends.last().copied(), Some(&json!(n)), "{summary}");
    }
}
