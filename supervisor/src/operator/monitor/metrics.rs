//! `GET /metrics`: the Prometheus text exposition format (version 0.0.4, as documented in
//! Prometheus' "Exposition formats"), for fleets that already run Prometheus and Grafana
//! (docs/metrics.md: every series, a scrape config and a dashboard).
//!
//! Counters come from the event record, read once from its start and then followed
//! ([`Counters::observe`]), so they survive monitor restarts as long as the record does;
//! gauges come from `service.json` at scrape time. Money and tokens come from the budget's
//! ledger of the record ([`super::spend`]): the counters count the whole record, the
//! gauges each `[budget]` cap and what was spent against it, as `serve` counts it.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::SystemTime;

use super::spend::{CapGauge, SpendView, CHART_ROUNDS};
use crate::record::events::{Event, Recorded, RoundEnd};
use crate::record::service::{CallHistogram, CALL_BUCKETS};
use crate::record::service::{ServiceDoc, ServiceState};

/// Upper bounds (seconds) of the round duration histogram's buckets.
pub(crate) const DURATION_BUCKETS: [f64; 11] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0,
];

/// What the record of one project adds up to.
#[derive(Clone, Debug, Default)]
pub(crate) struct Counters {
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
    /// The agent's duration of the newest [`CHART_ROUNDS`] rounds, by round.
    durations: BTreeMap<u64, f64>,
}

/// The scrape-time view of one project.
pub(crate) struct ProjectView<'a> {
    /// The project's name (label `project`).
    pub name: &'a str,
    /// Its record, added up.
    pub counters: &'a Counters,
    /// `service.json`, when a supervisor has written one.
    pub service: Option<&'a ServiceDoc>,
    /// Whether a supervisor holds the project's lock now.
    pub up: bool,
    /// Its record's spend now.
    pub spend: &'a SpendView,
}

/// Seconds since the epoch of an event `ts`.
pub(crate) fn epoch_seconds(ts: &str) -> Option<f64> {
    let at = crate::record::events::read::parse_ts(ts)?;
    Some(
        at.duration_since(SystemTime::UNIX_EPOCH)
            .ok()?
            .as_secs_f64(),
    )
}

impl Counters {
    /// The agent's duration of the newest rounds, by round (the page's chart).
    pub(crate) fn durations(&self) -> &BTreeMap<u64, f64> {
        &self.durations
    }

    /// Adds one event of the record.
    pub(crate) fn observe(&mut self, recorded: &Recorded) {
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
            Event::AgentExit {
                round_num,
                duration_s,
                ..
            } => {
                self.durations.insert(*round_num, *duration_s);
                if self.durations.len() > CHART_ROUNDS {
                    self.durations.pop_first();
                }
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

/// One sample of a project: its name suffix (`_bucket`, `_sum`, … or empty), its labels
/// beyond `project`, its value.
type Sample = (&'static str, Vec<(&'static str, String)>, f64);

/// Writes one metric family: `# HELP`, `# TYPE`, then `samples` of every project.
fn family(
    out: &mut String,
    projects: &[ProjectView<'_>],
    (name, kind, help): (&str, &str, &str),
    samples: impl Fn(&ProjectView<'_>) -> Vec<Sample>,
) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for p in projects {
        for (suffix, labels, value) in samples(p) {
            let mut text = format!("project=\"{}\"", escape(p.name));
            for (k, v) in labels {
                let _ = write!(text, ",{k}=\"{}\"", escape(&v));
            }
            let _ = writeln!(out, "{name}{suffix}{{{text}}} {}", number(value));
        }
    }
}

/// One unlabelled sample.
fn one(value: f64) -> Vec<Sample> {
    vec![("", Vec::new(), value)]
}

/// One sample per entry of `map`, its key as label `label`.
fn by<K: ToString>(label: &'static str, map: &BTreeMap<K, u64>) -> Vec<Sample> {
    map.iter()
        .map(|(k, n)| ("", vec![(label, k.to_string())], *n as f64))
        .collect()
}

fn flag(on: bool) -> f64 {
    if on {
        1.0
    } else {
        0.0
    }
}

/// The whole exposition for `projects` (docs/metrics.md lists every series).
pub(crate) fn render(projects: &[ProjectView<'_>]) -> String {
    let mut out = String::new();
    liveness(&mut out, projects);
    rounds(&mut out, projects);
    deferrals(&mut out, projects);
    failures(&mut out, projects);
    hook_calls(&mut out, projects);
    spend(&mut out, projects);
    budget(&mut out, projects);
    last_event(&mut out, projects);
    out
}

/// Whether the project's supervisor is up and, per `service.json`, in state `s`.
fn in_state(p: &ProjectView<'_>, s: ServiceState) -> bool {
    p.up && p.service.is_some_and(|d| d.state == s)
}

/// The hosts of the running supervisor: name, hook calls, median call duration in ms.
fn running_hosts(p: &ProjectView<'_>) -> Vec<(String, u64, Option<f64>)> {
    p.service
        .filter(|_| p.up)
        .map(|s| {
            s.hosts
                .iter()
                .map(|h| (h.name.clone(), h.calls, h.call_latency_p50_ms))
                .collect()
        })
        .unwrap_or_default()
}

/// `agent_runner_up`.
fn liveness(o: &mut String, projects: &[ProjectView<'_>]) {
    family(
        o,
        projects,
        (
            "agent_runner_up",
            "gauge",
            "1 while a supervisor holds the project's lock.",
        ),
        |p| one(flag(p.up)),
    );
}

/// `agent_runner_rounds_total`, `agent_runner_round_duration_seconds`,
/// `agent_runner_round_in_progress`.
fn rounds(o: &mut String, projects: &[ProjectView<'_>]) {
    family(o, projects, ("agent_runner_rounds_total", "counter", "Rounds ended, by outcome (ok, failed, timeout, signaled, stopped, host_pressure, budget, spawn_failed)."), |p| by("outcome", &p.counters.rounds));
    family(
        o,
        projects,
        (
            "agent_runner_round_duration_seconds",
            "histogram",
            "Wall-clock duration of the agent in each round.",
        ),
        |p| duration_histogram(p.counters),
    );
    family(
        o,
        projects,
        (
            "agent_runner_round_in_progress",
            "gauge",
            "1 while a round's agent runs.",
        ),
        |p| one(flag(in_state(p, ServiceState::Running))),
    );
}

/// The samples of the round duration histogram: cumulative buckets, `+Inf`, sum, count.
fn duration_histogram(c: &Counters) -> Vec<Sample> {
    let mut samples: Vec<Sample> = c
        .duration_buckets
        .iter()
        .zip(DURATION_BUCKETS)
        .map(|(n, bound)| ("_bucket", vec![("le", number(bound))], *n as f64))
        .collect();
    samples.push((
        "_bucket",
        vec![("le", "+Inf".to_owned())],
        c.duration_count as f64,
    ));
    samples.push(("_sum", Vec::new(), c.duration_sum));
    samples.push(("_count", Vec::new(), c.duration_count as f64));
    samples
}

/// The samples of one family's call duration histogram: cumulative buckets, `+Inf`, sum,
/// count, each labelled `family`.
fn call_histogram(fam: &str, h: &CallHistogram) -> Vec<Sample> {
    let labels = |le: Option<String>| {
        let mut l = vec![("family", fam.to_owned())];
        l.extend(le.map(|le| ("le", le)));
        l
    };
    let mut samples: Vec<Sample> = h
        .buckets
        .iter()
        .zip(CALL_BUCKETS)
        .map(|(n, bound)| ("_bucket", labels(Some(number(bound))), *n as f64))
        .collect();
    samples.push(("_bucket", labels(Some("+Inf".to_owned())), h.count as f64));
    samples.push(("_sum", labels(None), h.sum_s));
    samples.push(("_count", labels(None), h.count as f64));
    samples
}

/// `agent_runner_deferred`, `agent_runner_deferred_until_timestamp_seconds`,
/// `agent_runner_deferrals_total`.
fn deferrals(o: &mut String, projects: &[ProjectView<'_>]) {
    family(
        o,
        projects,
        (
            "agent_runner_deferred",
            "gauge",
            "1 while rounds are deferred (a spawn hook's back-off or host health).",
        ),
        |p| one(flag(in_state(p, ServiceState::Deferred))),
    );
    family(
        o,
        projects,
        (
            "agent_runner_deferred_until_timestamp_seconds",
            "gauge",
            "When the last deferral asked to look again (Unix time).",
        ),
        |p| p.counters.last_deferral_until.map(one).unwrap_or_default(),
    );
    family(
        o,
        projects,
        (
            "agent_runner_deferrals_total",
            "counter",
            "Rounds deferred, by who deferred them (hook, host_health).",
        ),
        |p| by("by", &p.counters.deferrals),
    );
}

/// `agent_runner_round_mem_terminated_total`, `agent_runner_hook_failures_total`,
/// `agent_runner_host_sandbox_kills_total`.
fn failures(o: &mut String, projects: &[ProjectView<'_>]) {
    family(
        o,
        projects,
        (
            "agent_runner_round_mem_terminated_total",
            "counter",
            "Rounds ended by sustained host memory pressure.",
        ),
        |p| one(p.counters.mem_terminated as f64),
    );
    family(
        o,
        projects,
        (
            "agent_runner_hook_failures_total",
            "counter",
            "Failed hook calls and host starts, by host and hook family.",
        ),
        |p| {
            p.counters
                .hook_failures
                .iter()
                .map(|((host, fam), n)| {
                    (
                        "",
                        vec![("host", host.clone()), ("family", fam.clone())],
                        *n as f64,
                    )
                })
                .collect()
        },
    );
    family(
        o,
        projects,
        (
            "agent_runner_host_sandbox_kills_total",
            "counter",
            "Hosts killed by the sandbox (a denied system call), by host.",
        ),
        |p| by("host", &p.counters.sandbox_kills),
    );
}

/// `agent_runner_hook_calls`, `agent_runner_hook_call_duration_p50_seconds` (hosts of the
/// running supervisor only) and `agent_runner_hook_call_duration_seconds` (the running
/// supervisor's calls by family).
fn hook_calls(o: &mut String, projects: &[ProjectView<'_>]) {
    family(
        o,
        projects,
        (
            "agent_runner_hook_call_duration_seconds",
            "histogram",
            "Duration of the running supervisor's hook calls, by hook family.",
        ),
        |p| {
            p.service
                .filter(|_| p.up)
                .map(|s| {
                    s.hook_call_durations
                        .iter()
                        .flat_map(|(fam, h)| call_histogram(fam, h))
                        .collect()
                })
                .unwrap_or_default()
        },
    );
    family(
        o,
        projects,
        (
            "agent_runner_hook_calls",
            "gauge",
            "Hook calls sent to a host by the running supervisor.",
        ),
        |p| {
            running_hosts(p)
                .into_iter()
                .map(|(h, calls, _)| ("", vec![("host", h)], calls as f64))
                .collect()
        },
    );
    family(
        o,
        projects,
        (
            "agent_runner_hook_call_duration_p50_seconds",
            "gauge",
            "Median duration of a host's last 64 hook calls.",
        ),
        |p| {
            running_hosts(p)
                .into_iter()
                .filter_map(|(h, _, ms)| Some(("", vec![("host", h)], ms? / 1000.0)))
                .collect()
        },
    );
}

/// `agent_runner_cost_usd_total`, `agent_runner_tokens_total`: the whole record's.
fn spend(o: &mut String, projects: &[ProjectView<'_>]) {
    family(
        o,
        projects,
        (
            "agent_runner_cost_usd_total",
            "counter",
            "What the agent's rounds cost, US dollars: the CLI's reported cost, else the price table's (docs/operations.md \"Budget\"); from the record's start, budget resets or not.",
        ),
        |p| one(p.spend.lifetime.usd),
    );
    family(
        o,
        projects,
        (
            "agent_runner_tokens_total",
            "counter",
            "Tokens the agent's rounds used, by type (input, output, cache_read, cache_write); from the record's start.",
        ),
        |p| {
            let t = p.spend.lifetime.tokens;
            [
                ("input", t.input),
                ("output", t.output),
                ("cache_read", t.cache_read),
                ("cache_write", t.cache_write),
            ]
            .into_iter()
            .map(|(kind, n)| ("", vec![("type", kind.to_owned())], n as f64))
            .collect()
        },
    );
}

/// The samples of caps (`cap`: only those set) or of spend (only those known), by scope.
fn gauges(caps: &[CapGauge], cap: bool) -> Vec<Sample> {
    caps.iter()
        .filter_map(|g| {
            let value = if cap { g.cap } else { g.spent }?;
            Some(("", vec![("scope", g.scope.to_owned())], value))
        })
        .collect()
}

/// `agent_runner_budget_cap_usd`, `agent_runner_budget_cap_tokens`,
/// `agent_runner_budget_spent_usd`, `agent_runner_budget_spent_tokens`.
fn budget(o: &mut String, projects: &[ProjectView<'_>]) {
    family(
        o,
        projects,
        (
            "agent_runner_budget_cap_usd",
            "gauge",
            "[budget] caps set, US dollars, by scope (round: round_usd, daily: daily_usd, total: total_usd).",
        ),
        |p| gauges(&p.spend.usd, true),
    );
    family(
        o,
        projects,
        (
            "agent_runner_budget_spent_usd",
            "gauge",
            "Spent against each US-dollar scope: the last round's cost (round), the day's in the budget's zone (daily), since the record began or its last budget reset (total).",
        ),
        |p| gauges(&p.spend.usd, false),
    );
    family(
        o,
        projects,
        (
            "agent_runner_budget_cap_tokens",
            "gauge",
            "[budget] token caps set, by scope (daily: daily_tokens, total: total_tokens).",
        ),
        |p| gauges(&p.spend.tokens, true),
    );
    family(
        o,
        projects,
        (
            "agent_runner_budget_spent_tokens",
            "gauge",
            "Tokens spent against each scope: the day's (daily), since the record began or its last budget reset (total).",
        ),
        |p| gauges(&p.spend.tokens, false),
    );
}

/// `agent_runner_last_event_timestamp_seconds`.
fn last_event(o: &mut String, projects: &[ProjectView<'_>]) {
    family(
        o,
        projects,
        (
            "agent_runner_last_event_timestamp_seconds",
            "gauge",
            "Time of the newest event in the record (Unix time).",
        ),
        |p| p.counters.last_event.map(one).unwrap_or_default(),
    );
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
            spend: &SpendView::default(),
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

    #[test]
    fn money_and_tokens_are_counters_and_each_cap_set_a_gauge() {
        use crate::budget::prices::Tokens;
        use crate::budget::spend::Lifetime;
        let spend = SpendView {
            lifetime: Lifetime {
                usd: 1.2,
                tokens: Tokens {
                    input: 3000,
                    output: 300,
                    cache_read: 0,
                    cache_write: 7,
                },
            },
            usd: vec![
                CapGauge {
                    scope: "round",
                    cap: None,
                    spent: Some(0.4),
                },
                CapGauge {
                    scope: "daily",
                    cap: None,
                    spent: Some(1.2),
                },
                CapGauge {
                    scope: "total",
                    cap: Some(1.0),
                    spent: Some(1.2),
                },
            ],
            tokens: vec![CapGauge {
                scope: "daily",
                cap: Some(5000.0),
                spent: Some(3307.0),
            }],
            rounds: Vec::new(),
        };
        let text = render(&[ProjectView {
            name: "p",
            counters: &Counters::default(),
            service: None,
            up: true,
            spend: &spend,
        }]);
        for line in [
            "# TYPE agent_runner_cost_usd_total counter\n",
            "agent_runner_cost_usd_total{project=\"p\"} 1.2\n",
            "# TYPE agent_runner_tokens_total counter\n",
            "agent_runner_tokens_total{project=\"p\",type=\"input\"} 3000\n",
            "agent_runner_tokens_total{project=\"p\",type=\"output\"} 300\n",
            "agent_runner_tokens_total{project=\"p\",type=\"cache_read\"} 0\n",
            "agent_runner_tokens_total{project=\"p\",type=\"cache_write\"} 7\n",
            "# TYPE agent_runner_budget_cap_usd gauge\n",
            "agent_runner_budget_cap_usd{project=\"p\",scope=\"total\"} 1\n",
            "agent_runner_budget_spent_usd{project=\"p\",scope=\"round\"} 0.4\n",
            "agent_runner_budget_spent_usd{project=\"p\",scope=\"daily\"} 1.2\n",
            "agent_runner_budget_spent_usd{project=\"p\",scope=\"total\"} 1.2\n",
            "agent_runner_budget_cap_tokens{project=\"p\",scope=\"daily\"} 5000\n",
            "agent_runner_budget_spent_tokens{project=\"p\",scope=\"daily\"} 3307\n",
        ] {
            assert!(text.contains(line), "{line:?} missing:\n{text}");
        }
        // A cap not set is no series: `round` and `daily` dollars have none.
        assert!(!text.contains("agent_runner_budget_cap_usd{project=\"p\",scope=\"round\"}"));
        assert!(!text.contains("agent_runner_budget_cap_usd{project=\"p\",scope=\"daily\"}"));
    }

    /// Every series the Grafana dashboard queries is one `/metrics` exposes and
    /// docs/metrics.md lists, and the dashboard is JSON Grafana can import (panels with
    /// unique ids, each with a grid position and a Prometheus target).
    #[test]
    fn the_dashboard_queries_only_series_that_exist() {
        let dashboard: serde_json::Value =
            serde_json::from_str(include_str!("../../../../docs/grafana/agent-runner.json"))
                .expect("docs/grafana/agent-runner.json is JSON");
        let doc = include_str!("../../../../docs/metrics.md");
        let exposed = render(&[]);
        let families: Vec<&str> = exposed
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        let mut ids = std::collections::BTreeSet::new();
        let mut queried = std::collections::BTreeSet::new();
        for panel in dashboard["panels"].as_array().expect("panels") {
            assert!(ids.insert(panel["id"].as_u64().expect("id")), "{panel}");
            assert!(panel["gridPos"]["w"].as_u64().is_some(), "{panel}");
            let targets = panel["targets"].as_array().expect("targets");
            assert!(!targets.is_empty(), "{panel}");
            for target in targets {
                let expr = target["expr"].as_str().expect("expr");
                let mut rest = expr;
                while let Some(at) = rest.find("agent_runner_") {
                    let name: String = rest[at..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    rest = &rest[at + name.len()..];
                    let family = ["_bucket", "_sum", "_count"]
                        .iter()
                        .find_map(|s| name.strip_suffix(s))
                        .filter(|f| families.contains(f))
                        .unwrap_or(&name)
                        .to_owned();
                    queried.insert(family);
                }
            }
        }
        for family in &queried {
            assert!(
                families.contains(&family.as_str()),
                "{family} is not exposed"
            );
            assert!(
                doc.contains(&format!("`{family}`")),
                "{family} is not in docs/metrics.md"
            );
        }
        for family in [
            "agent_runner_cost_usd_total",
            "agent_runner_tokens_total",
            "agent_runner_budget_spent_usd",
            "agent_runner_budget_cap_usd",
        ] {
            assert!(
                queried.contains(family),
                "the dashboard has no panel for {family}"
            );
        }
    }
}
