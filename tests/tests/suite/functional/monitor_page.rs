//! `monitor --mode http` in a real headless Chromium (the Debian `chromium` package, driven
//! over its DevTools protocol): the page loads, a round started afterwards reaches it as a
//! live server-sent event, and the screenshot — `target/e2e-screenshots/monitor-page.png`,
//! kept by CI with the test output — shows that round in progress. Also: `/api/state` is
//! the peek document, `/metrics` parses with a Prometheus text parser, and any address
//! but loopback needs a token. The last round's refused connects are on the page with
//! their fix (issue 41 item 1).

use crate::operator_common;

use agent_runner_e2e::serde_json::{self, json, Value};
use agent_runner_e2e::{pause_host_bin, wait_until, workspace_root, HostSpec, Project, Running};
use base64::Engine;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `GET path` on `base` (`http://127.0.0.1:PORT/`): (status, body).
fn http_get(base: &str, path: &str, bearer: Option<&str>) -> (u16, String) {
    let addr = base
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let mut stream = TcpStream::connect(&addr).expect("connect to the page");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let auth = bearer.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    // Chromium's DevTools server keeps the connection open: read by Content-Length.
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut length = None;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let mut body = Vec::new();
    match length {
        Some(n) => {
            body.resize(n, 0);
            reader.read_exact(&mut body).unwrap();
        }
        None => {
            reader.read_to_end(&mut body).unwrap();
        }
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn start_monitor(p: &Project, extra: &[&str], env: &[(&str, &str)]) -> (Running, String) {
    let mut args = vec!["monitor", "--mode", "http", "--port", "0"];
    args.extend_from_slice(extra);
    let mut cmd = p.command(&args);
    cmd.envs(env.iter().copied());
    let mut monitor = p.spawn_with(cmd);
    let url = wait_until("the page to listen", Duration::from_secs(20), || {
        assert!(
            !monitor.has_exited(),
            "monitor exited: {}",
            monitor.stderr_so_far()
        );
        monitor.stdout_so_far().lines().next().map(str::to_owned)
    });
    (monitor, url)
}

/// Headless Chromium with a fresh profile, killed when dropped.
struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One page target over the DevTools protocol (JSON over a WebSocket).
struct Page {
    socket: tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    next_id: u64,
}

impl Page {
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.socket
            .send(tungstenite::Message::text(
                json!({"id": id, "method": method, "params": params}).to_string(),
            ))
            .expect("send to chromium");
        loop {
            let message = self.socket.read().expect("read from chromium");
            let Ok(text) = message.to_text() else {
                continue;
            };
            let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            if value["id"] == id {
                assert!(value.get("error").is_none(), "{method}: {value}");
                return value["result"].clone();
            }
        }
    }

    /// Evaluates `expression` in the page; its value.
    fn eval(&mut self, expression: &str) -> Value {
        self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        )["result"]["value"]
            .clone()
    }
}

fn open_in_chromium(url: &str) -> (Browser, Page) {
    let chromium = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("Chromium is installed (.ci/run installs the Debian `chromium` package)");
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,1000",
            "--remote-debugging-port=0",
            "about:blank",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/…"
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let port = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "chromium exited before listening"
        );
        if let Some(rest) = line
            .trim()
            .strip_prefix("DevTools listening on ws://127.0.0.1:")
        {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let browser = Browser {
        child,
        _profile: profile,
    };
    let targets = wait_until("a page target", Duration::from_secs(20), || {
        let (_, body) = http_get(&format!("http://127.0.0.1:{port}/"), "/json/list", None);
        let targets: Value = serde_json::from_str(&body).ok()?;
        targets
            .as_array()?
            .iter()
            .find(|t| t["type"] == "page")
            .cloned()
    });
    let ws = targets["webSocketDebuggerUrl"].as_str().unwrap().to_owned();
    let (socket, _) = tungstenite::connect(ws.as_str()).expect("connect to the page target");
    let mut page = Page { socket, next_id: 0 };
    page.call("Page.enable", json!({}));
    page.call("Page.navigate", json!({"url": url}));
    (browser, page)
}

fn screenshot_path() -> PathBuf {
    workspace_root().join("target/e2e-screenshots/monitor-page.png")
}

fn save_screenshot(page: &mut Page, path: &Path) {
    let shot = page.call("Page.captureScreenshot", json!({"format": "png"}));
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, png).unwrap();
}

#[test]
fn the_page_shows_a_live_round_in_chromium() {
    let p = Project::new();
    // A spawn hook that defers the first attempt (the pause file exists until the test
    // removes it): a hook call booked in service.json before the round runs, for the
    // hook call duration histogram of /metrics.
    p.write_config(
        &p.config()
            .dirty_action("ignore")
            .round_budget_s(120)
            .agent_env("DEMO_AGENT_SLEEP", "60")
            .spawn_override_allow(&["pause_file"])
            .host(HostSpec::new("pause", pause_host_bin()).config(json!({"defer_s": 1}))),
    );
    p.write(".agent-runner-pause", "");
    let (monitor, url) = start_monitor(&p, &[], &[]);
    let (_browser, mut page) = open_in_chromium(&url);
    wait_until(
        "the page to connect its event stream",
        Duration::from_secs(30),
        || (page.eval("document.getElementById('connection').textContent") == "live").then_some(()),
    );
    assert_eq!(
        page.eval("document.querySelectorAll('.events li.new').length"),
        0
    );

    // Started after the page loaded: the round reaches it only through the live stream.
    let _serve = p.spawn(&["serve", "--max-rounds", "1"]);
    p.wait_for_event("round_deferred");
    std::fs::remove_file(p.dir().join(".agent-runner-pause")).unwrap();
    let line = wait_until(
        "a live event and the round in progress",
        Duration::from_secs(60),
        || {
            let spawned =
                page.eval("!!document.querySelector('.events li.new[data-kind=agent_spawn]')");
            let line = page.eval("document.querySelector('.round-line').textContent");
            (spawned == true && line.as_str()?.starts_with("Round 1: ")).then_some(line)
        },
    );
    assert!(line.as_str().unwrap().ends_with("of 2m00s"), "{line}");
    assert_eq!(
        page.eval("document.querySelector('.timeline li').className"),
        "o-running"
    );
    // Let the elapsed time tick once so the screenshot shows progress.
    wait_until("the elapsed time to tick", Duration::from_secs(10), || {
        let now = page.eval("document.querySelector('.round-line').textContent");
        (now != line).then_some(())
    });
    save_screenshot(&mut page, &screenshot_path());

    let (status, body) = http_get(&url, "/api/state", None);
    assert_eq!(status, 200);
    let state: Value = serde_json::from_str(&body).unwrap();
    operator_common::assert_schema("monitor-state.schema.json", &state);
    assert_eq!(state["current_round"]["round_num"], 1, "{state}");
    assert_eq!(state["service"]["state"], "running", "{state}");
    assert!(
        state["plugins"]["sandbox"]["achieved_tier"].is_string(),
        "{state}"
    );
    assert_eq!(state["monitor"]["round_budget_s"], 120);
    // Issue 27, item 10: one filesystem, one `disk_used_pct` in every key.
    assert_eq!(
        state["system"]["disk_used_pct"],
        state["monitor"]["host_health"]["reading"]["disk_used_pct"],
        "{state}"
    );

    let (status, text) = http_get(&url, "/metrics", None);
    assert_eq!(status, 200);
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .expect("/metrics parses as the Prometheus text format");
    let sample = |name: &str| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name)
            .unwrap_or_else(|| panic!("{name} missing:\n{text}"))
    };
    assert!(
        matches!(sample("agent_runner_up").value, prometheus_parse::Value::Gauge(v) if v == 1.0)
    );
    assert!(
        matches!(sample("agent_runner_round_in_progress").value, prometheus_parse::Value::Gauge(v) if v == 1.0)
    );
    assert!(
        matches!(sample("agent_runner_last_event_timestamp_seconds").value, prometheus_parse::Value::Gauge(v) if v > 1.7e9)
    );
    assert!(
        scrape
            .samples
            .iter()
            .any(|s| s.metric == "agent_runner_round_duration_seconds"),
        "{text}"
    );
    assert!(!scrape.docs["agent_runner_rounds_total"].is_empty());
    // The spawn hook's calls, by family, as a histogram: cumulative buckets ending in
    // `+Inf` = `_count`, a `_sum`.
    let spawn_calls: Vec<&prometheus_parse::Sample> = scrape
        .samples
        .iter()
        .filter(|s| {
            s.metric == "agent_runner_hook_call_duration_seconds"
                && s.labels.get("family") == Some("spawn_hook")
        })
        .collect();
    let prometheus_parse::Value::Histogram(buckets) = &spawn_calls
        .first()
        .unwrap_or_else(|| panic!("no spawn_hook call histogram:\n{text}"))
        .value
    else {
        panic!("agent_runner_hook_call_duration_seconds is not a histogram:\n{text}");
    };
    let last = buckets.last().unwrap();
    assert!(last.less_than.is_infinite() && last.count >= 1.0, "{text}");
    assert!(
        buckets.windows(2).all(|w| w[0].count <= w[1].count),
        "buckets not cumulative:\n{text}"
    );
    assert!(
        text.contains("agent_runner_hook_call_duration_seconds_count{project=")
            && text.contains("agent_runner_hook_call_duration_seconds_sum{project="),
        "{text}"
    );

    // Read-only: nothing but GET.
    let mut stream =
        TcpStream::connect(url.trim_start_matches("http://").trim_end_matches('/')).unwrap();
    write!(
        stream,
        "POST /api/state HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 405"), "{response}");
    drop(monitor);
}

/// A round whose agent the egress proxy refused: the page's "Last rounds" names the
/// refusal and the line that opens it, as peek and the event do.
#[test]
fn the_page_names_what_the_agent_sandbox_refused_in_chromium() {
    let p = Project::new();
    let agent = p.script(
        "agent/refused.sh",
        "#!/bin/sh\ncurl -s -o /dev/null --max-time 10 http://127.0.0.9:4010/\nexit 0\n",
    );
    let config = agent_runner_e2e::ConfigBuilder::new(&agent)
        .extra("[agent.sandbox]\nallow_hosts = [\"api.example.invalid\"]\n");
    p.write_config(&config);
    p.run(&["round"]).assert_code(0);
    assert_eq!(p.events_of("agent_egress_refused").len(), 1);
    let (monitor, url) = start_monitor(&p, &[], &[]);
    let (_browser, mut page) = open_in_chromium(&url);
    let shown = wait_until("the refusal on the page", Duration::from_secs(30), || {
        let text = page.eval(
            "[...document.querySelectorAll('.refused li')].map(l => l.textContent).join('|')",
        );
        text.as_str().filter(|t| !t.is_empty()).map(str::to_owned)
    });
    assert_eq!(
        shown,
        "R1: egress to 127.0.0.9:4010 refused by the agent sandbox: add \"127.0.0.9:4010\" to [agent.sandbox] allow_hosts"
    );
    let (_, body) = http_get(&url, "/api/state", None);
    let state: Value = serde_json::from_str(&body).unwrap();
    operator_common::assert_schema("monitor-state.schema.json", &state);
    drop(monitor);
}

#[test]
fn other_addresses_need_a_token() {
    let p = Project::new();
    p.write_config(&p.config());
    let out = p.run(&[
        "monitor", "--mode", "http", "--bind", "0.0.0.0", "--port", "0",
    ]);
    out.assert_code(2);
    assert!(out.stderr.contains("token"), "{out}");

    let (_monitor, url) = start_monitor(
        &p,
        &["--bind", "0.0.0.0"],
        &[("AGENT_RUNNER_MONITOR_TOKEN", "s3cret")],
    );
    let port = url.rsplit(':').next().unwrap().trim_end_matches('/');
    let local = format!("http://127.0.0.1:{port}/");
    assert_eq!(http_get(&local, "/api/state", None).0, 401);
    assert_eq!(http_get(&local, "/api/state", Some("wrong")).0, 401);
    assert_eq!(http_get(&local, "/api/state", Some("s3cret")).0, 200);
    assert_eq!(http_get(&local, "/metrics?token=s3cret", None).0, 200);
}

#[test]
fn healthz_says_down_ok_and_wedged_without_a_token() {
    let p = Project::new();
    p.write_config(&p.config().restart_delay_s(1));
    let (_monitor, url) = start_monitor(
        &p,
        &["--bind", "0.0.0.0"],
        &[("AGENT_RUNNER_MONITOR_TOKEN", "s3cret")],
    );
    let port = url.rsplit(':').next().unwrap().trim_end_matches('/');
    let local = format!("http://127.0.0.1:{port}/");
    let health = || {
        let (code, body) = http_get(&local, "/healthz", None);
        let doc: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        (code, doc)
    };
    let becomes = |status: &str, code: u16| {
        wait_until(
            &format!("/healthz to say {status}"),
            Duration::from_secs(30),
            || {
                let (c, doc) = health();
                (doc["status"] == status).then(|| {
                    assert_eq!(c, code, "{doc}");
                    doc
                })
            },
        )
    };
    // Open without the token the other routes need.
    assert_eq!(http_get(&local, "/metrics", None).0, 401);
    let down = becomes("down", 503);
    assert!(down["pid"].is_null(), "{down}");

    let mut serve = p.spawn(&["serve"]);
    let ok = becomes("ok", 200);
    assert_eq!(ok["pid"], serve.pid(), "{ok}");
    assert!(ok["state"].is_string(), "{ok}");

    // A supervisor that holds the lock but does not answer (stopped by SIGSTOP) is wedged.
    serve.signal(libc::SIGSTOP);
    let wedged = becomes("wedged", 503);
    assert_eq!(wedged["pid"], serve.pid(), "{wedged}");
    assert!(
        wedged["reason"]
            .as_str()
            .unwrap_or("")
            .contains("control socket does not answer"),
        "{wedged}"
    );
    serve.signal(libc::SIGCONT);
    becomes("ok", 200);

    serve.signal(libc::SIGTERM);
    wait_until("serve to stop", Duration::from_secs(60), || {
        serve.has_exited().then_some(())
    });
    becomes("down", 503);
}

#[test]
fn sigterm_ends_the_page_while_a_client_holds_the_event_stream() {
    // A browser tab keeps `/api/events` open for ever; `systemctl stop` sends SIGTERM and
    // must not wait for the tab to close (issue 27 item 10).
    let p = Project::new();
    p.write_config(&p.config());
    let (monitor, url) = start_monitor(&p, &[], &[]);
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let stream = TcpStream::connect(&addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        &stream,
        "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line.trim_end().is_empty() {
            break;
        }
        head.push_str(&line);
    }
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/event-stream"), "{head}");

    monitor.signal(libc::SIGTERM);
    let out = monitor.wait(Duration::from_secs(10));
    out.assert_code(0);
    // The server ended the stream: the client reads to its end instead of waiting.
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).expect("the stream ends");
}

#[test]
fn a_host_added_to_the_config_after_the_page_started_shows() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("ignore"));
    let (monitor, url) = start_monitor(&p, &[], &[]);
    let host_names = || -> Vec<String> {
        let (status, body) = http_get(&url, "/api/state", None);
        assert_eq!(status, 200, "{body}");
        let doc: Value = serde_json::from_str(&body).unwrap();
        doc["hosts"]
            .as_array()
            .unwrap_or_else(|| panic!("no hosts in {doc}"))
            .iter()
            .map(|h| h["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!host_names().contains(&"later".to_owned()));

    p.write_config(
        &p.config()
            .dirty_action("ignore")
            .host(HostSpec::new("later", pause_host_bin())),
    );
    assert!(host_names().contains(&"later".to_owned()));

    // A config that no longer loads keeps the last good one on the page.
    std::fs::write(p.config_path(), "schema_version = [not toml").unwrap();
    assert!(host_names().contains(&"later".to_owned()));
    drop(monitor);
}

/// A `claude` script billing $0.40 a round: its result's `total_cost_usd` is the session's
/// running total (as the real claude's is under `--resume`; tests/tests/suite/functional/budget.rs), its
/// usage the round's own: 1000 input, 100 output tokens.
fn billing_claude(p: &Project) -> PathBuf {
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
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// The value of the sample `name` whose labels include `labels`, from a scrape of `url`.
fn scraped(url: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let (status, text) = http_get(url, "/metrics", None);
    assert_eq!(status, 200, "{text}");
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .expect("/metrics parses as the Prometheus text format");
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => panic!("{name} is not a single value:\n{text}"),
        })
}

/// `[budget] total_usd = 1.0` at $0.40 a round: serve ends after three rounds (exit 80).
/// `/metrics` counts the cost and tokens from the record and shows each cap and its
/// spend; a restart of the monitor and of serve changes none of it; a `budget reset`
/// starts the spend gauges again but not the counters. The page shows each cap against
/// its spend in peek's words and a chart of cost, tokens and time with a point per round
/// (headless Chromium; screenshot `target/e2e-screenshots/monitor-budget.png`).
#[test]
fn spend_against_the_caps_on_metrics_and_the_page_in_chromium() {
    let p = Project::new();
    let agent = billing_claude(&p);
    p.write_config(
        &agent_runner_e2e::ConfigBuilder::new(&agent)
            .agent_env(
                "STATE",
                &p.tmp_dir().join("bin/state").display().to_string(),
            )
            .extra("[budget]\ntotal_usd = 1.0\nround_usd = 0.3\ndaily_tokens = 100000\n"),
    );
    p.run(&["serve", "--max-rounds", "10"]).assert_code(80);
    assert_eq!(
        p.events_of("agent_usage_recorded").len(),
        3,
        "{}",
        p.events_text()
    );

    let (monitor, url) = start_monitor(&p, &[], &[]);
    let near = |got: Option<f64>, want: f64, what: &str| {
        let got = got.unwrap_or_else(|| panic!("{what} missing"));
        assert!((got - want).abs() < 1e-9, "{what}: {got}, expected {want}");
    };
    let check = |url: &str, cost_total: f64, spent_total: f64| {
        near(
            scraped(url, "agent_runner_cost_usd_total", &[]),
            cost_total,
            "cost",
        );
        let rounds = (cost_total / 0.4).round();
        near(
            scraped(url, "agent_runner_tokens_total", &[("type", "input")]),
            1000.0 * rounds,
            "input tokens",
        );
        near(
            scraped(url, "agent_runner_tokens_total", &[("type", "output")]),
            100.0 * rounds,
            "output tokens",
        );
        near(
            scraped(url, "agent_runner_tokens_total", &[("type", "cache_write")]),
            0.0,
            "cache_write tokens",
        );
        near(
            scraped(url, "agent_runner_budget_cap_usd", &[("scope", "total")]),
            1.0,
            "total cap",
        );
        near(
            scraped(url, "agent_runner_budget_cap_usd", &[("scope", "round")]),
            0.3,
            "round cap",
        );
        assert_eq!(
            scraped(url, "agent_runner_budget_cap_usd", &[("scope", "daily")]),
            None,
            "no daily_usd set"
        );
        near(
            scraped(url, "agent_runner_budget_cap_tokens", &[("scope", "daily")]),
            100_000.0,
            "daily tokens cap",
        );
        near(
            scraped(url, "agent_runner_budget_spent_usd", &[("scope", "total")]),
            spent_total,
            "spent total",
        );
        near(
            scraped(url, "agent_runner_budget_spent_usd", &[("scope", "round")]),
            0.4,
            "last round",
        );
    };
    check(&url, 1.2, 1.2);
    near(
        scraped(
            &url,
            "agent_runner_budget_spent_tokens",
            &[("scope", "daily")],
        ),
        3300.0,
        "today's tokens",
    );

    // The page: each cap against its spend, as peek says it, and the chart.
    let (_browser, mut page) = open_in_chromium(&url);
    let caps = wait_until("the budget on the page", Duration::from_secs(30), || {
        let caps =
            page.eval("[...document.querySelectorAll('.caps .cap-text')].map(c => c.textContent)");
        caps.as_array().filter(|c| c.len() == 3).cloned()
    });
    let caps: Vec<&str> = caps.iter().map(|c| c.as_str().unwrap()).collect();
    assert_eq!(
        caps,
        [
            "total_usd $1.20 of $1.00",
            "daily_tokens 3300 tokens of 100000 tokens",
            "round_usd $0.40 of $0.30"
        ]
    );
    let peek = p.run(&["peek"]);
    let line = peek
        .stdout
        .lines()
        .find(|l| l.starts_with("budget"))
        .unwrap_or_else(|| panic!("{peek}"));
    for cap in &caps {
        assert!(
            line.contains(cap),
            "peek's {line:?} lacks the page's {cap:?}"
        );
    }
    assert_eq!(
        page.eval("document.querySelector('.budget-state').textContent"),
        "exhausted"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('.caps .fill.over').length"),
        2,
        "total_usd and round_usd are passed"
    );
    for series in ["cost", "tokens", "duration"] {
        let points = page.eval(&format!(
            "document.querySelectorAll('.chart[data-series={series}] circle.pt').length"
        ));
        assert_eq!(points, 3, "{series}: a point per round");
    }
    let tips = page.eval(
        "[...document.querySelectorAll('.chart[data-series=cost] circle.pt title')].map(t => t.textContent).join('|')",
    );
    assert_eq!(tips, "round 1: $0.400|round 2: $0.400|round 3: $0.400");
    assert_eq!(
        page.eval("document.querySelectorAll('.chart[data-series=cost] line.cap').length"),
        1,
        "round_usd as a line on the cost chart"
    );
    save_screenshot(
        &mut page,
        &workspace_root().join("target/e2e-screenshots/monitor-budget.png"),
    );
    let (_, body) = http_get(&url, "/api/state", None);
    let state: Value = serde_json::from_str(&body).unwrap();
    operator_common::assert_schema("monitor-state.schema.json", &state);
    let chart = state["monitor"]["rounds_chart"].as_array().unwrap();
    assert_eq!(chart.len(), 3, "{state}");
    assert_eq!(chart[2]["tokens"], 1100, "{state}");
    assert!(chart[2]["duration_s"].as_f64().is_some(), "{state}");

    // A restart of both: the totals are the record's.
    drop(monitor);
    p.run(&["serve", "--max-rounds", "10"]).assert_code(80);
    let (monitor, url) = start_monitor(&p, &[], &[]);
    check(&url, 1.2, 1.2);

    // A reset starts the caps' count again, not the counters; a round after it adds to both.
    p.run(&["budget", "reset"]).assert_code(0);
    check(&url, 1.2, 0.0);
    p.run(&["serve", "--max-rounds", "1"]).assert_code(0);
    check(&url, 1.6, 0.4);
    drop(monitor);
}

/// A hostile agent's strings on the page: the model name a `claude` script reports is
/// markup (an `<img>` whose error handler, and a `<script>`, would set `window.pwned`). The
/// page shows it as text in the event list and runs none of it (every agent-reached field
/// is set with `textContent`, and the page's policy allows no inline script). Control: the
/// payload did reach the page, as the event's text.
#[test]
fn an_agent_s_markup_stays_text_on_the_page_in_chromium() {
    const PAYLOAD: &str = "<img src=x onerror=window.pwned=1><script>window.pwned=2</script>";
    let p = Project::new();
    let agent = p.script(
        "agent/claude",
        &format!(
            "#!/bin/sh\n\
             echo '{{\"type\":\"system\",\"subtype\":\"init\"}}'\n\
             echo '{{\"type\":\"assistant\",\"message\":{{\"model\":\"{PAYLOAD}\",\"content\":[{{\"type\":\"text\",\"text\":\"done\"}}]}}}}'\n\
             echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"total_cost_usd\":0.1,\"usage\":{{\"input_tokens\":10,\"output_tokens\":10}}}}'\n"
        ),
    );
    p.write_config(&agent_runner_e2e::ConfigBuilder::new(&agent));
    p.run(&["round"]).assert_code(0);
    let usage = p.events_of("agent_usage_recorded");
    assert_eq!(usage.len(), 1, "{}", p.events_text());
    assert_eq!(usage[0]["model"], PAYLOAD, "{}", p.events_text());
    let (monitor, url) = start_monitor(&p, &[], &[]);
    let (_browser, mut page) = open_in_chromium(&url);
    let shown = wait_until(
        "the usage event on the page",
        Duration::from_secs(30),
        || {
            let text = page.eval(
                "[...document.querySelectorAll('.events li')].map(l => l.textContent).join('|')",
            );
            text.as_str()
                .filter(|t| t.contains("agent_usage_recorded"))
                .map(str::to_owned)
        },
    );
    assert!(shown.contains(&format!("model={PAYLOAD}")), "{shown}");
    assert_eq!(
        page.eval("document.querySelectorAll('img, main script').length"),
        0
    );
    assert_eq!(page.eval("typeof window.pwned"), "undefined");
    drop(monitor);
}
