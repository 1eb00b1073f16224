//! A config of the reference system's 0.3.14 shape loads: a file naming every key its
//! 0.3.14 reads (our own text, docs/reference-system.md "Later releases") runs a round;
//! every key is acted on, so no warning is printed; the new keys' bounds are refused with exit 78 naming the key.

use agent_runner_e2e::{toml_string, ConfigBuilder, Project};

/// The base file's text with every 0.3.14 key (prompt `file` aside: `files` is its
/// exclusive twin). `goal` checks and the ledger live in the log dir.
fn every_key(p: &Project) -> String {
    let agent = toml_string(&p.agent_path().display().to_string());
    p.write("prompts/review.md", "Review.\n");
    format!(
        r#"schema_version = 1

[agent]
command = [{agent}]
prompt_arg_template = ["{{prompt}}"]
name = "demo-agent"
prompt_delivery = "argv"
exec_prefix = ["env", "AR_WORK={{work_dir}}"]
terminal_marker = '"type":"result"'
sigterm_grace_s = 7

[agent.env]
AR_E2E = "1"

[runtime]
work_dir = "."
log_dir = "./logs"
round_budget_s = 60
restart_delay_s = 1
round_log_retention = 10
narrative_file = "./logs/narrative.md"
transient_error_action = "back_off"
max_rounds = 3
stop_file = "./logs/STOP"
substrate_fingerprint_paths = ["README.md"]
fresh_eyes_every_n = 5
dry_run = false
max_grace_after_result_s = 30
grace_kill_ignore_patterns = ['snapshot-bash-']

[prompt]
files = ["./prompts/main.md", "./logs/lessons.md"]
concat_separator = "\n\n"
strip_yaml_frontmatter = true
inject_context = true
context_injection_mode = "prepend"

[vcs]
stash_idempotency_s = 5
dirty_action = "stash"

[phases]
list = ["build", "review"]
phase_policy = "wait"

[phases.build]
round_budget_s = 50

[phases.build.agent]
sigterm_grace_s = 12

[phases.review.runtime]
round_budget_s = 40

[phases.review.prompt]
files = ["./prompts/review.md", "./logs/lessons.md"]

[phases.review.schedule]
run_windows = ["00:00-24:00"]

[schedule]
timezone = "UTC"
run_windows = ["00:00-24:00"]
pause_windows = []

[plugins]
disable = []

[monitor]
auth_fail_patterns = ['token expired']
auth_fail_hint = "log in again"
auto_stop_on = ["oauth_fail", "disk_critical"]
remote_failure_tolerance_s = 90
anomaly_repetitive_window = 30
anomaly_repetitive_threshold = 15
round_progress_interval_s = 0
supervisor_stale_threshold_s = 600

[monitor.host_health.disk]
warning_pct = 100
critical_pct = 100
growth_window_s = 1800
disk_growth_pct_per_hr_warning = 5.0
inode_growth_pct_per_hr_warning = 5.0

[monitor.host_health.memory]
avail_min_mb = 1
free_low_mb = 1
swap_out_noise_floor_mb = 32

[monitor.host_health.pressure]
full_avg10_critical = 100.0
some_avg10_warning = 100.0
critical_consecutive_samples = 3
in_round_terminate = true
cgroup_growth_rate_warning_mb_per_min = 512.0
in_round_nudge = false

[monitor.host_health.brake]
memory_high = false
memory_high_step_pct = 0
warning_consecutive_samples = 3

[goal]
ledger = "./logs/lessons.md"

[[goal.checks]]
name = "readme"
cmd = ["test", "-f", "README.md"]
cwd = "."
timeout_s = 5
"#
    )
}

#[test]
fn a_config_naming_every_0_3_14_key_runs_a_round() {
    let p = Project::new();
    p.write_config_text(&every_key(&p));
    let out = p.run(&["round"]);
    out.assert_code(0);
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("warning"))
        .collect();
    // Every 0.3.14 key is acted on (`round_progress_interval_s` the last, issue 28):
    // none is warned about as ignored.
    assert!(warnings.is_empty(), "warnings: {out}");
    let events = p.events();
    let start = events
        .iter()
        .find(|e| e["event"] == "round_start")
        .expect("round_start");
    assert_eq!(start["phase"], "build", "{events:?}");
    let spawn = events
        .iter()
        .find(|e| e["event"] == "agent_spawn")
        .expect("agent_spawn");
    assert_eq!(spawn["timeout_s"], 50, "the phase's budget: {spawn}");
    let check = events
        .iter()
        .find(|e| e["event"] == "goal_check")
        .expect("goal_check");
    assert_eq!(check["name"], "readme");
    assert_eq!(check["satisfied"], true, "{check}");
}

#[test]
fn the_new_keys_bounds_are_refused_naming_the_key() {
    let p = Project::new();
    let base = every_key(&p);
    let cases: &[(&str, &str, &str)] = &[
        (
            "sigterm_grace_s = 7",
            "sigterm_grace_s = 13",
            "agent.sigterm_grace_s",
        ),
        (
            "round_progress_interval_s = 0",
            "round_progress_interval_s = -1",
            "monitor.round_progress_interval_s",
        ),
        (
            "memory_high_step_pct = 0",
            "memory_high_step_pct = 51",
            "monitor.host_health.brake.memory_high_step_pct",
        ),
        (
            "sigterm_grace_s = 12",
            "sigterm_grace_s = 0",
            "phases.build.agent",
        ),
        (
            "timeout_s = 5",
            "timeout_s = 31",
            "goal.checks[0].timeout_s",
        ),
        (
            "cmd = [\"test\", \"-f\", \"README.md\"]",
            "cmd = []",
            "goal.checks[0].cmd",
        ),
        (
            "ledger = \"./logs/lessons.md\"",
            "ledger = \"./logs/other.md\"",
            "goal.ledger",
        ),
        (
            "auto_stop_on = [\"oauth_fail\", \"disk_critical\"]",
            "auto_stop_on = [\"oauth_fail\", \"goal_check\"]",
            "monitor.auto_stop_on[1]",
        ),
        (
            "[[goal.checks]]",
            "stop_when = \"sometimes\"\n[[goal.checks]]",
            "goal.stop_when",
        ),
        (
            "max_rounds = 3",
            "max_rounds = 3\nmax_duration_s = 0",
            "runtime.max_duration_s",
        ),
        (
            "max_rounds = 3",
            "max_rounds = 3\nmax_rounds_per_hour = 0",
            "runtime.max_rounds_per_hour",
        ),
    ];
    for (from, to, key) in cases {
        assert!(base.contains(from), "{from}");
        p.write_config_text(&base.replacen(from, to, 1));
        let out = p.run(&["round"]);
        out.assert_code(78);
        assert!(out.stderr.contains(key), "{to}: {key} not named: {out}");
    }
}

#[test]
fn the_ledger_must_follow_the_main_prompt_and_survive_a_stash() {
    let p = Project::new();
    let base = ConfigBuilder::new(p.agent_path()).render();
    // The single `file =` form cannot carry the ledger.
    p.write_config_text(&format!("{base}[goal]\nledger = \"./logs/lessons.md\"\n"));
    let out = p.run(&["round"]);
    out.assert_code(78);
    assert!(out.stderr.contains("goal.ledger"), "{out}");
    // Listed, but inside the work tree and outside log_dir: a stash would take it.
    let text = base.replace(
        "file = \"./prompts/main.md\"",
        "files = [\"./prompts/main.md\", \"./lessons.md\"]",
    );
    p.write_config_text(&format!("{text}[goal]\nledger = \"./lessons.md\"\n"));
    let out = p.run(&["round"]);
    out.assert_code(78);
    assert!(out.stderr.contains("outside runtime.log_dir"), "{out}");
    // Outside the work tree: fine.
    let outside = p.tmp_dir().join("lessons.md");
    let outside = toml_string(&outside.display().to_string());
    let text = base.replace(
        "file = \"./prompts/main.md\"",
        &format!("files = [\"./prompts/main.md\", {outside}]"),
    );
    p.write_config_text(&format!("{text}[goal]\nledger = {outside}\n"));
    p.run(&["round"]).assert_code(0);
}

/// The reference system's digest of a config with `files` as prompt files, one check
/// (`readme`), `dirty_action = "stash"`, argv delivery and `env`, computed by its documented
/// formula (docs/reference-system.md, "Later releases") with Python's own `json` and
/// `hashlib`: an implementation of the bytes independent of ours.
fn python_digest(files: &[&std::path::Path], env: &[(&str, &str)]) -> String {
    let script = r#"
import hashlib, json, sys
files, env = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def sha(p):
    try:
        return hashlib.sha256(open(p, "rb").read()).hexdigest()
    except OSError:
        return None
payload = {
    "prompt_files": files,
    "prompt_file_sha256": [sha(p) for p in files],
    "checks": [{"name": "readme", "cmd": ["test", "-f", "README.md"]}],
    "vcs_dirty_action": "stash",
    "prompt_delivery": "argv",
    "agent_env": sorted(env),
}
blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
print(hashlib.sha256(blob.encode("utf-8")).hexdigest())
"#;
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            script,
            &serde_json::to_string(&files).unwrap(),
            &serde_json::to_string(env).unwrap(),
        ])
        .output()
        .expect("python3 (run tests/setup.sh)");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn round_start_carries_the_reference_config_digest() {
    let p = Project::new();
    let env = [("ZED", "naïve \"quoted\"\ttab"), ("ALPHA", "1")];
    let text = ConfigBuilder::new(p.agent_path())
        .agent_env(env[0].0, env[0].1)
        .agent_env(env[1].0, env[1].1)
        .render()
        .replace(
            "file = \"./prompts/main.md\"",
            "files = [\"./prompts/main.md\", \"./logs/lessons.md\"]",
        )
        + "[goal]\nledger = \"./logs/lessons.md\"\n[[goal.checks]]\nname = \"readme\"\ncmd = [\"test\", \"-f\", \"README.md\"]\n";
    p.write_config_text(&text);
    let prompt = p.dir().join("prompts/main.md");
    let lessons = p.dir().join("logs/lessons.md");
    p.run(&["round"]).assert_code(0);
    let first = python_digest(&[&prompt, &lessons], &env);
    p.run(&["round"]).assert_code(0);
    p.write("prompts/main.md", "A new prompt.\n");
    p.run(&["round"]).assert_code(0);
    let third = python_digest(&[&prompt, &lessons], &env);
    // No advisory was written: the ledger's hash is null, as in the reference.
    assert!(!lessons.exists());
    let starts = p.events_of("round_start");
    assert_eq!(starts.len(), 3);
    assert_eq!(starts[0]["config_digest"], first, "{}", starts[0]);
    assert_eq!(starts[0]["config_changed"], true, "no earlier round_start");
    assert_eq!(
        starts[0]["config_prompt_files"],
        serde_json::json!([prompt.display().to_string(), lessons.display().to_string()])
    );
    assert_eq!(
        starts[0]["config_check_names"],
        serde_json::json!(["readme"])
    );
    assert_eq!(starts[0]["config_vcs_dirty_action"], "stash");
    assert_eq!(starts[0]["config_prompt_delivery"], "argv");
    assert_eq!(starts[1]["config_digest"], first);
    assert_eq!(starts[1]["config_changed"], false);
    assert!(
        starts[1].get("config_prompt_files").is_none(),
        "{}",
        starts[1]
    );
    assert_eq!(starts[2]["config_digest"], third, "{}", starts[2]);
    assert_eq!(starts[2]["config_changed"], true);
    assert_ne!(first, third);
}
