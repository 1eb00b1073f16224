//! `events`: JSON Lines across the monthly files in chronological order, filtered by kind,
//! `--window`, `--since`, `--tail`; torn and non-JSON lines skipped and counted on stderr;
//! exit 2 on bad arguments, 1 on an unreadable file.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{wait_until, Project, EVENT_TIMEOUT};
use std::io::Write;

fn line(ts: &str, kind: &str, n: u64) -> String {
    format!("{{\"ts\":\"{ts}\",\"event\":\"{kind}\",\"round_num\":{n}}}\n")
}

/// A project whose record spans two months, with a torn line, a non-JSON line and a JSON
/// line that is not an event.
fn project() -> Project {
    let p = Project::new();
    p.write_config(&p.config());
    let october = [
        line("2026-10-31T23:59:58.000Z", "round_start", 1),
        "not json at all\n".to_owned(),
        line("2026-10-31T23:59:59.000Z", "round_end", 1),
    ]
    .concat();
    let november = [
        line("2026-11-01T00:00:01.000Z", "round_start", 2),
        "[1, 2]\n".to_owned(),
        line("2026-11-01T00:00:02.000Z", "hook_failed", 2),
        line("2026-11-01T00:00:03.000Z", "round_end", 2),
        "{\"ts\":\"2026-11-01T00:00:04.000Z\",\"event\":\"ro".to_owned(),
        "\n".to_owned(),
    ]
    .concat();
    std::fs::create_dir_all(p.state_dir()).unwrap();
    std::fs::write(p.state_dir().join("events-2026-10.jsonl"), october).unwrap();
    std::fs::write(p.state_dir().join("events-2026-11.jsonl"), november).unwrap();
    p
}

fn parse(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSONL: {l}: {e}")))
        .collect()
}

fn rounds_of(events: &[Value]) -> Vec<(String, u64)> {
    events
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_owned(),
                e["round_num"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn window_and_since_across_months() {
    let p = project();
    let out = p.run(&["events", "--kind", "round_start,round_end"]);
    out.assert_code(0);
    let all = parse(&out.stdout);
    assert_eq!(
        rounds_of(&all),
        [
            ("round_start".into(), 1),
            ("round_end".into(), 1),
            ("round_start".into(), 2),
            ("round_end".into(), 2)
        ]
    );
    assert!(
        out.stderr.contains("skipped 3"),
        "two bad lines and one torn: {out}"
    );

    let out = p.run(&["events", "--kind", "round_end", "--window", "1"]);
    assert_eq!(rounds_of(&parse(&out.stdout)), [("round_end".into(), 2)]);

    let out = p.run(&[
        "events",
        "--kind",
        "round_end,hook_failed",
        "--since",
        "2026-10-31T23:59:59Z",
    ]);
    out.assert_code(0);
    assert_eq!(
        rounds_of(&parse(&out.stdout)),
        [
            ("round_end".into(), 1),
            ("hook_failed".into(), 2),
            ("round_end".into(), 2)
        ]
    );
    let out = p.run(&["events", "--kind", "round_start", "--since", "2026-11-01"]);
    assert_eq!(rounds_of(&parse(&out.stdout)), [("round_start".into(), 2)]);
}

#[test]
fn bad_arguments_exit_2_and_unreadable_files_exit_1() {
    let p = project();
    for args in [
        &["events", "--kind", "a", "--window", "2", "--tail"][..],
        &[
            "events",
            "--kind",
            "a",
            "--window",
            "2",
            "--since",
            "2026-11-01",
        ][..],
        &["events", "--kind", "a", "--since", "last tuesday"][..],
        &["events", "--kind", ","][..],
        &["events", "--kind", "a", "--window", "0"][..],
        &["events", "--kind", "a", "--window", "many"][..],
        &["events"][..],
    ] {
        let out = p.run(args);
        assert_eq!(out.code(), 2, "{args:?}: {out}");
        assert!(!out.stderr.is_empty(), "{args:?} says why");
    }
    // A month file that cannot be read (a directory in its place: root reads any file).
    std::fs::create_dir_all(p.state_dir().join("events-2026-12.jsonl")).unwrap();
    let out = p.run(&["events", "--kind", "round_start"]);
    out.assert_code(1);
    assert!(out.stderr.contains("events-2026-12.jsonl"), "{out}");
}

#[test]
fn tail_follows_new_events_and_month_rollover_until_ctrl_c() {
    let p = project();
    let out_path = p.tmp_dir().join("tail.out");
    let mut child = p
        .command(&["events", "--kind", "round_start", "--tail"])
        .stdout(std::fs::File::create(&out_path).unwrap())
        .spawn()
        .expect("spawn events --tail");
    let append = |file: &str, text: &str| {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(p.state_dir().join(file))
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    };
    // Old events are not replayed: keep appending until the follower has picked one up
    // (it may not have reached its starting point when the first lines land).
    let mut n = 3;
    wait_until("events --tail to print a new event", EVENT_TIMEOUT, || {
        append(
            "events-2026-11.jsonl",
            &line("2026-11-02T00:00:00.000Z", "round_start", n),
        );
        append(
            "events-2026-11.jsonl",
            &line("2026-11-02T00:00:00.000Z", "round_end", n),
        );
        n += 1;
        std::thread::sleep(std::time::Duration::from_millis(300));
        let text = std::fs::read_to_string(&out_path).ok()?;
        (!text.is_empty()).then_some(())
    });
    append(
        "events-2026-12.jsonl",
        &line("2026-12-01T00:00:00.000Z", "round_start", 99),
    );
    wait_until("the December event", EVENT_TIMEOUT, || {
        let text = std::fs::read_to_string(&out_path).ok()?;
        text.contains("\"round_num\":99").then_some(())
    });
    // SAFETY: kill(2) on the pid of a child we own and have not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_until("events --tail to exit", EVENT_TIMEOUT, || {
        child.try_wait().unwrap()
    });
    assert_eq!(status.code(), Some(0));
    let events = parse(&std::fs::read_to_string(&out_path).unwrap());
    assert!(
        events.iter().all(|e| e["event"] == "round_start"),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .all(|e| e["round_num"] != 1 && e["round_num"] != 2),
        "no replay: {events:?}"
    );
    assert_eq!(events.last().unwrap()["round_num"], 99);
}
