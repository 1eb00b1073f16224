//! The machine as `peek` shows it (the reference system's `system` block): memory from
//! `/proc/meminfo`, the file system holding the log dir, the 1-minute load, and how many
//! processes run the agent's binary. Reads procfs only; a value that cannot be read is
//! `null` (or 0), never an error.

use schemars::JsonSchema;
use serde::Serialize;
use std::path::Path;

/// `peek`'s `system` block.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct SystemMetrics {
    /// Memory, MiB.
    pub mem_total_mb: u64,
    /// Memory available, MiB.
    pub mem_available_mb: u64,
    /// Used share of the file system holding the log dir, 0–100, one decimal.
    pub disk_used_pct: f64,
    /// Free space there, GiB, one decimal.
    pub disk_free_gb: f64,
    /// The 1-minute load average.
    pub load_1m: Option<f64>,
    /// Always `null`: a CPU percentage needs two samples over time, and peek takes one
    /// look.
    pub cpu_pct: Option<f64>,
    /// Processes whose name is the agent binary's file name.
    pub agent_process_count: u64,
}

/// The `system` block. `disk_path` is the log dir (or, when it does not exist yet, its
/// nearest existing ancestor); `agent_binary` is the agent's `command[0]`.
pub(crate) fn snapshot(disk_path: &Path, agent_binary: &str) -> SystemMetrics {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_mb = |key: &str| -> u64 {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.trim_start_matches(':').split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    let (used_pct, free_gb) = disk(disk_path);
    let load_1m = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok());
    SystemMetrics {
        mem_total_mb: mem_mb("MemTotal"),
        mem_available_mb: mem_mb("MemAvailable"),
        disk_used_pct: used_pct,
        disk_free_gb: free_gb,
        load_1m,
        cpu_pct: None,
        agent_process_count: process_count(agent_binary),
    }
}

fn disk(path: &Path) -> (f64, f64) {
    match crate::runtime::machine::host_health::disk_usage(path) {
        Some((used_pct, avail)) => (
            used_pct,
            (avail as f64 / f64::from(1 << 30) * 10.0).round() / 10.0,
        ),
        None => (0.0, 0.0),
    }
}

/// Processes whose `comm` is the file name of `binary` (the kernel keeps 15 bytes).
fn process_count(binary: &str) -> u64 {
    let name = Path::new(binary)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let comm: String = name.chars().take(15).collect();
    if comm.is_empty() {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter(|e| {
            std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim_end() == comm)
        })
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_machine() {
        let s = serde_json::to_value(snapshot(
            Path::new("/nonexistent/below/root"),
            "/bin/does-not-run-here",
        ))
        .unwrap();
        assert!(s["mem_total_mb"].as_u64().unwrap() > 0);
        assert!(s["mem_available_mb"].as_u64().unwrap() <= s["mem_total_mb"].as_u64().unwrap());
        let pct = s["disk_used_pct"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&pct));
        assert_eq!(s["agent_process_count"], 0);
        let me = std::fs::read_to_string("/proc/self/comm").unwrap();
        assert!(process_count(me.trim_end()) >= 1);
    }
}
