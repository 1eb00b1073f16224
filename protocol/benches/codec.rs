//! Encode / decode cost of the four messages on every round's path, as the supervisor and
//! a host handle them: `encode` is serialization to one JSON line; `decode` is parsing
//! that line and the strict validation of `agent_runner_protocol`'s `decode_*` functions.
//!
//! Run with `cargo bench -p agent-runner-protocol --bench codec` (or `bash bench/criterion.sh`).

use agent_runner_protocol::{
    decode, decode_dirty_result, decode_initialize_result, decode_spawn_decision,
    BeforeSpawnParams, Context, DirtyAction, Family, HookDecl, HookName, InitializeResult,
    SpawnAction, SpawnDecision, SpawnView, VcsContext,
};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use serde::Serialize;
use serde_json::Value;

fn hook(name: &str) -> HookName {
    serde_json::from_value(Value::String(name.into())).expect("valid hook name")
}

/// A realistic `before_spawn` params: a 700-character prompt in argv, 30 env names.
fn before_spawn_params() -> BeforeSpawnParams {
    BeforeSpawnParams {
        hook: hook("pause_file"),
        ctx: Context {
            work_dir: "/home/dev/project".into(),
            log_dir: "/home/dev/project/logs".into(),
            project: "project".into(),
            round_num: 42,
            phase: Some("build".into()),
            agent_name: Some("claude".into()),
            agent_binary: Some("claude".into()),
            agent_log_path: None,
            dry_run: false,
            vcs: Some(VcsContext {
                dirty_action: "stash".into(),
                stash_idempotency_s: 300,
            }),
        },
        spawn: SpawnView {
            argv: vec![
                "claude".into(),
                "-p".into(),
                "Keep a journal and improve the code. ".repeat(19),
            ],
            env_names: (0..30).map(|i| format!("ENV_NAME_{i}")).collect(),
        },
    }
}

fn spawn_decision() -> SpawnDecision {
    SpawnDecision {
        action: SpawnAction::Defer,
        defer_s: 30,
        reason: "pause file present: logs/PAUSE".into(),
    }
}

fn dirty_files() -> Vec<String> {
    (0..20).map(|i| format!("src/module_{i}.rs")).collect()
}

fn dirty_result() -> Option<DirtyAction> {
    Some(DirtyAction::Commit {
        message: "agent-runner: round 42 work in progress".into(),
        paths: Some(dirty_files()[..5].to_vec()),
    })
}

fn initialize_result() -> InitializeResult {
    InitializeResult {
        protocol_version: agent_runner_protocol::PROTOCOL_VERSION,
        name: "example-host".into(),
        version: "0.1.0".into(),
        hooks: vec![
            HookDecl {
                family: Family::SpawnHook,
                name: hook("pause_file"),
                priority: None,
            },
            HookDecl {
                family: Family::DirtyHandler,
                name: hook("auto_commit"),
                priority: Some(10),
            },
        ],
        event_kinds: Vec::new(),
        owned_paths: Vec::new(),
    }
}

fn line<T: Serialize>(message: &T) -> String {
    serde_json::to_string(message).expect("serializes")
}

fn parse(line: &str) -> Value {
    serde_json::from_str(line).expect("one JSON value")
}

fn codec(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode");
    let params = before_spawn_params();
    group.bench_function("before_spawn_params", |b| {
        b.iter(|| line(black_box(&params)))
    });
    let decision = spawn_decision();
    group.bench_function("spawn_decision", |b| b.iter(|| line(black_box(&decision))));
    let dirty = dirty_result();
    group.bench_function("handle_dirty_result", |b| {
        b.iter(|| line(black_box(&dirty)))
    });
    let init = initialize_result();
    group.bench_function("initialize_result", |b| b.iter(|| line(black_box(&init))));
    group.finish();

    let mut group = c.benchmark_group("decode_validate");
    let text = line(&params);
    group.bench_function("before_spawn_params", |b| {
        b.iter(|| decode::<BeforeSpawnParams>(parse(black_box(&text))).expect("valid"))
    });
    let text = line(&decision);
    group.bench_function("spawn_decision", |b| {
        b.iter(|| decode_spawn_decision(parse(black_box(&text))).expect("valid"))
    });
    let text = line(&dirty);
    let files = dirty_files();
    group.bench_function("handle_dirty_result", |b| {
        b.iter(|| decode_dirty_result(parse(black_box(&text)), &files).expect("valid"))
    });
    let text = line(&init);
    group.bench_function("initialize_result", |b| {
        b.iter(|| decode_initialize_result(parse(black_box(&text))).expect("valid"))
    });
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
