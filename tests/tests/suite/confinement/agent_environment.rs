//! What of the supervisor's environment and the home directory's credential stores a
//! confined agent reaches (docs/security.md, "The agent's environment", and the credential
//! stores of "The agent's confinement"). A hostile agent dumps its environment and tries to
//! read a token file of each store; under `mode = "require"` a variable of the supervisor's
//! environment that no list names and `SSH_AUTH_SOCK` are absent while `PATH`, `HOME`, an
//! `[agent.env]` variable and one named in `pass_env` are there, and every token file is
//! refused while the rest of a toolchain's directory stays readable. The control, the same
//! agent under `mode = "off"`, gets the secret and reads every token. A goal check, confined
//! where the agent is, inherits the same list. `doctor` names what the list drops, never a
//! value. Root and the unprivileged user `ar-e2e`.

use agent_runner_e2e::{ConfigBuilder, Operator, Project};
use serde_json::Value;

/// Dumps its environment to `env.txt` and tries to read each file `$HOME/<rel>` listed in
/// `$READS` (one per line), logging `<rel>: read` or `<rel>: denied` to `reads.log`.
const DUMPER: &str = r#"#!/bin/sh
env > env.txt
: > reads.log
printf '%s\n' "$READS" | while IFS= read -r rel; do
  [ -n "$rel" ] || continue
  if cat "$HOME/$rel" >/dev/null 2>&1; then echo "$rel: read" >> reads.log; else echo "$rel: denied" >> reads.log; fi
done
exit 0
"#;

/// A goal check in the tree (confined where the agent is) that dumps its environment to
/// `check-env.txt` there.
const CHECK: &str = "#!/bin/sh\nenv > check-env.txt\n";

/// A token file in each credential store the list withholds beyond the older ones (paths
/// under the test's HOME).
const TOKEN_FILES: &[&str] = &[
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/git/credentials",
    ".config/hub",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".terraform.d/credentials.tfrc.json",
    ".config/op/config",
    ".local/share/keyrings/login.keyring",
    ".config/rclone/rclone.conf",
    ".s3cfg",
    ".boto",
    ".composer/auth.json",
    ".gem/credentials",
    ".config/gcloud/credentials.db",
    ".oci/config",
    ".config/doctl/config.yaml",
    ".bluemix/config.json",
    ".databrickscfg",
    ".huggingface/token",
    ".cache/huggingface/token",
    ".config/helm/registry/config.json",
    ".docker/config.json",
];

/// Files beside the stores that a toolchain needs: readable under every mode.
const TOOLCHAIN_FILES: &[&str] = &[
    ".cargo/bin/cargo-tool",
    ".cargo/registry/index.txt",
    ".cache/pip/wheel.txt",
    ".m2/repository/lib.jar",
    ".gradle/caches/lib.jar",
];

/// The value of the supervisor's variable that no list names.
const SECRET: &str = "ar-test-secret-value-not-for-the-agent";

fn project(operator: Operator, mode: &str) -> Project {
    let p = Project::new_as(operator);
    for rel in TOKEN_FILES.iter().chain(TOOLCHAIN_FILES) {
        let path = p.home().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("token of {rel}\n")).unwrap();
    }
    let agent = p.script("agent/dumper.sh", DUMPER);
    p.write("check-env.sh", CHECK);
    let reads: Vec<&str> = TOKEN_FILES.iter().chain(TOOLCHAIN_FILES).copied().collect();
    let text = ConfigBuilder::new(&agent)
        .dirty_action("ignore")
        .agent_env("FROM_AGENT_ENV", "agent-env-value")
        .agent_env("READS", &reads.join("\n"))
        .extra(&format!(
            "[agent.sandbox]\nmode = \"{mode}\"\npass_env = [\"AR_TEST_PASSED\"]\n\n\
             [goal]\nledger = \"./logs/lessons.md\"\n\n\
             [[goal.checks]]\nname = \"env\"\ncmd = [\"sh\", \"check-env.sh\"]"
        ))
        .render()
        .replace(
            "file = \"./prompts/main.md\"",
            "files = [\"./prompts/main.md\", \"./logs/lessons.md\"]",
        );
    p.write_config_text(&text);
    p
}

/// The supervisor's environment of the test: the secret, a named variable, an ssh agent.
fn supervisor_env(p: &Project) -> Vec<(&'static str, String)> {
    vec![
        ("AR_TEST_SECRET", SECRET.to_owned()),
        ("AR_TEST_PASSED", "passed-by-name".to_owned()),
        // The OpenTelemetry backend's key, set for the supervisor's own traces.
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("x-honeycomb-team={SECRET}"),
        ),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:9".to_owned(),
        ),
        (
            "SSH_AUTH_SOCK",
            p.tmp_dir().join("ssh-agent.sock").display().to_string(),
        ),
    ]
}

/// An environment as dumped: name → value, in the dump's order.
type Vars = Vec<(String, String)>;

/// The agent's environment (`env.txt`) and the goal check's (`check-env.txt`) as
/// name → value, and the agent's reads (`reads.log`).
fn round(p: &Project) -> (Vars, Vars, String) {
    let env = supervisor_env(p);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = p.run_env(&["round"], &env);
    out.assert_code(0);
    let vars = |file: &str| -> Vars {
        std::fs::read_to_string(p.dir().join(file))
            .unwrap_or_else(|e| panic!("{file} was not written ({e}): {out}\n{}", p.events_text()))
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    };
    let reads = std::fs::read_to_string(p.dir().join("reads.log")).unwrap();
    (vars("env.txt"), vars("check-env.txt"), reads)
}

fn value<'a>(vars: &'a Vars, name: &str) -> Option<&'a str> {
    vars.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn the_confined_agent_s_environment_and_stores(operator: Operator) {
    let p = project(operator, "require");
    let (vars, check_vars, reads) = round(&p);
    assert_eq!(value(&vars, "AR_TEST_SECRET"), None, "{vars:?}");
    assert_eq!(value(&vars, "SSH_AUTH_SOCK"), None, "{vars:?}");
    assert_eq!(value(&vars, "OTEL_EXPORTER_OTLP_HEADERS"), None, "{vars:?}");
    assert_eq!(
        value(&vars, "OTEL_EXPORTER_OTLP_ENDPOINT"),
        Some("http://127.0.0.1:9"),
        "{vars:?}"
    );
    assert_eq!(value(&check_vars, "AR_TEST_SECRET"), None, "{check_vars:?}");
    assert_eq!(value(&check_vars, "SSH_AUTH_SOCK"), None, "{check_vars:?}");
    assert_eq!(value(&check_vars, "AR_TEST_PASSED"), Some("passed-by-name"));
    assert!(
        !vars.iter().any(|(_, v)| v.contains(SECRET)),
        "the secret's value reached the agent: {vars:?}"
    );
    assert!(
        value(&vars, "PATH").is_some_and(|v| !v.is_empty()),
        "{vars:?}"
    );
    assert_eq!(value(&vars, "HOME"), p.home().to_str(), "{vars:?}");
    assert_eq!(value(&vars, "FROM_AGENT_ENV"), Some("agent-env-value"));
    assert_eq!(value(&vars, "AR_TEST_PASSED"), Some("passed-by-name"));
    assert_eq!(value(&vars, "AGENT_RUNNER_ROUND_NUM"), Some("1"));
    for rel in TOKEN_FILES {
        assert!(
            reads.contains(&format!("{rel}: denied\n")),
            "{rel}: {reads}"
        );
    }
    for rel in TOOLCHAIN_FILES {
        assert!(reads.contains(&format!("{rel}: read\n")), "{rel}: {reads}");
    }

    // doctor names what the list drops, never a value, and the key that passes one.
    let env = supervisor_env(&p);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = p.run_env(&["doctor", "--json"], &env);
    assert!(!out.stdout.contains(SECRET), "{out}");
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    let shown = &doc["agent_env"];
    assert_eq!(shown["filtered"], true, "{shown}");
    let dropped: Vec<&str> = shown["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(dropped.contains(&"AR_TEST_SECRET"), "{shown}");
    assert!(dropped.contains(&"SSH_AUTH_SOCK"), "{shown}");
    assert!(dropped.contains(&"OTEL_EXPORTER_OTLP_HEADERS"), "{shown}");
    assert!(!dropped.contains(&"AR_TEST_PASSED") && !dropped.contains(&"PATH"));
    assert_eq!(shown["pass_with"], "[agent.sandbox] pass_env");
    let human = p.run_env(&["doctor"], &env);
    assert!(
        human.stdout.contains("AR_TEST_SECRET") && !human.stdout.contains(SECRET),
        "{human}"
    );

    // The control: unconfined, the agent gets the whole environment and reads every store.
    let p = project(operator, "off");
    let (vars, check_vars, reads) = round(&p);
    assert_eq!(value(&vars, "AR_TEST_SECRET"), Some(SECRET), "{vars:?}");
    assert_eq!(value(&check_vars, "AR_TEST_SECRET"), Some(SECRET));
    assert!(value(&vars, "SSH_AUTH_SOCK").is_some(), "{vars:?}");
    assert_eq!(
        value(&vars, "OTEL_EXPORTER_OTLP_HEADERS"),
        Some(format!("x-honeycomb-team={SECRET}").as_str())
    );
    for rel in TOKEN_FILES.iter().chain(TOOLCHAIN_FILES) {
        assert!(reads.contains(&format!("{rel}: read\n")), "{rel}: {reads}");
    }
    let out = p.run_env(&["doctor", "--json"], &env);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(doc["agent_env"]["filtered"], false, "{out}");
    assert_eq!(doc["agent_env"]["dropped"], Value::Array(Vec::new()));
}

#[test]
fn the_confined_agent_s_environment_and_stores_as_root() {
    the_confined_agent_s_environment_and_stores(Operator::Root);
}

#[test]
fn the_confined_agent_s_environment_and_stores_as_unprivileged_user() {
    the_confined_agent_s_environment_and_stores(Operator::Unprivileged);
}
