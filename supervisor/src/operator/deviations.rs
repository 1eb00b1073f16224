//! `doctor`'s warnings for an operator coming from the reference system: each names the
//! deviation of docs/reference-system.md ("Deviations") this machine or config would trip
//! on, and only when it would (a foreign unit file, a live `serve.pid` that is not our lock
//! holder, metrics files a script may seed, a transient stop's exit code).

use std::path::Path;

use crate::config::{Config, TransientAction};
use crate::operator::doctor_check::{check, Check};
use crate::operator::install::{unit_name, Scope};
use crate::record::state::lock_holder;
use crate::runtime::cycle::log_views::SERVE_PID_FILE;

/// The warnings' name in `doctor --json`.
const NAME: &str = "reference_deviation";

/// Where the list lives, for the warnings' text.
const DOC: &str = "docs/reference-system.md, \"Deviations\"";

/// The deviations `config` and this machine would trip on, as doctor warnings.
pub(crate) fn warnings(config: &Config) -> Vec<Check> {
    let mut found = Vec::new();
    let unit = unit_name(config);
    for scope in [Scope::User, Scope::System] {
        let file = scope.unit_dir().join(&unit);
        // A regular file: `install`'s own is a link to the template.
        if file.symlink_metadata().is_ok_and(|m| m.is_file()) {
            found.push(check(
                NAME,
                false,
                format!(
                    "{} is a whole unit file (the reference system's install writes one per project): systemd runs it for {unit}, not agent-runner's template and drop-in ({DOC}, 1)",
                    file.display()
                ),
                format!(
                    "remove {} (the reference's `agent-runner uninstall`), then `agent-runner install`",
                    file.display()
                ),
            ));
        }
    }
    let log_dir = &config.runtime.log_dir;
    if let Some(pid) = std::fs::read_to_string(log_dir.join(SERVE_PID_FILE))
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok())
        .filter(|pid| Path::new(&format!("/proc/{pid}")).exists())
        .filter(|pid| lock_holder(&config.runtime.state_dir) != Some(*pid))
    {
        found.push(check(
            NAME,
            false,
            format!(
                "{}/{SERVE_PID_FILE} names process {pid}, which is alive but does not hold this project's lock (a reference system's serve?): `agent-runner kill` and `stop` find a supervisor by the lock, never by serve.pid, and do not reach it ({DOC}, 4)",
                log_dir.display()
            ),
            format!("stop process {pid} the way it was started (`kill {pid}` if it is a reference serve)"),
        ));
    }
    let seeded = std::fs::read_dir(log_dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("metrics-") && name.ends_with(".jsonl")
        });
    if seeded {
        found.push(check(
            NAME,
            false,
            format!(
                "{} holds metrics-*.jsonl files: `agent-runner monitor` does not read them, it measures log_dir's disk itself at each interval ({DOC}, 2)",
                log_dir.display()
            ),
            "nothing to do for agent-runner; a script that seeds a metrics file to test an alert must fill the disk instead",
        ));
    }
    if config.runtime.transient_error_action == TransientAction::Stop {
        found.push(check(
            NAME,
            false,
            format!("[runtime] transient_error_action = \"stop\" ends serve with exit 75, where the reference system exits 0 (both record agent_self_terminated with reason rate_limit) ({DOC}, 5)"),
            "a script or unit that takes only 0 as a clean end must accept 75 as a deliberate stop",
        ));
    }
    found
}
