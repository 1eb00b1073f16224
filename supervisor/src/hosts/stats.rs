//! Per-host call counters for status displays (`service.json`, `peek`): calls, failures,
//! the last error and a window of recent call latencies; and per hook family, a histogram
//! of call durations ([`CallHistogram`], fixed buckets: its size never grows with history)
//! for `/metrics` (docs/metrics.md), kept in [`crate::record::service`]'s [`CallHistogram`]. Updated in memory only; `serve` copies them into
//! `service.json` at its own write points.

use std::collections::VecDeque;
use std::time::Duration;

pub(crate) use crate::record::service::CallHistogram;

/// How many recent call latencies the p50 is computed over.
pub(super) const LATENCY_WINDOW: usize = 64;

/// Counters of one host over this supervisor run.
#[derive(Clone, Debug, Default)]
pub struct CallStats {
    /// Hook calls sent to the host (`initialize` excluded).
    pub calls: u64,
    /// Failed calls and failed starts (each one a `hook_failed` event).
    pub failures: u64,
    /// `<error_type>: <message>` of the last failure (redacted and capped).
    pub last_error: Option<String>,
    latencies_ms: VecDeque<f64>,
}

impl CallStats {
    /// Counts one call that took `elapsed` (answered or failed).
    pub(crate) fn record_call(&mut self, elapsed: Duration) {
        self.calls += 1;
        if self.latencies_ms.len() == LATENCY_WINDOW {
            self.latencies_ms.pop_front();
        }
        self.latencies_ms.push_back(elapsed.as_secs_f64() * 1000.0);
    }

    /// Counts one failure described by `error`.
    pub(crate) fn record_failure(&mut self, error: String) {
        self.failures += 1;
        self.last_error = Some(error);
    }

    /// The median latency of the last [`LATENCY_WINDOW`] calls in milliseconds (rounded to
    /// 0.1 ms), `None` before the first call.
    pub(crate) fn latency_p50_ms(&self) -> Option<f64> {
        if self.latencies_ms.is_empty() {
            return None;
        }
        let mut sorted: Vec<f64> = self.latencies_ms.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        let mid = sorted.len() / 2;
        let p50 = if sorted.len() % 2 == 0 {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        } else {
            sorted[mid]
        };
        Some((p50 * 10.0).round() / 10.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let mut h = CallHistogram::default();
        for ms in [3, 40, 40, 2000, 60_000] {
            h.observe(Duration::from_millis(ms));
        }
        // ≤5 ms: 1; ≤50 ms: 3; ≤2.5 s: 4; ≤30 s: 4; +Inf (count): 5.
        assert_eq!(h.buckets[0], 1);
        assert_eq!(h.buckets[3], 3);
        assert_eq!(h.buckets[8], 4);
        assert_eq!(h.buckets[11], 4);
        assert_eq!(h.count, 5);
        assert!((h.sum_s - 62.083).abs() < 1e-9, "{}", h.sum_s);
    }

    #[test]
    fn p50_over_a_sliding_window() {
        let mut stats = CallStats::default();
        assert_eq!(stats.latency_p50_ms(), None);
        for ms in [30, 10, 20] {
            stats.record_call(Duration::from_millis(ms));
        }
        assert_eq!(stats.latency_p50_ms(), Some(20.0));
        stats.record_call(Duration::from_millis(40));
        assert_eq!(stats.latency_p50_ms(), Some(25.0));
        for _ in 0..LATENCY_WINDOW {
            stats.record_call(Duration::from_millis(1));
        }
        assert_eq!(stats.calls, 4 + LATENCY_WINDOW as u64);
        assert_eq!(stats.latency_p50_ms(), Some(1.0));
        stats.record_failure("timeout: no answer".into());
        assert_eq!(stats.failures, 1);
        assert_eq!(stats.last_error.as_deref(), Some("timeout: no answer"));
    }
}
