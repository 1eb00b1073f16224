//! `GET /metrics`: the Prometheus text exposition format (version 0.0.4, as documented in
//! Prometheus' "Exposition formats"), for fleets that already run Prometheus and Grafana
//! (docs/metrics.md: every series, a scrape config and a dashboard).
//!
//! Counters come from the event record, read once from its start and then followed
//! ([`Counters::observe`]), so they survive monitor restarts as long as the record does;
//! gauges come from `service.json` at scrape time.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::SystemTime;

use crate::operator::service::{ServiceDoc, ServiceState};
use crate::runtime::events::{Event, Recorded, RoundEnd};

/// Upper bounds (seconds) of the round duration histogram's buckets.
pub const DURATION_BUCKETS: [f64; 11] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0,
];

/// What the record of one project adds up to.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    rounds: BTreeMap<String, u64>,
    duration_buckets: [u64; DURATION_BUCKETS.len()],
    duration_sum: f64,
    duration_count: u64,
    deferrals: BTreeMap<String, u64>,
    hook_failures: BTreeMap<(String, String), u64>,
    sandbox_kills: BTreeMap<String, u64>,
    mem_terminated: u64,
    last_event: Option<f64>,
    last_deferral_until: Option<f64>,
}

/// The scrape-time view of one project.
pub struct ProjectView<'a> {
    /// The project's name (label `project`).
    pub name: &'a str,
    /// Its record, added up.
    pub counters: &'a Counters,
    /// `service.json`, when a supervisor has written one.
    pub service: Option<&'a ServiceDoc>,
    /// Whether a supervisor holds the project's lock now.
    pub up: bool,
}

/// Seconds since the epoch of an event `ts`.
pub fn epoch_seconds(ts: &str) -> Option<f64> {
    let at = humantime::parse_rfc3339_weak(ts.trim_end_matches('Z')).ok()?;
    Some(
        at.duration_since(SystemTime::UNIX_EPOCH)
            .ok()?
            .as_secs_f64(),
    )
}

impl Counters {
    /// Adds one event of the record.
    pub fn observe(&mut self, recorded: &Recorded) {
        let ts = recorded.ts().and_then(epoch_seconds);
        if ts.is_some() {
            self.last_event = ts;
        }
        let Some(event) = &recorded.event else {
            return;
        };
        match event {
            Event::RoundEnd(RoundEnd::Ran {
                exit_code,
                exit_cause,
                ..
            }) => {
                let outcome = match (exit_cause.as_str(), exit_code) {
                    ("exited", Some(0)) => "ok",
                    ("exited", _) => "failed",
                    (cause, _) => cause,
                };
                *self.rounds.entry(outcome.to_owned()).or_default() += 1;
            }
            Event::RoundEnd(RoundEnd::NotStarted { .. }) => {
                *self.rounds.entry("spawn_failed".to_owned()).or_default() += 1;
            }
            Event::AgentExit { duration_s, .. } => {
                for (bucket, bound) in self.duration_buckets.iter_mut().zip(DURATION_BUCKETS) {
                    if *duration_s <= bound {
                        *bucket += 1;
                    }
                }
                self.duration_sum += duration_s;
                self.duration_count += 1;
            }
            Event::RoundDeferred {
                severity, defer_s, ..
            } => {
                let by = if severity == "info" {
                    "hook"
                } else {
                    "host_health"
                };
                *self.deferrals.entry(by.to_owned()).or_default() += 1;
                self.last_deferral_until = ts.map(|t| t + *defer_s as f64);
            }
            Event::HookFailed {
                host, hook_kind, ..
            } => {
                *self
                    .hook_failures
                    .entry((host.clone(), hook_kind.clone()))
                    .or_default() += 1;
            }
            Event::PluginSandboxKill { host, .. } => {
                *self.sandbox_kills.entry(host.clone()).or_default() += 1;
            }
            Event::RoundMemTerminated { .. } => self.mem_terminated += 1,
            _ => {}
        }
    }
}

/// One metric family: `# HELP`, `# TYPE`, then its samples.
struct Family<'a> {
    out: &'a mut String,
}

impl<'a> Family<'a> {
    fn new(out: &'a mut String, name: &str, kind: &str, help: &str) -> Self {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        Family { out }
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect();
        let _ = writeln!(self.out, "{name}{{{}}} {}", labels.join(","), number(value));
    }
}

/// A label value with `\`, `"` and newlines escaped (the exposition format's rule).
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn number(value: f64) -> String {
    if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{value}")
    }
}

/// The whole exposition for `projects`.
pub fn render(projects: &[ProjectView<'_>]) -> String {
    let mut out = String::new();
    let mut f = Family::new(
        &mut out,
        "agent_runner_up",
        "gauge",
        "1 while a supervisor holds the project's lock.",
    );
    for p in projects {
        f.sample(
            "agent_runner_up",
            &[("project", p.name)],
            if p.up { 1.0 } else { 0.0 },
        );
    }
    let mut f = Family::new(&mut out, "agent_runner_rounds_total", "counter", "Rounds ended, by outcome (ok, failed, timeout, signaled, stopped, host_pressure, spawn_failed).");
    for p in projects {
        for (outcome, n) in &p.counters.rounds {
            f.sample(
                "agent_runner_rounds_total",
                &[("project", p.name), ("outcome", outcome)],
                *n as f64,
            );
        }
    }
    let name = "agent_runner_round_duration_seconds";
    let mut f = Family::new(
        &mut out,
        name,
        "histogram",
        "Wall-clock duration of the agent in each round.",
    );
    for p in projects {
        let c = p.counters;
        for (count, bound) in c.duration_buckets.iter().zip(DURATION_BUCKETS) {
            f.sample(
                &format!("{name}_bucket"),
                &[("project", p.name), ("le", &number(bound))],
                *count as f64,
            );
        }
        f.sample(
            &format!("{name}_bucket"),
            &[("project", p.name), ("le", "+Inf")],
            c.duration_count as f64,
        );
        f.sample(
            &format!("{name}_sum"),
            &[("project", p.name)],
            c.duration_sum,
        );
        f.sample(
            &format!("{name}_count"),
            &[("project", p.name)],
            c.duration_count as f64,
        );
    }
    let mut f = Family::new(
        &mut out,
        "agent_runner_round_in_progress",
        "gauge",
        "1 while a round's agent runs.",
    );
    for p in projects {
        let running = p.up && p.service.is_some_and(|s| s.state == ServiceState::Running);
        f.sample(
            "agent_runner_round_in_progress",
            &[("project", p.name)],
            if running { 1.0 } else { 0.0 },
        );
    }
    let mut f = Family::new(
        &mut out,
        "agent_runner_deferred",
        "gauge",
        "1 while rounds are deferred (a spawn hook's back-off or host health).",
    );
    for p in projects {
        let deferred = p.up && p.service.is_some_and(|s| s.state == ServiceState::Deferred);
        f.sample(
            "agent_runner_deferred",
            &[("project", p.name)],
            if deferred { 1.0 } else { 0.0 },
        );
    }
    let mut f = Family::new(
        &mut out,
        "agent_runner_deferred_until_timestamp_seconds",
        "gauge",
        "When the last deferral asked to look again (Unix time).",
    );
    for p in projects {
        if let Some(until) = p.counters.last_deferral_until {
            f.sample(
                "agent_runner_deferred_until_timestamp_seconds",
                &[("project", p.name)],
                until,
            );
        }
    }
    let mut f = Family::new(
        &mut out,
        "agent_runner_deferrals_total",
        "counter",
        "Rounds deferred, by who deferred them (hook, host_health).",
    );
    for p in projects {
        for (by, n) in &p.counters.deferrals {
            f.sample(
                "agent_runner_deferrals_total",
                &[("project", p.name), ("by", by)],
                *n as f64,
            );
        }
    }
    let mut f = Family::new(
        &mut out,
        "agent_runner_round_mem_terminated_total",
        "counter",
        "Rounds ended by sustained host memory pressure.",
    );
    for p in projects {
        f.sample(
            "agent_runner_round_mem_terminated_total",
            &[("project", p.name)],
            p.counters.mem_terminated as f64,
        );
    }
    let mut f = Family::new(
        &mut out,
        "agent_runner_hook_failures_total",
        "counter",
        "Failed hook calls and host starts, by host and hook family.",
    );
    for p in projects {
        for ((host, family), n) in &p.counters.hook_failures {
            f.sample(
                "agent_runner_hook_failures_total",
                &[("project", p.name), ("host", host), ("family", family)],
                *n as f64,
            );
        }
    }
    let mut f = Family::new(
        &mut out,
        "agent_runner_host_sandbox_kills_total",
        "counter",
        "Hosts killed by the sandbox (a denied system call), by host.",
    );
    for p in projects {
        for (host, n) in &p.counters.sandbox_kills {
            f.sample(
                "agent_runner_host_sandbox_kills_total",
                &[("project", p.name), ("host", host)],
                *n as f64,
            );
        }
    }
    let mut f = Family::new(
        &mut out,
        "agent_runner_hook_calls",
        "gauge",
        "Hook calls sent to a host by the running supervisor.",
    );
    for p in projects {
        for h in p
            .service
            .filter(|_| p.up)
            .map(|s| s.hosts.as_slice())
            .unwrap_or_default()
        {
            f.sample(
                "agent_runner_hook_calls",
                &[("project", p.name), ("host", &h.name)],
                h.calls as f64,
            );
        }
    }
    let mut f = Family::new(
        &mut out,
        "agent_runner_hook_call_duration_p50_seconds",
        "gauge",
        "Median duration of a host's last 64 hook calls.",
    );
    for p in projects {
        for h in p
            .service
            .filter(|_| p.up)
            .map(|s| s.hosts.as_slice())
            .unwrap_or_default()
        {
            if let Some(ms) = h.call_latency_p50_ms {
                f.sample(
                    "agent_runner_hook_call_duration_p50_seconds",
                    &[("project", p.name), ("host", &h.name)],
                    ms / 1000.0,
                );
            }
        }
    }
    let mut f = Family::new(
        &mut out,
        "agent_runner_last_event_timestamp_seconds",
        "gauge",
        "Time of the newest event in the record (Unix time).",
    );
    for p in projects {
        if let Some(ts) = p.counters.last_event {
            f.sample(
                "agent_runner_last_event_timestamp_seconds",
                &[("project", p.name)],
                ts,
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_outcomes_and_durations_and_escapes_labels() {
        let mut c = Counters::default();
        for line in [
            json!({"ts": "2026-11-29T16:43:55.711Z", "event": "agent_exit", "round_num": 1, "exit_code": 0, "signal": null, "duration_s": 12.5, "timed_out": false, "exit_cause": "exited"}),
            json!({"ts": "2026-11-29T16:43:56.000Z", "event": "round_end", "round_num": 1, "exit_code": 0, "exit_cause": "exited", "dirty_outcome": null}),
            json!({"ts": "2026-11-29T16:44:00.000Z", "event": "round_end", "round_num": 2, "exit_code": null, "exit_cause": "timeout", "dirty_outcome": null}),
        ] {
            c.observe(&Recorded::from_line(line).unwrap());
        }
        let text = render(&[ProjectView {
            name: "a\"b",
            counters: &c,
            service: None,
            up: false,
        }]);
        assert!(
            text.contains("agent_runner_rounds_total{project=\"a\\\"b\",outcome=\"ok\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("outcome=\"timeout\"} 1\n"), "{text}");
        assert!(
            text.contains(
                "agent_runner_round_duration_seconds_bucket{project=\"a\\\"b\",le=\"5\"} 0\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "agent_runner_round_duration_seconds_bucket{project=\"a\\\"b\",le=\"15\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "agent_runner_last_event_timestamp_seconds{project=\"a\\\"b\"} 1795970640\n"
            ),
            "{text}"
        );
    }
}
