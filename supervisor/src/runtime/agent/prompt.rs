//! The prompt of a round and the agent's argv: the `[prompt]` files read fresh each round
//! and joined with `concat_separator`, the first one's YAML front matter stripped
//! (`strip_yaml_frontmatter`), the round context prepended (`context_injection_mode =
//! "prepend"`, [`crate::runtime::agent::round_context::prepended`]), delivered
//! by argv (`{prompt}` in `prompt_arg_template`) or stdin.

use std::path::PathBuf;

use crate::config::{AgentConfig, PromptConfig, PromptDelivery};
use crate::tree_file::KnownLinks;

/// Assembles the prompt from `files` (`files[0]` must be readable; a later missing file
/// is skipped with a warning), then prepends `context` (the round context's text,
/// [`crate::runtime::agent::round_context::prepended`]) and a blank line when given. Each file is
/// read only where it resolves as `links` knew it ([`KnownLinks::check`]).
///
/// Errors: `files[0]` or a present later file cannot be read, or leads somewhere through a
/// link `links` did not know.
pub(crate) fn assemble(
    config: &PromptConfig,
    files: &[PathBuf],
    context: Option<&str>,
    links: &KnownLinks,
) -> std::io::Result<String> {
    let mut bodies = Vec::with_capacity(files.len());
    for (i, path) in files.iter().enumerate() {
        let read = links
            .check(path)
            .and_then(|()| crate::tree_file::read_regular_to_string(path));
        let text = match read {
            Ok(text) => text,
            Err(e) if i > 0 && e.kind() == std::io::ErrorKind::NotFound => {
                tracing::warn!("prompt file {} is missing; skipped", path.display());
                continue;
            }
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("{}: {e}", path.display()),
                ))
            }
        };
        bodies.push(if i == 0 && config.strip_yaml_frontmatter {
            strip_front_matter(&text).to_owned()
        } else {
            without_bom(&text).to_owned()
        });
    }
    let body = bodies.join(&config.concat_separator);
    Ok(match context {
        Some(ctx) => format!("{ctx}\n\n{body}"),
        None => body,
    })
}

/// `text` without a leading UTF-8 byte order mark (editors on Windows write one; it means
/// nothing to the agent).
fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// `text` without a leading byte order mark and a leading `---\n … \n---\n` block (LF or
/// CRLF lines; the closing `---` may end the file); only the mark is removed when there is
/// no block or it is not closed.
pub(crate) fn strip_front_matter(text: &str) -> &str {
    let text = without_bom(text);
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

/// The most bytes one argument can carry on Linux (`MAX_ARG_STRLEN`, 32 pages of 4 KiB,
/// its terminating NUL included): a longer one fails `execve(2)` with `E2BIG`.
pub(crate) const MAX_ARG_BYTES: usize = 32 * 4096 - 1;

/// Why `prompt` cannot reach `agent`, with the fix: under argv delivery a NUL byte (no
/// argument can carry one: the agent would never start) or an argument longer than
/// [`MAX_ARG_BYTES`]. `None` when it can; stdin carries any prompt.
pub(crate) fn undeliverable(agent: &AgentConfig, prompt: &str) -> Option<(String, String)> {
    if agent.delivery != PromptDelivery::Argv {
        return None;
    }
    let to_stdin = "or deliver it on stdin ([agent] prompt_delivery = \"stdin\", for a CLI that reads its prompt there)";
    if let Some(at) = prompt.find('\0') {
        return Some((
            format!("the prompt contains a NUL byte (at byte {at} of the assembled prompt): no argument can carry one, so the agent could not be started"),
            format!("remove the NUL byte from the prompt files, {to_stdin}"),
        ));
    }
    // A prompt that begins an argument with `-` is read by the CLI as an option: a
    // prompt file the agent may write (it is in the tree) could then pass
    // `--dangerously-bypass-approvals-and-sandbox` to codex (docs/security.md, "Attacked
    // again: codex's bypass, `upgrade`, what the agent reaches").
    if looks_like_option(prompt)
        && (agent.prompt_arg_template.iter()).any(|arg| arg.starts_with("{prompt}"))
    {
        let first: String = prompt
            .split_whitespace()
            .next()
            .unwrap_or("")
            .chars()
            .take(60)
            .collect();
        return Some((
            format!("the prompt starts like an option (`{first}`): the agent's CLI would read it as an option, not as its prompt"),
            format!("start the prompt files with other text, keep [prompt] context_injection_mode = \"prepend\" (the default: the round context comes first), {to_stdin}"),
        ));
    }
    let longest = agent
        .prompt_arg_template
        .iter()
        .filter(|arg| arg.contains("{prompt}"))
        .map(|arg| arg.replace("{prompt}", prompt).len())
        .max()?;
    (longest > MAX_ARG_BYTES).then(|| {
        (
            format!("the argument carrying the prompt is {longest} bytes; Linux passes at most {MAX_ARG_BYTES} bytes in one argument (MAX_ARG_STRLEN), so the agent could not be started"),
            format!("shorten the prompt files, {to_stdin}"),
        )
    })
}

/// Whether `text` begins like a command-line option: `-x` or `--x`, `x` a letter or digit
/// (a YAML `---` line or a `- item` list is not).
fn looks_like_option(text: &str) -> bool {
    let rest = text.strip_prefix("--").or_else(|| text.strip_prefix('-'));
    rest.and_then(|r| r.chars().next())
        .is_some_and(|c| c.is_ascii_alphanumeric())
}

/// [`undeliverable`] for the prompt of every phase as its files are now (without the round
/// context, which each round adds and checks again): `doctor` reports it, `serve` and
/// `round` refuse to start (exit 78, key `prompt.files`). An unreadable prompt file is
/// left to the round, which reports it.
pub(crate) fn undeliverable_now(config: &crate::config::Config) -> Vec<(String, String)> {
    let phases = config
        .phases
        .overrides
        .keys()
        .map(|name| Some(name.as_str()));
    std::iter::once(None)
        .chain(phases)
        .filter_map(|phase| {
            let profile = config.profile(phase);
            let prompt = assemble(
                &config.prompt,
                profile.prompt_files,
                None,
                &KnownLinks::default(),
            )
            .ok()?;
            let (reason, fix) = undeliverable(profile.agent, &prompt)?;
            let files: Vec<String> = (profile.prompt_files.iter())
                .map(|f| f.display().to_string())
                .collect();
            let whose = phase.map_or(String::new(), |p| format!("phase {p}: "));
            Some((format!("{whose}{reason} ({})", files.join(", ")), fix))
        })
        .collect()
}

/// The agent's command as spawn hooks see it (`spawn.argv`, docs/protocol.md §5): the
/// command, then `prompt_arg_template` verbatim, `{prompt}` left in place of the prompt.
/// The prompt never goes to a host: it can be larger than a protocol line.
pub(crate) fn spawn_view_argv(agent: &AgentConfig) -> Vec<String> {
    let mut argv = agent.command.clone();
    argv.extend(agent.prompt_arg_template.iter().cloned());
    argv
}

/// The agent's full argv: `exec_prefix` with `{work_dir}` replaced (the reference system's
/// rule: only in the prefix), then `command`, then `resume_args` (session resume:
/// `crate::runtime::agent::sessions`), then `prompt_arg_template` with `{prompt}` replaced (argv
/// delivery) or as is (stdin delivery).
pub(crate) fn agent_argv(
    agent: &AgentConfig,
    resume_args: &[String],
    prompt: &str,
    work_dir: &std::path::Path,
) -> Vec<String> {
    let work_dir = work_dir.display().to_string();
    let mut argv: Vec<String> = agent
        .exec_prefix
        .iter()
        .map(|word| word.replace("{work_dir}", &work_dir))
        .collect();
    argv.extend(agent.command.iter().cloned());
    argv.extend(resume_args.iter().cloned());
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
    use crate::config::ContextInjection;

    #[test]
    fn an_option_looking_prompt_is_told_apart() {
        for text in [
            "--dangerously-bypass-approvals-and-sandbox",
            "-sdanger",
            "--x y",
        ] {
            assert!(looks_like_option(text), "{text}");
        }
        for text in ["---\ntitle: x\n---\n", "- item", "-", "--", "Keep -s", ""] {
            assert!(!looks_like_option(text), "{text:?}");
        }
    }

    #[test]
    fn files_are_joined_and_the_context_prepended() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.md");
        let b = dir.path().join("b.md");
        std::fs::write(&a, "---\ntitle: a\n---\nA").unwrap();
        std::fs::write(&b, "---\nkept: yes\n---\nB").unwrap();
        let mut config = PromptConfig {
            files: vec![],
            concat_separator: "\n--\n".into(),
            strip_yaml_frontmatter: true,
            injection: ContextInjection::Prepend,
        };
        let missing = dir.path().join("missing.md");
        let files = [a.clone(), missing, b];
        assert_eq!(
            assemble(&config, &files, None, &KnownLinks::default()).unwrap(),
            "A\n--\n---\nkept: yes\n---\nB"
        );
        let text = assemble(
            &config,
            &files[..1],
            Some("CONTEXT"),
            &KnownLinks::default(),
        )
        .unwrap();
        assert_eq!(
            text,
            "CONTEXT

A"
        );
        config.strip_yaml_frontmatter = false;
        assert!(assemble(&config, &files[..1], None, &KnownLinks::default())
            .unwrap()
            .starts_with("---\n"));
        assert!(assemble(&config, &files[1..2], None, &KnownLinks::default()).is_err());
    }

    #[test]
    fn strips_closed_front_matter_only() {
        assert_eq!(strip_front_matter("---\ntitle: x\n---\nbody\n"), "body\n");
        assert_eq!(strip_front_matter("---\nnot closed\n"), "---\nnot closed\n");
        assert_eq!(strip_front_matter("plain"), "plain");
    }

    #[test]
    fn front_matter_after_a_bom_with_crlf_or_no_final_newline() {
        assert_eq!(
            strip_front_matter("\u{feff}---\ntitle: x\n---\nbody\n"),
            "body\n"
        );
        assert_eq!(
            strip_front_matter("\u{feff}---\r\ntitle: x\r\n---\r\nbody\r\n"),
            "body\r\n"
        );
        assert_eq!(strip_front_matter("---\ntitle: x\n---"), "");
        assert_eq!(strip_front_matter("\u{feff}plain"), "plain");
        assert_eq!(strip_front_matter("\u{feff}---\nopen\n"), "---\nopen\n");
    }

    #[test]
    fn argv_delivery_fills_the_placeholder() {
        let agent = AgentConfig {
            cli: crate::config::agent_cli::AgentCli::of(&["aider".into()]),
            command: vec!["aider".into(), "--yes".into()],
            prompt_arg_template: vec!["--message".into(), "{prompt}".into()],
            name: None,
            env: Default::default(),
            delivery: PromptDelivery::Argv,
            exec_prefix: Vec::new(),
            terminal_marker: String::new(),
            sigterm_grace: std::time::Duration::from_secs(10),
            session_resume: true,
            session_bounds: Default::default(),
            allow_hosts: None,
        };
        let work_dir = std::path::Path::new("/srv/p");
        assert_eq!(
            agent_argv(&agent, &[], "do it", work_dir),
            ["aider", "--yes", "--message", "do it"]
        );
        let prefixed = AgentConfig {
            exec_prefix: vec![
                "docker".into(),
                "run".into(),
                "-v".into(),
                "{work_dir}:/w".into(),
            ],
            command: vec!["aider".into(), "{work_dir}".into()],
            ..agent
        };
        assert_eq!(
            agent_argv(
                &prefixed,
                &["--restore-chat-history".to_owned()],
                "do it",
                work_dir
            ),
            [
                "docker",
                "run",
                "-v",
                "/srv/p:/w",
                "aider",
                "{work_dir}",
                "--restore-chat-history",
                "--message",
                "do it"
            ]
        );
    }
}
