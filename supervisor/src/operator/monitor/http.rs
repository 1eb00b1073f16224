//! `monitor --mode http`: the live page (docs/operations.md "The live page"). axum over
//! hyper on the monitor's one thread; the page's HTML, script and style are compiled into
//! the binary (no build step, no CDN). Read-only: every route is a `GET` that reads the
//! record, `service.json` and the config, as `peek` does.
//!
//! Routes: `/` (the page), `/app.js`, `/style.css`, `/api/projects`, `/api/state` (the
//! `peek --json` document, `?project=N`), `/api/events` (server-sent events: each new line
//! of the record as a `record` event, `?project=N`), `/metrics` (Prometheus text),
//! `/healthz` (is serve alive and not wedged: [`super::healthz`], `?project=N`).
//!
//! Binding to 127.0.0.1 (the default) needs no token; binding to any other address needs
//! one (`AGENT_RUNNER_MONITOR_TOKEN` or `--token-file`), then sent by every request but
//! `/healthz` as `Authorization: Bearer <token>` or `?token=<token>`. `/healthz` is open
//! (a kubelet's probe carries no secret) and tells only the verdict, its reason, the pid,
//! the state and the round number.

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, watch};

use crate::config::Config;
use crate::exit::{self, CliError};
use crate::operator::monitor::healthz;
use crate::operator::monitor::metrics::{self, Counters, ProjectView};
use crate::operator::monitor::spend::{self, ChartPoint, SpendFollower, SpendView};
use crate::operator::peek::{self, PeekDoc, PeekOptions};
use crate::record::events::read::Forward;
use crate::record::service;
use crate::runtime::machine::host_health::{self, Reading};

const INDEX_HTML: &str = include_str!("page/index.html");
const APP_JS: &str = include_str!("page/app.js");
const STYLE_CSS: &str = include_str!("page/style.css");

/// How often each project's record is looked at for new lines.
pub(crate) const FOLLOW_POLL: Duration = Duration::from_millis(250);

/// Where and for whom the page is served.
pub(crate) struct HttpOptions {
    /// The address to bind (default 127.0.0.1).
    pub addr: SocketAddr,
    /// Required from clients when set; must be set for a non-loopback address.
    pub token: Option<String>,
    /// The projects shown, in order (`?project=N` indexes them).
    pub projects: Vec<Config>,
}

struct Project {
    /// The project's name and state dir (where its record is), as when the monitor
    /// started: the record the page follows does not move.
    name: String,
    state_dir: PathBuf,
    /// The config file and the config last loaded from it ([`Project::config`]).
    path: PathBuf,
    loaded: Mutex<Loaded>,
    live: broadcast::Sender<Arc<str>>,
    counters: Mutex<Counters>,
    /// The record's spend, for `/metrics` and the chart.
    spend: SpendFollower,
}

/// A config and the file bytes it was loaded from.
struct Loaded {
    config: Arc<Config>,
    bytes: Option<Vec<u8>>,
}

impl Project {
    fn new(config: Config) -> Self {
        Project {
            name: config.project.clone(),
            state_dir: config.runtime.state_dir.clone(),
            path: config.path.clone(),
            loaded: Mutex::new(Loaded {
                bytes: crate::tree_file::read_regular(&config.path).ok(),
                config: Arc::new(config),
            }),
            live: broadcast::channel(256).0,
            counters: Mutex::new(Counters::default()),
            spend: SpendFollower::default(),
        }
    }

    /// The record's spend now under `config`'s `[budget]`.
    fn spend(&self, config: &Config) -> SpendView {
        self.spend
            .view(&self.state_dir, &config.budget, jiff::Timestamp::now())
    }

    /// The chart of the newest rounds (`monitor.rounds_chart`).
    fn chart(&self, config: &Config) -> Vec<ChartPoint> {
        let spend = self.spend(config);
        let counters = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        spend::chart(&spend, counters.durations())
    }

    /// The project's config, loaded again when its file changed since it was last read,
    /// so a host added (or a budget changed) after the monitor started shows on the page
    /// as `serve` picks it up. A file that no longer loads keeps the last good config
    /// (as `serve` does), with a warning on stderr.
    fn config(&self) -> Arc<Config> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = crate::tree_file::read_regular(&self.path).ok();
        if bytes.is_some() && bytes != loaded.bytes {
            match crate::config::load(&self.path) {
                Ok(config) => loaded.config = Arc::new(config),
                Err(e) => tracing::warn!(
                    "{}: changed but not reloaded, the page keeps the last good config: {e}",
                    self.path.display()
                ),
            }
            loaded.bytes = bytes;
        }
        loaded.config.clone()
    }
}

struct App {
    projects: Vec<Arc<Project>>,
    token: Option<String>,
    /// Becomes `true` when SIGINT or SIGTERM arrives: every event stream then ends, so
    /// the graceful shutdown (which waits for open connections) is not held up by a
    /// browser that keeps `/api/events` open.
    closing: watch::Receiver<bool>,
}

/// Serves until SIGINT or SIGTERM, then ends every open event stream and exits 0; prints
/// `http://ADDR:PORT/` on stdout once listening.
///
/// Errors: exit 2 for a non-loopback address without a token; exit 1 when the address
/// cannot be bound.
pub(crate) async fn serve(options: HttpOptions) -> Result<u8, CliError> {
    if !options.addr.ip().is_loopback() && options.token.is_none() {
        return Err(CliError {
            code: exit::USAGE,
            message: format!(
                "monitor --mode http: binding to {} exposes the page beyond this machine; set a token (AGENT_RUNNER_MONITOR_TOKEN or --token-file)",
                options.addr.ip()
            ),
        });
    }
    let projects: Vec<Arc<Project>> = options
        .projects
        .into_iter()
        .map(|config| Arc::new(Project::new(config)))
        .collect();
    for project in &projects {
        tokio::spawn(follow(project.clone()));
    }
    let (closing_tx, closing) = watch::channel(false);
    let app = Arc::new(App {
        projects,
        token: options.token,
        closing,
    });
    let router = Router::new()
        .route("/", get(|| async { Html(INDEX_HTML) }))
        .route(
            "/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE_CSS) }),
        )
        .route("/api/projects", get(projects_route))
        .route("/api/state", get(state_route))
        .route("/api/events", get(events_route))
        .route("/metrics", get(metrics_route))
        .route("/healthz", get(healthz_route))
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app);
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| CliError::failure(format!("cannot listen on {}: {e}", options.addr)))?;
    let bound = listener
        .local_addr()
        .map_err(|e| CliError::failure(e.to_string()))?;
    println!("http://{bound}/");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let mut interrupt = crate::operator::interrupt::interrupt_signal()?;
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| CliError::failure(e.to_string()))?;
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            let _ = closing_tx.send(true);
        })
        .await
        .map_err(|e| CliError::failure(format!("http server: {e}")))?;
    Ok(exit::OK)
}

/// Reads the record of `project` from its start (for the counters; one line at a time),
/// then follows it: each new line is added up and sent to the page's live streams.
async fn follow(project: Arc<Project>) {
    let state_dir = &project.state_dir;
    let mut reader = Forward::at(Vec::new(), 0, 0);
    let mut first = true;
    loop {
        match reader.refresh(state_dir) {
            Ok(()) => {
                let mut counters = project.counters.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    match reader.next_event() {
                        Ok(Some(found)) => {
                            let Some(event) = found.recorded() else {
                                continue;
                            };
                            counters.observe(&event);
                            if !first {
                                let _ = project.live.send(event.to_string().into());
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            tracing::debug!("cannot read the record: {e}");
                            break;
                        }
                    }
                }
                first = false;
            }
            Err(e) => tracing::debug!("cannot read the record: {e}"),
        }
        tokio::time::sleep(FOLLOW_POLL).await;
    }
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// The token check, and headers every answer carries (no caching, no framing, scripts
/// only from this origin).
async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let open = request.uri().path() == "/healthz";
    if let Some(expected) = app.token.as_ref().filter(|_| !open) {
        let bearer = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let in_query = Query::<TokenParam>::try_from_uri(request.uri())
            .ok()
            .and_then(|q| q.0.token);
        let given = bearer.map(str::to_owned).or(in_query);
        if !given.is_some_and(|g| same(g.as_bytes(), expected.as_bytes())) {
            return (StatusCode::UNAUTHORIZED, "a token is required\n").into_response();
        }
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; connect-src 'self'"),
    );
    response
}

/// Compares in time independent of where the first difference is.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[derive(Deserialize)]
struct TokenParam {
    token: Option<String>,
}

#[derive(Deserialize)]
struct Selector {
    #[serde(default)]
    project: usize,
}

fn pick(app: &App, sel: &Selector) -> Result<Arc<Project>, Box<Response>> {
    app.projects.get(sel.project).cloned().ok_or_else(|| {
        Box::new(
            (
                StatusCode::NOT_FOUND,
                format!("no project {}; see /api/projects\n", sel.project),
            )
                .into_response(),
        )
    })
}

/// One entry of `GET /api/projects`.
#[derive(Serialize)]
struct ProjectEntry<'a> {
    index: usize,
    project: &'a str,
    config: &'a std::path::Path,
}

async fn projects_route(State(app): State<Arc<App>>) -> Response {
    let entries: Vec<ProjectEntry<'_>> = app
        .projects
        .iter()
        .enumerate()
        .map(|(index, p)| ProjectEntry {
            index,
            project: &p.name,
            config: &p.path,
        })
        .collect();
    Json(entries).into_response()
}

/// `GET /api/state`: the `peek --json` document, plus a `monitor` block (schema:
/// `docs/schema/monitor-state.schema.json`).
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct StateDoc {
    /// The peek document, its fields at the top level.
    #[serde(flatten)]
    pub peek: PeekDoc,
    /// What the page needs beyond peek.
    pub monitor: StateMonitor,
}

/// `monitor` of [`StateDoc`].
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct StateMonitor {
    /// The round budget of the current round's phase (or the base one), seconds.
    pub round_budget_s: u64,
    /// A host-health reading now, and its verdict.
    pub host_health: StateHealth,
    /// The newest rounds (at most 60), oldest first: each one's cost, tokens and the
    /// agent's duration, for the page's chart.
    pub rounds_chart: Vec<ChartPoint>,
}

/// `monitor.host_health` of [`StateDoc`].
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct StateHealth {
    /// The reading.
    pub reading: Reading,
    /// `warning`, `critical`, or `null` when healthy.
    pub severity: Option<&'static str>,
    /// `disk`, `psi`, `combined_low`, or `null`.
    pub signal: Option<&'static str>,
    /// The verdict in words, or `null`.
    pub message: Option<String>,
}

/// The [`StateDoc`] of the project of `config` (read-only, like `peek`), its chart
/// `rounds_chart`.
pub(crate) fn state_document(config: &Config, rounds_chart: Vec<ChartPoint>) -> StateDoc {
    let peek = peek::snapshot(
        config,
        &PeekOptions {
            round: None,
            events: Some(30),
        },
    )
    .doc;
    let phase = peek.current_round.as_ref().and_then(|r| r.phase.clone());
    let round_budget_s = config.profile(phase.as_deref()).round_budget.as_secs();
    let reading = Reading::take(&config.runtime.log_dir);
    let verdict = host_health::assess(&config.monitor.host_health, &reading);
    StateDoc {
        peek,
        monitor: StateMonitor {
            round_budget_s,
            host_health: StateHealth {
                reading,
                severity: verdict.as_ref().map(|p| p.severity),
                signal: verdict.as_ref().map(|p| p.signal),
                message: verdict.map(|p| p.message),
            },
            rounds_chart,
        },
    }
}

async fn state_route(State(app): State<Arc<App>>, Query(sel): Query<Selector>) -> Response {
    let project = match pick(&app, &sel) {
        Ok(p) => p,
        Err(response) => return *response,
    };
    let config = project.config();
    let chart = project.chart(&config);
    Json(state_document(&config, chart)).into_response()
}

async fn events_route(State(app): State<Arc<App>>, Query(sel): Query<Selector>) -> Response {
    let project = match pick(&app, &sel) {
        Ok(p) => p,
        Err(response) => return *response,
    };
    let receiver = project.live.subscribe();
    let closing = app.closing.clone();
    let stream = futures_util::stream::unfold(
        (receiver, closing),
        |(mut receiver, mut closing)| async move {
            loop {
                let line = tokio::select! {
                    // The monitor is shutting down (or already was when the stream opened).
                    _ = closing.wait_for(|closing| *closing) => return None,
                    line = receiver.recv() => line,
                };
                match line {
                    Ok(line) => {
                        let event = SseEvent::default().event("record").data(&*line);
                        return Some((Ok::<_, Infallible>(event), (receiver, closing)));
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        },
    );
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// `GET /healthz`: 200 when serve is alive and not wedged, else 503; the body is the
/// [`healthz::Health`] document.
async fn healthz_route(State(app): State<Arc<App>>, Query(sel): Query<Selector>) -> Response {
    let project = match pick(&app, &sel) {
        Ok(p) => p,
        Err(response) => return *response,
    };
    let config = project.config();
    let health = healthz::check(&config).await;
    let code = if health.ok() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(health)).into_response()
}

async fn metrics_route(State(app): State<Arc<App>>) -> Response {
    type Snapshot = (Counters, Option<service::ServiceDoc>, bool, SpendView);
    let snapshots: Vec<Snapshot> = app
        .projects
        .iter()
        .map(|p| {
            let state_dir = &p.state_dir;
            (
                p.counters.lock().unwrap_or_else(|e| e.into_inner()).clone(),
                service::read(state_dir),
                service::live_supervisor(state_dir).is_some(),
                p.spend(&p.config()),
            )
        })
        .collect();
    let views: Vec<ProjectView<'_>> = app
        .projects
        .iter()
        .zip(&snapshots)
        .map(|(p, (counters, service, up, spend))| ProjectView {
            name: &p.name,
            counters,
            service: service.as_ref(),
            up: *up,
            spend,
        })
        .collect();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics::render(&views),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_comparison() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }
}
