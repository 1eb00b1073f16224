//! `no-commit-detector`: a detector host (docs/hosts/no-commit-detector.md). After each
//! round it reads the branch head from `.git` (read-only: a confined host cannot run git)
//! and alerts when the agent has made no commit for `rounds` rounds in a row, asking
//! `serve` to stop when `stop_service = true` (honoured only when `[monitor] auto_stop_on`
//! names the hook `no_commit`).
//!
//! Config (`[plugins.hosts.<name>.config]` or `[plugins.<name>]`): `rounds` (K, default 3),
//! `severity` (`info` | `warning` | `critical`, default `warning`), `stop_service` (default
//! false). State (`<state_dir>/head.txt`): the last head seen and the round it was seen
//! moving, so the count survives restarts.

use agent_runner_sdk::{
    alert, serde_json, ConfigTable, DetectParams, Detection, Detector, HookError, Hooks, Host,
    HostEvent, Severity,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Reads the commit the work tree's HEAD points at, from `.git` directly; `None` when
/// `work_dir` has no `.git` (nothing to judge).
fn read_head(work_dir: &Path) -> Result<Option<String>, HookError> {
    let mut git_dir = work_dir.join(".git");
    if !git_dir.exists() {
        return Ok(None);
    }
    if git_dir.is_file() {
        // A linked worktree: `.git` holds `gitdir: <path>`.
        let text = std::fs::read_to_string(&git_dir)?;
        let target = text.trim().strip_prefix("gitdir: ").unwrap_or(text.trim());
        git_dir = work_dir.join(target);
    }
    let head = std::fs::read_to_string(git_dir.join("HEAD"))?;
    let Some(reference) = head.trim().strip_prefix("ref: ") else {
        return Ok(Some(head.trim().to_owned())); // detached
    };
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(rel) => git_dir.join(rel.trim()),
        Err(_) => git_dir.clone(),
    };
    for dir in [&git_dir, &common] {
        if let Ok(sha) = std::fs::read_to_string(dir.join(reference)) {
            return Ok(Some(sha.trim().to_owned()));
        }
    }
    // Packed refs: `<sha> <ref>` lines.
    let packed = std::fs::read_to_string(common.join("packed-refs")).unwrap_or_default();
    Ok(Some(
        packed
            .lines()
            .find_map(|l| l.strip_suffix(reference).map(|s| s.trim().to_owned()))
            .unwrap_or_default(), // an unborn branch: no commit yet
    ))
}

/// What the detector remembers between calls: `<head> <round it moved>`.
struct Memory {
    file: PathBuf,
}

impl Memory {
    fn load(&self) -> Option<(String, u64)> {
        let text = std::fs::read_to_string(&self.file).ok()?;
        let (head, round) = text.trim().split_once(' ')?;
        Some((head.to_owned(), round.parse().ok()?))
    }

    fn store(&self, head: &str, round: u64) -> Result<(), HookError> {
        let tmp = self.file.with_extension("tmp");
        std::fs::write(&tmp, format!("{head} {round}\n"))?;
        std::fs::rename(&tmp, &self.file)?;
        Ok(())
    }
}

struct NoCommit {
    rounds: u64,
    severity: Severity,
    stop_service: bool,
    memory: Memory,
}

impl Detector for NoCommit {
    fn detect(&self, params: &DetectParams) -> Result<Detection, HookError> {
        let round = params.ctx.round_num;
        let Some(head) = read_head(Path::new(&params.ctx.work_dir))? else {
            return Ok(Detection::default());
        };
        let since = match self.memory.load() {
            Some((seen, since)) if seen == head && since <= round => since,
            _ => {
                // First look, or the head moved: the count starts at this round.
                self.memory.store(&head, round)?;
                return Ok(Detection::default());
            }
        };
        let without = round - since;
        if without < self.rounds {
            return Ok(Detection::default());
        }
        let mut detection = alert(
            self.severity,
            format!(
                "no commit for {without} rounds (head {} since round {since}); the agent may be stuck",
                &head[..head.len().min(12)]
            ),
            self.stop_service,
        );
        let mut fields = serde_json::Map::new();
        fields.insert("rounds_without_commit".into(), without.into());
        fields.insert("head".into(), head.into());
        detection.events.push(HostEvent {
            kind: "stalled".into(),
            fields,
        });
        Ok(detection)
    }
}

fn main() -> ExitCode {
    Host::new("no-commit-detector", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            let config = ConfigTable::new(&init.config);
            config.expect_only(&["rounds", "severity", "stop_service"])?;
            let rounds = config.u64_or("rounds", 3, 10_000)?;
            if rounds == 0 {
                return Err(HookError::new("config: `rounds` must be at least 1"));
            }
            let severity = match config.string_or("severity", "warning")?.as_str() {
                "info" => Severity::Info,
                "warning" => Severity::Warning,
                "critical" => Severity::Critical,
                other => {
                    return Err(HookError::new(format!(
                        "config: `severity` {other:?}; expected info, warning or critical"
                    )))
                }
            };
            let detector = NoCommit {
                rounds,
                severity,
                stop_service: config.bool_or("stop_service", false)?,
                memory: Memory {
                    file: Path::new(&init.state_dir).join("head.txt"),
                },
            };
            Ok(Hooks::new()
                .detector("no_commit", detector)
                .event_kind("stalled"))
        })
        .run()
}
