//! Control verbs against a real `serve`: `start` (detached, refused while one runs),
//! `status [--json]` over the control socket and from the lock when none answers, a second
//! `serve` refused with the holder's pid, `stop` (graceful) and `kill` (the running agent
//! terminated now).

use agent_runner_e2e::serde_json::Value;
use agent_runner_e2e::{wait_until, ConfigBuilder, Project};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

fn status(p: &Project) -> (i32, Value) {
    let out = p.run(&["status", "--json"]);
    let value = agent_runner_e2e::serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("status --json: {e}: {out}"));
    (out.code(), value)
}

fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

#[test]
fn start_status_refusal_and_stop() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("ignore").restart_delay_s(30));
    let (code, st) = status(&p);
    assert_eq!(code, 1, "{st}");
    assert_eq!(st["running"], false);

    p.run(&["start"]).assert_code(0);
    let (code, st) = wait_until("serve to answer status", Duration::from_secs(30), || {
        let (code, st) = status(&p);
        (st["source"] == "socket").then_some((code, st))
    });
    assert_eq!(code, 0, "{st}");
    assert_eq!(st["running"], true);
    let pid = st["pid"].as_u64().expect("pid");
    assert!(alive(pid));
    assert!(st["uptime_s"].as_u64().is_some(), "{st}");
    assert!(st["hosts"].as_array().is_some(), "{st}");
    // The first round runs at once; then serve waits 30 s.
    wait_until("round 1 to finish", Duration::from_secs(30), || {
        (!p.events_of("round_end").is_empty()).then_some(())
    });
    let (_, st) = status(&p);
    assert_eq!(st["current_round"], 1, "{st}");

    let again = p.run(&["start"]);
    again.assert_code(1);
    assert!(again.stderr.contains(&pid.to_string()), "{again}");
    let second = p.run(&["serve"]);
    second.assert_code(1);
    assert!(second.stderr.contains(&pid.to_string()), "{second}");

    p.run(&["stop"]).assert_code(0);
    wait_until("serve to exit after stop", Duration::from_secs(10), || {
        (!alive(pid)).then_some(())
    });
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
    assert!(!p.state_dir().join("control.sock").exists());
    let (code, st) = status(&p);
    assert_eq!(code, 1, "{st}");
    assert_eq!(st["current_round"], 1, "{st}");
}

#[test]
fn kill_terminates_the_running_agent() {
    let p = Project::new();
    let agent = p.tmp_dir().join("slow-agent.sh");
    std::fs::write(
        &agent,
        "#!/usr/bin/env bash\necho working\nexec sleep 300\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.write_config(&ConfigBuilder::new(&agent));
    let serve = p.spawn(&["serve"]);
    p.wait_for_event("agent_spawn");
    p.run(&["kill"]).assert_code(0);
    // A hang guard: the agent gets SIGTERM (sleep dies of it).
    let out = serve.wait(Duration::from_secs(20));
    out.assert_code(0);
    let exit = p.wait_for_event("agent_exit");
    assert_eq!(exit["exit_cause"], "stopped", "{}", p.events_text());
    assert!(p.processes().is_empty(), "{:?}", p.processes());
}

#[test]
fn stop_falls_back_on_the_lock_pid_without_a_socket() {
    let p = Project::new();
    p.write_config(&p.config().dirty_action("ignore").restart_delay_s(60));
    let serve = p.spawn(&["serve"]);
    p.wait_for_event("round_end");
    let sock = p.state_dir().join("control.sock");
    wait_until("the control socket", Duration::from_secs(10), || {
        sock.exists().then_some(())
    });
    // Take the socket away: the verbs fall back on the lock's pid.
    std::fs::remove_file(&sock).unwrap();
    let (code, st) = status(&p);
    assert_eq!(code, 0, "{st}");
    assert_eq!(st["source"], "lock", "{st}");
    assert_eq!(st["pid"].as_u64(), Some(serve.pid() as u64), "{st}");
    p.run(&["stop"]).assert_code(0);
    serve.wait(Duration::from_secs(10)).assert_code(0);
}
