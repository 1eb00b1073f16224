//! After a round, the agent's shadow home (`<state_dir>/agent-home/<cli>/`, docs/security.md
//! "The shadow CLI home") is pruned of what no later round needs: transcripts of sessions
//! no round resumes again and spools nothing reads, as the reviewed table
//! [`SHADOW_PRUNE`] says (docs/operations.md, "The agent's CLI state on disk").
//!
//! The agent writes in its shadow, so everything found there is hostile: each directory
//! is opened one name at a time with `O_NOFOLLOW` from the shadow's root, held by its
//! descriptor, and what lies below it reached through that descriptor (its
//! `/proc/self/fd/<n>` path, as [`crate::held_dir`] does); a symbolic link met where a
//! directory is walked is refused, never followed, and named in `agent_home_pruned`. An
//! entry removed is removed as what it is: a link is unlinked (never its target), a
//! directory by `std::fs::remove_dir_all`, which opens each level with `O_NOFOLLOW`.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agent_runner_plugin_host::agent::shadow_home::{shadow_root, Prune, SHADOW_PRUNE};

/// Most links named in one [`Pruned::refused`] (the rest are counted only).
pub(crate) const MAX_REFUSED_NAMED: usize = 20;

/// What one prune did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Pruned {
    /// Entries removed.
    pub removed: u64,
    /// Bytes of the regular files among them (a directory's content is not counted).
    pub bytes: u64,
    /// Links met where a directory is walked, relative to the shadow's root: refused,
    /// not followed (at most [`MAX_REFUSED_NAMED`]).
    pub refused: Vec<String>,
}

/// One directory held open (`O_PATH | O_DIRECTORY`), and its path from the shadow's root.
struct Held {
    file: File,
    rel: PathBuf,
}

impl Held {
    /// The path that reaches the open directory itself, whatever is at its name now.
    fn at(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
    }
}

/// The directory `name` inside `parent`, opened without following a link at `name`:
/// `Ok(None)` when it is missing or not a directory; `Err` for a link (refused).
fn open_child(parent: &Held, name: &std::ffi::OsStr) -> Result<Option<Held>, PathBuf> {
    let rel = parent.rel.join(name);
    let path = parent.at().join(name);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => return Err(rel),
        Ok(m) if m.is_dir() => {}
        _ => return Ok(None),
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(&path)
    {
        Ok(file) => Ok(Some(Held { file, rel })),
        // Swapped for a link between the look and the open.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(rel),
        Err(_) => Ok(None),
    }
}

/// An entry a pattern matched: its directory, name and what it is (not followed).
struct Found {
    dir: std::rc::Rc<Held>,
    name: std::ffi::OsString,
    meta: std::fs::Metadata,
}

/// Walks `parts` from `dir`: every match of the last part, in `found`; links met on the
/// way, in `refused`.
fn walk(dir: Held, parts: &[&str], found: &mut Vec<Found>, refused: &mut Vec<PathBuf>) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    let names: Vec<std::ffi::OsString> = if *first == "*" {
        match std::fs::read_dir(dir.at()) {
            Ok(entries) => entries.flatten().map(|e| e.file_name()).collect(),
            Err(_) => return,
        }
    } else {
        vec![std::ffi::OsString::from(first)]
    };
    if rest.is_empty() {
        let dir = std::rc::Rc::new(dir);
        for name in names {
            if let Ok(meta) = std::fs::symlink_metadata(dir.at().join(&name)) {
                found.push(Found {
                    dir: dir.clone(),
                    name,
                    meta,
                });
            }
        }
        return;
    }
    for name in names {
        match open_child(&dir, &name) {
            Ok(Some(child)) => walk(child, rest, found, refused),
            Ok(None) => {}
            Err(link) => refused.push(link),
        }
    }
}

/// Whether `name` names one of `live` sessions: holds its id or the id's first 8
/// characters.
fn names_live(name: &std::ffi::OsStr, live: &[String]) -> bool {
    let name = name.to_string_lossy();
    live.iter().any(|id| {
        !id.is_empty()
            && (name.contains(id.as_str()) || id.get(..8).is_some_and(|p| name.contains(p)))
    })
}

/// Prunes the shadow home of `cli` under `state_dir` as [`SHADOW_PRUNE`] says, keeping
/// the sessions `live` (their ids: every phase's that a later round may resume). Nothing
/// for a CLI without entries or without a shadow.
pub(crate) fn prune(state_dir: &Path, cli: &str, live: &[String]) -> Pruned {
    let mut out = Pruned::default();
    let root = shadow_root(state_dir, cli);
    let mut refused = Vec::new();
    for entry in SHADOW_PRUNE.iter().filter(|e| e.cli == cli) {
        // The root as the supervisor made it: a link there is not the shadow.
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(&root)
        else {
            return out;
        };
        let held = Held {
            file,
            rel: PathBuf::new(),
        };
        let parts: Vec<&str> = entry.pattern.split('/').collect();
        let mut found = Vec::new();
        walk(held, &parts, &mut found, &mut refused);
        let newest = found
            .iter()
            .enumerate()
            .max_by_key(|(_, f)| f.meta.modified().unwrap_or(SystemTime::UNIX_EPOCH))
            .map(|(i, _)| i);
        for (i, f) in found.iter().enumerate() {
            let keep = match entry.prune {
                Prune::All => false,
                Prune::OldSessions => Some(i) == newest || names_live(&f.name, live),
            };
            if keep {
                continue;
            }
            let path = f.dir.at().join(&f.name);
            let gone = if f.meta.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            match gone {
                Ok(()) => {
                    out.removed += 1;
                    if f.meta.is_file() {
                        out.bytes += f.meta.size();
                    }
                }
                Err(e) => tracing::warn!(
                    "cannot prune {} of the agent's shadow home: {e}",
                    f.dir.rel.join(&f.name).display()
                ),
            }
        }
    }
    refused.sort();
    refused.dedup();
    out.refused = refused
        .iter()
        .take(MAX_REFUSED_NAMED)
        .map(|p| p.display().to_string())
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn touch_old(path: &Path) {
        let old = SystemTime::now() - std::time::Duration::from_secs(3600);
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    #[test]
    fn old_sessions_and_spools_go_the_live_session_stays() {
        let t = tempfile::tempdir().unwrap();
        let root = shadow_root(t.path(), "claude");
        let projects = root.join(".claude/projects/-work-tree");
        let live = "3f2b9c1e-1111-4222-8333-444455556666".to_owned();
        let old = "0a0b0c0d-1111-4222-8333-444455556666";
        write(&projects.join(format!("{old}.jsonl")), "old history");
        write(&projects.join(format!("{old}/subagents/a.jsonl")), "x");
        write(&projects.join(format!("{live}.jsonl")), "live");
        touch_old(&projects.join(format!("{live}.jsonl")));
        write(&projects.join("newest-other.jsonl"), "newest");
        write(
            &root.join(".claude/telemetry/1p_failed_events.1.json"),
            "spool",
        );
        write(&root.join(".claude/settings.json"), "{}");
        write(
            &root.join(format!(".claude/todos/{old}-agent-{old}.json")),
            "[]",
        );
        touch_old(&root.join(format!(".claude/todos/{old}-agent-{old}.json")));
        write(
            &root.join(format!(".claude/todos/{live}-agent-{live}.json")),
            "[]",
        );
        let pruned = prune(t.path(), "claude", std::slice::from_ref(&live));
        assert!(projects.join(format!("{live}.jsonl")).exists());
        assert!(
            projects.join("newest-other.jsonl").exists(),
            "the newest stays"
        );
        assert!(!projects.join(format!("{old}.jsonl")).exists());
        assert!(!projects.join(old).exists());
        assert!(!root
            .join(".claude/telemetry/1p_failed_events.1.json")
            .exists());
        assert!(root.join(".claude/telemetry").is_dir());
        assert!(root.join(".claude/settings.json").exists());
        assert!(!root
            .join(format!(".claude/todos/{old}-agent-{old}.json"))
            .exists());
        assert_eq!(pruned.removed, 4, "{pruned:?}");
        assert_eq!(pruned.bytes, 11 + 5 + 2);
        assert!(pruned.refused.is_empty());
        // Nothing for a CLI without a shadow, or without entries.
        assert_eq!(prune(t.path(), "codex", &[]), Pruned::default());
        assert_eq!(prune(t.path(), "aider", &[]), Pruned::default());
    }

    /// codex's thread-history database (a row a round of every session ever run: 61 rows
    /// after 61 rounds of four sessions in bench/soak_sessions.sh) goes with its log and
    /// index; the newest rollout, which `resume --last` reads, and the other databases stay.
    #[test]
    fn codex_thread_history_goes_its_newest_rollout_stays() {
        let t = tempfile::tempdir().unwrap();
        let root = shadow_root(t.path(), "codex");
        let day = root.join(".codex/sessions/2026/12/02");
        write(&day.join("rollout-2026-12-02T10-00-00-old.jsonl"), "old");
        touch_old(&day.join("rollout-2026-12-02T10-00-00-old.jsonl"));
        write(&day.join("rollout-2026-12-02T11-00-00-live.jsonl"), "live");
        for db in ["thread_history_1.sqlite", "state_5.sqlite", "logs_2.sqlite"] {
            write(&root.join(".codex").join(db), "db");
        }
        write(&root.join(".codex/thread_history_1.sqlite-wal"), "wal");
        write(&root.join(".codex/thread_history_1.sqlite-shm"), "shm");
        let pruned = prune(t.path(), "codex", &[]);
        assert_eq!((pruned.removed, pruned.bytes), (4, 3 + 2 + 3 + 3));
        assert!(day.join("rollout-2026-12-02T11-00-00-live.jsonl").exists());
        assert!(!day.join("rollout-2026-12-02T10-00-00-old.jsonl").exists());
        for gone in ["", "-wal", "-shm"] {
            assert!(!root
                .join(format!(".codex/thread_history_1.sqlite{gone}"))
                .exists());
        }
        assert!(root.join(".codex/state_5.sqlite").exists());
        assert!(root.join(".codex/logs_2.sqlite").exists());
    }

    /// A link the agent planted in its shadow, to a directory of the operator's shaped
    /// like the shadow's: never followed (the operator's files stay), and named. Control:
    /// a naive walk (`read_dir` through the path) reaches and would remove them.
    #[test]
    fn a_planted_link_is_refused_never_followed() {
        let t = tempfile::tempdir().unwrap();
        let root = shadow_root(t.path(), "claude");
        let operator = t.path().join("operator");
        write(
            &operator.join("project/old-session.jsonl"),
            "the operator's",
        );
        write(&operator.join("spool/keep.json"), "the operator's");
        write(&root.join(".claude/projects/-w/live.jsonl"), "live");
        // A project directory that is a link, and the whole telemetry dir a link.
        symlink(operator.join("project"), root.join(".claude/projects/evil")).unwrap();
        symlink(operator.join("spool"), root.join(".claude/telemetry")).unwrap();
        // And `projects` itself a link in another CLI's shadow.
        let pi = shadow_root(t.path(), "pi");
        std::fs::create_dir_all(pi.join(".pi/agent")).unwrap();
        symlink(&operator, pi.join(".pi/agent/sessions")).unwrap();
        let pruned = prune(t.path(), "claude", &["live".to_owned()]);
        assert!(operator.join("project/old-session.jsonl").exists());
        assert!(operator.join("spool/keep.json").exists());
        assert_eq!(
            pruned.refused,
            [".claude/projects/evil", ".claude/telemetry"],
            "{pruned:?}"
        );
        assert!(root.join(".claude/projects/-w/live.jsonl").exists());
        let pruned = prune(t.path(), "pi", &[]);
        assert_eq!(pruned.refused, [".pi/agent/sessions"]);
        assert!(operator.join("project/old-session.jsonl").exists());
        // Control: a naive walk through the paths reaches the operator's files.
        let naive: Vec<PathBuf> = std::fs::read_dir(root.join(".claude/projects"))
            .unwrap()
            .flatten()
            .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
            .map(|e| e.path())
            .collect();
        assert!(
            naive.iter().any(|p| p.ends_with("evil/old-session.jsonl")),
            "{naive:?}"
        );
        assert!(std::fs::read_dir(root.join(".claude/telemetry"))
            .unwrap()
            .flatten()
            .any(|e| e.file_name() == "keep.json"));
    }

    #[test]
    fn a_link_as_an_entry_is_unlinked_never_its_target() {
        let t = tempfile::tempdir().unwrap();
        let root = shadow_root(t.path(), "claude");
        let operator = t.path().join("operator.jsonl");
        write(&operator, "the operator's");
        write(&root.join(".claude/projects/-w/live.jsonl"), "live");
        symlink(&operator, root.join(".claude/projects/-w/old.jsonl")).unwrap();
        // The live file is made the newest (a link's own time is not set here).
        File::options()
            .write(true)
            .open(root.join(".claude/projects/-w/live.jsonl"))
            .unwrap()
            .set_modified(SystemTime::now() + std::time::Duration::from_secs(60))
            .unwrap();
        let pruned = prune(t.path(), "claude", &["live".to_owned()]);
        assert!(std::fs::symlink_metadata(root.join(".claude/projects/-w/old.jsonl")).is_err());
        assert_eq!(
            std::fs::read_to_string(&operator).unwrap(),
            "the operator's"
        );
        assert_eq!((pruned.removed, pruned.bytes), (1, 0));
    }
}
