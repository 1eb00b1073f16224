//! End-to-end test support for agent-runner: real binaries, real git repositories, real
//! processes, real confinement.
//!
//! * [`bin_dir`], [`agent_runner_bin`], [`pause_host_bin`], [`dirty_commit_host_bin`]: the
//!   binaries of the other workspace packages, built on demand (once per test process) when
//!   `cargo test` did not build them;
//! * [`Project`]: a temporary git repository with a prompt, the demo agent and an
//!   `agent-runner.toml` written from a [`ConfigBuilder`]; it runs `agent-runner <verb>`
//!   ([`Project::run`], [`Project::spawn`]) and reads what happened (events, git log,
//!   stash list);
//! * [`wait_until`] and [`Project::wait_for_event`]: correctness waits with generous
//!   deadlines (never speed assertions);
//! * [`host_pids`]: the live processes running given executables in a given directory;
//! * [`unprivileged`]: the unprivileged test user ([`unprivileged_user`]) and projects whose
//!   commands run as it ([`Project::new_as`]);
//! * [`container`]: a real container engine (podman) and the image of deploy/Containerfile.

#![warn(missing_docs)]

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

pub use serde_json;

pub mod container;
pub mod unprivileged;
pub use unprivileged::{rerun_as_unprivileged_user, unprivileged_user, Operator, TestUser};

/// How long [`Project::wait_for_event`] waits by default: generous, a correctness bound.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest a single `agent-runner` command may run in [`Project::run`] before it is killed
/// and the test fails (a hang guard, not a speed assertion).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The environment variable forcing the sandbox probe's answer (honoured by
/// `agent-runner-plugin-host`'s `probe()`, for tests only).
pub const TEST_PROBE_ENV: &str = "AGENT_RUNNER_TEST_PROBE";

/// The workspace root (the directory holding the workspace `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_owned()
}

/// The directory holding the final binaries of the profile this test runs under
/// (`<target>/debug`): derived from the running test executable, which lives in
/// `<target>/debug/deps/`.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().expect("test executable has a directory");
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().expect("deps has a parent").to_owned()
    } else {
        dir.to_owned()
    }
}

/// Binaries of other workspace packages the tests run, with their packages.
const WORKSPACE_BINS: &[(&str, &str)] = &[
    ("agent-runner", "agent-runner"),
    ("plugin-host", "agent-runner"),
    ("spawn-pause-file", "example-spawn-pause-file"),
    ("dirty-commit", "example-dirty-commit"),
    ("no-commit-detector", "example-no-commit-detector"),
];

/// Runs `cargo build` of the packages in [`WORKSPACE_BINS`] once per test process, into the
/// target dir [`bin_dir`] belongs to, with the same profile. `Err`: cargo's failure as the
/// panic message of every test that needs the binaries (`String`: it is only ever printed).
fn build_workspace_bins() -> &'static Result<(), String> {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = bin_dir();
        let profile = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "debug".into());
        let target_dir = dir.parent().expect("profile dir has a parent");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.arg("build").arg("--bins");
        for (_, package) in WORKSPACE_BINS {
            cmd.args(["-p", package]);
        }
        match profile.as_str() {
            "debug" => {}
            "release" => {
                cmd.arg("--release");
            }
            other => {
                cmd.args(["--profile", other]);
            }
        }
        let out = cmd
            .env("CARGO_TARGET_DIR", target_dir)
            .current_dir(workspace_root())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run cargo build: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "cargo build failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    })
}

/// The path of binary `name` of another workspace package, building the packages once if
/// it is missing. Panics if it cannot be built.
pub fn workspace_bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    if path.is_file() {
        return path;
    }
    if let Err(err) = build_workspace_bins() {
        panic!("{name} is missing from {} and {err}", bin_dir().display());
    }
    assert!(
        path.is_file(),
        "{} still missing after cargo build",
        path.display()
    );
    path
}

/// The confinement launcher, `plugin-host` (built beside `agent-runner`). A test process
/// that launches through the library directly makes it its launcher first
/// (`agent_runner_plugin_host::Launcher::use_path`): a test executable does not sit beside
/// it, where the library looks by default.
pub fn plugin_host_bin() -> PathBuf {
    workspace_bin("plugin-host")
}

/// The supervisor binary, `agent-runner`.
pub fn agent_runner_bin() -> PathBuf {
    workspace_bin("agent-runner")
}

/// The example spawn-hook host `spawn-pause-file` (hook `pause_file`).
pub fn pause_host_bin() -> PathBuf {
    workspace_bin("spawn-pause-file")
}

/// The example dirty-handler host `dirty-commit` (hook `wip_commit`).
pub fn dirty_commit_host_bin() -> PathBuf {
    workspace_bin("dirty-commit")
}

/// The example detector host `no-commit-detector` (hook `no_commit`).
pub fn no_commit_detector_bin() -> PathBuf {
    workspace_bin("no-commit-detector")
}

/// Builds the Python example host `test-report` (hooks `junit_gate`, `junit_report_check`,
/// `recent_work`) into `dir` with its `build.sh` and returns the `.pyz`.
pub fn test_report_host(dir: &Path) -> PathBuf {
    let out = dir.join("test-report.pyz");
    let status = Command::new("bash")
        .arg(workspace_root().join("examples/test-report/build.sh"))
        .arg(&out)
        .stdout(Stdio::null())
        .status()
        .expect("run examples/test-report/build.sh");
    assert!(status.success(), "examples/test-report/build.sh failed");
    out
}

/// The outcome of rule `rule` in a `plugin check --json` report (`{"rule", "status",
/// "detail"}`); panics, showing the report, when the report has no such rule.
pub fn check_rule(report: &Value, rule: &str) -> Value {
    report["rules"]
        .as_array()
        .and_then(|rules| rules.iter().find(|r| r["rule"] == rule))
        .cloned()
        .unwrap_or_else(|| panic!("no rule {rule} in {report:#}"))
}

/// The check named `name` in a `doctor --json` report (`{"name", "ok", "reason", ...}`);
/// panics, showing the report, when the report has no such check.
pub fn doctor_check(report: &Value, name: &str) -> Value {
    report["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no {name} check in {report:#}"))
}

/// The sha256 of a file's contents as 64 lowercase hex digits. Results are cached per
/// path, size and modification time (the binaries are large and `sha2` is unoptimized in
/// test builds).
pub fn sha256_hex(path: &Path) -> String {
    type Key = (PathBuf, u64, Option<std::time::SystemTime>);
    static CACHE: OnceLock<Mutex<HashMap<Key, String>>> = OnceLock::new();
    let meta = fs::metadata(path).unwrap_or_else(|e| panic!("cannot stat {}: {e}", path.display()));
    let key = (path.to_owned(), meta.len(), meta.modified().ok());
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(hex) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return hex.clone();
    }
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let digest = Sha256::digest(&bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest {
        let _ = write!(hex, "{byte:02x}");
    }
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, hex.clone());
    hex
}

/// The pin of a file, in `[plugins.pin]` form: `sha256:<64 hex>`.
pub fn pin_of(path: &Path) -> String {
    format!("sha256:{}", sha256_hex(path))
}

/// Waits until `probe` returns `Some`, checking every 50 ms, for at most `timeout`; panics
/// naming `what` when the deadline passes. A correctness wait with a generous deadline.
pub fn wait_until<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How a host's pin is written in `[plugins.pin]`.
#[derive(Clone, Debug)]
pub enum Pin {
    /// The sha256 of the host's own executable, computed when the config is rendered.
    Exact,
    /// No pin line.
    Unpinned,
    /// The sha256 of another file (a pin that does not match).
    OfFile(PathBuf),
    /// This literal text.
    Literal(String),
}

/// One `[plugins.hosts.<name>]` table and its pin.
#[derive(Clone, Debug)]
pub struct HostSpec {
    name: String,
    command: Vec<String>,
    provides: Vec<String>,
    timeout_s: Option<u64>,
    config: serde_json::Map<String, Value>,
    pin: Pin,
}

impl HostSpec {
    /// A host called `name` running `exe`, providing `spawn_hook`, pinned exactly.
    pub fn new(name: &str, exe: impl AsRef<Path>) -> Self {
        HostSpec {
            name: name.to_owned(),
            command: vec![exe.as_ref().display().to_string()],
            provides: vec!["spawn_hook".to_owned()],
            timeout_s: None,
            config: serde_json::Map::new(),
            pin: Pin::Exact,
        }
    }

    /// The hook families the host may declare (`provides`).
    pub fn provides(mut self, families: &[&str]) -> Self {
        self.provides = families.iter().map(|f| (*f).to_owned()).collect();
        self
    }

    /// The per-call timeout (`timeout_s`).
    pub fn timeout_s(mut self, seconds: u64) -> Self {
        self.timeout_s = Some(seconds);
        self
    }

    /// The host's free `config` table; `config` must be a JSON object.
    pub fn config(mut self, config: Value) -> Self {
        self.config = match config {
            Value::Object(map) => map,
            other => panic!("host config must be an object, got {other}"),
        };
        self
    }

    /// How the host is pinned.
    pub fn pin(mut self, pin: Pin) -> Self {
        self.pin = pin;
        self
    }

    fn pin_text(&self) -> Option<String> {
        match &self.pin {
            Pin::Exact => Some(pin_of(Path::new(&self.command[0]))),
            Pin::Unpinned => None,
            Pin::OfFile(path) => Some(pin_of(path)),
            Pin::Literal(text) => Some(text.clone()),
        }
    }
}

/// A TOML basic string (JSON string escapes are valid TOML escapes).
pub fn toml_string(text: &str) -> String {
    serde_json::to_string(text).expect("strings serialize")
}

/// A JSON value as a TOML inline value (null is not representable and panics).
pub fn toml_value(value: &Value) -> String {
    match value {
        Value::Null => panic!("TOML has no null"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => toml_string(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .map(|(k, v)| format!("{} = {}", toml_string(k), toml_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn toml_list(items: &[String]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|s| toml_string(s))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Builds `agent-runner.toml` text for a [`Project`]: the demo agent with argv delivery,
/// `log_dir = "./logs"`, `restart_delay_s = 1`, hosts with pins computed on the spot.
#[derive(Clone, Debug)]
pub struct ConfigBuilder {
    agent: PathBuf,
    agent_env: Vec<(String, String)>,
    round_budget_s: u64,
    restart_delay_s: u64,
    dirty_action: Option<String>,
    stash_idempotency_s: Option<u64>,
    sandbox: Option<String>,
    spawn_override_allow: Vec<String>,
    hosts: Vec<HostSpec>,
    disk_critical_pct: f64,
    extra: String,
}

impl ConfigBuilder {
    /// A config running `agent` (argv delivery), no hosts, default sandbox mode.
    pub fn new(agent: &Path) -> Self {
        ConfigBuilder {
            agent: agent.to_owned(),
            agent_env: Vec::new(),
            round_budget_s: 60,
            restart_delay_s: 1,
            dirty_action: None,
            stash_idempotency_s: None,
            sandbox: None,
            spawn_override_allow: Vec::new(),
            hosts: Vec::new(),
            disk_critical_pct: 100.0,
            extra: String::new(),
        }
    }

    /// `[monitor.host_health.disk] critical_pct` (default here: 100, with `warning_pct`
    /// 100: a test's rounds must not depend on how full the machine's disk is).
    pub fn disk_critical_pct(mut self, pct: f64) -> Self {
        self.disk_critical_pct = pct;
        self
    }

    /// Adds `key = value` to `[agent.env]`.
    pub fn agent_env(mut self, key: &str, value: &str) -> Self {
        self.agent_env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// `[runtime] round_budget_s` (default here: 60).
    pub fn round_budget_s(mut self, seconds: u64) -> Self {
        self.round_budget_s = seconds;
        self
    }

    /// `[runtime] restart_delay_s` (default here: 1).
    pub fn restart_delay_s(mut self, seconds: u64) -> Self {
        self.restart_delay_s = seconds;
        self
    }

    /// `[vcs] dirty_action`.
    pub fn dirty_action(mut self, action: &str) -> Self {
        self.dirty_action = Some(action.to_owned());
        self
    }

    /// `[vcs] stash_idempotency_s`.
    pub fn stash_idempotency_s(mut self, seconds: u64) -> Self {
        self.stash_idempotency_s = Some(seconds);
        self
    }

    /// `[plugins] sandbox` (`require` / `prefer` / `off`).
    pub fn sandbox(mut self, mode: &str) -> Self {
        self.sandbox = Some(mode.to_owned());
        self
    }

    /// `[plugins] spawn_override_allow` (hook names).
    pub fn spawn_override_allow(mut self, hooks: &[&str]) -> Self {
        self.spawn_override_allow = hooks.iter().map(|h| (*h).to_owned()).collect();
        self
    }

    /// Adds a `[plugins.hosts.<name>]` table (and its pin line).
    pub fn host(mut self, host: HostSpec) -> Self {
        self.hosts.push(host);
        self
    }

    /// Raw TOML appended at the end of the file.
    pub fn extra(mut self, toml: &str) -> Self {
        self.extra.push_str(toml);
        self.extra.push('\n');
        self
    }

    /// The file's text.
    pub fn render(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "schema_version = 1\n");
        let _ = writeln!(t, "[agent]");
        let _ = writeln!(t, "name = \"demo-agent\"");
        let _ = writeln!(
            t,
            "command = [{}]",
            toml_string(&self.agent.display().to_string())
        );
        let _ = writeln!(t, "prompt_arg_template = [\"{{prompt}}\"]");
        let _ = writeln!(t, "prompt_delivery = \"argv\"\n");
        if !self.agent_env.is_empty() {
            let _ = writeln!(t, "[agent.env]");
            for (k, v) in &self.agent_env {
                let _ = writeln!(t, "{} = {}", toml_string(k), toml_string(v));
            }
            t.push('\n');
        }
        let _ = writeln!(t, "[runtime]");
        let _ = writeln!(t, "work_dir = \".\"");
        let _ = writeln!(t, "log_dir = \"./logs\"");
        let _ = writeln!(t, "round_budget_s = {}", self.round_budget_s);
        let _ = writeln!(t, "restart_delay_s = {}\n", self.restart_delay_s);
        let _ = writeln!(t, "[prompt]");
        let _ = writeln!(t, "file = \"./prompts/main.md\"\n");
        let _ = writeln!(t, "[vcs]");
        if let Some(action) = &self.dirty_action {
            let _ = writeln!(t, "dirty_action = {}", toml_string(action));
        }
        if let Some(s) = self.stash_idempotency_s {
            let _ = writeln!(t, "stash_idempotency_s = {s}");
        }
        t.push('\n');
        let _ = writeln!(t, "[plugins]");
        if let Some(mode) = &self.sandbox {
            let _ = writeln!(t, "sandbox = {}", toml_string(mode));
        }
        let _ = writeln!(
            t,
            "spawn_override_allow = {}\n",
            toml_list(&self.spawn_override_allow)
        );
        let _ = writeln!(t, "[plugins.pin]");
        for host in &self.hosts {
            if let Some(pin) = host.pin_text() {
                let _ = writeln!(t, "{} = {}", host.name, toml_string(&pin));
            }
        }
        t.push('\n');
        for host in &self.hosts {
            let _ = writeln!(t, "[plugins.hosts.{}]", host.name);
            let _ = writeln!(t, "command = {}", toml_list(&host.command));
            let _ = writeln!(t, "provides = {}", toml_list(&host.provides));
            if let Some(s) = host.timeout_s {
                let _ = writeln!(t, "timeout_s = {s}");
            }
            if !host.config.is_empty() {
                let _ = writeln!(
                    t,
                    "config = {}",
                    toml_value(&Value::Object(host.config.clone()))
                );
            }
            t.push('\n');
        }
        let _ = writeln!(t, "[monitor.host_health.disk]");
        let _ = writeln!(t, "warning_pct = 100");
        let _ = writeln!(t, "critical_pct = {}\n", self.disk_critical_pct);
        t.push_str(&self.extra);
        t
    }
}

/// The result of one finished `agent-runner` command.
#[derive(Debug)]
pub struct RunOutput {
    /// The exit status.
    pub status: ExitStatus,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

impl RunOutput {
    /// The exit code; panics (with the output) when a signal ended the process.
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("ended by a signal: {self}"))
    }

    /// Panics with the output unless the exit code is `expected`.
    pub fn assert_code(&self, expected: i32) -> &Self {
        assert_eq!(
            self.status.code(),
            Some(expected),
            "unexpected exit status: {self}"
        );
        self
    }
}

impl std::fmt::Display for RunOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// An `agent-runner` process running in the background ([`Project::spawn`]); its stdout and
/// stderr go to files. Killed (SIGKILL) when dropped while still running.
#[derive(Debug)]
pub struct Running {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Running {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (e.g. `libc::SIGTERM`) to the process.
    pub fn signal(&self, signal: i32) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits");
        // SAFETY: kill(2) takes integers only; `pid` is our own, not yet reaped child.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(rc, 0, "kill({pid}, {signal}) failed");
    }

    /// Whether it has exited (reaping it if so).
    pub fn has_exited(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_some()
    }

    /// What it wrote to stdout so far.
    pub fn stdout_so_far(&self) -> String {
        fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// What it wrote to stderr so far.
    pub fn stderr_so_far(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits at most `timeout` for it to exit; panics (after killing it) if it does not.
    pub fn wait(mut self, timeout: Duration) -> RunOutput {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "agent-runner (pid {}) still running after {timeout:?}; killed it.\n--- stderr ---\n{}",
                    self.child.id(),
                    self.stderr_so_far()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        RunOutput {
            status,
            stdout: fs::read_to_string(&self.stdout).unwrap_or_default(),
            stderr: fs::read_to_string(&self.stderr).unwrap_or_default(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A temporary project: `<tmp>/project` is a fresh git repository (local user.name and
/// user.email, `README.md`, `prompts/main.md`, a `.gitignore` ignoring `/logs/` and
/// `/.agent-runner-pause`, one commit); the demo agent lives outside it in
/// `<tmp>/agent/demo-agent.sh`; `<tmp>/home` is the `HOME` of every command run.
/// Everything is removed when it is dropped.
#[derive(Debug)]
pub struct Project {
    tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    agent: PathBuf,
    spawned: std::sync::atomic::AtomicU32,
    /// Who runs the project's `agent-runner` commands.
    operator: Operator,
}

impl Default for Project {
    fn default() -> Self {
        Self::new()
    }
}

impl Project {
    /// Creates the repository, the prompt and the demo agent.
    pub fn new() -> Project {
        Self::create(true)
    }

    /// Like [`Project::new`], but every `agent-runner` command ([`Project::command`]) runs
    /// as `operator`: for [`Operator::Unprivileged`], as [`unprivileged_user`], with the
    /// whole temporary directory handed to that user before each command starts (the test
    /// itself, as root, may have written files since).
    pub fn new_as(operator: Operator) -> Project {
        let mut p = Self::create(true);
        p.operator = operator;
        p
    }

    /// Who runs this project's `agent-runner` commands.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// Like [`Project::new`] but without `prompts/main.md` (for `init`).
    pub fn without_prompt() -> Project {
        Self::create(false)
    }

    fn create(with_prompt: bool) -> Project {
        let tmp = tempfile::Builder::new()
            .prefix("ar-e2e-")
            .tempdir()
            .expect("tempdir");
        let base = tmp.path().canonicalize().expect("canonical tempdir");
        let root = base.join("project");
        let home = base.join("home");
        let agent_dir = base.join("agent");
        for dir in [&root, &home, &agent_dir] {
            fs::create_dir_all(dir).expect("mkdir");
        }
        let agent = agent_dir.join("demo-agent.sh");
        fs::copy(
            workspace_root().join("examples/agent/demo-agent.sh"),
            &agent,
        )
        .expect("copy demo agent");
        set_mode(&agent, 0o755);
        let project = Project {
            tmp,
            root,
            home,
            agent,
            spawned: std::sync::atomic::AtomicU32::new(0),
            operator: Operator::Root,
        };
        project.write("README.md", "# e2e project\n");
        if with_prompt {
            project.write(
                "prompts/main.md",
                "---\ntitle: e2e prompt\n---\nKeep a journal in notes/journal.md.\n",
            );
        }
        project.write(".gitignore", "/logs/\n/.agent-runner-pause\n");
        project.git(&["init", "-q", "-b", "main", "."]);
        project.git(&["config", "user.name", "e2e operator"]);
        project.git(&["config", "user.email", "operator@e2e.invalid"]);
        project.git(&["add", "-A"]);
        project.git(&["commit", "-q", "-m", "initial"]);
        project
    }

    /// The project directory (the git work tree and config directory), canonical.
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// The temporary directory holding the project, the agent and `home`.
    pub fn tmp_dir(&self) -> &Path {
        self.tmp.path()
    }

    /// `<project>/agent-runner.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.root.join("agent-runner.toml")
    }

    /// `<project>/logs`.
    pub fn log_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// Where the record lives for this project's `./logs` layout (docs/operations.md,
    /// "State dir"): `<home>/.local/state/agent-runner/projects/project-<key>`, `<key>`
    /// being the first 16 hex digits of the sha256 of the project dir's path.
    pub fn state_dir(&self) -> PathBuf {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(self.root.as_os_str().as_encoded_bytes());
        let key: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        self.home
            .join(".local/state/agent-runner/projects")
            .join(format!("project-{key}"))
    }

    /// Writes an executable script `<tmp>/<rel>` (outside the project's tree) with `body`;
    /// returns its path.
    pub fn script(&self, rel: &str, body: &str) -> PathBuf {
        let path = self.tmp.path().join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("mkdir");
        }
        fs::write(&path, body).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        set_mode(&path, 0o755);
        path
    }

    /// The project's private `HOME`.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The demo agent script.
    pub fn agent_path(&self) -> &Path {
        &self.agent
    }

    /// A [`ConfigBuilder`] running this project's demo agent.
    pub fn config(&self) -> ConfigBuilder {
        ConfigBuilder::new(&self.agent)
    }

    /// Writes `agent-runner.toml` from `builder` and commits it (so it never counts as
    /// dirt).
    pub fn write_config(&self, builder: &ConfigBuilder) {
        self.write_config_text(&builder.render());
    }

    /// Writes `agent-runner.toml` with exactly `text` and commits it.
    pub fn write_config_text(&self, text: &str) {
        self.write("agent-runner.toml", text);
        self.git(&["add", "--", "agent-runner.toml"]);
        if !self
            .git(&["status", "--porcelain", "--", "agent-runner.toml"])
            .trim()
            .is_empty()
        {
            self.git(&[
                "commit",
                "-q",
                "-m",
                "agent-runner config",
                "--",
                "agent-runner.toml",
            ]);
        }
    }

    /// Writes `contents` to `rel` (relative to the project dir), creating directories.
    pub fn write(&self, rel: &str, contents: &str) {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("mkdir");
        }
        fs::write(&path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// An `agent-runner --config <project>/agent-runner.toml <args…>` command, run in the
    /// project dir with `HOME` set to the project's private home and no inherited
    /// `AGENT_RUNNER_*` test or log settings; as the project's [`Operator`].
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(agent_runner_bin());
        if let Some(user) = self.operator.user() {
            user.apply(&mut cmd);
        }
        cmd.arg("--config")
            .arg(self.config_path())
            .args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env_remove("XDG_STATE_HOME")
            .env_remove(TEST_PROBE_ENV)
            .env_remove("AGENT_RUNNER_LOG")
            // A collector of the machine's own would trace every test's rounds
            // (tests/tests/suite/functional/telemetry.rs sets its own).
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `agent-runner <args…>` to completion (at most [`RUN_TIMEOUT`]).
    pub fn run(&self, args: &[&str]) -> RunOutput {
        self.run_with(self.command(args))
    }

    /// Runs `agent-runner <args…>` with extra environment variables.
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> RunOutput {
        let mut cmd = self.command(args);
        cmd.envs(env.iter().copied());
        self.run_with(cmd)
    }

    /// Runs `cmd` to completion (at most [`RUN_TIMEOUT`]).
    pub fn run_with(&self, cmd: Command) -> RunOutput {
        self.spawn_with(cmd).wait(RUN_TIMEOUT)
    }

    /// Starts `agent-runner <args…>` in the background.
    pub fn spawn(&self, args: &[&str]) -> Running {
        self.spawn_with(self.command(args))
    }

    /// Starts `cmd` in the background, its output going to files in the temp dir.
    pub fn spawn_with(&self, mut cmd: Command) -> Running {
        let n = self
            .spawned
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let stdout = self.tmp.path().join(format!("run-{n}.stdout"));
        let stderr = self.tmp.path().join(format!("run-{n}.stderr"));
        cmd.stdout(fs::File::create(&stdout).expect("stdout file"))
            .stderr(fs::File::create(&stderr).expect("stderr file"));
        if let Some(user) = self.operator.user() {
            user.own(self.tmp.path());
        }
        let child = cmd.spawn().expect("spawn agent-runner");
        Running {
            child,
            stdout,
            stderr,
        }
    }

    /// `git <args…>` in the tree as the operator types it later: their home, no system
    /// config, hooks, filters and fsmonitor as the repository sets them (the tree may
    /// belong to the unprivileged user, so it is declared safe). Its output, whatever the
    /// status.
    pub fn operator_git(&self, args: &[&str]) -> std::process::Output {
        Command::new("git")
            .args(["-c", "safe.directory=*"])
            .args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run git")
    }

    /// The value of the key `key` in the repository's own config (`--local`), `None` when
    /// unset.
    pub fn config_value(&self, key: &str) -> Option<String> {
        let out = self.operator_git(&["config", "--local", "--get", key]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Runs `git <args…>` in the project; panics unless it succeeds; returns its stdout.
    pub fn git(&self, args: &[&str]) -> String {
        // The tree may belong to the unprivileged test user: tell git it is safe.
        let out = Command::new("git")
            .args(["-c", "safe.directory=*"])
            .args(args)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Subjects of the current branch's commits, newest first.
    pub fn log_subjects(&self) -> Vec<String> {
        self.git(&["log", "--format=%s"])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// SHAs of the stash entries (`git stash list --format=%H`), newest first.
    pub fn stash_shas(&self) -> Vec<String> {
        self.git(&["stash", "list", "--format=%H"])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `git status --porcelain --untracked-files=all`, one entry per line.
    pub fn status_porcelain(&self) -> Vec<String> {
        self.git(&["status", "--porcelain", "--untracked-files=all"])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The round logs `logs/rounds/R<N>-<stamp>.log`, sorted by name.
    pub fn round_logs(&self) -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(self.log_dir().join("rounds")) else {
            return Vec::new();
        };
        let mut logs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        logs.sort();
        logs
    }

    /// What the agent wrote in all rounds (the round logs, concatenated).
    pub fn agent_output(&self) -> String {
        self.round_logs()
            .iter()
            .map(|log| fs::read_to_string(log).unwrap_or_default())
            .collect()
    }

    /// Panics unless the demo agent ran round `round_num` to its end (its round log says
    /// so).
    pub fn assert_agent_ran(&self, round_num: u64) {
        let output = self.agent_output();
        let started = output.contains(&format!("demo-agent: round {round_num}; prompt:"));
        let finished = output.contains("demo-agent: left my changes uncommitted")
            || output.contains("demo-agent: committed my own work");
        assert!(
            started && finished,
            "the agent did not run round {round_num}: {output:?}\n{}",
            self.events_text()
        );
    }

    /// The event files `<state dir>/events-*.jsonl` ([`Project::state_dir`]), sorted by
    /// name.
    pub fn event_files(&self) -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(self.state_dir()) else {
            return Vec::new();
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("events-") && n.ends_with(".jsonl"))
            })
            .collect();
        files.sort();
        files
    }

    /// Every event recorded so far, in file order. Each complete line must be a JSON object
    /// with a string `ts` and a string `event` (panics otherwise); a last line still being
    /// written (no newline yet) is left out.
    pub fn events(&self) -> Vec<Value> {
        let mut events = Vec::new();
        for file in self.event_files() {
            let text = fs::read_to_string(&file).expect("read events");
            let mut lines: Vec<&str> = text.split('\n').collect();
            lines.pop(); // after the last newline: empty, or a line still being written
            for line in lines {
                let value: Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {line}", file.display()));
                assert!(
                    value["ts"].is_string() && value["event"].is_string(),
                    "{}: event without ts/event: {line}",
                    file.display()
                );
                events.push(value);
            }
        }
        events
    }

    /// The events of kind `kind`, in order.
    pub fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["event"] == kind)
            .collect()
    }

    /// The kinds of all events, in order (for assertion messages).
    pub fn event_kinds(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| e["event"].as_str().unwrap_or("").to_owned())
            .collect()
    }

    /// All events as text, one per line (for assertion messages).
    pub fn events_text(&self) -> String {
        self.events()
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Panics unless every event file ends with a newline and every line of it is a JSON
    /// object with `ts` and `event` (no torn line, the last one included). For a finished
    /// or killed writer; [`Project::events`] tolerates a line still being written.
    pub fn assert_events_whole(&self) {
        for file in self.event_files() {
            let text = fs::read_to_string(&file).expect("read events");
            assert!(
                text.is_empty() || text.ends_with('\n'),
                "{}: last line torn: {text:?}",
                file.display()
            );
            for line in text.lines() {
                let value: Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{}: torn line ({e}): {line}", file.display()));
                assert!(
                    value["ts"].is_string() && value["event"].is_string(),
                    "{}: event without ts/event: {line}",
                    file.display()
                );
            }
        }
    }

    /// Waits (up to [`EVENT_TIMEOUT`]) until an event of kind `kind` is recorded; returns
    /// the first one.
    pub fn wait_for_event(&self, kind: &str) -> Value {
        wait_until(&format!("event {kind}"), EVENT_TIMEOUT, || {
            self.events_of(kind).into_iter().next()
        })
    }

    /// Live processes whose executable is one of `exes` and whose working directory is this
    /// project's (hosts run with `cwd = work_dir`).
    pub fn host_pids(&self, exes: &[&Path]) -> Vec<u32> {
        host_pids(exes, &self.root)
    }

    /// Live processes whose working directory is this project's (the agent, hosts, and
    /// anything they left behind).
    pub fn processes(&self) -> Vec<u32> {
        processes_in(&self.root)
    }
}

impl Drop for Project {
    /// Kills (by pid) whatever still runs in the project dir, so a failed test leaves no
    /// process behind.
    fn drop(&mut self) {
        for pid in processes_in(&self.root) {
            if let Ok(pid) = libc::pid_t::try_from(pid) {
                // SAFETY: kill(2) takes integers only; the process runs in our temp dir.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// Live (non-zombie) processes whose `/proc/<pid>/exe` is one of `exes` and whose
/// `/proc/<pid>/cwd` is `cwd`.
pub fn host_pids(exes: &[&Path], cwd: &Path) -> Vec<u32> {
    let exes: Vec<PathBuf> = exes
        .iter()
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.to_path_buf()))
        .collect();
    live_processes(cwd, |exe| exes.iter().any(|e| e == exe))
}

/// Live (non-zombie) processes whose `/proc/<pid>/cwd` is `cwd`.
pub fn processes_in(cwd: &Path) -> Vec<u32> {
    live_processes(cwd, |_| true)
}

/// Whether process `pid` has a handler installed for `signal` (its `SigCgt` mask in
/// `/proc/<pid>/status`). A program that installs its handler at a known point shows
/// that it got there: a condition to wait on instead of a fixed sleep. False when the
/// process is gone.
pub fn handles_signal(pid: u32, signal: i32) -> bool {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (signal - 1)) != 0)
}

/// Whether some thread of process `pid` is blocked in `nanosleep` or `clock_nanosleep`
/// (the first field of `/proc/<pid>/task/<tid>/syscall`, readable by root): a host whose
/// hook sleeps is in its call, where before the call it waits in `read` on its stdin.
/// False when the process is gone.
pub fn sleeping(pid: u32) -> bool {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        fs::read_to_string(task.path().join("syscall"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<libc::c_long>().ok())
            .is_some_and(|nr| nr == libc::SYS_nanosleep || nr == libc::SYS_clock_nanosleep)
    })
}

fn live_processes(cwd: &Path, exe_matches: impl Fn(&Path) -> bool) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut pids = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let proc_dir = entry.path();
        if fs::read_link(proc_dir.join("cwd")).ok().as_deref() != Some(cwd) {
            continue;
        }
        let Ok(exe) = fs::read_link(proc_dir.join("exe")) else {
            continue;
        };
        if !exe_matches(&exe) {
            continue;
        }
        let state = fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
        let zombie = state
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie {
            pids.push(pid);
        }
    }
    pids
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Writing JSON-RPC replies by hand, for the test hosts that do not use the SDK (they break
/// the protocol on purpose, so they frame their lines themselves).
pub mod raw_reply {
    use serde_json::{json, Value};
    use std::io::Write;

    /// Writes one response line for request `id` (a result, or `(code, message)` as an
    /// error) and flushes. Errors: the pipe to the supervisor is gone.
    pub fn send(
        out: &mut impl Write,
        id: &Value,
        reply: Result<Value, (i64, String)>,
    ) -> std::io::Result<()> {
        let line = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        };
        writeln!(out, "{line}")?;
        out.flush()
    }

    /// The -32601 answer to a method the host does not know.
    pub fn method_not_found(out: &mut impl Write, id: &Value, method: &str) -> std::io::Result<()> {
        send(
            out,
            id,
            Err((-32601, format!("method not found: {method}"))),
        )
    }
}

/// A tmpfs mounted on a directory for the life of the value (lazily unmounted on drop):
/// a small filesystem a test can fill.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. `2m`) on `dir` (created if missing); needs root.
    pub fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "mount tmpfs on {} (the test runs as root): {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir.to_owned())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}
