//! Host health (`[monitor.host_health]`, docs/configuration.md "[monitor]",
//! docs/operations.md "Host health"): the disk of the log dir's filesystem, available memory
//! and memory pressure stall information (PSI, the kernel's
//! Documentation/accounting/psi.rst), read before each round and sampled during it.
//!
//! - Before a round ([`assess`]): a critical reading defers it (`round_deferred` with
//!   severity `critical` and the reading as `signal`); `serve` checks again every
//!   `restart_delay_s` and emits `round_resumed` once the reading is healthy.
//! - During a round ([`Floor`]): every `pressure.sample_interval_s` the memory readings are
//!   taken again; `critical_consecutive_samples` critical samples in a row end the round
//!   when `in_round_terminate` is set (`round_mem_terminated`).
//!
//! Critical means: disk used % ≥ `disk.critical_pct` (signal `disk`); PSI memory
//! `full avg10` ≥ `pressure.full_avg10_critical` (signal `psi`); or `MemAvailable` below
//! `memory.avail_min_mb` *and* `MemFree` below `memory.free_low_mb` (signal
//! `combined_low`: either alone is normal on a cache-heavy host).

use std::path::{Path, PathBuf};

use crate::config::HostHealthConfig;
use crate::record::events::{Event, EventLog};

/// Replaces `/proc/pressure/memory` (tests only: PSI cannot be raised on demand).
pub(crate) const PRESSURE_FILE_ENV: &str = "AGENT_RUNNER_TEST_PRESSURE_FILE";

/// One reading of the host. `None`: not readable here. Serialized as an object of these
/// fields (event `context`, the live page's `monitor.host_health.reading`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Reading {
    /// Used % of the filesystem holding the log dir (as `df` counts it).
    pub disk_used_pct: Option<f64>,
    /// Bytes available to unprivileged writers on that filesystem.
    pub disk_free_bytes: Option<u64>,
    /// `MemAvailable`, MiB.
    pub mem_available_mb: Option<u64>,
    /// `MemFree`, MiB.
    pub mem_free_mb: Option<u64>,
    /// PSI memory `some avg10`, %.
    pub psi_some_avg10: Option<f64>,
    /// PSI memory `full avg10`, %.
    pub psi_full_avg10: Option<f64>,
}

/// A reading past a threshold.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pressure {
    /// `warning` or `critical`.
    pub severity: &'static str,
    /// `disk`, `psi` or `combined_low`.
    pub signal: &'static str,
    /// The reading and the threshold, in words.
    pub message: String,
}

impl Reading {
    /// Reads the disk of `log_dir` (or of its nearest existing ancestor: the log dir may
    /// not exist yet), `/proc/meminfo` and `/proc/pressure/memory`.
    pub(crate) fn take(log_dir: &Path) -> Reading {
        let mut reading = Reading::memory();
        if let Some((used, free)) = disk_usage(log_dir) {
            reading.disk_used_pct = Some(used);
            reading.disk_free_bytes = Some(free);
        }
        reading
    }

    /// The memory readings only (what the in-round floor samples).
    pub(crate) fn memory() -> Reading {
        let mut reading = Reading::default();
        if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
            reading.mem_available_mb = meminfo_mb(&text, "MemAvailable:");
            reading.mem_free_mb = meminfo_mb(&text, "MemFree:");
        }
        let psi: PathBuf = std::env::var_os(PRESSURE_FILE_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| "/proc/pressure/memory".into());
        if let Ok(text) = std::fs::read_to_string(psi) {
            reading.psi_some_avg10 = psi_avg10(&text, "some");
            reading.psi_full_avg10 = psi_avg10(&text, "full");
        }
        reading
    }
}

/// The worst reading of `reading` against `cfg`: the first critical one (disk, then PSI,
/// then combined-low memory), else the first warning, else `None`.
pub(crate) fn assess(cfg: &HostHealthConfig, reading: &Reading) -> Option<Pressure> {
    let mut found: Vec<Pressure> = Vec::new();
    if let Some(used) = reading.disk_used_pct {
        let free_mb = reading.disk_free_bytes.unwrap_or(0) / (1024 * 1024);
        if used >= cfg.disk.critical_pct {
            found.push(critical(
                "disk",
                format!("log dir filesystem {used:.1}% used ({free_mb} MiB free) >= disk.critical_pct {}", cfg.disk.critical_pct),
            ));
        } else if used >= cfg.disk.warning_pct {
            found.push(warning(
                "disk",
                format!(
                    "log dir filesystem {used:.1}% used >= disk.warning_pct {}",
                    cfg.disk.warning_pct
                ),
            ));
        }
    }
    found.extend(assess_memory(cfg, reading));
    found
        .iter()
        .find(|p| p.severity == "critical")
        .or(found.first())
        .cloned()
}

/// The memory part of [`assess`].
pub(crate) fn assess_memory(cfg: &HostHealthConfig, reading: &Reading) -> Option<Pressure> {
    if let Some(full) = reading.psi_full_avg10 {
        if full >= cfg.pressure.full_avg10_critical {
            return Some(critical(
                "psi",
                format!(
                    "PSI memory full avg10={full} >= pressure.full_avg10_critical {}",
                    cfg.pressure.full_avg10_critical
                ),
            ));
        }
    }
    if let (Some(avail), Some(free)) = (reading.mem_available_mb, reading.mem_free_mb) {
        if cfg.memory.avail_min_mb > 0
            && avail < cfg.memory.avail_min_mb
            && free < cfg.memory.free_low_mb
        {
            return Some(critical(
                "combined_low",
                format!(
                    "MemAvailable {avail} MiB < memory.avail_min_mb {} and MemFree {free} MiB < memory.free_low_mb {}",
                    cfg.memory.avail_min_mb, cfg.memory.free_low_mb
                ),
            ));
        }
    }
    match reading.psi_some_avg10 {
        Some(some) if some >= cfg.pressure.some_avg10_warning => Some(warning(
            "psi",
            format!(
                "PSI memory some avg10={some} >= pressure.some_avg10_warning {}",
                cfg.pressure.some_avg10_warning
            ),
        )),
        _ => None,
    }
}

fn critical(signal: &'static str, message: String) -> Pressure {
    Pressure {
        severity: "critical",
        signal,
        message,
    }
}

fn warning(signal: &'static str, message: String) -> Pressure {
    Pressure {
        severity: "warning",
        signal,
        message,
    }
}

/// `(used %, bytes available)` of the filesystem holding `path` or its nearest existing
/// ancestor, from statvfs(3): used = (blocks − free) / (blocks − free + available), as
/// `df` reports it.
/// The used share of the filesystem holding `path` (or its nearest existing ancestor), in
/// percent to 0.1 as `df` counts it (used / (used + available to unprivileged users)),
/// and the bytes available. The one reading behind every `disk_used_pct` (health
/// thresholds, `peek`'s `system`, `/api/state`).
pub(crate) fn disk_usage(path: &Path) -> Option<(f64, u64)> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let st = nix::sys::statvfs::statvfs(existing).ok()?;
    let frsize = st.fragment_size() as u64;
    let blocks = st.blocks() as u64;
    let free = st.blocks_free() as u64;
    let avail = st.blocks_available() as u64;
    let used = blocks.saturating_sub(free);
    let denominator = used + avail;
    if denominator == 0 {
        return None;
    }
    let pct = used as f64 * 100.0 / denominator as f64;
    Some(((pct * 10.0).round() / 10.0, avail * frsize))
}

/// The inodes of the filesystem holding `path` (or its nearest existing ancestor) from
/// statvfs(3): the used share in percent and the count in use; `None` when it has no
/// inode count (some filesystems report 0).
pub(crate) fn inode_usage(path: &Path) -> Option<(f64, u64)> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let st = nix::sys::statvfs::statvfs(existing).ok()?;
    let files = st.files() as u64;
    if files == 0 {
        return None;
    }
    let used = files.saturating_sub(st.files_free() as u64);
    Some((used as f64 * 100.0 / files as f64, used))
}

fn meminfo_mb(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kib / 1024)
}

fn psi_avg10(text: &str, kind: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with(kind))?;
    line.split_whitespace()
        .find_map(|field| field.strip_prefix("avg10="))?
        .parse()
        .ok()
}

/// The in-round floor of one round: samples memory health every
/// `pressure.sample_interval_s` while the agent runs; drives the soft brake
/// ([`crate::runtime::machine::memory_brake`]) and the nudge with the same samples.
#[derive(Debug)]
pub(crate) struct Floor {
    /// The thresholds.
    pub cfg: HostHealthConfig,
    /// Where samples and the termination are recorded.
    pub events: EventLog,
    /// The round.
    pub round_num: u64,
    /// The soft brake, when `brake.memory_high` is on and the cgroup is delegated.
    pub brake: Option<crate::runtime::machine::memory_brake::Brake>,
    /// The agent's cooperative stop signal, sent once by `pressure.in_round_nudge`.
    pub nudge_signal: nix::sys::signal::Signal,
    /// Set when the nudge was sent (the round then counts as ended by memory).
    pub nudged: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Floor {
    /// Resolves when `critical_consecutive_samples` critical samples in a row have been
    /// taken and `in_round_terminate` is set, after recording `round_mem_terminated` for
    /// the agent `pid`; otherwise never. Each critical sample of a streak, up to twice the
    /// limit, is recorded as `round_mem_critical_sample`; a healthy sample resets it. With
    /// `in_round_nudge`, the first critical sample of a streak that would end the round
    /// sends `pid` its cooperative stop signal, once a round (`round_mem_terminated` with
    /// `tier = "nudge"`). Every sample also drives the soft brake, released when this
    /// future ends or is dropped (the agent exited).
    pub(crate) async fn breached(&self, pid: u32) {
        let mut streak = 0u32;
        let limit = self.cfg.pressure.critical_consecutive_samples;
        let mut brake = self.brake.clone().map(|b| {
            crate::runtime::machine::memory_brake::RoundBrake::new(b, &self.events, self.round_num)
        });
        loop {
            tokio::time::sleep(self.cfg.pressure.sample_interval).await;
            let reading = Reading::memory();
            let pressure = assess_memory(&self.cfg, &reading);
            if let Some(brake) = brake.as_mut() {
                let context = serde_json::to_value(&reading).unwrap_or_default();
                brake.sample(pressure.as_ref().map(|p| p.signal), &context);
            }
            let Some(pressure) = pressure.filter(|p| p.severity == "critical") else {
                streak = 0;
                continue;
            };
            streak = streak.saturating_add(1);
            if streak <= limit.saturating_mul(2) {
                self.events.emit(Event::RoundMemCriticalSample {
                    round_num: self.round_num,
                    consecutive: streak,
                    context: serde_json::to_value(&reading).unwrap_or_default(),
                });
            }
            let terminated = |tier: &str| Event::RoundMemTerminated {
                pid,
                severity: pressure.severity.to_owned(),
                signal: pressure.signal.to_owned(),
                message: pressure.message.clone(),
                consecutive: streak,
                context: serde_json::to_value(&reading).unwrap_or_default(),
                tier: tier.to_owned(),
            };
            if streak >= limit && self.cfg.pressure.in_round_terminate {
                self.events.emit(terminated("terminate"));
                return;
            }
            let nudged = &self.nudged;
            if self.cfg.pressure.in_round_nudge
                && self.cfg.pressure.in_round_terminate
                && streak == 1
                && !nudged.swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                let target = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(0));
                if let Err(e) = nix::sys::signal::kill(target, self.nudge_signal) {
                    tracing::warn!("cannot nudge the agent (pid {pid}): {e}");
                }
                self.events.emit(terminated("nudge"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc_formats() {
        let psi = "some avg10=1.17 avg60=2.37 avg300=1.13 total=5320597\nfull avg10=0.22 avg60=0.81 avg300=0.41 total=2228594\n";
        assert_eq!(psi_avg10(psi, "some"), Some(1.17));
        assert_eq!(psi_avg10(psi, "full"), Some(0.22));
        let meminfo = "MemTotal:  8000000 kB\nMemFree:  204800 kB\nMemAvailable:  1048576 kB\n";
        assert_eq!(meminfo_mb(meminfo, "MemFree:"), Some(200));
        assert_eq!(meminfo_mb(meminfo, "MemAvailable:"), Some(1024));
    }

    #[test]
    fn the_real_host_is_readable() {
        let dir = tempfile::tempdir().unwrap();
        let reading = Reading::take(&dir.path().join("not/yet"));
        let used = reading.disk_used_pct.expect("statvfs of an ancestor");
        assert!((0.0..=100.0).contains(&used));
        assert!(reading.mem_available_mb.unwrap() > 0);
    }

    #[test]
    fn critical_beats_warning_and_both_memory_readings_must_be_low() {
        let cfg = HostHealthConfig::default();
        let mut r = Reading {
            disk_used_pct: Some(91.0),
            disk_free_bytes: Some(1 << 30),
            mem_available_mb: Some(100),
            mem_free_mb: Some(500),
            psi_some_avg10: Some(0.0),
            psi_full_avg10: Some(0.0),
        };
        assert_eq!(assess(&cfg, &r).unwrap().severity, "warning");
        r.mem_free_mb = Some(10);
        let p = assess(&cfg, &r).unwrap();
        assert_eq!((p.severity, p.signal), ("critical", "combined_low"));
        r.disk_used_pct = Some(96.0);
        assert_eq!(assess(&cfg, &r).unwrap().signal, "disk");
        r.disk_used_pct = Some(1.0);
        r.mem_free_mb = Some(500);
        r.psi_full_avg10 = Some(60.0);
        assert_eq!(assess(&cfg, &r).unwrap().signal, "psi");
        r.psi_full_avg10 = Some(0.0);
        assert_eq!(assess(&cfg, &r), None);
    }
}
