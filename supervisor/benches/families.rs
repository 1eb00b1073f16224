//! Criterion benchmark of the per-round cost the hook families add, with one warm host per
//! family, all confined (`sandbox = "require"`: Landlock + seccomp), on a real git work
//! tree (docs/protocol.md §5.9 gives the order):
//! - `round_families/added`: what this family set adds to a round: the pre-round hook and
//!   the context enricher (one concurrent batch, `pre_round::consult`) and the detector
//!   (`detect_hooks::poll`);
//! - `round_families/all_per_round`: the same plus the spawn hook (`spawn_gate::consult`).
//!
//! Hosts: `examples/test-report` (Python zipapp: pre_round, context_enricher,
//! serve_startup), `no-commit-detector` and `spawn-pause-file` (Rust, release builds).
//! Serve-startup hooks run once per serve and dirty handlers only for dirty trees, so
//! neither is in the per-round figure. Run with `bash bench/criterion.sh`.

// Shared with hooks.rs and host_call.rs; this benchmark uses only its runtime, context and
// spawn view.
#[allow(dead_code)]
mod common;

use agent_runner::config;
use agent_runner::hosts::builtin::DetectorHost;
use agent_runner::hosts::sandbox::SandboxGate;
use agent_runner::hosts::HostManager;
use agent_runner::record::events::EventLog;
use agent_runner::record::stop::StopLevel;
use agent_runner::runtime::steps::{detect_hooks, pre_round, spawn_gate};
use agent_runner_plugin_host::common::probe::probe;
use agent_runner_protocol::{Family, LastRound, ProjectState};
use criterion::{criterion_group, criterion_main, Criterion};
use std::path::{Path, PathBuf};
use std::process::Command;

fn release(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/release")
        .join(name);
    assert!(
        path.is_file(),
        "{} not found: run bash bench/criterion.sh",
        path.display()
    );
    path
}

/// `dir` as a git work tree with one commit and a JUnit report with one failing test.
fn work_tree(dir: &Path) {
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::create_dir_all(dir.join("reports")).unwrap();
    std::fs::write(dir.join("prompts/main.md"), "bench").unwrap();
    std::fs::write(
        dir.join("reports/junit.xml"),
        "<testsuite><testcase name=\"a\"/><testcase name=\"b\"><failure/></testcase></testsuite>",
    )
    .unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "prompts"],
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-qm",
            "bench",
        ],
    ] {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    }
}

fn config_text(pyz: &Path) -> String {
    let pin = |p: &Path| {
        agent_runner_plugin_host::host::pin::open_and_hash(p)
            .unwrap()
            .sha256
    };
    let (detector, pause) = (release("no-commit-detector"), release("spawn-pause-file"));
    format!(
        "schema_version = 1\n[agent]\ncommand = [\"true\"]\n[runtime]\nlog_dir = \"./logs\"\n\
         [plugins]\nsandbox = \"require\"\nspawn_override_allow = [\"junit_gate\"]\n\
         [plugins.pin]\ntests = \"{}\"\nstall = \"{}\"\npause = \"{}\"\n\
         [plugins.hosts.tests]\ncommand = [{pyz:?}]\n\
         provides = [\"pre_round\", \"context_enricher\", \"serve_startup\"]\n\
         config = {{ max_failures = 5 }}\n\
         [plugins.hosts.stall]\ncommand = [{detector:?}]\nprovides = [\"detector\"]\n\
         [plugins.hosts.pause]\ncommand = [{pause:?}]\nprovides = [\"spawn_hook\"]\n",
        pin(pyz),
        pin(&detector),
        pin(&pause)
    )
}

fn round_families(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    work_tree(dir.path());
    let pyz = dir.path().join("test-report.pyz");
    let built = Command::new("bash")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/test-report/build.sh"))
        .arg(&pyz)
        .output()
        .unwrap();
    assert!(built.status.success(), "build test-report.pyz");
    let path = dir.path().join("agent-runner.toml");
    std::fs::write(&path, config_text(&pyz)).unwrap();
    let config = config::load(&path).expect("config");
    let gate = SandboxGate::evaluate(config.plugins.sandbox, probe()).expect("require");
    let events = EventLog::new(&config.runtime.log_dir);
    let rt = common::runtime();
    // Third-party hosts alone: the built-in detectors are post-round hooks, not measured here.
    let mut hosts = rt.block_on(HostManager::boot(
        &config,
        &gate,
        &events,
        &DetectorHost::Off,
    ));
    for family in [
        Family::PreRound,
        Family::ContextEnricher,
        Family::Detector,
        Family::SpawnHook,
    ] {
        assert_eq!(hosts.hooks(family).len(), 1, "{family} host did not start");
    }
    let ctx = common::context(&config);
    let spawn = common::spawn_view();
    let state = ProjectState {
        rounds_completed: 1,
        last_round: Some(LastRound {
            round_num: 1,
            exit_code: Some(0),
            exit_cause: "exited".into(),
            duration_s: 1.0,
            dirty_outcome: None,
        }),
    };
    let (_stop_tx, mut stop) = tokio::sync::watch::channel(StopLevel::Run);
    let allow = config.plugins.spawn_override_allow.clone();
    let monitor = config.monitor.clone();
    let mut group = c.benchmark_group("round_families");
    group.bench_function("added", |b| {
        b.iter(|| {
            rt.block_on(async {
                let pre = pre_round::consult(&mut hosts, &allow, &events, &ctx, false, &mut stop)
                    .await
                    .expect("not stopped");
                assert!(pre.skip.is_none() && pre.enrichments.len() == 1);
                let auto =
                    detect_hooks::poll(&mut hosts, &monitor, &events, &ctx, &state, &mut stop);
                assert!(auto.await.is_none());
            })
        })
    });
    group.bench_function("all_per_round", |b| {
        b.iter(|| {
            rt.block_on(async {
                let pre = pre_round::consult(&mut hosts, &allow, &events, &ctx, false, &mut stop)
                    .await
                    .expect("not stopped");
                assert!(pre.skip.is_none());
                let verdict =
                    spawn_gate::consult(&mut hosts, &allow, &events, &ctx, &spawn, &mut stop).await;
                assert_eq!(verdict, spawn_gate::Verdict::Proceed);
                let auto =
                    detect_hooks::poll(&mut hosts, &monitor, &events, &ctx, &state, &mut stop);
                assert!(auto.await.is_none());
            })
        })
    });
    group.finish();
    let failures: Vec<_> = hosts
        .status()
        .into_iter()
        .filter(|h| h.stats.failures > 0)
        .collect();
    assert!(
        failures.is_empty(),
        "host calls failed during the benchmark"
    );
    rt.block_on(hosts.shutdown());
}

criterion_group!(benches, round_families);
criterion_main!(benches);
