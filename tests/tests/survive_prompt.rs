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
