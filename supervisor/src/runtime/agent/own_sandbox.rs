//! A CLI's own sandbox replaced by ours when the agent runs confined (docs/security.md,
//! "A CLI's own sandbox under ours").
//!
//! Codex CLI confines each shell command it runs with a sandbox it builds itself (its
//! `--sandbox read-only | workspace-write`, or its default): a helper that
//! makes namespaces and a Landlock ruleset of its own. Inside our confinement that cannot
//! be built (our seccomp filter refuses `unshare`, `mount` and the namespace calls, and
//! every capability is gone): each tool call fails, and codex exits 0 having done nothing
//! (seen with codex-cli 0.171.0). So when the agent is confined by us, the `codex`
//! command's sandbox words are swapped for `--dangerously-bypass-approvals-and-sandbox`
//! (codex's `exec --help`: "Intended solely for running in environments that are
//! externally sandboxed"): our Landlock, seccomp and PID namespace then cover codex and
//! every command it runs. Without our Landlock (`off`, or `prefer` on a machine offering
//! seccomp at most) the command is left as written and codex keeps its own sandbox: the
//! bypass is never given where our file-system layer is missing. The swap is recorded
//! each round (`agent_own_sandbox_replaced`) and shown by `doctor` and `peek`
//! (`agent_sandbox.own_sandbox_replaced`).
//!
//! Other CLIs: Claude Code's optional bubblewrap sandbox is off unless its settings turn
//! it on, and gemini's (`--sandbox`, a container) is off by default; their commands are
//! never changed.

use crate::config::agent_cli::AgentCli;

/// codex's flag that turns its own sandbox (and approvals) off.
pub(crate) const CODEX_BYPASS: &str = "--dangerously-bypass-approvals-and-sandbox";

/// Why the swap is made, as recorded.
pub(crate) const CODEX_REASON: &str = "codex's own sandbox (namespaces and a Landlock ruleset it builds per tool call) cannot be built inside the agent's confinement, whose seccomp filter refuses the namespace calls: its tool calls would fail; our Landlock, seccomp and PID namespace confine codex and every command it runs instead";

/// A command whose CLI's own sandbox was replaced by ours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Replaced {
    /// The CLI ([`crate::config::AgentConfig::cli`]).
    pub cli: String,
    /// The words taken out (`["--sandbox", "workspace-write"]`; empty when the command
    /// relied on the CLI's default sandbox).
    pub removed: Vec<String>,
    /// The words put in their place.
    pub added: Vec<String>,
    /// Why.
    pub reason: &'static str,
}

impl Replaced {
    /// One line for `doctor` and `peek`: what was swapped for what, and why.
    pub(crate) fn describe(&self) -> String {
        let removed = if self.removed.is_empty() {
            "its default sandbox".to_owned()
        } else {
            format!("`{}`", self.removed.join(" "))
        };
        format!(
            "{}'s own sandbox ({removed}) is replaced by ours: `{}` is passed instead, because {}",
            self.cli,
            self.added.join(" "),
            self.reason
        )
    }
}

/// `command` (the agent's `[agent] command`, `command[0]` first) run by `cli` as it runs
/// confined by us, and what was replaced; `None` when nothing is (not codex, or codex
/// already without its own sandbox: the bypass flag or `--sandbox danger-full-access`).
/// codex's own words start at `cli.args_at` (after `npx -y @openai/codex`, say); the
/// launcher's words before them are left as they are.
pub(crate) fn confined_command(
    cli: &AgentCli,
    command: &[String],
) -> Option<(Vec<String>, Replaced)> {
    if cli.name != Some("codex") || command.is_empty() {
        return None;
    }
    let start = cli.args_at.clamp(1, command.len());
    let mut out = Vec::with_capacity(command.len() + 1);
    out.extend(command[..start].iter().cloned());
    let mut removed = Vec::new();
    let mut at = None;
    let mut words = command[start..].iter();
    while let Some(word) = words.next() {
        let value = match word.as_str() {
            CODEX_BYPASS => return None,
            "--sandbox" | "-s" => words.next().cloned(),
            w if w.starts_with("--sandbox=") => Some(w["--sandbox=".len()..].to_owned()),
            _ => {
                out.push(word.clone());
                continue;
            }
        };
        if value.as_deref() == Some("danger-full-access") {
            return None;
        }
        at.get_or_insert(out.len());
        removed.push(word.clone());
        if let Some(v) = value.filter(|_| !word.contains('=')) {
            removed.push(v);
        }
    }
    // Where the words were, or after `exec` (codex's non-interactive verb), or after
    // `codex` itself.
    let at = at.unwrap_or_else(|| match out.get(start).map(String::as_str) {
        Some("exec" | "e") => start + 1,
        _ => start,
    });
    out.insert(at, CODEX_BYPASS.to_owned());
    Some((
        out,
        Replaced {
            cli: "codex".to_owned(),
            removed,
            added: vec![CODEX_BYPASS.to_owned()],
            reason: CODEX_REASON,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::{AgentCli, Replaced, CODEX_BYPASS};

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    /// `command` as the round runs it confined, its CLI worked out as the config does.
    fn confined_command(command: &[String]) -> Option<(Vec<String>, Replaced)> {
        super::confined_command(&AgentCli::of(command), command)
    }

    #[test]
    fn codex_preset_gets_the_bypass_in_place_of_its_sandbox() {
        let (argv, r) =
            confined_command(&words("codex exec --sandbox workspace-write --json")).unwrap();
        assert_eq!(
            argv,
            words("codex exec --dangerously-bypass-approvals-and-sandbox --json")
        );
        assert_eq!(r.removed, words("--sandbox workspace-write"));
        assert_eq!(r.added, [CODEX_BYPASS]);
        assert!(
            r.describe().contains("`--sandbox workspace-write`"),
            "{}",
            r.describe()
        );
    }

    #[test]
    fn every_spelling_of_codex_s_own_sandbox_is_replaced() {
        for (command, removed) in [
            ("/opt/bin/codex exec -s read-only --json", "-s read-only"),
            (
                "codex exec --sandbox=workspace-write --json",
                "--sandbox=workspace-write",
            ),
        ] {
            let (argv, r) = confined_command(&words(command)).unwrap();
            assert_eq!(r.removed, words(removed), "{command}");
            assert_eq!(argv[2], CODEX_BYPASS, "{command}: {argv:?}");
            assert_eq!(argv.len(), 4, "{command}: {argv:?}");
        }
        // Codex's default sandbox (no flag): the bypass goes after `exec`.
        let (argv, r) = confined_command(&words("codex exec --json")).unwrap();
        assert_eq!(
            argv,
            words("codex exec --dangerously-bypass-approvals-and-sandbox --json")
        );
        assert!(r.removed.is_empty());
        assert!(r.describe().contains("its default sandbox"));
    }

    #[test]
    fn nothing_is_replaced_where_codex_has_no_sandbox_of_its_own_or_it_is_not_codex() {
        for command in [
            "codex exec --dangerously-bypass-approvals-and-sandbox --json",
            "codex exec --sandbox danger-full-access --json",
            "claude -p --output-format stream-json",
            "gemini --sandbox",
            "my-codex exec --sandbox workspace-write",
        ] {
            assert_eq!(confined_command(&words(command)), None, "{command}");
        }
        assert_eq!(confined_command(&[]), None);
    }

    /// codex started through npx: the launcher's words stay, codex's own are replaced.
    #[test]
    fn codex_through_a_launcher_gets_the_bypass_among_its_own_words() {
        let (argv, r) = confined_command(&words(
            "npx -y @openai/codex exec --sandbox workspace-write --json",
        ))
        .unwrap();
        assert_eq!(
            argv,
            words("npx -y @openai/codex exec --dangerously-bypass-approvals-and-sandbox --json")
        );
        assert_eq!(r.cli, "codex");
        let (argv, _) = confined_command(&words("npx -y @openai/codex exec --json")).unwrap();
        assert_eq!(argv[4], CODEX_BYPASS, "{argv:?}");
    }
}
