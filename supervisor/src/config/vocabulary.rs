//! The config's closed vocabularies (`dirty_action`, `sandbox`, `prompt_delivery`,
//! `context_injection_mode`, `transient_error_action`, `phase_policy`, `stop_when`, `format`): serde enums spelled in snake case, each listing its words so
//! that a bad value gets one message naming them all
//! (`"x"; expected "stash", "ignore" or "auto_commit"`).

use serde::de::value::{Error as ValueError, StrDeserializer};
use serde::de::{Deserialize, IntoDeserializer};

/// A closed set of words a config key accepts.
pub(crate) trait Vocabulary: Copy + for<'de> Deserialize<'de> + 'static {
    /// Every word, in the order messages list them.
    const ALL: &'static [Self];

    /// The config spelling.
    fn word(self) -> &'static str;
}

/// A value outside a key's vocabulary. Display: `"x"; expected "a", "b" or "c"`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{value:?}; expected {expected}")]
pub(crate) struct UnknownWord {
    /// The value found.
    value: String,
    /// Every accepted word, quoted: `"a", "b" or "c"`.
    expected: String,
}

/// The word `value` of a key (`default` when the key is absent).
///
/// Errors: [`UnknownWord`], naming `value` and every accepted word.
pub(crate) fn parse<T: Vocabulary>(value: Option<&str>, default: T) -> Result<T, UnknownWord> {
    let Some(text) = value else {
        return Ok(default);
    };
    let deserializer: StrDeserializer<'_, ValueError> = text.into_deserializer();
    T::deserialize(deserializer).map_err(|_| UnknownWord {
        value: text.to_owned(),
        expected: expected::<T>(),
    })
}

/// `"a", "b" or "c"`.
fn expected<T: Vocabulary>() -> String {
    let words: Vec<String> = T::ALL.iter().map(|w| format!("{:?}", w.word())).collect();
    match words.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// How the round context reaches the agent (`[prompt] context_injection_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextInjection {
    /// A fenced ```` ```json round-context ```` block before the prompt (default).
    Prepend,
    /// `<log_dir>/round-context.json` only; its path is in `AGENT_RUNNER_CONTEXT_FILE`.
    File,
    /// Not at all.
    None,
}

impl Vocabulary for ContextInjection {
    const ALL: &'static [Self] = &[
        ContextInjection::Prepend,
        ContextInjection::File,
        ContextInjection::None,
    ];

    fn word(self) -> &'static str {
        match self {
            ContextInjection::Prepend => "prepend",
            ContextInjection::File => "file",
            ContextInjection::None => "none",
        }
    }
}

/// `[phases] phase_policy`: what `serve` does when the next round's phase is outside its
/// schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhasePolicy {
    /// Wait until the phase's schedule opens (default).
    #[default]
    Wait,
    /// Skip the phase (its round number is passed over) and go on with the next one.
    Skip,
}

impl Vocabulary for PhasePolicy {
    const ALL: &'static [Self] = &[PhasePolicy::Wait, PhasePolicy::Skip];

    fn word(self) -> &'static str {
        match self {
            PhasePolicy::Wait => "wait",
            PhasePolicy::Skip => "skip",
        }
    }
}

/// When reaching the goal ends `serve` (`[goal] stop_when`, ours).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopWhen {
    /// `"never"` (default, the reference system's behaviour): checks only inform.
    #[default]
    Never,
    /// `"all_satisfied"`: the first round after which every check passed ends `serve`
    /// with `goal_reached` and exit 0.
    AllSatisfied,
}

impl Vocabulary for StopWhen {
    const ALL: &'static [Self] = &[StopWhen::Never, StopWhen::AllSatisfied];

    fn word(self) -> &'static str {
        match self {
            StopWhen::Never => "never",
            StopWhen::AllSatisfied => "all_satisfied",
        }
    }
}

/// What a webhook's body is (`[[notify.webhooks]] format`, ours; docs/operations.md,
/// "Notifications").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyFormat {
    /// `"event"` (default): the event's JSON line, as the record has it.
    #[default]
    Event,
    /// `"chat"`: a Slack-compatible `{"text": "…"}` with one sentence for people.
    Chat,
}

impl Vocabulary for NotifyFormat {
    const ALL: &'static [Self] = &[NotifyFormat::Event, NotifyFormat::Chat];

    fn word(self) -> &'static str {
        match self {
            NotifyFormat::Event => "event",
            NotifyFormat::Chat => "chat",
        }
    }
}

/// How the prompt reaches the agent (`[agent] prompt_delivery`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptDelivery {
    /// `{prompt}` in `prompt_arg_template` is replaced by the prompt text.
    Argv,
    /// The prompt is written to the agent's stdin, which is then closed.
    Stdin,
}

impl PromptDelivery {
    /// The config spelling.
    pub(crate) fn as_str(self) -> &'static str {
        self.word()
    }
}

impl Vocabulary for PromptDelivery {
    const ALL: &'static [Self] = &[PromptDelivery::Argv, PromptDelivery::Stdin];

    fn word(self) -> &'static str {
        match self {
            PromptDelivery::Argv => "argv",
            PromptDelivery::Stdin => "stdin",
        }
    }
}

/// `[runtime] transient_error_action`: what `serve` does after a diagnosed transient
/// failure (usage or rate limit, overload, network).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransientAction {
    /// Wait until the reset time, or exponentially from `restart_delay_s` (default).
    BackOff,
    /// Record it and go on after `restart_delay_s`.
    Skip,
    /// Stop `serve` (exit 75).
    Stop,
}

impl Vocabulary for TransientAction {
    const ALL: &'static [Self] = &[
        TransientAction::BackOff,
        TransientAction::Skip,
        TransientAction::Stop,
    ];

    fn word(self) -> &'static str {
        self.as_str()
    }
}

impl TransientAction {
    /// The config and event spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TransientAction::BackOff => "back_off",
            TransientAction::Skip => "skip",
            TransientAction::Stop => "stop",
        }
    }
}

/// What the built-in dirty handler does (`[vcs] dirty_action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DirtyAction {
    /// `git stash push -u`, SHA-locked and idempotent (default).
    Stash,
    /// Leave the tree dirty.
    Ignore,
    /// Commit everything with subject `agent-runner auto-commit: R<N> <phase>`.
    AutoCommit,
}

impl Vocabulary for DirtyAction {
    const ALL: &'static [Self] = &[
        DirtyAction::Stash,
        DirtyAction::Ignore,
        DirtyAction::AutoCommit,
    ];

    fn word(self) -> &'static str {
        self.as_str()
    }
}

impl DirtyAction {
    /// The config spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DirtyAction::Stash => "stash",
            DirtyAction::Ignore => "ignore",
            DirtyAction::AutoCommit => "auto_commit",
        }
    }
}

/// `[agent.sandbox] broker`: whether the provider key is kept out of the confined agent by
/// the supervisor's key broker (docs/security.md, "The key broker").
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrokerMode {
    /// Broker every provider key the agent's CLI can be brokered for, while the agent is
    /// confined (`mode` not `off`).
    Auto,
    /// Never: the agent gets the key itself, as before.
    Off,
}

impl Vocabulary for BrokerMode {
    const ALL: &'static [Self] = &[BrokerMode::Auto, BrokerMode::Off];

    fn word(self) -> &'static str {
        match self {
            BrokerMode::Auto => "auto",
            BrokerMode::Off => "off",
        }
    }
}

/// `[plugins] sandbox`: how much confinement third-party hosts must get.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Landlock and seccomp must both engage and every host must be pinned, or nothing
    /// starts (exit 78).
    Require,
    /// Run at the best tier the kernel offers; announce a shortfall once (default).
    Prefer,
    /// Run hosts unconfined (not for production).
    Off,
}

impl Vocabulary for SandboxMode {
    const ALL: &'static [Self] = &[SandboxMode::Require, SandboxMode::Prefer, SandboxMode::Off];

    fn word(self) -> &'static str {
        self.as_str()
    }
}

impl SandboxMode {
    /// The config spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Require => "require",
            SandboxMode::Prefer => "prefer",
            SandboxMode::Off => "off",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{
        ContextInjection, DirtyAction, NotifyFormat, PhasePolicy, PromptDelivery, SandboxMode,
        StopWhen, TransientAction,
    };

    fn spelled_alike<T: Vocabulary + PartialEq + std::fmt::Debug>() {
        for word in T::ALL {
            assert_eq!(parse::<T>(Some(word.word()), T::ALL[0]), Ok(*word));
        }
    }

    #[test]
    fn serde_and_messages_agree_on_every_word() {
        spelled_alike::<ContextInjection>();
        spelled_alike::<DirtyAction>();
        spelled_alike::<PromptDelivery>();
        spelled_alike::<SandboxMode>();
        spelled_alike::<BrokerMode>();
        spelled_alike::<PhasePolicy>();
        spelled_alike::<TransientAction>();
        spelled_alike::<StopWhen>();
        spelled_alike::<NotifyFormat>();
        assert_eq!(
            parse::<DirtyAction>(Some("wipe"), DirtyAction::Stash).map_err(|e| e.to_string()),
            Err("\"wipe\"; expected \"stash\", \"ignore\" or \"auto_commit\"".to_owned())
        );
        assert_eq!(
            parse::<PromptDelivery>(Some("pipe"), PromptDelivery::Argv).map_err(|e| e.to_string()),
            Err("\"pipe\"; expected \"argv\" or \"stdin\"".to_owned())
        );
        assert_eq!(
            parse::<SandboxMode>(None, SandboxMode::Prefer),
            Ok(SandboxMode::Prefer)
        );
    }
}
