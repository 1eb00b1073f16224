//! The built-in detectors of `monitor --mode anomaly` (docs/operations.md "monitor"), each a
//! pure function of one [`Observation`]; [`watch`] takes an observation every interval,
//! prints and records each new alert once per episode (until the detector is quiet for one
//! look), and stops the supervisor for detectors listed in `[monitor] auto_stop_on`.
//!
//! Detector names follow the reference system (`docs/reference-system.md`, "Monitor") where
//! they overlap: `disk_critical`, `disk_warning`, `mem_pressure`, `supervisor_stale`,
//! `anomaly_repetitive_tool`; ours: `no_progress` (the last [`NO_PROGRESS_ROUNDS`] rounds all ended unclean). Auth failures
//! (`oauth_fail`) are not detected by this build yet.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::config::{Config, MonitorConfig};
use crate::exit::{self, CliError};
use crate::operator::monitor::metrics::epoch_seconds;
use crate::record::events::recent::{self, Wanted};
use crate::record::events::{DiskGrowth, Event, EventLog, Recorded};
use crate::record::rounds;
use crate::record::service::{self, ServiceState};
use crate::record::stop::StopLevel;
use crate::runtime::machine::host_health::{self, Reading};

/// Rounds in a row ending unclean that raise `no_progress`.
pub(crate) const NO_PROGRESS_ROUNDS: usize = 3;

/// The newest events each look reads for `supervisor_stale` (the monitor's own events,
/// one per alert episode, are passed over among them).
const NEWEST_EVENTS: usize = 64;

/// How much of the current round's log `anomaly_repetitive_tool` reads.
const LOG_TAIL_BYTES: usize = 256 * 1024;

/// One alert (printed as this object by `monitor --json`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub(crate) struct Alert {
    /// The detector's name.
    pub detector: &'static str,
    /// `warning` or `critical`.
    pub severity: &'static str,
    /// What it saw.
    pub message: String,
    /// `stop_service` when the detector asks for the supervisor to stop, else `none`.
    pub auto_action: &'static str,
    /// What it measured, as numbers (`disk_growth` only; absent otherwise): the
    /// reference system's alert `context`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<DiskGrowth>,
}

/// What one look at the project found.
pub(crate) struct Observation {
    /// The newest events of the record, oldest first.
    pub events: Vec<Recorded>,
    /// Every event of the newest rounds (the running one and [`NO_PROGRESS_ROUNDS`]
    /// before it), oldest first.
    pub round_events: Vec<Recorded>,
    /// The host's readings.
    pub reading: Reading,
    /// Whether a supervisor holds the lock, and what `service.json` says it is doing.
    pub live: Option<ServiceState>,
    /// Now.
    pub now: SystemTime,
    /// The end of the running (or last) round's log.
    pub log_tail: Option<String>,
}

impl Observation {
    /// Looks at the project of `config` (read-only).
    pub(crate) fn take(config: &Config) -> Observation {
        let state_dir = &config.runtime.state_dir;
        let found = recent::scan(
            state_dir,
            Wanted {
                events: NEWEST_EVENTS,
                rounds: NO_PROGRESS_ROUNDS + 1,
                hook_failures: 0,
                blips: 0,
                round: None,
            },
        );
        let live = service::live_supervisor(state_dir).map(|pid| {
            service::read(state_dir)
                .filter(|d| d.pid == pid)
                .map_or(ServiceState::Running, |d| d.state)
        });
        let log_tail = rounds::rounds(&found.round_events)
            .values()
            .next_back()
            .and_then(|r| r.log_path.clone())
            .and_then(|p| rounds::tail_text(Path::new(&p), LOG_TAIL_BYTES));
        Observation {
            events: found.events,
            round_events: found.round_events,
            reading: Reading::take(&config.runtime.log_dir),
            live,
            now: SystemTime::now(),
            log_tail,
        }
    }
}

/// Runs every built-in detector on `obs`.
pub(crate) fn run_all(monitor: &MonitorConfig, obs: &Observation) -> Vec<Alert> {
    [
        disk(monitor, obs),
        mem_pressure(monitor, obs),
        supervisor_stale(monitor, obs),
        no_progress(obs),
        repetitive_tool(monitor, obs),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn disk(monitor: &MonitorConfig, obs: &Observation) -> Option<Alert> {
    let disk_only = Reading {
        disk_used_pct: obs.reading.disk_used_pct,
        disk_free_bytes: obs.reading.disk_free_bytes,
        ..Reading::default()
    };
    let p = host_health::assess(&monitor.host_health, &disk_only)?;
    let critical = p.severity == "critical";
    Some(Alert {
        detector: if critical {
            "disk_critical"
        } else {
            "disk_warning"
        },
        severity: p.severity,
        message: p.message,
        auto_action: if critical { "stop_service" } else { "none" },
        context: None,
    })
}

fn mem_pressure(monitor: &MonitorConfig, obs: &Observation) -> Option<Alert> {
    let p = host_health::assess_memory(&monitor.host_health, &obs.reading)?;
    Some(Alert {
        detector: "mem_pressure",
        severity: p.severity,
        message: p.message,
        auto_action: "none",
        context: None,
    })
}

/// The supervisor holds the lock but has written nothing for the threshold, and is not
/// waiting out a deferral. The monitor's own events do not count.
fn supervisor_stale(monitor: &MonitorConfig, obs: &Observation) -> Option<Alert> {
    let threshold = monitor.supervisor_stale_threshold?;
    if matches!(obs.live, None | Some(ServiceState::Deferred)) {
        return None;
    }
    let last = obs
        .events
        .iter()
        .rev()
        .filter(|e| !e.kind().starts_with("monitor_"))
        .find_map(|e| e.ts().and_then(epoch_seconds))?;
    let now = obs
        .now
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?
        .as_secs_f64();
    let silent = now - last;
    (silent >= threshold.as_secs_f64()).then(|| Alert {
        detector: "supervisor_stale",
        severity: "critical",
        message: format!(
            "no event for {silent:.0} s (supervisor_stale_threshold_s {}); the supervisor may be wedged",
            threshold.as_secs()
        ),
        auto_action: "none",
        context: None,
    })
}

fn no_progress(obs: &Observation) -> Option<Alert> {
    let ends: Vec<&Recorded> = obs
        .round_events
        .iter()
        .filter(|e| e.kind() == "round_end")
        .collect();
    let last = &ends[ends.len().checked_sub(NO_PROGRESS_ROUNDS)?..];
    let unclean = |e: &&Recorded| e.line["exit_code"] != 0;
    last.iter().all(unclean).then(|| Alert {
        detector: "no_progress",
        severity: "warning",
        message: format!(
            "the last {NO_PROGRESS_ROUNDS} rounds (up to round {}) ended without a clean exit",
            last[NO_PROGRESS_ROUNDS - 1].round_num().unwrap_or(0)
        ),
        auto_action: "none",
        context: None,
    })
}

/// One tool fills `anomaly_repetitive_threshold` of the last `anomaly_repetitive_window`
/// tool calls in the agent's JSON stream (`tool_use` items, as Claude Code's
/// `--output-format stream-json` writes them).
fn repetitive_tool(monitor: &MonitorConfig, obs: &Observation) -> Option<Alert> {
    let (window, threshold) = (
        monitor.anomaly_repetitive_window as usize,
        monitor.anomaly_repetitive_threshold as usize,
    );
    if window == 0 || threshold == 0 {
        return None;
    }
    let tools = tool_calls(obs.log_tail.as_deref()?);
    let recent = &tools[tools.len().saturating_sub(window)..];
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for name in recent {
        *counts.entry(name.as_str()).or_default() += 1;
    }
    let (tool, n) = counts.into_iter().max_by_key(|(_, n)| *n)?;
    (n >= threshold).then(|| Alert {
        detector: "anomaly_repetitive_tool",
        severity: "warning",
        message: format!(
            "tool {tool} made {n} of the last {} tool calls",
            recent.len()
        ),
        auto_action: "none",
        context: None,
    })
}

/// The names of the `tool_use` items of a JSON-lines agent log, in order.
pub(crate) fn tool_calls(log: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in log.lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let content = value["message"]["content"].as_array();
        for item in content.into_iter().flatten() {
            if item["type"] == "tool_use" {
                if let Some(name) = item["name"].as_str() {
                    names.push(name.to_owned());
                }
            }
        }
    }
    names
}

/// One look's disk reading, for `disk_growth`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct DiskSample {
    /// Seconds since the Unix epoch.
    at: f64,
    /// `disk_used_pct` of the log dir's filesystem.
    disk_pct: f64,
    /// Bytes available on it; `None` when unread.
    free_bytes: Option<u64>,
    /// The used share of its inodes, % and count; `None` when unreadable.
    inodes: Option<(f64, u64)>,
}

/// The readings of the last `disk.growth_window_s`, oldest first (the reference system's
/// `disk_growth`, docs/operations.md "monitor").
#[derive(Debug, Default)]
struct DiskHistory(std::collections::VecDeque<DiskSample>);

impl DiskHistory {
    /// Adds this look's reading (none when the disk cannot be read) and forgets readings
    /// older than the window before it.
    fn push(&mut self, cfg: &crate::config::HostHealthConfig, log_dir: &Path, obs: &Observation) {
        let Some(disk_pct) = obs.reading.disk_used_pct else {
            return;
        };
        let at = obs
            .now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.0.push_back(DiskSample {
            at,
            disk_pct,
            free_bytes: obs.reading.disk_free_bytes,
            inodes: host_health::inode_usage(log_dir),
        });
        let window = cfg.disk.growth_window.as_secs_f64();
        while self.0.front().is_some_and(|s| at - s.at > window) {
            self.0.pop_front();
        }
    }

    /// `disk_growth` (warning, never a stop): the used % (or inode-used %) of the log
    /// dir's filesystem rose, from the oldest reading in the window to the newest, at or
    /// above its per-hour threshold. `None` with fewer than two readings.
    fn growth(&self, cfg: &crate::config::HostHealthConfig) -> Option<Alert> {
        let (first, last) = (self.0.front()?, self.0.back()?);
        let hours = (last.at - first.at) / 3600.0;
        if hours <= 0.0 {
            return None;
        }
        let disk_rate = (last.disk_pct - first.disk_pct) / hours;
        let inode_rate = match (first.inodes, last.inodes) {
            (Some((a, _)), Some((b, _))) => Some((b - a) / hours),
            _ => None,
        };
        let mut bits = Vec::new();
        if disk_rate >= cfg.disk.disk_growth_pct_per_hr_warning {
            bits.push(format!(
                "disk +{disk_rate:.1}%/hr (>= {})",
                cfg.disk.disk_growth_pct_per_hr_warning
            ));
        }
        if let Some(rate) = inode_rate.filter(|r| *r >= cfg.disk.inode_growth_pct_per_hr_warning) {
            bits.push(format!(
                "inode +{rate:.1}%/hr (>= {})",
                cfg.disk.inode_growth_pct_per_hr_warning
            ));
        }
        if bits.is_empty() {
            return None;
        }
        Some(Alert {
            detector: "disk_growth",
            severity: "warning",
            message: format!(
                "{} over the last {}s",
                bits.join(" and "),
                cfg.disk.growth_window.as_secs()
            ),
            auto_action: "none",
            context: Some(DiskGrowth {
                disk_pct_per_hr: round2(disk_rate),
                disk_threshold_pct_per_hr: cfg.disk.disk_growth_pct_per_hr_warning,
                inode_pct_per_hr: inode_rate.map(round2),
                inode_threshold_pct_per_hr: cfg.disk.inode_growth_pct_per_hr_warning,
                window_s: cfg.disk.growth_window.as_secs(),
                elapsed_s: ((last.at - first.at) * 10.0).round() / 10.0,
                disk_used_pct_from: first.disk_pct,
                disk_used_pct_to: last.disk_pct,
                disk_free_bytes_from: first.free_bytes,
                disk_free_bytes_to: last.free_bytes,
                inodes_used_from: first.inodes.map(|(_, n)| n),
                inodes_used_to: last.inodes.map(|(_, n)| n),
            }),
        })
    }
}

/// `x` rounded to two decimals (the reference system's rates).
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Looks every `interval` until Ctrl-C or SIGTERM; prints each new alert
/// (`[WARN] detector — message`, or one JSON object with `--json`), records it, and stops
/// the supervisor for detectors in `auto_stop_on`.
pub(crate) async fn watch(config: &Config, interval: Duration, json: bool) -> Result<u8, CliError> {
    record(
        config,
        Event::MonitorStarted {
            mode: "anomaly".into(),
            pid: std::process::id(),
        },
    );
    let mut interrupted = crate::operator::interrupt::interrupt_signal()?;
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| CliError::failure(e.to_string()))?;
    let mut active: BTreeSet<&'static str> = BTreeSet::new();
    let mut disk_history = DiskHistory::default();
    loop {
        let obs = Observation::take(config);
        disk_history.push(&config.monitor.host_health, &config.runtime.log_dir, &obs);
        let mut alerts = run_all(&config.monitor, &obs);
        alerts.extend(disk_history.growth(&config.monitor.host_health));
        let now_active: BTreeSet<&'static str> = alerts.iter().map(|a| a.detector).collect();
        for alert in alerts.iter().filter(|a| !active.contains(a.detector)) {
            report(config, alert, json).await;
        }
        active = now_active;
        tokio::select! {
            _ = interrupted.recv() => return Ok(exit::OK),
            _ = terminate.recv() => return Ok(exit::OK),
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

async fn report(config: &Config, alert: &Alert, json: bool) {
    let line = if json {
        serde_json::to_string(alert).unwrap_or_default()
    } else {
        let tag = if alert.severity == "critical" {
            "[CRIT]"
        } else {
            "[WARN]"
        };
        format!("{tag} {} — {}", alert.detector, alert.message)
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    drop(out);
    record(
        config,
        Event::MonitorAlertEmitted {
            detector: alert.detector.into(),
            severity: alert.severity.into(),
            message: alert.message.clone(),
            auto_action: alert.auto_action.into(),
            context: alert.context.clone(),
        },
    );
    let allowed = config
        .monitor
        .auto_stop_on
        .iter()
        .any(|d| d == alert.detector);
    if alert.auto_action != "stop_service" || !allowed {
        return;
    }
    match crate::operator::control::ask_stop(&config.runtime.state_dir, StopLevel::Graceful).await {
        Ok(_) => record(
            config,
            Event::MonitorAutoStopTriggered {
                detector: alert.detector.into(),
            },
        ),
        Err(e) => record(
            config,
            Event::MonitorAutoStopFailed {
                detector: alert.detector.into(),
                error: e.to_string(),
            },
        ),
    }
}

/// Records a `monitor_*` event in the project's record (anomaly mode only).
fn record(config: &Config, event: Event) {
    EventLog::new(&config.runtime.state_dir)
        .linked_in(crate::record::agent_changes::held_log_dir(config))
        .emit(event);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obs(events: Vec<Value>, live: Option<ServiceState>) -> Observation {
        let events: Vec<Recorded> = events.into_iter().filter_map(Recorded::from_line).collect();
        Observation {
            round_events: events.clone(),
            events,
            reading: Reading::default(),
            live,
            now: humantime::parse_rfc3339("2026-11-29T17:00:00Z").unwrap(),
            log_tail: None,
        }
    }

    #[test]
    fn disk_growth_is_the_rate_over_the_window_in_either_dimension() {
        let mut cfg = crate::config::HostHealthConfig::default();
        cfg.disk.growth_window = Duration::from_secs(1800);
        cfg.disk.disk_growth_pct_per_hr_warning = 5.0;
        cfg.disk.inode_growth_pct_per_hr_warning = 5.0;
        // Inodes: 1000 on the filesystem, so the count in use is ten times the %.
        let sample = |at: f64, disk_pct: f64, inode_pct: Option<f64>| DiskSample {
            at,
            disk_pct,
            free_bytes: Some(((100.0 - disk_pct) * 1_000_000.0) as u64),
            inodes: inode_pct.map(|p| (p, (p * 10.0) as u64)),
        };
        let history = |samples: &[DiskSample]| DiskHistory(samples.iter().copied().collect());
        // One reading: no rate.
        assert_eq!(history(&[sample(0.0, 50.0, None)]).growth(&cfg), None);
        // +2 % in 30 min = 4 %/hr: under 5.
        let slow = history(&[
            sample(0.0, 50.0, Some(10.0)),
            sample(1800.0, 52.0, Some(10.0)),
        ]);
        assert_eq!(slow.growth(&cfg), None);
        // +3 % in 30 min = 6 %/hr; inodes flat.
        let fast = history(&[
            sample(0.0, 50.0, Some(10.0)),
            sample(1800.0, 53.0, Some(10.0)),
        ]);
        let alert = fast.growth(&cfg).expect("disk_growth");
        assert_eq!(alert.detector, "disk_growth");
        assert_eq!((alert.severity, alert.auto_action), ("warning", "none"));
        assert_eq!(alert.message, "disk +6.0%/hr (>= 5) over the last 1800s");
        // The numbers behind it, as fields.
        assert_eq!(
            alert.context,
            Some(DiskGrowth {
                disk_pct_per_hr: 6.0,
                disk_threshold_pct_per_hr: 5.0,
                inode_pct_per_hr: Some(0.0),
                inode_threshold_pct_per_hr: 5.0,
                window_s: 1800,
                elapsed_s: 1800.0,
                disk_used_pct_from: 50.0,
                disk_used_pct_to: 53.0,
                disk_free_bytes_from: Some(50_000_000),
                disk_free_bytes_to: Some(47_000_000),
                inodes_used_from: Some(100),
                inodes_used_to: Some(100),
            })
        );
        // Inodes alone trip it too.
        let inodes = history(&[
            sample(0.0, 50.0, Some(10.0)),
            sample(360.0, 50.0, Some(11.0)),
        ]);
        assert_eq!(
            inodes.growth(&cfg).unwrap().message,
            "inode +10.0%/hr (>= 5) over the last 1800s"
        );
        // A shrinking disk never warns.
        let shrink = history(&[sample(0.0, 60.0, None), sample(60.0, 50.0, None)]);
        assert_eq!(shrink.growth(&cfg), None);
    }

    #[test]
    fn stale_unless_deferred_and_never_from_own_events() {
        let m = MonitorConfig {
            supervisor_stale_threshold: Some(Duration::from_secs(600)),
            ..MonitorConfig::default()
        };
        let events = vec![
            json!({"ts": "2026-11-29T16:40:00.000Z", "event": "round_start", "round_num": 1, "phase": null}),
            json!({"ts": "2026-11-29T16:59:00.000Z", "event": "monitor_started", "mode": "anomaly", "pid": 1}),
        ];
        let alert =
            supervisor_stale(&m, &obs(events.clone(), Some(ServiceState::Running))).unwrap();
        assert!(alert.message.contains("1200 s"), "{alert:?}");
        assert!(supervisor_stale(&m, &obs(events.clone(), Some(ServiceState::Deferred))).is_none());
        assert!(supervisor_stale(&m, &obs(events, None)).is_none());
    }

    #[test]
    fn no_progress_needs_three_unclean_rounds_in_a_row() {
        let end = |n: u64, code: i64| json!({"ts": "t", "event": "round_end", "round_num": n, "exit_code": code, "exit_cause": "exited", "dirty_outcome": null});
        assert!(no_progress(&obs(vec![end(1, 1), end(2, 1)], None)).is_none());
        assert!(
            no_progress(&obs(vec![end(1, 1), end(2, 0), end(3, 1), end(4, 1)], None)).is_none()
        );
        let alert =
            no_progress(&obs(vec![end(1, 0), end(2, 1), end(3, 1), end(4, 1)], None)).unwrap();
        assert!(alert.message.contains("round 4"), "{alert:?}");
    }

    #[test]
    fn repetitive_tool_reads_the_stream_json() {
        let m = MonitorConfig {
            anomaly_repetitive_window: 4,
            anomaly_repetitive_threshold: 3,
            ..MonitorConfig::default()
        };
        let call = |name: &str| {
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": name, "input": {}}]}}).to_string()
        };
        let mut o = obs(vec![], None);
        o.log_tail = Some(
            [
                call("Read"),
                call("Bash"),
                "plain text".into(),
                call("Bash"),
                call("Bash"),
            ]
            .join("\n"),
        );
        let alert = repetitive_tool(&m, &o).unwrap();
        assert_eq!(alert.message, "tool Bash made 3 of the last 4 tool calls");
        o.log_tail = Some([call("Read"), call("Bash"), call("Edit"), call("Bash")].join("\n"));
        assert!(repetitive_tool(&m, &o).is_none());
    }
}
