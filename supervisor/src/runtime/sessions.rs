//! Session resume under `serve` (docs/agent-clis.md, "Session resume"): one session id per
//! phase, minted by `serve` (a random UUID), handed to the agent as
//! `AGENT_RUNNER_RESUME_FLAG` / `AGENT_RUNNER_RESUME_SESSION_ID` (the reference system's
//! names) and as the words its CLI takes ([`crate::config::session_resume`]), appended
//! after `command`. A round that goes on with its phase's session records
//! `session_resumed`.
//!
//! A phase starts a new session on its first round, on a fresh-eyes round, and after a
//! round that did not end cleanly (a session that failed to start cannot be resumed, and
//! resuming one that broke would fail every round). `round` on its own never resumes:
//! sessions live as long as the `serve` that minted them.

use std::collections::BTreeMap;
use std::io::Read;

use crate::config::session_resume::form_of;
use crate::config::AgentConfig;

/// The agent's variable naming the flag appended this round.
pub(crate) const FLAG_ENV: &str = "AGENT_RUNNER_RESUME_FLAG";
/// The agent's variable holding the phase's session id.
pub(crate) const SESSION_ENV: &str = "AGENT_RUNNER_RESUME_SESSION_ID";

/// The session ids of a `serve`, by phase (`""` without phases).
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    ids: BTreeMap<String, String>,
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

impl Sessions {
    /// What the next round of `phase` does with `agent`: `None` when its CLI cannot
    /// resume or `session_resume = false`. Changes nothing until [`Sessions::started`].
    pub(crate) fn plan(
        &self,
        agent: &AgentConfig,
        phase: &str,
        fresh_eyes: bool,
    ) -> Option<Resume> {
        let form = form_of(agent.cli.name).filter(|_| agent.session_resume)?;
        let known = self.ids.get(phase).filter(|_| !fresh_eyes);
        let resuming = known.is_some();
        let id = known.cloned().unwrap_or_else(mint);
        Some(Resume {
            args: form.args(&id, resuming),
            id,
            resuming,
        })
    }

    /// The round of `phase` started with `resume`: its id is the phase's session now.
    pub(crate) fn started(&mut self, phase: &str, resume: &Resume) {
        self.ids.insert(phase.to_owned(), resume.id.clone());
    }

    /// The round of `phase` ended; one that did not end cleanly ends its session too.
    pub(crate) fn ended(&mut self, phase: &str, clean: bool) {
        if !clean {
            self.ids.remove(phase);
        }
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
    fn off_or_unknown_clis_get_nothing() {
        let s = Sessions::default();
        assert_eq!(s.plan(&agent("claude", false), "", false), None);
        assert_eq!(s.plan(&agent("./my-agent.sh", true), "", false), None);
        let codex = s.plan(&agent("codex", true), "", false).unwrap();
        assert!(codex.args.is_empty() && codex.env().is_empty());
    }
}
