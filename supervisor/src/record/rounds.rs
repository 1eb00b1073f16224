//! Rounds as the record tells them: `round_start`, `agent_spawn`, `agent_exit`,
//! `agent_sandbox_denied`, `agent_egress_refused`, `exec_surface_changed`,
//! `git_config_reverted`, `session_renewed`, `agent_home_pruned` and `round_end` events folded into one view per round (the reference system's `RoundView`
//! shape, for `peek`), and the round logs under `<log_dir>/rounds/`.

use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::record::events::{Event, Recorded, RoundEnd};

/// One round as far as the events go.
#[derive(Clone, Debug, Default)]
pub(crate) struct RoundView {
    /// Its number.
    pub round_num: u64,
    /// Its phase (`null` without `[phases]`).
    pub phase: Option<String>,
    /// `round_start.ts`.
    pub started_at: Option<String>,
    /// The round log (`agent_spawn.log_path`).
    pub log_path: Option<String>,
    /// `agent_exit.exit_code` (`None`: killed by a signal, or not exited yet).
    pub exit_code: Option<i64>,
    /// `agent_exit.duration_s`.
    pub duration_s: Option<f64>,
    /// `agent_exit.timed_out`.
    pub timed_out: Option<bool>,
    /// `agent_exit.exit_cause`.
    pub exit_cause: Option<String>,
    /// `round_end.dirty_outcome`.
    pub dirty_outcome: Option<String>,
    /// Whether `agent_exit` was recorded.
    pub exited: bool,
    /// Whether `round_end` was recorded.
    pub ended: bool,
    /// `round_end.ts`.
    pub ended_at: Option<String>,
    /// Its `agent_sandbox_denied` events, in record order.
    pub sandbox_denied: Vec<SandboxDenied>,
    /// Its `agent_egress_refused` events, in record order.
    pub egress_refused: Vec<EgressRefused>,
    /// The paths of its `exec_surface_changed` event.
    pub exec_surface_changed: Vec<String>,
    /// The paths of its `git_index_flags_cleared` events.
    pub index_flags_cleared: Vec<String>,
    /// Its `git_config_reverted` events, in record order.
    pub git_config_reverted: Vec<ConfigReverted>,
    /// Its `git_repository_changed` event: what changed, and each plant set aside.
    pub repository_changed: Option<RepositoryChanged>,
    /// Its `session_renewed` event.
    pub session_renewed: Option<SessionRenewed>,
    /// The links its `agent_home_pruned` refused to follow.
    pub agent_home_refused: Vec<String>,
}

/// A round's `session_renewed`, as `peek` shows it (docs/agent-clis.md, "Session
/// resume"): the round started its phase's session afresh.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct SessionRenewed {
    /// The bound the old session reached: `max_rounds`, `max_tokens` or `max_hours`.
    pub reason: String,
    /// The session that ended.
    pub old_session_id: String,
    /// Rounds it ran.
    pub rounds: u64,
    /// Tokens its rounds used.
    pub tokens: u64,
    /// Its age, in seconds.
    pub age_s: u64,
}

/// A round's `git_repository_changed`, as `peek` shows it (docs/security.md, "The
/// supervisor is not the agent's deputy"): after it, the supervisor's git stashed and
/// committed nothing.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct RepositoryChanged {
    /// Each path and what it was at boot and is now.
    pub changed: String,
    /// What the round planted and was set aside (`<path> set aside as <new path>`).
    pub set_aside: Vec<String>,
}

/// One `git_config_reverted` of a round, as `peek` shows it (docs/security.md, "What runs
/// later: the watched tier").
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct ConfigReverted {
    /// The key (`core.fsmonitor`; empty when a whole file could not be read).
    pub key: String,
    /// `local` or `worktree`.
    pub scope: String,
    /// The file it was set in.
    pub file: PathBuf,
    /// `removed`, `restored` or `unread`.
    pub action: String,
    /// Why it could not be reverted; `null` when it was.
    pub error: Option<String>,
}

/// One `agent_egress_refused` of a round, as `peek` and the live page show it
/// (docs/security.md, "Refusals told, with their fix").
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct EgressRefused {
    /// The layer that refused (`proxy`, `landlock`).
    pub layer: String,
    /// The host name asked for (`null` when an address was).
    pub host: Option<String>,
    /// The address, when known.
    pub address: Option<String>,
    /// The TCP port.
    pub port: u16,
    /// Why (`not_listed`, `port_not_allowed`, `loopback`, …).
    pub reason: String,
    /// The config key that opens it.
    pub key: String,
    /// The sentence: what was refused and the line that opens it.
    pub message: String,
    /// How many times in the round.
    pub count: u64,
}

/// One `agent_sandbox_denied` of a round, as `peek` shows it (docs/security.md, "Denials
/// told, not silent").
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct SandboxDenied {
    /// The layer that refused (`egress`).
    pub layer: String,
    /// What was refused (`host:port`).
    pub target: String,
    /// How (`connect`, `http`).
    pub access: String,
    /// How many times in the round.
    pub count: u64,
    /// On the round's last denial when its cap was reached: the distinct denials left
    /// out (`null` otherwise).
    pub dropped_kinds: Option<u64>,
    /// With `dropped_kinds`: how many denials they were (`null` otherwise).
    pub dropped_count: Option<u64>,
}

/// The view of round `n`, created empty when first met.
fn entry(rounds: &mut BTreeMap<u64, RoundView>, n: u64) -> &mut RoundView {
    rounds.entry(n).or_insert_with(|| RoundView {
        round_num: n,
        ..RoundView::default()
    })
}

/// Folds `events` (oldest first) into rounds, by number, ascending.
pub(crate) fn rounds(events: &[Recorded]) -> BTreeMap<u64, RoundView> {
    let mut rounds: BTreeMap<u64, RoundView> = BTreeMap::new();
    for e in events {
        let ts = e.ts().map(str::to_owned);
        let Some(event) = &e.event else { continue };
        match event {
            Event::RoundStart {
                round_num, phase, ..
            } => {
                let r = entry(&mut rounds, *round_num);
                r.started_at = ts;
                r.phase = phase.clone();
            }
            Event::AgentSpawn {
                round_num,
                log_path,
                ..
            } => {
                entry(&mut rounds, *round_num).log_path = Some(log_path.display().to_string());
            }
            Event::AgentExit {
                round_num,
                exit_code,
                duration_s,
                timed_out,
                exit_cause,
                ..
            } => {
                let r = entry(&mut rounds, *round_num);
                r.exited = true;
                r.exit_code = exit_code.map(i64::from);
                r.duration_s = Some(*duration_s);
                r.timed_out = Some(*timed_out);
                r.exit_cause = Some(exit_cause.clone());
            }
            Event::AgentSandboxDenied {
                round_num,
                layer,
                target,
                access,
                count,
                dropped_kinds,
                dropped_count,
            } => entry(&mut rounds, *round_num)
                .sandbox_denied
                .push(SandboxDenied {
                    layer: layer.clone(),
                    target: target.clone(),
                    access: access.clone(),
                    count: *count,
                    dropped_kinds: *dropped_kinds,
                    dropped_count: *dropped_count,
                }),
            Event::AgentEgressRefused {
                round_num,
                layer,
                host,
                address,
                port,
                reason,
                key,
                message,
                count,
                ..
            } => entry(&mut rounds, *round_num)
                .egress_refused
                .push(EgressRefused {
                    layer: layer.clone(),
                    host: host.clone(),
                    address: address.clone(),
                    port: *port,
                    reason: reason.clone(),
                    key: key.clone(),
                    message: message.clone(),
                    count: *count,
                }),
            Event::ExecSurfaceChanged {
                round_num, paths, ..
            } => entry(&mut rounds, *round_num)
                .exec_surface_changed
                .extend(paths.iter().cloned()),
            Event::GitIndexFlagsCleared {
                round_num,
                paths,
                index_set_aside,
                ..
            } => entry(&mut rounds, *round_num)
                .index_flags_cleared
                .extend(paths.iter().chain(index_set_aside).cloned()),
            Event::GitRepositoryChanged {
                round_num,
                changed,
                set_aside,
            } => {
                entry(&mut rounds, *round_num).repository_changed = Some(RepositoryChanged {
                    changed: changed.clone(),
                    set_aside: set_aside.clone(),
                })
            }
            Event::GitConfigReverted {
                round_num,
                key,
                scope,
                file,
                action,
                error,
                ..
            } => entry(&mut rounds, *round_num)
                .git_config_reverted
                .push(ConfigReverted {
                    key: key.clone(),
                    scope: scope.clone(),
                    file: file.clone(),
                    action: action.clone(),
                    error: error.clone(),
                }),
            Event::SessionRenewed {
                round_num,
                old_session_id,
                reason,
                rounds: n,
                tokens,
                age_s,
                ..
            } => {
                entry(&mut rounds, *round_num).session_renewed = Some(SessionRenewed {
                    reason: reason.clone(),
                    old_session_id: old_session_id.clone(),
                    rounds: *n,
                    tokens: *tokens,
                    age_s: *age_s,
                })
            }
            // One prune a round.
            Event::AgentHomePruned {
                round_num, refused, ..
            } => entry(&mut rounds, *round_num).agent_home_refused = refused.clone(),
            Event::RoundEnd(end) => {
                let (round_num, dirty_outcome) = match end {
                    RoundEnd::NotStarted { round_num, .. } => (round_num, None),
                    RoundEnd::Ran {
                        round_num,
                        dirty_outcome,
                        ..
                    } => (round_num, dirty_outcome.clone()),
                };
                let r = entry(&mut rounds, *round_num);
                r.ended = true;
                r.ended_at = ts;
                r.dirty_outcome = dirty_outcome;
            }
            _ => {}
        }
    }
    rounds
}

/// One round in `peek` (`current_round`, `recent_rounds`, `round`): the reference
/// system's `RoundView` fields, then ours (`duration_s`, `exit_cause`, `dirty_outcome`,
/// `ended_at`).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct RoundDoc {
    /// Its number.
    pub round_num: u64,
    /// Its phase (`null` without `[phases]`).
    pub phase: Option<String>,
    /// `round_start.ts` (empty when not recorded).
    pub started_at: String,
    /// Running: seconds since start, to 0.1 s; ended: the agent's duration.
    pub duration_so_far_s: Option<f64>,
    /// Always `null`: agent pids are not recorded.
    pub pid: Option<u32>,
    /// The agent's exit code (`null`: killed by a signal, or not exited yet).
    pub exit_code: Option<i64>,
    /// Whether the budget ran out.
    pub timed_out: Option<bool>,
    /// The round log (empty when not known).
    pub log_path: String,
    /// The end of the round log, when asked for.
    pub log_tail: Option<String>,
    /// The round's events, oldest first.
    pub recent_events: Vec<Recorded>,
    /// `agent_exit.duration_s`.
    pub duration_s: Option<f64>,
    /// `agent_exit.exit_cause`.
    pub exit_cause: Option<String>,
    /// `round_end.dirty_outcome`.
    pub dirty_outcome: Option<String>,
    /// `round_end.ts`.
    pub ended_at: Option<String>,
    /// Ours: what the agent's sandbox refused in the round (its `agent_sandbox_denied`
    /// events; `[]` when nothing was refused or nothing is filtered), so a confined agent
    /// that failed is told from one that did nothing.
    pub sandbox_denied: Vec<SandboxDenied>,
    /// Ours: the connects the agent's sandbox refused in the round (its
    /// `agent_egress_refused` events, each with the line that opens it; `[]` when none).
    pub egress_refused: Vec<EgressRefused>,
    /// Ours: the exec surface the round changed (its `exec_surface_changed` paths; `[]`
    /// when none): CI and editor files to review (docs/security.md, "What runs later: the
    /// watched tier").
    pub exec_surface_changed: Vec<String>,
    /// Ours: files an index flag (`assume-unchanged`, `skip-worktree`) hid from `git
    /// status`, the flag cleared in the round (its `git_index_flags_cleared` paths; `[]`
    /// when none: docs/security.md, "What hides a change").
    pub index_flags_cleared: Vec<String>,
    /// Ours: the git config keys the round added or changed that were reverted after it
    /// (its `git_config_reverted` events; `[]` when none).
    pub git_config_reverted: Vec<ConfigReverted>,
    /// Ours: what changed in the repository during the round, after which the supervisor's
    /// git stashed and committed nothing (its `git_repository_changed`; `null` when
    /// nothing did).
    pub repository_changed: Option<RepositoryChanged>,
    /// Ours: the round started its phase's agent session afresh because the old one
    /// reached a bound (its `session_renewed`; `null` when it did not).
    pub session_renewed: Option<SessionRenewed>,
    /// Ours: links the agent planted in its shadow home that the prune after the round
    /// refused to follow (its `agent_home_pruned.refused`; `[]` when none).
    pub agent_home_refused: Vec<String>,
}

impl RoundView {
    /// The round as `peek` shows it; `events` are searched for its `recent_events`.
    pub(crate) fn to_doc(
        &self,
        now: SystemTime,
        log_tail: Option<String>,
        events: &[Recorded],
    ) -> RoundDoc {
        let so_far = if self.exited {
            self.duration_s
        } else {
            self.started_at
                .as_deref()
                .and_then(|ts| humantime::parse_rfc3339_weak(ts.trim_end_matches('Z')).ok())
                .and_then(|t| now.duration_since(t).ok())
                .map(|d| (d.as_secs_f64() * 10.0).round() / 10.0)
        };
        RoundDoc {
            round_num: self.round_num,
            phase: self.phase.clone(),
            started_at: self.started_at.clone().unwrap_or_default(),
            duration_so_far_s: so_far,
            pid: None,
            exit_code: self.exit_code,
            timed_out: self.timed_out,
            log_path: self.log_path.clone().unwrap_or_default(),
            log_tail,
            recent_events: events
                .iter()
                .filter(|e| e.round_num() == Some(self.round_num))
                .cloned()
                .collect(),
            duration_s: self.duration_s,
            exit_cause: self.exit_cause.clone(),
            dirty_outcome: self.dirty_outcome.clone(),
            ended_at: self.ended_at.clone(),
            sandbox_denied: self.sandbox_denied.clone(),
            egress_refused: self.egress_refused.clone(),
            exec_surface_changed: self.exec_surface_changed.clone(),
            index_flags_cleared: self.index_flags_cleared.clone(),
            git_config_reverted: self.git_config_reverted.clone(),
            repository_changed: self.repository_changed.clone(),
            session_renewed: self.session_renewed.clone(),
            agent_home_refused: self.agent_home_refused.clone(),
        }
    }
}

/// The log of round `round_num` in `<log_dir>/rounds/` (`R<N>-<stamp>.log`; the newest if
/// several), if any.
pub(crate) fn log_file(log_dir: &Path, round_num: u64) -> Option<PathBuf> {
    let prefix = format!("R{round_num}-");
    let mut found: Vec<PathBuf> = std::fs::read_dir(log_dir.join("rounds"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".log"))
        })
        .collect();
    found.sort();
    found.pop()
}

/// The highest round number with a log in `<log_dir>/rounds/`.
pub(crate) fn latest_logged_round(log_dir: &Path) -> Option<u64> {
    std::fs::read_dir(log_dir.join("rounds"))
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let name = name.to_str()?;
            name.strip_prefix('R')?.split('-').next()?.parse().ok()
        })
        .max()
}

/// The last `max_bytes` of `path` as text (lossy UTF-8, starting at a line boundary when
/// cut), `None` if it cannot be read.
pub(crate) fn tail_text(path: &Path, max_bytes: usize) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = crate::tree_file::open_regular(path, crate::tree_file::Symlink::Refuse).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(max_bytes as u64);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::with_capacity(max_bytes.min(len as usize));
    file.take(max_bytes as u64).read_to_end(&mut bytes).ok()?;
    let mut slice = &bytes[..];
    if start > 0 {
        if let Some(i) = slice.iter().position(|b| *b == b'\n') {
            slice = &slice[i + 1..];
        }
    }
    Some(String::from_utf8_lossy(slice).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn folds_the_events_of_each_round() {
        let events: Vec<Recorded> = [
            json!({"ts": "2026-11-29T10:00:00.000Z", "event": "round_start", "round_num": 1, "phase": null}),
            json!({"ts": "2026-11-29T10:00:00.100Z", "event": "agent_spawn", "round_num": 1, "log_path": "/l/R1.log"}),
            json!({"ts": "2026-11-29T10:00:02.000Z", "event": "agent_exit", "round_num": 1, "exit_code": 3, "duration_s": 1.9, "timed_out": false, "exit_cause": "exit"}),
            json!({"ts": "2026-11-29T10:00:02.100Z", "event": "round_end", "round_num": 1}),
            json!({"ts": "2026-11-29T10:00:05.000Z", "event": "round_start", "round_num": 2, "phase": "build"}),
        ]
        .into_iter()
        .filter_map(Recorded::from_line)
        .collect();
        let rounds = rounds(&events);
        assert_eq!(rounds.len(), 2);
        let r1 = &rounds[&1];
        assert!(r1.ended && r1.exited);
        assert_eq!(r1.exit_code, Some(3));
        let doc = r1.to_doc(SystemTime::now(), None, &events);
        assert_eq!(doc.duration_so_far_s, Some(1.9));
        assert_eq!(doc.recent_events.len(), 4);
        let r2 = &rounds[&2];
        assert!(!r2.ended);
        assert_eq!(r2.phase.as_deref(), Some("build"));
        let later = humantime::parse_rfc3339("2026-11-29T10:00:15Z").unwrap();
        assert_eq!(
            r2.to_doc(later, None, &events).duration_so_far_s,
            Some(10.0)
        );
    }
}
