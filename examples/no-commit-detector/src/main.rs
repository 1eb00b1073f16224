//! `no-commit-detector`: a detector host (docs/hosts/no-commit-detector.md). After each
//! round it reads the branch head from `.git` (read-only: a confined host cannot run git)
//! and alerts when the agent has made no commit for `rounds` rounds in a row, asking
//! `serve` to stop when `stop_service = true` (honoured only when `[monitor] auto_stop_on`
//! names the hook `no_commit`). The supervisor's own commits for a dirty handler are not
//! the agent's: the branch's reflog marks them (docs/protocol.md §5.2, "The supervisor's
//! commits"), and a head moved only by them does not reset the count.
//!
//! Config (`[plugins.hosts.<name>.config]` or `[plugins.<name>]`): `rounds` (K, default 3),
//! `severity` (`info` | `warning` | `critical`, default `warning`), `stop_service` (default
//! false). State (`<state_dir>/head.txt`): the last head seen and the round of the agent's
//! last commit, so the count survives restarts.

use agent_runner_sdk::protocol::reflog::ReflogEntry;
use agent_runner_sdk::{
    alert, serde_json, ConfigTable, DetectParams, Detection, Detector, HookError, Hooks, Host,
    HostEvent, Severity,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The work tree's head: the commit HEAD points at, and the reflog of what moved it (the
/// branch's, or `HEAD`'s when detached).
struct Head {
    sha: String,
    reflog: PathBuf,
}

/// Reads the commit the work tree's HEAD points at, from `.git` directly; `None` when
/// `work_dir` has no `.git` (nothing to judge).
fn read_head(work_dir: &Path) -> Result<Option<Head>, HookError> {
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
        return Ok(Some(Head {
            sha: head.trim().to_owned(), // detached
            reflog: git_dir.join("logs").join("HEAD"),
        }));
    };
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(rel) => git_dir.join(rel.trim()),
        Err(_) => git_dir.clone(),
    };
    let reflog = common.join("logs").join(reference);
    for dir in [&git_dir, &common] {
        if let Ok(sha) = std::fs::read_to_string(dir.join(reference)) {
            return Ok(Some(Head {
                sha: sha.trim().to_owned(),
                reflog,
            }));
        }
    }
    // Packed refs: `<sha> <ref>` lines.
    let packed = std::fs::read_to_string(common.join("packed-refs")).unwrap_or_default();
    Ok(Some(Head {
        sha: packed
            .lines()
            .find_map(|l| l.strip_suffix(reference).map(|s| s.trim().to_owned()))
            .unwrap_or_default(), // an unborn branch: no commit yet
        reflog,
    }))
}

/// Whether the moves of the ref from `from` to `to`, read back through `reflog` (the
/// ref's reflog text), include one that is not the supervisor's. A chain that cannot be
/// followed back to `from` (no reflog, one rewritten or expired) counts as the agent's:
/// the detector never alerts on what it cannot tell.
fn agent_moved(reflog: &str, from: &str, to: &str) -> bool {
    let mut want = to;
    for entry in reflog.lines().rev().filter_map(ReflogEntry::parse) {
        if entry.new != want {
            return true;
        }
        if !entry.by_supervisor() {
            return true;
        }
        if entry.old == from {
            return false;
        }
        want = entry.old;
    }
    true
}

/// What the detector remembers between calls: `<head> <round of the agent's last commit>`.
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
        let Some(Head { sha: head, reflog }) = read_head(Path::new(&params.ctx.work_dir))? else {
            return Ok(Detection::default());
        };
        let since = match self.memory.load() {
            Some((seen, since)) if seen == head && since <= round => since,
            Some((seen, since))
                if since <= round
                    && !agent_moved(
                        &std::fs::read_to_string(&reflog).unwrap_or_default(),
                        &seen,
                        &head,
                    ) =>
            {
                // Only the supervisor's own commits moved the head: the count goes on.
                self.memory.store(&head, since)?;
                since
            }
            _ => {
                // First look, or the agent moved the head: the count starts at this round.
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

#[cfg(test)]
mod tests {
    use super::*;
    use agent_runner_sdk::protocol::reflog::reflog_action;

    fn line(old: char, new: char, message: &str) -> String {
        format!(
            "{} {} Dev <dev@x> 1796104224 +0000\t{message}\n",
            old.to_string().repeat(40),
            new.to_string().repeat(40)
        )
    }

    #[test]
    fn only_the_supervisors_moves_are_not_the_agents() {
        let ours = format!("{}: wip: R2", reflog_action("wip_commit"));
        let sha = |c: char| c.to_string().repeat(40);
        let log = line('0', 'a', "commit (initial): start")
            + &line('a', 'b', &ours)
            + &line('b', 'c', &ours);
        assert!(!agent_moved(&log, &sha('a'), &sha('c')));
        assert!(!agent_moved(&log, &sha('b'), &sha('c')));
        let log = log + &line('c', 'd', "commit: fix parser") + &line('d', 'e', &ours);
        assert!(
            agent_moved(&log, &sha('c'), &sha('e')),
            "the agent's commit lies between"
        );
        assert!(!agent_moved(&log, &sha('d'), &sha('e')));
        // A reflog that cannot be followed back counts as the agent's.
        assert!(agent_moved("", &sha('a'), &sha('c')));
        assert!(agent_moved(&log, &sha('f'), &sha('e')));
        assert!(agent_moved(&log, &sha('a'), &sha('9')));
    }
}
