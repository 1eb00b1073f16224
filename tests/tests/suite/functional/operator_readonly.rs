//! Read-only means read-only: `peek` (every form), `watch`, `events` and `doctor` leave a
//! live project's `log_dir` byte-for-byte unchanged (contents, sizes, mtimes) and never
//! create `log_dir` on a fresh project.

use crate::operator_common;

use agent_runner_e2e::serde_json::{self, json, Value};
use agent_runner_e2e::{pause_host_bin, wait_until, HostSpec, Project, EVENT_TIMEOUT};
use operator_common::snapshot;

/// The read-only invocations, each run to completion.
const VERBS: &[&[&str]] = &[
    &["peek"],
    &["peek", "--json"],
    &["peek", "--events", "5"],
    &["peek", "--round", "latest", "--json"],
    &["peek", "--log"],
    &["peek", "--select", "plugins.pins"],
    &["events", "--kind", "round_start,round_end"],
    &["events", "--kind", "round_start", "--since", "2020-01-01"],
    &["doctor"],
    &["doctor", "--json", "--rounds", "3"],
];

/// `status` answers 0 while a supervisor runs and 1 when none does; read-only either way.
const STATUS: &[&[&str]] = &[&["status"], &["status", "--json"]];

fn project() -> Project {
    let p = Project::new();
    p.write_config(
        &p.config()
            .restart_delay_s(1)
            .spawn_override_allow(&["pause_file"])
            .host(HostSpec::new("pause", pause_host_bin()).config(json!({"defer_s": 60}))),
    );
    p
}

/// Runs `watch` until it has drawn a frame twice, then stops it with Ctrl-C (SIGINT):
/// it exits 0.
fn watch_briefly(p: &Project) {
    let out_path = p.tmp_dir().join("watch.out");
    let mut child = p
        .command(&["watch", "--interval", "0.2"])
        .stdout(std::fs::File::create(&out_path).unwrap())
        .spawn()
        .expect("spawn watch");
    wait_until("two frames of watch", EVENT_TIMEOUT, || {
        let text = std::fs::read_to_string(&out_path).ok()?;
        (text.matches("sandbox").count() >= 2).then_some(())
    });
    // SAFETY: kill(2) on the pid of a child we own and have not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_until("watch to exit", EVENT_TIMEOUT, || child.try_wait().unwrap());
    assert_eq!(status.code(), Some(0), "watch on Ctrl-C: {status}");
    let text = std::fs::read_to_string(&out_path).unwrap();
    assert!(text.contains("\x1b[H"), "watch redraws in place: {text}");
}

#[test]
fn live_project_log_dir_is_unchanged() {
    let p = project();
    p.run(&["serve", "--max-rounds", "1"]).assert_code(0);
    // Now a live serve, deferred by the pause file: it writes nothing until it asks again
    // in 60 s.
    p.write(".agent-runner-pause", "");
    let serve = p.spawn(&["serve"]);
    let service_json = p.state_dir().join("service.json");
    wait_until("serve deferred", EVENT_TIMEOUT, || {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&service_json).ok()?).ok()?;
        (v["state"] == "deferred" && v["pid"] == serve.pid()).then_some(())
    });
    let record = || (snapshot(&p.log_dir()), snapshot(&p.state_dir()));
    let before = record();
    assert!(
        before.1.contains_key("service.json") && before.0.len() + before.1.len() > 5,
        "{before:?}"
    );
    // serve keeps the record's summary; the readers below use it and leave it as it is.
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(p.state_dir().join("events-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        summary["round_events"][0]["event"], "round_start",
        "{summary}"
    );
    let covered = p
        .state_dir()
        .join(summary["covers"]["file"].as_str().unwrap());
    assert_eq!(
        summary["covers"]["end"].as_u64(),
        Some(std::fs::metadata(covered).unwrap().len()),
        "serve refreshed it before deferring: {summary}"
    );
    for verb in VERBS {
        let out = p.run(verb);
        assert!(out.code() == 0, "{verb:?}: {out}");
        assert_eq!(record(), before, "{verb:?} changed log_dir or state dir");
    }
    for verb in STATUS {
        let out = p.run(verb);
        assert_eq!(out.code(), 0, "{verb:?}: {out}");
        assert_eq!(record(), before, "{verb:?} changed log_dir or state dir");
    }
    watch_briefly(&p);
    assert_eq!(record(), before, "watch changed log_dir or state dir");
    serve.signal(libc::SIGTERM);
    serve.wait(EVENT_TIMEOUT).assert_code(0);
}

#[test]
fn fresh_project_log_dir_is_not_created() {
    let p = project();
    for verb in VERBS {
        let out = p.run(verb);
        // `peek --log` has no round to show (1); everything else succeeds.
        let expected = if verb.contains(&"--log") { 1 } else { 0 };
        assert_eq!(out.code(), expected, "{verb:?}: {out}");
        assert!(!p.log_dir().exists(), "{verb:?} created log_dir");
        assert!(!p.state_dir().exists(), "{verb:?} created the state dir");
    }
    for verb in STATUS {
        assert_eq!(p.run(verb).code(), 1, "{verb:?} with no supervisor");
        assert!(!p.log_dir().exists(), "{verb:?} created log_dir");
        assert!(!p.state_dir().exists(), "{verb:?} created the state dir");
    }
    watch_briefly(&p);
    assert!(!p.log_dir().exists(), "watch created log_dir");
    let out = p.run(&["events", "--kind", "round_start"]);
    assert!(out.stdout.is_empty(), "{out}");
}
