//! Issue 17, case 8: a prompt file that starts with a UTF-8 byte order mark (as Windows
//! editors write it), with CRLF lines, or without a final newline, still has its front
//! matter stripped; the agent gets neither the mark nor the YAML block. And a prompt file
//! the agent turns into a FIFO is refused, not waited on.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};
use std::time::Duration;

#[test]
fn the_agent_gets_the_prompt_without_bom_or_front_matter() {
    for (case, text) in [
        ("bom", "\u{feff}---\ntitle: e2e\n---\nKeep a journal.\n"),
        (
            "bom+crlf",
            "\u{feff}---\r\ntitle: e2e\r\n---\r\nKeep a journal.\r\n",
        ),
        ("no final newline", "---\ntitle: e2e\n---\nKeep a journal."),
    ] {
        let p = Project::new();
        p.write("prompts/main.md", text);
        p.git(&["commit", "-qam", "prompt"]);
        let config = p.config().render().replace(
            "[prompt]\n",
            "[prompt]\ncontext_injection_mode = \"none\"\n",
        );
        p.write_config_text(&config);
        p.run(&["round"]).assert_code(0);
        let output = p.agent_output();
        assert!(
            output.contains("demo-agent: round 1; prompt: Keep a journal."),
            "{case}: {output:?}"
        );
        assert!(!output.contains('\u{feff}'), "{case}: {output:?}");
        assert!(!output.contains("title: e2e"), "{case}: {output:?}");
    }
}

#[test]
fn a_prompt_the_agent_turns_into_a_fifo_is_refused_not_waited_on() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        one_a_prompt_the_agent_turns_into_a_fifo_is_refused_not_waited_on(operator);
    }
}

fn one_a_prompt_the_agent_turns_into_a_fifo_is_refused_not_waited_on(operator: Operator) {
    // The prompt lies in the work tree; opening a FIFO for reading would wait for a writer.
    let p = Project::new_as(operator);
    let agent = p.script(
        "fifo-prompt-agent.sh",
        "#!/bin/sh\nrm -f prompts/main.md && mkfifo prompts/main.md\n",
    );
    p.write_config(
        &ConfigBuilder::new(&agent)
            .dirty_action("ignore")
            .restart_delay_s(1),
    );
    let out = p
        .spawn(&["serve", "--max-rounds", "2"])
        .wait(Duration::from_secs(60));
    let all = p.events_text();
    assert_eq!(p.events_of("round_end").len(), 1, "{all}");
    let errors = p.events_of("round_error");
    assert!(!errors.is_empty(), "{all}");
    let error = errors[0]["error"].as_str().unwrap();
    assert!(
        error.contains("prompts/main.md: not a regular file"),
        "{error}"
    );
    assert_ne!(out.code(), 0, "{all}");
}

/// Issue 27 item 9: a prompt no argument can carry (a NUL byte; more than Linux's 131,071
/// bytes in one argument) is refused by `doctor` (its `prompt_delivery` check) and at boot (`round`
/// and `serve` exit 78 naming `prompt.files`), instead of serve failing round after round
/// with "the agent failed without output" though it never started.
#[test]
fn a_prompt_no_argument_can_carry_is_refused_before_any_round() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        for (case, text, says) in [
            (
                "nul",
                "Keep a journal.\0 And more.\n".to_owned(),
                "NUL byte",
            ),
            ("large", "Keep a journal. ".repeat(9000), "MAX_ARG_STRLEN"),
        ] {
            let p = Project::new_as(operator);
            p.write("prompts/main.md", &text);
            p.write_config(&p.config());
            let doctor = p.run(&["doctor", "--json"]);
            assert_eq!(doctor.code(), 78, "{case}: {doctor:?}");
            let report: agent_runner_e2e::serde_json::Value =
                agent_runner_e2e::serde_json::from_str(&doctor.stdout).expect("doctor --json");
            let check = agent_runner_e2e::doctor_check(&report, "prompt_delivery");
            assert_eq!(check["ok"], false, "{case}: {report}");
            assert!(
                check["reason"].as_str().unwrap().contains(says),
                "{case}: {report}"
            );
            for verb in [&["round"][..], &["serve", "--max-rounds", "1"][..]] {
                let out = p.run(verb);
                assert_eq!(out.code(), 78, "{case}: {out:?}");
                assert!(out.stderr.contains("prompt.files"), "{case}: {out:?}");
                assert!(out.stderr.contains(says), "{case}: {out:?}");
            }
            assert!(p.events_of("agent_spawn").is_empty(), "{case}");
        }
    }
}

/// The same large prompt delivered on stdin reaches the agent whole.
#[test]
fn a_large_prompt_on_stdin_reaches_the_agent() {
    let p = Project::new();
    let text = "Keep a journal. ".repeat(9000);
    p.write("prompts/main.md", &text);
    let agent = p.script(
        "stdin-agent.sh",
        "#!/bin/sh\nwc -c > \"$AGENT_RUNNER_LOG_DIR/../prompt-bytes\"\n",
    );
    let mut config = ConfigBuilder::new(&agent).dirty_action("ignore").render();
    config = config
        .replacen(
            "prompt_delivery = \"argv\"",
            "prompt_delivery = \"stdin\"",
            1,
        )
        .replacen(
            "prompt_arg_template = [\"{prompt}\"]",
            "prompt_arg_template = []",
            1,
        );
    p.write_config_text(&config);
    p.run(&["round"]).assert_code(0);
    let bytes = std::fs::read_to_string(p.dir().join("prompt-bytes")).unwrap();
    let bytes: usize = bytes.trim().parse().unwrap();
    assert!(bytes >= text.len(), "{bytes} < {}", text.len());
}
