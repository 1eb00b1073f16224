//! The prompt of a round and the agent's argv: `[prompt] file` read fresh each round, YAML
//! front matter stripped (the reference system's `strip_yaml_frontmatter = true`), delivered
//! by argv (`{prompt}` in `prompt_arg_template`) or stdin.

use std::path::Path;

use crate::config::{AgentConfig, PromptDelivery};

/// Reads the prompt file and strips a leading YAML front matter block (`---` … `---`).
pub fn read_prompt(path: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    Ok(strip_front_matter(&text).to_owned())
}

/// `text` without a leading `---\n … \n---\n` block; unchanged when there is none or it
/// is not closed.
pub fn strip_front_matter(text: &str) -> &str {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return text;
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        if line.trim_end() == "---" {
            return &rest[offset..];
        }
    }
    text
}

/// The agent's full argv: `command` then `prompt_arg_template` with `{prompt}` replaced
/// (argv delivery) or as is (stdin delivery).
pub fn agent_argv(agent: &AgentConfig, prompt: &str) -> Vec<String> {
    let mut argv = agent.command.clone();
    argv.extend(
        agent
            .prompt_arg_template
            .iter()
            .map(|arg| match agent.delivery {
                PromptDelivery::Argv => arg.replace("{prompt}", prompt),
                PromptDelivery::Stdin => arg.clone(),
            }),
    );
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_closed_front_matter_only() {
        assert_eq!(strip_front_matter("---\ntitle: x\n---\nbody\n"), "body\n");
        assert_eq!(strip_front_matter("---\nnot closed\n"), "---\nnot closed\n");
        assert_eq!(strip_front_matter("plain"), "plain");
    }

    #[test]
    fn argv_delivery_fills_the_placeholder() {
        let agent = AgentConfig {
            command: vec!["aider".into(), "--yes".into()],
            prompt_arg_template: vec!["--message".into(), "{prompt}".into()],
            name: None,
            env: Default::default(),
            delivery: PromptDelivery::Argv,
        };
        assert_eq!(
            agent_argv(&agent, "do it"),
            ["aider", "--yes", "--message", "do it"]
        );
    }
}
