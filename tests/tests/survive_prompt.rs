//! Issue 17, case 8: a prompt file that starts with a UTF-8 byte order mark (as Windows
//! editors write it), with CRLF lines, or without a final newline, still has its front
//! matter stripped; the agent gets neither the mark nor the YAML block.

use agent_runner_e2e::Project;

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
