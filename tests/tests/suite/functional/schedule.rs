//! `[schedule]` on real `serve` runs: a closed schedule pauses serve (and a stop lands at
//! once, a SIGHUP looks at the re-read schedule), `--ignore-schedule` runs anyway, and `phase_policy = "skip"` passes over a phase
//! outside its own schedule. The window arithmetic (wrap past midnight, weekdays, `24:00`,
//! zones and daylight saving) is tested with a fixed clock in `config::schedule`.

use agent_runner_e2e::{wait_until, Project};
use std::time::{Duration, Instant};

#[test]
fn a_closed_schedule_pauses_serve_and_a_stop_lands_at_once() {
    let p = Project::new();
    let text = p.config().dirty_action("ignore").render()
        + "\n[schedule]\ntimezone = \"Europe/Berlin\"\npause_windows = [\"00:00-24:00\"]\n";
    p.write_config_text(&text);
    let serve = p.spawn(&["serve"]);
    let paused = p.wait_for_event("schedule_paused");
    assert_eq!(paused["timezone"], "Europe/Berlin", "{paused}");
    let status = wait_until("status to say paused", Duration::from_secs(10), || {
        let out = p.run(&["status"]);
        out.stdout
            .contains("paused by schedule until")
            .then_some(out)
    });
    assert!(
        status.stdout.contains("paused by schedule until"),
        "{status}"
    );
    let asked = Instant::now();
    serve.signal(libc::SIGTERM);
    serve.wait(Duration::from_secs(30)).assert_code(0);
    // The pause had an hour to go; the ≤ 1 s target is measured by bench/stop_latency.sh.
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    assert!(p.events_of("round_start").is_empty(), "{}", p.events_text());
    assert_eq!(p.events_of("schedule_resumed")[0]["reason"], "stop");

    // --ignore-schedule runs the round anyway.
    p.run(&["serve", "--max-rounds", "1", "--ignore-schedule"])
        .assert_code(0);
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
}

#[test]
fn a_sighup_during_a_pause_looks_at_the_new_schedule() {
    let p = Project::new();
    let open = p.config().dirty_action("ignore").render();
    p.write_config_text(&format!(
        "{open}\n[schedule]\ntimezone = \"UTC\"\npause_windows = [\"00:00-24:00\"]\n"
    ));
    let serve = p.spawn(&["serve", "--max-rounds", "1"]);
    p.wait_for_event("schedule_paused");
    // The operator drops the schedule and says so; the round runs at once.
    p.write_config_text(&open);
    serve.signal(libc::SIGHUP);
    serve.wait(Duration::from_secs(60)).assert_code(0);
    let resumed = p.events_of("schedule_resumed");
    assert_eq!(resumed.len(), 1, "{}", p.events_text());
    assert_eq!(resumed[0]["reason"], "sighup", "{}", resumed[0]);
    let reloaded = p.events_of("config_reloaded");
    assert_eq!(reloaded.len(), 1, "{}", p.events_text());
    assert_eq!(reloaded[0]["trigger"], "sighup", "{}", reloaded[0]);
    assert_eq!(p.events_of("schedule_paused").len(), 1);
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
}

#[test]
fn phase_policy_skip_passes_over_a_closed_phase() {
    let p = Project::new();
    let text = p.config().dirty_action("ignore").render()
        + "\n[phases]\nlist = [\"build\", \"review\"]\nphase_policy = \"skip\"\n\
           [phases.review.schedule]\ntimezone = \"UTC\"\npause_windows = [\"00:00-24:00\"]\n";
    p.write_config_text(&text);
    p.run(&["serve", "--max-rounds", "2"]).assert_code(0);
    let starts = p.events_of("round_start");
    let ran: Vec<(u64, String)> = starts
        .iter()
        .map(|e| {
            (
                e["round_num"].as_u64().unwrap(),
                e["phase"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        ran,
        [(1, "build".to_owned()), (3, "build".to_owned())],
        "{}",
        p.events_text()
    );
    let skipped = p.events_of("schedule_phase_skipped");
    assert_eq!(skipped.len(), 1, "{}", p.events_text());
    assert_eq!(
        (
            skipped[0]["round_num"].as_u64(),
            skipped[0]["phase"].as_str()
        ),
        (Some(2), Some("review"))
    );
    assert!(skipped[0]["until"].is_null(), "never opens: {}", skipped[0]);
}

#[test]
fn a_bad_window_is_a_config_error_naming_the_key() {
    let p = Project::new();
    let text = p.config().render() + "\n[schedule]\nrun_windows = [\"9:00-17:00\"]\n";
    p.write_config_text(&text);
    let out = p.run(&["serve", "--once"]);
    out.assert_code(78);
    assert!(out.stderr.contains("schedule.run_windows[0]"), "{out}");
    let text = p.config().render() + "\n[schedule]\ntimezone = \"Mars/Olympus\"\n";
    p.write_config_text(&text);
    let out = p.run(&["serve", "--once"]);
    out.assert_code(78);
    assert!(out.stderr.contains("schedule.timezone"), "{out}");
}
