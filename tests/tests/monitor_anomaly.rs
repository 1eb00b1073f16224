//! `monitor` (anomaly mode) against a real `serve`: a filled log-dir disk raises
//! `disk_critical`, which is in the default `auto_stop_on`, so the monitor records the alert
//! and stops the supervisor. `narrate` tells the same record in sentences.

use agent_runner_e2e::{wait_until, Project, Tmpfs};
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
    std::thread::sleep(Duration::from_millis(500));
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
