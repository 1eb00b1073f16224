//! The `sandbox` vocabulary, shared by `[plugins]` and `[agent]`.

use super::vocabulary::Vocabulary;

/// `[plugins] sandbox` and `[agent] sandbox`: how much confinement third-party hosts, and
/// the agent, must get (the agent's default is `Off`: [`super::agent_sandbox`]).
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
