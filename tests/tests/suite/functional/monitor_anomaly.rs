//! `monitor` (anomaly mode) against a real `serve`: a filled log-dir disk raises
//! `disk_critical`, which is in the default `auto_stop_on`, so the monitor records the alert
//! and stops the supervisor. `narrate` tells the same record in sentences.

use agent_runner_e2e::{handles_signal, wait_until, Project, Tmpfs};
use std::time::Duration;

#[test]
fn disk_critical_stops_the_supervisor() {
    let p = Project::new();
    let _fs = Tmpfs::mount(&p.log_dir(), "2m");
    std::fs::write(p.log_dir().join("fill"), vec![0u8; 1900 * 1024]).unwrap();
    p.write_config(
        &p.config()
            .dirty_action("ignore")
            .restart_delay_s(2)
            .disk_critical_pct(90.0),
    );
    let serve = p.spawn(&["serve"]);
    wait_until("serve to defer", Duration::from_secs(30), || {
        p.events_of("round_deferred").into_iter().next()
    });
    let mut narrate = p.command(&["monitor", "--mode", "narrate"]);
    narrate.env("AGENT_RUNNER_LOG", "warn");
    let narrate = p.spawn_with(narrate);
    // narrate reads from the record's end as it is when it starts, then installs its
    // SIGINT handler: once it handles SIGINT, what follows reaches it.
    wait_until(
        "narrate to follow the record",
        Duration::from_secs(10),
        || handles_signal(narrate.pid(), libc::SIGINT).then_some(()),
    );
    let monitor = p.spawn(&["--json", "monitor", "--interval", "1"]);

    let out = serve.wait(Duration::from_secs(60));
    out.assert_code(0);
    let alerts = p.events_of("monitor_alert_emitted");
    assert!(!alerts.is_empty(), "{}\n{out}", p.events_text());
    let alert = &alerts[0];
    assert_eq!(alert["detector"], "disk_critical", "{alert}");
    assert_eq!(alert["auto_action"], "stop_service");
    // Recorded once the stop request is answered, which can be after serve exits.
    let triggered = wait_until(
        "monitor_auto_stop_triggered",
        Duration::from_secs(10),
        || {
            p.events_of("monitor_auto_stop_triggered")
                .into_iter()
                .next()
        },
    );
    assert_eq!(triggered["detector"], "disk_critical");
    assert_eq!(
        p.events_of("serve_stopping").len(),
        1,
        "{}",
        p.events_text()
    );
    assert!(p.events_of("round_start").is_empty());
    assert_eq!(p.events_of("monitor_started")[0]["mode"], "anomaly");

    monitor.signal(libc::SIGTERM);
    let out = monitor.wait(Duration::from_secs(10));
    out.assert_code(0);
    let printed: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(printed["detector"], "disk_critical", "{out}");

    // The alert and serve's stop land within milliseconds of each other; narrate reads
    // every 250 ms, so wait for both before interrupting it.
    wait_until(
        "narrate to tell the alert and the stop",
        Duration::from_secs(10),
        || {
            let told = narrate.stdout_so_far();
            (told.contains("critical alert from disk_critical")
                && told.contains("serve_stopping: reason=signal"))
            .then_some(())
        },
    );
    narrate.signal(libc::SIGINT);
    let told = narrate.wait(Duration::from_secs(10));
    told.assert_code(0);
    let alert_at = told.stdout.find("critical alert from disk_critical");
    let stop_at = told.stdout.find("serve_stopping: reason=signal");
    assert!(alert_at < stop_at, "the record's order: {told}");
}

/// `disk_growth` (the reference's alert, docs/operations.md "monitor"): an agent that
/// writes 2 MiB into the tree's log dir (a 16 MiB tmpfs) each round makes its used share
/// climb far past `disk_growth_pct_per_hr_warning`; the monitor warns once for the episode,
/// with the configured threshold and window, and never stops the supervisor.
#[test]
fn disk_growth_warns_once_and_does_not_stop() {
    let p = Project::new();
    let _fs = Tmpfs::mount(&p.log_dir(), "16m");
    let agent = p.script(
        "agent/grow.sh",
        "#!/bin/sh\nhead -c 2097152 /dev/zero > \"$GROW_DIR/grow-$$\"\n",
    );
    p.write_config(
        &agent_runner_e2e::ConfigBuilder::new(&agent)
            .dirty_action("ignore")
            .restart_delay_s(1)
            .agent_env("GROW_DIR", &p.log_dir().display().to_string())
            // The builder's config ends in its `[monitor.host_health.disk]` table.
            .extra("growth_window_s = 120\ndisk_growth_pct_per_hr_warning = 100.0\n"),
    );
    // A first round makes the state dir the monitor records into.
    p.run(&["serve", "--max-rounds", "1"]).assert_code(0);
    let monitor = p.spawn(&["--json", "monitor", "--interval", "1"]);
    wait_until("monitor_started", Duration::from_secs(10), || {
        p.events_of("monitor_started").into_iter().next()
    });
    // Its first look, the window's oldest reading, follows at once the SIGTERM handler it
    // installs after `monitor_started`: wait for it before the disk grows.
    wait_until("the monitor's first look", Duration::from_secs(10), || {
        handles_signal(monitor.pid(), libc::SIGTERM).then_some(())
    });
    p.run(&["serve", "--max-rounds", "4"]).assert_code(0);
    let alert = wait_until("disk_growth", Duration::from_secs(10), || {
        p.events_of("monitor_alert_emitted")
            .into_iter()
            .find(|a| a["detector"] == "disk_growth")
    });
    assert_eq!(alert["severity"], "warning", "{alert}");
    assert_eq!(alert["auto_action"], "none", "{alert}");
    let message = alert["message"].as_str().unwrap();
    assert!(
        message.starts_with("disk +")
            && message.contains("%/hr (>= 100)")
            && message.ends_with("over the last 120s"),
        "{alert}"
    );
    // The numbers behind the words, as fields (the reference's five keys, then ours).
    let c = &alert["context"];
    let rate = c["disk_pct_per_hr"].as_f64().unwrap();
    assert!(rate >= 100.0, "{alert}");
    assert_eq!(c["disk_threshold_pct_per_hr"], 100.0, "{alert}");
    assert_eq!(c["inode_threshold_pct_per_hr"], 5.0, "{alert}");
    assert_eq!(c["window_s"], 120, "{alert}");
    assert!(
        c["inode_pct_per_hr"].is_f64(),
        "tmpfs counts inodes: {alert}"
    );
    let elapsed = c["elapsed_s"].as_f64().unwrap();
    assert!(elapsed > 0.0 && elapsed <= 120.0, "{alert}");
    let (from, to) = (
        c["disk_used_pct_from"].as_f64().unwrap(),
        c["disk_used_pct_to"].as_f64().unwrap(),
    );
    assert!(to > from, "{alert}");
    // The rate is the two readings' difference over the time between them (to the
    // rounding of each).
    let expected = (to - from) * 3600.0 / elapsed;
    assert!(
        (rate - expected).abs() <= expected * 0.1 + 1.0,
        "{rate} vs {expected}: {alert}"
    );
    let freed =
        c["disk_free_bytes_from"].as_u64().unwrap() - c["disk_free_bytes_to"].as_u64().unwrap();
    assert!(
        freed >= 2 * 1024 * 1024,
        "at least one round's 2 MiB written: {alert}"
    );
    assert!(
        c["inodes_used_to"].as_u64().unwrap() > c["inodes_used_from"].as_u64().unwrap(),
        "one file per round: {alert}"
    );
    // Two more looks while the readings stay in the window: still one alert.
    std::thread::sleep(Duration::from_millis(2500));
    monitor.signal(libc::SIGTERM);
    let out = monitor.wait(Duration::from_secs(10));
    out.assert_code(0);
    let growth: Vec<_> = p
        .events_of("monitor_alert_emitted")
        .into_iter()
        .filter(|a| a["detector"] == "disk_growth")
        .collect();
    assert_eq!(growth.len(), 1, "{}", p.events_text());
    assert!(p.events_of("monitor_auto_stop_triggered").is_empty());
    assert_eq!(p.events_of("round_start").len(), 5, "{}", p.events_text());
    assert!(out.stdout.contains("\"detector\":\"disk_growth\""), "{out}");
}
