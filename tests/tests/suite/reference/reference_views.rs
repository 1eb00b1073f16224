//! The files scripts written against the reference system read in `log_dir`
//! (docs/reference-system.md, "Views in log_dir"): `status.json` after each round,
//! `serve.pid` while `serve` runs, `agent-runner.lock.holder` while the lock is held, and
//! the record at `<log_dir>/events-YYYY-MM.jsonl` (a link to the state dir's file, made
//! again after `git clean`) when `log_dir` is inside the work tree.

use agent_runner_e2e::{wait_until, Project};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn month_links(log_dir: &Path) -> Vec<PathBuf> {
    let mut links: Vec<PathBuf> = std::fs::read_dir(log_dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    links.retain(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("events-") && n.ends_with(".jsonl"))
    });
    links
}

#[test]
fn status_json_and_the_record_show_in_log_dir_after_rounds() {
    let p = Project::new();
    p.write_config(&p.config());
    p.run(&["round"]).assert_code(0);
    let status = json(&p.log_dir().join("status.json"));
    assert_eq!(status["round_num"], 1, "{status}");
    assert_eq!(status["last_exit_code"], 0, "{status}");
    assert_eq!(status["running"], false, "{status}");
    assert!(status["last_completed_at"].is_string(), "{status}");
    assert!(!p.log_dir().join("agent-runner.lock.holder").exists());
    assert!(!p.log_dir().join("serve.pid").exists());

    // The record lives in the state dir; log_dir shows it through a link per month.
    let links = month_links(&p.log_dir());
    assert_eq!(links.len(), 1, "{links:?}");
    let target = std::fs::read_link(&links[0]).expect("a symbolic link");
    assert!(target.starts_with(p.state_dir()), "{}", target.display());
    let text = std::fs::read_to_string(&links[0]).unwrap();
    assert!(text.contains("\"event\":\"round_end\""), "{text}");

    // `git clean -fdx` takes the link and the views, never the record; the next round
    // brings them back and numbering goes on.
    let clean = std::process::Command::new("git")
        .args(["clean", "-fdxq"])
        .current_dir(p.dir())
        .status()
        .unwrap();
    assert!(clean.success());
    assert!(!p.log_dir().exists());
    p.run(&["round"]).assert_code(0);
    assert_eq!(json(&p.log_dir().join("status.json"))["round_num"], 2);
    let text = std::fs::read_to_string(&month_links(&p.log_dir())[0]).unwrap();
    let starts = text.matches("\"event\":\"round_start\"").count();
    assert_eq!(starts, 2, "{text}");
}

#[test]
fn serve_pid_and_lock_holder_exist_while_serve_runs() {
    let p = Project::new();
    p.write_config(&p.config().agent_env("DEMO_AGENT_SLEEP", "30"));
    let serve = p.spawn(&["serve"]);
    let pid_file = p.log_dir().join("serve.pid");
    let holder_file = p.log_dir().join("agent-runner.lock.holder");
    let pid = wait_until("serve.pid", WAIT, || {
        std::fs::read_to_string(&pid_file).ok()
    });
    assert_eq!(pid.trim(), serve.pid().to_string());
    let holder = json(&holder_file);
    assert_eq!(holder["pid"], serve.pid(), "{holder}");
    assert!(holder["started_at"].is_string(), "{holder}");
    let cmdline = holder["cmdline"].as_str().unwrap();
    assert!(cmdline.contains("agent-runner"), "{holder}");
    assert!(cmdline.chars().count() <= 80, "{holder}");
    // A second supervisor is refused while the first holds the lock.
    p.run(&["round"]).assert_code(1);
    // `kill --json` waits for it and says it is gone (`active`, the reference's key).
    let killed = p.run(&["kill", "--json"]);
    killed.assert_code(0);
    let reply: Value = serde_json::from_str(killed.stdout.trim()).expect("kill --json");
    assert_eq!(reply["active"], false, "{killed}");
    assert_eq!(reply["pid"], serve.pid(), "{killed}");
    serve.wait(WAIT);
    assert!(!pid_file.exists(), "serve.pid left after serve exited");
    assert!(!holder_file.exists(), "holder left after serve exited");
}
