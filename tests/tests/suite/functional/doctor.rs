//! `doctor`: the real sandbox probe, each host's exact `sha256:<64 hex>` and its pin status
//! (verified / mismatch / unpinned), ready-to-paste pin lines; it writes nothing.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{
    dirty_commit_host_bin, pause_host_bin, pin_of, sha256_hex, HostSpec, Pin, Project,
};

const HOSTILE: &str = env!("CARGO_BIN_EXE_ar-e2e-hostile");

fn host<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == name)
        .unwrap_or_else(|| panic!("no host {name}: {report}"))
}

fn is_pin(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    })
}

#[test]
fn all_verified_under_require() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(HostSpec::new("pause", pause_host_bin()))
            .host(HostSpec::new("wip", dirty_commit_host_bin()).provides(&["dirty_handler"])),
    );
    let out = p.run(&["doctor", "--json"]);
    out.assert_code(0);
    let report: Value = serde_json::from_str(&out.stdout).expect("doctor --json");
    assert_eq!(report["ok"], true, "{out}");
    for check in report["checks"].as_array().unwrap() {
        assert_eq!(check["ok"], true, "{check}");
    }
    let sandbox = &report["sandbox"];
    assert_eq!(sandbox["requested"], "require");
    assert_eq!(sandbox["achieved_tier"], "landlock+seccomp", "{out}");
    assert!(sandbox["landlock_abi"].as_u64().unwrap() >= 6, "{out}");
    assert_eq!(sandbox["seccomp"], true, "{out}");
    assert!(sandbox["unconfined_reason"].is_null(), "{out}");
    let mut covers: Vec<&str> = sandbox["covers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    covers.sort_unstable();
    assert_eq!(covers, ["dirty_handlers", "spawn_hooks"], "{out}");

    for (name, exe) in [
        ("pause", pause_host_bin()),
        ("wip", dirty_commit_host_bin()),
    ] {
        let h = host(&report, name);
        let sha = h["sha256"].as_str().unwrap();
        assert!(is_pin(sha), "{sha}");
        assert_eq!(sha, format!("sha256:{}", sha256_hex(&exe)));
        assert_eq!(h["pin_status"], "verified", "{out}");
        assert_eq!(
            h["executable"].as_str().unwrap(),
            exe.canonicalize().unwrap().to_str().unwrap()
        );
        assert_eq!(h["confined_as"], "landlock+seccomp", "{out}");
        assert_eq!(sandbox["third_party_plugin_hashes"][name], sha, "{out}");
    }
    assert!(!p.log_dir().exists(), "doctor wrote the log dir");
}

#[test]
fn mismatch_and_unpinned_are_reported() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("prefer")
            .host(HostSpec::new("pause", pause_host_bin()))
            .host(
                HostSpec::new("wip", dirty_commit_host_bin())
                    .provides(&["dirty_handler"])
                    .pin(Pin::OfFile(pause_host_bin())),
            )
            .host(HostSpec::new("hostile", HOSTILE).pin(Pin::Unpinned)),
    );
    let out = p.run(&["doctor", "--json"]);
    out.assert_code(1); // the mismatch fails its check
    let report: Value = serde_json::from_str(&out.stdout).expect("doctor --json");
    assert_eq!(host(&report, "pause")["pin_status"], "verified", "{out}");
    assert_eq!(host(&report, "wip")["pin_status"], "mismatch", "{out}");
    assert_eq!(host(&report, "hostile")["pin_status"], "unpinned", "{out}");
    assert_eq!(
        host(&report, "wip")["sha256"],
        pin_of(&dirty_commit_host_bin()),
        "the real hash, not the pin: {out}"
    );
    assert_eq!(
        host(&report, "hostile")["sha256"],
        pin_of(std::path::Path::new(HOSTILE))
    );
    let check = |name: &str| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name}: {report}"))
            .clone()
    };
    assert_eq!(check("host:pause")["ok"], true);
    assert_eq!(check("host:wip")["ok"], false);
    assert_eq!(
        check("host:hostile")["ok"],
        true,
        "unpinned is allowed under prefer"
    );

    // Under require the unpinned host fails its check too, with the line to add.
    let text = std::fs::read_to_string(p.config_path())
        .unwrap()
        .replace("sandbox = \"prefer\"", "sandbox = \"require\"");
    p.write_config_text(&text);
    let out = p.run(&["doctor", "--json"]);
    out.assert_code(1);
    let report: Value = serde_json::from_str(&out.stdout).expect("doctor --json");
    let hostile = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "host:hostile")
        .unwrap()
        .clone();
    assert_eq!(hostile["ok"], false, "{out}");
    let line = format!("hostile = \"{}\"", pin_of(std::path::Path::new(HOSTILE)));
    assert!(
        hostile["how_to_fix"].as_str().unwrap().contains(&line),
        "{out}"
    );
    assert!(!p.log_dir().exists(), "doctor wrote the log dir");
}

#[test]
fn human_doctor_prints_paste_ready_pin_lines() {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(HostSpec::new("pause", pause_host_bin()))
            .host(HostSpec::new("wip", dirty_commit_host_bin()).provides(&["dirty_handler"])),
    );
    let out = p.run(&["doctor"]);
    out.assert_code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    for (name, exe) in [
        ("pause", pause_host_bin()),
        ("wip", dirty_commit_host_bin()),
    ] {
        let expected = format!("{name} = \"{}\"", pin_of(&exe));
        assert!(
            lines.contains(&expected.as_str()),
            "{expected} missing:\n{out}"
        );
    }
    assert!(lines.contains(&"[plugins.pin]"), "{out}");
    assert!(
        out.stdout.contains("achieved_tier=landlock+seccomp"),
        "{out}"
    );
}

/// Every confinement layer is on for root and for an unprivileged operator on this kernel
/// (user + PID namespaces and `RLIMIT_NPROC` stand in for root's PID namespace and `pids`
/// cgroup), and each host's write limits and state use are shown, by `doctor` and `peek`.
#[test]
fn every_layer_is_on_as_root_and_as_an_unprivileged_user() {
    for operator in [
        agent_runner_e2e::Operator::Root,
        agent_runner_e2e::Operator::Unprivileged,
    ] {
        let p = Project::new_as(operator);
        p.write_config(
            &p.config()
                .sandbox("require")
                .host(HostSpec::new("pause", pause_host_bin())),
        );
        let out = p.run(&["doctor", "--json"]);
        out.assert_code(0);
        let report: Value = serde_json::from_str(&out.stdout).expect("doctor --json");
        let layers = report["sandbox"]["layers"].as_array().expect("layers");
        let names: Vec<&str> = layers.iter().filter_map(|l| l["name"].as_str()).collect();
        assert_eq!(
            names,
            [
                "landlock",
                "seccomp",
                "pid_namespace",
                "process_bound",
                "memory_bound",
                "unix_socket_rule",
                "write_limits"
            ],
            "{operator:?}: {report}"
        );
        for l in layers {
            assert_eq!(l["on"], true, "{operator:?}: {l}");
        }
        let expected = match operator {
            agent_runner_e2e::Operator::Root => "own PID namespace (root)",
            agent_runner_e2e::Operator::Unprivileged => "own user and PID namespaces",
        };
        assert!(
            layers[2]["detail"].as_str().unwrap().starts_with(expected),
            "{operator:?}: {report}"
        );
        let limits = &host(&report, "pause")["write_limits"];
        assert_eq!(limits["file_max_mb"], 16, "{report}");
        assert_eq!(limits["state_max_mb"], 64, "{report}");
        assert_eq!(limits["tmp_max_mb"], 64, "{report}");
        assert!(limits["state_used_bytes"].is_u64(), "{report}");
        let human = p.run(&["doctor"]);
        assert!(human.stdout.contains("unix_socket_rule  on"), "{human}");
        assert!(human.stdout.contains("writes: 16 MiB per file"), "{human}");
        // peek shows the same layers and limits.
        let peek = p.run(&["peek", "--json"]);
        peek.assert_code(0);
        let peek: Value = serde_json::from_str(&peek.stdout).expect("peek --json");
        assert_eq!(
            peek["plugins"]["sandbox"]["layers"], report["sandbox"]["layers"],
            "{peek}"
        );
        assert_eq!(
            peek["hosts"][0]["write_limits"]["state_max_mb"], 64,
            "{peek}"
        );
    }
}

/// A webhook's `url_env` that a confined agent would inherit (docs/security.md,
/// "Notifications") is a failed `notify:<name>` check of `doctor` under `prefer` and
/// `require` alike, in every case: a prefix of the common allow-list (`OTEL_*`), a provider
/// variable of the agent's CLI (`GEMINI_*` for gemini), one of a phase's agent of another
/// CLI (`OPENAI_*` for codex), a name in `pass_env`; named before any other fault of the
/// entry (a misspelt kind). `serve` refuses the phase's case at start (exit 78) as it does
/// the others. The control: a variable no list passes is a passing check.
#[test]
fn a_webhook_variable_the_agent_would_inherit_is_reported_in_every_case() {
    let p = Project::new();
    let base = p.config().render();
    let hook_url = "http://127.0.0.1:9/s3cret";
    let cases: [(&str, &str, &str, &str); 4] = [
        ("otel", "OTEL_HOOK_URL", "", ""),
        ("provider", "GEMINI_HOOK_URL", "cli = \"gemini\"\n", ""),
        (
            "phase",
            "OPENAI_HOOK_URL",
            "",
            "[phases]\nlist = [\"main\", \"review\"]\n[phases.review.agent]\ncommand = [\"codex\", \"exec\"]\n",
        ),
        ("pass_env", "AR_HOOK_URL", "", ""),
    ];
    for mode in ["prefer", "require"] {
        for (case, var, agent_keys, phases) in cases {
            for misspelt in [false, true] {
                let pass_env = if case == "pass_env" {
                    format!("pass_env = [\"{var}\"]\n")
                } else {
                    String::new()
                };
                let events = if misspelt {
                    "events = [\"crash_lop\"]\n"
                } else {
                    ""
                };
                let text = format!(
                    "{}\n[agent.sandbox]\nmode = \"{mode}\"\n{pass_env}\n{phases}\n[[notify.webhooks]]\nname = \"ops\"\nurl_env = \"{var}\"\n{events}",
                    base.replacen("[agent]\n", &format!("[agent]\n{agent_keys}"), 1)
                );
                p.write_config_text(&text);
                let out = p.run_env(&["doctor", "--json"], &[(var, hook_url)]);
                let report: Value = serde_json::from_str(&out.stdout)
                    .unwrap_or_else(|e| panic!("{mode} {case}: {e}: {out}"));
                let check = agent_runner_e2e::doctor_check(&report, "notify:ops");
                let reason = check["reason"].as_str().unwrap_or_default();
                assert_eq!(check["ok"], false, "{mode} {case}: {check}");
                assert!(
                    reason.contains("notify.webhooks[0].url_env")
                        && reason.contains(&format!("inherits {var}")),
                    "{mode} {case} (misspelt kind: {misspelt}): {check}"
                );
                if case == "phase" {
                    assert!(reason.contains("phase \"review\""), "{check}");
                }
                assert!(!out.stdout.contains("s3cret"), "{out}");
                assert_ne!(out.code(), 0, "{mode} {case}: {out}");
            }
        }
    }
    // serve refuses the phase's agent's variable at start, as it does the base agent's.
    let text = format!(
        "{base}\n[agent.sandbox]\nmode = \"prefer\"\n\n[phases]\nlist = [\"main\", \"review\"]\n[phases.review.agent]\ncommand = [\"codex\", \"exec\"]\n\n[[notify.webhooks]]\nname = \"ops\"\nurl_env = \"OPENAI_HOOK_URL\"\n"
    );
    p.write_config_text(&text);
    let out = p.run_env(
        &["serve", "--max-rounds", "1"],
        &[("OPENAI_HOOK_URL", hook_url)],
    );
    out.assert_code(78);
    assert!(
        out.stderr.contains("notify.webhooks[0].url_env") && !out.stderr.contains("s3cret"),
        "{out}"
    );
    // The control: a variable no allow-list passes.
    let text = format!(
        "{base}\n[agent.sandbox]\nmode = \"require\"\n\n[[notify.webhooks]]\nname = \"ops\"\nurl_env = \"AR_HOOK_URL\"\n"
    );
    p.write_config_text(&text);
    let out = p.run_env(&["doctor", "--json"], &[("AR_HOOK_URL", hook_url)]);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let check = agent_runner_e2e::doctor_check(&report, "notify:ops");
    assert_eq!(check["ok"], true, "{check}");
}
