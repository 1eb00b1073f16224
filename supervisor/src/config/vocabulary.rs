//! The config's closed vocabularies (`dirty_action`, `sandbox`, `prompt_delivery`,
//! `context_injection_mode`, `transient_error_action`, `phase_policy`): serde enums spelled in snake case, each listing its words so
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{
        ContextInjection, DirtyAction, PhasePolicy, PromptDelivery, SandboxMode, TransientAction,
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
        spelled_alike::<PhasePolicy>();
        spelled_alike::<TransientAction>();
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
