//! deploy/kubernetes/agent-runner.yaml run by `podman kube play` (issue 30): the pod comes
//! up with the manifest's security context (non-root, no privilege escalation,
//! `RuntimeDefault` seccomp, read-only root, no capabilities), rounds run with a confined
//! host, `/healthz` and `/metrics` answer on the pod's address, deleting the pod with the
//! manifest's grace period stops `serve` gracefully (the round under way recorded, exit 0,
//! no host left), and a new pod on the same volumes continues the round count.
//!
//! What the test changes in the manifest before playing it: the image (the one the tests
//! build) and the config in the ConfigMap (the demo agent and the image's example host).
//! What it does in place of deploy/kubernetes/project.yaml, which it does not play: the
//! Secret, which podman 4.3 cannot read from a manifest, is created as a podman secret
//! holding the same keys; the PersistentVolumeClaims' volumes are created by the test
//! (podman would, empty) to put the work tree in first; the NetworkPolicy podman would not
//! enforce (docs/operations.md, "The network policy"). podman does not run the probes (it has no kubelet): the
//! test asks `/healthz` itself, and deletes the pod as a kubelet does, SIGTERM then
//! `terminationGracePeriodSeconds`.

use agent_runner_e2e::container::{engine, IMAGE_UID};
use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{wait_until, workspace_root};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const MANIFEST: &str = "deploy/kubernetes/agent-runner.yaml";
/// The pod podman names after the Deployment (its replica 0).
const POD: &str = "agent-runner-pod-0";
const TOKEN: &str = "kube-test-token";

/// The manifest as the test plays it (module docs).
fn manifest(config: &str) -> String {
    let text = std::fs::read_to_string(workspace_root().join(MANIFEST)).expect("manifest");
    let docs: Vec<String> = text
        .split("\n---\n")
        .map(|d| {
            if d.contains("\nkind: ConfigMap\n") {
                let at = d
                    .find("  agent-runner.toml: |\n")
                    .expect("the config in the ConfigMap");
                let body: String = config.lines().map(|l| format!("    {l}\n")).collect();
                format!("{}  agent-runner.toml: |\n{body}", &d[..at])
            } else {
                d.replace(
                    "image: localhost/agent-runner:latest",
                    &format!("image: {}", engine().image()),
                )
            }
        })
        .collect();
    docs.join("\n---\n")
}

/// A podman secret `agent-runner-keys` with the manifest Secret's keys (podman 4.3 reads a
/// JSON map of base64 values).
fn create_secret() {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let json = format!(
        "{{\"ANTHROPIC_API_KEY\": \"{}\", \"AGENT_RUNNER_MONITOR_TOKEN\": \"{}\"}}",
        b64("test-key"),
        b64(TOKEN)
    );
    let _ = engine().run(&["secret", "rm", "agent-runner-keys"]);
    let mut child = engine()
        .podman()
        .args(["secret", "create", "agent-runner-keys", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("podman secret create");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(json.as_bytes())
        .unwrap();
    assert!(
        child.wait().unwrap().success(),
        "podman secret create failed"
    );
}

/// A named volume, created fresh; returns its directory on this machine.
fn fresh_volume(name: &str) -> PathBuf {
    let _ = engine().run(&["volume", "rm", "--force", name]);
    engine().ok(&["volume", "create", name]);
    let dir = engine().ok(&["volume", "inspect", "--format", "{{.Mountpoint}}", name]);
    PathBuf::from(dir.trim())
}

fn chown_tree(dir: &Path) {
    let status = Command::new("chown")
        .args(["-R", &format!("{IMAGE_UID}:{IMAGE_UID}")])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// The work tree (a git repo with a prompt) and the state volume holding the demo agent.
fn volumes() -> (PathBuf, PathBuf) {
    let work = fresh_volume("agent-runner-work");
    let state = fresh_volume("agent-runner-state");
    std::fs::create_dir_all(work.join("prompts")).unwrap();
    std::fs::write(work.join("prompts/main.md"), "Keep a journal.\n").unwrap();
    std::fs::write(work.join(".gitignore"), "/.agent-runner-pause\n").unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=e2e",
            "-c",
            "user.email=e2e@localhost",
            "commit",
            "-q",
            "-m",
            "init",
        ],
    ] {
        let out = Command::new("git")
            .args(args)
            .current_dir(&work)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
    let agent = state.join("demo-agent.sh");
    std::fs::copy(
        workspace_root().join("examples/agent/demo-agent.sh"),
        &agent,
    )
    .unwrap();
    chown_tree(&work);
    chown_tree(&state);
    (work, state)
}

/// The config: the demo agent (each round 2 s), the image's example spawn hook pinned.
fn config() -> String {
    let pins = engine().ok(&[
        "run",
        "--rm",
        "--network=none",
        "--entrypoint=cat",
        engine().image(),
        "/opt/agent-runner/hosts/pins.toml",
    ]);
    let pin = pins
        .lines()
        .find_map(|l| l.strip_prefix("spawn-pause-file = "))
        .expect("the example host's pin in pins.toml")
        .to_owned();
    format!(
        "schema_version = 1\n\n[agent]\nname = \"demo-agent\"\ncommand = [\"/state/demo-agent.sh\"]\nprompt_arg_template = [\"{{prompt}}\"]\nprompt_delivery = \"argv\"\n\n[agent.env]\nDEMO_AGENT_SLEEP = \"2\"\n\n[runtime]\nwork_dir = \"/work/example\"\nlog_dir = \"/state/logs\"\nstate_dir = \"/state/state\"\nround_budget_s = 60\nrestart_delay_s = 1\n\n[prompt]\nfile = \"/work/example/prompts/main.md\"\n\n[plugins]\nsandbox = \"require\"\n\n[plugins.pin]\npause = {pin}\n\n[plugins.hosts.pause]\ncommand = [\"/opt/agent-runner/hosts/spawn-pause-file\"]\nprovides = [\"spawn_hook\"]\n\n[monitor.host_health.disk]\nwarning_pct = 100\ncritical_pct = 100\n"
    )
}

fn events(state: &Path) -> Vec<Value> {
    let dir = state.join("state");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("events-") && n.ends_with(".jsonl"))
    });
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str(l).expect("whole JSON lines"))
                .collect::<Vec<Value>>()
        })
        .collect()
}

fn rounds(state: &Path, kind: &str) -> Vec<u64> {
    events(state)
        .iter()
        .filter(|e| e["event"] == kind)
        .filter_map(|e| e["round_num"].as_u64())
        .collect()
}

/// `GET path` on the pod's address: (status, body).
fn get(ip: &str, path: &str, token: Option<&str>) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect((ip, 8765)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {ip}\r\n{auth}Connection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n")?.1.to_owned();
    Some((status, body))
}

/// The manifest's grace period, in seconds.
fn grace_s(manifest: &str) -> u64 {
    manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("terminationGracePeriodSeconds: "))
        .and_then(|v| v.parse().ok())
        .expect("terminationGracePeriodSeconds")
}

/// Whether a process of the image's example host is alive on this machine.
fn host_alive() -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c).contains("/opt/agent-runner/hosts/spawn-pause-file")
            })
            .unwrap_or(false)
    })
}

/// Plays the manifest and waits for `/healthz` to say ok; returns the pod's address.
fn play(manifest_file: &Path, state: &Path) -> String {
    engine().ok(&["kube", "play", &manifest_file.to_string_lossy()]);
    let infra = engine().ok(&["pod", "inspect", "--format", "{{.InfraContainerID}}", POD]);
    let ip = engine()
        .ok(&[
            "inspect",
            "--format",
            "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
            infra.trim(),
        ])
        .trim()
        .to_owned();
    assert!(!ip.is_empty(), "the pod has no address");
    wait_until("/healthz to say ok", Duration::from_secs(60), || {
        let alive = engine().ok(&[
            "ps",
            "--filter",
            &format!("pod={POD}"),
            "--format",
            "{{.Names}}",
        ]);
        assert!(
            alive.contains("serve") && alive.contains("monitor"),
            "a container of the pod ended: {alive}\n{}",
            logs()
        );
        let _ = state;
        get(&ip, "/healthz", None).filter(|(code, _)| *code == 200)
    });
    ip
}

fn logs() -> String {
    ["serve", "monitor"]
        .iter()
        .map(|c| {
            let out = engine().run(&["logs", &format!("{POD}-{c}")]);
            format!(
                "--- {c}:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .collect()
}

/// Deletes the pod as a kubelet does: SIGTERM to the app containers, SIGKILL after the
/// grace period, then the pod with its pause container; returns serve's exit code.
/// serve is stopped first and alone: with podman 4.3 here, stopping serve and the monitor
/// in one `podman stop` sometimes ended serve by SIGKILL (exit 137, its SIGTERM never
/// logged) while a round was under way, and `podman pod stop` stops the pause container
/// alongside, whose end as PID 1 of the shared PID namespace SIGKILLs everything at once.
/// A kubelet removes the pause container last.
fn delete_pod(grace: u64) -> String {
    let grace = grace.to_string();
    engine().ok(&["stop", "--time", &grace, &format!("{POD}-serve")]);
    let code = engine().ok(&[
        "inspect",
        "--format",
        "{{.State.ExitCode}}",
        &format!("{POD}-serve"),
    ]);
    engine().ok(&["stop", "--time", &grace, &format!("{POD}-monitor")]);
    engine().ok(&["pod", "rm", "--force", POD]);
    code.trim().to_owned()
}

struct Cleanup;

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = engine().run(&["pod", "rm", "--force", "--time", "0", POD]);
        for v in ["agent-runner-work", "agent-runner-state"] {
            let _ = engine().run(&["volume", "rm", "--force", v]);
        }
        let _ = engine().run(&["secret", "rm", "agent-runner-keys"]);
    }
}

#[test]
fn the_manifest_runs_under_podman_kube_play_and_a_new_pod_continues() {
    let _ = engine().run(&["pod", "rm", "--force", "--time", "0", POD]);
    let _cleanup = Cleanup;
    let (_work, state) = volumes();
    create_secret();
    let text = manifest(&config());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent-runner.yaml");
    std::fs::write(&file, &text).unwrap();

    let ip = play(&file, &state);
    // The security context took: non-root, no privilege escalation, read-only root.
    let inspect: Value =
        serde_json::from_str(&engine().ok(&["inspect", &format!("{POD}-serve")])).unwrap();
    let c = &inspect[0];
    assert_eq!(c["Config"]["User"], "10001:10001", "{}", c["Config"]);
    assert_eq!(c["HostConfig"]["ReadonlyRootfs"], true);
    let opts = c["HostConfig"]["SecurityOpt"].to_string();
    assert!(opts.contains("no-new-privileges"), "{opts}");
    // Rounds run, the host confined.
    wait_until("two rounds to end", Duration::from_secs(120), || {
        (rounds(&state, "round_end").len() >= 2).then_some(())
    });
    let service: Value =
        serde_json::from_str(&std::fs::read_to_string(state.join("state/service.json")).unwrap())
            .unwrap();
    assert_eq!(
        service["sandbox"]["achieved_tier"], "landlock+seccomp",
        "{service}"
    );
    assert_eq!(service["hosts"][0]["name"], "pause", "{service}");
    assert_eq!(service["hosts"][0]["state"], "running", "{service}");
    assert!(events(&state).iter().all(|e| e["event"] != "hook_failed"));
    // /healthz answers without the token; /metrics with it, saying serve is up.
    let (code, body) = get(&ip, "/healthz", None).expect("/healthz");
    assert_eq!(code, 200, "{body}");
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(get(&ip, "/metrics", None).expect("/metrics").0, 401);
    let (code, metrics) = get(&ip, "/metrics", Some(TOKEN)).expect("/metrics");
    assert_eq!(code, 200, "{metrics}");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("agent_runner_up{") && l.ends_with(" 1")),
        "{metrics}"
    );

    // Deleting the pod stops serve gracefully: the round under way ends and is recorded.
    let grace = grace_s(&text);
    let code = delete_pod(grace);
    let all = events(&state);
    let text_events: String = all.iter().map(|e| format!("{e}\n")).collect();
    assert_eq!(code, "0", "serve's exit status\n{text_events}");
    let stopping: Vec<&Value> = all
        .iter()
        .filter(|e| e["event"] == "serve_stopping")
        .collect();
    assert_eq!(stopping.len(), 1, "{text_events}");
    assert_eq!(stopping[0]["reason"], "signal", "{text_events}");
    let started = rounds(&state, "round_start");
    let ended = rounds(&state, "round_end");
    assert_eq!(
        started, ended,
        "every round started was recorded ending\n{text_events}"
    );
    let service: Value =
        serde_json::from_str(&std::fs::read_to_string(state.join("state/service.json")).unwrap())
            .unwrap();
    assert_eq!(service["state"], "stopped", "{service}");
    assert!(!host_alive(), "a host outlived its pod");

    // A new pod on the same volumes goes on counting.
    let last = *ended.iter().max().unwrap();
    play(&file, &state);
    wait_until(
        "the new pod's first round",
        Duration::from_secs(120),
        || {
            rounds(&state, "round_start")
                .contains(&(last + 1))
                .then_some(())
        },
    );
    assert_eq!(
        rounds(&state, "round_start")
            .iter()
            .filter(|n| **n <= last)
            .count(),
        started.len(),
        "round numbers were not reused"
    );
    let code = delete_pod(grace);
    let text_events: String = events(&state).iter().map(|e| format!("{e}\n")).collect();
    assert_eq!(code, "0", "serve's exit status\n{text_events}");
    assert_eq!(
        rounds(&state, "round_start"),
        rounds(&state, "round_end"),
        "{text_events}"
    );
    assert!(!host_alive(), "a host outlived its pod");
}
