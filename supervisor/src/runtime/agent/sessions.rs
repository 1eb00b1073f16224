//! Session resume under `serve` (docs/agent-clis.md, "Session resume"): one session id per
//! phase, minted by `serve` (a random UUID), handed to the agent as
//! `AGENT_RUNNER_RESUME_FLAG` / `AGENT_RUNNER_RESUME_SESSION_ID` (the reference system's
//! names) and as the words its CLI takes ([`crate::config::session_resume`]), appended
//! after `command`. A round that goes on with its phase's session records
//! `session_resumed`.
//!
//! A phase starts a new session on its first round, on a fresh-eyes round, after a round
//! that did not end cleanly (a session that failed to start cannot be resumed, and
//! resuming one that broke would fail every round), and once its session reached a bound
//! of `[agent] session_max_rounds`, `session_max_tokens` or `session_max_hours`
//! ([`SessionBounds`]: every resumed round re-sends the whole history), which records
//! `session_renewed`. `round` on its own never resumes: sessions live as long as the
//! `serve` that minted them.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Instant;

use crate::config::session_resume::{form_of, SessionBounds};
use crate::config::AgentConfig;

/// The agent's variable naming the flag appended this round.
pub(crate) const FLAG_ENV: &str = "AGENT_RUNNER_RESUME_FLAG";
/// The agent's variable holding the phase's session id.
pub(crate) const SESSION_ENV: &str = "AGENT_RUNNER_RESUME_SESSION_ID";

/// One phase's session: its id and what it has used so far.
#[derive(Clone, Debug)]
struct Session {
    id: String,
    /// Rounds started in it.
    rounds: u64,
    /// Tokens its rounds used (each round's own, all kinds).
    tokens: u64,
    /// When its first round started.
    since: Instant,
}

/// The session ids of a `serve`, by phase (`""` without phases).
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    phases: BTreeMap<String, Session>,
}

/// Which bound ended a session (`session_renewed.reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenewReason {
    /// `session_max_rounds`.
    Rounds,
    /// `session_max_tokens`.
    Tokens,
    /// `session_max_hours`.
    Hours,
}

impl RenewReason {
    /// The event's word: `max_rounds`, `max_tokens` or `max_hours`.
    pub fn as_str(self) -> &'static str {
        match self {
            RenewReason::Rounds => "max_rounds",
            RenewReason::Tokens => "max_tokens",
            RenewReason::Hours => "max_hours",
        }
    }
}

/// A session that reached a bound and is started afresh by this round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renewal {
    /// The session that ended.
    pub old_id: String,
    /// The bound it reached.
    pub reason: RenewReason,
    /// Rounds it ran.
    pub rounds: u64,
    /// Tokens its rounds used.
    pub tokens: u64,
    /// Its age, in whole seconds.
    pub age_s: u64,
}

/// What a round does about its phase's session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resume {
    /// The phase's session id (new unless `resuming`).
    pub id: String,
    /// Whether the round goes on with the session of the phase's previous round.
    pub resuming: bool,
    /// The words appended to the agent's command (may be empty).
    pub args: Vec<String>,
    /// The phase's session this round does not resume because it reached a bound.
    pub renewed: Option<Renewal>,
}

impl Resume {
    /// The variables the agent gets: both when words are appended, none otherwise.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        match self.args.first() {
            Some(flag) => vec![
                (FLAG_ENV.to_owned(), flag.clone()),
                (SESSION_ENV.to_owned(), self.id.clone()),
            ],
            None => Vec::new(),
        }
    }
}

/// The first bound of `bounds` that `session` reached at `now`, if one.
fn reached(session: &Session, bounds: &SessionBounds, now: Instant) -> Option<RenewReason> {
    if session.rounds >= bounds.max_rounds {
        Some(RenewReason::Rounds)
    } else if session.tokens >= bounds.max_tokens {
        Some(RenewReason::Tokens)
    } else if now.saturating_duration_since(session.since) >= bounds.max_age {
        Some(RenewReason::Hours)
    } else {
        None
    }
}

impl Sessions {
    /// What the next round of `phase` does with `agent`: `None` when its CLI cannot
    /// resume or `session_resume = false`. Changes nothing until [`Sessions::started`].
    pub(crate) fn plan(
        &self,
        agent: &AgentConfig,
        phase: &str,
        fresh_eyes: bool,
    ) -> Option<Resume> {
        self.plan_at(agent, phase, fresh_eyes, Instant::now())
    }

    fn plan_at(
        &self,
        agent: &AgentConfig,
        phase: &str,
        fresh_eyes: bool,
        now: Instant,
    ) -> Option<Resume> {
        let form = form_of(agent.cli.name).filter(|_| agent.session_resume)?;
        let known = self.phases.get(phase).filter(|_| !fresh_eyes);
        let renewed = known.and_then(|s| {
            reached(s, &agent.session_bounds, now).map(|reason| Renewal {
                old_id: s.id.clone(),
                reason,
                rounds: s.rounds,
                tokens: s.tokens,
                age_s: now.saturating_duration_since(s.since).as_secs(),
            })
        });
        let known = known.filter(|_| renewed.is_none());
        let resuming = known.is_some();
        let id = known.map(|s| s.id.clone()).unwrap_or_else(mint);
        Some(Resume {
            args: form.args(&id, resuming),
            id,
            resuming,
            renewed,
        })
    }

    /// The round of `phase` started with `resume`: its id is the phase's session now, one
    /// round more.
    pub(crate) fn started(&mut self, phase: &str, resume: &Resume) {
        self.started_at(phase, resume, Instant::now());
    }

    fn started_at(&mut self, phase: &str, resume: &Resume, now: Instant) {
        let goes_on = self
            .phases
            .get(phase)
            .is_some_and(|s| resume.resuming && s.id == resume.id);
        if !goes_on {
            self.phases.insert(
                phase.to_owned(),
                Session {
                    id: resume.id.clone(),
                    rounds: 0,
                    tokens: 0,
                    since: now,
                },
            );
        }
        if let Some(session) = self.phases.get_mut(phase) {
            session.rounds += 1;
        }
    }

    /// The round of `phase` in session `id` used `tokens` (its own, all kinds).
    pub(crate) fn used(&mut self, phase: &str, id: &str, tokens: u64) {
        if let Some(s) = self.phases.get_mut(phase).filter(|s| s.id == id) {
            s.tokens = s.tokens.saturating_add(tokens);
        }
    }

    /// The round of `phase` ended; one that did not end cleanly ends its session too.
    pub(crate) fn ended(&mut self, phase: &str, clean: bool) {
        if !clean {
            self.phases.remove(phase);
        }
    }

    /// The ids of the sessions later rounds may resume, every phase's.
    pub(crate) fn live_ids(&self) -> Vec<String> {
        self.phases.values().map(|s| s.id.clone()).collect()
    }
}

/// A random (version 4) UUID from the kernel's random source; a time-derived one if that
/// cannot be read (an id need only differ from the phase's earlier ones).
fn mint() -> String {
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = (nanos ^ (u128::from(std::process::id()) << 64)).to_le_bytes();
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(program: &str, on: bool) -> AgentConfig {
        AgentConfig {
            cli: crate::config::agent_cli::AgentCli::of(&[program.to_owned()]),
            command: vec![program.to_owned(), "-p".to_owned()],
            prompt_arg_template: vec!["{prompt}".into()],
            name: None,
            env: Default::default(),
            delivery: crate::config::PromptDelivery::Argv,
            exec_prefix: vec![],
            terminal_marker: String::new(),
            sigterm_grace: std::time::Duration::from_secs(10),
            session_resume: on,
            session_bounds: Default::default(),
            allow_hosts: None,
        }
    }

    #[test]
    fn a_phase_goes_on_with_its_session_until_a_round_fails_or_eyes_are_fresh() {
        let claude = agent("claude", true);
        let mut s = Sessions::default();
        let first = s.plan(&claude, "", false).unwrap();
        assert!(!first.resuming);
        assert_eq!(first.args, ["--session-id", first.id.as_str()]);
        assert_eq!(first.id.len(), 36);
        assert_eq!(&first.id[14..15], "4");
        s.started("", &first);
        s.ended("", true);
        let second = s.plan(&claude, "", false).unwrap();
        assert!(second.resuming);
        assert_eq!(second.args, ["--resume", first.id.as_str()]);
        assert_eq!(second.env()[1], (SESSION_ENV.to_owned(), first.id.clone()));
        // Another phase has its own session.
        assert!(!s.plan(&claude, "review", false).unwrap().resuming);
        // Fresh eyes: a new session.
        let fresh = s.plan(&claude, "", true).unwrap();
        assert!(!fresh.resuming);
        assert_ne!(fresh.id, first.id);
        s.started("", &second);
        s.ended("", false);
        assert!(!s.plan(&claude, "", false).unwrap().resuming);
    }

    #[test]
    fn a_session_is_renewed_at_its_first_bound_and_says_why() {
        let mut claude = agent("claude", true);
        claude.session_bounds = SessionBounds {
            max_rounds: 3,
            max_tokens: 10_000,
            max_age: std::time::Duration::from_secs(3600),
        };
        let t0 = Instant::now();
        let mut s = Sessions::default();
        let mut ids = Vec::new();
        // Rounds: three rounds of one session, then a new one.
        for i in 0..4 {
            let r = s.plan_at(&claude, "", false, t0).unwrap();
            assert_eq!(r.resuming, i > 0 && i < 3, "round {i}");
            s.started_at("", &r, t0);
            s.used("", &r.id, 100);
            s.ended("", true);
            ids.push(r);
        }
        let renewed = ids[3].renewed.clone().unwrap();
        assert_eq!(renewed.reason, RenewReason::Rounds);
        assert_eq!((renewed.rounds, renewed.tokens), (3, 300));
        assert_eq!(renewed.old_id, ids[0].id);
        assert_ne!(ids[3].id, ids[0].id);
        assert_eq!(ids[3].args, ["--session-id", ids[3].id.as_str()]);
        assert!(ids[..3].iter().all(|r| r.renewed.is_none()));
        // Tokens: the new session's counts start from zero; one big round ends it.
        s.used("", &ids[3].id, 10_000);
        let r = s.plan_at(&claude, "", false, t0).unwrap();
        let renewed = r.renewed.clone().unwrap();
        assert_eq!(renewed.reason, RenewReason::Tokens);
        assert_eq!((renewed.rounds, renewed.tokens), (1, 10_100));
        // Usage of a session that is no longer the phase's is not counted.
        s.started_at("", &r, t0);
        s.used("", &ids[0].id, 1_000_000);
        // Hours: an hour later.
        let later = t0 + std::time::Duration::from_secs(3600);
        let aged = s.plan_at(&claude, "", false, later).unwrap();
        let renewed = aged.renewed.unwrap();
        assert_eq!((renewed.reason, renewed.age_s), (RenewReason::Hours, 3600));
        assert!(!aged.resuming);
        assert!(s.plan_at(&claude, "", false, t0).unwrap().resuming);
        assert_eq!(s.live_ids(), std::slice::from_ref(&r.id));
        // A CLI that goes on with its last session: nothing appended is a new session.
        let mut codex = agent("codex", true);
        codex.session_bounds = claude.session_bounds;
        let mut s = Sessions::default();
        for _ in 0..3 {
            let r = s.plan_at(&codex, "", false, t0).unwrap();
            s.started_at("", &r, t0);
        }
        let r = s.plan_at(&codex, "", false, t0).unwrap();
        assert!(r.args.is_empty() && r.renewed.is_some());
    }

    #[test]
    fn off_or_unknown_clis_get_nothing() {
        let s = Sessions::default();
        assert_eq!(s.plan(&agent("claude", false), "", false), None);
        assert_eq!(s.plan(&agent("./my-agent.sh", true), "", false), None);
        let codex = s.plan(&agent("codex", true), "", false).unwrap();
        assert!(codex.args.is_empty() && codex.env().is_empty());
    }
}
