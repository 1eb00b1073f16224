//! Codex's own sandbox is swapped for `--dangerously-bypass-approvals-and-sandbox` only
//! where our Landlock confines the agent's file system (docs/security.md, "A CLI's own
//! sandbox under ours"). Under `[agent.sandbox] mode = "prefer"` on a machine that offers
//! less (the probe forced down with `AGENT_RUNNER_TEST_PROBE`, as `sandbox_gate.rs` does),
//! a `codex` that got the bypass would run with neither sandbox: this fake codex logs the
//! argv it was given and whether it could write the home directory (outside the tree), and
//! the test holds the two together. Root and the unprivileged user `ar-e2e`; nothing skips.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{Operator, Project, TEST_PROBE_ENV};

/// The fake `codex`: its argv, one word a line, to `argv.txt` in the tree, and whether a
/// write outside the tree (the home directory) worked, to `home-write.txt`.
const FAKE_CODEX: &str = r#"#!/bin/sh
printf '%s\n' "$@" > argv.txt
if echo planted > "$HOME/outside-the-tree" 2>/dev/null; then
  echo succeeded > home-write.txt
else
  echo denied > home-write.txt
fi
exit 0
"#;

const BYPASS: &str = "--dangerously-bypass-approvals-and-sandbox";

fn codex_project(operator: Operator) -> Project {
    let p = Project::new_as(operator);
    let codex = p.script("bin/codex", FAKE_CODEX);
    // auto_commit: the fake's files stay in the tree (a stash would take them away).
    let text = p
        .config()
        .dirty_action("auto_commit")
        .render()
        .replacen(
            &format!(
                "command = [{}]",
                agent_runner_e2e::toml_string(&p.agent_path().display().to_string())
            ),
            &format!(
                "command = [{}, \"exec\", \"--sandbox\", \"workspace-write\", \"--json\"]",
                agent_runner_e2e::toml_string(&codex.display().to_string())
            ),
            1,
        )
        .replacen(
            "[runtime]\n",
            "[agent.sandbox]\nmode = \"prefer\"\n\n[runtime]\n",
            1,
        );
    assert!(text.contains("workspace-write"), "{text}");
    p.write_config_text(&text);
    p
}

/// For each tier the probe is forced to: whether codex gets the bypass, and whether our
/// Landlock keeps the agent out of the home directory.
fn codex_keeps_its_own_sandbox_unless_our_landlock_applies(operator: Operator) {
    for (tier, ours_confines_files) in [
        ("landlock+seccomp", true),
        ("landlock", true),
        ("seccomp", false),
        ("unconfined", false),
    ] {
        let p = codex_project(operator);
        let env = [(TEST_PROBE_ENV, tier)];
        let out = p.run_env(&["round"], &env);
        out.assert_code(0);
        let argv = std::fs::read_to_string(p.dir().join("argv.txt"))
            .unwrap_or_else(|e| panic!("{tier}: the fake codex did not run ({e}): {out}"));
        let argv: Vec<&str> = argv.lines().collect();
        let home_write = std::fs::read_to_string(p.dir().join("home-write.txt")).unwrap();
        let replaced = p.events_of("agent_own_sandbox_replaced");
        let doctor = p.run_env(&["doctor", "--json"], &env);
        let report: Value = serde_json::from_str(&doctor.stdout)
            .unwrap_or_else(|e| panic!("{tier}: doctor --json ({e}): {doctor}"));
        let told = &report["agent_sandbox"]["own_sandbox_replaced"];
        if ours_confines_files {
            assert_eq!(home_write.trim(), "denied", "{tier}: {argv:?}");
            assert_eq!(argv[..2], ["exec", BYPASS], "{tier}");
            assert!(!argv.contains(&"--sandbox"), "{tier}: {argv:?}");
            assert_eq!(replaced.len(), 1, "{tier}: {}", p.events_text());
            assert!(told.is_string(), "{tier}: {report}");
        } else {
            // Our file-system layer is missing (the home is writable): codex keeps its own
            // sandbox, as written in the config.
            assert_eq!(home_write.trim(), "succeeded", "{tier}: {argv:?}");
            assert_eq!(
                argv[..4],
                ["exec", "--sandbox", "workspace-write", "--json"],
                "{tier}"
            );
            assert!(!argv.contains(&BYPASS), "{tier}: {argv:?}");
            assert!(replaced.is_empty(), "{tier}: {}", p.events_text());
            assert!(told.is_null(), "{tier}: {report}");
        }
    }
}

#[test]
fn codex_keeps_its_own_sandbox_unless_our_landlock_applies_as_root() {
    codex_keeps_its_own_sandbox_unless_our_landlock_applies(Operator::Root);
}

#[test]
fn codex_keeps_its_own_sandbox_unless_our_landlock_applies_as_unprivileged_user() {
    codex_keeps_its_own_sandbox_unless_our_landlock_applies(Operator::Unprivileged);
}

/// A codex left with only its own sandbox (`mode = "off"`) may write its work tree, the
/// prompt file included. Without the round context first (`context_injection_mode =
/// "none"`), a prompt file that reads `--dangerously-bypass-approvals-and-sandbox` would
/// reach codex as that option in the next round. The prompt is refused instead: the next
/// round does not start, and codex never sees the word.
#[test]
fn a_prompt_file_the_agent_rewrote_into_an_option_never_reaches_codex() {
    let p = Project::new();
    let codex = p.script(
        "bin/codex",
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" >> argv.txt\necho round >> argv.txt\nprintf -- '{BYPASS}' > prompts/main.md\nexit 0\n"
        ),
    );
    let text = p
        .config()
        .dirty_action("auto_commit")
        .render()
        .replacen(
            &format!(
                "command = [{}]",
                agent_runner_e2e::toml_string(&p.agent_path().display().to_string())
            ),
            &format!(
                "command = [{}, \"exec\", \"--sandbox\", \"workspace-write\", \"--json\"]",
                agent_runner_e2e::toml_string(&codex.display().to_string())
            ),
            1,
        )
        .replacen(
            "[prompt]\n",
            "[prompt]\ncontext_injection_mode = \"none\"\n",
            1,
        );
    p.write_config_text(&text);
    let out = p
        .spawn(&["serve", "--max-rounds", "2"])
        .wait(std::time::Duration::from_secs(60));
    let argv = std::fs::read_to_string(p.dir().join("argv.txt")).unwrap_or_default();
    assert_eq!(argv.matches("round\n").count(), 1, "{argv}\n{out}");
    assert!(!argv.contains(BYPASS), "{argv}");
    assert!(
        format!("{}{}", out.stderr, p.events_text()).contains("starts like an option"),
        "{out}\n{}",
        p.events_text()
    );
    // And a prompt that starts so refuses serve at boot (exit 78).
    let out = p.run(&["serve", "--max-rounds", "1"]);
    out.assert_code(78);
    assert!(out.stderr.contains("starts like an option"), "{out}");
    assert_eq!(
        std::fs::read_to_string(p.dir().join("argv.txt"))
            .unwrap()
            .matches("round\n")
            .count(),
        1
    );
}
