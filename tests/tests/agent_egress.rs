//! Egress by host name (issue 29, docs/security.md "Egress by host name"): with
//! `[agent.sandbox] allow_hosts`, a real `agent-runner round` runs the agent in a network
//! namespace of its own whose only way out is the supervisor's filtering proxy. The agent
//! here is a shell script driving the real `curl`; the upstream is a small HTTP server of
//! this test on `127.0.0.2` (all traffic stays on this machine). Each case runs with the
//! supervisor run by root and by the unprivileged user `ar-e2e`.

use agent_runner_e2e::{Operator, Project};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A tiny upstream on `127.0.0.2:<port>`: answers every request `200 upstream-ok` and
/// counts the requests it served.
struct Upstream {
    port: u16,
    served: Arc<AtomicUsize>,
}

impl Upstream {
    fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
        let port = listener.local_addr().unwrap().port();
        let served = Arc::new(AtomicUsize::new(0));
        let count = served.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let count = count.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut line = String::new();
                    // The request line and headers, up to the blank line.
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                        if line == "\r\n" {
                            break;
                        }
                        line.clear();
                    }
                    count.fetch_add(1, Ordering::SeqCst);
                    let mut conn = conn;
                    let _ = conn.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nupstream-ok\n",
                    );
                });
            }
        });
        Upstream { port, served }
    }
}

/// The agent: each attempt prints `<name> <curl's http code> <curl's exit code>`, then
/// its network namespace.
const AGENT: &str = r#"#!/bin/sh
try() { name=$1; shift; printf '%s %s\n' "$name" "$(curl -s -o /dev/null --max-time 10 -w '%{http_code}/%{http_connect} %{exitcode}' "$@")"; }
try allowed_http "http://127.0.0.2:$UP/plain"
try allowed_connect -p "http://127.0.0.2:$UP/tunnel"
try denied_http "http://denied.invalid:$UP/"
try denied_connect -p "http://127.0.0.3:$UP/"
try direct_loopback --noproxy '*' "http://127.0.0.2:$UP/direct"
# Only inside the namespace, where no route exists: nothing leaves this machine.
[ -n "$HTTPS_PROXY" ] && try direct_outside --noproxy '*' "http://192.0.2.1:$UP/direct"
[ -n "$HTTPS_PROXY" ] && printf 'udp_outside %s\n' "$(bash -c 'echo x >/dev/udp/192.0.2.1/53' 2>&1 | grep -o 'Network is unreachable')"
printf 'netns %s\n' "$(readlink /proc/self/ns/net)"
printf 'proxy %s\n' "$HTTPS_PROXY"
"#;

fn egress_round(operator: Operator) {
    let up = Upstream::start();
    let p = Project::new_as(operator);
    let agent = p.script("agent/egress-agent.sh", AGENT);
    let config = p
        .config()
        .agent_env("UP", &up.port.to_string())
        .extra(&format!(
            "[agent.sandbox]\nallow_hosts = [\"127.0.0.2:{}\", \"api.example.invalid\"]\n",
            up.port
        ))
        .render()
        .replace(
            &format!(
                "command = [{}]",
                agent_runner_e2e::toml_string(&p.agent_path().display().to_string())
            ),
            &format!(
                "command = [{}]",
                agent_runner_e2e::toml_string(&agent.display().to_string())
            ),
        );
    p.write_config_text(&config);
    // doctor's probe of the namespace passes for this operator.
    let out = p.run(&["doctor", "--json"]);
    let report: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    let check = agent_runner_e2e::doctor_check(&report, "agent_preconditions");
    assert_eq!(check["ok"], true, "{check}");
    let out = p.run(&["round"]);
    let all = p.events_text();
    out.assert_code(0);
    let log = p
        .round_logs()
        .first()
        .map(|l| std::fs::read_to_string(l).unwrap())
        .unwrap_or_else(|| panic!("no round log\n{all}"));
    let result = |name: &str| -> String {
        log.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} line in the round log:\n{log}\n{all}"))
            .to_owned()
    };
    // Through the proxy to a listed host: plain HTTP, and a CONNECT tunnel (200 from the
    // proxy, then the upstream's 200 inside).
    assert_eq!(result("allowed_http"), "200/000 0", "{log}");
    assert_eq!(result("allowed_connect"), "200/200 0", "{log}");
    // Not listed: 403 from the proxy (curl's exit 56: the tunnel was refused).
    assert_eq!(result("denied_http"), "403/000 0", "{log}");
    assert_eq!(result("denied_connect"), "000/403 56", "{log}");
    // Around the proxy: the namespace's own loopback has nothing there (7: could not
    // connect), and nothing outside it is routed (7 as well: network unreachable).
    assert_eq!(result("direct_loopback"), "000/000 7", "{log}");
    assert_eq!(result("direct_outside"), "000/000 7", "{log}");
    // Nor does UDP (DNS to an outside resolver included) leave the namespace.
    assert_eq!(result("udp_outside"), "Network is unreachable", "{log}");
    assert_eq!(result("proxy"), "http://127.0.0.1:3128", "{log}");
    let own = std::fs::read_link("/proc/self/ns/net").unwrap();
    let netns = result("netns");
    assert_ne!(netns, own.display().to_string(), "{log}");
    // Nothing in the agent's namespace (the forwarder included) outlives the round.
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read_link(e.path().join("ns/net"))
                .is_ok_and(|l| l.display().to_string() == netns)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "processes left in {netns}: {left:?}");
    // Exactly the two allowed requests reached the upstream.
    assert_eq!(up.served.load(Ordering::SeqCst), 2, "{log}");
    // Each refusal is recorded once, after agent_exit.
    let denied = p.events_of("agent_sandbox_denied");
    let mut seen: Vec<(String, String, u64)> = denied
        .iter()
        .map(|e| {
            assert_eq!(e["layer"], "egress", "{all}");
            assert_eq!(e["round_num"], 1, "{all}");
            (
                e["target"].as_str().unwrap().to_owned(),
                e["access"].as_str().unwrap().to_owned(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (format!("127.0.0.3:{}", up.port), "connect".to_owned(), 1),
            (format!("denied.invalid:{}", up.port), "http".to_owned(), 1),
        ],
        "{all}"
    );
    // peek shows the round's denials, in its document and its text.
    let out = p.run(&["peek", "--json"]);
    out.assert_code(0);
    let doc: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    let shown = &doc["recent_rounds"][0]["sandbox_denied"];
    assert_eq!(shown.as_array().map(Vec::len), Some(2), "{doc}");
    assert!(shown.to_string().contains("denied.invalid"), "{doc}");
    let out = p.run(&["peek"]);
    out.assert_code(0);
    assert!(
        out.stdout
            .contains(&format!("denied: egress connect 127.0.0.3:{}", up.port))
            || out
                .stdout
                .contains(&format!("denied: egress http denied.invalid:{}", up.port)),
        "{}",
        out.stdout
    );
}

#[test]
fn egress_is_filtered_by_host_name_as_root() {
    egress_round(Operator::Root);
}

#[test]
fn egress_is_filtered_by_host_name_as_unprivileged_user() {
    egress_round(Operator::Unprivileged);
}

/// Without `allow_hosts` the agent keeps the supervisor's network: no namespace, no proxy
/// variables, and it reaches `127.0.0.2` directly.
#[test]
fn without_allow_hosts_the_network_is_unchanged() {
    let up = Upstream::start();
    let p = Project::new();
    let agent = p.script("agent/egress-agent.sh", AGENT);
    let config = p
        .config()
        .agent_env("UP", &up.port.to_string())
        .render()
        .replace(
            &format!(
                "command = [{}]",
                agent_runner_e2e::toml_string(&p.agent_path().display().to_string())
            ),
            &format!(
                "command = [{}]",
                agent_runner_e2e::toml_string(&agent.display().to_string())
            ),
        );
    p.write_config_text(&config);
    p.run(&["round"]).assert_code(0);
    let log = std::fs::read_to_string(&p.round_logs()[0]).unwrap();
    assert!(log.contains("direct_loopback 200/000 0"), "{log}");
    let own = std::fs::read_link("/proc/self/ns/net").unwrap();
    assert!(log.contains(&format!("netns {}", own.display())), "{log}");
    assert!(log.contains("proxy \n"), "{log}");
    assert!(p.events_of("agent_sandbox_denied").is_empty());
    let out = p.run(&["peek", "--json"]);
    let doc: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        doc["recent_rounds"][0]["sandbox_denied"],
        agent_runner_e2e::serde_json::json!([]),
        "{doc}"
    );
}
