//! `doctor` agrees with `serve`'s gate: for every sandbox mode × pin state × kernel tier
//! (forced through `AGENT_RUNNER_TEST_PROBE`), doctor exits 78 exactly when a round
//! refuses to boot, non-zero whenever the round refuses the host, and 0 when the round
//! boots with its host. Both the predicted and the observed outcome are asserted.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{pause_host_bin, HostSpec, Pin, Project, TEST_PROBE_ENV};

/// Every tier the probe can report.
const ALL_TIERS: &[&str] = &["landlock+seccomp", "landlock", "seccomp", "unconfined"];

#[derive(Clone, Copy, Debug, PartialEq)]
enum PinCase {
    Verified,
    Mismatch,
    Unpinned,
}

/// What the round does with this combination.
#[derive(Debug, PartialEq)]
enum Outcome {
    RefusesBoot,
    RefusesHost,
    RunsHost,
}

fn expected(sandbox: &str, pin: PinCase, tier: &str) -> Outcome {
    match (sandbox, pin) {
        ("require", _) if tier != "landlock+seccomp" => Outcome::RefusesBoot,
        (_, PinCase::Mismatch) | ("require", PinCase::Unpinned) => Outcome::RefusesHost,
        _ => Outcome::RunsHost,
    }
}

#[test]
fn require() {
    check_mode("require", ALL_TIERS);
}

#[test]
fn prefer() {
    check_mode("prefer", ALL_TIERS);
}

#[test]
fn off() {
    check_mode("off", ALL_TIERS);
}

fn check_mode(sandbox: &str, tiers: &[&str]) {
    for pin in [PinCase::Verified, PinCase::Mismatch, PinCase::Unpinned] {
        for tier in tiers {
            let case = format!("sandbox={sandbox} pin={pin:?} tier={tier}");
            let p = Project::new();
            let pin_spec = match pin {
                PinCase::Verified => Pin::Exact,
                PinCase::Mismatch => Pin::OfFile(p.agent_path().to_owned()),
                PinCase::Unpinned => Pin::Unpinned,
            };
            p.write_config(
                &p.config()
                    .sandbox(sandbox)
                    .host(HostSpec::new("pause", pause_host_bin()).pin(pin_spec)),
            );
            let env = [(TEST_PROBE_ENV, *tier)];
            let doctor = p.run_env(&["doctor", "--json"], &env);
            let report: Value = serde_json::from_str(&doctor.stdout)
                .unwrap_or_else(|e| panic!("{case}: doctor --json: {e}: {doctor}"));
            assert!(!p.log_dir().exists(), "{case}: doctor created log_dir");

            let round = p.run_env(&["round"], &env);
            let refused_host = !p.events_of("plugin_checksum_mismatch").is_empty()
                || p.events_of("plugin_sandbox_degraded")
                    .iter()
                    .any(|e| e["name"] == "pause");
            let observed = match round.code() {
                78 => Outcome::RefusesBoot,
                0 if refused_host => Outcome::RefusesHost,
                0 => Outcome::RunsHost,
                other => panic!("{case}: round exited {other}: {round}"),
            };
            assert_eq!(
                observed,
                expected(sandbox, pin, tier),
                "{case}: {round}\n{}",
                p.events_text()
            );
            match observed {
                Outcome::RefusesBoot => assert_eq!(doctor.code(), 78, "{case}: {doctor}"),
                Outcome::RefusesHost => {
                    assert_eq!(doctor.code(), 1, "{case}: {doctor}");
                    let host_check = report["checks"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|c| c["name"] == "host:pause")
                        .unwrap_or_else(|| panic!("{case}: no host check: {doctor}"));
                    assert_eq!(host_check["ok"], false, "{case}");
                    assert!(
                        !host_check["how_to_fix"].as_str().unwrap().is_empty(),
                        "{case}"
                    );
                }
                Outcome::RunsHost => assert_eq!(doctor.code(), 0, "{case}: {doctor}"),
            }
            assert_eq!(report["ok"], doctor.code() == 0, "{case}");
        }
    }
}
