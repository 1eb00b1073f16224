//! The agent's *protected* paths (docs/security.md "Protected paths"): what runs later,
//! when a person opens the tree or starts a CLI in it, or what turns a CLI's own guardrails
//! off, made read-only in the agent's own mount namespace — whether it exists yet or not —
//! with every directory between the work tree's root and it pinned against rename.
//!
//! * [`PROTECTED_IN_TREE`] and [`HOOKS_WHY`]/[`INFO_WHY`]/[`REMOTES_WHY`]/[`CONFIG_WHY`] are the reviewed data, one
//!   `why` per path;
//! * [`protected_set`] finds, before the round, each path as it stands: existing (bound
//!   read-only over itself) or missing (its *first missing component* gets a placeholder,
//!   bound read-only over itself, so the agent can create neither it nor anything under it),
//!   and the ancestors to pin (each bound over itself, so a rename or removal of it fails
//!   with `EBUSY`);
//! * [`Placeholders`] makes the placeholders, journaled first in the state dir, and removes
//!   them when dropped (after the agent's round, before the supervisor looks at the tree);
//!   [`remove_leftovers`] removes those a crash left behind.

use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One protected path, relative to the work tree's root and to the work dir.
#[derive(Debug, Clone, Copy)]
pub struct ProtectedName {
    /// The path relative to the directory a CLI reads it from (`/`-separated).
    pub rel: &'static str,
    /// What runs through it, or what it turns off.
    pub why: &'static str,
}

/// Reviewed data: the files a CLI reads from the project's top (its root or the directory
/// it starts in) that run a program when a person next opens the tree or starts that CLI,
/// or that turn the CLI's own permission prompts off (issue 37; the class: a
/// `settings.json` an agent created ran hooks with the operator's rights, CVE-2026-25725).
pub const PROTECTED_IN_TREE: &[ProtectedName] = &[
    ProtectedName {
        rel: ".claude/settings.json",
        why: "Claude Code's project settings: `hooks` run commands in the operator's next session, `permissions` turn its prompts off",
    },
    ProtectedName {
        rel: ".claude/settings.local.json",
        why: "Claude Code's local project settings: the same hooks and permissions, not committed",
    },
    ProtectedName {
        rel: ".mcp.json",
        why: "project MCP servers: each is a command Claude Code starts in the operator's next session",
    },
    ProtectedName {
        rel: ".gemini/settings.json",
        why: "Gemini CLI's project settings: MCP server commands, `toolDiscoveryCommand`, hooks",
    },
    ProtectedName {
        rel: ".codex/config.toml",
        why: "Codex CLI's project config: `notify` and MCP server commands, the sandbox and approval policy",
    },
    ProtectedName {
        rel: ".envrc",
        why: "direnv runs it in the operator's shell when it enters the tree",
    },
];

/// Why the repository's hooks directory is protected.
pub const HOOKS_WHY: &str =
    "git runs its hooks in the operator's next commit, checkout, merge or push";

/// Why the repository's `info` directory is protected.
pub const INFO_WHY: &str =
    "its `exclude` hides files from the supervisor's status and the exec-surface check (and the operator's `git status`), its `attributes` give paths filters and diff drivers";

/// Why the repository's `remotes` and `branches` directories are protected.
pub const REMOTES_WHY: &str =
    "a file there defines a remote git pushes to when the config names none: a repository of the agent's, whose hooks run at the operator's push";

/// Why the directory `dir` of [`ProtectedRoots::repo_dirs`] is protected, by its name.
pub fn repo_dir_why(dir: &Path) -> &'static str {
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("info") => INFO_WHY,
        _ => REMOTES_WHY,
    }
}

/// Why the supervisor's config file is protected.
pub const CONFIG_WHY: &str =
    "the supervisor's config: the agent must not choose its own confinement or prompts";

/// Directories the scan for deeper copies never enters.
pub const SCAN_SKIPPED: &[&str] = &[".git", "node_modules", "target"];

/// Most directory entries the scan for deeper copies reads per round.
pub const SCAN_MAX_ENTRIES: usize = 20_000;

/// Most deeper copies the scan protects (each costs a few mounts).
pub const SCAN_MAX_FOUND: usize = 64;

/// Where the protected paths lie.
#[derive(Debug, Clone)]
pub struct ProtectedRoots {
    /// The work tree's root (the repository's top; the work dir outside git).
    pub tree_root: PathBuf,
    /// The directory the agent starts in.
    pub work_dir: PathBuf,
    /// The repository's hooks directories (`<common dir>/hooks`, as the supervisor's git
    /// resolved it: a `.git` *file*'s `gitdir:` followed; a configured `core.hooksPath`),
    /// when the tree is a repository. Canonical up to the tree's root or the common dir:
    /// they are walked as given, so a link on the way is found, not followed.
    pub hooks_dirs: Vec<PathBuf>,
    /// The repository's directories of rules git reads by name in the common dir — `info`
    /// (`exclude`, `attributes`, `sparse-checkout`), `remotes` and `branches` (remotes
    /// defined by files) — when the tree is a repository; walked as `hooks_dirs` are, each
    /// protected with its why ([`repo_dir_why`]).
    pub repo_dirs: Vec<PathBuf>,
    /// The supervisor's config file.
    pub config: PathBuf,
}

/// How a protected path stands before the round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// It exists (or something that is not a directory stands where a directory on its
    /// way should be): `path` is bound read-only over itself.
    Existing(PathBuf),
    /// Its first missing component gets a placeholder (a directory where the component is
    /// a directory, or the protected directory itself; else an empty file).
    Missing(Placeholder),
    /// A symbolic link stands on its way or at it, in the work tree (or is the protected
    /// path itself): never followed, the link itself is *covered* — an empty read-only
    /// file mounted over it ([`LINK_COVER`]), so the path stays protected: a write there
    /// fails with `EROFS`, a path through it with `ENOTDIR`, a removal or rename with
    /// `EBUSY` (docs/security.md "Protected paths"). Recorded each round.
    Link(PathBuf),
    /// A symbolic link on the way to a protected path outside the work tree (an absolute
    /// `core.hooksPath` beneath a linked directory): covering it would hide more than the
    /// protected path, and leaving it would leave the path writable, so the round does
    /// not start.
    LinkOutside(PathBuf),
}

/// The empty file (mode 0644) in the state dir that covers a link at or on the way to a
/// protected path ([`Target::Link`]), the same for every link.
pub const LINK_COVER: &str = "agent-link-cover";

/// A placeholder made before the round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placeholder {
    /// The first missing component.
    pub path: PathBuf,
    /// A directory (else an empty file).
    pub dir: bool,
}

/// One protected path found before the round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    /// The path protected.
    pub path: PathBuf,
    /// Its why.
    pub why: &'static str,
    /// How it stands.
    pub target: Target,
}

impl Protected {
    /// The path to bind read-only over itself (the path or its placeholder), if any.
    pub fn mount_point(&self) -> Option<&Path> {
        match &self.target {
            Target::Existing(p) => Some(p),
            Target::Missing(h) => Some(&h.path),
            Target::Link(_) | Target::LinkOutside(_) => None,
        }
    }

    /// The link to cover ([`Target::Link`]), if any.
    pub fn link(&self) -> Option<&Path> {
        match &self.target {
            Target::Link(at) => Some(at),
            _ => None,
        }
    }
}

/// Every protected path of a round and the directories to pin.
#[derive(Debug, Clone, Default)]
pub struct ProtectedSet {
    /// Each path, in the order found (duplicates removed).
    pub paths: Vec<Protected>,
    /// The directories between the tree's root (included) and each mount point, shallow
    /// first, none of them a mount point of [`ProtectedSet::paths`].
    pub pins: Vec<PathBuf>,
    /// The scan for deeper copies stopped at [`SCAN_MAX_ENTRIES`] or [`SCAN_MAX_FOUND`].
    pub scan_truncated: bool,
}

impl ProtectedSet {
    /// The placeholders to make, each once.
    pub fn placeholders(&self) -> Vec<Placeholder> {
        let mut out: Vec<Placeholder> = Vec::new();
        for p in &self.paths {
            if let Target::Missing(h) = &p.target {
                if !out.iter().any(|o| o.path == h.path) {
                    out.push(h.clone());
                }
            }
        }
        out
    }

    /// The paths bound read-only, each once.
    pub fn read_only(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for p in self.paths.iter().filter_map(Protected::mount_point) {
            if !out.iter().any(|o| o == p) {
                out.push(p.to_owned());
            }
        }
        out
    }

    /// The links covered ([`Target::Link`]), each once.
    pub fn links(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for p in self.paths.iter().filter_map(Protected::link) {
            if !out.iter().any(|o| o == p) {
                out.push(p.to_owned());
            }
        }
        out
    }
}

/// How `path` stands: walking from `root` (which must exist), the first component that is
/// missing, a link, or not a directory where one is needed. `dir`: the protected path is
/// itself a directory. A path not under `root` is walked from `/`.
pub fn target_of(root: &Path, path: &Path, dir: bool) -> Target {
    let (mut at, rest) = match path.strip_prefix(root) {
        Ok(rest) => (root.to_path_buf(), rest.to_path_buf()),
        Err(_) => (
            PathBuf::from("/"),
            path.strip_prefix("/").unwrap_or(path).to_owned(),
        ),
    };
    let parts: Vec<Component> = rest.components().collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let last = i + 1 == parts.len();
        match std::fs::symlink_metadata(&at) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Target::Missing(Placeholder {
                    path: at,
                    dir: !last || dir,
                });
            }
            Err(_) => return Target::Existing(at),
            Ok(m) if m.file_type().is_symlink() => return Target::Link(at),
            Ok(m) if !last && !m.is_dir() => return Target::Existing(at),
            Ok(_) => {}
        }
    }
    Target::Existing(at)
}

/// The protected paths of `roots` as they stand now, with the deeper copies the bounded
/// scan finds and the directories to pin.
pub fn protected_set(roots: &ProtectedRoots) -> ProtectedSet {
    let root = &roots.tree_root;
    let mut set = ProtectedSet::default();
    let add = |set: &mut ProtectedSet, path: PathBuf, why: &'static str, dir: bool| {
        if set.paths.iter().any(|p| p.path == path) {
            return;
        }
        let target = match target_of(root, &path, dir) {
            // Outside the tree only the protected path itself is covered: a link above it
            // may be a system directory's (`/var/run`).
            Target::Link(at) if !at.starts_with(root) && at != path => Target::LinkOutside(at),
            other => other,
        };
        set.paths.push(Protected { path, why, target });
    };
    add(&mut set, roots.config.clone(), CONFIG_WHY, false);
    for hooks in &roots.hooks_dirs {
        add(&mut set, hooks.clone(), HOOKS_WHY, true);
    }
    for dir in &roots.repo_dirs {
        add(&mut set, dir.clone(), repo_dir_why(dir), true);
    }
    for base in [root, &roots.work_dir] {
        for name in PROTECTED_IN_TREE {
            add(&mut set, base.join(name.rel), name.why, false);
        }
    }
    let (found, truncated) = deeper_copies(root);
    set.scan_truncated = truncated;
    for (path, why) in found {
        add(&mut set, path, why, false);
    }
    let mut pins: Vec<PathBuf> = Vec::new();
    let mut read_only = set.read_only();
    read_only.extend(set.links());
    for point in &read_only {
        let Ok(rest) = point.strip_prefix(root) else {
            continue;
        };
        let mut dir = root.clone();
        let mut chain = vec![dir.clone()];
        let parts: Vec<Component> = rest.components().collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            dir.push(part);
            chain.push(dir.clone());
        }
        for d in chain {
            if !pins.contains(&d) && !read_only.contains(&d) {
                pins.push(d);
            }
        }
    }
    pins.sort_by_key(|p| p.components().count());
    set.pins = pins;
    set
}

/// Existing copies of [`PROTECTED_IN_TREE`] in directories below `root` (not `root`
/// itself), found breadth-first without following links and never inside
/// [`SCAN_SKIPPED`], within [`SCAN_MAX_ENTRIES`]; of more than [`SCAN_MAX_FOUND`], the
/// oldest by `ctime` (which no process can set back): copies an agent made as decoys in
/// an earlier round are newer than the operator's, so they cannot crowd them out. Whether
/// either cap cut it short.
fn deeper_copies(root: &Path) -> (Vec<(PathBuf, &'static str)>, bool) {
    use std::os::unix::fs::MetadataExt;
    let mut found: Vec<((i64, i64), PathBuf, &'static str)> = Vec::new();
    let mut queue = std::collections::VecDeque::from([root.to_path_buf()]);
    let mut entries = 0usize;
    let mut truncated = false;
    'scan: while let Some(dir) = queue.pop_front() {
        if dir != root {
            for name in PROTECTED_IN_TREE {
                let path = dir.join(name.rel);
                if let Ok(meta) = std::fs::symlink_metadata(&path) {
                    found.push(((meta.ctime(), meta.ctime_nsec()), path, name.why));
                }
            }
        }
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            entries += 1;
            if entries > SCAN_MAX_ENTRIES {
                truncated = true;
                break 'scan;
            }
            let skipped = SCAN_SKIPPED.iter().any(|s| entry.file_name() == *s);
            if !skipped && entry.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push_back(entry.path());
            }
        }
    }
    if found.len() > SCAN_MAX_FOUND {
        truncated = true;
        // Stable: among copies of one age, the shallower first.
        found.sort_by_key(|(ctime, ..)| *ctime);
        found.truncate(SCAN_MAX_FOUND);
    }
    let copies = found
        .into_iter()
        .map(|(_, path, why)| (path, why))
        .collect();
    (copies, truncated)
}

/// The `protected_paths` layer of `doctor` and `peek` (on where the agent gets a mount
/// namespace of its own): the paths, read-only to the agent whether they exist or not.
pub fn layer(on: bool) -> crate::common::layers::Layer {
    let names: Vec<&str> = PROTECTED_IN_TREE.iter().map(|n| n.rel).collect();
    let list = format!(
        "the git dir's hooks/, the config file, and at the work tree's root and the work dir: {}; existing copies deeper (scan of at most {SCAN_MAX_ENTRIES} entries, {SCAN_MAX_FOUND} copies, skipping {})",
        names.join(", "),
        SCAN_SKIPPED.join(", ")
    );
    if on {
        crate::common::layers::layer(
            "protected_paths",
            true,
            format!("read-only in its mount namespace, missing ones too (placeholders), a symbolic link there covered by an empty read-only file (never followed; recorded each round), their directories pinned against rename: {list}"),
        )
    } else {
        crate::common::layers::layer(
            "protected_paths",
            false,
            format!("no mount namespace of its own: writable to the agent: {list}"),
        )
    }
}

/// The placeholders of one round, journaled in the state dir before they were made;
/// dropping this removes each that is still empty, then the journal.
#[derive(Debug)]
pub struct Placeholders {
    made: Vec<Placeholder>,
    journal: PathBuf,
    journaled: bool,
}

/// The journal's file name in the state dir.
pub const JOURNAL: &str = "agent-placeholders.json";

impl Placeholders {
    /// Writes `wanted` to `<state_dir>/`[`JOURNAL`] (whole, by rename), then makes each
    /// placeholder exclusively (an empty file mode 0444, or a directory mode 0555, never
    /// through a link).
    ///
    /// # Errors
    /// The journal could not be written, or a placeholder made (one appeared meanwhile:
    /// `EEXIST`); those made are removed again.
    pub fn make(state_dir: &Path, wanted: &[Placeholder]) -> std::io::Result<Self> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let journal = state_dir.join(JOURNAL);
        let mut out = Placeholders {
            made: Vec::new(),
            journal,
            journaled: false,
        };
        if wanted.is_empty() {
            return Ok(out);
        }
        write_journal(&out.journal, wanted)?;
        out.journaled = true;
        for h in wanted {
            let made = if h.dir {
                std::fs::DirBuilder::new().mode(0o555).create(&h.path)
            } else {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o444)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&h.path)
                    .map(drop)
            };
            match made {
                Ok(()) => out.made.push(h.clone()),
                Err(e) => {
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("placeholder {}: {e}", h.path.display()),
                    ))
                }
            }
        }
        Ok(out)
    }

    /// The placeholders made.
    pub fn made(&self) -> &[Placeholder] {
        &self.made
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        remove_empty(&self.made);
        if self.journaled {
            let _ = std::fs::remove_file(&self.journal);
        }
    }
}

/// Removes the placeholders a crashed round left, as named in `<state_dir>/`[`JOURNAL`],
/// each only while still empty (and of its kind), then the journal; returns those
/// removed. Call before the first round of a `serve` or `round`.
pub fn remove_leftovers(state_dir: &Path) -> Vec<PathBuf> {
    let journal = state_dir.join(JOURNAL);
    let Ok(text) = std::fs::read(&journal) else {
        return Vec::new();
    };
    let listed: Vec<Placeholder> = serde_json::from_slice(&text).unwrap_or_default();
    let removed = remove_empty(&listed);
    let _ = std::fs::remove_file(&journal);
    removed
}

fn write_journal(journal: &Path, wanted: &[Placeholder]) -> std::io::Result<()> {
    let tmp = journal.with_extension("json.tmp");
    let _ = std::fs::remove_file(&tmp);
    let text = serde_json::to_vec(wanted).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, journal)
}

/// Removes each of `placeholders` that is still an empty file or an empty directory (never
/// through a link); returns those removed.
fn remove_empty(placeholders: &[Placeholder]) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for h in placeholders {
        let Ok(m) = std::fs::symlink_metadata(&h.path) else {
            continue;
        };
        let gone = if h.dir && m.is_dir() {
            std::fs::remove_dir(&h.path).is_ok()
        } else if !h.dir && m.is_file() && m.len() == 0 {
            std::fs::remove_file(&h.path).is_ok()
        } else {
            false
        };
        if gone {
            removed.push(h.path.clone());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(root: &Path) -> ProtectedRoots {
        ProtectedRoots {
            tree_root: root.to_owned(),
            work_dir: root.to_owned(),
            hooks_dirs: vec![root.join(".git/hooks"), root.join(".husky/_")],
            repo_dirs: vec![root.join(".git/info"), root.join(".git/remotes")],
            config: root.join("agent-runner.toml"),
        }
    }

    #[test]
    fn each_protected_name_has_its_why_and_is_relative() {
        for name in PROTECTED_IN_TREE {
            assert!(!name.why.is_empty(), "{}", name.rel);
            assert!(Path::new(name.rel).is_relative(), "{}", name.rel);
        }
        let rels: Vec<&str> = PROTECTED_IN_TREE.iter().map(|n| n.rel).collect();
        for rel in [
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".mcp.json",
            ".gemini/settings.json",
            ".codex/config.toml",
            ".envrc",
        ] {
            assert!(rels.contains(&rel), "{rel}");
        }
    }

    #[test]
    fn the_layer_names_every_protected_path_on_and_off() {
        for on in [true, false] {
            let l = layer(on);
            assert_eq!((l.name, l.on), ("protected_paths", on));
            for name in PROTECTED_IN_TREE {
                assert!(l.detail.contains(name.rel), "{}: {}", name.rel, l.detail);
            }
            assert!(l.detail.contains("hooks/"), "{}", l.detail);
        }
    }

    #[test]
    fn the_first_missing_component_is_found() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        // Missing at the top: a directory on the way.
        assert_eq!(
            target_of(root, &root.join(".claude/settings.json"), false),
            Target::Missing(Placeholder {
                path: root.join(".claude"),
                dir: true
            })
        );
        // The directory exists: the file itself.
        std::fs::create_dir(root.join(".claude")).unwrap();
        assert_eq!(
            target_of(root, &root.join(".claude/settings.json"), false),
            Target::Missing(Placeholder {
                path: root.join(".claude/settings.json"),
                dir: false
            })
        );
        // A protected directory missing at the end is a directory.
        std::fs::create_dir(root.join(".git")).unwrap();
        assert_eq!(
            target_of(root, &root.join(".git/hooks"), true),
            Target::Missing(Placeholder {
                path: root.join(".git/hooks"),
                dir: true
            })
        );
        // Existing.
        std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
        assert_eq!(
            target_of(root, &root.join(".claude/settings.json"), false),
            Target::Existing(root.join(".claude/settings.json"))
        );
        // A file where a directory is needed is itself protected.
        std::fs::write(root.join(".gemini"), "").unwrap();
        assert_eq!(
            target_of(root, &root.join(".gemini/settings.json"), false),
            Target::Existing(root.join(".gemini"))
        );
        // A link on the way is not followed.
        std::os::unix::fs::symlink("/tmp", root.join(".codex")).unwrap();
        assert_eq!(
            target_of(root, &root.join(".codex/config.toml"), false),
            Target::Link(root.join(".codex"))
        );
        // Outside the root: walked from `/`.
        let outside = tempfile::tempdir().unwrap();
        assert_eq!(
            target_of(root, &outside.path().join("a/b"), false),
            Target::Missing(Placeholder {
                path: outside.path().join("a"),
                dir: true
            })
        );
    }

    #[test]
    fn a_link_in_the_tree_is_covered_and_one_above_a_path_outside_is_not() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("tree");
        std::fs::create_dir_all(root.join("shared")).unwrap();
        std::fs::write(root.join("agent-runner.toml"), "").unwrap();
        std::os::unix::fs::symlink("envrc.real", root.join(".envrc")).unwrap();
        std::os::unix::fs::symlink("shared", root.join(".claude")).unwrap();
        // Outside the tree: the hooks dir itself a link, and one beneath a linked directory.
        let outside = t.path().join("outside");
        std::fs::create_dir_all(outside.join("real/hooks")).unwrap();
        std::os::unix::fs::symlink(outside.join("real/hooks"), outside.join("hooks")).unwrap();
        std::os::unix::fs::symlink(outside.join("real"), outside.join("linked")).unwrap();
        let mut r = roots(&root);
        r.hooks_dirs = vec![outside.join("hooks")];
        let set = protected_set(&r);
        let links = set.links();
        assert_eq!(
            links,
            [
                outside.join("hooks"),
                root.join(".claude"),
                root.join(".envrc")
            ]
        );
        // Never bound as a path, and pinned beneath the root like a mount point.
        for link in &links {
            assert!(!set.read_only().contains(link), "{}", link.display());
        }
        assert!(set.pins.contains(&root));
        assert!(set
            .paths
            .iter()
            .all(|p| !matches!(p.target, Target::LinkOutside(_))));
        r.hooks_dirs = vec![outside.join("linked/hooks")];
        let set = protected_set(&r);
        assert!(set
            .paths
            .iter()
            .any(|p| p.target == Target::LinkOutside(outside.join("linked"))));
        assert!(!set.links().contains(&outside.join("linked")));
    }

    #[test]
    fn ancestors_are_pinned_shallow_first_and_deeper_copies_found() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join("agent-runner.toml"), "").unwrap();
        std::fs::create_dir_all(root.join("sub/deep/.claude")).unwrap();
        std::fs::write(root.join("sub/deep/.claude/settings.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join("node_modules/x")).unwrap();
        std::fs::write(root.join("node_modules/x/.envrc"), "").unwrap();
        let set = protected_set(&roots(root));
        let ro = set.read_only();
        assert!(ro.contains(&root.join(".git/hooks")));
        // A configured `core.hooksPath` that does not exist yet: its first missing
        // component.
        assert!(ro.contains(&root.join(".husky")), "{ro:?}");
        assert!(ro.contains(&root.join("agent-runner.toml")));
        assert!(ro.contains(&root.join(".claude")), "{ro:?}");
        assert!(ro.contains(&root.join(".mcp.json")), "{ro:?}");
        assert!(ro.contains(&root.join("sub/deep/.claude/settings.json")));
        assert!(!ro.iter().any(|p| p.starts_with(root.join("node_modules"))));
        assert!(!set.scan_truncated);
        assert_eq!(set.pins[0], root);
        for dir in [".git", "sub", "sub/deep", "sub/deep/.claude"] {
            assert!(set.pins.contains(&root.join(dir)), "{dir}: {:?}", set.pins);
        }
        // `.claude` is a placeholder bound read-only: not pinned as well.
        assert!(!set.pins.contains(&root.join(".claude")));
        let depths: Vec<usize> = set.pins.iter().map(|p| p.components().count()).collect();
        assert!(depths.windows(2).all(|w| w[0] <= w[1]), "{:?}", set.pins);
        // A work dir below the root: the names there too, its directories pinned.
        let mut below = roots(root);
        below.work_dir = root.join("sub");
        let ro = protected_set(&below).read_only();
        assert!(ro.contains(&root.join("sub/.envrc")), "{ro:?}");
        assert!(ro.contains(&root.join("sub/.gemini")), "{ro:?}");
        assert!(ro.contains(&root.join(".envrc")), "{ro:?}");
        // The two `.claude` files share one placeholder.
        let holders = set.placeholders();
        assert_eq!(
            holders
                .iter()
                .filter(|h| h.path == root.join(".claude"))
                .count(),
            1
        );
    }

    #[test]
    fn placeholders_are_journaled_removed_when_empty_and_leftovers_cleared() {
        let t = tempfile::tempdir().unwrap();
        let (root, state) = (t.path().join("tree"), t.path().join("state"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        let wanted = vec![
            Placeholder {
                path: root.join(".mcp.json"),
                dir: false,
            },
            Placeholder {
                path: root.join(".claude"),
                dir: true,
            },
        ];
        let made = Placeholders::make(&state, &wanted).unwrap();
        assert!(state.join(JOURNAL).exists());
        assert_eq!(std::fs::metadata(root.join(".mcp.json")).unwrap().len(), 0);
        assert!(root.join(".claude").is_dir());
        drop(made);
        assert!(!root.join(".mcp.json").exists());
        assert!(!root.join(".claude").exists());
        assert!(!state.join(JOURNAL).exists());

        // A crash: the journal stays; only what is still empty is removed next time.
        let made = Placeholders::make(&state, &wanted).unwrap();
        std::mem::forget(made);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            root.join(".mcp.json"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        std::fs::write(root.join(".mcp.json"), "{\"operator\": 1}").unwrap();
        let removed = remove_leftovers(&state);
        assert_eq!(removed, [root.join(".claude")]);
        assert_eq!(
            std::fs::read_to_string(root.join(".mcp.json")).unwrap(),
            "{\"operator\": 1}"
        );
        assert!(!state.join(JOURNAL).exists());
        assert!(remove_leftovers(&state).is_empty());

        // A placeholder that appeared meanwhile fails the round's preparation.
        let clash = Placeholders::make(&state, &wanted[..1]);
        assert!(clash.is_err());
    }
}
