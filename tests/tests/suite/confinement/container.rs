//! The image (deploy/Containerfile) under a real container engine (issue 30): `serve` as
//! the image's non-root user, read-only root filesystem (no tmpfs added), every capability
//! dropped, no network, under a seccomp profile of the engine's, with a work tree and a
//! state dir as volumes. Hostile hosts (`ar-e2e-attempts`, pinned, `sandbox = "require"`)
//! try one forbidden thing each in the first round's `before_spawn`, so the test sees which
//! confinement layers hold, and `doctor --json` inside the same container must say the
//! same. Three profiles:
//!
//! - the engine's default (podman's allows `unshare`): every layer;
//! - the default with user namespaces denied (`deploy/seccomp/userns.py deny`: what
//!   containerd's and Docker's defaults do, Kubernetes `RuntimeDefault` on most clusters):
//!   Landlock, seccomp and the write limits hold, the PID namespace and the process bound
//!   do not, and doctor says why;
//! - the default with Landlock's system calls taken out (an older runtime's profile):
//!   `sandbox = "require"` refuses to boot (exit 78), and only then.
//!
//! And under gVisor (`runsc`, Debian's package), with the engine's default profile: what
//! doctor says there, and that this gVisor starts neither hosts nor the agent.
//!
//! The supervisor runs as uid 10001 inside; the engine runs as root (rootful podman), as CI
//! does. Nothing here skips: without podman the tests fail, saying to run tests/setup.sh.

use agent_runner_e2e::container::{engine, Container, IMAGE_UID};
use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{pin_of, wait_until, workspace_root};
use std::os::unix::fs::{chown, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const ATTEMPTS_HOST: &str = env!("CARGO_BIN_EXE_ar-e2e-attempts");

/// The seccomp profile a case runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Profile {
    /// The engine's own default.
    EngineDefault,
    /// The default with `unshare` and namespace-creating `clone` denied.
    UsernsDenied,
    /// The default with `landlock_*` falling to the default action (ENOSYS).
    LandlockDenied,
}

impl Profile {
    /// The `--security-opt seccomp=…` file (the default is given explicitly too, so the
    /// case never depends on how the engine picks it).
    fn file(self, dir: &Path) -> PathBuf {
        let default = engine().default_seccomp_profile();
        assert!(
            default.is_file(),
            "no default seccomp profile at {}",
            default.display()
        );
        let out = dir.join(format!("{self:?}.json"));
        match self {
            Profile::EngineDefault => {
                std::fs::copy(&default, &out).expect("copy the default profile");
            }
            Profile::UsernsDenied => {
                let status = Command::new("python3")
                    .arg(workspace_root().join("deploy/seccomp/userns.py"))
                    .arg("deny")
                    .arg(&default)
                    .arg(&out)
                    .status()
                    .expect("run deploy/seccomp/userns.py");
                assert!(status.success(), "deploy/seccomp/userns.py deny failed");
            }
            Profile::LandlockDenied => {
                let text = std::fs::read_to_string(&default).expect("read the default profile");
                let mut profile: Value = serde_json::from_str(&text).expect("profile JSON");
                for rule in profile["syscalls"].as_array_mut().expect("syscalls") {
                    if let Some(names) = rule["names"].as_array_mut() {
                        names.retain(|n| !n.as_str().unwrap_or("").starts_with("landlock_"));
                    }
                }
                std::fs::write(&out, profile.to_string()).expect("write the profile");
            }
        }
        out
    }
}

/// The OCI runtime a case runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runtime {
    /// The engine's own (runc on the development machine).
    Engine,
    /// gVisor's `runsc` (Debian's package; tests/setup.d/40-podman.sh), its own network
    /// stack off as the containers' network is.
    Gvisor,
}

impl Runtime {
    /// podman's global options that choose it.
    fn global_args(self) -> Vec<String> {
        match self {
            Runtime::Engine => Vec::new(),
            Runtime::Gvisor => vec![
                "--runtime=/usr/bin/runsc".into(),
                "--runtime-flag=network=none".into(),
            ],
        }
    }
}

/// A work tree and a state dir on the machine, mounted at /work and /state.
struct Tree {
    tmp: tempfile::TempDir,
}

impl Tree {
    /// A git repository with the demo agent's prompt and `config` committed, and an empty
    /// state dir holding `secret.txt` (readable by the image's user, never by a host).
    fn new(config: &str) -> Tree {
        let tmp = tempfile::Builder::new()
            .prefix("ar-e2e-container-")
            .tempdir()
            .expect("tempdir");
        let t = Tree { tmp };
        std::fs::create_dir_all(t.work().join("prompts")).unwrap();
        std::fs::create_dir_all(t.state()).unwrap();
        std::fs::write(t.work().join("prompts/main.md"), "Keep a journal.\n").unwrap();
        std::fs::write(t.work().join("agent-runner.toml"), config).unwrap();
        std::fs::write(t.work().join(".gitignore"), "/.agent-runner-pause\n").unwrap();
        std::fs::write(t.state().join("secret.txt"), "hunter2\n").unwrap();
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args(["-c", "user.name=e2e", "-c", "user.email=e2e@localhost"])
                .args(args)
                .current_dir(t.work())
                .output()
                .expect("git");
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "init"]);
        let agent = t.tmp.path().join("demo-agent.sh");
        std::fs::copy(
            workspace_root().join("examples/agent/demo-agent.sh"),
            &agent,
        )
        .unwrap();
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
        own_tree(&t.work());
        own_tree(&t.state());
        t
    }

    fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }

    fn state(&self) -> PathBuf {
        self.tmp.path().join("state")
    }

    /// The supervisor's record, every line parsed.
    fn events(&self) -> Vec<Value> {
        let dir = self.state().join("state");
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

    fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["event"] == kind)
            .collect()
    }

    /// `podman run` options common to every case: the image's user, read-only root, no
    /// tmpfs added, every capability dropped, no network, the seccomp profile `profile`.
    fn run_options(&self, profile: &Path) -> Vec<String> {
        vec![
            "--read-only".into(),
            "--read-only-tmpfs=false".into(),
            "--cap-drop=all".into(),
            "--network=none".into(),
            format!("--security-opt=seccomp={}", profile.display()),
            format!("--volume={}:/work", self.work().display()),
            format!("--volume={}:/state", self.state().display()),
            format!("--volume={ATTEMPTS_HOST}:/opt/test/ar-e2e-attempts:ro"),
            format!(
                "--volume={}:/opt/test/demo-agent.sh:ro",
                self.tmp.path().join("demo-agent.sh").display()
            ),
        ]
    }
}

fn own_tree(dir: &Path) {
    chown(dir, Some(IMAGE_UID), Some(IMAGE_UID)).unwrap();
    for entry in walk(dir) {
        std::os::unix::fs::lchown(&entry, Some(IMAGE_UID), Some(IMAGE_UID)).unwrap();
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

/// The hostile hosts: hook name, attempt, extra config.
const HOSTS: &[(&str, &str, &str)] = &[
    ("net", "tcp_connect", "port = 9"),
    ("read", "read", "path = \"/state/secret.txt\""),
    ("fork", "fork_bomb", "max = 256"),
    ("ns", "unshare", ""),
];

/// The project's config: the demo agent, the hostile hosts pinned, `sandbox = "require"`.
fn config() -> String {
    let pin = pin_of(Path::new(ATTEMPTS_HOST));
    let mut t = String::from(
        "schema_version = 1\n\n[agent]\nname = \"demo-agent\"\ncommand = [\"/opt/test/demo-agent.sh\"]\nprompt_arg_template = [\"{prompt}\"]\nprompt_delivery = \"argv\"\n\n[runtime]\nwork_dir = \".\"\nlog_dir = \"/state/logs\"\nstate_dir = \"/state/state\"\nround_budget_s = 60\nrestart_delay_s = 1\n\n[prompt]\nfile = \"./prompts/main.md\"\n\n[plugins]\nsandbox = \"require\"\n\n[plugins.pin]\n",
    );
    for (hook, _, _) in HOSTS {
        t.push_str(&format!("{hook} = \"{pin}\"\n"));
    }
    for (hook, attempt, extra) in HOSTS {
        let extra = if extra.is_empty() {
            String::new()
        } else {
            format!(", {extra}")
        };
        t.push_str(&format!(
            "\n[plugins.hosts.{hook}]\ncommand = [\"/opt/test/ar-e2e-attempts\"]\nprovides = [\"spawn_hook\"]\nconfig = {{ attempt = \"{attempt}\", hook = \"{hook}\"{extra} }}\n"
        ));
    }
    t.push_str("\n[monitor.host_health.disk]\nwarning_pct = 100\ncritical_pct = 100\n");
    t
}

/// `doctor --json` in a fresh container of the image under `profile`: (exit code, report).
fn doctor(tree: &Tree, profile: &Path, runtime: Runtime) -> (i32, Value) {
    let name = Container::named("doctor");
    let mut args = runtime.global_args();
    args.extend(["run".to_owned(), format!("--name={}", name.name)]);
    args.extend(tree.run_options(profile));
    args.extend([
        engine().image().to_owned(),
        "doctor".into(),
        "--json".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = engine().run(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "doctor --json printed no JSON ({e}):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), report)
}

/// Whether doctor's layer `name` is on, and its detail.
fn layer(report: &Value, name: &str) -> (bool, String) {
    let layers = report["sandbox"]["layers"].as_array().expect("layers");
    let l = layers
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no layer {name} in {report}"));
    (
        l["on"].as_bool().expect("on"),
        l["detail"].as_str().unwrap_or("").to_owned(),
    )
}

/// What serve's first round recorded of each hostile host.
struct Observed {
    events: String,
    /// hook → `error_message` of its `hook_failed`.
    failed: Vec<(String, String)>,
    /// hook → `syscall` of its `plugin_sandbox_kill`.
    killed: Vec<(String, String)>,
}

impl Observed {
    fn message(&self, hook: &str) -> &str {
        self.failed
            .iter()
            .find(|(h, _)| h == hook)
            .map(|(_, m)| m.as_str())
            .unwrap_or_else(|| panic!("no hook_failed for {hook}:\n{}", self.events))
    }

    fn killed_at(&self, hook: &str) -> &str {
        self.killed
            .iter()
            .find(|(h, _)| h == hook)
            .map(|(_, s)| s.as_str())
            .unwrap_or_else(|| panic!("no plugin_sandbox_kill for {hook}:\n{}", self.events))
    }
}

/// Runs `serve` in the image under `profile` until its first round has ended, stops it the
/// way the engine stops a container (SIGTERM), and checks the stop was graceful.
fn serve_one_round(tree: &Tree, profile: &Path, runtime: Runtime) -> Observed {
    let name = Container::named("serve");
    let mut args = runtime.global_args();
    args.extend([
        "run".to_owned(),
        "--detach".into(),
        format!("--name={}", name.name),
    ]);
    args.extend(tree.run_options(profile));
    args.push(engine().image().to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    engine().ok(&args);
    wait_until(
        "serve's first round to end",
        Duration::from_secs(120),
        || {
            if !tree.events_of("round_end").is_empty() {
                return Some(());
            }
            let running = engine().ok(&["inspect", "--format", "{{.State.Running}}", &name.name]);
            if running.trim() != "true" {
                let logs = engine().run(&["logs", &name.name]);
                panic!(
                    "serve ended before a round ended:\n{}\n{}",
                    String::from_utf8_lossy(&logs.stdout),
                    String::from_utf8_lossy(&logs.stderr)
                );
            }
            None
        },
    );
    engine().ok(&["stop", "--time=60", &name.name]);
    let code = engine().ok(&["inspect", "--format", "{{.State.ExitCode}}", &name.name]);
    let events = tree.events();
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    assert_eq!(code.trim(), "0", "serve's exit status\n{text}");
    let stopping = tree.events_of("serve_stopping");
    assert_eq!(stopping.len(), 1, "{text}");
    assert_eq!(stopping[0]["reason"], "signal", "{text}");
    // serve ran as the image's user: what it created in the state dir is that user's.
    let meta = std::fs::metadata(tree.state().join("state/service.json")).expect("service.json");
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), IMAGE_UID);
    let round_one = |e: &&Value| e["round_num"] == 1 || e["round_num"].is_null();
    Observed {
        failed: events
            .iter()
            .filter(|e| e["event"] == "hook_failed")
            .filter(round_one)
            .map(|e| {
                (
                    e["hook_name"].as_str().unwrap_or("").to_owned(),
                    e["error_message"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect(),
        killed: events
            .iter()
            .filter(|e| e["event"] == "plugin_sandbox_kill")
            .map(|e| {
                (
                    e["hook"].as_str().unwrap_or("").to_owned(),
                    e["syscall"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect(),
        events: text,
    }
}

/// The layers every profile that lets Landlock engage keeps, each checked by an attempt.
fn assert_landlock_and_seccomp_hold(report: &Value, seen: &Observed) {
    assert_eq!(
        report["sandbox"]["achieved_tier"], "landlock+seccomp",
        "{report}"
    );
    for name in ["landlock", "seccomp", "unix_socket_rule", "write_limits"] {
        assert!(layer(report, name).0, "{name} off: {report}");
    }
    // seccomp: an AF_INET socket kills the host, and names the call.
    assert_eq!(seen.killed_at("net"), "socket", "{}", seen.events);
    // Landlock: a file the supervisor's user can read is not the host's to read.
    assert!(
        seen.message("read")
            .contains("outcome read: denied errno=13"),
        "{}",
        seen.events
    );
}

#[test]
fn serve_in_the_image_under_the_engine_default_profile_gets_every_layer() {
    let tree = Tree::new(&config());
    let profile = Profile::EngineDefault.file(tree.tmp.path());
    let (code, report) = doctor(&tree, &profile, Runtime::Engine);
    assert_eq!(code, 0, "{report}");
    let seen = serve_one_round(&tree, &profile, Runtime::Engine);
    assert_landlock_and_seccomp_hold(&report, &seen);
    for name in ["pid_namespace", "process_bound"] {
        let (on, detail) = layer(&report, name);
        assert!(on, "{name}: {detail}");
    }
    // Our seccomp filter kills at unshare (the engine's profile allows the call).
    assert_eq!(seen.killed_at("ns"), "unshare", "{}", seen.events);
    // The process bound holds: the fork bomb stops below pids_max (128).
    let fork = seen.message("fork");
    assert!(
        fork.contains("outcome fork_bomb: denied errno=11"),
        "{fork}\n{}",
        seen.events
    );
}

#[test]
fn serve_in_the_image_with_user_namespaces_denied_keeps_landlock_and_seccomp() {
    let tree = Tree::new(&config());
    let profile = Profile::UsernsDenied.file(tree.tmp.path());
    let (code, report) = doctor(&tree, &profile, Runtime::Engine);
    assert_eq!(code, 0, "{report}");
    let seen = serve_one_round(&tree, &profile, Runtime::Engine);
    assert_landlock_and_seccomp_hold(&report, &seen);
    // Doctor says the PID namespace and the process bound are off, and why: the seccomp
    // filter the supervisor runs under.
    for name in ["pid_namespace", "process_bound"] {
        let (on, detail) = layer(&report, name);
        assert!(!on, "{name} on: {detail}");
        assert!(detail.contains("seccomp filter"), "{name}: {detail}");
    }
    // unshare fails with the engine profile's EPERM before our filter's user notification
    // is asked (a filter's errno takes precedence over another's notification): denied,
    // not killed.
    assert!(
        seen.message("ns")
            .contains("outcome unshare: denied errno=1"),
        "{}",
        seen.events
    );
    assert!(
        !seen.killed.iter().any(|(h, _)| h == "ns"),
        "{}",
        seen.events
    );
    // And it is so: nothing bounds the host's processes but the container's own limits.
    let fork = seen.message("fork");
    assert!(
        fork.contains("outcome fork_bomb: allowed 256"),
        "{fork}\n{}",
        seen.events
    );
}

#[test]
fn require_refuses_in_the_image_only_when_landlock_cannot_engage() {
    let tree = Tree::new(&config());
    let profile = Profile::LandlockDenied.file(tree.tmp.path());
    let (code, report) = doctor(&tree, &profile, Runtime::Engine);
    assert_eq!(code, 78, "{report}");
    assert_eq!(report["sandbox"]["landlock_abi"], Value::Null, "{report}");
    assert_ne!(
        report["sandbox"]["available_tier"], "landlock+seccomp",
        "{report}"
    );
    let (on, _) = layer(&report, "landlock");
    assert!(!on, "{report}");
    let name = Container::named("refused");
    let mut args = vec!["run".to_owned(), format!("--name={}", name.name)];
    args.extend(tree.run_options(&profile));
    args.push(engine().image().to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = engine().run(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(78), "{stderr}");
    assert!(stderr.contains("require"), "{stderr}");
    assert!(tree.events_of("round_start").is_empty());
}

/// The image under gVisor (Debian bookworm's `runsc`, 0.0~20221219): what doctor reports and
/// what the same hostile hosts meet (docs/operations.md, "On agent-sandbox"). Landlock is
/// absent (ENOSYS: gVisor has no Landlock), so `require` refuses; under `prefer` doctor
/// calls seccomp off too (gVisor offers no `/proc/sys/kernel/seccomp/actions_avail`) and
/// the namespace, process, memory and write layers on, yet this gVisor lacks `pidfd_open`:
/// doctor's `pidfd` check fails (exit 1), and indeed no host launches and no agent starts,
/// each failing with ENOSYS, recorded.
#[test]
fn serve_in_the_image_under_debians_gvisor_starts_neither_hosts_nor_the_agent() {
    let tree = Tree::new(&config());
    let profile = Profile::EngineDefault.file(tree.tmp.path());
    let (code, report) = doctor(&tree, &profile, Runtime::Gvisor);
    assert_eq!(code, 78, "{report}");
    assert_eq!(report["sandbox"]["landlock_abi"], Value::Null, "{report}");

    let tree = Tree::new(&config().replace("sandbox = \"require\"", "sandbox = \"prefer\""));
    let (code, report) = doctor(&tree, &profile, Runtime::Gvisor);
    assert_eq!(code, 1, "{report}");
    let failed: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .collect();
    assert_eq!(failed.len(), 1, "{report}");
    assert_eq!(failed[0]["name"], "pidfd", "{report}");
    assert!(
        failed[0]["reason"]
            .as_str()
            .unwrap()
            .contains("os error 38"),
        "{report}"
    );
    assert_eq!(report["sandbox"]["achieved_tier"], "unconfined", "{report}");
    let reason = report["sandbox"]["unconfined_reason"].as_str().unwrap();
    assert!(
        reason.contains("landlock: not built into this kernel (ENOSYS)"),
        "{reason}"
    );
    assert!(reason.contains("actions_avail"), "{reason}");
    for (name, on) in [
        ("landlock", false),
        ("seccomp", false),
        ("pid_namespace", true),
        ("process_bound", true),
        ("memory_bound", true),
        ("unix_socket_rule", false),
        ("write_limits", true),
    ] {
        let (is, detail) = layer(&report, name);
        assert_eq!(is, on, "{name}: {detail}");
    }
    let seen = serve_one_round(&tree, &profile, Runtime::Gvisor);
    for (hook, _, _) in HOSTS {
        let message = seen.message(hook);
        assert!(
            message.contains("pidfd of the supervisor") && message.contains("os error 38"),
            "{hook}: {message}"
        );
    }
    assert!(seen.killed.is_empty(), "{}", seen.events);
    let spawn_failed = tree.events_of("agent_spawn_failed");
    assert_eq!(spawn_failed.len(), 1, "{}", seen.events);
    assert!(
        spawn_failed[0]["error"]
            .as_str()
            .unwrap()
            .contains("os error 38"),
        "{}",
        seen.events
    );
}
