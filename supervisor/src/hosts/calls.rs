//! Calling hooks: one call, one call raced against a stop, a concurrent batch across
//! hosts ([`HostManager::call_all`]), and the events a result carries.

use agent_runner_protocol::{check_host_events, Family, HostEvent};
use serde_json::Value;
use std::time::{Duration, Instant, SystemTime};

use super::call_failure::CallFailure;
use super::call_record::{CallRecord, MAX_CALLS_KEPT};
use super::cause::{Deadline, InFlight};
use super::host::RunningHost;
use super::{HookRef, HostManager};

impl HostManager {
    /// How long a call of `hook` may take (`timeout_s` of its host, else its family's
    /// default).
    pub(crate) fn call_timeout(&self, hook: &HookRef) -> Duration {
        self.hosts[hook.host].cfg.call_timeout(hook.family)
    }

    /// Registered hooks of `family`, in call order (dirty handlers by ascending priority).
    pub fn hooks(&self, family: Family) -> Vec<HookRef> {
        self.hooks
            .iter()
            .filter(|h| h.family == family && !self.hosts[h.host].disabled)
            .cloned()
            .collect()
    }

    /// Calls `hook` (its family's method, [`Family::method`]) with `params`; on failure records `hook_failed` (and
    /// `plugin_sandbox_kill` for a sandbox kill), kills the host when the failure ends it,
    /// and schedules its restart. `Ok(None)` means the host is backing off or disabled
    /// and was not asked.
    pub async fn call(
        &mut self,
        hook: &HookRef,
        params: Value,
    ) -> Result<Option<Value>, CallFailure> {
        let index = hook.host;
        if let Some(not_asked) = self.ready(hook).await {
            return not_asked;
        }
        let deadline = Deadline::call(&self.hosts[index].cfg, hook.family);
        let running = self.hosts[index]
            .running
            .as_mut()
            .expect("ready() started it");
        let started = Instant::now();
        let answer = running
            .call(&in_flight(hook), Some(params), &deadline)
            .await;
        self.settle(hook, started.elapsed(), answer).await
    }

    /// Makes the host of `hook` ready for a call: `None` when it is running (started now
    /// if needed), otherwise what the call comes to without asking it (`Ok(None)` while
    /// disabled or backing off, the start failure, recorded).
    pub(super) async fn ready(
        &mut self,
        hook: &HookRef,
    ) -> Option<Result<Option<Value>, CallFailure>> {
        let index = hook.host;
        self.disable_on_write_breach(index);
        if self.hosts[index].disabled
            || Instant::now() < self.hosts[index].next_start && self.hosts[index].running.is_none()
        {
            return Some(Ok(None));
        }
        if self.hosts[index].running.is_none() {
            match self.start(index).await {
                Ok(result) => self.keep_first_declarations(index, &result),
                Err(failure) => {
                    self.note_failure(index, hook, &failure);
                    return Some(Err(failure));
                }
            }
        }
        None
    }

    /// Books one answered or failed call of `hook` that took `elapsed`: counters, the
    /// failure record, and killing the host when the failure ends it.
    pub(super) async fn settle(
        &mut self,
        hook: &HookRef,
        elapsed: Duration,
        answer: Result<Value, CallFailure>,
    ) -> Result<Option<Value>, CallFailure> {
        let index = hook.host;
        self.hosts[index].stats.record_call(elapsed);
        if let Some(log) = self.call_log.as_mut().filter(|l| l.len() < MAX_CALLS_KEPT) {
            log.push(CallRecord {
                host: self.hosts[index].cfg.name.clone(),
                hook: hook.name.to_string(),
                method: hook.family.method(),
                started: SystemTime::now() - elapsed,
                elapsed,
                failure: answer
                    .as_ref()
                    .err()
                    .map(|f| format!("{}: {}", f.error_type.as_str(), f.message)),
            });
        }
        self.call_durations
            .entry(hook.family)
            .or_default()
            .observe(elapsed);
        match answer {
            Ok(value) => {
                self.hosts[index].consecutive_failures = 0;
                Ok(Some(value))
            }
            Err(mut failure) => {
                if failure.error_type.ends_host() {
                    if let Some(running) = self.hosts[index].running.take() {
                        failure = running.end(failure).await;
                    }
                }
                self.note_failure(index, hook, &failure);
                self.disable_on_write_breach(index);
                Err(failure)
            }
        }
    }

    /// Calls every hook of `calls` (each with its family's method and its params), hosts
    /// concurrently and each host's calls in order, one request in flight per host
    /// (docs/protocol.md §1). Results come back in the order of `calls`, booked as
    /// [`HostManager::call`] books them. A graceful stop abandons the batch: every host
    /// with a call in flight is killed (it starts again later) and `None` is returned.
    pub(crate) async fn call_all(
        &mut self,
        calls: Vec<(HookRef, Value)>,
        stop: &mut crate::record::stop::StopWatch,
    ) -> Option<Vec<Result<Option<Value>, CallFailure>>> {
        let mut results: Vec<Option<Result<Option<Value>, CallFailure>>> =
            calls.iter().map(|_| None).collect();
        // Per host: the running process (taken out while its calls are in flight) and
        // its calls as (position in `calls`, method, params, timeout).
        let mut batches: Vec<(usize, RunningHost, Vec<PendingCall>)> = Vec::new();
        for (i, (hook, params)) in calls.iter().enumerate() {
            let deadline = Deadline::call(&self.hosts[hook.host].cfg, hook.family);
            if let Some(batch) = batches.iter_mut().find(|b| b.0 == hook.host) {
                batch.2.push((i, in_flight(hook), params.clone(), deadline));
                continue;
            }
            if let Some(not_asked) = self.ready(hook).await {
                results[i] = Some(not_asked);
                continue;
            }
            let running = self.hosts[hook.host]
                .running
                .take()
                .expect("ready() started it");
            batches.push((
                hook.host,
                running,
                vec![(i, in_flight(hook), params.clone(), deadline)],
            ));
        }
        let flights = batches.iter_mut().map(|(_, running, batch)| async move {
            let mut answers = Vec::with_capacity(batch.len());
            for (i, call, params, deadline) in batch.drain(..) {
                let started = Instant::now();
                let answer = running.call(&call, Some(params), &deadline).await;
                let ends = answer.as_ref().is_err_and(|f| f.error_type.ends_host());
                answers.push((i, started.elapsed(), answer));
                if ends {
                    break; // the rest of this host's calls are not asked
                }
            }
            answers
        });
        let answers = tokio::select! {
            answers = futures_util::future::join_all(flights) => Some(answers),
            _ = crate::record::stop::reached(stop, crate::record::stop::StopLevel::Graceful) => None,
        };
        let Some(answers) = answers else {
            for (_, running, _) in batches {
                running.kill().await;
            }
            return None;
        };
        for (index, running, _) in batches {
            self.hosts[index].running = Some(running);
        }
        for (i, elapsed, answer) in answers.into_iter().flatten() {
            results[i] = Some(self.settle(&calls[i].0, elapsed, answer).await);
        }
        Some(results.into_iter().map(|r| r.unwrap_or(Ok(None))).collect())
    }

    /// Records the `events` a result of `hook` carried (docs/protocol.md §5.7), each as
    /// `<host>.<kind>` with its fields plus `host` and `hook`. Events breaking the rules
    /// (undeclared kind, too many, too large) make the call's result invalid: nothing is
    /// recorded and the failure is booked as `invalid_result`.
    pub(crate) fn record_host_events(&mut self, hook: &HookRef, events: Vec<HostEvent>) -> bool {
        let host = &self.hosts[hook.host];
        if let Err(err) = check_host_events(&events, &host.declared.event_kinds) {
            self.invalid_result(hook, format!("{} result {err}", hook.family.method()));
            return false;
        }
        for event in events {
            let mut fields = event.fields;
            fields.insert("host".into(), Value::from(host.cfg.name.as_str()));
            fields.insert("hook".into(), Value::from(hook.name.as_str()));
            self.events
                .emit_host_event(&format!("{}.{}", host.cfg.name, event.kind), fields);
        }
        true
    }

    /// [`HostManager::call`] raced against a stop of at least `level`: when the stop
    /// arrives first the call is abandoned, the host killed (it starts again on a later
    /// call) and `None` returned, so a hung hook never holds a stop for longer than the kill
    /// takes. Third-party hooks are raced against a graceful stop; the built-in detectors,
    /// which record the finished round's usage, only against an immediate one (their call
    /// is bounded by its timeout like any other).
    pub(crate) async fn call_unless_stopped(
        &mut self,
        hook: &HookRef,
        params: Value,
        stop: &mut crate::record::stop::StopWatch,
        level: crate::record::stop::StopLevel,
    ) -> Option<Result<Option<Value>, CallFailure>> {
        tokio::select! {
            result = self.call(hook, params) => return Some(result),
            _ = crate::record::stop::reached(stop, level) => {}
        }
        if let Some(running) = self.hosts[hook.host].running.take() {
            running.kill().await;
        }
        None
    }
}

impl HostManager {
    /// Keeps each call from now on for [`Self::take_calls`] (`on`), or stops keeping them.
    pub(crate) fn trace_calls(&mut self, on: bool) {
        self.call_log = on.then(Vec::new);
    }

    /// The calls kept since the last look (at most [`MAX_CALLS_KEPT`]), oldest first.
    pub(crate) fn take_calls(&mut self) -> Vec<CallRecord> {
        self.call_log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }
}

/// One call of a [`HostManager::call_all`] batch waiting for its host: position in the
/// batch, the call, params, its time bound.
type PendingCall = (usize, InFlight, Value, Deadline);

/// The call of `hook`: its family's method and its name.
pub(super) fn in_flight(hook: &HookRef) -> InFlight {
    InFlight {
        method: hook.family.method(),
        hook: Some(hook.name.as_str().to_owned()),
    }
}
