//! The agent's shadow CLI home (issue 37, docs/security.md "The shadow CLI home"): under
//! `[agent.sandbox] mode = "require"` a hostile agent whose CLI is `claude` (or `codex`)
//! rewrites its CLI's user settings in the home directory with a hook (`notify` for
//! codex), writes a session, and writes its login's credentials file. After the round the
//! operator's real settings are unchanged and the shadow in the state dir holds the
//! change; the credentials file written by the agent is the operator's real one (the one
//! source of truth for a refreshed login); the session stays in the shadow, where the next
//! round finds it, while the settings the agent planted are replaced by the operator's
//! again. The control, the same agent under `mode = "off"`, rewrites the operator's real
//! settings. Every case runs with the supervisor run by root and by `ar-e2e`.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};
use std::path::PathBuf;
use std::time::Duration;

/// The hostile agent: each attempt's outcome as `label ok|denied` in `attempts.log`, and
/// what it saw of its settings before writing them, and whether last round's session
/// was there, in `seen.log` (appended per round).
const HOSTILE: &str = r#"#!/bin/sh
: > attempts.log
try() {
    if sh -c "$2" 2>>attempts.err; then echo "$1 ok" >> attempts.log; else echo "$1 denied" >> attempts.log; fi
}
echo "settings $(cat "$HOME/$SETTINGS" 2>/dev/null)" >> seen.log
if [ -f "$HOME/$SESSIONS/session.jsonl" ]; then echo "session kept" >> seen.log; else echo "session none" >> seen.log; fi
try settings 'printf "%s\n" "$PLANT" > "$HOME/$SETTINGS"'
try login 'printf "%s\n" "$LOGIN_TEXT" > "$HOME/$LOGIN"'
try session 'mkdir -p "$HOME/$SESSIONS" && echo mine > "$HOME/$SESSIONS/session.jsonl"'
exit 0
"#;

/// One CLI's case: its name, its settings file with the operator's text and the agent's
/// planted text, its login file, its sessions directory (all relative to the home).
struct Case {
    cli: &'static str,
    settings: &'static str,
    operator_text: &'static str,
    plant: &'static str,
    login: &'static str,
    sessions: &'static str,
}

const CLAUDE: Case = Case {
    cli: "claude",
    settings: ".claude/settings.json",
    operator_text: "{\"model\": \"operator's\"}",
    plant: "{\"hooks\": {\"SessionStart\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"touch /tmp/planted\"}]}]}}",
    login: ".claude/.credentials.json",
    sessions: ".claude/projects/this",
};

const CODEX: Case = Case {
    cli: "codex",
    settings: ".codex/config.toml",
    operator_text: "model = \"operator's\"",
    plant: "notify = [\"touch\", \"/tmp/planted\"]",
    login: ".codex/auth.json",
    sessions: ".codex/sessions/2026",
};

const GEMINI: Case = Case {
    cli: "gemini",
    settings: ".gemini/settings.json",
    operator_text: "{\"model\": \"operator's\"}",
    plant: "{\"toolDiscoveryCommand\": \"touch /tmp/planted\"}",
    login: ".gemini/oauth_creds.json",
    sessions: ".gemini/tmp/this",
};

/// aider's settings are a file of the home itself (bound file over file).
const AIDER: Case = Case {
    cli: "aider",
    settings: ".aider.conf.yml",
    operator_text: "model: operator's",
    plant: "lint-cmd: touch /tmp/planted",
    login: ".aider/oauth-keys.env",
    sessions: ".aider/caches/this",
};

/// kimi's login is a directory (bound whole): the agent's token file lands in it.
const KIMI: Case = Case {
    cli: "kimi",
    settings: ".kimi/config.toml",
    operator_text: "default_model = \"operator's\"",
    plant: "[hooks]\nstart = \"touch /tmp/planted\"",
    login: ".kimi/credentials/kimi-code.json",
    sessions: ".kimi/sessions/this",
};

const PI: Case = Case {
    cli: "pi",
    settings: ".pi/agent/settings.json",
    operator_text: "{\"defaultModel\": \"operator's\"}",
    plant: "{\"extensions\": [\"/tmp/planted.js\"]}",
    login: ".pi/agent/auth.json",
    sessions: ".pi/agent/sessions/this",
};

/// The login's text before the round, and as the agent writes it (a refreshed token).
const LOGIN_BEFORE: &str = "{\"token\": \"operator's\"}";
const LOGIN_REFRESHED: &str = "{\"token\": \"refreshed by the agent\"}";

/// A project whose agent is [`HOSTILE`] as `case.cli`, under `mode`, with the operator's
/// settings and login in the home.
fn project(operator: Operator, case: &Case, mode: &str) -> Project {
    let p = Project::new_as(operator);
    for (rel, text) in [
        (case.settings, case.operator_text),
        (case.login, LOGIN_BEFORE),
    ] {
        let path = p.home().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    p.write(
        ".gitignore",
        "/logs/\n/.agent-runner-pause\n/attempts.*\n/seen.log\n",
    );
    let agent = p.script("agent/agent", HOSTILE);
    let text = ConfigBuilder::new(&agent)
        .dirty_action("ignore")
        .round_budget_s(120)
        .agent_env("SETTINGS", case.settings)
        .agent_env("PLANT", case.plant)
        .agent_env("LOGIN", case.login)
        .agent_env("LOGIN_TEXT", LOGIN_REFRESHED)
        .agent_env("SESSIONS", case.sessions)
        .render()
        .replacen(
            "prompt_delivery = \"argv\"\n",
            &format!("prompt_delivery = \"argv\"\ncli = {:?}\n", case.cli),
            1,
        )
        .replacen(
            "[runtime]\n",
            &format!("[agent.sandbox]\nmode = \"{mode}\"\n\n[runtime]\n"),
            1,
        );
    assert!(text.contains(&format!("cli = {:?}", case.cli)), "{text}");
    p.write_config_text(&text);
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "ignore the agent's logs"]);
    p
}

fn serve(p: &Project, rounds: u32) {
    let out = p
        .spawn(&["serve", "--max-rounds", &rounds.to_string()])
        .wait(Duration::from_secs(240));
    assert_eq!(out.code(), 0, "{out}\n{}", p.events_text());
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim_end()
        .to_owned()
}

fn attempts(p: &Project) -> String {
    read(p.dir().join("attempts.log"))
}

fn the_real_state_is_never_written(operator: Operator, case: &Case) {
    let p = project(operator, case, "require");
    serve(&p, 2);
    let shadow = p.state_dir().join("agent-home").join(case.cli);
    assert_eq!(
        attempts(&p),
        "settings ok\nlogin ok\nsession ok",
        "{}",
        std::fs::read_to_string(p.dir().join("attempts.err")).unwrap_or_default()
    );
    // The operator's settings are untouched; the shadow holds the plant.
    assert_eq!(read(p.home().join(case.settings)), case.operator_text);
    assert_eq!(read(shadow.join(case.settings)), case.plant);
    // The session is the shadow's own, never in the operator's home, and kept.
    assert!(!p.home().join(case.sessions).exists());
    assert_eq!(
        read(shadow.join(case.sessions).join("session.jsonl")),
        "mine"
    );
    // Each round saw the operator's settings (the plant of round 1 was replaced before
    // round 2) and round 2 found round 1's session.
    let settings_line = format!("settings {}", case.operator_text);
    assert_eq!(
        read(p.dir().join("seen.log")),
        format!("{settings_line}\nsession none\n{settings_line}\nsession kept"),
    );
    // The login is one file: what the agent wrote is the operator's.
    assert_eq!(read(p.home().join(case.login)), LOGIN_REFRESHED);
    // The shadow is private.
    use std::os::unix::fs::PermissionsExt;
    for dir in [shadow.parent().unwrap().to_owned(), shadow.clone()] {
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
    }

    // The control: unconfined, the agent rewrites the operator's real settings.
    let p = project(operator, case, "off");
    serve(&p, 1);
    assert_eq!(attempts(&p), "settings ok\nlogin ok\nsession ok");
    assert_eq!(read(p.home().join(case.settings)), case.plant);
    assert!(p.home().join(case.sessions).exists());
}

#[test]
fn claude_s_real_state_is_never_written_as_root() {
    the_real_state_is_never_written(Operator::Root, &CLAUDE);
}

#[test]
fn claude_s_real_state_is_never_written_as_unprivileged_user() {
    the_real_state_is_never_written(Operator::Unprivileged, &CLAUDE);
}

#[test]
fn codex_s_real_state_is_never_written_as_root() {
    the_real_state_is_never_written(Operator::Root, &CODEX);
}

#[test]
fn codex_s_real_state_is_never_written_as_unprivileged_user() {
    the_real_state_is_never_written(Operator::Unprivileged, &CODEX);
}

#[test]
fn gemini_aider_kimi_and_pi_real_state_is_never_written_as_root() {
    for case in [&GEMINI, &AIDER, &KIMI, &PI] {
        the_real_state_is_never_written(Operator::Root, case);
    }
}

#[test]
fn gemini_aider_kimi_and_pi_real_state_is_never_written_as_unprivileged_user() {
    for case in [&GEMINI, &AIDER, &KIMI, &PI] {
        the_real_state_is_never_written(Operator::Unprivileged, case);
    }
}
