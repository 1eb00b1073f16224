//! `serve --job` in the image (deploy/Containerfile) under podman, driven to each of its
//! own exits, the container's exit code read from the engine and put through the
//! `podFailurePolicy` of deploy/kubernetes/job.yaml as Kubernetes reads it (issue 39):
//!
//! - the goal reached: 0, the Job completes;
//! - a bound (`max_rounds`) before the goal: 79, the Job fails; the same run without
//!   `--job` (the control) exits 0, which a Job would call complete;
//! - a drain by SIGTERM (`podman stop`, as a kubelet deletes a pod) during a round: 143,
//!   retried without counting, the round recorded ending;
//! - `--job` with no goal that can end it: 78, the Job fails.
//!
//! podman 4.3's `kube play` takes no Job, so the containers run with `podman run` and the
//! manifest's pod settings that matter here: the image's user, read-only root, every
//! capability dropped, no network. What only a cluster shows is listed in
//! docs/operations.md, "Running as a Job".

use crate::kube_common;

use agent_runner_e2e::container::{engine, Container, IMAGE_UID};
use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::{wait_until, workspace_root};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// A work tree (a git repo holding the config) and a state dir, mounted at /work and /state.
struct Tree {
    tmp: tempfile::TempDir,
}

impl Tree {
    fn new(config: &str) -> Tree {
        let tmp = tempfile::Builder::new()
            .prefix("ar-e2e-job-")
            .tempdir()
            .expect("tempdir");
        let t = Tree { tmp };
        let work = t.tmp.path().join("work");
        std::fs::create_dir_all(work.join("prompts")).unwrap();
        std::fs::create_dir_all(t.state()).unwrap();
        std::fs::write(work.join("prompts/main.md"), "Keep a journal.\n").unwrap();
        std::fs::write(work.join("agent-runner.toml"), config).unwrap();
        std::fs::write(work.join(".gitignore"), "/.agent-runner-pause\n").unwrap();
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["add", "-A"],
            &["commit", "-q", "-m", "init"],
        ] {
            let out = Command::new("git")
                .args(["-c", "user.name=e2e", "-c", "user.email=e2e@localhost"])
                .args(args)
                .current_dir(&work)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        }
        let status = Command::new("chown")
            .args(["-R", &format!("{IMAGE_UID}:{IMAGE_UID}")])
            .arg(&work)
            .arg(t.state())
            .status()
            .unwrap();
        assert!(status.success());
        t
    }

    fn state(&self) -> PathBuf {
        self.tmp.path().join("state")
    }

    /// The record, every line parsed.
    fn events(&self) -> Vec<Value> {
        let dir = self.state().join("state");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.retain(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("events-") && n.ends_with(".jsonl"))
        });
        files.sort();
        files
            .iter()
            .flat_map(|f| {
                std::fs::read_to_string(f)
                    .unwrap_or_default()
                    .lines()
                    .map(|l| serde_json::from_str(l).expect("whole JSON lines"))
                    .collect::<Vec<Value>>()
            })
            .collect()
    }

    fn rounds(&self, kind: &str) -> Vec<u64> {
        self.events()
            .iter()
            .filter(|e| e["event"] == kind)
            .filter_map(|e| e["round_num"].as_u64())
            .collect()
    }

    /// Starts `serve ARGS` in a detached container; returns it.
    fn start(&self, args: &[&str]) -> Container {
        let name = Container::named("job");
        let agent = workspace_root().join("examples/agent/demo-agent.sh");
        let mut run: Vec<String> = vec![
            "run".into(),
            "--detach".into(),
            format!("--name={}", name.name),
            "--read-only".into(),
            "--read-only-tmpfs=false".into(),
            "--cap-drop=all".into(),
            "--network=none".into(),
            format!("--volume={}:/work", self.tmp.path().join("work").display()),
            format!("--volume={}:/state", self.state().display()),
            format!("--volume={}:/opt/test/demo-agent.sh:ro", agent.display()),
            engine().image().into(),
            "--config".into(),
            "/work/agent-runner.toml".into(),
            "serve".into(),
        ];
        run.extend(args.iter().map(|a| (*a).to_owned()));
        let run: Vec<&str> = run.iter().map(String::as_str).collect();
        engine().ok(&run);
        name
    }
}

/// The config: the demo agent (each round `sleep_s`), `max_rounds`, and `goal` appended.
fn config(sleep_s: u64, max_rounds: u64, goal: &str) -> String {
    format!(
        "schema_version = 1\n\n[agent]\nname = \"demo-agent\"\ncommand = [\"/opt/test/demo-agent.sh\"]\nprompt_arg_template = [\"{{prompt}}\"]\nprompt_delivery = \"argv\"\n\n[agent.env]\nDEMO_AGENT_SLEEP = \"{sleep_s}\"\n\n[runtime]\nwork_dir = \"/work\"\nlog_dir = \"/state/logs\"\nstate_dir = \"/state/state\"\nround_budget_s = 60\nrestart_delay_s = 1\nmax_rounds = {max_rounds}\n\n[prompt]\nfiles = [\"/work/prompts/main.md\", \"/state/logs/lessons.md\"]\n\n[monitor.host_health.disk]\nwarning_pct = 100\ncritical_pct = 100\n{goal}"
    )
}

/// A goal whose one check runs `check` (sh) in the tree.
fn goal(check: &str) -> String {
    format!(
        "\n[goal]\nledger = \"/state/logs/lessons.md\"\nstop_when = \"all_satisfied\"\n\n[[goal.checks]]\nname = \"done\"\ncmd = [\"sh\", \"-c\", \"{check}\"]\ntimeout_s = 5\n"
    )
}

/// Waits for the container to end; returns its exit code and its log.
fn exit_of(c: &Container) -> (i64, String) {
    let code = engine().ok(&["wait", &c.name]);
    let out = engine().run(&["logs", &c.name]);
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (
        code.trim().parse().expect("podman wait prints the code"),
        log,
    )
}

/// What job.yaml's Job does with a serve container that exited `code`, the pod undisrupted.
fn job_does(code: i64) -> String {
    let job = kube_common::document("deploy/kubernetes/job.yaml", "Job");
    kube_common::job_action(&job["spec"]["podFailurePolicy"], "serve", code, &[])
}

#[test]
fn serve_job_exits_in_the_image_are_what_the_jobs_policy_expects() {
    // The goal reached after the first round: 0, complete.
    let tree = Tree::new(&config(0, 5, &goal("test -f notes/journal.md")));
    let (code, log) = exit_of(&tree.start(&["--job"]));
    assert_eq!(code, 0, "{log}");
    assert_eq!(job_does(code), "Complete");
    assert_eq!(tree.rounds("goal_reached"), vec![1], "{log}");

    // The round bound before the goal: 79, the Job fails.
    let tree = Tree::new(&config(0, 1, &goal("false")));
    let (code, log) = exit_of(&tree.start(&["--job"]));
    assert_eq!(code, 79, "{log}");
    assert!(log.contains("ended before the goal was reached"), "{log}");
    assert_eq!(job_does(code), "FailJob");
    assert!(
        tree.events()
            .iter()
            .any(|e| e["event"] == "max_rounds_reached"),
        "{log}"
    );
    // The control: the same run without --job exits 0, which a Job would call complete.
    let tree = Tree::new(&config(0, 1, &goal("false")));
    let (code, log) = exit_of(&tree.start(&[]));
    assert_eq!(code, 0, "{log}");
    assert_eq!(job_does(code), "Complete");

    // A drain by SIGTERM during a round: 143, retried uncounted; the round ended recorded.
    let tree = Tree::new(&config(8, 5, &goal("false")));
    let c = tree.start(&["--job"]);
    wait_until("the first round to start", Duration::from_secs(60), || {
        (!tree.rounds("round_start").is_empty()).then_some(())
    });
    engine().ok(&["stop", "--time=60", &c.name]);
    let (code, log) = exit_of(&c);
    assert_eq!(code, 143, "{log}");
    assert!(log.contains("drained by a stop"), "{log}");
    assert_eq!(job_does(code), "Ignore");
    assert_eq!(tree.rounds("round_start"), vec![1], "{log}");
    assert_eq!(tree.rounds("round_end"), vec![1], "{log}");

    // --job with no goal that can end the run: 78 before any round, the Job fails.
    let tree = Tree::new(&config(0, 1, ""));
    let (code, log) = exit_of(&tree.start(&["--job"]));
    assert_eq!(code, 78, "{log}");
    assert!(log.contains("goal.stop_when"), "{log}");
    assert_eq!(job_does(code), "FailJob");
    assert!(tree.rounds("round_start").is_empty(), "{log}");
}
