//! Phases and prompt assembly on real rounds: `[phases] list` rotation by round number,
//! `round --phase`, per-phase overrides (budget, prompt files, agent env), the phase in
//! `round_start`, `AGENT_RUNNER_PHASE` and the auto-commit subject; `files` joined with
//! `concat_separator`; the round context prepended or written to a file.

use agent_runner_e2e::{ConfigBuilder, Project};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

/// An agent that records its phase, its env knob and its whole prompt, and leaves the
/// tree dirty.
fn recording_agent(p: &Project) -> PathBuf {
    let path = p.tmp_dir().join("recording-agent.sh");
    let record = p.tmp_dir().join("record");
    std::fs::write(
        &path,
        format!(
            "#!/usr/bin/env bash\nn=$AGENT_RUNNER_ROUND_NUM\nprintf '%s' \"$1\" > {r}/prompt-$n\necho \"$AGENT_RUNNER_PHASE ${{KNOB:-}}\" > {r}/phase-$n\necho \"${{AGENT_RUNNER_CONTEXT_FILE:-}}\" > {r}/ctxfile-$n\necho work $n >> work.txt\n",
            r = record.display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(&record).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn recorded(p: &Project, what: &str, round: u64) -> String {
    std::fs::read_to_string(p.tmp_dir().join(format!("record/{what}-{round}")))
        .unwrap_or_else(|e| panic!("{what}-{round}: {e}"))
}

#[test]
fn phases_rotate_by_round_number_with_their_overrides() {
    let p = Project::new();
    p.write("prompts/review.md", "Review only.");
    let agent = recording_agent(&p);
    let text = ConfigBuilder::new(&agent)
        .dirty_action("auto_commit")
        .render()
        + "[phases]\nlist = [\"build\", \"review\", \"build\"]\n\n\
           [phases.review]\nround_budget_s = 7\n\
           [phases.review.prompt]\nfiles = [\"./prompts/review.md\"]\n\
           [phases.review.agent.env]\nKNOB = \"careful\"\n";
    p.write_config_text(&text);
    let out = p
        .spawn(&["serve", "--max-rounds", "4"])
        .wait(Duration::from_secs(120));
    out.assert_code(0);
    let all = p.events_text();
    let phases: Vec<String> = p
        .events_of("round_start")
        .iter()
        .map(|e| e["phase"].as_str().unwrap_or("<none>").to_owned())
        .collect();
    assert_eq!(phases, ["build", "review", "build", "build"], "{all}");
    let budgets: Vec<u64> = p
        .events_of("agent_spawn")
        .iter()
        .map(|e| e["timeout_s"].as_u64().unwrap())
        .collect();
    assert_eq!(budgets, [60, 7, 60, 60], "{all}");
    assert_eq!(recorded(&p, "phase", 1).trim(), "build");
    assert_eq!(recorded(&p, "phase", 2).trim(), "review careful");
    assert!(recorded(&p, "prompt", 2).ends_with("Review only."));
    assert!(recorded(&p, "prompt", 1).ends_with("Keep a journal in notes/journal.md.\n"));
    let subjects = p.log_subjects();
    assert!(
        subjects.contains(&"agent-runner auto-commit: R2 review".to_owned()),
        "{subjects:?}"
    );
    assert!(subjects.contains(&"agent-runner auto-commit: R1 build".to_owned()));
}

#[test]
fn round_phase_overrides_the_rotation_and_unknown_phases_are_refused() {
    let p = Project::new();
    let agent = recording_agent(&p);
    let text = ConfigBuilder::new(&agent).dirty_action("ignore").render()
        + "[phases]\nlist = [\"build\", \"review\"]\n";
    p.write_config_text(&text);
    p.run(&["round", "--phase", "review"]).assert_code(0);
    assert_eq!(p.events_of("round_start")[0]["phase"], "review");
    assert_eq!(recorded(&p, "phase", 1).trim(), "review");
    let out = p.run(&["round", "--phase", "deploy"]);
    out.assert_code(2);
    assert!(out.stderr.contains("deploy"), "{out}");
}

#[test]
fn files_are_joined_and_the_context_is_prepended_with_the_previous_round_and_orphan() {
    let p = Project::new();
    p.write("prompts/extra.md", "Second part.");
    let agent = recording_agent(&p);
    let text = ConfigBuilder::new(&agent)
        .dirty_action("stash")
        .render()
        .replace(
            "file = \"./prompts/main.md\"\n",
            "files = [\"./prompts/main.md\", \"./prompts/missing.md\", \"./prompts/extra.md\"]\nconcat_separator = \"\\n---8<---\\n\"\n",
        );
    p.write_config_text(&text);
    p.run(&["round"]).assert_code(0);
    p.run(&["round"]).assert_code(0);
    let first = recorded(&p, "prompt", 1);
    assert!(first.starts_with("```json round-context\n"), "{first}");
    assert!(
        first.ends_with("```\n\nKeep a journal in notes/journal.md.\n\n---8<---\nSecond part."),
        "{first}"
    );
    let second = recorded(&p, "prompt", 2);
    let json_text = second
        .strip_prefix("```json round-context\n")
        .and_then(|r| r.split_once("\n```\n\n"))
        .map(|(j, _)| j)
        .expect("a fenced block");
    let ctx: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(json_text).unwrap();
    assert_eq!(ctx["round_num"], 2, "{ctx}");
    assert_eq!(ctx["previous"]["round_num"], 1, "{ctx}");
    assert_eq!(ctx["previous"]["exit_code"], 0, "{ctx}");
    assert_eq!(ctx["previous"]["exit_cause"], "exited", "{ctx}");
    assert!(ctx["previous"]["duration_s"].as_f64().is_some(), "{ctx}");
    let stash = p.events_of("orphan_stashed")[0]["ref"].clone();
    assert_eq!(ctx["orphan_stash"]["ref"], stash, "{ctx}");
    assert_eq!(ctx["orphan_stash"]["round_num"], 1, "{ctx}");
}

#[test]
fn file_mode_writes_round_context_json_and_names_it() {
    let p = Project::new();
    let agent = recording_agent(&p);
    let text = ConfigBuilder::new(&agent)
        .dirty_action("ignore")
        .render()
        .replace(
            "file = \"./prompts/main.md\"\n",
            "file = \"./prompts/main.md\"\ncontext_injection_mode = \"file\"\nstrip_yaml_frontmatter = false\n",
        );
    p.write_config_text(&text);
    p.run(&["round"]).assert_code(0);
    let prompt = recorded(&p, "prompt", 1);
    assert!(
        prompt.starts_with("---\ntitle: e2e prompt\n---\n"),
        "{prompt}"
    );
    let file = recorded(&p, "ctxfile", 1);
    let file = file.trim();
    assert_eq!(
        std::path::Path::new(file),
        p.log_dir().join("round-context.json")
    );
    let ctx: agent_runner_e2e::serde_json::Value =
        agent_runner_e2e::serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(ctx["round_num"], 1, "{ctx}");
}
