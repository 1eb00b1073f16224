//! Criterion benchmarks of third-party hooks through real hosts (the example
//! `spawn-pause-file`, no pause file, so every answer is proceed), all confined
//! (`sandbox = "require"`: Landlock + seccomp):
//! - `warm_before_spawn`: one `spawn_hook/before_spawn` round trip to a running host;
//! - `cold_start`: `HostManager::boot` (resolve, hash, pin check, confined launch,
//!   `initialize`) and `shutdown` of one host;
//! - `round_cost_vs_hosts/N`: one round's spawn consultation (`spawn_gate::consult`) with
//!   N = 1, 4, 16 running hosts.
//!
//! Run with `bash bench/criterion.sh` (builds the host first); setup is in `common/`.
//! `host_call.rs` measures the first two with p50/p99.

mod common;

use agent_runner::hosts::builtin::DetectorHost;
use agent_runner::hosts::HostManager;
use agent_runner::record::stop::StopLevel;
use agent_runner::runtime::steps::spawn_gate::{self, Verdict};
use agent_runner_protocol::Family;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn warm_before_spawn(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = common::runtime();
    let project = common::project(dir.path(), &common::host_binary(), "require", 1);
    let mut manager = rt.block_on(HostManager::boot(
        &project.config,
        &project.gate,
        &project.events,
        &DetectorHost::Off,
    ));
    let hook = manager.hooks(Family::SpawnHook).remove(0);
    let params = common::before_spawn_params(&project.config, &hook.name);
    c.bench_function("warm_before_spawn", |b| {
        b.iter(|| {
            let answer = rt.block_on(manager.call(&hook, params.clone()));
            assert!(matches!(answer, Ok(Some(_))), "call failed: {answer:?}");
        })
    });
    rt.block_on(manager.shutdown());
}

fn cold_start(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = common::runtime();
    let project = common::project(dir.path(), &common::host_binary(), "require", 1);
    let mut group = c.benchmark_group("cold_start");
    group.sample_size(20);
    group.bench_function("boot_and_shutdown_one_host", |b| {
        b.iter(|| {
            let manager = rt.block_on(HostManager::boot(
                &project.config,
                &project.gate,
                &project.events,
                &DetectorHost::Off,
            ));
            assert_eq!(
                manager.hooks(Family::SpawnHook).len(),
                1,
                "host did not start"
            );
            rt.block_on(manager.shutdown());
        })
    });
    group.finish();
}

fn round_cost_vs_hosts(c: &mut Criterion) {
    let host = common::host_binary();
    let rt = common::runtime();
    let mut group = c.benchmark_group("round_cost_vs_hosts");
    for hosts in [1usize, 4, 16] {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = common::project(dir.path(), &host, "require", hosts);
        let mut manager = rt.block_on(HostManager::boot(
            &project.config,
            &project.gate,
            &project.events,
            &DetectorHost::Off,
        ));
        assert_eq!(
            manager.hooks(Family::SpawnHook).len(),
            hosts,
            "hosts did not start"
        );
        let ctx = common::context(&project.config);
        let spawn = common::spawn_view();
        let (_stop_tx, mut stop) = tokio::sync::watch::channel(StopLevel::Run);
        let allow = &project.config.plugins.spawn_override_allow;
        group.bench_with_input(BenchmarkId::from_parameter(hosts), &hosts, |b, _| {
            b.iter(|| {
                let verdict = rt.block_on(spawn_gate::consult(
                    &mut manager,
                    allow,
                    &project.events,
                    &ctx,
                    &spawn,
                    &mut stop,
                ));
                assert_eq!(verdict, Verdict::Proceed);
            })
        });
        rt.block_on(manager.shutdown());
    }
    group.finish();
}

criterion_group!(benches, warm_before_spawn, cold_start, round_cost_vs_hosts);
criterion_main!(benches);
