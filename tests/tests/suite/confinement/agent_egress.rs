//! Egress by host name (issue 29, docs/security.md "Egress by host name"): with
//! `[agent.sandbox] allow_hosts`, a real `agent-runner round` runs the agent in a network
//! namespace of its own whose only way out is the supervisor's filtering proxy. The agent
//! here is a shell script driving the real `curl`; the upstream is a small HTTP server of
//! this test on `127.0.0.2` (all traffic stays on this machine). Each case runs with the
//! supervisor run by root and by the unprivileged user `ar-e2e`.
//!
//! Issue 36 item 6 and issue 41 item 3: a *name* never leads back into the machine (the
//! machine's own host name, which resolves to its loopback or its own address, is refused
//! while the same listener is reached by its address: the control); a local endpoint is
//! reached by `127.0.0.1:PORT` and `localhost:PORT`; and the proxy goes through the
//! operator's upstream proxy (Debian's tinyproxy, `tests/setup.d/15-upstream-proxy.sh`).

use agent_runner_e2e::{Operator, Project};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A tiny upstream on `127.0.0.2:<port>` (or another address): answers every request
/// `200 upstream-ok` and counts the requests it served.
struct Upstream {
    port: u16,
    served: Arc<AtomicUsize>,
}

impl Upstream {
    fn start() -> Upstream {
        Upstream::on("127.0.0.2")
    }

    fn on(address: &str) -> Upstream {
        let listener = TcpListener::bind((address, 0)).expect("bind the upstream");
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
    // Each refusal is recorded once, after agent_exit, with the line that opens it.
    let refused = p.events_of("agent_egress_refused");
    let mut seen: Vec<(String, String, String)> = refused
        .iter()
        .map(|e| {
            assert_eq!(e["layer"], "proxy", "{all}");
            assert_eq!(e["round_num"], 1, "{all}");
            assert_eq!(e["reason"], "not_listed", "{all}");
            assert_eq!(e["key"], "agent.sandbox.allow_hosts", "{all}");
            assert_eq!(e["count"], 1, "{all}");
            (
                e["access"].as_str().unwrap().to_owned(),
                e["host"]
                    .as_str()
                    .or(e["address"].as_str())
                    .unwrap()
                    .to_owned(),
                e["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                "connect".to_owned(),
                "127.0.0.3".to_owned(),
                format!("egress to 127.0.0.3:{0} refused by the agent sandbox: add \"127.0.0.3:{0}\" to [agent.sandbox] allow_hosts", up.port)
            ),
            (
                "http".to_owned(),
                "denied.invalid".to_owned(),
                format!("egress to denied.invalid:{0} refused by the agent sandbox: add \"denied.invalid:{0}\" to [agent.sandbox] allow_hosts", up.port)
            ),
        ],
        "{all}"
    );
    // The round's summary names them (the agent exited 0: the round is not a failure).
    assert!(
        out.stderr.contains(&format!(
            "round 1: egress to 127.0.0.3:{} refused by the agent sandbox",
            up.port
        )),
        "{}",
        out.stderr
    );
    // peek shows the round's refusals, in its document and its text.
    let out = p.run(&["peek", "--json"]);
    out.assert_code(0);
    let doc: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    let shown = &doc["recent_rounds"][0]["egress_refused"];
    assert_eq!(shown.as_array().map(Vec::len), Some(2), "{doc}");
    assert!(shown.to_string().contains("denied.invalid"), "{doc}");
    let out = p.run(&["peek"]);
    out.assert_code(0);
    assert!(
        out.stdout.contains(&format!(
            "refused: egress to 127.0.0.3:{0} refused by the agent sandbox: add \"127.0.0.3:{0}\" to [agent.sandbox] allow_hosts",
            up.port
        )),
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
    assert!(p.events_of("agent_egress_refused").is_empty());
    let out = p.run(&["peek", "--json"]);
    let doc: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        doc["recent_rounds"][0]["egress_refused"],
        agent_runner_e2e::serde_json::json!([]),
        "{doc}"
    );
}

/// The config of `p` with `agent` as its agent command and `sandbox` as its
/// `[agent.sandbox]` table's lines.
fn config_with_agent(p: &Project, agent: &std::path::Path, env: &[(&str, &str)], sandbox: &str) {
    let mut builder = p.config();
    for (k, v) in env {
        builder = builder.agent_env(k, v);
    }
    let config = builder
        .extra(&format!("[agent.sandbox]\n{sandbox}"))
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
}

/// Each `<name> <value>` line of the round's log, by name.
fn round_results(p: &Project) -> impl Fn(&str) -> String {
    let all = p.events_text();
    let log = p
        .round_logs()
        .first()
        .map(|l| std::fs::read_to_string(l).unwrap())
        .unwrap_or_else(|| panic!("no round log\n{all}"));
    move |name: &str| {
        log.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} line in the round log:\n{log}\n{all}"))
            .to_owned()
    }
}

/// This machine's host name (it resolves to this machine: its loopback or its own address).
fn machine_name() -> String {
    let out = std::process::Command::new("hostname").output().unwrap();
    let name = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let resolved = std::process::Command::new("getent")
        .args(["ahosts", &name])
        .output()
        .unwrap();
    assert!(
        resolved.status.success(),
        "the host name {name} does not resolve here"
    );
    name
}

/// The agent of the local-endpoint cases: the machine's endpoint by address, by
/// `localhost` and by the machine's name (`$NAME`), in plain HTTP and through `CONNECT`,
/// and the body of a refusal.
const LOCAL_AGENT: &str = r#"#!/bin/sh
try() { name=$1; shift; printf '%s %s\n' "$name" "$(curl -s -o /dev/null --max-time 10 -w '%{http_code}/%{http_connect} %{exitcode}' "$@")"; }
try literal_http "http://127.0.0.1:$P/a"
try literal_connect -p "http://127.0.0.1:$P/b"
try localhost_http "http://localhost:$P/c"
try name_http "http://$NAME:$P/d"
try name_connect -p "http://$NAME:$P/e"
printf 'body %s\n' "$(curl -s --max-time 10 "http://$NAME:$P/f")"
printf 'no_proxy %s\n' "$NO_PROXY"
"#;

/// A local endpoint on `127.0.0.1` is reached by its address and by `localhost` with its
/// port; the machine's own host name, listed for the same port, is refused and the refusal
/// names the address it resolved to. The control: the very same listener answers the
/// address (so the name would have reached it).
fn local_endpoint_and_names(operator: Operator) {
    let endpoint = Upstream::on("127.0.0.1");
    let name = machine_name();
    let p = Project::new_as(operator);
    let agent = p.script("agent/local-agent.sh", LOCAL_AGENT);
    let port = endpoint.port.to_string();
    config_with_agent(
        &p,
        &agent,
        &[("P", &port), ("NAME", &name)],
        &format!("allow_hosts = [\"127.0.0.1:{port}\", \"localhost:{port}\", \"{name}:{port}\"]\n"),
    );
    let out = p.run(&["round"]);
    let all = p.events_text();
    out.assert_code(0);
    let result = round_results(&p);
    // The control: by address and by `localhost`, the endpoint answers.
    assert_eq!(result("literal_http"), "200/000 0", "{all}");
    assert_eq!(result("literal_connect"), "200/200 0", "{all}");
    assert_eq!(result("localhost_http"), "200/000 0", "{all}");
    // By the machine's name: refused, though listed, and the agent is told why.
    assert_eq!(result("name_http"), "403/000 0", "{all}");
    assert_eq!(result("name_connect"), "000/403 56", "{all}");
    let body = result("body");
    assert!(
        body.starts_with(&format!(
            "agent-runner egress proxy: egress to {name}:{port} ("
        )) && body.contains("refused by the agent sandbox: a name may not lead into this machine"),
        "{body}"
    );
    // The agent's loopback goes to the proxy (a local endpoint is listed).
    assert_eq!(result("no_proxy"), "", "{all}");
    assert_eq!(endpoint.served.load(Ordering::SeqCst), 3, "{all}");
    let refused = p.events_of("agent_egress_refused");
    assert!(!refused.is_empty(), "{all}");
    for e in &refused {
        assert_eq!(e["host"], name.as_str(), "{all}");
        assert!(
            e["reason"] == "loopback" || e["reason"] == "this_machine",
            "{all}"
        );
        let address = e["address"].as_str().unwrap();
        assert!(body.contains(address), "{body} {address}");
        assert_eq!(e["key"], "agent.sandbox.allow_hosts", "{all}");
    }
}

#[test]
fn a_local_endpoint_is_reached_by_address_and_never_by_a_name_as_root() {
    local_endpoint_and_names(Operator::Root);
}

#[test]
fn a_local_endpoint_is_reached_by_address_and_never_by_a_name_as_unprivileged_user() {
    local_endpoint_and_names(Operator::Unprivileged);
}

/// A loopback address or `localhost` without its port is a config error naming the entry.
#[test]
fn a_local_entry_without_a_port_is_refused() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .extra("[agent.sandbox]\nallow_hosts = [\"127.0.0.1\"]\n"),
    );
    let out = p.run(&["round"]);
    out.assert_code(78);
    assert!(
        out.stderr.contains("agent.sandbox.allow_hosts") && out.stderr.contains("`127.0.0.1`"),
        "{}",
        out.stderr
    );
}

/// The machine's own non-loopback address (an address of an interface other than `lo`).
fn own_address() -> String {
    let out = std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .find(|a| {
            a.parse::<std::net::Ipv4Addr>()
                .is_ok_and(|a| !a.is_loopback())
        })
        .expect("this machine has a non-loopback IPv4 address")
        .to_owned()
}

/// A tinyproxy of the test's own, on `127.0.0.1:<port>`, requiring `user:secret`, letting
/// `CONNECT` reach `connect_port` only; its log says what passed through it.
struct Tinyproxy {
    port: u16,
    log: std::path::PathBuf,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Tinyproxy {
    fn start(connect_port: u16) -> Tinyproxy {
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = dir.path().join("tinyproxy.log");
        let conf = dir.path().join("tinyproxy.conf");
        std::fs::write(
            &conf,
            format!(
                "Port {port}\nListen 127.0.0.1\nTimeout 30\nLogFile \"{}\"\nLogLevel Connect\nMaxClients 20\nAllow 127.0.0.1\nBasicAuth user secret\nConnectPort {connect_port}\n",
                log.display()
            ),
        )
        .unwrap();
        let mut child = std::process::Command::new("tinyproxy")
            .args(["-d", "-c"])
            .arg(&conf)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("tinyproxy is installed (tests/setup.d/15-upstream-proxy.sh)");
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Tinyproxy {
                    port,
                    log,
                    child,
                    _dir: dir,
                };
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("tinyproxy did not listen on {port}");
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const UPSTREAM_AGENT: &str = r#"#!/bin/sh
try() { name=$1; shift; printf '%s %s\n' "$name" "$(curl -s -o /dev/null --max-time 10 -w '%{http_code}/%{http_connect} %{exitcode}' "$@")"; }
try via_connect -p "http://$TARGET/t"
try via_http "http://$TARGET/h"
try local_direct "http://127.0.0.1:$LOCAL/l"
"#;

/// With `HTTPS_PROXY`/`HTTP_PROXY` in the supervisor's environment, the egress proxy goes
/// through that proxy: a `CONNECT` tunnel and a plain-HTTP request in absolute form, with
/// the URL's credentials. A listed loopback endpoint is reached directly (the corporate
/// proxy could not reach this machine's loopback). The control: the same round with the
/// credentials left out is refused by tinyproxy (`407`), so the upstream is not reached —
/// the traffic really goes through the upstream proxy.
fn through_an_upstream_proxy(operator: Operator) {
    let address = own_address();
    let target = Upstream::on(&address);
    let local = Upstream::on("127.0.0.1");
    let tiny = Tinyproxy::start(target.port);
    let target_hp = format!("{address}:{}", target.port);
    let local_port = local.port.to_string();
    let round = |credentials: &str| -> Project {
        let p = Project::new_as(operator);
        let agent = p.script("agent/upstream-agent.sh", UPSTREAM_AGENT);
        config_with_agent(
            &p,
            &agent,
            &[("TARGET", &target_hp), ("LOCAL", &local_port)],
            &format!("allow_hosts = [\"{target_hp}\", \"127.0.0.1:{local_port}\"]\n"),
        );
        let via = format!("http://{credentials}127.0.0.1:{}", tiny.port);
        let out = p.run_env(&["round"], &[("HTTPS_PROXY", &via), ("HTTP_PROXY", &via)]);
        out.assert_code(0);
        p
    };
    // The control first: without the credentials tinyproxy refuses both (407), the agent
    // gets 502 from the egress proxy, and the target is not reached.
    let p = round("");
    let result = round_results(&p);
    assert_eq!(result("via_connect"), "000/502 56", "{}", tiny.log());
    assert_eq!(result("via_http"), "407/000 0", "{}", tiny.log());
    assert_eq!(result("local_direct"), "200/000 0", "{}", tiny.log());
    assert_eq!(target.served.load(Ordering::SeqCst), 0);
    // With them: both through tinyproxy, which logs them.
    let p = round("user:secret@");
    let result = round_results(&p);
    let log = tiny.log();
    assert_eq!(result("via_connect"), "200/200 0", "{log}");
    assert_eq!(result("via_http"), "200/000 0", "{log}");
    assert_eq!(result("local_direct"), "200/000 0", "{log}");
    assert_eq!(target.served.load(Ordering::SeqCst), 2, "{log}");
    assert!(
        log.contains(&format!("CONNECT {target_hp} HTTP/1.1")),
        "{log}"
    );
    assert!(
        log.contains(&format!("GET http://{target_hp}/h HTTP/1.1")),
        "{log}"
    );
    // The local endpoint never went through the upstream proxy.
    assert!(!log.contains(&format!("127.0.0.1:{local_port}")), "{log}");
    assert_eq!(local.served.load(Ordering::SeqCst), 2, "{log}");
}

#[test]
fn egress_goes_through_an_upstream_proxy_as_root() {
    through_an_upstream_proxy(Operator::Root);
}

#[test]
fn egress_goes_through_an_upstream_proxy_as_unprivileged_user() {
    through_an_upstream_proxy(Operator::Unprivileged);
}

/// An agent that fails as a CLI does when its endpoint is out of reach: its request to
/// `127.0.0.9:4010` (through the proxy: not listed) fails and it prints claude's words.
/// Named `claude`, so claude's built-in detector reads its output.
const UNREACHABLE_AGENT: &str = r#"#!/bin/sh
curl -s -o /dev/null --max-time 10 "http://127.0.0.9:4010/v1/messages"
echo "API Error: Unable to connect to API (ECONNREFUSED)"
exit 1
"#;

/// Issue 41 item 1: a round that failed while the sandbox refused its connects is the
/// sandbox's failure, not the provider's network: `round` says so and that serve would not
/// back off (the control, the same agent without `allow_hosts`, is read as a network outage
/// serve would back off from); `serve` does not back off and its crash-loop breaker stops
/// it after five such rounds with the fix in its reason.
#[test]
fn a_round_refused_its_connects_fails_on_the_sandbox_not_the_network() {
    // The control: no allow_hosts, the same failure reads as the network.
    let p = Project::new();
    let agent = p.script("agent/claude", UNREACHABLE_AGENT);
    config_with_agent(&p, &agent, &[], "");
    let out = p.run(&["round"]);
    out.assert_code(1);
    assert!(
        out.stderr
            .contains("serve would back off before the next round"),
        "{}",
        out.stderr
    );

    let p = Project::new();
    let agent = p.script("agent/claude", UNREACHABLE_AGENT);
    config_with_agent(&p, &agent, &[], "allow_hosts = [\"api.example.invalid\"]\n");
    let fix = "egress to 127.0.0.9:4010 refused by the agent sandbox: add \"127.0.0.9:4010\" to [agent.sandbox] allow_hosts";
    let out = p.run(&["round"]);
    out.assert_code(1);
    assert!(
        out.stderr.contains(&format!("round 1: {fix}")),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("failed on the agent sandbox, not the provider's network")
            && !out.stderr.contains("serve would back off"),
        "{}",
        out.stderr
    );
    let out = p.run(&["round", "--json"]);
    let summary: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(summary["egress_refused"][0], fix, "{summary}");

    let p = Project::new();
    let agent = p.script("agent/claude", UNREACHABLE_AGENT);
    config_with_agent(&p, &agent, &[], "allow_hosts = [\"api.example.invalid\"]\n");
    let out = p.run(&["serve", "--max-rounds", "7"]);
    out.assert_code(75);
    let all = p.events_text();
    assert!(p.events_of("transient_error_detected").is_empty(), "{all}");
    assert!(p.events_of("agent_network_blip").is_empty(), "{all}");
    assert_eq!(p.events_of("agent_egress_refused").len(), 5, "{all}");
    let crash = p.events_of("crash_loop");
    assert_eq!(crash.len(), 1, "{all}");
    let reason = crash[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("round 5: exit 1 after ") && reason.ends_with(fix),
        "{reason}"
    );
    assert!(out.stderr.contains(fix), "{}", out.stderr);
}

/// An agent whose endpoint is a local model on `127.0.0.1:$P`: it fails when it cannot
/// reach it.
const LOCAL_MODEL_AGENT: &str = r#"#!/bin/sh
code=$(curl -s -o /dev/null --max-time 10 -w '%{http_code}' "$ANTHROPIC_BASE_URL/v1/messages")
echo "endpoint $code"
[ "$code" = 200 ] || { echo "Unable to connect to API (EACCES)"; exit 1; }
"#;

/// Issue 41 items 1 and 2, the newcomer's case: `init`'s `mode = "prefer"` (TCP connect
/// only to 443 where Landlock has the network rule) and a base URL on another port.
/// `doctor` fails naming the port and `connect_ports`; each round's refused connect is
/// recorded (`agent_egress_refused`, layer `landlock`) and `serve`'s crash-loop reason
/// carries the same fix; `init --endpoint URL` writes it; with it (the
/// control) the round reaches the endpoint.
fn local_endpoint_under_inits_sandbox(operator: Operator) {
    let endpoint = Upstream::on("127.0.0.1");
    let url = format!("http://127.0.0.1:{}", endpoint.port);
    let p = Project::new_as(operator);
    let agent = p.script("agent/local-model.sh", LOCAL_MODEL_AGENT);
    let write = |connect_ports: &str| {
        let text = p
            .config()
            .agent_env("ANTHROPIC_BASE_URL", &url)
            .extra(&format!(
                "[agent.sandbox]\nmode = \"prefer\"\n{connect_ports}"
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
        p.write_config_text(&text);
    };
    write("");
    let fix = format!(
        "egress to 127.0.0.1:{0} refused by the agent sandbox: add {0} to [agent.sandbox] connect_ports",
        endpoint.port
    );
    let out = p.run(&["doctor", "--json"]);
    out.assert_code(1);
    let doc: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    let check = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "agent_endpoint")
        .unwrap()
        .clone();
    assert_eq!(check["ok"], false, "{doc}");
    let reason = check["reason"].as_str().unwrap();
    assert!(
        reason.contains("[agent.env] ANTHROPIC_BASE_URL")
            && reason.contains("agent.sandbox.connect_ports")
            && reason.contains(&fix),
        "{check}"
    );
    assert_eq!(
        check["how_to_fix"],
        format!("add {} to [agent.sandbox] connect_ports", endpoint.port)
    );
    let out = p.run(&["serve", "--max-rounds", "7"]);
    out.assert_code(75);
    let crash = p.events_of("crash_loop");
    assert_eq!(crash.len(), 1, "{}", p.events_text());
    // Landlock's refusal itself was seen (the seccomp observer of connect), so the reason
    // carries the refused address rather than the endpoint read from the config.
    let why = crash[0]["reason"].as_str().unwrap();
    assert!(why.ends_with(&fix), "{why}");
    let refused = p.events_of("agent_egress_refused");
    assert_eq!(refused.len(), 5, "{}", p.events_text());
    assert!(
        refused
            .iter()
            .all(|r| r["layer"] == "landlock" && r["port"] == endpoint.port),
        "{refused:?}"
    );
    assert!(p.events_of("agent_network_blip").is_empty());
    assert_eq!(endpoint.served.load(Ordering::SeqCst), 0);

    // init --endpoint writes the port; the config it wrote loads and says so.
    let q = Project::new_as(operator);
    let out = q.run(&["init", "--preset", "claude", "--force", "--endpoint", &url]);
    out.assert_code(0);
    let text = std::fs::read_to_string(q.config_path()).unwrap();
    assert!(
        text.contains(&format!("\nconnect_ports = [{}]\n", endpoint.port)),
        "{text}"
    );
    assert!(out.stdout.contains("connect_ports has"), "{}", out.stdout);
    let out = q.run(&["init", "--force", "--endpoint", "ftp://x"]);
    out.assert_code(2);

    // The control: with the port, doctor passes the check and the round reaches it.
    write(&format!("connect_ports = [{}]\n", endpoint.port));
    let out = p.run(&["doctor", "--json"]);
    let doc: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(&out.stdout).unwrap();
    assert!(
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "agent_endpoint" && c["ok"] == true),
        "{doc}"
    );
    p.run(&["round"]).assert_code(0);
    assert_eq!(endpoint.served.load(Ordering::SeqCst), 1);
}

#[test]
fn a_local_endpoint_under_inits_sandbox_is_named_with_its_port_and_key_as_root() {
    local_endpoint_under_inits_sandbox(Operator::Root);
}

#[test]
fn a_local_endpoint_under_inits_sandbox_is_named_with_its_port_and_key_as_unprivileged_user() {
    local_endpoint_under_inits_sandbox(Operator::Unprivileged);
}
