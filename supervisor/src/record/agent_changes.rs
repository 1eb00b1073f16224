//! What an agent changed that the supervisor refused, kept across boots (docs/security.md,
//! "What an agent changed, held across boots"): a prompt file it replaced by a link, a goal
//! check file it rewrote, the config file it replaced or wrote. Each boot takes the tree as it finds it, so without this record a
//! plant refused in one process would be taken as the operator's by the next (`agent-runner
//! round` is a boot every round). An entry holds what the agent left; while the path is
//! still exactly that, it stays refused, boot after boot; once anything else changed it (the
//! operator replaced the link, edited the check), the entry is dropped at the next boot.
//!
//! The record is `agent-changes.json` in the state dir, out of the agent's reach (the
//! config's in the operator's own state dir: [`config_refusal`]); a missing or unreadable
//! record holds nothing (a damaged one is told and replaced). To accept what the agent left
//! as it is, remove the entry (or the file).

use crate::held_dir::HeldDir;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The record's file name in the state dir.
pub(crate) const FILE: &str = "agent-changes.json";

/// What kind of file an entry is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    /// A prompt file that leads, through a link the agent made, somewhere else.
    PromptLink,
    /// A goal check's command file or argument file the agent rewrote.
    GoalCheck,
    /// The config file, replaced or rewritten while the agent ran ([`config_refusal`]).
    Config,
    /// The log dir inside the tree, now reached through a link the agent made.
    LogDir,
}

impl Kind {
    /// The name `agent-changes.json` and `doctor` give it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::PromptLink => "prompt_link",
            Kind::GoalCheck => "goal_check",
            Kind::Config => "config",
            Kind::LogDir => "log_dir",
        }
    }

    /// What a path of this kind is now, to compare with what the agent left: the links
    /// on the way for a link ([`link_identity`]), the bytes for a check file
    /// ([`content_identity`]), bytes, file and links for the config ([`file_identity`]).
    fn identity_now(self, path: &Path) -> Option<String> {
        match self {
            Kind::PromptLink | Kind::LogDir => link_identity(path),
            Kind::GoalCheck => Some(content_identity(path)),
            Kind::Config => Some(file_identity(path)),
        }
    }
}

/// One change an agent made and the supervisor refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Change {
    /// What the path is to the supervisor.
    pub kind: Kind,
    /// The path, as the config names it.
    pub path: PathBuf,
    /// What the agent left there ([`link_identity`] or [`content_identity`]).
    pub left: String,
    /// The round whose agent made it.
    pub round_num: u64,
}

impl Change {
    /// Whether its path is still exactly what the agent left ([`Kind::identity_now`]).
    pub(crate) fn still_as_left(&self) -> bool {
        self.kind.identity_now(&self.path).as_deref() == Some(self.left.as_str())
    }
}

/// The record: every change still held.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct AgentChanges {
    changes: Vec<Change>,
}

impl AgentChanges {
    /// The record in `state_dir`; empty when missing or unreadable (told in the log).
    pub(crate) fn load(state_dir: &Path) -> AgentChanges {
        match crate::record::state::read_json(&state_dir.join(FILE)) {
            Ok(found) => found.unwrap_or_default(),
            Err(e) => {
                tracing::warn!("cannot read what agents changed ({e}); starting afresh");
                AgentChanges::default()
            }
        }
    }

    /// Adds `change` (replacing one of the same kind and path) and writes the record
    /// durably to `state_dir`; a failed write is told in the log (the change is then held
    /// by this process only).
    pub(crate) fn hold(&mut self, state_dir: &Path, change: Change) {
        self.changes
            .retain(|c| !(c.kind == change.kind && c.path == change.path));
        self.changes.push(change);
        self.write(state_dir);
    }

    /// Drops every entry of `kind` whose path is no longer what the agent left
    /// ([`Change::still_as_left`]), writing the record when one was dropped.
    pub(crate) fn forget_changed(&mut self, state_dir: &Path, kind: Kind) {
        let before = self.changes.len();
        self.changes.retain(|c| c.kind != kind || c.still_as_left());
        if self.changes.len() != before {
            self.write(state_dir);
        }
    }

    /// Every entry whose path is still what the agent left: what the next boot refuses.
    pub(crate) fn still_held(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.still_as_left())
    }

    /// Every entry of `kind`.
    pub(crate) fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(move |c| c.kind == kind)
    }

    /// The entry of `kind` for `path`, if held.
    pub(crate) fn held(&self, kind: Kind, path: &Path) -> Option<&Change> {
        self.changes
            .iter()
            .find(|c| c.kind == kind && c.path == path)
    }

    fn write(&self, state_dir: &Path) {
        if let Err(e) = crate::record::state::write_json_atomic(&state_dir.join(FILE), self) {
            tracing::warn!(
                "cannot record what the agent changed in {}: {e}",
                state_dir.join(FILE).display()
            );
        }
    }
}

/// The log dir as a boot holds it (`crate::held_dir`): where it resolves now, unless the
/// record in the state dir holds a link an agent made on its way that is still there —
/// then held with no link below the work tree followed, so every write there is refused.
pub(crate) fn held_log_dir(config: &crate::config::Config) -> HeldDir {
    let log_dir = &config.runtime.log_dir;
    let changes = AgentChanges::load(&config.runtime.state_dir);
    match changes.held(Kind::LogDir, log_dir) {
        Some(change) if change.still_as_left() => {
            HeldDir::refusing_links_below(log_dir, &config.runtime.work_dir)
        }
        _ => HeldDir::resolve(log_dir),
    }
}

/// What `path` leads to through links, with the identity (inode and change time, which no
/// process can set) of every symbolic link on the way: `None` when no component of it is a
/// link or it does not resolve. A link removed and made again, even to the same place, is
/// another identity.
pub(crate) fn link_identity(path: &Path) -> Option<String> {
    let resolved = std::fs::canonicalize(path).ok()?;
    let mut links = Vec::new();
    let mut walked = PathBuf::new();
    for part in path.components() {
        walked.push(part);
        if let Ok(meta) = std::fs::symlink_metadata(&walked) {
            if meta.file_type().is_symlink() {
                links.push(format!(
                    "{}:{}.{}",
                    meta.ino(),
                    meta.ctime(),
                    meta.ctime_nsec()
                ));
            }
        }
    }
    (!links.is_empty()).then(|| format!("{} via {}", resolved.display(), links.join(",")))
}

/// Where the config files agents changed are held: `$XDG_STATE_HOME/agent-runner` (else
/// `~/.local/state/agent-runner`), the operator's, out of the agent's reach — not the
/// project's state dir, which the agent's config could name anew. `None` without either
/// variable.
fn user_dir() -> Option<PathBuf> {
    match (std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME")) {
        (Some(state), _) if Path::new(&state).is_absolute() => {
            Some(PathBuf::from(state).join("agent-runner"))
        }
        (_, Some(home)) if !home.is_empty() => {
            Some(PathBuf::from(home).join(".local/state/agent-runner"))
        }
        _ => None,
    }
}

/// What the config file at `path` is: its bytes' sha256, the inode and change time of the
/// file it resolves to (a save makes a new one, even of the same bytes) and the links on
/// its path ([`link_identity`]).
pub(crate) fn file_identity(path: &Path) -> String {
    let file = std::fs::metadata(path)
        .map(|m| format!("{}:{}.{}", m.ino(), m.ctime(), m.ctime_nsec()))
        .unwrap_or_default();
    format!(
        "{} {file} {}",
        content_identity(path),
        link_identity(path).unwrap_or_default()
    )
}

/// Holds the config file at `path` as changed by round `round_num`'s agent: every boot
/// refuses it ([`config_refusal`]) until someone saves it again.
pub(crate) fn hold_config(path: &Path, round_num: u64) {
    let Some(dir) = user_dir() else {
        tracing::warn!(
            "the config {} changed while the agent ran, but neither XDG_STATE_HOME nor HOME says where to keep that for the next start",
            path.display()
        );
        return;
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        tracing::warn!("cannot make {}: {e}", dir.display());
        return;
    }
    let mut changes = AgentChanges::load(&dir);
    let left = file_identity(path);
    if changes
        .held(Kind::Config, path)
        .is_some_and(|c| c.left == left)
    {
        return;
    }
    changes.hold(
        &dir,
        Change {
            kind: Kind::Config,
            path: path.to_path_buf(),
            left,
            round_num,
        },
    );
}

/// Why the config file at `path` must not be loaded, `None` when it may: an agent changed
/// it (the round is named) and nobody saved it since. A held entry whose file changed is
/// dropped.
pub(crate) fn config_refusal(path: &Path) -> Option<String> {
    let dir = user_dir()?;
    let mut changes = AgentChanges::load(&dir);
    changes.held(Kind::Config, path)?;
    changes.forget_changed(&dir, Kind::Config);
    let change = changes.held(Kind::Config, path)?;
    Some(format!(
        "it was replaced or written while the agent ran (round {}) and nobody saved it since, so the agent could have made it: not loaded; look at it, then save it again to use it (or remove its entry from {})",
        change.round_num,
        dir.join(FILE).display()
    ))
}

/// The sha256 of the regular file at `path` (links followed), hex; `missing` when it is not
/// one.
pub(crate) fn content_identity(path: &Path) -> String {
    match crate::tree_file::regular_file_sha256(path, crate::tree_file::Symlink::Follow) {
        Some(digest) => digest.iter().map(|b| format!("{b:02x}")).collect(),
        None => "missing".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_stays_held_until_something_else_changes_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let state = root.join("state");
        std::fs::create_dir(&state).unwrap();
        std::fs::write(root.join("key"), "KEY").unwrap();
        std::fs::write(root.join("mine.md"), "mine").unwrap();
        let prompt = root.join("main.md");
        std::os::unix::fs::symlink(root.join("key"), &prompt).unwrap();
        let left = link_identity(&prompt).unwrap();
        assert!(
            link_identity(&root.join("key")).is_none(),
            "no link, nothing"
        );
        let mut changes = AgentChanges::default();
        changes.hold(
            &state,
            Change {
                kind: Kind::PromptLink,
                path: prompt.clone(),
                left,
                round_num: 2,
            },
        );
        // Another process (the next boot) sees it, and keeps it while the link is the same.
        let mut next = AgentChanges::load(&state);
        next.forget_changed(&state, Kind::PromptLink);
        assert_eq!(next.held(Kind::PromptLink, &prompt).unwrap().round_num, 2);
        // The same link made again (by the operator): another identity, dropped for good.
        std::fs::remove_file(&prompt).unwrap();
        std::os::unix::fs::symlink(root.join("key"), &prompt).unwrap();
        next.forget_changed(&state, Kind::PromptLink);
        assert!(next.held(Kind::PromptLink, &prompt).is_none());
        assert!(AgentChanges::load(&state)
            .held(Kind::PromptLink, &prompt)
            .is_none());
        // A damaged record holds nothing.
        std::fs::write(state.join(FILE), "{").unwrap();
        assert!(AgentChanges::load(&state).changes.is_empty());
    }
}
