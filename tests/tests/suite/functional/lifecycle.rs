//! `serve`'s lifecycle with real hosts: SIGTERM stops it promptly (interrupting a long
//! restart delay) and shuts every host down; SIGKILL of the supervisor takes its hosts with
//! it (`PR_SET_PDEATHSIG`), including a host that ignores stdin EOF; a second `serve` on
//! the same project is refused while one runs.

use agent_runner_e2e::serde_json::json;
use agent_runner_e2e::{
    dirty_commit_host_bin, pause_host_bin, wait_until, HostSpec, Project, Running,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

const RAW: &str = env!("CARGO_BIN_EXE_ar-e2e-raw");

fn host_exes() -> Vec<PathBuf> {
    vec![
        pause_host_bin(),
        dirty_commit_host_bin(),
        PathBuf::from(RAW),
    ]
}

/// A project with three pinned hosts under `require` (the raw one keeps running after
/// stdin EOF) and a 30 s restart delay; `serve` started and its first round ended.
/// Returns the project, the running `serve` and the pids of its hosts.
fn serving() -> (Project, Running, Vec<u32>) {
    let p = Project::new();
    p.write_config(
        &p.config()
            .sandbox("require")
            .restart_delay_s(30)
            .spawn_override_allow(&["pause_file"])
            .host(HostSpec::new("pause", pause_host_bin()))
            .host(HostSpec::new("wip", dirty_commit_host_bin()).provides(&["dirty_handler"]))
            .host(HostSpec::new("stubborn", RAW).config(json!({"on_eof": "linger"}))),
    );
    let serve = p.spawn(&["serve"]);
    p.wait_for_event("round_end");
    let exes = host_exes();
    let exes: Vec<&Path> = exes.iter().map(PathBuf::as_path).collect();
    let pids = wait_until("three running hosts", Duration::from_secs(30), || {
        let pids = p.host_pids(&exes);
        (pids.len() == 3).then_some(pids)
    });
    (p, serve, pids)
}

fn alive(pids: &[u32]) -> Vec<u32> {
    pids.iter()
        .copied()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                !stat
                    .rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
        })
        .collect()
}

#[test]
fn sigterm_stops_serve_and_every_host() {
    let (p, serve, pids) = serving();
    assert_eq!(p.events_of("round_end")[0]["round_num"], 1);

    serve.signal(libc::SIGTERM);
    // Well under the 30 s restart delay: the stop interrupted it.
    let out = serve.wait(Duration::from_secs(20));
    out.assert_code(0);
    assert!(out.stderr.contains("1 completed round"), "{out}");
    let all = p.events_text();
    let stopping = p.events_of("serve_stopping");
    assert_eq!(stopping.len(), 1, "{all}");
    assert_eq!(stopping[0]["rounds_completed"], 1, "{all}");
    assert_eq!(p.events_of("round_start").len(), 1, "{all}");

    assert!(
        alive(&pids).is_empty(),
        "hosts survived: {:?}",
        alive(&pids)
    );
    let exes = host_exes();
    let exes: Vec<&Path> = exes.iter().map(PathBuf::as_path).collect();
    assert!(p.host_pids(&exes).is_empty());
}

#[test]
fn sigkill_of_serve_takes_every_host_with_it() {
    let (p, serve, pids) = serving();

    serve.signal(libc::SIGKILL);
    let out = serve.wait(Duration::from_secs(20));
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(libc::SIGKILL)
    );
    // The lingering host ignores EOF: only the parent-death signal ends it.
    wait_until("hosts to die with serve", Duration::from_secs(5), || {
        alive(&pids).is_empty().then_some(())
    });
    let exes = host_exes();
    let exes: Vec<&Path> = exes.iter().map(PathBuf::as_path).collect();
    assert!(p.host_pids(&exes).is_empty());
}

#[test]
fn second_serve_is_refused_naming_the_holder() {
    let (p, serve, _pids) = serving();

    let second = p.run(&["serve", "--max-rounds", "1"]);
    second.assert_code(1);
    let holder = format!("pid {}", serve.pid());
    assert!(second.stderr.contains(&holder), "{second}");
    // The refused serve started nothing and disturbed nothing.
    assert_eq!(p.events_of("round_start").len(), 1, "{}", p.events_text());
    let round = p.run(&["round"]);
    round.assert_code(1);
    assert!(round.stderr.contains(&holder), "{round}");

    serve.signal(libc::SIGTERM);
    serve.wait(Duration::from_secs(20)).assert_code(0);
}
