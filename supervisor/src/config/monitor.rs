//! `[monitor]` and `[monitor.host_health]`: the one place their keys are read, checked and
//! given defaults. Keys and defaults are the reference system's (`docs/reference-system.md`,
//! "Monitor"; each key in docs/configuration.md, "[monitor]"); `pressure.sample_interval_s`
//! is ours. The login keys (`auth_fail_patterns`, `auth_fail_hint`) serve the built-in
//! post-round detectors (docs/detectors.md); `round_progress_interval_s` paces the in-round
//! heartbeat (`crate::runtime::agent::round_progress`).

use serde::Deserialize;
use std::time::Duration;

use super::keys::{config_table, Bad, Table};
use super::vocabulary::Vocabulary;

config_table! {
    /// `[monitor]` as serde sees it.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawMonitor = "monitor" {
        /// extra patterns (Rust `regex` syntax) marking a failed round's output as a login
        /// failure, on top of the built-in detectors' own; matched inside the confined
        /// detector host. A pattern that does not compile is a config error
        auth_fail_patterns: Vec<String> = (empty) label "list of regular expressions"
            check regexes reload Next;
        /// printed (and recorded in `agent_auth_error_detected`) when a login failure stops
        /// serve: say how to log in again
        auth_fail_hint: String = (none) reload Next init (preset)
            into (auth_fail_hint: Option<String> = non_blank);
        /// which stops are honoured, by name (one rule, `MonitorConfig::stops_on`): a
        /// detector's alert in `monitor` (docs/operations.md "monitor"); a post-round stop,
        /// named by its hook or, for an `auth` diagnosis, by `oauth_fail` (`serve` then exits
        /// 77, which the systemd unit does not restart on); a detector *hook*'s
        /// `stop_service` alert (`serve` polls them at the end of each round that ran,
        /// [`docs/protocol.md`](protocol.md) §5.6; `serve` exits 75,
        /// `serve_stopping{reason: "auto_stop"}`). The built-in detectors' names count by
        /// default; a host's hooks count only when the key is written in the file, so a
        /// host's hook that happens to be called `oauth_fail`, or a host's post-round `auth`
        /// stop, does not stop `serve` unless you list it. Unhonoured: recorded
        /// (`detector_alert` with `auto_stop: false`, `plugin_post_round_override_ignored`)
        auto_stop_on: Vec<String> = (DEFAULT_AUTO_STOP_ON) reload Next
            init (commented "the default: left unset, so a host's hook of the same name does not stop serve unless you list it; docs/configuration.md [monitor]");
        /// how long `monitor --host` keeps reconnecting a dropped ssh link; 0: the first
        /// drop is fatal
        remote_failure_tolerance_s: u64 = (90) range(0..=3600) reload Next
            into (remote_failure_tolerance: Duration = secs);
        /// tool calls looked at by `anomaly_repetitive_tool`
        anomaly_repetitive_window: u64 = (0, "off") reload Next;
        /// calls of one tool within the window that raise it
        anomaly_repetitive_threshold: u64 = (0, "off") label "integer ≤ window" reload Next;
        /// no event for this long: `supervisor_stale`; `0` turns the detector off
        supervisor_stale_threshold_s: u64 = (computed "1.5 × `round_budget_s`") reload Next
            into (supervisor_stale_threshold: Option<Duration> = hand);
        /// seconds between `round_progress` heartbeats while a round's agent runs (the
        /// size of its round log, how long since it last grew, how long the agent has run),
        /// to tell an agent at work from a stuck one
        round_progress_interval_s: u64 = (0, "off") reload Next
            into (round_progress_interval: Option<Duration> = secs_or_off);
        @sub host_health: RawHostHealth;
    }
    => /// `[monitor]`, resolved.
    #[derive(Clone, Debug, PartialEq)]
    pub struct MonitorConfig by MonitorHand {
        /// Whether `auto_stop_on` was written in the file: only then does it reach
        /// third-party hosts' hooks ([`MonitorConfig::stops_on`]).
        auto_stop_on_set: bool,
        /// `[monitor.host_health]`.
        host_health: HostHealthConfig,
    }
}

/// `[monitor.host_health]`: its four tables.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHostHealth {
    #[serde(default)]
    disk: RawDisk,
    #[serde(default)]
    memory: RawMemory,
    #[serde(default)]
    pressure: RawPressure,
    #[serde(default)]
    brake: RawBrake,
}

config_table! {
    /// `[monitor.host_health.disk]`.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawDisk = "monitor.host_health.disk" {
        /// used % of the log dir's filesystem that warns (`disk_warning`)
        warning_pct: f64 = (90.0) label "percent" check percent reload Next;
        /// used % that defers rounds (`round_deferred`, signal `disk`)
        critical_pct: f64 = (95.0) label "percent" check percent reload Next;
        /// seconds of `monitor` readings the `disk_growth` rate is taken over
        growth_window_s: u64 = (1800) range(1..) label "seconds ≥ 1" reload Next
            into (growth_window: Duration = secs);
        /// used-% growth per hour of the log dir's filesystem that warns (`disk_growth`)
        disk_growth_pct_per_hr_warning: f64 = (5.0) label "number > 0" check positive
            reload Next;
        /// inode-used-% growth per hour of that filesystem that warns (`disk_growth`)
        inode_growth_pct_per_hr_warning: f64 = (5.0) label "number > 0" check positive
            reload Next;
    }
    => /// `[monitor.host_health.disk]`, resolved: the log dir's filesystem.
    #[derive(Clone, Debug, PartialEq)]
    pub struct DiskConfig by DiskHand {}
}

config_table! {
    /// `[monitor.host_health.memory]`.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawMemory = "monitor.host_health.memory" {
        /// `MemAvailable` below this *and* `MemFree` below `free_low_mb` is critical
        /// (signal `combined_low`); 0 turns it off
        avail_min_mb: u64 = (200) label "MiB" reload Next;
        /// see `avail_min_mb`
        free_low_mb: u64 = (16) range(1..) label "MiB ≥ 1" reload Next;
        /// accepted for compatibility; this build reads PSI instead of swap rates
        swap_out_noise_floor_mb: u64 = (32) range(1..) label "MiB ≥ 1" reload Next;
        /// ours: the brake on one round's memory, `memory.high` (cgroup v2) /
        /// `memory.soft_limit_in_bytes` (v1) of the round's cgroup; below `round_max_mb`;
        /// applied only with a delegated cgroup (docs/operations.md, "Round cgroups")
        round_high_mb: u64 = (none) range(1..) label "MiB ≥ 1" reload Next;
        /// ours: the hard limit, `memory.max` / `memory.limit_in_bytes`; past it the kernel
        /// OOM-kills inside the round (`round_oom_killed`); applied only with a delegated
        /// cgroup
        round_max_mb: u64 = (none) range(1..) label "MiB ≥ 1" reload Next;
        /// ours: whether each round runs in a cgroup of its own: `auto` when the
        /// supervisor's memory cgroup is delegated (owned by its non-root user, or marked by
        /// systemd's `Delegate=yes`), `on` whenever it is writable, `off` never
        /// (docs/operations.md, "Round cgroups")
        round_cgroup: String as RoundCgroupMode = (RoundCgroupMode::Auto) reload Boot;
    }
    => /// `[monitor.host_health.memory]`, resolved.
    #[derive(Clone, Debug, PartialEq)]
    pub struct MemoryConfig by MemoryHand {}
}

config_table! {
    /// `[monitor.host_health.pressure]`.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawPressure = "monitor.host_health.pressure" {
        /// PSI memory `full avg10` at or above this is critical (signal `psi`)
        full_avg10_critical: f64 = (60.0) label "percent > 0" check positive_percent
            reload Next;
        /// PSI memory `some avg10` that warns
        some_avg10_warning: f64 = (5.0) label "percent > 0" check positive_percent
            reload Next;
        /// critical in-round samples in a row that end the round
        critical_consecutive_samples: u64 = (3) range(1..) reload Next
            into (critical_consecutive_samples: u32 = saturating_u32);
        /// end the round then (`round_mem_terminated`); `false` only records the samples
        in_round_terminate: bool = (true) reload Next;
        /// accepted for compatibility; not acted on
        cgroup_growth_rate_warning_mb_per_min: f64 = (512.0) label "number > 0" check positive
            reload Next;
        /// ours: seconds between in-round samples
        sample_interval_s: u64 = (10) range(1..) reload Next
            into (sample_interval: Duration = secs);
        /// at the first critical in-round sample, send the agent its cooperative stop
        /// signal once (SIGINT for claude, SIGTERM otherwise), so it can finish its turn
        /// before the floor ends the round (`round_mem_terminated` with `tier = "nudge"`);
        /// only with `in_round_terminate` and `critical_consecutive_samples` > 1
        in_round_nudge: bool = (false) reload Next;
    }
    => /// `[monitor.host_health.pressure]`, resolved: memory pressure (PSI) before and
    /// during a round.
    #[derive(Clone, Debug, PartialEq)]
    pub struct PressureConfig by PressureHand {}
}

config_table! {
    /// `[monitor.host_health.brake]`: the reference system's soft brake on the
    /// supervisor's own cgroup under memory pressure.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawBrake = "monitor.host_health.brake" {
        /// under in-round memory pressure (`warning_consecutive_samples` samples in a row),
        /// set `memory.high` (v2; `memory.soft_limit_in_bytes` on v1) of the supervisor's
        /// delegated cgroup to its current use, released after as many healthy samples and
        /// at the round's end (`memory_high_engaged` / `_released` / `_write_failed`;
        /// docs/operations.md, "The memory brake")
        memory_high: bool = (false) reload Next;
        /// the brake's value is the cgroup's current use less this many percent (never
        /// below 64 MiB); 0 caps growth without reclaiming
        memory_high_step_pct: u64 = (0) range(0..=50) label "integer 0 – 50" reload Next;
        /// pressure samples in a row that engage the brake, healthy ones that release it
        warning_consecutive_samples: u64 = (3) range(1..) reload Next
            into (warning_consecutive_samples: u32 = saturating_u32);
    }
    => /// `[monitor.host_health.brake]`, resolved.
    #[derive(Clone, Debug, PartialEq)]
    pub struct BrakeConfig by BrakeHand {}
}

/// The tables of `[monitor]`, for [`super::TABLES`].
pub(super) const TABLES: [Table; 5] = [
    RawMonitor::TABLE,
    RawDisk::TABLE,
    RawMemory::TABLE,
    RawPressure::TABLE,
    RawBrake::TABLE,
];

/// Detectors whose stop is honoured when `auto_stop_on` is not set (the reference
/// system's default).
pub(crate) const DEFAULT_AUTO_STOP_ON: &[&str] = &["oauth_fail", "disk_critical"];

/// `[monitor.host_health] memory.round_cgroup`: when a round gets a cgroup of its own
/// (docs/operations.md, "Round cgroups").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundCgroupMode {
    /// `"auto"`: when the supervisor's memory cgroup is delegated to it (owned by its
    /// non-root user, or marked by systemd's `Delegate=yes`).
    #[default]
    Auto,
    /// `"on"`: whenever the supervisor may write its memory cgroup (root outside systemd,
    /// on a machine whose cgroups the operator manages).
    On,
    /// `"off"`: never.
    Off,
}

impl Vocabulary for RoundCgroupMode {
    const ALL: &'static [Self] = &[
        RoundCgroupMode::Auto,
        RoundCgroupMode::On,
        RoundCgroupMode::Off,
    ];

    fn word(self) -> &'static str {
        self.as_str()
    }
}

impl RoundCgroupMode {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RoundCgroupMode::Auto => "auto",
            RoundCgroupMode::On => "on",
            RoundCgroupMode::Off => "off",
        }
    }
}

/// `[monitor.host_health]`, resolved: thresholds of the pre-round gate and the in-round
/// floor, one struct per table.
#[derive(Clone, Debug, PartialEq)]
pub struct HostHealthConfig {
    /// `[monitor.host_health.disk]`.
    pub disk: DiskConfig,
    /// `[monitor.host_health.memory]`.
    pub memory: MemoryConfig,
    /// `[monitor.host_health.pressure]`.
    pub pressure: PressureConfig,
    /// `[monitor.host_health.brake]`.
    pub brake: BrakeConfig,
}

/// The names a stop from `hook` with diagnosis `kind` answers to in `auto_stop_on`: the
/// hook's own name, and `oauth_fail` for an `auth` diagnosis (the reference system's name
/// for a login failure).
pub(crate) fn auto_stop_names(
    hook: &str,
    kind: Option<agent_runner_protocol::ErrorKind>,
) -> Vec<&str> {
    let mut names = vec![hook];
    if kind == Some(agent_runner_protocol::ErrorKind::Auth) {
        names.push("oauth_fail");
    }
    names
}

impl MonitorConfig {
    /// The one `[monitor] auto_stop_on` rule (docs/configuration.md `[monitor]`): whether a
    /// stop asked for under any of `names` (a hook's name, or the diagnosis it maps to:
    /// `oauth_fail` for a post-round `auth`, [`auto_stop_names`]) stops `serve`. The
    /// built-in detector host's names count when `auto_stop_on` lists them, its default
    /// ([`DEFAULT_AUTO_STOP_ON`]) included; a third-party host's (`builtin = false`) only
    /// when the operator wrote `auto_stop_on` in the file and listed one of them, so a
    /// host's hook that happens to share a default name never stops `serve` unasked.
    pub(crate) fn stops_on(&self, names: &[&str], builtin: bool) -> bool {
        let listed: &[String] = if builtin || self.auto_stop_on_set {
            &self.auto_stop_on
        } else {
            &[]
        };
        names.iter().any(|n| listed.iter().any(|s| s == n))
    }
}

impl Default for MonitorConfig {
    /// The defaults of every key (`supervisor_stale_threshold` off: it derives from the
    /// round budget).
    fn default() -> Self {
        let mut config = resolve(RawMonitor::default(), Duration::ZERO)
            .expect("the defined defaults are in range");
        config.supervisor_stale_threshold = None;
        config
    }
}

impl Default for HostHealthConfig {
    fn default() -> Self {
        MonitorConfig::default().host_health
    }
}

/// Checks `raw` and fills the defaults; `round_budget` derives the default stale threshold.
///
/// Errors: `(dotted key, what was expected)`.
pub(super) fn resolve(raw: RawMonitor, round_budget: Duration) -> Result<MonitorConfig, Bad> {
    let h = &raw.host_health;
    let window = raw.anomaly_repetitive_window()?;
    let threshold = raw.anomaly_repetitive_threshold()?;
    if window > 0 && threshold > window {
        return Err((
            "monitor.anomaly_repetitive_threshold".into(),
            format!("{threshold} exceeds anomaly_repetitive_window ({window}); the detector could never fire"),
        ));
    }
    let memory = h.memory.resolve_with(MemoryHand {})?;
    if let (Some(high), Some(max)) = (memory.round_high_mb, memory.round_max_mb) {
        if high >= max {
            return Err((
                "monitor.host_health.memory.round_high_mb".into(),
                format!("{high} is not below round_max_mb ({max}); expected a brake under the hard limit"),
            ));
        }
    }
    // Goal events only inform: none of them may be made a reason to stop (the
    // reference system's rule, docs/configuration.md "[goal]").
    if let Some((i, name)) = raw
        .auto_stop_on
        .iter()
        .flatten()
        .enumerate()
        .find(|(_, n)| n.starts_with("goal"))
    {
        return Err((
            format!("monitor.auto_stop_on[{i}]"),
            format!("{name:?}: goal kinds only inform and can never stop serve; remove it (use [goal] stop_when to end serve when the goal is reached)"),
        ));
    }
    let host_health = HostHealthConfig {
        disk: h.disk.resolve_with(DiskHand {})?,
        memory,
        pressure: h.pressure.resolve_with(PressureHand {})?,
        brake: h.brake.resolve_with(BrakeHand {})?,
    };
    raw.resolve_with(MonitorHand {
        auto_stop_on_set: raw.auto_stop_on.is_some(),
        supervisor_stale_threshold: match raw.supervisor_stale_threshold_s()? {
            Some(0) => None,
            Some(s) => Some(Duration::from_secs(s)),
            None => Some(round_budget.mul_f64(1.5)),
        },
        host_health,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<MonitorConfig, (String, String)> {
        let raw: RawMonitor = toml::from_str(text).expect("shape");
        resolve(raw, Duration::from_secs(100))
    }

    #[test]
    fn defaults_are_the_reference_systems() {
        let m = parse("").unwrap();
        assert_eq!(m.auto_stop_on, ["oauth_fail", "disk_critical"]);
        assert_eq!(m.host_health.disk.critical_pct, 95.0);
        assert_eq!(m.host_health.pressure.full_avg10_critical, 60.0);
        assert_eq!(m.host_health.pressure.critical_consecutive_samples, 3);
        assert!(m.host_health.pressure.in_round_terminate);
        assert_eq!(m.supervisor_stale_threshold, Some(Duration::from_secs(150)));
        assert_eq!(m.remote_failure_tolerance, Duration::from_secs(90));
        assert_eq!(m.round_progress_interval, None);
        let m = parse("round_progress_interval_s = 30").unwrap();
        assert_eq!(m.round_progress_interval, Some(Duration::from_secs(30)));
    }

    #[test]
    fn third_party_hooks_stop_serve_only_when_the_operator_names_them() {
        use agent_runner_protocol::ErrorKind;
        let default = parse("").unwrap();
        let auth = auto_stop_names("claude_error_detector", Some(ErrorKind::Auth));
        // The built-in detectors' login failure counts by default (`oauth_fail`) …
        assert!(default.stops_on(&auth, true), "{default:?}");
        // … a host's never unasked, even under a default name.
        assert!(!default.stops_on(&auth, false));
        assert!(!default.stops_on(&["oauth_fail"], false));
        assert!(!default.stops_on(&auto_stop_names("x", Some(ErrorKind::RateLimit)), true));
        let listed = parse("auto_stop_on = [\"oauth_fail\", \"no_commit\"]").unwrap();
        assert!(listed.stops_on(&["no_commit"], false));
        assert!(listed.stops_on(&auto_stop_names("mine", Some(ErrorKind::Auth)), false));
        assert!(!listed.stops_on(&["stalled"], false));
        let none = parse("auto_stop_on = []").unwrap();
        assert!(!none.stops_on(&auth, true));
        assert!(!none.stops_on(&["oauth_fail"], false));
    }

    #[test]
    fn bad_values_name_their_key() {
        let (key, _) = parse("[host_health.disk]\ncritical_pct = 120").unwrap_err();
        assert_eq!(key, "monitor.host_health.disk.critical_pct");
        let (key, _) = parse("[host_health.pressure]\nfull_avg10_critical = 0").unwrap_err();
        assert_eq!(key, "monitor.host_health.pressure.full_avg10_critical");
        let (key, _) = parse("remote_failure_tolerance_s = 4000").unwrap_err();
        assert_eq!(key, "monitor.remote_failure_tolerance_s");
        let (key, _) =
            parse("anomaly_repetitive_window = 2\nanomaly_repetitive_threshold = 3").unwrap_err();
        assert_eq!(key, "monitor.anomaly_repetitive_threshold");
        assert_eq!(
            parse("supervisor_stale_threshold_s = 0")
                .unwrap()
                .supervisor_stale_threshold,
            None
        );
        let (key, _) = parse("[host_health.memory]\nround_max_mb = 0").unwrap_err();
        assert_eq!(key, "monitor.host_health.memory.round_max_mb");
        let (key, why) =
            parse("[host_health.memory]\nround_high_mb = 64\nround_max_mb = 64").unwrap_err();
        assert_eq!(key, "monitor.host_health.memory.round_high_mb");
        assert!(why.contains("round_max_mb (64)"), "{why}");
        let m = parse("[host_health.memory]\nround_high_mb = 48\nround_max_mb = 64").unwrap();
        assert_eq!(
            (
                m.host_health.memory.round_high_mb,
                m.host_health.memory.round_max_mb
            ),
            (Some(48), Some(64))
        );
        assert_eq!(m.host_health.memory.round_cgroup, RoundCgroupMode::Auto);
        let m = parse("[host_health.memory]\nround_cgroup = \"on\"").unwrap();
        assert_eq!(m.host_health.memory.round_cgroup, RoundCgroupMode::On);
        let (key, why) = parse("[host_health.memory]\nround_cgroup = \"yes\"").unwrap_err();
        assert_eq!(key, "monitor.host_health.memory.round_cgroup");
        assert!(
            why.contains("expected \"auto\", \"on\" or \"off\""),
            "{why}"
        );
    }
}
