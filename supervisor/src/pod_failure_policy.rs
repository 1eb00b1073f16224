//! The `podFailurePolicy` of the Kubernetes Jobs in deploy/kubernetes/, made from the exit
//! lists of [`crate::exit`] (docs/operations.md, "Running as a Job"). Each manifest holds it
//! between `# pod-failure-policy: generated …` and `# /pod-failure-policy`; a test fails
//! when a manifest drifts from [`rules`]; refresh them with
//! `AR_UPDATE_POD_FAILURE_POLICY=1 cargo test -p agent-runner --lib pod_failure_policy`.
//!
//! Kubernetes reads the rules in order and takes the first that matches a failed pod
//! (batch/v1 `PodFailurePolicy`); a failed pod no rule matches counts against
//! `backoffLimit`. [`first_match`] is that reading, and the tests hold it to
//! [`JobAction::of`] for every exit code.

use crate::exit::{JobAction, DISRUPTED, STAY_STOPPED};
use std::path::{Path, PathBuf};

/// The container whose exit code the rules read (the manifests' `serve` container).
const CONTAINER: &str = "serve";

/// The opening marker of a generated policy (the rest of its line is a comment).
const OPEN: &str = "# pod-failure-policy: generated";
/// The closing marker.
const CLOSE: &str = "# /pod-failure-policy";

/// What a rule matches.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Match {
    /// `onExitCodes` with the `In` operator: the serve container ended with one of these.
    ExitCodeIn(Vec<u8>),
    /// `onPodConditions`: the pod has this condition (status True).
    PodCondition(&'static str),
}

/// One rule of the policy.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    action: JobAction,
    on: Match,
}

/// The rules, in order: the exits that must stay stopped fail the Job (first, so they win
/// over a disruption), the exits of a disruption are retried uncounted, and so is a pod
/// the cluster disrupted (`DisruptionTarget`: evicted, preempted, its node drained), even
/// when the grace period ended it by SIGKILL before serve could drain (exit 137).
fn rules() -> Vec<Rule> {
    let sorted = |codes: &[u8]| {
        let mut codes = codes.to_vec();
        codes.sort_unstable();
        codes
    };
    vec![
        Rule {
            action: JobAction::FailJob,
            on: Match::ExitCodeIn(sorted(&STAY_STOPPED)),
        },
        Rule {
            action: JobAction::Ignore,
            on: Match::ExitCodeIn(sorted(&DISRUPTED)),
        },
        Rule {
            action: JobAction::Ignore,
            on: Match::PodCondition("DisruptionTarget"),
        },
    ]
}

/// The policy as YAML, `indent` spaces before each line, the markers included.
fn render(indent: &str) -> String {
    let mut out = vec![
        format!("{OPEN} from supervisor/src/exit.rs (AR_UPDATE_POD_FAILURE_POLICY=1 cargo test -p agent-runner --lib pod_failure_policy)"),
        "podFailurePolicy:".to_owned(),
        "  rules:".to_owned(),
    ];
    for rule in rules() {
        let action = match rule.action {
            JobAction::FailJob => "FailJob",
            JobAction::Ignore => "Ignore",
            JobAction::Count => "Count",
            JobAction::Complete => unreachable!("success is no rule"),
        };
        out.push(format!("    - action: {action}"));
        match rule.on {
            Match::ExitCodeIn(codes) => {
                let values: Vec<String> = codes.iter().map(u8::to_string).collect();
                out.push("      onExitCodes:".to_owned());
                out.push(format!("        containerName: {CONTAINER}"));
                out.push("        operator: In".to_owned());
                out.push(format!("        values: [{}]", values.join(", ")));
            }
            Match::PodCondition(kind) => {
                out.push("      onPodConditions:".to_owned());
                out.push(format!("        - type: {kind}"));
            }
        }
    }
    out.push(CLOSE.to_owned());
    out.iter().map(|l| format!("{indent}{l}\n")).collect()
}

/// What Kubernetes does with a pod whose serve container ended with `code`, `disrupted`
/// when the pod carries `DisruptionTarget`: the first matching rule's action, success for
/// 0, else Count.
fn first_match(code: u8, disrupted: bool) -> JobAction {
    if code == 0 {
        return JobAction::Complete;
    }
    rules()
        .into_iter()
        .find(|r| match &r.on {
            Match::ExitCodeIn(codes) => codes.contains(&code),
            Match::PodCondition(_) => disrupted,
        })
        .map_or(JobAction::Count, |r| r.action)
}

/// Every manifest under deploy/kubernetes/.
fn manifests() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("deploy/kubernetes").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes"),
        &mut out,
    );
    out.sort();
    out
}

/// `text` with every generated policy replaced by [`render`] at its marker's indentation.
/// Errors: a marker without its closing marker.
fn refreshed(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        let Some(at) = line.find(OPEN) else {
            out.push_str(line);
            continue;
        };
        let indent = &line[..at];
        if !lines.any(|l| l.trim() == CLOSE) {
            return Err(format!("{OPEN} without {CLOSE}"));
        }
        out.push_str(&render(indent));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_failure_policy_agrees_with_exit_rs_for_every_exit_code() {
        for code in 0..=u8::MAX {
            assert_eq!(first_match(code, false), JobAction::of(code), "exit {code}");
            // A disrupted pod is retried uncounted unless its exit says stay stopped.
            let disrupted = match JobAction::of(code) {
                JobAction::Count => JobAction::Ignore,
                same => same,
            };
            assert_eq!(first_match(code, true), disrupted, "exit {code}, disrupted");
        }
        // The contract's named exits, as docs/operations.md "Running as a Job" lists them.
        let named = [
            (0, JobAction::Complete),
            (1, JobAction::Count),
            (2, JobAction::FailJob),
            (70, JobAction::FailJob),
            (71, JobAction::Count),
            (75, JobAction::FailJob),
            (76, JobAction::Count),
            (77, JobAction::FailJob),
            (78, JobAction::FailJob),
            (79, JobAction::FailJob),
            (137, JobAction::Count),
            (143, JobAction::Ignore),
        ];
        for (code, action) in named {
            assert_eq!(first_match(code, false), action, "exit {code}");
        }
    }

    #[test]
    fn pod_failure_policy_rules_are_what_kubernetes_accepts() {
        // batch/v1 validation: `In` never lists 0, values ascend without repeats, at most 255.
        for rule in rules() {
            if let Match::ExitCodeIn(codes) = &rule.on {
                assert!(!codes.is_empty() && codes.len() <= 255, "{codes:?}");
                assert!(!codes.contains(&0), "{codes:?}");
                assert!(codes.windows(2).all(|w| w[0] < w[1]), "{codes:?}");
            }
        }
    }

    #[test]
    fn pod_failure_policy_in_the_manifests_is_generated() {
        let files = manifests();
        let holding: Vec<&PathBuf> = files
            .iter()
            .filter(|f| std::fs::read_to_string(f).unwrap().contains(OPEN))
            .collect();
        assert!(
            holding.len() >= 2,
            "the Job and the CronJob hold the policy: {files:?}"
        );
        let update = std::env::var_os("AR_UPDATE_POD_FAILURE_POLICY").is_some();
        for file in holding {
            let text = std::fs::read_to_string(file).unwrap();
            let want = refreshed(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            if update {
                std::fs::write(file, &want).unwrap();
            } else {
                assert!(
                    text == want,
                    "{} drifted from supervisor/src/exit.rs; refresh it with AR_UPDATE_POD_FAILURE_POLICY=1 cargo test -p agent-runner --lib pod_failure_policy",
                    file.display()
                );
            }
        }
    }

    #[test]
    fn pod_failure_policy_refresh_replaces_only_the_block() {
        let text = "a: 1\n  # pod-failure-policy: generated old\n  stale: true\n  # /pod-failure-policy\nb: 2\n";
        let out = refreshed(text).unwrap();
        assert!(out.starts_with("a: 1\n  # pod-failure-policy: generated from"));
        assert!(out.ends_with("  # /pod-failure-policy\nb: 2\n"), "{out}");
        assert!(!out.contains("stale"), "{out}");
        assert!(
            out.contains(" values: [2, 70, 75, 77, 78, 79, 80]\n"),
            "{out}"
        );
        assert!(refreshed("# pod-failure-policy: generated\nx\n").is_err());
    }
}
