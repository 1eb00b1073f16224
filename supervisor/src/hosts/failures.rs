//! What a failed call does to its host: `hook_failed` (and `plugin_sandbox_kill`), its
//! counters, the wait before it starts again, and `plugin_disabled` after
//! [`MAX_CONSECUTIVE_FAILURES`] failures in a row or a state directory over its limit.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::call_failure::{CallFailure, ErrorType};
use super::{HookRef, HostManager, MAX_BACKOFF, MAX_CONSECUTIVE_FAILURES};
use crate::record::events::Event;

impl HostManager {
    /// Records a failure that happened outside a call's own result (e.g. a result that
    /// failed validation in the caller).
    pub(crate) fn invalid_result(&mut self, hook: &HookRef, message: String) {
        let failure = CallFailure::new(ErrorType::InvalidResult, message);
        self.note_failure(hook.host, hook, &failure);
    }

    pub(super) fn note_failure(&mut self, index: usize, hook: &HookRef, failure: &CallFailure) {
        self.record_failure(index, hook.name.as_str(), hook.family.as_str(), failure);
    }

    pub(super) fn record_failure(
        &mut self,
        index: usize,
        hook_name: &str,
        hook_kind: &str,
        failure: &CallFailure,
    ) {
        let managed = &mut self.hosts[index];
        managed.stats.record_failure(format!(
            "{}: {}",
            failure.error_type.as_str(),
            failure.message
        ));
        if failure.error_type == ErrorType::KilledBySandbox {
            self.events.emit(Event::PluginSandboxKill {
                hook: hook_name.to_owned(),
                host: managed.cfg.name.clone(),
                signal: failure.signal,
                syscall: failure.syscall.map(str::to_owned),
            });
        }
        self.events.emit(Event::HookFailed {
            hook_name: hook_name.to_owned(),
            hook_kind: hook_kind.to_owned(),
            host: managed.cfg.name.clone(),
            error_type: failure.error_type.as_str().to_owned(),
            error_message: failure.message.clone(),
            stderr_tail: failure.stderr_tail.clone(),
        });
        tracing::warn!(host = %managed.cfg.name, hook = hook_name, error_type = failure.error_type.as_str(), "{}", failure.message);
        managed.consecutive_failures += 1;
        let n = managed.consecutive_failures;
        managed.next_start = Instant::now() + backoff(n);
        if n >= MAX_CONSECUTIVE_FAILURES && !managed.disabled {
            managed.disabled = true;
            self.events.emit(Event::PluginDisabled {
                name: managed.cfg.name.clone(),
                consecutive_failures: n,
                reason: format!("{n} consecutive failed calls; disabled for the rest of this run"),
            });
        }
    }

    /// Disables host `index` (`plugin_disabled`) once its state directory went over its
    /// limit (the watch has killed it and recorded `plugin_write_limit`).
    pub(super) fn disable_on_write_breach(&mut self, index: usize) {
        let managed = &mut self.hosts[index];
        if managed.disabled || !managed.write_breach.load(Ordering::SeqCst) {
            return;
        }
        managed.disabled = true;
        managed.running = None;
        self.events.emit(Event::PluginDisabled {
            name: managed.cfg.name.clone(),
            consecutive_failures: managed.consecutive_failures,
            reason: format!(
                "its state directory went over state_max_mb = {} MiB; disabled for the rest of this run",
                managed.cfg.writes.state_max_mb
            ),
        });
    }
}

/// Wait before restart number `failures`: none after the first failure, then 1 s, 2 s,
/// 4 s… up to [`MAX_BACKOFF`].
fn backoff(failures: u32) -> Duration {
    match failures {
        0 | 1 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 2).min(6)).min(MAX_BACKOFF),
    }
}
