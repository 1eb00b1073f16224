//! Criterion benchmarks of post-round detection (docs/detectors.md), against the goal of
//! ≤ 1 ms per round, warm:
//! - `detect_all_64k`: every built-in detector (all seven, each treating the log as its
//!   own CLI's) over one 64 KiB round log of stream-JSON lines ending in a usage-limit
//!   result: the parsing work, in process;
//! - `confined_round_64k`: what a round costs the supervisor: the last 16 KiB of that
//!   log made wire-safe (`log_tail`), one `post_round/after_round` call to the running
//!   built-in detector host (the release `agent-runner` in host mode, Landlock + seccomp),
//!   and the verdict decoded and combined (`post_round::consult`).
//!
//! Run with `bash bench/post_round.sh` (builds the release binary first).

// Shared with the other hook benchmarks; this one uses only the project and context parts.
#[allow(dead_code)]
mod common;

use agent_runner::detectors::{detect, Round, DIALECTS};
use agent_runner::hosts::builtin::DetectorHost;
use agent_runner::hosts::HostManager;
use agent_runner::record::stop::StopLevel;
use agent_runner::runtime::post_round::{self, Decision, Judged};
use agent_runner::runtime::session_usage::SessionUsage;
use agent_runner_protocol::limits::MAX_LOG_TAIL_BYTES;
use agent_runner_protocol::tail::log_tail;
use agent_runner_protocol::RoundOutcome;
use criterion::{criterion_group, criterion_main, Criterion};
use std::path::PathBuf;

/// 64 KiB of a claude stream-JSON round log: assistant turns and tool results, then a
/// usage-limit result whose reset lies two hours ahead.
fn log_64k() -> String {
    let reset = jiff::Timestamp::now().as_second() + 7200;
    let mut log = String::new();
    let mut i = 0;
    while log.len() < 64 * 1024 - 600 {
        log.push_str(&format!(
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"msg_{i:04}\",\"role\":\"assistant\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"toolu_{i}\",\"name\":\"Bash\",\"input\":{{\"command\":\"cargo test -p crate_{i} -- --nocapture\"}}}}],\"usage\":{{\"input_tokens\":{i},\"output_tokens\":42}}}}}}\n\
             {{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":[{{\"tool_use_id\":\"toolu_{i}\",\"type\":\"tool_result\",\"content\":\"test result: ok. {i} passed; 0 failed\",\"is_error\":false}}]}}}}\n"
        ));
        i += 1;
    }
    log.push_str(&format!(
        "{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"Claude AI usage limit reached|{reset}\",\"usage\":{{\"input_tokens\":0,\"output_tokens\":0}}}}\n"
    ));
    log
}

fn outcome() -> RoundOutcome {
    RoundOutcome {
        round_num: 7,
        phase: None,
        exit_code: Some(1),
        signal: None,
        exit_cause: "exited".into(),
        duration_s: 0.4,
        timed_out: false,
    }
}

fn detect_all_64k(c: &mut Criterion) {
    let log = log_64k();
    assert!(log.len() >= 64 * 1024 - 1024, "{}", log.len());
    let outcome = outcome();
    let local = jiff::tz::TimeZone::UTC;
    c.bench_function("detect_all_64k", |b| {
        b.iter(|| {
            let now = jiff::Timestamp::now();
            for dialect in DIALECTS {
                let round = Round {
                    outcome: &outcome,
                    agent_binary: dialect.binary,
                    tail: &log,
                    now,
                    local: &local,
                    auth_patterns: &[],
                };
                assert!(detect(dialect, &round).is_some(), "{}", dialect.detector);
            }
        })
    });
}

/// The release binary that runs as the detector host.
fn release_binary() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/agent-runner");
    assert!(
        path.is_file(),
        "{} not found: run `cargo build --release -p agent-runner`",
        path.display()
    );
    path
}

fn confined_round_64k(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = common::runtime();
    let project = common::project(dir.path(), &common::host_binary(), "require", 0);
    let mut manager = rt.block_on(HostManager::boot(
        &project.config,
        &project.gate,
        &project.events,
        &DetectorHost::Executable(release_binary()),
    ));
    let log = log_64k();
    let mut ctx = common::context(&project.config);
    ctx.agent_binary = Some("/usr/local/bin/claude".into());
    let outcome = outcome();
    let (_tx, mut stop) = tokio::sync::watch::channel(StopLevel::Run);
    c.bench_function("confined_round_64k", |b| {
        b.iter(|| {
            let tail = log_tail(&log.as_bytes()[log.len().saturating_sub(MAX_LOG_TAIL_BYTES)..]);
            let judged = Judged {
                ctx: &ctx,
                outcome: &outcome,
                log_tail: &tail,
                cli: Some("claude"),
                session: None,
                billed: Default::default(),
            };
            let decision = rt
                .block_on(post_round::consult(
                    &mut manager,
                    &mut SessionUsage::default(),
                    &project.config.monitor,
                    &project.config.plugins.spawn_override_allow,
                    &project.events,
                    &judged,
                    &mut stop,
                ))
                .decision;
            assert!(matches!(decision, Decision::BackOff { .. }), "{decision:?}");
        })
    });
    rt.block_on(manager.shutdown());
}

criterion_group!(benches, detect_all_64k, confined_round_64k);
criterion_main!(benches);
