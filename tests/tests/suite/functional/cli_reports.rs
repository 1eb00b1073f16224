//! A CLI's own error report is kept beside the round log (docs/agent-clis.md, "Error
//! reports"): a stand-in gemini, confined (`prefer`, so its TMPDIR is the supervisor's
//! `agent-tmp`, emptied before every round), writes a report there as gemini does and
//! prints its path; after the round a copy lies next to the round log, and it is still
//! there after the next round emptied the TMPDIR. The control: an agent that is not gemini
//! writing the same file gets nothing kept.

use agent_runner_e2e::{ConfigBuilder, Project};

const GEMINI: &str = "#!/bin/sh\n\
    report=\"$TMPDIR/gemini-client-error-Turn.run-sendMessageStream-R$AGENT_RUNNER_ROUND_NUM.json\"\n\
    echo '{\"error\":{\"code\":429}}' > \"$report\"\n\
    echo \"Error when talking to Gemini API Full report available at: $report\"\n\
    exit 1\n";

fn kept(p: &Project) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(p.log_dir().join("rounds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".gemini-client-error-"))
        .collect();
    names.sort();
    names
}

fn run_twice(name: &str) -> Project {
    let p = Project::new();
    let agent = p.script(&format!("bin/{name}"), GEMINI);
    p.write_config(
        &ConfigBuilder::new(&agent)
            .dirty_action("ignore")
            .extra("[agent.sandbox]\nmode = \"prefer\""),
    );
    p.run(&["round"]).assert_code(1);
    p.run(&["round"]).assert_code(1);
    p
}

#[test]
fn gemini_s_error_report_is_kept_beside_the_round_log() {
    let p = run_twice("gemini");
    let kept = kept(&p);
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(
        kept[0].starts_with("R1-") && kept[0].ends_with("-R1.json"),
        "{kept:?}"
    );
    assert!(kept[1].starts_with("R2-"), "{kept:?}");
    let copy = std::fs::read_to_string(p.log_dir().join("rounds").join(&kept[0])).unwrap();
    assert!(copy.contains("429"), "{copy}");
    // The TMPDIR itself was emptied for round 2: round 1's report is gone from it.
    let tmp = p.state_dir().join("agent-tmp");
    assert!(!tmp
        .join("gemini-client-error-Turn.run-sendMessageStream-R1.json")
        .exists());
}

#[test]
fn another_cli_s_files_are_not_kept() {
    let p = run_twice("my-agent");
    assert!(kept(&p).is_empty(), "{:?}", kept(&p));
}
