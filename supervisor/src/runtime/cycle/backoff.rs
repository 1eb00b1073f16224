//! Back-off after a diagnosed transient failure (docs/configuration.md
//! `transient_error_action`): the arithmetic, pure and clock-injected, and the wait, which
//! ends within [`TICK`] of a stop, a stop file or the deadline.
//!
//! The n-th diagnosed failure in a row waits `w × 2^(n-1)`, at most
//! `transient_backoff_cap_s`, where `w` is what the hook asked for in seconds (a duration
//! the CLI printed, or the detector's default for the kind), at least `restart_delay_s`:
//! a provider that keeps refusing is asked less and less often. A printed reset time
//! is honoured as it is, up to [`MAX_RESET_WAIT`], plus a jitter of up to a tenth of the
//! wait (1..=30 s), so many supervisors do not all start at the reset instant.
//!
//! The wait watches both clocks: it ends at the wall-clock deadline (a clock set forward
//! ends it early, once) and after the planned duration of monotonic time (a clock set
//! backward cannot stretch it), so no clock jump produces a burst of rounds.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::record::stop::{StopLevel, StopWatch};
use crate::runtime::steps::post_round::Wait;

/// The longest wait for a printed reset time (a misprinted epoch cannot park serve).
pub(crate) const MAX_RESET_WAIT: Duration = Duration::from_secs(8 * 3600);

/// The wait's polling step: the bound on how late a stop file or a clock jump is noticed.
pub(crate) const TICK: Duration = Duration::from_millis(250);

/// The largest jitter added after a reset time.
pub(crate) const MAX_JITTER: Duration = Duration::from_secs(30);

/// The settings of a back-off.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Policy {
    /// `restart_delay_s`: the first step.
    pub base: Duration,
    /// `transient_backoff_cap_s`.
    pub cap: Duration,
}

/// A planned wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// What the rules asked for before any cap (jitter included).
    pub requested: Duration,
    /// What will be waited.
    pub applied: Duration,
    /// When it ends, by the wall clock.
    pub until: SystemTime,
    /// Whether a cap shortened it.
    pub capped: bool,
    /// The cap that applied to it.
    pub cap: Duration,
}

impl Plan {
    /// A wait of exactly `wait` from now, no cap involved (the schedule's and the rate
    /// ceiling's pauses).
    pub(crate) fn fixed(wait: Duration) -> Plan {
        Plan {
            requested: wait,
            applied: wait,
            until: SystemTime::now() + wait,
            capped: false,
            cap: wait,
        }
    }
}

/// Plans the wait after the `consecutive`-th (1-based) diagnosed failure in a row, for a
/// verdict asking `wait`, at `now`; `jitter` in `0.0..1.0` picks the jitter.
pub(crate) fn plan(
    policy: Policy,
    wait: Wait,
    consecutive: u32,
    now: SystemTime,
    jitter: f64,
) -> Plan {
    let (requested, cap) = match wait {
        Wait::Until(at) => {
            let ahead = at.duration_since(now).unwrap_or(Duration::ZERO);
            let spread = (ahead / 10).clamp(Duration::from_secs(1), MAX_JITTER);
            (
                ahead + spread.mul_f64(jitter.clamp(0.0, 1.0)),
                MAX_RESET_WAIT,
            )
        }
        Wait::For(asked) => {
            let steps = consecutive.saturating_sub(1).min(20);
            let grown = asked.max(policy.base).saturating_mul(1u32 << steps);
            (grown, policy.cap)
        }
    };
    let applied = requested.min(cap);
    Plan {
        requested,
        applied,
        until: now + applied,
        capped: applied < requested,
        cap,
    }
}

/// A jitter fraction in `0.0..1.0` from the process's random hash keys (no extra crate).
pub(crate) fn jitter_fraction() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitEnd {
    /// The deadline passed.
    Elapsed,
    /// A graceful (or harder) stop arrived.
    Stopped,
    /// The stop file appeared.
    StopFile,
}

/// Waits out `plan`, ending early (within [`TICK`]) on a stop or when `stop_file` exists.
pub(crate) async fn wait(plan: &Plan, stop: &mut StopWatch, stop_file: Option<&Path>) -> WaitEnd {
    let started = Instant::now();
    loop {
        if *stop.borrow() >= StopLevel::Graceful {
            return WaitEnd::Stopped;
        }
        if stop_file.is_some_and(Path::exists) {
            return WaitEnd::StopFile;
        }
        let by_wall = plan
            .until
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        let by_mono = plan.applied.saturating_sub(started.elapsed());
        let left = by_wall.min(by_mono);
        if left.is_zero() {
            return WaitEnd::Elapsed;
        }
        crate::record::stop::sleep_unless(stop, StopLevel::Graceful, left.min(TICK)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: Policy = Policy {
        base: Duration::from_secs(3),
        cap: Duration::from_secs(1800),
    };

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_464_400)
    }

    #[test]
    fn grows_exponentially_from_the_restart_delay_up_to_the_cap() {
        let secs = |n, asked| {
            plan(POLICY, Wait::For(Duration::from_secs(asked)), n, now(), 0.5)
                .applied
                .as_secs()
        };
        assert_eq!(
            [secs(1, 1), secs(2, 1), secs(3, 1), secs(4, 1)],
            [3, 6, 12, 24]
        );
        // What the hook asked for is the first step, and grows too (a flat 30 s on every
        // repeat was the bug).
        assert_eq!(
            [secs(1, 30), secs(2, 30), secs(3, 30), secs(5, 30)],
            [30, 60, 120, 480]
        );
        let capped = plan(POLICY, Wait::For(Duration::from_secs(1)), 12, now(), 0.5);
        assert_eq!(capped.applied, POLICY.cap);
        assert!(capped.capped && capped.requested > POLICY.cap);
        assert_eq!(capped.until, now() + POLICY.cap);
        // Absurd repeat counts do not overflow.
        assert_eq!(secs(u32::MAX, 1), 1800);
    }

    #[test]
    fn honours_a_reset_time_with_bounded_jitter() {
        let at = now() + Duration::from_secs(120);
        let early = plan(POLICY, Wait::Until(at), 1, now(), 0.0);
        assert_eq!(early.applied, Duration::from_secs(120));
        let late = plan(POLICY, Wait::Until(at), 7, now(), 0.999);
        assert!(
            late.applied > Duration::from_secs(131) && late.applied < Duration::from_secs(132),
            "{late:?}"
        );
        assert!(!late.capped);
        // Past resets do not wait; far ones are cut at 8 h.
        let past = plan(
            POLICY,
            Wait::Until(now() - Duration::from_secs(5)),
            1,
            now(),
            0.5,
        );
        assert_eq!(past.applied, Duration::from_millis(500));
        let far = plan(
            POLICY,
            Wait::Until(now() + Duration::from_secs(86_400)),
            1,
            now(),
            0.0,
        );
        assert_eq!((far.applied, far.capped), (MAX_RESET_WAIT, true));
    }

    #[test]
    fn jitter_stays_in_range() {
        for _ in 0..100 {
            let j = jitter_fraction();
            assert!((0.0..1.0).contains(&j), "{j}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_clock_set_back_does_not_stretch_the_wait() {
        let (_tx, mut stop) = tokio::sync::watch::channel(StopLevel::Run);
        // The wall-clock deadline lies an hour ahead (as after the clock was set back),
        // but only 300 ms of monotonic time were planned.
        let plan = Plan {
            requested: Duration::from_millis(300),
            applied: Duration::from_millis(300),
            until: SystemTime::now() + Duration::from_secs(3600),
            capped: false,
            cap: POLICY.cap,
        };
        let started = Instant::now();
        assert_eq!(wait(&plan, &mut stop, None).await, WaitEnd::Elapsed);
        assert!(started.elapsed() < Duration::from_secs(2));
        // A clock set forward past the deadline ends the wait at once.
        let jumped = Plan {
            applied: Duration::from_secs(3600),
            until: SystemTime::now() - Duration::from_secs(1),
            ..plan
        };
        let started = Instant::now();
        assert_eq!(wait(&jumped, &mut stop, None).await, WaitEnd::Elapsed);
        assert!(started.elapsed() < TICK);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_stop_file_ends_the_wait_within_a_tick() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("STOP");
        let (_tx, mut stop) = tokio::sync::watch::channel(StopLevel::Run);
        let plan = plan(
            POLICY,
            Wait::For(Duration::from_secs(600)),
            1,
            SystemTime::now(),
            0.0,
        );
        let writer = {
            let file = file.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                std::fs::write(file, "").unwrap();
            })
        };
        let started = Instant::now();
        assert_eq!(wait(&plan, &mut stop, Some(&file)).await, WaitEnd::StopFile);
        assert!(started.elapsed() < Duration::from_millis(100) + 2 * TICK);
        writer.await.unwrap();
    }
}
