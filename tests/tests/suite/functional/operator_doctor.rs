//! `doctor`'s own checks beyond the gate: `log_dir` writable or creatable (checked without
//! creating it), the prompt present and not truncated, the phase plan of `--rounds N`.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::Project;

fn doctor(p: &Project) -> (i32, Value) {
    let out = p.run(&["doctor", "--json", "--rounds", "3"]);
    let report = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    (out.code(), report)
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check: {report:#}"))
}

#[test]
fn healthy_fresh_project_with_phase_plan() {
    let p = Project::new();
    p.write_config(&p.config());
    let (code, report) = doctor(&p);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(check(&report, "log_dir")["ok"], true);
    assert!(check(&report, "log_dir")["reason"]
        .as_str()
        .unwrap()
        .contains("does not exist yet"));
    assert_eq!(check(&report, "prompt")["ok"], true);
    assert!(!p.log_dir().exists(), "doctor created log_dir");
    let plan = report["phase_plan"]["rounds"].as_array().unwrap();
    assert_eq!(plan.len(), 3);
    assert_eq!(plan[0]["round_num"], 1);
    assert!(plan.iter().all(|r| r["phase"].is_null()));
    let human = p.run(&["doctor", "--rounds", "2"]);
    assert!(
        human.stdout.contains("next rounds: no [phases] configured"),
        "{human}"
    );

    p.run(&["round"]).assert_code(0);
    let (_, report) = doctor(&p);
    assert_eq!(
        report["phase_plan"]["rounds"][0]["round_num"], 2,
        "the next round"
    );
    assert!(check(&report, "log_dir")["reason"]
        .as_str()
        .unwrap()
        .contains("is writable"));
}

#[test]
fn log_dir_that_cannot_be_created() {
    let p = Project::new();
    let text = p
        .config()
        .render()
        .replace("log_dir = \"./logs\"", "log_dir = \"./README.md/logs\"");
    assert!(text.contains("README.md/logs"));
    p.write_config_text(&text);
    let (code, report) = doctor(&p);
    assert_eq!(code, 1, "{report:#}");
    let c = check(&report, "log_dir");
    assert_eq!(c["ok"], false);
    assert!(
        c["reason"].as_str().unwrap().contains("cannot be created"),
        "{c}"
    );
    assert!(!c["how_to_fix"].as_str().unwrap().is_empty());
    assert!(p.dir().join("README.md").is_file(), "left as it was");
}

#[test]
fn empty_front_matter_only_or_truncated_prompt() {
    for (contents, words) in [
        (&b""[..], "empty"),
        (&b"---\ntitle: x\n---\n\n"[..], "empty"),
        (&b"Fix the bug in caf\xc3"[..], "not valid UTF-8"),
    ] {
        let p = Project::new();
        p.write_config(&p.config());
        std::fs::write(p.dir().join("prompts/main.md"), contents).unwrap();
        let (code, report) = doctor(&p);
        assert_eq!(code, 1, "{report:#}");
        let c = check(&report, "prompt");
        assert_eq!(c["ok"], false, "{contents:?}");
        assert!(
            c["reason"].as_str().unwrap().contains(words),
            "{contents:?}: {c}"
        );
    }
    let p = Project::new();
    p.write_config(&p.config());
    std::fs::remove_file(p.dir().join("prompts/main.md")).unwrap();
    // A missing prompt file is a config error: serve would refuse to boot.
    let (code, report) = doctor(&p);
    assert_eq!(code, 78, "{report:#}");
    let c = check(&report, "config");
    assert!(c["reason"].as_str().unwrap().contains("prompt"), "{c}");
}

/// `sessions`: the session bounds `serve` renews a resumed session at, the base config's
/// and a phase's own (`[phases.<name>.agent] session_max_tokens`); the defaults when
/// none is set.
#[test]
fn the_session_bounds_are_shown_per_phase() {
    let p = Project::new();
    let text = p.config().render().replacen(
        "[agent]\n",
        "[agent]\ncli = \"claude\"\nsession_max_rounds = 7\n",
        1,
    ) + "\n[phases]\nlist = [\"build\", \"review\"]\n\n[phases.build.agent]\nsession_max_tokens = 1000\n";
    p.write_config_text(&text);
    let (code, report) = doctor(&p);
    assert_eq!(code, 0, "{report:#}");
    let sessions = check(&report, "sessions");
    assert_eq!(sessions["ok"], true, "{sessions}");
    let reason = sessions["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "claude sessions resumed, started afresh past session_max_rounds 7, session_max_tokens 5000000, session_max_hours 12"
        ),
        "{reason}"
    );
    assert!(
        reason.contains("; phase build: claude sessions resumed, started afresh past session_max_rounds 7, session_max_tokens 1000, session_max_hours 12"),
        "{reason}"
    );
    assert!(!reason.contains("phase review"), "{reason}");
    // Session resume off: said so, the bounds beside it.
    let text = p.config().render().replacen(
        "[agent]\n",
        "[agent]\ncli = \"claude\"\nsession_resume = false\n",
        1,
    );
    p.write_config_text(&text);
    let (_, report) = doctor(&p);
    let reason = check(&report, "sessions")["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.starts_with(
            "no session resume (session_resume = false); bounds session_max_rounds 20"
        ),
        "{reason}"
    );
    let human = p.run(&["doctor"]);
    assert!(human.stdout.contains("session_max_rounds 20"), "{human}");
}
