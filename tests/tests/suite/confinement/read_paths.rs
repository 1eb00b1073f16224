//! `[plugins.hosts.<name>] read_paths` (docs/configuration.md): an operator's extra
//! read-only paths reach the confined host and nothing else does; paths covering the config
//! file, `log_dir`, the state dir or a credential directory are refused with one clear error (exit 78);
//! `doctor` and `peek` show them.

use agent_runner_e2e::serde_json::{json, Value};
use agent_runner_e2e::{workspace_root, HostSpec, Project};

/// A project whose host `reader` (`tests/hosts/attempts.py`) tries to read `target` in its
/// `before_spawn`, under `sandbox = "require"`, with `read_paths` as given (a TOML list).
fn project(target: &std::path::Path, read_paths: Option<&str>) -> Project {
    let p = Project::new();
    let text = p
        .config()
        .sandbox("require")
        .host(
            HostSpec::new("reader", workspace_root().join("tests/hosts/attempts.py"))
                .config(json!({"attempt": "read", "path": target.display().to_string()})),
        )
        .render();
    let text = match read_paths {
        Some(list) => text.replace(
            "[plugins.hosts.reader]\n",
            &format!("[plugins.hosts.reader]\nread_paths = {list}\n"),
        ),
        None => text,
    };
    p.write_config_text(&text);
    p
}

/// The outcome the host reported for its read (`allowed read` / `denied errno=13`).
fn outcome(p: &Project) -> String {
    p.run(&["round"]).assert_code(0);
    let failed = p.events_of("hook_failed");
    assert_eq!(failed.len(), 1, "{}", p.events_text());
    failed[0]["error_message"].as_str().unwrap().to_owned()
}

#[test]
fn a_read_path_is_readable_and_nothing_else_is() {
    let outside = tempfile::tempdir().unwrap();
    let data = outside.path().canonicalize().unwrap().join("data.txt");
    std::fs::write(&data, "data").unwrap();

    let denied = project(&data, None);
    let msg = outcome(&denied);
    assert!(msg.contains("outcome read: denied errno=13"), "{msg}");

    let list = format!("[{:?}]", outside.path().display().to_string());
    let granted = project(&data, Some(&list));
    let msg = outcome(&granted);
    assert!(msg.contains("outcome read: allowed read"), "{msg}");

    let doctor: Value =
        agent_runner_e2e::serde_json::from_str(&granted.run(&["doctor", "--json"]).stdout).unwrap();
    let shown = &doctor["hosts"][0]["read_paths"];
    assert_eq!(
        shown,
        &json!([outside.path().canonicalize().unwrap()]),
        "{doctor}"
    );
    let text = granted.run(&["doctor"]).stdout;
    assert!(text.contains("(read_paths)"), "{text}");
    let peek: Value =
        agent_runner_e2e::serde_json::from_str(&granted.run(&["peek", "--json"]).stdout).unwrap();
    assert_eq!(&peek["hosts"][0]["read_paths"], shown, "{peek}");
}

#[test]
fn covering_paths_are_refused_and_exact_ones_allowed() {
    let p = Project::new();
    let home = p.tmp_dir().join("home");
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    let target = p.dir().join("README.md");
    for (list, covered) in [
        ("[\"~\"]", "/home/.ssh"),
        ("[\".\"]", "agent-runner.toml"),
        ("[\"..\"]", "agent-runner.toml"),
        // The state dir of a ./logs project (docs/operations.md, "State dir").
        (
            "[\"~/.local/state\"]",
            ".local/state/agent-runner/projects/project-",
        ),
    ] {
        let q = project(&target, Some(list));
        std::fs::create_dir_all(q.tmp_dir().join("home/.aws")).unwrap();
        std::fs::create_dir_all(q.tmp_dir().join("home/.local/state")).unwrap();
        let out = q.run(&["doctor"]);
        assert_eq!(out.code(), 78, "{list}: {out}");
        let text = out.to_string();
        assert!(
            text.contains("plugins.hosts.reader.read_paths") && text.contains(covered),
            "{list}: {out}"
        );
    }
    let q = project(&target, Some("[\"~/.aws\"]"));
    std::fs::create_dir_all(q.tmp_dir().join("home/.aws")).unwrap();
    let out = q.run(&["doctor", "--json"]);
    assert_ne!(out.code(), 78, "{out}");
    let q = project(&target, Some("[\"/no/such/dir\"]"));
    let out = q.run(&["doctor"]);
    assert_eq!(out.code(), 78, "{out}");
    assert!(out.to_string().contains("/no/such/dir"), "{out}");
}
