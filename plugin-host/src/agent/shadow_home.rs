//! The agent's *shadow home* (docs/security.md "The shadow CLI home"): a per-project copy
//! of its CLI's state ([`AGENT_STATE`]: `~/.claude`, `~/.codex`, …) in the state dir,
//! `<state_dir>/`[`SHADOW_DIR`]`/<cli>/`, bound over the real paths in the agent's own
//! mount namespace, so the CLI sees its usual `~/.claude` while nothing it writes there
//! (a hook in `settings.json`, `notify` in `config.toml`) reaches the operator's own,
//! unconfined sessions.
//!
//! * [`SHADOW_SEED`] is the reviewed data: what is copied from the operator's state, when
//!   ([`Seed`]), and why; everything else (sessions, transcripts, logs, caches) is the
//!   shadow's own and never copied either way;
//! * a login's credentials file is the one exception ([`Seed::SharedLogin`]): the
//!   operator's real file is bound into the shadow, read-write, so a token the CLI
//!   refreshes lands once, in one place;
//! * nothing of the shadow is ever copied back to the operator's home.

use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::agent::policy::AGENT_STATE;

/// The shadow homes' directory in the state dir (mode 0700), one subdirectory per CLI.
pub const SHADOW_DIR: &str = "agent-home";

/// Most files a [`Seed::EachRound`] or [`Seed::Once`] directory copy takes (what is left
/// over is not copied; the copy is logged as cut short by its caller's error).
pub const SEED_MAX_FILES: usize = 2_000;

/// Most bytes such a copy takes in all (16 MiB).
pub const SEED_MAX_BYTES: u64 = 16 << 20;

/// When an entry of [`SHADOW_SEED`] is copied from the operator's home into the shadow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seed {
    /// Before every round, replacing the shadow's copy (removed when the operator's is
    /// gone): the operator's settings, as they are now. What the agent changed there is
    /// undone.
    EachRound,
    /// Only when the shadow has none: state the CLI itself keeps changing (account state,
    /// ids), which a re-copy would clobber. For a JSON object, the listed top-level keys
    /// are left out of the copy.
    Once(&'static [&'static str]),
    /// The login's credentials (a file, or kimi's directory): the operator's own is bound
    /// into the shadow read-write, so a refreshed token lands in the operator's file (one
    /// source of truth). Nothing is bound when the operator has none.
    SharedLogin,
}

/// One entry of [`SHADOW_SEED`].
#[derive(Debug, Clone, Copy)]
pub struct ShadowEntry {
    /// The CLI ([`crate::agent::policy::AgentState::cli`]).
    pub cli: &'static str,
    /// The path relative to the home directory, inside one of the CLI's
    /// [`crate::agent::policy::AgentState::paths`] (or one of them): where the shadow
    /// holds it.
    pub rel: &'static str,
    /// Where the operator's copy lies, relative to the home directory: `rel`, but for a
    /// file the CLI reads elsewhere once [`SHADOW_ENV`] moves it (claude's
    /// `~/.claude.json`, read as `$CLAUDE_CONFIG_DIR/.claude.json`).
    pub from: &'static str,
    /// When it is copied.
    pub seed: Seed,
    /// Why the agent's CLI needs it.
    pub why: &'static str,
}

const fn entry(cli: &'static str, rel: &'static str, seed: Seed, why: &'static str) -> ShadowEntry {
    entry_from(cli, rel, rel, seed, why)
}

const fn entry_from(
    cli: &'static str,
    rel: &'static str,
    from: &'static str,
    seed: Seed,
    why: &'static str,
) -> ShadowEntry {
    ShadowEntry {
        cli,
        rel,
        from,
        seed,
        why,
    }
}

/// One variable of [`SHADOW_ENV`].
#[derive(Debug, Clone, Copy)]
pub struct ShadowVariable {
    /// The CLI ([`crate::agent::policy::AgentState::cli`]).
    pub cli: &'static str,
    /// The variable's name.
    pub name: &'static str,
    /// Its value: this path under the home directory (one of the CLI's
    /// [`crate::agent::policy::AgentState::paths`], which the shadow is bound over); set
    /// only when that path is bound.
    pub rel: &'static str,
    /// Why the CLI needs it under the shadow.
    pub why: &'static str,
}

/// Reviewed data: variables the agent's CLI gets while its shadow is bound, so that all it
/// writes lands inside a bound directory. A file bound over a file can be rewritten in
/// place, but the siblings a CLI makes next to it (a lock, a temporary file renamed over
/// it) would be made in the home directory, which no grant lets the agent write: each
/// refused, and recorded as `agent_sandbox_denied`, every round.
pub const SHADOW_ENV: &[ShadowVariable] = &[ShadowVariable {
    cli: "claude",
    name: "CLAUDE_CONFIG_DIR",
    rel: ".claude",
    why: "Claude Code keeps ~/.claude.json beside the home's other files, locked by a ~/.claude.json.lock directory and saved through ~/.claude.json.tmp.<pid>.<time> renamed over it; with CLAUDE_CONFIG_DIR (the same ~/.claude it uses anyway for its credentials, settings and sessions) it keeps the file, its lock and its temporary files in that directory instead",
}];

/// Reviewed data: what each preset CLI's shadow takes from the operator's home (measured
/// with the pinned CLIs of tests/agent-clis/versions.env). Not listed, so never copied:
/// sessions and transcripts (`~/.claude/projects`, `~/.codex/sessions`, `~/.gemini/tmp`,
/// `~/.kimi/sessions`, `~/.pi/agent/sessions`), histories, logs, caches — other projects'
/// work, and the shadow keeps its own for resume.
pub const SHADOW_SEED: &[ShadowEntry] = &[
    entry("claude", ".claude/settings.json", Seed::EachRound, "the operator's user settings: model, env, permissions, hooks (which then run confined)"),
    entry("claude", ".claude/CLAUDE.md", Seed::EachRound, "the operator's own instructions for every project"),
    entry("claude", ".claude/commands", Seed::EachRound, "the operator's slash commands"),
    entry("claude", ".claude/agents", Seed::EachRound, "the operator's subagents"),
    entry("claude", ".claude/skills", Seed::EachRound, "the operator's skills"),
    entry("claude", ".claude/.credentials.json", Seed::SharedLogin, "the OAuth login, refreshed in place by Claude Code"),
    entry("claude", ".claude.json", Seed::Once(&["projects"]), "the same account state at the path claude reads without CLAUDE_CONFIG_DIR, so the file bound over ~/.claude.json is never empty (claude refuses to start on an empty one)"),
    entry("claude", ".claude.json.backup", Seed::Once(&["projects"]), "claude's own backup of ~/.claude.json"),
    entry_from("claude", ".claude/.claude.json", ".claude.json", Seed::Once(&["projects"]), "account state (onboarding done, the OAuth account, user id) that claude needs to start and resume, read from $CLAUDE_CONFIG_DIR (SHADOW_ENV); `projects` is left out: other projects' settings, MCP servers and prompt history"),
    entry("codex", ".codex/config.toml", Seed::EachRound, "the operator's settings: model, providers, profiles"),
    entry("codex", ".codex/AGENTS.md", Seed::EachRound, "the operator's own instructions for every project"),
    entry("codex", ".codex/prompts", Seed::EachRound, "the operator's custom prompts"),
    entry("codex", ".codex/auth.json", Seed::SharedLogin, "the ChatGPT login (or API key), refreshed in place by Codex CLI"),
    entry("gemini", ".gemini/settings.json", Seed::EachRound, "the operator's settings: auth type, model, MCP servers"),
    entry("gemini", ".gemini/GEMINI.md", Seed::EachRound, "the operator's own instructions for every project"),
    entry("gemini", ".gemini/commands", Seed::EachRound, "the operator's custom commands"),
    entry("gemini", ".gemini/google_accounts.json", Seed::EachRound, "which Google account is logged in"),
    entry("gemini", ".gemini/installation_id", Seed::Once(&[]), "the installation's id"),
    entry("gemini", ".gemini/oauth_creds.json", Seed::SharedLogin, "the Google OAuth login, refreshed in place by Gemini CLI"),
    entry("gemini", ".gemini/gemini-credentials.json", Seed::SharedLogin, "the Google OAuth login where GEMINI_FORCE_ENCRYPTED_FILE_STORAGE=true keeps it (encrypted), rewritten in place"),
    entry("aider", ".aider.conf.yml", Seed::EachRound, "the operator's settings (model, keys); `lint-cmd`/`test-cmd` planted by the agent are undone"),
    entry("aider", ".aider/analytics.json", Seed::EachRound, "the analytics id and the operator's opt-out"),
    entry("aider", ".aider/oauth-keys.env", Seed::SharedLogin, "the OpenRouter key aider's OAuth login saved"),
    entry("kimi", ".kimi/config.toml", Seed::EachRound, "the operator's settings: providers, models"),
    entry("kimi", ".kimi/credentials", Seed::SharedLogin, "the Kimi Code OAuth login: a directory, since kimi refreshes by a temporary file renamed over the token file, next to its lock file"),
    entry("pi", ".pi/agent/settings.json", Seed::EachRound, "the operator's settings: provider, model"),
    entry("pi", ".pi/agent/models.json", Seed::EachRound, "the operator's custom providers and models"),
    entry("pi", ".pi/agent/AGENTS.md", Seed::EachRound, "the operator's own instructions for every project"),
    entry("pi", ".pi/agent/prompts", Seed::EachRound, "the operator's prompt templates"),
    entry("pi", ".pi/agent/auth.json", Seed::SharedLogin, "API keys and OAuth logins, refreshed in place by pi"),
];

/// What the supervisor removes of a matched entry of the shadow after a round
/// ([`SHADOW_PRUNE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prune {
    /// A session's file or directory: removed unless its name holds the id (or the id's
    /// first 8 characters, as gemini's file names do) of a session a later round may
    /// resume, or it is the newest match (the session a CLI that goes on with its last one
    /// resumes, and the one an operator reads after a run without resume).
    OldSessions,
    /// Everything: a spool or cache no later round reads (telemetry that could not be
    /// sent, shell snapshots).
    All,
}

/// One entry of [`SHADOW_PRUNE`].
#[derive(Debug, Clone, Copy)]
pub struct PruneEntry {
    /// The CLI ([`crate::agent::policy::AgentState::cli`]).
    pub cli: &'static str,
    /// The entries matched, relative to the shadow's root: `/`-separated names, `*` for
    /// any name (a directory when not the last component).
    pub pattern: &'static str,
    /// What is removed of them.
    pub prune: Prune,
    /// What they are and why a later round does not need them.
    pub why: &'static str,
}

const fn prune(
    cli: &'static str,
    pattern: &'static str,
    prune: Prune,
    why: &'static str,
) -> PruneEntry {
    PruneEntry {
        cli,
        pattern,
        prune,
        why,
    }
}

/// Reviewed data: what the supervisor prunes of each CLI's shadow after every round
/// (docs/operations.md, "The agent's CLI state on disk"), so a CLI's own state does not
/// grow for ever under an unattended loop: transcripts of sessions no round resumes
/// again, and spools nothing reads. Layouts measured with the pinned CLIs of
/// tests/agent-clis/versions.env. Never the seeded entries ([`SHADOW_SEED`]).
pub const SHADOW_PRUNE: &[PruneEntry] = &[
    prune("claude", ".claude/projects/*/*", Prune::OldSessions, "transcripts: <project>/<session>.jsonl and <project>/<session>/ (subagents, tool results)"),
    prune("claude", ".claude/todos/*", Prune::OldSessions, "each session's todo list (<session>-agent-<session>.json)"),
    prune("claude", ".claude/file-history/*", Prune::OldSessions, "each session's copies of the files it edited, for rewind"),
    prune("claude", ".claude/session-env/*", Prune::OldSessions, "each session's environment"),
    prune("claude", ".claude/debug/*", Prune::OldSessions, "each session's debug log"),
    prune("claude", ".claude/telemetry/*", Prune::All, "telemetry spooled when it could not be sent (one file a round without network; 188 MiB in a 20-minute run)"),
    prune("claude", ".claude/shell-snapshots/*", Prune::All, "the shell's environment captured at each start, made again by the next"),
    prune("codex", ".codex/sessions/*/*/*/*", Prune::OldSessions, "rollouts: sessions/<yyyy>/<mm>/<dd>/rollout-<time>-<session>.jsonl; `resume --last` takes the newest"),
    prune("codex", ".codex/thread_history_1.sqlite", Prune::All, "every session's turns and items, a projection codex rebuilds from the live rollout (`resume --last` goes on without it): one row a round, kept for every session ever run"),
    prune("codex", ".codex/thread_history_1.sqlite-wal", Prune::All, "its write-ahead log"),
    prune("codex", ".codex/thread_history_1.sqlite-shm", Prune::All, "its shared-memory index"),
    prune("gemini", ".gemini/tmp/*/chats/*", Prune::OldSessions, "chats: tmp/<project>/chats/session-<time>-<session's first 8>.json"),
    prune("kimi", ".kimi/sessions/*/*", Prune::OldSessions, "sessions: sessions/<work dir>/<session>/"),
    prune("pi", ".pi/agent/sessions/*/*", Prune::OldSessions, "sessions: sessions/<work dir>/<time>_<session>.jsonl; `--continue` takes the newest"),
];

/// One bind mount of the agent's mount namespace: `source` bound over `target` (with the
/// mounts below it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShadowBind {
    /// What is seen.
    pub source: PathBuf,
    /// Where.
    pub target: PathBuf,
}

/// A CLI's shadow home, seeded for a round.
#[derive(Debug, Clone, Default)]
pub struct ShadowHome {
    /// `<state_dir>/agent-home/<cli>`.
    pub root: PathBuf,
    /// In order: each shared login bound into the shadow, then each shadowed state path
    /// bound over the real one.
    pub binds: Vec<ShadowBind>,
    /// The shadow's paths bound over the real ones: what the agent writes (its Landlock
    /// grants name these, never the real paths).
    pub writable: Vec<PathBuf>,
    /// [`SHADOW_ENV`]'s variables for the agent (name, value), those whose path is bound.
    pub env: Vec<(String, String)>,
}

/// `<state_dir>/agent-home/<cli>`.
pub fn shadow_root(state_dir: &Path, cli: &str) -> PathBuf {
    state_dir.join(SHADOW_DIR).join(cli)
}

/// Prepares the shadow of `cli`'s state under `home` for a round: makes
/// `<state_dir>/agent-home/<cli>` (mode 0700), copies [`SHADOW_SEED`] as each entry's
/// [`Seed`] says, makes the shadow's counterpart of each existing real state path (a
/// directory 0700 or a file 0600) and the mount point of each shared login. `None` for a
/// CLI without [`AGENT_STATE`]. The real home is only read.
///
/// # Errors
/// A directory or file of the shadow cannot be made or copied (the round's spawn fails).
pub fn prepare(state_dir: &Path, home: &Path, cli: &str) -> std::io::Result<Option<ShadowHome>> {
    let Some(state) = AGENT_STATE.iter().find(|s| s.cli == cli) else {
        return Ok(None);
    };
    let top = state_dir.join(SHADOW_DIR);
    make_dir(&top)?;
    let root = shadow_root(state_dir, cli);
    make_dir(&root)?;
    let mut out = ShadowHome {
        root: root.clone(),
        ..ShadowHome::default()
    };
    let mut logins = Vec::new();
    for e in SHADOW_SEED.iter().filter(|e| e.cli == cli) {
        let real = home.join(e.from);
        let shadow = root.join(e.rel);
        real_dirs_to(&root, &shadow)?;
        match e.seed {
            Seed::EachRound => {
                if std::fs::symlink_metadata(&shadow).is_ok() {
                    remove(&shadow)?;
                }
                if real.exists() {
                    copy_in(&real, &shadow, &[])?;
                }
            }
            Seed::Once(drop_keys) => {
                if std::fs::symlink_metadata(&shadow).is_err() && real.exists() {
                    copy_in(&real, &shadow, drop_keys)?;
                }
            }
            Seed::SharedLogin => {
                let source = std::fs::metadata(&real)
                    .ok()
                    .and_then(|meta| Some((meta, real.canonicalize().ok()?)));
                let Some((meta, source)) = source else {
                    // The operator has none (any more): a former, empty mount point goes.
                    if std::fs::symlink_metadata(&shadow).is_ok_and(|m| m.is_file() && m.len() == 0)
                    {
                        std::fs::remove_file(&shadow)?;
                    }
                    continue;
                };
                ensure_kind(&shadow, meta.is_dir())?;
                logins.push(ShadowBind {
                    source,
                    target: shadow,
                });
            }
        }
    }
    for rel in state.paths {
        let real = home.join(rel);
        let shadow = root.join(rel);
        if let Ok(meta) = std::fs::metadata(&real) {
            real_dirs_to(&root, &shadow)?;
            ensure_kind(&shadow, meta.is_dir())?;
        }
    }
    out.binds.extend(logins);
    for rel in state.paths {
        let real = home.join(rel);
        let shadow = root.join(rel);
        if std::fs::metadata(&real).is_err() {
            continue;
        }
        let target = real.canonicalize()?;
        out.binds.push(ShadowBind {
            source: shadow.clone(),
            target,
        });
        out.writable.push(shadow);
        for v in SHADOW_ENV.iter().filter(|v| v.cli == cli && v.rel == *rel) {
            out.env
                .push((v.name.to_owned(), real.to_string_lossy().into_owned()));
        }
    }
    Ok(Some(out))
}

/// Makes `dir` (mode 0700) when missing; an existing one keeps its mode but is made
/// 0700 (the shadow holds logins).
fn make_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists && dir.is_dir() => {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        }
        Err(e) => Err(e),
    }
}

/// Makes an empty directory (0700) or an empty file (0600, returned open) at `path`,
/// never through a link; its parent must exist ([`real_dirs_to`]).
fn make_like(path: &Path, dir: bool) -> std::io::Result<Option<std::fs::File>> {
    if dir {
        return std::fs::DirBuilder::new()
            .mode(0o700)
            .create(path)
            .map(|()| None);
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map(Some)
}

/// Makes every directory from `root` (which exists) down to `path`'s parent a real
/// directory: a missing one is made (0700), and a link or a file where a directory
/// belongs — which the agent may have left in its shadow — is removed first, so nothing
/// the supervisor writes into the shadow follows a link out of it.
fn real_dirs_to(root: &Path, path: &Path) -> std::io::Result<()> {
    let rest = path
        .parent()
        .and_then(|p| p.strip_prefix(root).ok())
        .ok_or_else(|| std::io::Error::from(ErrorKind::InvalidInput))?;
    let mut at = root.to_path_buf();
    for part in rest.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => std::fs::remove_file(&at)?,
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        make_like(&at, true)?;
    }
    Ok(())
}

/// Makes `path` (whose parent is a real directory) a directory or a regular file as `dir`
/// says: kept when it is one, else replaced by an empty one (never through a link).
fn ensure_kind(path: &Path, dir: bool) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() || m.is_dir() != dir || !(dir || m.is_file()) => {
            remove(path)?;
        }
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    make_like(path, dir).map(drop)
}

/// Removes `path` (a directory with its content; never through a link).
fn remove(path: &Path) -> std::io::Result<()> {
    let m = std::fs::symlink_metadata(path)?;
    if m.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

/// Copies the operator's `real` (a file or a directory, links followed as the CLI would)
/// to `shadow` (files 0600, directories 0700), at most [`SEED_MAX_FILES`] files and
/// [`SEED_MAX_BYTES`] bytes; a file that is a JSON object loses `drop_keys`.
fn copy_in(real: &Path, shadow: &Path, drop_keys: &[&str]) -> std::io::Result<()> {
    let mut budget = (SEED_MAX_FILES, SEED_MAX_BYTES);
    copy_rec(real, shadow, drop_keys, &mut budget, 0)
}

fn copy_rec(
    real: &Path,
    shadow: &Path,
    drop_keys: &[&str],
    budget: &mut (usize, u64),
    depth: u32,
) -> std::io::Result<()> {
    let meta = std::fs::metadata(real)?;
    if meta.is_dir() {
        if depth > 8 {
            return Ok(());
        }
        make_like(shadow, true)?;
        for item in std::fs::read_dir(real)? {
            let item = item?;
            copy_rec(
                &item.path(),
                &shadow.join(item.file_name()),
                &[],
                budget,
                depth + 1,
            )?;
        }
        return Ok(());
    }
    if !meta.is_file() || budget.0 == 0 || budget.1 < meta.len() {
        return Ok(());
    }
    budget.0 -= 1;
    budget.1 -= meta.len();
    let mut bytes = std::fs::read(real)?;
    if !drop_keys.is_empty() {
        if let Ok(serde_json::Value::Object(mut map)) = serde_json::from_slice(&bytes) {
            for key in drop_keys {
                map.remove(*key);
            }
            bytes = serde_json::to_vec_pretty(&map).map_err(std::io::Error::other)?;
        }
    }
    use std::io::Write;
    match make_like(shadow, false)? {
        Some(mut file) => file.write_all(&bytes),
        None => Ok(()),
    }
}

/// The `shadow_home` layer of `doctor` and `peek` (on where the agent gets a mount
/// namespace of its own).
pub fn layer(on: bool) -> crate::common::layers::Layer {
    if on {
        crate::common::layers::layer(
            "shadow_home",
            true,
            format!("its CLI's state (~/.claude, ~/.codex, …) is a per-project copy in the state dir ({SHADOW_DIR}/<cli>) bound over the real one; the real state is not writable; only the login's credentials file is the operator's own"),
        )
    } else {
        crate::common::layers::layer(
            "shadow_home",
            false,
            "no mount namespace of its own: the agent writes its CLI's real state in the home directory (settings and hooks the operator's next session runs)",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_lies_in_its_cli_s_state_and_has_a_why() {
        for e in SHADOW_SEED {
            let state = AGENT_STATE.iter().find(|s| s.cli == e.cli).unwrap();
            assert!(
                state
                    .paths
                    .iter()
                    .any(|p| e.rel == *p || Path::new(e.rel).starts_with(p)),
                "{}",
                e.rel
            );
            assert!(!e.why.is_empty(), "{}", e.rel);
        }
        for s in AGENT_STATE {
            assert!(
                SHADOW_SEED
                    .iter()
                    .any(|e| e.cli == s.cli && e.seed == Seed::SharedLogin),
                "{} has no login entry",
                s.cli
            );
        }
        for v in SHADOW_ENV {
            let state = AGENT_STATE.iter().find(|s| s.cli == v.cli).unwrap();
            assert!(state.paths.contains(&v.rel), "{}", v.name);
            assert!(!v.why.is_empty(), "{}", v.name);
        }
    }

    #[test]
    fn the_shadow_is_seeded_refreshed_and_keeps_its_own_sessions() {
        let t = tempfile::tempdir().unwrap();
        let (home, state) = (t.path().join("home"), t.path().join("state"));
        std::fs::create_dir_all(home.join(".claude/projects/other")).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(home.join(".claude/settings.json"), "{\"model\":\"a\"}").unwrap();
        std::fs::write(home.join(".claude/projects/other/s.jsonl"), "secret").unwrap();
        std::fs::write(home.join(".claude/.credentials.json"), "{\"t\":1}").unwrap();
        std::fs::write(
            home.join(".claude.json"),
            "{\"userID\":\"u\",\"projects\":{\"/other\":{}}}",
        )
        .unwrap();
        let s = prepare(&state, &home, "claude").unwrap().unwrap();
        let root = state.join("agent-home/claude");
        assert_eq!(s.root, root);
        assert_eq!(
            std::fs::read_to_string(root.join(".claude/settings.json")).unwrap(),
            "{\"model\":\"a\"}"
        );
        assert!(!root.join(".claude/projects").exists());
        // The account state where CLAUDE_CONFIG_DIR has claude read it, with its lock and
        // temporary files beside it in the bound directory.
        let account: serde_json::Value =
            serde_json::from_slice(&std::fs::read(root.join(".claude/.claude.json")).unwrap())
                .unwrap();
        assert_eq!(account, serde_json::json!({"userID": "u"}));
        assert_eq!(
            s.env,
            [(
                "CLAUDE_CONFIG_DIR".to_owned(),
                home.join(".claude").display().to_string()
            )]
        );
        // The login's mount point is empty: the real file is bound there.
        assert_eq!(
            std::fs::metadata(root.join(".claude/.credentials.json"))
                .unwrap()
                .len(),
            0
        );
        assert_eq!(
            s.binds[0],
            ShadowBind {
                source: home.join(".claude/.credentials.json"),
                target: root.join(".claude/.credentials.json")
            }
        );
        assert_eq!(
            s.writable,
            [root.join(".claude"), root.join(".claude.json")]
        );
        assert_eq!(s.binds.len(), 3);
        // The agent's changes: a hook in the settings, a session, the account state.
        std::fs::write(root.join(".claude/settings.json"), "{\"hooks\":1}").unwrap();
        std::fs::create_dir_all(root.join(".claude/projects/this")).unwrap();
        std::fs::write(root.join(".claude/projects/this/s.jsonl"), "mine").unwrap();
        std::fs::write(
            root.join(".claude/.claude.json"),
            "{\"userID\":\"u\",\"n\":2}",
        )
        .unwrap();
        std::fs::write(home.join(".claude/settings.json"), "{\"model\":\"b\"}").unwrap();
        prepare(&state, &home, "claude").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join(".claude/settings.json")).unwrap(),
            "{\"model\":\"b\"}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".claude/projects/this/s.jsonl")).unwrap(),
            "mine"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".claude/.claude.json")).unwrap(),
            "{\"userID\":\"u\",\"n\":2}"
        );
        // The operator's settings gone: the shadow's copy goes too.
        std::fs::remove_file(home.join(".claude/settings.json")).unwrap();
        prepare(&state, &home, "claude").unwrap();
        assert!(!root.join(".claude/settings.json").exists());
        // The operator's home was only read.
        assert_eq!(
            std::fs::read_to_string(home.join(".claude/.credentials.json")).unwrap(),
            "{\"t\":1}"
        );
        assert!(prepare(&state, &home, "unknown").unwrap().is_none());
    }

    #[test]
    fn a_link_the_agent_left_in_its_shadow_is_never_followed() {
        let t = tempfile::tempdir().unwrap();
        let (home, state) = (t.path().join("home"), t.path().join("state"));
        std::fs::create_dir_all(home.join(".pi/agent")).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(home.join(".pi/agent/settings.json"), "operator").unwrap();
        let s = prepare(&state, &home, "pi").unwrap().unwrap();
        // The agent swaps a directory of its shadow for a link to another of the
        // operator's directories, and a settings file for a link to a file.
        let elsewhere = t.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("settings.json"), "keep").unwrap();
        std::fs::write(elsewhere.join("models.json"), "keep").unwrap();
        std::fs::remove_dir_all(s.root.join(".pi/agent")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, s.root.join(".pi/agent")).unwrap();
        prepare(&state, &home, "pi").unwrap();
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("settings.json")).unwrap(),
            "keep"
        );
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("models.json")).unwrap(),
            "keep"
        );
        let agent = std::fs::symlink_metadata(s.root.join(".pi/agent")).unwrap();
        assert!(agent.is_dir() && !agent.file_type().is_symlink());
        std::fs::remove_file(s.root.join(".pi/agent/settings.json")).unwrap();
        std::os::unix::fs::symlink(
            elsewhere.join("settings.json"),
            s.root.join(".pi/agent/settings.json"),
        )
        .unwrap();
        prepare(&state, &home, "pi").unwrap();
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("settings.json")).unwrap(),
            "keep"
        );
        assert_eq!(
            std::fs::read_to_string(s.root.join(".pi/agent/settings.json")).unwrap(),
            "operator"
        );
    }

    #[test]
    fn every_prune_entry_lies_in_its_cli_s_state_and_spares_the_seed() {
        for e in SHADOW_PRUNE {
            let state = AGENT_STATE.iter().find(|s| s.cli == e.cli).unwrap();
            assert!(
                state
                    .paths
                    .iter()
                    .any(|p| Path::new(e.pattern).starts_with(p)),
                "{}",
                e.pattern
            );
            assert!(
                !e.why.is_empty() && !e.pattern.starts_with('*'),
                "{}",
                e.pattern
            );
            for seed in SHADOW_SEED.iter().filter(|s| s.cli == e.cli) {
                let literal: String = e.pattern.split("/*").next().unwrap().to_owned();
                assert!(
                    !Path::new(seed.rel).starts_with(&literal),
                    "{} would prune the seeded {}",
                    e.pattern,
                    seed.rel
                );
            }
        }
    }

    #[test]
    fn a_missing_real_path_is_not_bound() {
        let t = tempfile::tempdir().unwrap();
        let (home, state) = (t.path().join("home"), t.path().join("state"));
        std::fs::create_dir_all(home.join(".aider")).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        let s = prepare(&state, &home, "aider").unwrap().unwrap();
        assert_eq!(s.writable, [s.root.join(".aider")]);
        assert_eq!(s.binds.len(), 1);
    }
}
