//! Issue 17, case 6: every git command is bounded and stoppable. With `commit.gpgsign` on
//! and a signer that waits for a passphrase forever, the auto-commit fails after
//! `[vcs] git_timeout_s` with a clear event, and `stop`, `kill` and SIGTERM each end
//! `serve` at once, the signer killed with git's process group.

use agent_runner_e2e::{wait_until, Project, EVENT_TIMEOUT};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A project whose commits are signed by a program that never answers (it records its
/// pid, then sleeps), auto-commit on, `git_timeout_s` as given.
fn signed_project(git_timeout_s: u64) -> (Project, PathBuf) {
    let p = Project::new();
    let pid_file = p.tmp_dir().join("signer.pid");
    let signer = p.script(
        "signer.sh",
        &format!(
            "#!/bin/sh\necho $$ > '{}'\nexec sleep 600\n",
            pid_file.display()
        ),
    );
    let config = p.config().dirty_action("auto_commit").render().replace(
        "[vcs]\n",
        &format!("[vcs]\ngit_timeout_s = {git_timeout_s}\n"),
    );
    p.write_config_text(&config);
    p.git(&["config", "commit.gpgsign", "true"]);
    // The operator's signer, in the operator's (global) config: one in the repository's
    // own config is not run by the supervisor (docs/security.md, "The supervisor's git").
    p.git(&[
        "config",
        "--global",
        "gpg.program",
        signer.to_str().unwrap(),
    ]);
    (p, pid_file)
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
    })
}

fn signer_pid(pid_file: &PathBuf) -> u32 {
    wait_until("the signer to start", EVENT_TIMEOUT, || {
        std::fs::read_to_string(pid_file).ok()?.trim().parse().ok()
    })
}

#[test]
fn a_waiting_signer_times_out_with_a_clear_event() {
    let (p, pid_file) = signed_project(2);
    let started = Instant::now();
    p.run(&["round"]).assert_code(0);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let failed = p.wait_for_event("dirty_commit_failed");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.starts_with("git commit failed: timed out after 2 s"),
        "{failed}"
    );
    assert!(error.contains("signing passphrase"), "{failed}");
    assert_eq!(failed["tree"], "left as it was", "{failed}");
    let signer = signer_pid(&pid_file);
    wait_until("the signer to be killed", EVENT_TIMEOUT, || {
        (!alive(signer)).then_some(())
    });
    assert!(p.log_subjects().iter().all(|s| !s.contains("auto-commit")));
}

#[test]
fn stop_kill_and_sigterm_end_serve_while_the_signer_waits() {
    for how in ["stop", "kill", "sigterm"] {
        let (p, pid_file) = signed_project(600);
        let serve = p.spawn(&["serve"]);
        let signer = signer_pid(&pid_file);
        let asked = Instant::now();
        match how {
            "sigterm" => serve.signal(libc::SIGTERM),
            verb => {
                p.run(&[verb]).assert_code(0);
            }
        }
        serve.wait(Duration::from_secs(30)).assert_code(0);
        assert!(
            asked.elapsed() < Duration::from_secs(15),
            "{how}: serve took {:?}",
            asked.elapsed()
        );
        wait_until("the signer to be killed", EVENT_TIMEOUT, || {
            (!alive(signer)).then_some(())
        });
        let failed = p.wait_for_event("dirty_commit_failed");
        assert!(
            failed["error"].as_str().unwrap().contains("stop request"),
            "{how}: {failed}"
        );
        assert_eq!(
            p.events_of("round_end").len(),
            1,
            "{how}: {}",
            p.events_text()
        );
    }
}
