//! `agent-runner monitor`: watch a project without touching it (docs/operations.md
//! "monitor"). Modes, as in the reference system (`docs/reference-system.md`, "Monitor"):
//!
//! - `anomaly` (default): the built-in detectors ([`anomaly`]) every `--interval` seconds;
//!   each new alert is printed and recorded (`monitor_alert_emitted`); an alert of a
//!   detector listed in `[monitor] auto_stop_on` stops the supervisor
//!   (`monitor_auto_stop_triggered`).
//! - `events`: the record as JSON Lines, live; with `--host ALIAS` relayed from another
//!   machine over the system `ssh` ([`relay`]).
//! - `narrate`: the record live, one sentence per event.
//! - `http`: the live page, `/api/state`, `/metrics` and `/healthz` ([`http`], [`healthz`]).
//!
//! Only `anomaly` writes to the project's record (its `monitor_*` events) and asks a
//! supervisor to stop; the other modes are read-only.

pub(crate) mod anomaly;
pub(crate) mod healthz;
pub(crate) mod http;
pub(crate) mod metrics;
pub(crate) mod narrate;
pub(crate) mod relay;
pub(crate) mod spend;

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::config::{self, Config};
use crate::exit::{self, CliError};
use crate::operator::event_query::TAIL_POLL;
use crate::record::events::read::Forward;

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Mode {
    /// Alerts only (default).
    Anomaly,
    /// The record, one sentence per event.
    Narrate,
    /// The record as JSON Lines (with `--host`: relayed over ssh).
    Events,
    /// The live page, `/api/state` and `/metrics`.
    Http,
}

impl Mode {
    /// The CLI spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Anomaly => "anomaly",
            Mode::Narrate => "narrate",
            Mode::Events => "events",
            Mode::Http => "http",
        }
    }
}

/// Everything `monitor` was asked.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// `--config`.
    pub config: PathBuf,
    /// `--json`: alerts as JSON objects (anomaly).
    pub json: bool,
    /// `--mode`.
    pub mode: Mode,
    /// `--host`: the ssh alias (events mode only).
    pub host: Option<String>,
    /// `--kind`: kinds to relay (`--host` only).
    pub kind: Option<String>,
    /// `--remote-config`: the config path on the remote (`--host` only).
    pub remote_config: Option<String>,
    /// `--interval`: seconds between detector runs (anomaly; default 30).
    pub interval: Option<u64>,
    /// `--bind` (http; default 127.0.0.1).
    pub bind: IpAddr,
    /// `--port` (http; default 8765; 0 picks a free one).
    pub port: u16,
    /// `--project`: more configs shown by the page (http).
    pub projects: Vec<PathBuf>,
    /// `--token-file` (http), else `AGENT_RUNNER_MONITOR_TOKEN`.
    pub token_file: Option<PathBuf>,
}

/// The environment variable holding the page's token.
pub(crate) const TOKEN_ENV: &str = "AGENT_RUNNER_MONITOR_TOKEN";

fn usage(message: String) -> CliError {
    CliError {
        code: exit::USAGE,
        message,
    }
}

/// Runs `monitor`; returns the exit code.
///
/// Errors: 2 for flags that do not fit the mode, 78 for a bad config, 1 otherwise.
pub(crate) async fn run(options: Options) -> Result<u8, CliError> {
    if options.host.is_some() && options.mode != Mode::Events {
        return Err(usage(format!(
            "monitor: --host works with --mode events only (detection runs on the machine itself), not --mode {}",
            options.mode.as_str()
        )));
    }
    if (options.kind.is_some() || options.remote_config.is_some()) && options.host.is_none() {
        return Err(usage(
            "monitor: --kind and --remote-config apply to --host --mode events only".into(),
        ));
    }
    if options.mode != Mode::Http && (!options.projects.is_empty() || options.token_file.is_some())
    {
        return Err(usage(
            "monitor: --project and --token-file apply to --mode http only".into(),
        ));
    }
    let config = config::load(&options.config)?;
    match (options.mode, &options.host) {
        (Mode::Events, Some(host)) => {
            relay::run(&relay::RelayOptions {
                host: host.clone(),
                kind: options.kind.clone(),
                remote_config: options.remote_config.clone(),
                tolerance: config.monitor.remote_failure_tolerance,
                state_dir: config.runtime.state_dir.clone(),
            })
            .await
        }
        (Mode::Events, None) => stream(&config, |line| line.to_string()).await,
        (Mode::Narrate, _) => stream(&config, narrate::sentence).await,
        (Mode::Anomaly, _) => {
            let interval = Duration::from_secs(options.interval.unwrap_or(30).max(1));
            anomaly::watch(&config, interval, options.json).await
        }
        (Mode::Http, _) => {
            let mut projects = vec![config];
            for path in &options.projects {
                projects.push(config::load(path)?);
            }
            let token = match &options.token_file {
                Some(path) => Some(
                    std::fs::read_to_string(path)
                        .map_err(|e| {
                            CliError::failure(format!("cannot read {}: {e}", path.display()))
                        })?
                        .trim()
                        .to_owned(),
                ),
                None => std::env::var(TOKEN_ENV).ok(),
            }
            .filter(|t| !t.is_empty());
            http::serve(http::HttpOptions {
                addr: SocketAddr::new(options.bind, options.port),
                token,
                projects,
            })
            .await
        }
    }
}

/// Prints each new event of the record, rendered by `render`, until Ctrl-C.
async fn stream(
    config: &Config,
    render: impl Fn(&crate::record::events::Recorded) -> String,
) -> Result<u8, CliError> {
    let state_dir = &config.runtime.state_dir;
    let unreadable = |e: std::io::Error| CliError::failure(format!("cannot read {e}"));
    let mut reader = Forward::at_end(state_dir).map_err(unreadable)?;
    let mut interrupted = crate::operator::interrupt::interrupt_signal()?;
    loop {
        tokio::select! {
            _ = interrupted.recv() => return Ok(exit::OK),
            _ = tokio::time::sleep(TAIL_POLL) => {}
        }
        reader.refresh(state_dir).map_err(unreadable)?;
        let mut out = std::io::stdout().lock();
        while let Some(found) = reader.next_event().map_err(unreadable)? {
            let Some(event) = found.recorded() else {
                continue;
            };
            if writeln!(out, "{}", render(&event)).is_err() {
                return Ok(exit::OK);
            }
        }
        let _ = out.flush();
    }
}
