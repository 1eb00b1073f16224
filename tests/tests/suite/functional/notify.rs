//! `[[notify.webhooks]]` on real processes (docs/operations.md, "Notifications"): a real
//! HTTP receiver on 127.0.0.1 (a small server in this file) gets the event that stopped
//! `serve`, as the record's line or as a chat sentence; a receiver that is down or answers
//! 500 gets its retries (1 s, 4 s, 15 s after the failures) and then `notify_failed` is
//! recorded, while the rounds go on at their own pace (by the events' timestamps); the exit
//! waits for a slow receiver up to `flush_s` and no longer; the URL (a secret token in its
//! path) is never written to the events, the logs dir or the state dir; bad entries are
//! refused (exit 78) naming the key, and an unset `url_env` naming the variable.

use agent_runner_e2e::{ConfigBuilder, Project, RunOutput};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One request a [`Receiver`] read.
#[derive(Clone, Debug)]
struct Hit {
    /// When its body was read, ms since the epoch.
    at_ms: u64,
    path: String,
    body: String,
}

/// An HTTP/1.1 server on 127.0.0.1 that records each POST and answers `status` after
/// `delay`.
struct Receiver {
    port: u16,
    hits: Arc<Mutex<Vec<Hit>>>,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    fn start(status: u16, delay: Duration) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (Arc::clone(&hits), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let h = Arc::clone(&h);
                        std::thread::spawn(move || serve_one(conn, &h, status, delay));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Receiver { port, hits, stop }
    }

    fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve_one(mut conn: TcpStream, hits: &Mutex<Vec<Hit>>, status: u16, delay: Duration) {
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while data.len() < head_end + length {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    }
    let path = head
        .lines()
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or_default()
        .to_owned();
    hits.lock().unwrap().push(Hit {
        at_ms: now_ms(),
        path,
        body: String::from_utf8_lossy(&data[head_end..head_end + length]).into_owned(),
    });
    std::thread::sleep(delay);
    let _ = write!(
        conn,
        "HTTP/1.1 {status} X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    );
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A record timestamp (`2026-12-02T11:22:29.123Z`) in ms since the epoch.
fn ts_ms(ts: &str) -> u64 {
    let n = |a: usize, b: usize| ts[a..b].parse::<i64>().unwrap();
    let (y, m, d) = (n(0, 4), n(5, 7), n(8, 10));
    // Days from civil (H. Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    let secs = days * 86400 + n(11, 13) * 3600 + n(14, 16) * 60 + n(17, 19);
    (secs * 1000 + n(20, 23)) as u64
}

/// A token no file of the project may hold.
fn secret() -> String {
    format!("s3cr3t-{:x}-{}", now_ms(), std::process::id())
}

/// A port with nothing listening (bound, then let go).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `agent-runner <args>` with `env` and no proxy variables (the receivers are local).
fn run(p: &Project, args: &[&str], env: &[(&str, String)]) -> RunOutput {
    let mut cmd = p.command(args);
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"] {
        cmd.env_remove(var).env_remove(var.to_ascii_lowercase());
    }
    cmd.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    p.run_with(cmd)
}

/// Panics when any file under `dirs` (or `texts`) holds `secret`.
fn assert_nowhere(secret: &str, dirs: &[PathBuf], texts: &[&str]) {
    fn walk(dir: &Path, secret: &[u8], found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                walk(&path, secret, found);
            } else if kind.is_file() {
                let bytes = std::fs::read(&path).unwrap_or_default();
                if bytes.windows(secret.len()).any(|w| w == secret) {
                    found.push(path);
                }
            }
        }
    }
    let mut found = Vec::new();
    for dir in dirs {
        assert!(dir.is_dir(), "{} should exist", dir.display());
        walk(dir, secret.as_bytes(), &mut found);
    }
    assert!(found.is_empty(), "the URL's token is written in {found:?}");
    for text in texts {
        assert!(!text.contains(secret), "the URL's token is in: {text}");
    }
}

/// The raw line of the record whose kind is `kind` (the first).
fn raw_line(p: &Project, kind: &str) -> String {
    let needle = format!("\"event\":\"{kind}\"");
    p.event_files()
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no {kind} in {}", p.events_text()))
}

/// A `claude` script billing $0.40 a round, as tests/tests/suite/functional/budget.rs's: per session
/// (`$AGENT_RUNNER_RESUME_SESSION_ID`, counted in `$STATE/<id>`) its result's
/// `total_cost_usd` is the running total, as the real claude's is under `--resume`.
fn paying_claude(p: &Project) -> ConfigBuilder {
    let dir = p.tmp_dir().join("bin");
    std::fs::create_dir_all(dir.join("state")).unwrap();
    let path = dir.join("claude");
    std::fs::write(
        &path,
        "#!/bin/sh\n\
         f=\"$STATE/${AGENT_RUNNER_RESUME_SESSION_ID:-none}\"\n\
         n=$(cat \"$f\" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > \"$f\"\n\
         m=$((n * 400))\n\
         cost=$(printf '%d.%03d' $((m / 1000)) $((m % 1000)))\n\
         echo '{\"type\":\"system\",\"subtype\":\"init\"}'\n\
         echo '{\"type\":\"assistant\",\"message\":{\"model\":\"claude-opus-4-5\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}'\n\
         echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"total_cost_usd\":'$cost',\"usage\":{\"input_tokens\":1000,\"output_tokens\":100,\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0}}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    ConfigBuilder::new(&path).agent_env("STATE", &dir.join("state").display().to_string())
}

/// `total_usd = 1.0` at $0.40 a round: serve stops with `budget_exhausted` (exit 80) and
/// both receivers have it by the time serve has exited: one as the record's very line, one
/// as a chat sentence. The URLs' token is in no file serve wrote, nor in peek or doctor.
#[test]
fn the_stop_reaches_a_receiver_as_the_records_line_and_as_a_chat_sentence() {
    let p = Project::new();
    let receiver = Receiver::start(200, Duration::ZERO);
    let token = secret();
    let config = paying_claude(&p).extra(
        "[budget]\ntotal_usd = 1.0\n\
         [[notify.webhooks]]\nname = \"ops-events\"\nurl_env = \"AR_TEST_HOOK_EVENTS\"\n\
         [[notify.webhooks]]\nurl_env = \"AR_TEST_HOOK_CHAT\"\nformat = \"chat\"\n",
    );
    p.write_config(&config);
    let env = [
        (
            "AR_TEST_HOOK_EVENTS",
            format!("http://127.0.0.1:{}/hook/events/{token}", receiver.port),
        ),
        (
            "AR_TEST_HOOK_CHAT",
            format!(
                "http://127.0.0.1:{}/hook/chat/{token}?key={token}",
                receiver.port
            ),
        ),
    ];
    let out = run(&p, &["serve", "--max-rounds", "10"], &env);
    out.assert_code(80);
    // serve has exited: what it sent is there already (no wait here).
    let hits = receiver.hits();
    let line = raw_line(&p, "budget_exhausted");
    let events: Vec<&Hit> = hits
        .iter()
        .filter(|h| h.path == format!("/hook/events/{token}"))
        .collect();
    assert_eq!(events.len(), 1, "{hits:?}\n{}", p.events_text());
    assert_eq!(events[0].body, line, "the body is the record's line");
    let chats: Vec<&Hit> = hits
        .iter()
        .filter(|h| h.path.starts_with("/hook/chat/"))
        .collect();
    assert_eq!(chats.len(), 1, "{hits:?}");
    let chat: Value = serde_json::from_str(&chats[0].body).unwrap();
    let text = chat["text"].as_str().unwrap();
    assert_eq!(chat.as_object().unwrap().len(), 1, "{chat}");
    assert!(text.starts_with("agent-runner ("), "{text}");
    assert!(
        text.contains("the budget's total_usd is spent ($1.20 of $1.00)"),
        "{text}"
    );
    assert!(
        p.events_of("notify_failed").is_empty(),
        "{}",
        p.events_text()
    );
    let event: Value = serde_json::from_str(&line).unwrap();
    let delivered = events[0].at_ms as i64 - ts_ms(event["ts"].as_str().unwrap()) as i64;
    eprintln!("notify: budget_exhausted reached the receiver {delivered} ms after its ts");
    assert!(delivered < 5000, "{delivered} ms");

    let peek = run(&p, &["peek", "--json"], &env);
    let doctor = run(&p, &["doctor", "--json"], &env);
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    let check = agent_runner_e2e::doctor_check(&report, "notify:ops-events");
    assert_eq!(check["ok"], true, "{check}");
    let reason = check["reason"].as_str().unwrap();
    assert!(reason.contains("url_env AR_TEST_HOOK_EVENTS"), "{reason}");
    let check = agent_runner_e2e::doctor_check(&report, "notify:notify.webhooks[1]");
    assert!(
        check["reason"].as_str().unwrap().contains("\"chat\""),
        "{check}"
    );
    assert_nowhere(
        &token,
        &[p.log_dir(), p.state_dir(), p.dir().to_owned()],
        &[
            &out.stdout,
            &out.stderr,
            &peek.stdout,
            &doctor.stdout,
            &doctor.stderr,
        ],
    );
}

/// The median gap in seconds between one `round_end` and the next `round_start`, and
/// the largest.
fn round_gaps(p: &Project) -> (f64, f64) {
    let events = p.events();
    let mut gaps = Vec::new();
    let mut end = None;
    for e in &events {
        match e["event"].as_str() {
            Some("round_end") => end = Some(ts_ms(e["ts"].as_str().unwrap())),
            Some("round_start") => {
                if let Some(end) = end.take() {
                    gaps.push((ts_ms(e["ts"].as_str().unwrap()) - end) as f64 / 1000.0);
                }
            }
            _ => {}
        }
    }
    gaps.sort_by(f64::total_cmp);
    assert!(!gaps.is_empty(), "{}", p.events_text());
    (gaps[gaps.len() / 2], gaps[gaps.len() - 1])
}

/// Every `round_end` goes to a receiver that is down (connection refused) and to one
/// that answers 500. Each delivery is tried four times (the 500 receiver sees the gaps:
/// 1 s, 4 s, 15 s), then `notify_failed` names the entry and its variable, never the URL;
/// meanwhile the rounds keep their pace (the control: the same run without webhooks). At
/// exit the deliveries still retrying are given up after `flush_s` and recorded.
#[test]
fn a_receiver_down_or_failing_gets_retries_then_notify_failed_and_never_slows_a_round() {
    let rounds = "24";
    let agent = "#!/bin/sh\necho working\nexit 0\n";
    let control = Project::new();
    let plain = control.script("agent.sh", agent);
    control.write_config(&ConfigBuilder::new(&plain));
    let started = std::time::Instant::now();
    run(&control, &["serve", "--max-rounds", rounds], &[]).assert_code(0);
    let control_s = started.elapsed().as_secs_f64();
    let (control_median, control_max) = round_gaps(&control);

    let p = Project::new();
    let failing = Receiver::start(500, Duration::ZERO);
    let down = closed_port();
    let token = secret();
    let plain = p.script("agent.sh", agent);
    p.write_config(&ConfigBuilder::new(&plain).extra(
        "[notify]\nflush_s = 2\n\
         [[notify.webhooks]]\nname = \"down\"\nurl_env = \"AR_TEST_HOOK_DOWN\"\nevents = [\"round_end\"]\n\
         [[notify.webhooks]]\nname = \"five-hundred\"\nurl_env = \"AR_TEST_HOOK_500\"\nevents = [\"round_end\"]\n",
    ));
    let env = [
        (
            "AR_TEST_HOOK_DOWN",
            format!("http://127.0.0.1:{down}/hook/{token}"),
        ),
        (
            "AR_TEST_HOOK_500",
            format!("http://127.0.0.1:{}/hook/{token}", failing.port),
        ),
    ];
    let started = std::time::Instant::now();
    let out = run(&p, &["serve", "--max-rounds", rounds], &env);
    let ended_ms = now_ms();
    let notified_s = started.elapsed().as_secs_f64();
    out.assert_code(0);
    let (median, max) = round_gaps(&p);
    eprintln!(
        "notify: rounds' gap with both receivers failing: median {median:.3} s, max {max:.3} s \
         (without webhooks: median {control_median:.3} s, max {control_max:.3} s); \
         serve ran {notified_s:.1} s (without: {control_s:.1} s)"
    );
    // A round waiting on a delivery would wait out its retries (20 s and more).
    assert!(
        max < control_max + 3.0,
        "max gap {max} s vs {control_max} s"
    );
    assert!(
        median < control_median + 1.0,
        "median gap {median} s vs {control_median} s"
    );

    let failed = p.events_of("notify_failed");
    let of = |name: &str, reason: &str| -> Vec<&Value> {
        failed
            .iter()
            .filter(|e| e["webhook"] == name && e["reason"] == reason)
            .collect()
    };
    let down_failed = of("down", "failed");
    assert!(!down_failed.is_empty(), "{}", p.events_text());
    assert_eq!(down_failed[0]["attempts"], 4, "{}", down_failed[0]);
    assert_eq!(down_failed[0]["error"], "connection refused");
    assert_eq!(down_failed[0]["url_env"], "AR_TEST_HOOK_DOWN");
    assert_eq!(down_failed[0]["event_kind"], "round_end");
    let five = of("five-hundred", "failed");
    assert!(!five.is_empty(), "{}", p.events_text());
    assert_eq!(five[0]["attempts"], 4, "{}", five[0]);
    assert_eq!(five[0]["error"], "HTTP 500");
    // Whatever was still retrying at exit was given up after flush_s and recorded.
    let flushed = of("down", "exit_flush");
    assert!(!flushed.is_empty(), "{}", p.events_text());
    let last = p.events_of("max_rounds_reached");
    let stopped_ms = ts_ms(last[0]["ts"].as_str().unwrap());
    eprintln!(
        "notify: serve exited {} ms after max_rounds_reached (flush_s = 2)",
        ended_ms - stopped_ms
    );
    assert!(ended_ms - stopped_ms < 6000, "{} ms", ended_ms - stopped_ms);

    // The first round's attempts at the 500 receiver: 1 s, 4 s, 15 s apart.
    let hits = failing.hits();
    let first = &hits[0].body;
    let times: Vec<u64> = hits
        .iter()
        .filter(|h| &h.body == first)
        .map(|h| h.at_ms)
        .collect();
    assert_eq!(times.len(), 4, "{hits:?}");
    let gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    for (gap, want) in gaps.iter().zip([1000u64, 4000, 15000]) {
        assert!(*gap >= want - 50 && *gap < want + 2000, "{gaps:?}");
    }
    assert_nowhere(
        &token,
        &[p.log_dir(), p.state_dir(), p.dir().to_owned()],
        &[&out.stdout, &out.stderr],
    );
}

/// SIGTERM ends serve with `serve_stopping`, the last event: with a receiver that takes
/// 2 s to answer, the exit waits for it (`flush_s = 5`) and it is delivered; the control,
/// `flush_s = 1` and a receiver taking 4 s, gives up after a second and records it.
#[test]
fn the_exit_flush_delivers_serve_stopped_within_its_bound() {
    for (flush_s, delay_s, delivered) in [(5u64, 2u64, true), (1, 4, false)] {
        let p = Project::new();
        let receiver = Receiver::start(200, Duration::from_secs(delay_s));
        let agent = p.script("agent.sh", "#!/bin/sh\nsleep 1\n");
        p.write_config(&ConfigBuilder::new(&agent).extra(&format!(
            "[notify]\nflush_s = {flush_s}\n\
             [[notify.webhooks]]\nurl_env = \"AR_TEST_HOOK\"\n"
        )));
        let mut cmd = p.command(&["serve"]);
        for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"] {
            cmd.env_remove(var).env_remove(var.to_ascii_lowercase());
        }
        cmd.env(
            "AR_TEST_HOOK",
            format!("http://127.0.0.1:{}/hook", receiver.port),
        );
        let running = p.spawn_with(cmd);
        p.wait_for_event("agent_spawn");
        running.signal(libc::SIGTERM);
        let out = running.wait(Duration::from_secs(60));
        let ended_ms = now_ms();
        out.assert_code(0);
        let stopping = p.events_of("serve_stopping");
        assert_eq!(stopping.len(), 1, "{}", p.events_text());
        assert_eq!(stopping[0]["reason"], "signal");
        let hits = receiver.hits();
        assert_eq!(hits.len(), 1, "{hits:?}");
        let body: Value = serde_json::from_str(&hits[0].body).unwrap();
        assert_eq!(body["event"], "serve_stopping", "{body}");
        // The exit waited for the answer, or gave up at flush_s.
        let answered_ms = hits[0].at_ms + delay_s * 1000;
        let failed = p.events_of("notify_failed");
        if delivered {
            assert!(failed.is_empty(), "{}", p.events_text());
            assert!(ended_ms >= answered_ms, "exit before the answer");
        } else {
            assert_eq!(failed.len(), 1, "{}", p.events_text());
            assert_eq!(failed[0]["reason"], "exit_flush", "{}", failed[0]);
            assert_eq!(failed[0]["event_kind"], "serve_stopping");
            assert!(ended_ms < answered_ms, "the exit waited past flush_s");
        }
    }
}

/// Bad entries are refused at start (exit 78) naming the key; an unset `url_env` names
/// the variable, and doctor says so; a literal `url` is warned about, its token shown
/// nowhere.
#[test]
fn bad_webhooks_are_refused_naming_the_key_and_doctor_tells_where_urls_come_from() {
    let p = Project::new();
    let agent = p.script("agent.sh", "#!/bin/sh\nexit 0\n");
    let token = secret();
    let literal = format!("http://127.0.0.1:{}/hook/{token}", closed_port());
    for (table, key, words) in [
        (
            format!("[[notify.webhooks]]\nurl_env = \"AR_TEST_HOOK\"\nurl = \"{literal}\"\n"),
            "notify.webhooks[0].url",
            "not both",
        ),
        (
            "[[notify.webhooks]]\nname = \"x\"\n".to_owned(),
            "notify.webhooks[0].url_env",
            "environment variable",
        ),
        (
            "[[notify.webhooks]]\nurl_env = \"AR_TEST_HOOK\"\nevents = [\"crash_lop\"]\n"
                .to_owned(),
            "notify.webhooks[0].events",
            "did you mean \"crash_loop\"",
        ),
        (
            "[[notify.webhooks]]\nurl_env = \"AR_TEST_HOOK\"\nformat = \"slack\"\n".to_owned(),
            "notify.webhooks[0].format",
            "expected \"event\" or \"chat\"",
        ),
        (
            "[[notify.webhooks]]\nurl = \"ftp://h/x\"\n".to_owned(),
            "notify.webhooks[0].url",
            "http:// or https://",
        ),
        (
            "[[notify.webhooks]]\nurl_env = \"AR_TEST_UNSET_HOOK\"\n".to_owned(),
            "notify.webhooks[0].url_env",
            "AR_TEST_UNSET_HOOK is not set",
        ),
    ] {
        p.write_config(&ConfigBuilder::new(&agent).extra(&table));
        let out = run(
            &p,
            &["serve", "--max-rounds", "1"],
            &[("AR_TEST_HOOK", format!("http://127.0.0.1:1/{token}"))],
        );
        out.assert_code(78);
        assert!(out.stderr.contains(key), "{table}: {out}");
        assert!(out.stderr.contains(words), "{table}: {out}");
        assert!(!out.stderr.contains(&token), "{out}");
    }
    assert!(p.events_of("round_start").is_empty());

    // doctor: the unset variable fails its check; a literal url is warned about.
    p.write_config(&ConfigBuilder::new(&agent).extra(&format!(
        "[[notify.webhooks]]\nname = \"pager\"\nurl_env = \"AR_TEST_UNSET_HOOK\"\n\
         [[notify.webhooks]]\nname = \"open\"\nurl = \"{literal}\"\nformat = \"chat\"\n"
    )));
    let doctor = run(&p, &["doctor", "--json"], &[]);
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    let pager = agent_runner_e2e::doctor_check(&report, "notify:pager");
    assert_eq!(pager["ok"], false, "{pager}");
    assert!(
        pager["reason"]
            .as_str()
            .unwrap()
            .contains("AR_TEST_UNSET_HOOK is not set"),
        "{pager}"
    );
    let open = agent_runner_e2e::doctor_check(&report, "notify:open");
    assert_eq!(open["ok"], true, "{open}");
    let warned = report["warnings"].as_array().unwrap().iter().any(|w| {
        w["name"] == "notify:open" && w["how_to_fix"].as_str().unwrap().contains("url_env")
    });
    assert!(warned, "{}", report["warnings"]);
    assert!(!doctor.stdout.contains(&token), "{doctor}");
    let human = run(&p, &["doctor"], &[]);
    assert!(
        !human.stdout.contains(&token) && !human.stderr.contains(&token),
        "{human}"
    );
}
