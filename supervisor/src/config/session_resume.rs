//! Session resume (docs/agent-clis.md, "Session resume"): how each agent CLI picks its
//! previous session back up, by the CLI (`[agent] cli` or what the command runs:
//! [`crate::config::agent_cli`], as for the cooperative stop). `serve` mints one session id per phase and appends the CLI's
//! arguments after `command`, before the prompt arguments (`crate::runtime::agent::sessions`);
//! `[agent] session_resume = false` turns it off.
//!
//! The reference system does pi only (`--session-id` on every round, an older pi's flag).
//! Each form below was read from the pinned CLI's own `--help` and source
//! (tests/agent-clis/versions.env) and run against the fake model server: claude and
//! gemini refuse to start a session under an id already used (`--session-id` twice fails),
//! so a resumed round names it with `--resume`; kimi's `--session ID` starts a session
//! under an id it does not know and resumes one it does, so it is the same words every
//! round; codex, aider and pi cannot be handed a new session's id (pi 0.73 has no
//! `--session-id`; its `--session` takes only an existing session's id or a file path) and
//! go on with their last session.

/// `[agent] session_max_rounds`'s default: a resumed session is started afresh after 20
/// rounds. Measured with the real claude against the fake model (docs/operations.md,
/// "The agent's CLI state on disk"): each resumed round adds 4 entries to every request
/// (160 after 40 rounds) and the median round took a quarter longer by rounds 31-40; 20
/// rounds keep that near a tenth.
pub(crate) const DEFAULT_SESSION_MAX_ROUNDS: u64 = 20;
/// `[agent] session_max_tokens`'s default: 5 M tokens, about 25 model calls with a full
/// 200 k-token context; past that each resumed call re-sends a history near the window and
/// the CLI compacts it anyway (reasoned, not measured: the fake model's history is small).
pub(crate) const DEFAULT_SESSION_MAX_TOKENS: u64 = 5_000_000;
/// `[agent] session_max_hours`'s default: 12 hours, an overnight run's second half starts
/// afresh however few rounds it ran (reasoned).
pub(crate) const DEFAULT_SESSION_MAX_HOURS: u64 = 12;

/// When a resumed session is started afresh (`[agent] session_max_rounds`,
/// `session_max_tokens`, `session_max_hours`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionBounds {
    /// Most rounds one session runs.
    pub max_rounds: u64,
    /// Most tokens one session's rounds use, all kinds counted.
    pub max_tokens: u64,
    /// Oldest a session gets.
    pub max_age: std::time::Duration,
}

impl Default for SessionBounds {
    fn default() -> Self {
        SessionBounds {
            max_rounds: DEFAULT_SESSION_MAX_ROUNDS,
            max_tokens: DEFAULT_SESSION_MAX_TOKENS,
            max_age: std::time::Duration::from_secs(DEFAULT_SESSION_MAX_HOURS * 3600),
        }
    }
}

/// How a CLI picks a session back up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResumeForm {
    /// `[start, id]` on the phase's first round, `[resume, id]` on the rounds after
    /// (claude and gemini: `--session-id`, then `--resume`).
    StartThenResume {
        /// The flag that starts a session under a given id.
        start: &'static str,
        /// The flag that goes on with a session by its id.
        resume: &'static str,
    },
    /// `[flag, id]` on every round: the CLI starts a session under an id it does not know
    /// and goes on with one it does (kimi's `--session`).
    Named {
        /// The flag naming the session.
        flag: &'static str,
    },
    /// Nothing on the phase's first round, `args` on the rounds after: the CLI goes on with
    /// the last session it recorded for the work tree (codex's `exec … resume --last`,
    /// aider's `--restore-chat-history`, pi's `--continue`).
    Last {
        /// The words appended.
        args: &'static [&'static str],
    },
}

/// CLIs that can resume a session, by the CLI's name ([`crate::config::agent_cli`]). codex's words go after
/// its preset's `exec [options]`, where its `resume` subcommand belongs.
pub(crate) const RESUMABLE: &[(&str, ResumeForm)] = &[
    (
        "claude",
        ResumeForm::StartThenResume {
            start: "--session-id",
            resume: "--resume",
        },
    ),
    (
        "gemini",
        ResumeForm::StartThenResume {
            start: "--session-id",
            resume: "--resume",
        },
    ),
    ("kimi", ResumeForm::Named { flag: "--session" }),
    (
        "pi",
        ResumeForm::Last {
            args: &["--continue"],
        },
    ),
    (
        "codex",
        ResumeForm::Last {
            args: &["resume", "--last"],
        },
    ),
    (
        "aider",
        ResumeForm::Last {
            args: &["--restore-chat-history"],
        },
    ),
];

/// The resume form of the CLI `name` ([`crate::config::AgentConfig::cli`]), if it has one.
pub(crate) fn form_of(name: Option<&str>) -> Option<ResumeForm> {
    let name = name?;
    RESUMABLE
        .iter()
        .find(|(cli, _)| *cli == name)
        .map(|(_, form)| *form)
}

impl ResumeForm {
    /// The words appended to a round's command: `resuming` says whether the phase's
    /// session goes on (else a new one starts under `id`). Empty when nothing is appended
    /// (a [`ResumeForm::Last`] CLI's first round).
    pub(crate) fn args(self, id: &str, resuming: bool) -> Vec<String> {
        match (self, resuming) {
            (ResumeForm::StartThenResume { start, .. }, false) => {
                vec![start.to_owned(), id.to_owned()]
            }
            (ResumeForm::StartThenResume { resume, .. }, true) => {
                vec![resume.to_owned(), id.to_owned()]
            }
            (ResumeForm::Named { flag }, _) => vec![flag.to_owned(), id.to_owned()],
            (ResumeForm::Last { .. }, false) => Vec::new(),
            (ResumeForm::Last { args }, true) => args.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    /// The words the supervisor appends, which the static command must not hold already
    /// (a second copy would start or resume a session the supervisor does not know of, or
    /// be refused by the CLI).
    pub(crate) fn reserved(self) -> Vec<&'static str> {
        match self {
            ResumeForm::StartThenResume { start, resume } => vec![start, resume],
            ResumeForm::Named { flag } => vec![flag],
            ResumeForm::Last { args } => args.iter().take(1).copied().collect(),
        }
    }
}

/// A static command holding a word `serve` appends for session resume (the word); Display
/// says what to do, after the key `agent.command`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("already contains {0:?}: serve appends it per round for session resume; remove it from the static command, or set session_resume = false")]
pub(crate) struct ReservedWord(pub String);

/// The boot guard (the reference system's): with resume on, an agent whose static
/// `command` or `prompt_arg_template` already holds a word the supervisor appends is
/// refused.
///
/// Errors: [`ReservedWord`], the first such word.
pub(crate) fn check_static(
    cli: Option<&str>,
    command: &[String],
    template: &[String],
    enabled: bool,
) -> Result<(), ReservedWord> {
    let Some(form) = form_of(cli).filter(|_| enabled) else {
        return Ok(());
    };
    let words = command.iter().skip(1).chain(template);
    match words
        .into_iter()
        .find(|w| form.reserved().contains(&w.as_str()))
    {
        Some(word) => Err(ReservedWord(word.clone())),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_appends_what_its_cli_takes() {
        let claude = form_of(Some("claude")).unwrap();
        assert_eq!(claude.args("x", false), ["--session-id", "x"]);
        assert_eq!(claude.args("x", true), ["--resume", "x"]);
        let codex = form_of(Some("codex")).unwrap();
        assert!(codex.args("x", false).is_empty());
        assert_eq!(codex.args("x", true), ["resume", "--last"]);
        let kimi = form_of(Some("kimi")).unwrap();
        assert_eq!(kimi.args("x", false), ["--session", "x"]);
        assert_eq!(kimi.args("x", false), kimi.args("x", true));
        assert_eq!(form_of(Some("pi")).unwrap().args("x", true), ["--continue"]);
        assert!(form_of(Some("pi")).unwrap().args("x", false).is_empty());
        assert_eq!(form_of(None), None);
    }

    #[test]
    fn a_static_copy_is_refused_only_with_resume_on() {
        let cmd = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        let err = check_static(
            Some("claude"),
            &cmd(&["claude", "--resume", "abc", "-p"]),
            &[],
            true,
        )
        .unwrap_err();
        assert_eq!(err, ReservedWord("--resume".to_owned()));
        assert!(err.to_string().contains("\"--resume\""), "{err}");
        assert!(check_static(
            Some("claude"),
            &cmd(&["claude", "--resume", "abc"]),
            &[],
            false
        )
        .is_ok());
        assert!(check_static(
            Some("gemini"),
            &cmd(&["gemini"]),
            &cmd(&["--session-id", "{prompt}"]),
            true
        )
        .is_err());
        assert!(check_static(None, &cmd(&["my-agent", "--resume"]), &[], true).is_ok());
        assert!(check_static(
            Some("claude"),
            &cmd(&["claude", "-p"]),
            &cmd(&["{prompt}"]),
            true
        )
        .is_ok());
    }
}
