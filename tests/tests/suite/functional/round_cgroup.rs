//! Per-round child cgroups (docs/operations.md, "Round cgroups") on the real kernel, in the
//! layout this machine mounts the memory controller in (cgroup v1 memory here; v2 where
//! the unified hierarchy has it), as root and as the unprivileged test user.
//!
//! Each test makes a memory cgroup of its own below the test process's, hands it to the
//! operator (for the test user: `chown`, which is what delegation means on v1 and what
//! systemd's `Delegate=yes` does on v2) and starts the supervisor inside it. A round's
//! agent then runs in `round-<N>.<pid>` below it, with the configured brake and limit set;
//! its peak memory is recorded, an allocation past the limit is OOM-killed and named, and
//! the round's cgroup is gone after the round. Without delegation nothing changes and
//! `doctor` says how to get it.

use agent_runner_e2e::serde_json::{self, Value};
use agent_runner_e2e::unprivileged::{Operator, TestUser};
use agent_runner_e2e::{Project, RunOutput};
use agent_runner_plugin_host::common::cgroup::{own_cgroup, Layout};
use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

const MIB: u64 = 1024 * 1024;

/// A memory cgroup made for one test below the test process's own, removed on drop.
struct TestCgroup {
    dir: PathBuf,
    layout: Layout,
}

impl TestCgroup {
    /// Makes it, given to `owner` when there is one.
    fn new(owner: Option<&TestUser>) -> TestCgroup {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let own = own_cgroup("memory")
            .expect("the memory controller is mounted (cgroup v1 memory or v2): tests need it");
        let parent = match own.layout {
            Layout::V1 => own.dir,
            Layout::V2 => v2_parent_with_memory(own.dir),
        };
        let dir = parent.join(format!(
            "ar-e2e-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        if let Some(user) = owner {
            user.own(&dir);
        }
        TestCgroup {
            dir,
            layout: own.layout,
        }
    }

    /// The names of the round cgroups below it.
    fn rounds(&self) -> Vec<String> {
        let mut names = self.children();
        names.retain(|n| n.starts_with("round-"));
        names
    }

    /// Makes `cmd` start inside this cgroup: its child writes `0` to the open
    /// `cgroup.procs` before exec.
    fn enter(&self, cmd: &mut Command) {
        let procs: OwnedFd = fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join("cgroup.procs"))
            .expect("open cgroup.procs")
            .into();
        let fd = procs.as_raw_fd();
        // SAFETY: runs in the forked child before exec; one async-signal-safe write(2) on a
        // descriptor kept open by the closure; no allocation, no locks.
        unsafe {
            cmd.pre_exec(move || {
                let _keep = &procs;
                if libc::write(fd, b"0".as_ptr().cast(), 1) == 1 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }

    /// The names of the cgroups below it.
    fn children(&self) -> Vec<String> {
        fs::read_dir(&self.dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }
}

/// Where a v2 test cgroup can get the memory controller: the test's own cgroup when it can
/// enable `memory` for its children, else (a cgroup holding processes cannot: "no internal
/// processes") the root of the hierarchy, which is exempt.
fn v2_parent_with_memory(own: PathBuf) -> PathBuf {
    if fs::write(own.join("cgroup.subtree_control"), "+memory").is_ok() {
        return own;
    }
    let mut root = own;
    while root
        .parent()
        .is_some_and(|p| p.join("cgroup.procs").exists())
    {
        root.pop();
    }
    let control = fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
    if !control.split_whitespace().any(|c| c == "memory") {
        fs::write(root.join("cgroup.subtree_control"), "+memory")
            .unwrap_or_else(|e| panic!("enable memory below {}: {e}", root.display()));
    }
    root
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for child in self.children() {
            let _ = fs::remove_dir(self.dir.join(child));
        }
        let _ = fs::remove_dir(&self.dir);
    }
}

/// An agent (Python) that prints its cgroups and the limits of the round cgroup below
/// `$ROUND_CG_PARENT`, then holds `$ALLOC_MB` MiB of touched memory for a moment.
const AGENT: &str = r#"#!/usr/bin/env python3
import os, sys, time
print(open("/proc/self/cgroup").read(), flush=True)
parent = os.environ.get("ROUND_CG_PARENT", "")
if parent:
    for name in sorted(os.listdir(parent)):
        if name.startswith("round-"):
            for f in ("memory.soft_limit_in_bytes", "memory.limit_in_bytes", "memory.high", "memory.max"):
                try:
                    print("limit", f, open(os.path.join(parent, name, f)).read().strip(), flush=True)
                except OSError:
                    pass
block = b"x" * (int(os.environ["ALLOC_MB"]) << 20)
print("allocated", len(block), flush=True)
time.sleep(0.3)
"#;

fn project(operator: Operator) -> Project {
    let p = Project::new_as(operator);
    p.script("agent/mem-agent.py", AGENT);
    p
}

/// `agent-runner <args>` started inside `cg` (or where the test runs, for `None`).
fn run_in(p: &Project, cg: Option<&TestCgroup>, args: &[&str]) -> RunOutput {
    let mut cmd = p.command(args);
    if let Some(cg) = cg {
        cg.enter(&mut cmd);
    }
    p.run_with(cmd)
}

fn write_config(p: &Project, cg: Option<&TestCgroup>, alloc_mb: u64, memory: &str) {
    let agent = p.tmp_dir().join("agent/mem-agent.py");
    let parent = cg.map(|c| c.dir.display().to_string()).unwrap_or_default();
    p.write_config(
        &agent_runner_e2e::ConfigBuilder::new(&agent)
            .dirty_action("ignore")
            .agent_env("ALLOC_MB", &alloc_mb.to_string())
            .agent_env("ROUND_CG_PARENT", &parent)
            .extra(&format!("[monitor.host_health.memory]\n{memory}")),
    );
}

/// `peek --json`'s `brake` (the reference's peek schema 2.5 key), run in `cg`.
fn peek_brake(p: &Project, cg: Option<&TestCgroup>) -> Value {
    let out = run_in(p, cg, &["peek", "--json"]);
    out.assert_code(0);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    doc["brake"].clone()
}

fn doctor_round_cgroup(p: &Project, cg: Option<&TestCgroup>) -> Value {
    let out = run_in(p, cg, &["doctor", "--json"]);
    let report: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out}"));
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "round_cgroup")
        .cloned()
        .unwrap_or_else(|| panic!("no round_cgroup check: {report}"))
}

/// The last round's log text.
fn last_round_log(p: &Project) -> String {
    let logs = p.round_logs();
    fs::read_to_string(logs.last().expect("a round log")).unwrap()
}

fn peak_and_oom_kill_in_a_delegated_cgroup(operator: Operator) {
    let p = project(operator);
    let cg = TestCgroup::new(operator.user());
    // The test user's cgroup is delegated by ownership; root, which can write every
    // cgroup, opts in for a cgroup systemd did not mark.
    let mode = match operator {
        Operator::Root => "round_cgroup = \"on\"\n",
        Operator::Unprivileged => "",
    };
    let (high, max) = match cg.layout {
        Layout::V1 => ("memory.soft_limit_in_bytes", "memory.limit_in_bytes"),
        Layout::V2 => ("memory.high", "memory.max"),
    };

    // Round 1: 40 MiB under a 512 MiB brake: the peak is recorded, the brake was set.
    write_config(&p, Some(&cg), 40, &format!("{mode}round_high_mb = 512"));
    let check = doctor_round_cgroup(&p, Some(&cg));
    let reason = check["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("delegated") && reason.contains(&cg.dir.display().to_string()),
        "{check}"
    );
    assert_eq!(peek_brake(&p, Some(&cg)), "armed");
    run_in(&p, Some(&cg), &["round"]).assert_code(0);
    let mem = &p.events_of("round_cgroup_memory")[0];
    assert_eq!(mem["round_num"], 1, "{mem}");
    assert_eq!(mem["layout"], cg.layout.as_str(), "{mem}");
    assert_eq!(mem["high_bytes"], 512 * MIB, "{mem}");
    assert_eq!(mem["max_bytes"], Value::Null, "{mem}");
    let peak = mem["peak_bytes"].as_u64().expect("peak_bytes");
    assert!(peak >= 40 * MIB, "peak {peak} below the 40 MiB held: {mem}");
    let round_dir = PathBuf::from(mem["cgroup"].as_str().unwrap());
    assert_eq!(round_dir.parent(), Some(cg.dir.as_path()), "{mem}");
    let name = round_dir.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(name.starts_with("round-1."), "{name}");
    // The agent really ran in it, with the brake set.
    let log = last_round_log(&p);
    let suffix = format!("/{}/{name}", cg.dir.file_name().unwrap().to_str().unwrap());
    assert!(
        log.lines().any(|l| l.ends_with(&suffix)),
        "agent's /proc/self/cgroup lacks {suffix}:\n{log}"
    );
    assert!(
        log.contains(&format!("limit {high} {}", 512 * MIB)),
        "brake not set in {high}:\n{log}"
    );
    assert!(
        p.events_of("round_oom_killed").is_empty(),
        "{}",
        p.events_text()
    );
    assert!(!round_dir.exists(), "{} left behind", round_dir.display());

    // Round 2: 256 MiB against a 32 MiB hard limit: the kernel kills the agent, named.
    write_config(&p, Some(&cg), 256, &format!("{mode}round_max_mb = 32"));
    assert_eq!(peek_brake(&p, Some(&cg)), "off", "a limit without a brake");
    run_in(&p, Some(&cg), &["round"]).assert_code(1);
    let log = last_round_log(&p);
    assert!(
        log.contains(&format!("limit {max} {}", 32 * MIB)),
        "limit not set in {max}:\n{log}"
    );
    assert!(
        !log.contains("allocated"),
        "the allocation succeeded:\n{log}"
    );
    let exit = p.events_of("agent_exit")[1].clone();
    assert_eq!(exit["signal"], 9, "{exit}");
    let oom = p
        .events_of("round_oom_killed")
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no round_oom_killed:\n{}", p.events_text()));
    assert_eq!(oom["round_num"], 2, "{oom}");
    assert_eq!(
        oom["agent"],
        p.tmp_dir().join("agent/mem-agent.py").display().to_string(),
        "{oom}"
    );
    assert_eq!(oom["agent_killed"], true, "{oom}");
    assert!(oom["oom_kills"].as_u64().unwrap() >= 1, "{oom}");
    assert_eq!(oom["max_bytes"], 32 * MIB, "{oom}");
    let mem = &p.events_of("round_cgroup_memory")[1];
    assert_eq!(mem["round_num"], 2, "{mem}");
    assert!(mem["peak_bytes"].as_u64().unwrap() <= 32 * MIB, "{mem}");
    // Every round cgroup is gone (on v2 the supervisor's own leaf stays until the test's
    // cgroup is removed).
    assert_eq!(cg.rounds(), Vec::<String>::new());
    p.assert_events_whole();
}

#[test]
fn as_root_a_rounds_peak_is_recorded_and_an_allocation_past_the_limit_is_oom_killed() {
    peak_and_oom_kill_in_a_delegated_cgroup(Operator::Root);
}

#[test]
fn as_a_user_with_a_delegated_cgroup_rounds_get_cgroups_of_their_own() {
    peak_and_oom_kill_in_a_delegated_cgroup(Operator::Unprivileged);
}

#[test]
fn without_delegation_nothing_changes_and_doctor_says_how_to_get_it() {
    // The test user in the test process's own cgroup, which root owns: not delegated.
    let p = project(Operator::Unprivileged);
    let own = own_cgroup("memory").expect("memory controller");
    write_config(&p, None, 8, "round_max_mb = 32");
    let check = doctor_round_cgroup(&p, None);
    assert_eq!(check["ok"], true, "{check}");
    let reason = check["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("not delegated")
            && reason.contains(&own.dir.display().to_string())
            && reason.contains("Delegate=yes")
            && reason.contains("round_max_mb are not applied"),
        "{check}"
    );
    assert_eq!(peek_brake(&p, None), "off", "a limit without a brake");
    write_config(&p, None, 8, "round_high_mb = 16");
    assert_eq!(peek_brake(&p, None), "inert(undelegated)");
    write_config(&p, None, 8, "round_cgroup = \"off\"\nround_high_mb = 16");
    assert_eq!(peek_brake(&p, None), "inert(round_cgroup off)");
    write_config(&p, None, 8, "round_max_mb = 32");
    run_in(&p, None, &["round"]).assert_code(0);
    assert!(
        p.events_of("round_cgroup_memory").is_empty() && p.events_of("round_oom_killed").is_empty(),
        "{}",
        p.events_text()
    );
    // The agent ran in the supervisor's (the test's) memory cgroup.
    let mine = fs::read_to_string("/proc/self/cgroup").unwrap();
    let line = |text: &str| {
        text.lines()
            .find(|l| match own.layout {
                Layout::V1 => l
                    .split(':')
                    .nth(1)
                    .is_some_and(|c| c.split(',').any(|c| c == "memory")),
                Layout::V2 => l.starts_with("0::"),
            })
            .map(str::to_owned)
    };
    assert_eq!(line(&last_round_log(&p)), line(&mine));
}

#[test]
fn as_root_a_writable_cgroup_systemd_did_not_hand_over_is_left_alone() {
    // Root may write every cgroup; without systemd's delegation mark or
    // `memory.round_cgroup = "on"`, its cgroup is not its own: rounds stay in it, at no
    // cost (moving a process between cgroups waits on the kernel), and doctor says why.
    let p = project(Operator::Root);
    let cg = TestCgroup::new(None);
    write_config(&p, Some(&cg), 8, "round_max_mb = 32");
    let check = doctor_round_cgroup(&p, Some(&cg));
    let reason = check["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("not delegated")
            && reason.contains("root can write every cgroup")
            && reason.contains("trusted.delegate")
            && reason.contains("memory.round_cgroup = \"on\""),
        "{check}"
    );
    run_in(&p, Some(&cg), &["round"]).assert_code(0);
    assert!(
        p.events_of("round_cgroup_memory").is_empty(),
        "{}",
        p.events_text()
    );
    assert!(cg.rounds().is_empty());
    // "off" wins over a writable cgroup too.
    write_config(&p, Some(&cg), 8, "round_cgroup = \"off\"");
    let check = doctor_round_cgroup(&p, Some(&cg));
    assert!(
        check["reason"]
            .as_str()
            .unwrap()
            .contains("memory.round_cgroup = \"off\""),
        "{check}"
    );
}

/// Issue 28, give-ups: an agent that really goes past its round's memory limit, round after
/// round. Five rounds ended by an OOM kill in a row stop `serve` with exit 71 and
/// `mem_loop` (not a crash loop: a memory end is not the agent's failure), which the unit
/// restarts; the memory loops are remembered in the state dir, and the third within two
/// hours (the reference system's rule) stops with exit 70 and `mem_loop_persistent`, which
/// it does not. A serve whose rounds fit resets nothing it should not: it ends as asked.
#[test]
fn as_root_five_oom_killed_rounds_exit_71_and_the_third_loop_exits_70() {
    let p = project(Operator::Root);
    let cg = TestCgroup::new(None);
    let agent = p.tmp_dir().join("agent/mem-agent.py");
    p.write_config(
        &agent_runner_e2e::ConfigBuilder::new(&agent)
            .dirty_action("ignore")
            .agent_env("ALLOC_MB", "256")
            .agent_env("ROUND_CG_PARENT", &cg.dir.display().to_string())
            .extra("[monitor.host_health.memory]\nround_cgroup = \"on\"\nround_max_mb = 32\n"),
    );
    for run in 1..=3u64 {
        let out = run_in(&p, Some(&cg), &["serve"]);
        let expected = if run < 3 { 71 } else { 70 };
        out.assert_code(expected);
        let ooms = p.events_of("round_oom_killed");
        assert_eq!(ooms.len() as u64, 5 * run, "{}", p.events_text());
        assert!(ooms.iter().all(|o| o["agent_killed"] == true), "{ooms:?}");
        assert!(
            p.events_of("crash_loop").is_empty(),
            "an OOM kill counted as a crash: {}",
            p.events_text()
        );
        let loops = p.events_of("mem_loop");
        let persistent = p.events_of("mem_loop_persistent");
        if run < 3 {
            assert_eq!(loops.len() as u64, run, "{}", p.events_text());
            let last = loops.last().unwrap();
            assert_eq!(last["consecutive"], 5, "{last}");
            assert_eq!(last["threshold"], 5, "{last}");
            assert_eq!(last["exit_code"], Value::Null, "{last}");
            assert_eq!(last["rounds_completed"], 5, "{last}");
            let reason = last["reason"].as_str().unwrap();
            assert!(
                reason.starts_with(&format!("round {}: OOM kill", 5 * run)),
                "{last}"
            );
            assert!(persistent.is_empty(), "{}", p.events_text());
            assert!(out.stderr.contains("mem_loop, exit 71"), "{out}");
        } else {
            assert_eq!(loops.len(), 2, "{}", p.events_text());
            let last = &persistent[0];
            assert_eq!(last["consecutive"], 3, "{last}");
            assert_eq!(last["threshold"], 3, "{last}");
            assert_eq!(last["window_s"], 7200, "{last}");
            assert_eq!(last["rounds_completed"], 5, "{last}");
            assert!(out.stderr.contains("mem_loop_persistent, exit 70"), "{out}");
        }
    }
    let remembered = fs::read_to_string(p.state_dir().join("mem-loops.json")).unwrap();
    let doc: Value = serde_json::from_str(&remembered).unwrap();
    assert_eq!(doc["unix_s"].as_array().unwrap().len(), 3, "{remembered}");
    // Rounds that fit end as asked (max_rounds), memory loops or not before.
    p.write_config(
        &agent_runner_e2e::ConfigBuilder::new(&agent)
            .dirty_action("ignore")
            .agent_env("ALLOC_MB", "8")
            .agent_env("ROUND_CG_PARENT", &cg.dir.display().to_string())
            .extra("[monitor.host_health.memory]\nround_cgroup = \"on\"\nround_max_mb = 32\n"),
    );
    run_in(&p, Some(&cg), &["serve", "--max-rounds", "2"]).assert_code(0);
    assert_eq!(cg.rounds(), Vec::<String>::new());
    p.assert_events_whole();
}

/// An agent that watches the brake file of the supervisor's cgroup (`$CG/$BRAKE_FILE`):
/// once it changes, it calms the pressure file (`$PSI`) and waits for the old value to
/// come back. With `$RAISE` it first writes that to the pressure file (critical pressure
/// would defer the round before it started). A SIGTERM (the nudge) makes it print `nudged`
/// and exit 0.
const BRAKE_AGENT: &str = r#"#!/usr/bin/env python3
import os, signal, sys, time
def nudged(*_):
    print("nudged", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, nudged)
if os.environ.get("RAISE"):
    open(os.environ["PSI"], "w").write(os.environ["RAISE"])
f = os.path.join(os.environ["CG"], os.environ["BRAKE_FILE"])
before = open(f).read().strip()
print("before", before, flush=True)
deadline = time.time() + 20
while time.time() < deadline:
    now = open(f).read().strip()
    if now != before:
        print("braked", now, flush=True)
        break
    time.sleep(0.1)
if os.environ.get("CALM") == "1":
    open(os.environ["PSI"], "w").write(os.environ["CALM_PSI"])
while time.time() < deadline:
    if open(f).read().strip() == before:
        print("released", flush=True)
        break
    time.sleep(0.1)
"#;

const CALM_PSI: &str = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";

/// Issue 28, the memory brake and the nudge on a real cgroup, as root with a delegated
/// cgroup (docs/operations.md "The memory brake"). The pressure stall information is the
/// one seam (`AGENT_RUNNER_TEST_PRESSURE_FILE`: PSI cannot be raised on demand); the
/// brake is really written to the supervisor's cgroup and the agent really reads it.
/// Round 1: warning pressure (PSI some avg10 50) for two samples engages the brake at the
/// cgroup's current use; the agent sees it, calms the pressure, and two healthy samples
/// restore the value before (`recovered`). Round 2: critical pressure (full avg10 80) and
/// `in_round_nudge`: the first critical sample sends the agent SIGTERM; it finishes by
/// itself (exit 0) long before the floor's five samples, and the brake engaged in that
/// sample is restored at the round's end (`round_end`).
#[test]
fn as_root_the_brake_engages_under_pressure_is_released_and_the_nudge_comes_first() {
    let p = Project::new_as(Operator::Root);
    let agent = p.script("agent/brake-agent.py", BRAKE_AGENT);
    let cg = TestCgroup::new(None);
    let brake_file = match cg.layout {
        Layout::V1 => "memory.soft_limit_in_bytes",
        Layout::V2 => "memory.high",
    };
    let psi = p.tmp_dir().join("psi");
    let config = |calm: bool, samples: u32, extra_pressure: &str, raise: &str| {
        agent_runner_e2e::ConfigBuilder::new(&agent)
            .agent_env("RAISE", raise)
            .dirty_action("ignore")
            .agent_env("CG", &cg.dir.display().to_string())
            .agent_env("BRAKE_FILE", brake_file)
            .agent_env("PSI", &psi.display().to_string())
            .agent_env("CALM", if calm { "1" } else { "0" })
            .agent_env("CALM_PSI", CALM_PSI)
            .extra(&format!(
                "[monitor.host_health.memory]\nround_cgroup = \"on\"\n\
                 [monitor.host_health.pressure]\nsample_interval_s = 1\n{extra_pressure}\
                 [monitor.host_health.brake]\nmemory_high = true\nwarning_consecutive_samples = {samples}\n"
            ))
    };
    let round = || {
        let mut cmd = p.command(&["round"]);
        cmd.env("AGENT_RUNNER_TEST_PRESSURE_FILE", &psi);
        cg.enter(&mut cmd);
        p.run_with(cmd)
    };
    let before = fs::read_to_string(cg.dir.join(brake_file)).unwrap();

    // Round 1: engaged under warning pressure, released when it clears.
    p.write_config(&config(true, 2, "", ""));
    assert_eq!(peek_brake(&p, Some(&cg)), "armed");
    fs::write(
        &psi,
        "some avg10=50.00 avg60=10.00 avg300=1.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
    )
    .unwrap();
    round().assert_code(0);
    let log = last_round_log(&p);
    let engaged = p
        .events_of("memory_high_engaged")
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no memory_high_engaged:\n{}\n{log}", p.events_text()));
    assert_eq!(engaged["round_num"], 1, "{engaged}");
    assert_eq!(engaged["signal"], "psi", "{engaged}");
    assert_eq!(engaged["previous"], before.trim(), "{engaged}");
    assert_eq!(
        engaged["file"],
        cg.dir.join(brake_file).display().to_string(),
        "{engaged}"
    );
    let written = engaged["written"].as_u64().unwrap();
    let current = engaged["memory_current"].as_u64().unwrap();
    assert!(current > 0, "{engaged}");
    // The current use (step 0), never below 64 MiB.
    assert_eq!(written, (current / 100 * 100).max(64 * MIB), "{engaged}");
    assert!(
        log.contains(&format!("braked {written}")) && log.contains("released"),
        "the agent saw the brake set and restored:\n{log}"
    );
    let released = &p.events_of("memory_high_released")[0];
    assert_eq!(released["reason"], "recovered", "{released}");
    assert_eq!(fs::read_to_string(cg.dir.join(brake_file)).unwrap(), before);
    assert!(
        p.events_of("round_mem_terminated").is_empty(),
        "{}",
        p.events_text()
    );

    // Round 2: critical pressure; the nudge at the first critical sample ends the round
    // cooperatively, long before the floor would.
    // (The agent raises it: a critical reading before the round would defer it.)
    p.write_config(&config(
        false,
        1,
        "critical_consecutive_samples = 5\nin_round_nudge = true\n",
        "some avg10=90.00 avg60=50.00 avg300=10.00 total=1\nfull avg10=80.00 avg60=40.00 avg300=8.00 total=1\n",
    ));
    fs::write(&psi, CALM_PSI).unwrap();
    round().assert_code(0);
    let log = last_round_log(&p);
    assert!(log.contains("nudged"), "{log}");
    let nudges = p.events_of("round_mem_terminated");
    assert_eq!(nudges.len(), 1, "{}", p.events_text());
    assert_eq!(nudges[0]["tier"], "nudge", "{}", nudges[0]);
    assert_eq!(nudges[0]["consecutive"], 1, "{}", nudges[0]);
    let exit = p.events_of("agent_exit")[1].clone();
    assert_eq!(exit["exit_code"], 0, "{exit}");
    assert_eq!(exit["exit_cause"], "exited", "{exit}");
    assert!(
        exit["duration_s"].as_f64().unwrap() < 4.0,
        "before a second sample: {exit}"
    );
    let released = p.events_of("memory_high_released");
    assert_eq!(released.len(), 2, "{}", p.events_text());
    assert_eq!(released[1]["reason"], "round_end", "{}", released[1]);
    assert_eq!(released[1]["round_num"], 2, "{}", released[1]);
    assert_eq!(fs::read_to_string(cg.dir.join(brake_file)).unwrap(), before);
    assert!(p.events_of("memory_high_write_failed").is_empty());
    p.assert_events_whole();
}

/// A goal check that allocates `$CHECK_MB` MiB, then prints the cgroup it ran in.
const CHECK: &str = r#"import os
block = b"x" * (int(os.environ["CHECK_MB"]) << 20)
print(open("/proc/self/cgroup").read().strip().splitlines()[-1])
"#;

/// Issue 36, item 3: goal checks run in a cgroup with the round's memory bounds, as the
/// agent does: a check allocating 256 MiB past `round_max_mb = 32` is OOM-killed and told
/// (`goal_check.oom_killed`); the control, the same check at 8 MiB, is satisfied and ran
/// in a round cgroup below the delegated one.
fn goal_checks_get_the_rounds_memory_bounds(operator: Operator) {
    let p = project(operator);
    let cg = TestCgroup::new(operator.user());
    let check = p.script("check/alloc.py", CHECK);
    let agent = p.tmp_dir().join("agent/mem-agent.py");
    let mode = match operator {
        Operator::Root => "round_cgroup = \"on\"\n",
        Operator::Unprivileged => "",
    };
    for (mb, satisfied) in [(256, false), (8, true)] {
        let config = agent_runner_e2e::ConfigBuilder::new(&agent)
            .dirty_action("ignore")
            .agent_env("ALLOC_MB", "1")
            .agent_env("ROUND_CG_PARENT", "")
            .agent_env("CHECK_MB", &mb.to_string())
            .extra(&format!(
                "[monitor.host_health.memory]\n{mode}round_max_mb = 32\n"
            ))
            .render()
            .replace(
                "file = \"./prompts/main.md\"",
                "files = [\"./prompts/main.md\", \"./logs/lessons.md\"]",
            );
        p.write_config_text(&format!(
            "{config}\n[goal]\nledger = \"./logs/lessons.md\"\n\n[[goal.checks]]\n\
             name = \"alloc\"\ncmd = [\"python3\", \"{}\"]\ntimeout_s = 30\n",
            check.display()
        ));
        run_in(&p, Some(&cg), &["round"]).assert_code(0);
        let ran = p.events_of("goal_check").last().cloned().unwrap();
        assert_eq!(ran["satisfied"], satisfied, "{mb} MiB: {ran}");
        assert_eq!(
            ran.get("oom_killed").is_some(),
            !satisfied,
            "{mb} MiB: {ran}"
        );
    }
    let value = p.events_of("goal_check").last().cloned().unwrap();
    assert!(value.get("oom_killed").is_none(), "{value}");
    assert_eq!(cg.rounds(), Vec::<String>::new());
}

#[test]
fn as_root_goal_checks_get_the_rounds_memory_bounds() {
    goal_checks_get_the_rounds_memory_bounds(Operator::Root);
}

#[test]
fn as_a_user_goal_checks_get_the_rounds_memory_bounds() {
    goal_checks_get_the_rounds_memory_bounds(Operator::Unprivileged);
}
