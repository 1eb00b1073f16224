//! Where the supervisor's own record lives: the project lock, events, `state.json`, the
//! orphan stash record, `service.json` and the control socket (docs/operations.md, "State
//! dir").
//!
//! Agents clean their tree (`git clean -fdx` deletes every ignored file), so a record kept
//! inside the work tree can vanish mid-serve: the lock file with it, letting a second
//! supervisor in, and the round counter, restarting numbering at R1. When `log_dir` lies
//! inside `work_dir` (the `./logs` layout), the record therefore defaults to a per-project
//! directory under the user's state dir, out of the agent's reach:
//! `$XDG_STATE_HOME/agent-runner/projects/<project>-<key>` (`~/.local/state` when
//! `XDG_STATE_HOME` is unset), `<key>` being the first 16 hex digits of the sha256 of the
//! work tree's real path. A `log_dir` outside the work tree keeps the record itself, as
//! before. `[runtime] state_dir` overrides both.

use sha2::{Digest, Sha256};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::runtime::events::{Event, EventLog};
use crate::runtime::state;

/// The default state dir of the project whose work tree is `work_dir` (canonical) and whose
/// log dir is `log_dir` (see the module docs); `log_dir` itself when it lies outside the
/// work tree or when neither `XDG_STATE_HOME` nor `HOME` is set.
pub(crate) fn default_for(work_dir: &Path, log_dir: &Path, project: &str) -> PathBuf {
    if !in_tree(work_dir, log_dir) {
        return log_dir.to_owned();
    }
    let base = match (std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME")) {
        (Some(state), _) if Path::new(&state).is_absolute() => PathBuf::from(state),
        (_, Some(home)) if !home.is_empty() => PathBuf::from(home).join(".local/state"),
        _ => return log_dir.to_owned(),
    };
    base.join("agent-runner/projects")
        .join(format!("{}-{}", sanitize(project), key(work_dir)))
}

/// Readies the record of `config`'s project at boot, with the project lock held: a record
/// left in `log_dir` by an earlier layout (`state.json`, `orphan-state.json`,
/// `events-*.jsonl`) is moved into `state_dir` when `state_dir` has none of its own
/// (`state_migrated`), and a round counter behind the round logs is raised to them
/// (`round_state_recovered`), so round numbers never restart silently. Failures are
/// recorded as warnings; the round counter is checked again when the round starts.
pub(crate) fn prepare(config: &Config, events: &EventLog) {
    let (log_dir, state_dir) = (&config.runtime.log_dir, &config.runtime.state_dir);
    if log_dir != state_dir {
        match adopt_old_layout(log_dir, state_dir) {
            Ok(moved) if moved.is_empty() => {}
            Ok(files) => events.emit(Event::StateMigrated {
                from: log_dir.clone(),
                to: state_dir.clone(),
                files,
            }),
            Err(e) => tracing::warn!(
                "cannot move the record from {} to {}: {e}",
                log_dir.display(),
                state_dir.display()
            ),
        }
    }
    match state::recover_round_counter(state_dir, &log_dir.join("rounds")) {
        Ok(None) => {}
        Ok(Some((was, now))) => {
            tracing::warn!(
                "state.json said round {was} but round logs reach R{now}; numbering resumes at R{}",
                now + 1
            );
            events.emit(Event::RoundStateRecovered {
                last_round_was: was,
                last_round: now,
                source: "round logs".to_owned(),
                state_file: state_dir.join(state::STATE_FILE),
            });
        }
        Err(e) => tracing::warn!("cannot check the round counter: {e}"),
    }
}

/// Moves `state.json`, `orphan-state.json` and `events-*.jsonl` from `log_dir` to
/// `state_dir` when `state_dir` holds none of them yet; returns the names moved.
fn adopt_old_layout(log_dir: &Path, state_dir: &Path) -> std::io::Result<Vec<String>> {
    let Ok(entries) = std::fs::read_dir(log_dir) else {
        return Ok(Vec::new());
    };
    let names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| {
            n == state::STATE_FILE
                || n == state::ORPHAN_FILE
                || (n.starts_with("events-") && n.ends_with(".jsonl"))
        })
        .collect();
    if names.is_empty() || state_dir.join(state::STATE_FILE).exists() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(state_dir)?;
    let mut moved = Vec::new();
    for name in names {
        let (from, to) = (log_dir.join(&name), state_dir.join(&name));
        if to.exists() {
            continue; // written by this boot already; the old file stays where it is
        }
        if std::fs::rename(&from, &to).is_err() {
            std::fs::copy(&from, &to)?;
            std::fs::remove_file(&from)?;
        }
        moved.push(name);
    }
    Ok(moved)
}

/// Whether `dir` lies inside the work tree `work_dir` (where the agent's tree operations
/// reach it).
pub(crate) fn in_tree(work_dir: &Path, dir: &Path) -> bool {
    dir.starts_with(work_dir)
}

/// The first 16 hex digits of the sha256 of `work_dir`'s bytes.
fn key(work_dir: &Path) -> String {
    let digest = Sha256::digest(work_dir.as_os_str().as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// `project` reduced to `[A-Za-z0-9._-]` (other characters become `_`), for a readable
/// directory name.
fn sanitize(project: &str) -> String {
    project
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_tree_log_dir_moves_the_record_out_keyed_by_path() {
        let work = Path::new("/srv/my project");
        let inside = default_for(work, &work.join("logs"), "my project");
        assert!(!inside.starts_with(work), "{}", inside.display());
        let name = inside.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(
            name.starts_with("my_project-") && name.len() == 11 + 16,
            "{name}"
        );
        let other = default_for(Path::new("/srv/other"), Path::new("/srv/other/logs"), "x");
        assert_ne!(
            inside.file_name(),
            other.file_name(),
            "distinct trees share a dir"
        );
        let outside = Path::new("/var/log/ar");
        assert_eq!(default_for(work, outside, "p"), outside);
    }
}
