//! A hostile agent against the key broker (docs/security.md, "The key broker"), under
//! `mode = "require"`: it asks the broker to send a `TRACE` (and a `TRACK`) with its
//! placeholder. An upstream that answers `TRACE` echoes the request it received as its
//! body (HTTP/1.1's definition; Apache httpd does so unless `TraceEnable off`), and the
//! request it received carries the real key the broker added: the broker must refuse
//! those methods. The upstream here is a server of the test on 127.0.0.1 that does just
//! that, the supervisor's `ANTHROPIC_BASE_URL`.
//!
//! Control: a `POST` through the same broker reaches the upstream with the real key (so a
//! `TRACE` forwarded would have been echoed with it); before the fix the agent's `TRACE`
//! answer held the key.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// The agent: a `TRACE`, a `TRACK` and a `POST` to its base URL with its placeholder, each
/// answer to the round log.
const AGENT: &str = r#"#!/bin/sh
for m in TRACE TRACK POST; do
  echo "== $m"
  curl -s -m 20 -X $m -H "x-api-key: $ANTHROPIC_API_KEY" "$ANTHROPIC_BASE_URL/v1/messages"
  echo
done
echo done
"#;

/// Serves `listener`: a `TRACE` or `TRACK` is answered with the request head it received,
/// anything else with `ok`. The heads received are kept.
fn echo_upstream(listener: TcpListener) -> Arc<Mutex<Vec<String>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && head.len() < 65536 {
                match s.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            kept.lock().unwrap().push(head.clone());
            let body = if head.starts_with("TRACE ") || head.starts_with("TRACK ") {
                head
            } else {
                "ok".to_owned()
            };
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: message/http\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    seen
}

fn trace(operator: Operator) {
    let key = format!(
        "sk-ant-real-{}",
        std::fs::read_to_string("/proc/sys/kernel/random/uuid")
            .unwrap()
            .trim()
            .replace('-', "")
    );
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let upstream = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let seen = echo_upstream(listener);
    let p = Project::new_as(operator);
    let agent = p.script("agent/trace.sh", AGENT);
    let text = ConfigBuilder::new(&agent)
        .dirty_action("ignore")
        .extra("[agent.sandbox]\nmode = \"require\"\n")
        .render()
        .replacen("[agent]\n", "[agent]\ncli = \"claude\"\n", 1);
    p.write_config_text(&text);
    let out = p.run_env(
        &["round"],
        &[
            ("ANTHROPIC_API_KEY", key.as_str()),
            ("ANTHROPIC_BASE_URL", upstream.as_str()),
        ],
    );
    let events = p.events_text();
    assert_eq!(out.code(), 0, "{out}\n{events}");
    let log = std::fs::read_to_string(&p.round_logs()[0]).unwrap();
    assert!(log.contains("done"), "{log}");
    // Control: the POST reached the upstream with the real key.
    let heads = seen.lock().unwrap().clone();
    assert!(
        heads
            .iter()
            .any(|h| h.starts_with("POST ") && h.contains(&format!("x-api-key: {key}"))),
        "{heads:?}\n{log}\n{events}"
    );
    // The agent never saw the key, and no TRACE or TRACK left the broker.
    assert!(!log.contains(&key), "{log}");
    assert!(
        !heads
            .iter()
            .any(|h| h.starts_with("TRACE ") || h.starts_with("TRACK ")),
        "{heads:?}"
    );
}

#[test]
fn a_trace_through_the_key_broker_never_echoes_the_key_as_root() {
    trace(Operator::Root);
}

#[test]
fn a_trace_through_the_key_broker_never_echoes_the_key_as_unprivileged_user() {
    trace(Operator::Unprivileged);
}
