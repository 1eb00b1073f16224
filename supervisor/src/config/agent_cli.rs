//! Which agent CLI a command is (docs/agent-clis.md, "Which CLI a command is"): the one
//! answer every CLI-specific behaviour reads — the built-in detector that applies, the
//! cooperative stop signal, session resume, the login preconditions, the replacement of
//! codex's own sandbox, and the CLI's own state the agent's sandbox grants.
//!
//! In order, the first that answers:
//! 1. `[agent] cli` (a closed vocabulary: a CLI's name, or `other` for none of them);
//! 2. `command[0]`'s file name, when it is a CLI's name (`claude`, `/opt/x/bin/codex`);
//! 3. a package launcher (`npx`, `bunx`, `uvx`, `pipx run`, `pnpm dlx`, `npm exec`, `env`):
//!    the package or program it is told to run (`npx -y @anthropic-ai/claude-code`,
//!    `uvx --from aider-chat aider`), by the CLI's name or its package's;
//! 4. a shell script (`#!` naming a POSIX shell) that names exactly one CLI, by name or
//!    package, as a word of its commands (`exec claude "$@"`) — unless the agent can write
//!    it (in the work tree or an `[agent.sandbox] write_paths` entry): what the agent
//!    writes is hostile input, and a script it rewrote to name another CLI would be granted
//!    that CLI's login;
//! 5. else none: the agent runs with no CLI-specific behaviour (`true`, a script of the
//!    operator's own), as before.
//!
//! `doctor` shows the answer and how it was reached (`agent_cli`).

use std::path::{Path, PathBuf};

use super::vocabulary::Vocabulary;

/// The agent CLIs agent-runner knows, by the name their executables have.
pub(crate) const KNOWN: &[&str] = &[
    "claude",
    "codex",
    "gemini",
    "aider",
    "kimi",
    "pi",
    "codewhale",
];

/// Each known CLI's package on its registry (npm or PyPI), as a launcher or a wrapper
/// names it (tests/agent-clis/versions.env).
const PACKAGES: &[(&str, &str)] = &[
    ("@anthropic-ai/claude-code", "claude"),
    ("@openai/codex", "codex"),
    ("@google/gemini-cli", "gemini"),
    ("aider-chat", "aider"),
    ("aider-install", "aider"),
    ("kimi-cli", "kimi"),
    ("@mariozechner/pi-coding-agent", "pi"),
];

/// Programs that run another program or package named among their arguments.
const LAUNCHERS: &[&str] = &["npx", "bunx", "uvx", "pipx", "pnpm", "npm", "env"];

/// Options of the launchers that take a value naming the package (`npx -p pkg`, `uvx
/// --from pkg`); other options are skipped without their values.
const PACKAGE_OPTIONS: &[&str] = &["-p", "--package", "--from", "--spec"];

/// Shells whose scripts are read as wrappers.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"];

/// At most this many bytes of a wrapper script are read.
const WRAPPER_MAX_BYTES: u64 = 64 * 1024;

/// `[agent] cli`: which CLI the agent is; `auto` (the default) works it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CliKey {
    /// Worked out from the command ([`identify`]).
    Auto,
    /// Claude Code.
    Claude,
    /// Codex CLI.
    Codex,
    /// Gemini CLI.
    Gemini,
    /// aider.
    Aider,
    /// Kimi CLI.
    Kimi,
    /// pi.
    Pi,
    /// CodeWhale.
    Codewhale,
    /// None of them: no CLI-specific behaviour, whatever the command looks like.
    Other,
}

impl Vocabulary for CliKey {
    const ALL: &'static [Self] = &[
        CliKey::Auto,
        CliKey::Claude,
        CliKey::Codex,
        CliKey::Gemini,
        CliKey::Aider,
        CliKey::Kimi,
        CliKey::Pi,
        CliKey::Codewhale,
        CliKey::Other,
    ];

    fn word(self) -> &'static str {
        match self {
            CliKey::Auto => "auto",
            CliKey::Claude => "claude",
            CliKey::Codex => "codex",
            CliKey::Gemini => "gemini",
            CliKey::Aider => "aider",
            CliKey::Kimi => "kimi",
            CliKey::Pi => "pi",
            CliKey::Codewhale => "codewhale",
            CliKey::Other => "other",
        }
    }
}

/// How the answer was reached (doctor's words).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identified {
    /// `[agent] cli`.
    Key,
    /// `command[0]`'s file name.
    FileName,
    /// A launcher (`npx`, …) told to run it: the launcher's name and the word naming it.
    Launcher {
        /// `npx`, `uvx`, `pipx run`, …
        launcher: String,
        /// The package or program word.
        word: String,
    },
    /// A shell script run as `command[0]` names it.
    Wrapper(PathBuf),
    /// A shell script that may name it, which the agent can write: not read.
    AgentWritableWrapper(PathBuf),
    /// Nothing says it is a known CLI.
    Unknown,
}

/// Which CLI an agent command is, and how that was decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentCli {
    /// The CLI's name (one of [`KNOWN`]); `None`: none agent-runner knows.
    pub name: Option<&'static str>,
    /// How.
    pub how: Identified,
    /// The index in `command` of the CLI's own first argument (1 for `claude -p`, 3 for
    /// `npx -y @openai/codex exec`): where a CLI's own words are looked for.
    pub args_at: usize,
}

impl AgentCli {
    /// One line for `doctor`: the CLI and how it was decided.
    pub(crate) fn describe(&self) -> String {
        let name = self.name.unwrap_or("none of the known CLIs");
        match &self.how {
            Identified::Key => format!("{name} ([agent] cli)"),
            Identified::FileName => format!("{name} (command[0]'s file name)"),
            Identified::Launcher { launcher, word } => {
                format!("{name} (run by {launcher}: {word})")
            }
            Identified::Wrapper(path) => {
                format!("{name} (the wrapper script {} runs it)", path.display())
            }
            Identified::AgentWritableWrapper(path) => format!(
                "{name}: {} is a script the agent can write, so it is not read; set [agent] cli to say which CLI it runs",
                path.display()
            ),
            Identified::Unknown => format!(
                "{name}: no CLI-specific detectors, stop signal, session resume or state grants; set [agent] cli if it is one"
            ),
        }
    }
}

#[cfg(test)]
impl AgentCli {
    /// `command`'s CLI as `[agent] cli = "auto"` works it out, no wrapper read (tests).
    pub(crate) fn of(command: &[String]) -> AgentCli {
        identify(
            command,
            CliKey::Auto,
            &Places {
                work_dir: Path::new("/"),
                path: None,
                agent_writable: &[],
            },
        )
    }
}

/// What identification may look at besides the command.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Places<'a> {
    /// The agent's working directory (a `command[0]` with a slash is relative to it).
    pub work_dir: &'a Path,
    /// The `PATH` the agent's command is looked up on.
    pub path: Option<&'a std::ffi::OsStr>,
    /// Directories the agent can write (the work tree, `[agent.sandbox] write_paths`): a
    /// wrapper there is not read.
    pub agent_writable: &'a [PathBuf],
}

/// Which CLI `command` is, `key` (`[agent] cli`) deciding unless it is `auto`.
pub(crate) fn identify(command: &[String], key: CliKey, places: &Places) -> AgentCli {
    let answer = |name, how, args_at| AgentCli { name, how, args_at };
    if key != CliKey::Auto {
        let name = KNOWN.iter().copied().find(|n| *n == key.word());
        return answer(name, Identified::Key, 1);
    }
    let Some(program) = command.first() else {
        return answer(None, Identified::Unknown, 1);
    };
    let file_name = program.rsplit('/').next().unwrap_or(program);
    if let Some(name) = known_name(file_name) {
        return answer(Some(name), Identified::FileName, 1);
    }
    if LAUNCHERS.contains(&file_name) {
        if let Some((name, word, at)) = launched(file_name, command) {
            let launcher = match file_name {
                "pipx" | "pnpm" | "npm" => format!("{file_name} {}", command[1]),
                _ => file_name.to_owned(),
            };
            return answer(Some(name), Identified::Launcher { launcher, word }, at + 1);
        }
        return answer(None, Identified::Unknown, 1);
    }
    let Some(path) = find_program(program, places) else {
        return answer(None, Identified::Unknown, 1);
    };
    match wrapped(&path) {
        Some(name) => {
            let real = path.canonicalize().unwrap_or_else(|_| path.clone());
            let writable = places
                .agent_writable
                .iter()
                .any(|w| path.starts_with(w) || real.starts_with(w));
            if writable {
                answer(None, Identified::AgentWritableWrapper(path), 1)
            } else {
                answer(Some(name), Identified::Wrapper(path), 1)
            }
        }
        None => answer(None, Identified::Unknown, 1),
    }
}

/// The known CLI a word names: its executable's name, or its package's (a version after
/// `@` left off: `@openai/codex@0.171.0`, `aider-chat==0.86.2`).
fn known_name(word: &str) -> Option<&'static str> {
    let bare = match word.strip_prefix('@') {
        Some(rest) => match rest.find('@') {
            Some(at) => &word[..at + 1],
            None => word,
        },
        None => word
            .split(['@', '=', '<', '>', '~', '['])
            .next()
            .unwrap_or(word),
    };
    KNOWN
        .iter()
        .copied()
        .find(|n| *n == bare)
        .or_else(|| PACKAGES.iter().find(|(p, _)| *p == bare).map(|(_, n)| *n))
}

/// The CLI `launcher` (`command[0]`'s file name) is told to run: the first word after its
/// options naming a known CLI or package, or the value of a package option; with the
/// index of the word that named it.
fn launched(launcher: &str, command: &[String]) -> Option<(&'static str, String, usize)> {
    let mut i = 1;
    // `pipx run`, `pnpm dlx`, `npm exec`: the verb first.
    if matches!(launcher, "pipx" | "pnpm" | "npm") {
        let verb = command.get(1)?.as_str();
        let runs = matches!(
            (launcher, verb),
            ("pipx", "run") | ("pnpm", "dlx" | "exec") | ("npm", "exec" | "x")
        );
        if !runs {
            return None;
        }
        i = 2;
    }
    let mut named = None;
    while let Some(word) = command.get(i) {
        if word == "--" {
            i += 1;
            continue;
        }
        if let Some((option, value)) = word.split_once('=').filter(|_| word.starts_with('-')) {
            if PACKAGE_OPTIONS.contains(&option) {
                named = named.or(known_name(value).map(|n| (n, value.to_owned(), i)));
            }
            i += 1;
            continue;
        }
        if PACKAGE_OPTIONS.contains(&word.as_str()) {
            if let Some(value) = command.get(i + 1) {
                named = named.or(known_name(value).map(|n| (n, value.clone(), i + 1)));
            }
            i += 2;
            continue;
        }
        if word.starts_with('-') || (launcher == "env" && word.contains('=')) {
            i += 1;
            continue;
        }
        // The program or package the launcher runs.
        let name = word.rsplit('/').next().filter(|_| !word.starts_with('@'));
        let found = known_name(word).or_else(|| name.and_then(known_name));
        return match (found, named) {
            (Some(n), _) => Some((n, word.clone(), i)),
            (None, Some((n, w, _))) => Some((n, w, i)),
            (None, None) => None,
        };
    }
    named
}

/// `program` as the exec finds it: with a slash, against the work dir; else the first
/// executable file of that name on the `PATH`.
fn find_program(program: &str, places: &Places) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return Some(places.work_dir.join(program));
    }
    std::env::split_paths(places.path?)
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The one known CLI a shell script at `path` runs, by a word of its commands naming it
/// (`exec claude "$@"`, `exec npx @openai/codex "$@"`); `None` for anything else, or a
/// script naming two.
fn wrapped(path: &Path) -> Option<&'static str> {
    use std::io::Read;
    let file = crate::tree_file::open_regular(path, crate::tree_file::Symlink::Follow).ok()?;
    let mut text = String::new();
    file.take(WRAPPER_MAX_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    let first = text.lines().next()?.strip_prefix("#!")?;
    let mut words = first.split_whitespace();
    let interpreter = words.next()?.rsplit('/').next()?;
    let shell = match interpreter {
        "env" => words.find(|w| !w.starts_with('-'))?,
        other => other,
    };
    if !SHELLS.contains(&shell) {
        return None;
    }
    let mut found = None;
    for line in text.lines().skip(1) {
        let line = line.trim_start();
        if line.starts_with('#') {
            continue;
        }
        let words = line.split(|c: char| c.is_whitespace() || "\"';|&()`$<>".contains(c));
        for word in words.filter(|w| !w.is_empty()) {
            let name = word.rsplit('/').next().filter(|_| !word.starts_with('@'));
            if let Some(cli) = known_name(word).or_else(|| name.and_then(known_name)) {
                match found {
                    None => found = Some(cli),
                    Some(other) if other != cli => return None,
                    Some(_) => {}
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn places(dir: &Path) -> Places<'_> {
        Places {
            work_dir: dir,
            path: None,
            agent_writable: &[],
        }
    }

    #[test]
    fn launchers_are_seen_through() {
        let dir = std::env::temp_dir();
        let cases = [
            ("claude -p", Some("claude"), 1),
            ("/opt/tools/bin/codex exec --json", Some("codex"), 1),
            ("npx -y @anthropic-ai/claude-code -p", Some("claude"), 3),
            (
                "npx --yes @openai/codex@0.171.0 exec --json",
                Some("codex"),
                3,
            ),
            ("npx -p @google/gemini-cli gemini --yolo", Some("gemini"), 4),
            ("bunx @google/gemini-cli --yolo", Some("gemini"), 2),
            ("uvx --from aider-chat aider --yes-always", Some("aider"), 4),
            ("uvx kimi-cli --print", Some("kimi"), 2),
            ("pipx run aider-chat --yes", Some("aider"), 3),
            ("pnpm dlx @mariozechner/pi-coding-agent -p", Some("pi"), 3),
            ("env FOO=1 claude -p", Some("claude"), 3),
            ("npx -y cowsay hi", None, 1),
            ("pipx install aider-chat", None, 1),
            ("true", None, 1),
        ];
        for (command, name, args_at) in cases {
            let cli = identify(&words(command), CliKey::Auto, &places(&dir));
            assert_eq!((cli.name, cli.args_at), (name, args_at), "{command}");
        }
        // The key decides, whatever the command.
        let cli = identify(&words("npx -y cowsay"), CliKey::Claude, &places(&dir));
        assert_eq!((cli.name, cli.how), (Some("claude"), Identified::Key));
        let cli = identify(&words("claude -p"), CliKey::Other, &places(&dir));
        assert_eq!(cli.name, None);
    }

    #[test]
    fn wrapper_scripts_are_read_unless_the_agent_can_write_them() {
        use std::os::unix::fs::PermissionsExt;
        let outside = tempfile::tempdir().unwrap();
        let tree = tempfile::tempdir().unwrap();
        let write = |dir: &Path, name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        };
        let wrapper = write(
            outside.path(),
            "agent",
            "#!/bin/sh\n# not codex\nexport X=1\nexec /usr/local/bin/claude --model x \"$@\"\n",
        );
        let two = write(outside.path(), "two", "#!/bin/bash\nclaude; codex\n");
        let node = write(outside.path(), "bundle", "#!/usr/bin/env node\nclaude()\n");
        let in_tree = write(
            tree.path(),
            "agent.sh",
            "#!/usr/bin/env bash\nexec claude\n",
        );
        let writable = [tree.path().to_owned()];
        let places = Places {
            work_dir: tree.path(),
            path: Some(outside.path().as_os_str()),
            agent_writable: &writable,
        };
        let of = |program: &Path| identify(&[program.display().to_string()], CliKey::Auto, &places);
        assert_eq!(of(&wrapper).name, Some("claude"));
        assert_eq!(of(&wrapper).how, Identified::Wrapper(wrapper.clone()));
        // Found on PATH by its name, too.
        assert_eq!(
            identify(&words("agent"), CliKey::Auto, &places).name,
            Some("claude")
        );
        assert_eq!(of(&two).name, None);
        assert_eq!(of(&node).name, None);
        let cli = identify(&words("./agent.sh"), CliKey::Auto, &places);
        assert_eq!(cli.name, None);
        assert!(matches!(cli.how, Identified::AgentWritableWrapper(_)));
        assert!(cli.describe().contains("set [agent] cli"));
        // The control: the same script outside the agent's reach is read.
        let moved = write(
            outside.path(),
            "agent2.sh",
            "#!/usr/bin/env bash\nexec claude\n",
        );
        assert_eq!(of(&moved).name, Some("claude"));
        drop(in_tree);
    }
}
