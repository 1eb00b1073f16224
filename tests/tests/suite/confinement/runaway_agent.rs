//! An agent that leaves the process group the supervisor made for it (`setpgid` into the
//! supervisor's own group, a child that calls `setsid`) is still ended by the round budget
//! and by a stop, and does not outlive a supervisor killed with SIGKILL (issue 27, item 2;
//! docs/operations.md "Leaving it unattended", src/runtime/agent/process.rs). Real processes, as
//! root and as the unprivileged user.

use std::time::{Duration, Instant};

use agent_runner_e2e::unprivileged::Operator;
use agent_runner_e2e::{wait_until, ConfigBuilder, Project};

/// A Python agent that moves itself into its parent's (the supervisor's) process group,
/// writes its pid to `pids`, optionally forks a child that starts a session of its own
/// (and writes its pid too), then sleeps far past any budget.
fn escaping_agent(p: &Project, with_session_child: bool) -> std::path::PathBuf {
    let pids = p.tmp_dir().join("pids");
    p.script(
        "escaping-agent.py",
        &format!(
            "#!/usr/bin/python3\n\
             import os, time\n\
             os.setpgid(0, os.getpgid(os.getppid()))\n\
             def note():\n\
             \x20   with open({pids:?}, 'a') as f: f.write(f'{{os.getpid()}}\\n')\n\
             if {fork} and os.fork() == 0:\n\
             \x20   os.setsid()\n\
             \x20   note()\n\
             \x20   time.sleep(3600)\n\
             \x20   os._exit(0)\n\
             time.sleep(0.2)\n\
             note()\n\
             time.sleep(3600)\n",
            pids = pids.display().to_string(),
            fork = if with_session_child { "True" } else { "False" },
        ),
    )
}

/// The pids the agent wrote, once `count` are there.
fn agent_pids(p: &Project, count: usize) -> Vec<i32> {
    wait_until("the agent's pids", Duration::from_secs(30), || {
        let text = std::fs::read_to_string(p.tmp_dir().join("pids")).ok()?;
        let pids: Vec<i32> = text.lines().filter_map(|l| l.parse().ok()).collect();
        (pids.len() >= count).then_some(pids)
    })
}

/// Whether `pid` still runs (a zombie has ended).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.get(s.rfind(')')? + 2..)
                .map(|r| !r.starts_with('Z') && !r.starts_with('X'))
        })
        .unwrap_or(false)
}

/// SIGKILLs what a failed run left (so a failing test does not leave sleepers behind).
fn kill_all(pids: &[i32]) {
    for &pid in pids {
        // SAFETY: kill(2) takes integers only.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

fn assert_all_gone(pids: &[i32], within: Duration, what: &str) {
    let deadline = Instant::now() + within;
    while pids.iter().any(|&pid| alive(pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<i32> = pids.iter().copied().filter(|&pid| alive(pid)).collect();
    kill_all(&left);
    assert!(left.is_empty(), "{what}: still running: {left:?}");
}

#[test]
fn the_budget_ends_an_agent_that_left_its_group() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        let agent = escaping_agent(&p, true);
        p.write_config(&ConfigBuilder::new(&agent).round_budget_s(2));
        let running = p.spawn(&["round"]);
        let pids = agent_pids(&p, 2);
        let started = Instant::now();
        let out = running.wait(Duration::from_secs(60));
        assert_all_gone(&pids, Duration::from_secs(2), "after the round");
        out.assert_code(0); // ended by its budget
        let exit = &p.events_of("agent_exit")[0];
        assert_eq!(exit["exit_cause"], "timeout", "{operator:?}: {exit}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{operator:?}: the round took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_stop_ends_an_agent_that_left_its_group() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        let agent = escaping_agent(&p, true);
        p.write_config(&ConfigBuilder::new(&agent).round_budget_s(600));
        let running = p.spawn(&["serve"]);
        let pids = agent_pids(&p, 2);
        // The first SIGTERM lets the round finish; the second ends it now. Two signals
        // sent before serve takes the first would count once: wait until it says so.
        running.signal(libc::SIGTERM);
        wait_until(
            "serve to take the first SIGTERM",
            Duration::from_secs(10),
            || {
                running
                    .stderr_so_far()
                    .contains("stop signal received")
                    .then_some(())
            },
        );
        running.signal(libc::SIGTERM);
        let out = running.wait(Duration::from_secs(30));
        assert_all_gone(&pids, Duration::from_secs(2), "after the stop");
        assert_eq!(out.code(), 0, "{operator:?}: {out}");
        let exit = &p.events_of("agent_exit")[0];
        assert_eq!(exit["exit_cause"], "stopped", "{operator:?}: {exit}");
    }
}

#[test]
fn an_agent_that_left_its_group_dies_with_a_killed_supervisor() {
    for operator in [Operator::Root, Operator::Unprivileged] {
        let p = Project::new_as(operator);
        let agent = escaping_agent(&p, false);
        p.write_config(&ConfigBuilder::new(&agent).round_budget_s(600));
        let running = p.spawn(&["serve"]);
        let pids = agent_pids(&p, 1);
        assert!(alive(pids[0]));
        running.signal(libc::SIGKILL);
        let _ = running.wait(Duration::from_secs(10));
        assert_all_gone(&pids, Duration::from_secs(5), "after SIGKILL of serve");
    }
}
