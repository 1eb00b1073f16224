//! `init`: every preset writes a loadable `agent-runner.toml` (schema_version 1) and
//! `prompts/main.md`, committed; a second `init` needs `--force`.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::Project;

const PRESETS: &[(&str, &str)] = &[
    ("claude", "claude"),
    ("aider", "aider"),
    ("gemini", "gemini"),
    ("codewhale", "codewhale"),
    ("kimi", "kimi"),
    ("pi", "pi"),
    ("codex", "codex"),
];

fn doctor_report(p: &Project) -> Value {
    let out = p.run(&["doctor", "--json"]);
    // The agent CLIs are not installed here: doctor may fail that check (1), never 78.
    assert!(matches!(out.code(), 0 | 1), "{out}");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("doctor --json: {e}: {out}"))
}

#[test]
fn every_preset_writes_a_loadable_config() {
    for (preset, binary) in PRESETS {
        let p = Project::without_prompt();
        let out = p.run(&["init", "--preset", preset]);
        out.assert_code(0);

        let text = std::fs::read_to_string(p.config_path()).expect("config written");
        assert!(
            text.lines().any(|l| l.trim() == "schema_version = 1"),
            "{preset}: {text}"
        );
        assert!(
            text.contains(&format!("name = \"{preset}\"")),
            "{preset}: {text}"
        );
        let prompt = p.dir().join("prompts/main.md");
        assert!(prompt.is_file(), "{preset}: no prompt");
        assert!(!std::fs::read_to_string(&prompt).unwrap().is_empty());

        // Committed, tree clean.
        assert_eq!(p.log_subjects()[0], "agent-runner init", "{preset}");
        let files = p.git(&["show", "--name-only", "--format=", "HEAD"]);
        assert!(files.contains("agent-runner.toml"), "{preset}: {files}");
        assert!(files.contains("prompts/main.md"), "{preset}: {files}");
        assert!(p.status_porcelain().is_empty(), "{preset}");

        let report = doctor_report(&p);
        let checks = report["checks"].as_array().expect("checks");
        let config = checks
            .iter()
            .find(|c| c["name"] == "config")
            .unwrap_or_else(|| panic!("{preset}: no config check: {report}"));
        assert_eq!(config["ok"], true, "{preset}: {report}");
        let agent = checks.iter().find(|c| c["name"] == "agent").expect("agent");
        assert!(
            agent["reason"].as_str().unwrap().contains(binary),
            "{preset}: {report}"
        );
        assert_eq!(report["sandbox"]["requested"], "prefer", "{preset}");

        // Issue 27, item 10: no preset narrows `[monitor] auto_stop_on` below its
        // documented default (docs/configuration.md `[monitor]`).
        // A written `auto_stop_on` line (not a comment) must keep every default name.
        for line in text
            .lines()
            .filter(|l| l.trim_start().starts_with("auto_stop_on"))
        {
            for default in ["\"oauth_fail\"", "\"disk_critical\""] {
                assert!(line.contains(default), "{preset} drops {default}: {text}");
            }
        }
    }
}

#[test]
fn second_init_needs_force() {
    let p = Project::without_prompt();
    p.run(&["init", "--preset", "aider"]).assert_code(0);
    let before = std::fs::read_to_string(p.config_path()).unwrap();

    let again = p.run(&["init", "--preset", "gemini"]);
    again.assert_code(1);
    assert!(again.stderr.contains("--force"), "{again}");
    assert_eq!(std::fs::read_to_string(p.config_path()).unwrap(), before);

    p.run(&["init", "--preset", "gemini", "--force"])
        .assert_code(0);
    let after = std::fs::read_to_string(p.config_path()).unwrap();
    assert!(after.contains("name = \"gemini\""), "{after}");
    let report = doctor_report(&p);
    assert_eq!(report["checks"][0]["name"], "config");
    assert_eq!(report["checks"][0]["ok"], true, "{report}");
}

#[test]
fn unknown_preset_is_a_usage_error() {
    let p = Project::without_prompt();
    let out = p.run(&["init", "--preset", "nope"]);
    out.assert_code(2);
    assert!(out.stderr.contains("claude"), "{out}");
    assert!(!p.config_path().exists());
}

#[test]
fn init_json_prints_the_reference_keys() {
    let p = Project::without_prompt();
    let out = p.run(&["init", "--json", "--preset", "gemini"]);
    out.assert_code(0);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(doc["preset"], "gemini", "{doc}");
    assert_eq!(doc["committed"], true, "{doc}");
    assert_eq!(
        doc["work_dir"].as_str(),
        Some(p.dir().to_str().unwrap()),
        "{doc}"
    );
    let files: Vec<&str> = doc["files_created"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for name in ["agent-runner.toml", "prompts/main.md"] {
        let path = p.dir().join(name);
        assert!(files.contains(&path.to_str().unwrap()), "{name}: {doc}");
        assert!(path.is_file());
    }
}
