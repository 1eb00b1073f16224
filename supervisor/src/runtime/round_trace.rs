//! One OpenTelemetry trace per round, exported over OTLP/HTTP with protobuf
//! (docs/operations.md, "Traces"; what leaves the machine: docs/security.md, "Traces").
//!
//! The round's span follows the GenAI semantic conventions (`invoke_agent {agent}`,
//! `gen_ai.*` attributes); its children are the round's hook calls
//! ([`crate::hosts::CallRecord`]) and goal checks ([`crate::runtime::goal::CheckTiming`]),
//! built after the fact from their recorded times; its status is the round's outcome. The
//! agent gets the span's W3C `TRACEPARENT` and an `OTEL_RESOURCE_ATTRIBUTES` naming the
//! project and round, so a CLI's own telemetry joins the round. An attempt that starts no
//! agent (deferred or skipped by a hook, deferred by the host-health gate, stopped, or
//! failed before its agent) is a trace too: one `round_attempt` span
//! ([`Traces::not_started`]) saying why, its hook calls as children.
//!
//! Nothing here may slow a round: a finished span goes into the SDK's bounded queue
//! ([`MAX_QUEUE`]; full, it is dropped) and a thread of the SDK exports batches through a
//! blocking HTTP client with a short timeout ([`EXPORT_TIMEOUT`]). Export failures are
//! seen by [`Watched`] on that thread and told on the supervisor's thread by
//! [`Traces::report`]: `telemetry_export_failed` once when an outage begins,
//! `telemetry_export_recovered` when the collector takes spans again. At exit
//! [`Traces::shutdown`] flushes within [`FLUSH_AT_EXIT`].

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use agent_runner_protocol::TokenUsage;
use opentelemetry::trace::{
    Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
};
use opentelemetry_sdk::Resource;

use crate::config::telemetry::{OtlpEndpoint, TelemetryConfig};
use crate::hosts::CallRecord;
use crate::record::events::{Event, EventLog};
use crate::runtime::goal::CheckTiming;

/// Spans waiting for export at most; a span finished while the queue is full is dropped.
pub(crate) const MAX_QUEUE: usize = 512;
/// Spans sent in one request at most.
const MAX_BATCH: usize = 256;
/// How often the queue is sent.
const EXPORT_EVERY: Duration = Duration::from_secs(2);
/// One request's time bound (connect and answer).
pub(crate) const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long `serve` and `round` wait at exit for the queue to be sent.
pub(crate) const FLUSH_AT_EXIT: Duration = Duration::from_secs(3);

/// The exporter of one `serve` or `round`: its provider and what it has told of its
/// collector's health.
pub(crate) struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    endpoint: OtlpEndpoint,
    health: Arc<Mutex<Health>>,
    /// The outages told so far (`telemetry_export_failed`), and whether the last one has
    /// not been told over (`telemetry_export_recovered`).
    told: (u64, bool),
    /// `agent_runner.project` for the agent's `OTEL_RESOURCE_ATTRIBUTES`.
    project: String,
}

/// What the export thread saw of the collector.
#[derive(Debug, Default)]
struct Health {
    /// Outages begun so far.
    outages: u64,
    /// The current outage: when it began, its first error, failed requests, spans lost.
    failing: Option<Outage>,
    /// The last outage that ended.
    last: Option<Outage>,
}

#[derive(Clone, Debug)]
struct Outage {
    since: std::time::Instant,
    error: String,
    failed_exports: u64,
    spans_lost: u64,
}

/// The OTLP exporter, its results watched ([`Health`]); runs on the SDK's export thread.
#[derive(Debug)]
struct Watched<E> {
    inner: E,
    health: Arc<Mutex<Health>>,
}

impl<E: SpanExporter> SpanExporter for Watched<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        let result = self.inner.export(batch).await;
        let mut health = self.health.lock().unwrap_or_else(|p| p.into_inner());
        match &result {
            Ok(()) => {
                if let Some(outage) = health.failing.take() {
                    health.last = Some(outage);
                }
            }
            Err(e) => {
                if health.failing.is_none() {
                    health.outages += 1;
                    health.failing = Some(Outage {
                        since: std::time::Instant::now(),
                        error: agent_runner_protocol::limits::fit_text(&e.to_string(), 300),
                        failed_exports: 0,
                        spans_lost: 0,
                    });
                }
                if let Some(outage) = health.failing.as_mut() {
                    outage.failed_exports += 1;
                    outage.spans_lost += spans;
                }
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// What a round's span says from its start: the agent, its provider and model, and the
/// session it resumes.
#[derive(Clone, Debug, Default)]
pub(crate) struct RoundFacts {
    /// The round's number.
    pub round_num: u64,
    /// Its phase, if any.
    pub phase: Option<String>,
    /// `gen_ai.agent.name`: `[agent] name`, else the CLI, else `command[0]`'s file name.
    pub agent: String,
    /// `gen_ai.provider.name`, when the CLI has one provider ([`provider_of`]).
    pub provider: Option<&'static str>,
    /// `gen_ai.request.model`: the model the agent's command asks for (`--model`), if any.
    pub model: Option<String>,
    /// `gen_ai.conversation.id`: the session the round resumes.
    pub conversation: Option<String>,
}

/// How a round ended, for its span.
#[derive(Debug, Default)]
pub(crate) struct RoundEnding {
    /// The round's own usage as recorded (`agent_usage_recorded`).
    pub usage: Option<TokenUsage>,
    /// The agent's exit code and how it ended (`exited`, `timeout`, …).
    pub exit: Option<(Option<i32>, &'static str)>,
    /// Why the round failed, if it did (the span's error status); `None`: it did not.
    pub failure: Option<String>,
    /// Its hook calls.
    pub calls: Vec<CallRecord>,
    /// Its goal checks.
    pub checks: Vec<CheckTiming>,
}

/// An attempt that started no agent, for its span ([`Traces::not_started`]).
#[derive(Debug, Default)]
pub(crate) struct NotStarted {
    /// The round it was for (the next round's number), when it could be read.
    pub round_num: Option<u64>,
    /// `agent_runner.attempt.outcome`: `deferred`, `skipped`, `unhealthy`, `stopped` or
    /// `failed`.
    pub outcome: &'static str,
    /// `agent_runner.attempt.reason`: why, in words (a hook's reason, the reading, the
    /// error).
    pub reason: String,
    /// `agent_runner.hook`: the hook that decided, if one did.
    pub hook: Option<String>,
    /// The attempt failed (the span's error status); otherwise its status is unset.
    pub failed: bool,
    /// Its hook calls.
    pub calls: Vec<CallRecord>,
}

/// The span of a round under way.
pub(crate) struct RoundSpan {
    cx: Context,
    traceparent: String,
    resource_attributes: String,
}

impl RoundSpan {
    /// The variables the agent (and a goal check) gets: `TRACEPARENT` and
    /// `OTEL_RESOURCE_ATTRIBUTES` (after the operator's own, from `agent_env` — the
    /// variables set on top — else the supervisor's environment, which the allow-list's
    /// `OTEL_*` passes).
    pub(crate) fn agent_env(&self, agent_env: &[(String, String)]) -> Vec<(String, String)> {
        const NAME: &str = "OTEL_RESOURCE_ATTRIBUTES";
        let inherited = std::env::var(NAME).ok();
        let attributes = match agent_env
            .iter()
            .rev()
            .find(|(k, _)| k == NAME)
            .map(|(_, v)| v.as_str())
            .or(inherited.as_deref())
            .map(str::trim)
            .filter(|v| !v.is_empty())
        {
            Some(theirs) => format!("{theirs},{}", self.resource_attributes),
            None => self.resource_attributes.clone(),
        };
        vec![
            ("TRACEPARENT".to_owned(), self.traceparent.clone()),
            (NAME.to_owned(), attributes),
        ]
    }
}

impl Traces {
    /// The exporter of `telemetry`'s endpoint, `None` without one. A failure to build it
    /// (the HTTP client's thread cannot start) is recorded as `telemetry_export_failed`
    /// and rounds run without traces.
    pub(crate) fn start(
        telemetry: &TelemetryConfig,
        project: &str,
        events: &EventLog,
    ) -> Option<Traces> {
        let endpoint = telemetry.endpoint.clone()?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint.traces_url.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build();
        let exporter = match exporter {
            Ok(e) => e,
            Err(e) => {
                events.emit(Event::TelemetryExportFailed {
                    endpoint: endpoint.traces_url.clone(),
                    source: endpoint.source.clone(),
                    error: format!("cannot build the exporter: {e}"),
                });
                return None;
            }
        };
        let health = Arc::new(Mutex::new(Health::default()));
        let processor = BatchSpanProcessor::builder(Watched {
            inner: exporter,
            health: health.clone(),
        })
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(MAX_QUEUE)
                .with_max_export_batch_size(MAX_BATCH)
                .with_scheduled_delay(EXPORT_EVERY)
                .build(),
        )
        .build();
        let resource = Resource::builder()
            .with_service_name(telemetry.service_name.clone())
            .with_attributes([
                KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
                KeyValue::new("agent_runner.project", project.to_owned()),
            ])
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("agent-runner");
        tracing::info!(
            "traces of each round go to {} ({})",
            endpoint.traces_url,
            endpoint.source
        );
        Some(Traces {
            provider,
            tracer,
            endpoint,
            health,
            told: (0, false),
            project: project.to_owned(),
        })
    }

    /// Starts the span of a round that began at `began` (before its pre-round hooks).
    pub(crate) fn begin(&self, facts: &RoundFacts, began: SystemTime) -> RoundSpan {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", facts.agent.clone()),
            KeyValue::new("agent_runner.round_num", facts.round_num as i64),
        ];
        if let Some(provider) = facts.provider {
            attributes.push(KeyValue::new("gen_ai.provider.name", provider));
        }
        if let Some(model) = &facts.model {
            attributes.push(KeyValue::new("gen_ai.request.model", model.clone()));
        }
        if let Some(id) = &facts.conversation {
            attributes.push(KeyValue::new("gen_ai.conversation.id", id.clone()));
        }
        if let Some(phase) = &facts.phase {
            attributes.push(KeyValue::new("agent_runner.phase", phase.clone()));
        }
        let builder = self
            .tracer
            .span_builder(format!("invoke_agent {}", facts.agent))
            .with_kind(SpanKind::Internal)
            .with_start_time(began)
            .with_attributes(attributes);
        let span = self.tracer.build_with_context(builder, &Context::new());
        let sc = span.span_context().clone();
        let traceparent = format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        );
        let resource_attributes = format!(
            "agent_runner.project={},agent_runner.round_num={}",
            percent_encode(&self.project),
            facts.round_num
        );
        RoundSpan {
            cx: Context::new().with_span(span),
            traceparent,
            resource_attributes,
        }
    }

    /// The trace of an attempt that began at `began` and started no agent: a
    /// `round_attempt` span (no `invoke_agent`: nothing was invoked) with the outcome and
    /// its reason, the hook calls as its children. Never waits on the collector.
    pub(crate) fn not_started(&self, began: SystemTime, attempt: NotStarted) {
        let mut attributes = vec![
            KeyValue::new("agent_runner.attempt.outcome", attempt.outcome),
            KeyValue::new("agent_runner.attempt.reason", attempt.reason.clone()),
        ];
        if let Some(n) = attempt.round_num {
            attributes.push(KeyValue::new("agent_runner.round_num", n as i64));
        }
        if let Some(hook) = &attempt.hook {
            attributes.push(KeyValue::new("agent_runner.hook", hook.clone()));
        }
        let builder = self
            .tracer
            .span_builder("round_attempt")
            .with_kind(SpanKind::Internal)
            .with_start_time(began)
            .with_attributes(attributes);
        let span = self.tracer.build_with_context(builder, &Context::new());
        let cx = Context::new().with_span(span);
        self.calls(&cx, &attempt.calls);
        let span = cx.span();
        if attempt.failed {
            span.set_status(Status::error(attempt.reason));
        }
        span.end();
    }

    /// `calls` as children of the span of `cx`.
    fn calls(&self, cx: &Context, calls: &[CallRecord]) {
        for call in calls {
            let builder = self
                .tracer
                .span_builder(format!("{} {}", call.method, call.hook))
                .with_kind(SpanKind::Client)
                .with_start_time(call.started)
                .with_attributes([
                    KeyValue::new("rpc.system", "jsonrpc"),
                    KeyValue::new("rpc.method", call.method),
                    KeyValue::new("agent_runner.host", call.host.clone()),
                    KeyValue::new("agent_runner.hook", call.hook.clone()),
                ]);
            let mut child = self.tracer.build_with_context(builder, cx);
            if let Some(failure) = &call.failure {
                child.set_status(Status::error(failure.clone()));
            }
            child.end_with_timestamp(call.started + call.elapsed);
        }
    }

    /// Ends `span` as `ending` says, its children first. Never waits on the collector.
    pub(crate) fn finish(&self, span: RoundSpan, ending: RoundEnding) {
        self.calls(&span.cx, &ending.calls);
        for check in &ending.checks {
            let builder = self
                .tracer
                .span_builder(format!("goal_check {}", check.name))
                .with_start_time(check.started)
                .with_attributes([KeyValue::new("agent_runner.check", check.name.clone())]);
            let mut child = self.tracer.build_with_context(builder, &span.cx);
            if let Some(error) = &check.error {
                child.set_status(Status::error(error.clone()));
            }
            child.end_with_timestamp(check.ended);
        }
        let round = span.cx.span();
        if let Some(usage) = &ending.usage {
            for kv in usage_attributes(usage) {
                round.set_attribute(kv);
            }
        }
        if let Some((code, cause)) = ending.exit {
            round.set_attribute(KeyValue::new("agent_runner.exit_cause", cause));
            if let Some(code) = code {
                round.set_attribute(KeyValue::new("agent_runner.exit_code", i64::from(code)));
            }
        }
        match ending.failure {
            Some(reason) => {
                round.set_attribute(KeyValue::new("error.type", "round_failed"));
                round.set_status(Status::error(reason));
            }
            None => round.set_status(Status::Ok),
        }
        round.end();
    }

    /// Tells what the export thread saw since the last look: `telemetry_export_failed`
    /// when an outage began (once per outage, whatever it lost), and
    /// `telemetry_export_recovered` when it ended.
    pub(crate) fn report(&mut self, events: &EventLog) {
        let (outages, failing, last) = {
            let health = self.health.lock().unwrap_or_else(|p| p.into_inner());
            (health.outages, health.failing.clone(), health.last.clone())
        };
        if outages > self.told.0 {
            let error = failing
                .as_ref()
                .or(last.as_ref())
                .map(|o| o.error.clone())
                .unwrap_or_default();
            events.emit(Event::TelemetryExportFailed {
                endpoint: self.endpoint.traces_url.clone(),
                source: self.endpoint.source.clone(),
                error,
            });
            self.told = (outages, true);
        }
        if self.told.1 && failing.is_none() {
            if let Some(outage) = last {
                events.emit(Event::TelemetryExportRecovered {
                    endpoint: self.endpoint.traces_url.clone(),
                    failed_for_s: (outage.since.elapsed().as_secs_f64() * 10.0).round() / 10.0,
                    failed_exports: outage.failed_exports,
                    spans_lost: outage.spans_lost,
                });
            }
            self.told.1 = false;
        }
    }

    /// Sends what is queued within [`FLUSH_AT_EXIT`] and stops the export thread; an
    /// outage it met is told ([`Self::report`]).
    pub(crate) fn shutdown(mut self, events: &EventLog) {
        if let Err(e) = self.provider.shutdown_with_timeout(FLUSH_AT_EXIT) {
            tracing::warn!("traces not all sent at exit: {e}");
        }
        self.report(events);
    }
}

/// The round span's usage attributes (GenAI conventions: `gen_ai.usage.input_tokens`
/// counts every input token, those read from and written to the cache included, which
/// `gen_ai.usage.cache_read.input_tokens` and `…cache_creation.input_tokens` break out).
fn usage_attributes(usage: &TokenUsage) -> Vec<KeyValue> {
    let read = usage.cache_read_tokens.unwrap_or(0);
    let written = usage.cache_write_tokens.unwrap_or(0);
    let input = usage
        .input_tokens
        .saturating_add(read)
        .saturating_add(written);
    let mut out = vec![
        KeyValue::new("gen_ai.usage.input_tokens", input as i64),
        KeyValue::new("gen_ai.usage.output_tokens", usage.output_tokens as i64),
    ];
    if let Some(read) = usage.cache_read_tokens {
        out.push(KeyValue::new(
            "gen_ai.usage.cache_read.input_tokens",
            read as i64,
        ));
    }
    if let Some(written) = usage.cache_write_tokens {
        out.push(KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            written as i64,
        ));
    }
    if let Some(model) = &usage.model {
        out.push(KeyValue::new("gen_ai.response.model", model.clone()));
    }
    if let Some(cost) = usage.cost_usd {
        out.push(KeyValue::new("agent_runner.cost_usd", cost));
    }
    out
}

/// `gen_ai.provider.name` of a preset CLI that speaks to one provider (the GenAI
/// conventions' names); `None` for CLIs that take any provider (aider, pi, codewhale).
pub(crate) fn provider_of(cli: Option<&str>) -> Option<&'static str> {
    match cli? {
        "claude" => Some("anthropic"),
        "codex" => Some("openai"),
        "gemini" => Some("gcp.gemini"),
        "kimi" => Some("moonshot"),
        _ => None,
    }
}

/// The model `argv` asks for: the word after `--model` or `-m`, or `--model=<name>`.
pub(crate) fn model_of(argv: &[String]) -> Option<String> {
    let mut words = argv.iter();
    while let Some(word) = words.next() {
        if let Some(model) = word.strip_prefix("--model=") {
            return Some(model.to_owned()).filter(|m| !m.is_empty());
        }
        if word == "--model" || word == "-m" {
            return words.next().cloned().filter(|m| !m.is_empty());
        }
    }
    None
}

/// A value of `OTEL_RESOURCE_ATTRIBUTES` (W3C Baggage's octets): everything but
/// unreserved characters percent-encoded.
fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn the_model_is_read_from_the_command() {
        assert_eq!(
            model_of(&words("claude -p --model opus")).as_deref(),
            Some("opus")
        );
        assert_eq!(
            model_of(&words("codex exec --model=gpt-5")).as_deref(),
            Some("gpt-5")
        );
        assert_eq!(
            model_of(&words("aider -m sonnet --yes")).as_deref(),
            Some("sonnet")
        );
        assert_eq!(model_of(&words("gemini --yolo")), None);
        assert_eq!(model_of(&words("x --model")), None);
    }

    #[test]
    fn usage_counts_every_input_token() {
        let usage = TokenUsage {
            input_tokens: 100,
            output_tokens: 7,
            cache_read_tokens: Some(900),
            cache_write_tokens: None,
            cost_usd: Some(0.5),
            model: Some("m".into()),
        };
        let attrs = usage_attributes(&usage);
        let get = |k: &str| {
            attrs
                .iter()
                .find(|kv| kv.key.as_str() == k)
                .map(|kv| kv.value.to_string())
        };
        assert_eq!(get("gen_ai.usage.input_tokens").as_deref(), Some("1000"));
        assert_eq!(get("gen_ai.usage.output_tokens").as_deref(), Some("7"));
        assert_eq!(
            get("gen_ai.usage.cache_read.input_tokens").as_deref(),
            Some("900")
        );
        assert_eq!(get("gen_ai.usage.cache_creation.input_tokens"), None);
        assert_eq!(get("gen_ai.response.model").as_deref(), Some("m"));
    }

    /// What a round's own thread spends on its trace (begin, three children, finish)
    /// while the collector refuses every connection: the export is the SDK thread's, so
    /// this stays in microseconds (printed for docs/operations.md "Traces").
    #[test]
    fn a_rounds_trace_costs_its_thread_microseconds_with_the_collector_down() {
        let dir = tempfile::tempdir().unwrap();
        let events = EventLog::new(dir.path());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let telemetry = TelemetryConfig {
            endpoint: Some(OtlpEndpoint {
                traces_url: format!("http://127.0.0.1:{port}/v1/traces"),
                source: "test".into(),
                host: "127.0.0.1".into(),
                port,
            }),
            service_name: "agent-runner".into(),
        };
        let mut traces = Traces::start(&telemetry, "p", &events).expect("an exporter");
        const ROUNDS: u32 = 2000;
        let started = std::time::Instant::now();
        for n in 0..ROUNDS {
            let now = SystemTime::now();
            let span = traces.begin(
                &RoundFacts {
                    round_num: u64::from(n),
                    agent: "claude".into(),
                    provider: Some("anthropic"),
                    ..Default::default()
                },
                now,
            );
            let call = |hook: &str| CallRecord {
                host: "h".into(),
                hook: hook.into(),
                method: "post_round/after_round",
                started: now,
                elapsed: Duration::from_millis(1),
                failure: None,
            };
            traces.finish(
                span,
                RoundEnding {
                    usage: None,
                    exit: Some((Some(0), "exited")),
                    failure: None,
                    calls: vec![call("a"), call("b")],
                    checks: vec![CheckTiming {
                        name: "c".into(),
                        started: now,
                        ended: now,
                        error: None,
                    }],
                },
            );
            traces.report(&events);
        }
        let per_round = started.elapsed() / ROUNDS;
        eprintln!("a round's trace on its own thread: {per_round:?} (collector down)");
        assert!(per_round < Duration::from_millis(2), "{per_round:?}");
        let flushed = std::time::Instant::now();
        traces.shutdown(&events);
        assert!(flushed.elapsed() < FLUSH_AT_EXIT + Duration::from_secs(2));
        let text = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap())
            .collect::<String>();
        assert_eq!(text.matches("telemetry_export_failed").count(), 1, "{text}");
    }

    #[test]
    fn resource_values_are_percent_encoded() {
        assert_eq!(percent_encode("my proj,a=b%"), "my%20proj%2Ca%3Db%25");
        assert_eq!(percent_encode("plain-name_1.0"), "plain-name_1.0");
    }
}
