//! Tiers and the gate beyond `sandbox_gate.rs`: `off` in `round`, `serve` and `doctor`;
//! `prefer` announces a shortfall once per boot however many rounds run; and `covers` in
//! `doctor --json` lists only the families of hosts that really run confined.

use agent_runner_e2e::serde_json::{self, json, Value};
use agent_runner_e2e::{
    dirty_commit_host_bin, pause_host_bin, HostSpec, Pin, Project, TEST_PROBE_ENV,
};

/// `doctor --json` (expected to exit `code`); also checks that `peek --json` reports the
/// same `covers` and tier, so both read-only views stay honest together.
fn doctor(p: &Project, env: &[(&str, &str)], code: i32) -> Value {
    let out = p.run_env(&["doctor", "--json"], env);
    out.assert_code(code);
    let report: Value = serde_json::from_str(&out.stdout).expect("doctor --json");
    let peek = p.run_env(&["peek", "--json"], env);
    peek.assert_code(0);
    let peek: Value = serde_json::from_str(&peek.stdout).expect("peek --json");
    for key in ["covers", "achieved_tier"] {
        assert_eq!(
            peek["plugins"]["sandbox"][key], report["sandbox"][key],
            "peek and doctor disagree on {key}:\npeek {peek}\ndoctor {report}"
        );
    }
    report
}

fn pause_host() -> HostSpec {
    HostSpec::new("pause", pause_host_bin()).config(json!({"defer_s": 30, "reason": "paused"}))
}

fn dirty_host() -> HostSpec {
    HostSpec::new("wip", dirty_commit_host_bin()).provides(&["dirty_handler"])
}

#[test]
fn off_runs_hosts_unconfined_everywhere_without_announcing_a_shortfall() {
    // Whatever the kernel offers (here: forced down, and the real probe), `off` applies
    // the `unconfined` tier and is not a shortfall.
    for forced in [None, Some("landlock"), Some("unconfined")] {
        let p = Project::new();
        p.write_config(&p.config().sandbox("off").host(pause_host()));
        let env: Vec<(&str, &str)> = forced.map(|t| (TEST_PROBE_ENV, t)).into_iter().collect();
        p.run_env(&["round"], &env).assert_code(0);
        p.run_env(&["serve", "--max-rounds", "1"], &env)
            .assert_code(0);
        let all = p.events_text();
        assert_eq!(p.events_of("round_end").len(), 2, "{forced:?}: {all}");
        assert!(p.events_of("hook_failed").is_empty(), "{forced:?}: {all}");
        assert!(
            p.events_of("plugin_sandbox_degraded").is_empty(),
            "{forced:?}: {all}"
        );
        let report = doctor(&p, &env, 0);
        assert_eq!(report["sandbox"]["requested"], "off", "{report}");
        assert_eq!(report["sandbox"]["achieved_tier"], "unconfined", "{report}");
        assert_eq!(report["sandbox"]["covers"], json!([]), "{report}");
        assert_eq!(report["hosts"][0]["confined_as"], "unconfined", "{report}");
    }
}

#[test]
fn prefer_announces_a_shortfall_once_per_boot() {
    for tier in ["landlock", "seccomp", "unconfined"] {
        let p = Project::new();
        p.write_config(&p.config().sandbox("prefer").host(pause_host()));
        let env = [(TEST_PROBE_ENV, tier)];
        let out = p.run_env(&["serve", "--max-rounds", "3"], &env);
        out.assert_code(0);
        let all = p.events_text();
        assert_eq!(p.events_of("round_end").len(), 3, "{tier}: {all}");
        let degraded = p.events_of("plugin_sandbox_degraded");
        assert_eq!(degraded.len(), 1, "{tier}: {all}");
        assert_eq!(degraded[0]["achieved_tier"], tier, "{all}");
        assert_eq!(
            out.stderr.matches("sandbox = \"prefer\"").count(),
            1,
            "{tier}: {out}"
        );
        // A second boot announces it again, once.
        p.run_env(&["round"], &env).assert_code(0);
        assert_eq!(p.events_of("plugin_sandbox_degraded").len(), 2, "{tier}");
    }
}

#[test]
fn prefer_at_full_strength_announces_nothing() {
    let p = Project::new();
    p.write_config(&p.config().sandbox("prefer").host(pause_host()));
    let out = p.run(&["serve", "--max-rounds", "2"]);
    out.assert_code(0);
    assert!(p.events_of("plugin_sandbox_degraded").is_empty());
    assert!(!out.stderr.contains("sandbox = \"prefer\""), "{out}");
    let report = doctor(&p, &[], 0);
    assert_eq!(report["sandbox"]["achieved_tier"], "landlock+seccomp");
    assert_eq!(report["sandbox"]["covers"], json!(["spawn_hooks"]));
}

#[test]
fn covers_lists_only_families_of_hosts_that_run_confined() {
    // A verified spawn-hook host and a dirty handler: both covered.
    let p = Project::new();
    let builder = p
        .config()
        .sandbox("require")
        .host(pause_host())
        .host(dirty_host());
    p.write_config(&builder);
    let report = doctor(&p, &[], 0);
    assert_eq!(
        report["sandbox"]["covers"],
        json!(["dirty_handlers", "spawn_hooks"]),
        "{report}"
    );

    // Disabled: its family is not covered.
    p.write_config_text(
        &builder
            .render()
            .replace("[plugins]\n", "[plugins]\ndisable = [\"wip\"]\n"),
    );
    let report = doctor(&p, &[], 0);
    assert_eq!(
        report["sandbox"]["covers"],
        json!(["spawn_hooks"]),
        "{report}"
    );

    // A mismatched pin: refused, so not covered (and doctor fails, exit 1).
    p.write_config(
        &p.config()
            .sandbox("require")
            .host(pause_host())
            .host(dirty_host().pin(Pin::OfFile(pause_host_bin()))),
    );
    let report = doctor(&p, &[], 1);
    assert_eq!(
        report["sandbox"]["covers"],
        json!(["spawn_hooks"]),
        "{report}"
    );

    // Unpinned: refused under require, run (confined) under prefer.
    let unpinned = |mode: &str| {
        p.config()
            .sandbox(mode)
            .host(pause_host())
            .host(dirty_host().pin(Pin::Unpinned))
    };
    p.write_config(&unpinned("require"));
    let report = doctor(&p, &[], 1);
    assert_eq!(
        report["sandbox"]["covers"],
        json!(["spawn_hooks"]),
        "{report}"
    );
    p.write_config(&unpinned("prefer"));
    let report = doctor(&p, &[], 0);
    assert_eq!(
        report["sandbox"]["covers"],
        json!(["dirty_handlers", "spawn_hooks"]),
        "{report}"
    );

    // A degraded tier still confines (one layer): covered; unconfined covers nothing.
    p.write_config(&builder.clone().sandbox("prefer"));
    for (tier, covers) in [
        ("landlock", json!(["dirty_handlers", "spawn_hooks"])),
        ("seccomp", json!(["dirty_handlers", "spawn_hooks"])),
        ("unconfined", json!([])),
    ] {
        let report = doctor(&p, &[(TEST_PROBE_ENV, tier)], 0);
        assert_eq!(report["sandbox"]["covers"], covers, "{tier}: {report}");
    }
}
