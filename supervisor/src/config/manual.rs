//! What the manual page (`agent-runner man`, generated from the CLI) says of the config:
//! the `[agent.sandbox]` keys, from their definitions ([`super::keys`]), so the page and
//! docs/configuration.md cannot disagree.

use super::raw::RawAgentSandbox;

/// The manual page's section on the agent's sandbox: every key of `[agent.sandbox]` with
/// its type, default and meaning, and where the other keys are described.
pub(crate) fn man_section() -> String {
    let mut text = String::from(
        "THE AGENT'S SANDBOX. The agent itself runs confined when agent-runner.toml's \
         [agent.sandbox] mode is \"prefer\" (what init writes) or \"require\": the work tree, \
         its own CLI state, a private TMPDIR and the system; never the credential stores or \
         the supervisor's state; TCP connect only to port 443 and connect_ports. A refusal \
         (Permission denied, EACCES, a 403 from the egress proxy) is fixed by one of these \
         keys; agent-runner doctor shows each layer. Every other key: docs/configuration.md; \
         what confinement does: docs/security.md.\n",
    );
    for key in RawAgentSandbox::KEYS {
        text.push_str(&format!(
            "\n[agent.sandbox] {} ({}; default {}): {}\n",
            key.field,
            (key.type_label)().replace(['`', '\\'], ""),
            (key.default_doc)().replace('`', ""),
            key.doc().replace('`', "")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manual page names every `[agent.sandbox]` key (`agent-runner man`).
    #[test]
    fn the_man_section_names_every_agent_sandbox_key() {
        let text = man_section();
        assert!(RawAgentSandbox::KEYS.len() >= 5);
        for key in RawAgentSandbox::KEYS {
            assert!(
                text.contains(&format!("[agent.sandbox] {} (", key.field)),
                "{}: {text}",
                key.field
            );
        }
        assert!(text.contains("connect_ports"), "{text}");
    }
}
