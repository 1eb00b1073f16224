//! The sandbox gate with the probe forced down (`AGENT_RUNNER_TEST_PROBE`, honoured by the
//! plugin host's `probe()`): `require` refuses to start anything (exit 78, stderr says what
//! is missing); `prefer` runs hosts at the forced tier and `doctor` reports it.

use agent_runner_e2e::serde_json::{self, json, Value};
use agent_runner_e2e::{pause_host_bin, HostSpec, Project, TEST_PROBE_ENV};

/// Forced tiers and the words the refusal must contain.
const DEGRADED: &[(&str, &[&str])] = &[
    ("landlock", &["no seccomp"]),
    ("seccomp", &["no Landlock"]),
    ("unconfined", &["no Landlock", "no seccomp"]),
];

fn pause_project(sandbox: &str) -> Project {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox(sandbox)
            .spawn_override_allow(&["pause_file"])
            .host(
                HostSpec::new("pause", pause_host_bin())
                    .config(json!({"defer_s": 30, "reason": "pause file present"})),
            ),
    );
    p
}

#[test]
fn require_refuses_when_a_layer_is_missing() {
    for (tier, missing) in DEGRADED {
        let p = pause_project("require");
        let env = [(TEST_PROBE_ENV, *tier)];
        for verb in [&["round"][..], &["serve", "--max-rounds", "1"][..]] {
            let out = p.run_env(verb, &env);
            out.assert_code(78);
            assert!(out.stderr.contains("require"), "{tier} {verb:?}: {out}");
            assert!(
                out.stderr.contains(&format!("only `{tier}`")),
                "{tier} {verb:?}: {out}"
            );
            for word in *missing {
                assert!(
                    out.stderr.contains(word),
                    "{tier} {verb:?}: {word:?}: {out}"
                );
            }
            assert!(!p.dir().join("notes").exists(), "{tier}: the agent ran");
        }
        let refusals = p.events_of("plugin_sandbox_degraded");
        assert_eq!(refusals.len(), 2, "{}", p.events_text());
        for r in &refusals {
            assert_eq!(r["requested"], "require");
            assert_eq!(r["achieved_tier"], *tier);
            assert_eq!(r["refused_boot"], true);
        }
        assert!(p.events_of("round_start").is_empty());

        let out = p.run_env(&["doctor", "--json"], &env);
        out.assert_code(78);
        let report: Value = serde_json::from_str(&out.stdout).expect("doctor --json");
        let sandbox = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "sandbox")
            .expect("sandbox check")
            .clone();
        assert_eq!(sandbox["ok"], false, "{out}");
        assert_eq!(report["sandbox"]["available_tier"], *tier, "{out}");
        p.run_env(&["doctor"], &env).assert_code(78);
    }
}

#[test]
fn prefer_runs_hosts_at_the_forced_tier() {
    for (tier, _) in DEGRADED {
        let p = pause_project("prefer");
        let env = [(TEST_PROBE_ENV, *tier)];

        // The host starts confined as far as the tier allows and answers: it defers.
        p.write(".agent-runner-pause", "");
        let out = p.run_env(&["round"], &env);
        out.assert_code(75);
        assert!(out.stderr.contains("deferred"), "{tier}: {out}");
        let degraded = p.events_of("plugin_sandbox_degraded");
        assert_eq!(degraded.len(), 1, "{tier}: {}", p.events_text());
        assert_eq!(degraded[0]["requested"], "prefer");
        assert_eq!(degraded[0]["achieved_tier"], *tier);
        assert_eq!(p.events_of("plugin_spawn_decision").len(), 1);

        // Without the pause file the host proceeds and the round runs.
        std::fs::remove_file(p.dir().join(".agent-runner-pause")).unwrap();
        p.run_env(&["round"], &env).assert_code(0);
        assert_eq!(p.events_of("round_end").len(), 1, "{}", p.events_text());
        assert!(p.events_of("hook_failed").is_empty(), "{}", p.events_text());

        let out = p.run_env(&["doctor", "--json"], &env);
        out.assert_code(0);
        let report: Value = serde_json::from_str(&out.stdout).expect("doctor --json");
        assert_eq!(report["sandbox"]["requested"], "prefer", "{out}");
        assert_eq!(report["sandbox"]["achieved_tier"], *tier, "{out}");
        assert_eq!(
            report["sandbox"]["seccomp"],
            tier.contains("seccomp"),
            "{out}"
        );
        assert_eq!(
            report["sandbox"]["landlock_abi"].is_null(),
            !tier.contains("landlock"),
            "{out}"
        );
        assert_eq!(report["hosts"][0]["confined_as"], *tier, "{out}");
    }
}
