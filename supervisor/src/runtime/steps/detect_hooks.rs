//! Detectors (docs/protocol.md §5.6), polled after each round that ran under `serve`, in
//! one concurrent batch (no answer depends on another). This stands in for the monitor
//! the reference system polls detectors from, which this build does not have yet
//! (docs/configuration.md, `[monitor]`).
//!
//! Each alert is recorded as `detector_alert`. An alert with `stop_service` stops `serve`
//! only when its hook is named in the `[monitor] auto_stop_on` the operator wrote
//! ([`crate::config::MonitorConfig::stops_on`]; the default names built-in detectors
//! only); otherwise it is recorded with `auto_stop: false` and the loop goes on.
//! A failed call raises nothing.

use agent_runner_protocol::redact::redact_and_cap;
use agent_runner_protocol::{
    decode_detection, Context, DetectParams, Family, HookName, ProjectState,
};
use serde_json::Value;

use crate::config::MonitorConfig;
use crate::hosts::{HookRef, HostManager};
use crate::record::events::{Event, EventLog};
use crate::record::stop::StopWatch;

/// A detector alert that stops `serve`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoStop {
    /// The detector hook.
    pub hook: HookName,
    /// Its message (redacted, capped).
    pub message: String,
}

/// Polls every detector with the round `ctx` and the project's `state`; returns the first
/// honoured `stop_service` alert, in hook order. A graceful stop abandons the poll.
pub async fn poll(
    hosts: &mut HostManager,
    monitor: &MonitorConfig,
    events: &EventLog,
    ctx: &Context,
    state: &ProjectState,
    stop: &mut StopWatch,
) -> Option<AutoStop> {
    let calls: Vec<(HookRef, Value)> = hosts
        .hooks(Family::Detector)
        .into_iter()
        .map(|hook| {
            let params = DetectParams {
                hook: hook.name.clone(),
                ctx: ctx.clone(),
                state: state.clone(),
            };
            (
                hook,
                serde_json::to_value(params).expect("params serialize"),
            )
        })
        .collect();
    if calls.is_empty() {
        return None;
    }
    let hooks: Vec<HookRef> = calls.iter().map(|(h, _)| h.clone()).collect();
    let answers = hosts.call_all(calls, stop).await?;
    let mut auto_stop = None;
    for (hook, answer) in hooks.iter().zip(answers) {
        let Ok(Some(value)) = answer else { continue };
        let detection = match decode_detection(value) {
            Ok(detection) => detection,
            Err(err) => {
                hosts.invalid_result(hook, format!("detect result {err}"));
                continue;
            }
        };
        if !hosts.record_host_events(hook, detection.events) {
            continue;
        }
        let Some(alert) = detection.alert else {
            continue;
        };
        let message = redact_and_cap(&alert.message);
        let honoured =
            alert.stop_service && monitor.stops_on(&[hook.name.as_str()], hosts.is_builtin(hook));
        events.emit(Event::DetectorAlert {
            hook: hook.name.to_string(),
            severity: alert.severity.as_str().to_owned(),
            message: message.clone(),
            stop_service: alert.stop_service,
            auto_stop: honoured,
            round_num: ctx.round_num,
        });
        if honoured && auto_stop.is_none() {
            auto_stop = Some(AutoStop {
                hook: hook.name.clone(),
                message,
            });
        }
    }
    auto_stop
}
