//! Host health (`[monitor.host_health]`, docs/operations.md "Host health") on the real
//! host: a log dir on a small tmpfs filled past `disk.critical_pct` defers rounds with the
//! reason and they resume once space returns; real memory readings against thresholds no
//! host meets defer `round`; sustained critical memory pressure ends a running round.

use agent_runner_e2e::{wait_until, Project, Tmpfs};
use std::time::Duration;

#[test]
fn a_full_log_dir_defers_rounds_until_space_returns() {
    let p = Project::new();
    let _fs = Tmpfs::mount(&p.log_dir(), "2m");
    // 2 MiB filesystem, 1.9 MiB taken: ~95% used, room left for the events.
    let fill = p.log_dir().join("fill");
    std::fs::write(&fill, vec![0u8; 1900 * 1024]).unwrap();
    p.write_config(&p.config().dirty_action("ignore").disk_critical_pct(90.0));
    let doctor = p.run(&["--json", "doctor"]);
    doctor.assert_code(1);
    let report: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(&doctor.stdout).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "host_health")
        .expect("a host_health check");
    assert_eq!(check["ok"], false, "{check}");
    assert!(
        check["reason"].as_str().unwrap().contains("(disk)"),
        "{check}"
    );
    let serve = p.spawn(&["serve", "--max-rounds", "1"]);
    let deferred = wait_until("round_deferred", Duration::from_secs(30), || {
        p.events_of("round_deferred").into_iter().next()
    });
    assert_eq!(deferred["severity"], "critical", "{deferred}");
    assert_eq!(deferred["signal"], "disk", "{deferred}");
    let message = deferred["message"].as_str().unwrap();
    assert!(
        message.contains("% used") && message.contains("critical_pct 90"),
        "{message}"
    );
    // Several re-checks (restart_delay_s = 1) later: still no round, one deferral recorded.
    std::thread::sleep(Duration::from_secs(3));
    assert!(p.events_of("round_start").is_empty(), "{}", p.events_text());
    assert_eq!(
        p.events_of("round_deferred").len(),
        1,
        "{}",
        p.events_text()
    );

    std::fs::remove_file(&fill).unwrap();
    let out = serve.wait(Duration::from_secs(60));
    out.assert_code(0);
    let kinds = p.event_kinds();
    let resumed = kinds
        .iter()
        .position(|k| k == "round_resumed")
        .expect("round_resumed");
    let started = kinds
        .iter()
        .position(|k| k == "round_start")
        .expect("round_start");
    assert!(resumed < started, "{kinds:?}");
    assert!(
        p.events_of("round_resumed")[0]["deferred_for_s"]
            .as_f64()
            .unwrap()
            >= 3.0
    );
    assert_eq!(p.events_of("round_end").len(), 1);
}

#[test]
fn low_memory_defers_a_round_with_the_reading() {
    let p = Project::new();
    // Thresholds above any real host's MemAvailable and MemFree.
    p.write_config(
        &p.config().extra(
            "[monitor.host_health.memory]\navail_min_mb = 100000000\nfree_low_mb = 100000000",
        ),
    );
    let out = p.run(&["round"]);
    out.assert_code(75);
    assert!(out.stderr.contains("combined_low"), "{out}");
    let deferred = p.events_of("round_deferred");
    assert_eq!(deferred.len(), 1, "{}", p.events_text());
    assert_eq!(deferred[0]["signal"], "combined_low");
    assert!(deferred[0]["message"]
        .as_str()
        .unwrap()
        .contains("MemAvailable"));
    assert!(p.events_of("round_start").is_empty());
}

#[test]
fn sustained_pressure_ends_a_running_round() {
    let p = Project::new();
    // PSI cannot be raised on demand: the memory pressure file is replaced by one the test
    // writes (AGENT_RUNNER_TEST_PRESSURE_FILE), in the kernel's format.
    let psi = p.tmp_dir().join("pressure-memory");
    let calm = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
    std::fs::write(&psi, calm).unwrap();
    p.write_config(
        &p.config()
            .agent_env("DEMO_AGENT_SLEEP", "120")
            .round_budget_s(300)
            .extra("[monitor.host_health.pressure]\nsample_interval_s = 1\ncritical_consecutive_samples = 2"),
    );
    let mut cmd = p.command(&["round"]);
    cmd.env("AGENT_RUNNER_TEST_PRESSURE_FILE", &psi);
    let round = p.spawn_with(cmd);
    wait_until("agent_spawn", Duration::from_secs(30), || {
        p.events_of("agent_spawn").into_iter().next()
    });
    std::fs::write(
        &psi,
        "some avg10=95.00 avg60=50.00 avg300=10.00 total=1\nfull avg10=80.00 avg60=40.00 avg300=8.00 total=1\n",
    )
    .unwrap();
    let out = round.wait(Duration::from_secs(60));
    out.assert_code(1);
    let samples = p.events_of("round_mem_critical_sample");
    assert_eq!(samples.len(), 2, "{}", p.events_text());
    assert_eq!(samples[1]["consecutive"], 2);
    assert_eq!(samples[0]["context"]["psi_full_avg10"], 80.0);
    let ended = p.events_of("round_mem_terminated");
    assert_eq!(ended.len(), 1, "{}", p.events_text());
    assert_eq!(ended[0]["signal"], "psi");
    assert_eq!(ended[0]["consecutive"], 2);
    let exit = &p.events_of("agent_exit")[0];
    assert_eq!(exit["exit_cause"], "host_pressure", "{exit}");
    assert!(exit["duration_s"].as_f64().unwrap() < 60.0, "{exit}");
}
