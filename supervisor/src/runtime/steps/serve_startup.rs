//! Serve-startup hooks (docs/protocol.md §5.5): called once when `serve` boots, before the
//! first round, in one concurrent batch, each with its host's config. Any failure (an
//! error answer, an invalid result, a timeout, a crash) is recorded as
//! `serve_startup_hook_failed` and stops `serve` with exit 78: the hook said the project
//! is not fit to run.

use agent_runner_protocol::limits::{fit_text, MAX_CONTEXT_TEXT_BYTES};
use agent_runner_protocol::{decode_startup_result, Family, OnStartParams};
use serde_json::Value;

use crate::config::Config;
use crate::hosts::{HookRef, HostManager};
use crate::record::events::{Event, EventLog};
use crate::record::stop::StopWatch;

/// One serve-startup hook that failed. Display: ``serve-startup hook `<hook>` failed
/// (<error_type>): <message>``.
#[derive(Debug)]
pub(crate) struct HookFailure {
    /// The hook's name.
    pub hook: String,
    /// `serve_startup_hook_failed.error_type`: `invalid_result`, `not_asked`, `timeout`, ...
    pub error_type: String,
    /// What went wrong.
    pub message: String,
}

impl std::fmt::Display for HookFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "serve-startup hook `{}` failed ({}): {}",
            self.hook, self.error_type, self.message
        )
    }
}

/// The serve-startup hooks that failed, in hook order (at least one). Display: one line
/// per hook.
#[derive(Debug, thiserror::Error)]
#[error("{}", self.0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub(crate) struct StartupFailed(pub Vec<HookFailure>);

/// Calls every serve-startup hook. `Ok` when all passed (or there are none) or a stop
/// arrived meanwhile.
///
/// Errors: [`StartupFailed`], each failed hook (also recorded as
/// `serve_startup_hook_failed`).
pub(crate) async fn run(
    hosts: &mut HostManager,
    config: &Config,
    events: &EventLog,
    stop: &mut StopWatch,
) -> Result<(), StartupFailed> {
    let calls: Vec<(HookRef, Value)> = hosts
        .hooks(Family::ServeStartup)
        .into_iter()
        .map(|hook| {
            // Texts capped as in `initialize` and `ctx` (`docs/protocol.md` §7, "Limits").
            let fit = |text: &str| fit_text(text, MAX_CONTEXT_TEXT_BYTES);
            let params = OnStartParams {
                hook: hook.name.clone(),
                project: fit(&config.project),
                work_dir: fit(&config.runtime.work_dir.display().to_string()),
                log_dir: fit(&config.runtime.log_dir.display().to_string()),
                config: hosts.host_config(&hook).clone(),
            };
            (
                hook,
                serde_json::to_value(params).expect("params serialize"),
            )
        })
        .collect();
    if calls.is_empty() {
        return Ok(());
    }
    let hooks: Vec<HookRef> = calls.iter().map(|(h, _)| h.clone()).collect();
    let Some(answers) = hosts.call_all(calls, stop).await else {
        return Ok(()); // stopping anyway
    };
    let mut failed = Vec::new();
    for (hook, answer) in hooks.iter().zip(answers) {
        let problem = match answer {
            Ok(Some(value)) => match decode_startup_result(value) {
                Ok(result) => (!hosts.record_host_events(hook, result.events)).then(|| {
                    (
                        "invalid_result",
                        "its result carried invalid events".to_owned(),
                    )
                }),
                Err(err) => {
                    let message = format!("on_start result {err}");
                    hosts.invalid_result(hook, message.clone());
                    Some(("invalid_result", message))
                }
            },
            Ok(None) => Some((
                "not_asked",
                "its host is disabled or backing off".to_owned(),
            )),
            Err(failure) => Some((failure.error_type.as_str(), failure.message)),
        };
        if let Some((error_type, message)) = problem {
            events.emit(Event::ServeStartupHookFailed {
                hook: hook.name.to_string(),
                error_type: error_type.to_owned(),
                error_message: message.clone(),
            });
            failed.push(HookFailure {
                hook: hook.name.to_string(),
                error_type: error_type.to_owned(),
                message,
            });
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(StartupFailed(failed))
    }
}
