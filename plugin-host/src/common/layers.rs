//! One confinement layer as `doctor` and `peek` show it (docs/security.md "Layers"): the
//! hosts' report ([`crate::host::layers`]) and the agent's ([`crate::agent::confine::agent_layers`])
//! are made of these.

/// One layer: its name, whether hosts get it, and what it does or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// `landlock`, `seccomp`, `pid_namespace`, `process_bound`, `memory_bound`,
    /// `unix_socket_rule`, `write_limits`.
    pub name: &'static str,
    /// Whether the process launched now gets it.
    pub on: bool,
    /// What it covers (on) or why it is missing (off).
    pub detail: String,
}

pub(crate) fn layer(name: &'static str, on: bool, detail: impl Into<String>) -> Layer {
    Layer {
        name,
        on,
        detail: detail.into(),
    }
}

/// The `landlock` layer at `tier`: on with `ABI <landlock_abi>` and what it `covers`
/// (joined by `; `) where the tier applies Landlock, else off with the tier.
pub(crate) fn landlock_layer(
    tier: crate::common::probe::Tier,
    landlock_abi: u32,
    covers: &[&str],
) -> Layer {
    if tier.landlock() {
        layer(
            "landlock",
            true,
            format!("ABI {landlock_abi}: {}", covers.join("; ")),
        )
    } else {
        layer(
            "landlock",
            false,
            format!("not applied at tier {}", tier.as_str()),
        )
    }
}
