//! `[monitor]` and `[monitor.host_health]`: the one place their keys are read, checked and
//! given defaults. Keys and defaults are the reference system's (`docs/reference-system.md`,
//! "Monitor"; each key in docs/configuration.md, "[monitor]"); `pressure.sample_interval_s`
//! is ours. The login keys (`auth_fail_patterns`, `auth_fail_hint`) serve the built-in
//! post-round detectors (docs/detectors.md); `round_progress_interval_s` is still listed in
//! [`super::UNIMPLEMENTED`].

use serde::Deserialize;
use std::time::Duration;

/// `[monitor]` as serde sees it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMonitor {
    auth_fail_patterns: Option<Vec<String>>,
    auth_fail_hint: Option<String>,
    auto_stop_on: Option<Vec<String>>,
    remote_failure_tolerance_s: Option<u64>,
    anomaly_repetitive_window: Option<u64>,
    anomaly_repetitive_threshold: Option<u64>,
    supervisor_stale_threshold_s: Option<u64>,
    #[serde(default)]
    host_health: RawHostHealth,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHostHealth {
    #[serde(default)]
    disk: RawDisk,
    #[serde(default)]
    memory: RawMemory,
    #[serde(default)]
    pressure: RawPressure,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDisk {
    warning_pct: Option<f64>,
    critical_pct: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMemory {
    avail_min_mb: Option<u64>,
    free_low_mb: Option<u64>,
    swap_out_noise_floor_mb: Option<u64>,
    round_high_mb: Option<u64>,
    round_max_mb: Option<u64>,
    round_cgroup: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPressure {
    full_avg10_critical: Option<f64>,
    some_avg10_warning: Option<f64>,
    critical_consecutive_samples: Option<u64>,
    in_round_terminate: Option<bool>,
    cgroup_growth_rate_warning_mb_per_min: Option<f64>,
    sample_interval_s: Option<u64>,
}

/// Detectors whose stop is honoured when `auto_stop_on` is not set (the reference
/// system's default).
pub(crate) const DEFAULT_AUTO_STOP_ON: &[&str] = &["oauth_fail", "disk_critical"];

/// `[monitor]`, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorConfig {
    /// Extra regular expressions (Rust `regex` syntax) that mark a failed round's output
    /// as a login failure; matched inside the confined detector host, never here.
    pub auth_fail_patterns: Vec<String>,
    /// What to tell the operator on a login failure (e.g. how to log in again); blank is
    /// `None`.
    pub auth_fail_hint: Option<String>,
    /// Detector names whose alerts stop the supervisor (`monitor_auto_stop_triggered`;
    /// `oauth_fail`: a post-round `auth` diagnosis, or a post-round hook's name for that
    /// hook's stops, docs/detectors.md); default [`DEFAULT_AUTO_STOP_ON`].
    pub auto_stop_on: Vec<String>,
    /// Whether `auto_stop_on` was written in the file (not the default): only then does
    /// it reach third-party hosts' hooks ([`MonitorConfig::stops_on`]).
    pub auto_stop_on_set: bool,
    /// How long `monitor --host` keeps reconnecting a dropped ssh link (default 90 s,
    /// at most 3600; 0: the first drop is fatal).
    pub remote_failure_tolerance: Duration,
    /// `anomaly_repetitive_tool`: the last N tool calls looked at (0: detector off).
    pub anomaly_repetitive_window: u64,
    /// `anomaly_repetitive_tool`: fires when one tool fills this many of the window (0: off).
    pub anomaly_repetitive_threshold: u64,
    /// `supervisor_stale`: no event for this long means the supervisor is wedged.
    /// Unset: 1.5 × `round_budget_s`; `0` in the file: the detector is off (`None`).
    pub supervisor_stale_threshold: Option<Duration>,
    /// `[monitor.host_health]`.
    pub host_health: HostHealthConfig,
}

/// `[monitor.host_health] memory.round_cgroup`: when a round gets a cgroup of its own
/// (docs/operations.md, "Round cgroups").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// `[monitor.host_health]`: thresholds of the pre-round gate and the in-round floor.
#[derive(Clone, Debug, PartialEq)]
pub struct HostHealthConfig {
    /// `disk.warning_pct` (default 90): used % of the log dir's filesystem that warns.
    pub disk_warning_pct: f64,
    /// `disk.critical_pct` (default 95): used % that defers rounds.
    pub disk_critical_pct: f64,
    /// `memory.avail_min_mb` (default 200): `MemAvailable` below this (MiB) defers rounds
    /// when no pressure stall information is readable; 0 turns the check off.
    pub avail_min_mb: u64,
    /// `memory.free_low_mb` (default 16): `MemFree` below this (MiB) *and* `MemAvailable`
    /// below `avail_min_mb` is critical.
    pub free_low_mb: u64,
    /// `memory.swap_out_noise_floor_mb` (default 32): read and kept for the reference's
    /// swap-rate signal, which this build does not use (PSI covers it).
    pub swap_out_noise_floor_mb: u64,
    /// `memory.round_high_mb` (ours, default unset): the brake on a round's memory, in
    /// MiB; set as `memory.high` (cgroup v2) or `memory.soft_limit_in_bytes` (v1) of the
    /// round's cgroup when the supervisor's cgroup is delegated (docs/operations.md,
    /// "Round cgroups"). `None`: no brake.
    pub round_high_mb: Option<u64>,
    /// `memory.round_max_mb` (ours, default unset): the hard limit on a round's memory, in
    /// MiB; `memory.max` (v2) or `memory.limit_in_bytes` (v1) of the round's cgroup. Past
    /// it the kernel's OOM killer ends a process of the round (`round_oom_killed`).
    /// `None`: no limit.
    pub round_max_mb: Option<u64>,
    /// `memory.round_cgroup` (ours, default `"auto"`): whether rounds run in cgroups of
    /// their own (docs/operations.md, "Round cgroups").
    pub round_cgroup: RoundCgroupMode,
    /// `pressure.full_avg10_critical` (default 60.0 %): memory PSI `full avg10` at or above
    /// this is critical.
    pub full_avg10_critical: f64,
    /// `pressure.some_avg10_warning` (default 5.0 %): memory PSI `some avg10` that warns.
    pub some_avg10_warning: f64,
    /// `pressure.critical_consecutive_samples` (default 3): critical samples in a row
    /// during a round that end it.
    pub critical_consecutive_samples: u32,
    /// `pressure.in_round_terminate` (default true): end a round on sustained critical
    /// pressure (`round_mem_terminated`).
    pub in_round_terminate: bool,
    /// `pressure.cgroup_growth_rate_warning_mb_per_min` (default 512.0): read and kept;
    /// not acted on by this build.
    pub cgroup_growth_rate_warning_mb_per_min: f64,
    /// `pressure.sample_interval_s` (ours, default 10): seconds between in-round samples.
    pub sample_interval: Duration,
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
    fn default() -> Self {
        MonitorConfig {
            auth_fail_patterns: Vec::new(),
            auth_fail_hint: None,
            auto_stop_on: DEFAULT_AUTO_STOP_ON.iter().map(|s| s.to_string()).collect(),
            auto_stop_on_set: false,
            remote_failure_tolerance: Duration::from_secs(90),
            anomaly_repetitive_window: 0,
            anomaly_repetitive_threshold: 0,
            supervisor_stale_threshold: None,
            host_health: HostHealthConfig::default(),
        }
    }
}

impl Default for HostHealthConfig {
    fn default() -> Self {
        HostHealthConfig {
            disk_warning_pct: 90.0,
            disk_critical_pct: 95.0,
            avail_min_mb: 200,
            free_low_mb: 16,
            swap_out_noise_floor_mb: 32,
            round_high_mb: None,
            round_max_mb: None,
            round_cgroup: RoundCgroupMode::Auto,
            full_avg10_critical: 60.0,
            some_avg10_warning: 5.0,
            critical_consecutive_samples: 3,
            in_round_terminate: true,
            cgroup_growth_rate_warning_mb_per_min: 512.0,
            sample_interval: Duration::from_secs(10),
        }
    }
}

/// Checks `raw` and fills the defaults; `round_budget` derives the default stale threshold.
///
/// Errors: `(dotted key, what was expected)`.
pub(super) fn resolve(
    raw: RawMonitor,
    round_budget: Duration,
) -> Result<MonitorConfig, (String, String)> {
    let d = MonitorConfig::default();
    let hd = &d.host_health;
    let h = raw.host_health;
    let pct = |key: &str, v: Option<f64>, default: f64, positive: bool| match v {
        None => Ok(default),
        Some(v) if v.is_finite() && v <= 100.0 && (v > 0.0 || (!positive && v == 0.0)) => Ok(v),
        Some(v) => Err((
            format!("monitor.host_health.{key}"),
            format!(
                "{v} is out of range; expected a percentage {} 100",
                if positive { "in (0," } else { "in [0," }
            ),
        )),
    };
    let at_least_one = |key: &str, v: Option<u64>, default: u64| match v {
        Some(0) => Err((format!("monitor.{key}"), "must be at least 1".to_owned())),
        v => Ok(v.unwrap_or(default)),
    };
    let tolerance = raw.remote_failure_tolerance_s.unwrap_or(90);
    if tolerance > 3600 {
        return Err((
            "monitor.remote_failure_tolerance_s".into(),
            format!("{tolerance} is too large; expected seconds in 0..=3600"),
        ));
    }
    let window = raw.anomaly_repetitive_window.unwrap_or(0);
    let threshold = raw.anomaly_repetitive_threshold.unwrap_or(0);
    if window > 0 && threshold > window {
        return Err((
            "monitor.anomaly_repetitive_threshold".into(),
            format!("{threshold} exceeds anomaly_repetitive_window ({window}); the detector could never fire"),
        ));
    }
    let growth = h
        .pressure
        .cgroup_growth_rate_warning_mb_per_min
        .unwrap_or(hd.cgroup_growth_rate_warning_mb_per_min);
    if !(growth.is_finite() && growth > 0.0) {
        return Err((
            "monitor.host_health.pressure.cgroup_growth_rate_warning_mb_per_min".into(),
            format!("{growth}: expected a positive number"),
        ));
    }
    let round_mb = |key: &str, v: Option<u64>| match v {
        Some(0) => Err((
            format!("monitor.host_health.memory.{key}"),
            "must be at least 1 (MiB); leave it out for no limit".to_owned(),
        )),
        v => Ok(v),
    };
    let round_high_mb = round_mb("round_high_mb", h.memory.round_high_mb)?;
    let round_max_mb = round_mb("round_max_mb", h.memory.round_max_mb)?;
    if let (Some(high), Some(max)) = (round_high_mb, round_max_mb) {
        if high >= max {
            return Err((
                "monitor.host_health.memory.round_high_mb".into(),
                format!("{high} is not below round_max_mb ({max}); expected a brake under the hard limit"),
            ));
        }
    }
    let round_cgroup = match h.memory.round_cgroup.as_deref() {
        None | Some("auto") => RoundCgroupMode::Auto,
        Some("on") => RoundCgroupMode::On,
        Some("off") => RoundCgroupMode::Off,
        Some(other) => {
            return Err((
                "monitor.host_health.memory.round_cgroup".into(),
                format!("{other:?}: expected \"auto\", \"on\" or \"off\""),
            ))
        }
    };
    let samples = at_least_one(
        "host_health.pressure.critical_consecutive_samples",
        h.pressure.critical_consecutive_samples,
        u64::from(hd.critical_consecutive_samples),
    )?;
    let auth_fail_patterns = raw.auth_fail_patterns.unwrap_or_default();
    for (i, pattern) in auth_fail_patterns.iter().enumerate() {
        if let Err(e) = regex::Regex::new(pattern) {
            return Err((
                format!("monitor.auth_fail_patterns[{i}]"),
                format!(
                    "{pattern:?} is not a valid regular expression: {}",
                    e.to_string().replace('\n', " ")
                ),
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
    Ok(MonitorConfig {
        auth_fail_patterns,
        auth_fail_hint: raw.auth_fail_hint.filter(|h| !h.trim().is_empty()),
        auto_stop_on_set: raw.auto_stop_on.is_some(),
        auto_stop_on: raw.auto_stop_on.unwrap_or(d.auto_stop_on),
        remote_failure_tolerance: Duration::from_secs(tolerance),
        anomaly_repetitive_window: window,
        anomaly_repetitive_threshold: threshold,
        supervisor_stale_threshold: match raw.supervisor_stale_threshold_s {
            Some(0) => None,
            Some(s) => Some(Duration::from_secs(s)),
            None => Some(round_budget.mul_f64(1.5)),
        },
        host_health: HostHealthConfig {
            disk_warning_pct: pct(
                "disk.warning_pct",
                h.disk.warning_pct,
                hd.disk_warning_pct,
                false,
            )?,
            disk_critical_pct: pct(
                "disk.critical_pct",
                h.disk.critical_pct,
                hd.disk_critical_pct,
                false,
            )?,
            avail_min_mb: h.memory.avail_min_mb.unwrap_or(hd.avail_min_mb),
            free_low_mb: at_least_one(
                "host_health.memory.free_low_mb",
                h.memory.free_low_mb,
                hd.free_low_mb,
            )?,
            swap_out_noise_floor_mb: at_least_one(
                "host_health.memory.swap_out_noise_floor_mb",
                h.memory.swap_out_noise_floor_mb,
                hd.swap_out_noise_floor_mb,
            )?,
            round_high_mb,
            round_max_mb,
            round_cgroup,
            full_avg10_critical: pct(
                "pressure.full_avg10_critical",
                h.pressure.full_avg10_critical,
                hd.full_avg10_critical,
                true,
            )?,
            some_avg10_warning: pct(
                "pressure.some_avg10_warning",
                h.pressure.some_avg10_warning,
                hd.some_avg10_warning,
                true,
            )?,
            critical_consecutive_samples: u32::try_from(samples).unwrap_or(u32::MAX),
            in_round_terminate: h
                .pressure
                .in_round_terminate
                .unwrap_or(hd.in_round_terminate),
            cgroup_growth_rate_warning_mb_per_min: growth,
            sample_interval: Duration::from_secs(at_least_one(
                "host_health.pressure.sample_interval_s",
                h.pressure.sample_interval_s,
                hd.sample_interval.as_secs(),
            )?),
        },
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
        assert_eq!(m.host_health.disk_critical_pct, 95.0);
        assert_eq!(m.host_health.full_avg10_critical, 60.0);
        assert_eq!(m.host_health.critical_consecutive_samples, 3);
        assert!(m.host_health.in_round_terminate);
        assert_eq!(m.supervisor_stale_threshold, Some(Duration::from_secs(150)));
        assert_eq!(m.remote_failure_tolerance, Duration::from_secs(90));
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
            (m.host_health.round_high_mb, m.host_health.round_max_mb),
            (Some(48), Some(64))
        );
        assert_eq!(m.host_health.round_cgroup, RoundCgroupMode::Auto);
        let m = parse("[host_health.memory]\nround_cgroup = \"on\"").unwrap();
        assert_eq!(m.host_health.round_cgroup, RoundCgroupMode::On);
        let (key, why) = parse("[host_health.memory]\nround_cgroup = \"yes\"").unwrap_err();
        assert_eq!(key, "monitor.host_health.memory.round_cgroup");
        assert!(
            why.contains("expected \"auto\", \"on\" or \"off\""),
            "{why}"
        );
    }
}
