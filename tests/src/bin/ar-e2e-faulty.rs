//! `ar-e2e-faulty`: a spawn-hook host that does not use the SDK and fails on purpose, for
//! the fault-injection suite (`tests/tests/suite/functional/faults.rs`). Its config table:
//!
//! * `fault`: what a failing `before_spawn` call does —
//!   `"huge_line"` writes a 1 MiB line on stdout; `"drip"` writes a valid answer one byte
//!   per second; `"close_stdout"` closes stdout and keeps running; `"zombies"` forks three
//!   children that exit at once, never reaps them, then exits with status 1;
//!   `"ignore_sigterm"` hangs in the call (SIGTERM is ignored from the start and stdin EOF
//!   too); `"crash"` exits with status 1; `"none"` (default) answers proceed.
//! * `fail_every` (default 1): only calls whose number (counted across every launch of the
//!   host, in its state dir) is `1 (mod fail_every)` fail; the others answer proceed. With
//!   2 the host never fails twice in a row, so the supervisor's backoff never delays it.
//! * `exit_in_initialize_from_launch` (default never): from this launch on (1 = the first)
//!   the host exits with status 3 on reading `initialize`, without answering.
//! * `hook`: the declared hook name (default `faulty`).
//!
//! Every launch appends a launch id to `<state_dir>/pids` before answering `initialize`, so
//! a test can tell launches apart: its pid and start time in nanoseconds (the pid alone is
//! always 1, each host being PID 1 of its own PID namespace). Test-only.

use agent_runner_e2e::raw_reply;
use serde_json::{json, Value};
use std::fs::OpenOptions;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Appends `line` to `path`; returns how many lines the file held before.
fn append_line(path: &Path, line: &str) -> usize {
    let before = std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("ar-e2e-faulty: cannot open {}: {e}", path.display()));
    writeln!(file, "{line}").expect("ar-e2e-faulty: write state file");
    before
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Does what a failing call of kind `fault` does; returns only for `"none"`.
fn fail(fault: &str, answer: &str, out: &mut std::io::Stdout) {
    match fault {
        "huge_line" => {
            let line = vec![b'x'; 1 << 20];
            let _ = out.write_all(&line);
            let _ = out.write_all(b"\n");
            let _ = out.flush();
            sleep_forever();
        }
        "drip" => {
            for byte in answer.bytes().chain(std::iter::once(b'\n')) {
                let _ = out.write_all(&[byte]);
                let _ = out.flush();
                std::thread::sleep(Duration::from_secs(1));
            }
            sleep_forever();
        }
        "close_stdout" => {
            // SAFETY: closes our own descriptor 1; nothing uses `out` afterwards.
            unsafe { libc::close(1) };
            sleep_forever();
        }
        "zombies" => {
            for _ in 0..3 {
                // SAFETY: the child only calls the async-signal-safe _exit.
                if unsafe { libc::fork() } == 0 {
                    // SAFETY: ends the forked child at once.
                    unsafe { libc::_exit(0) };
                }
            }
            std::thread::sleep(Duration::from_millis(100));
            std::process::exit(1);
        }
        "ignore_sigterm" => sleep_forever(),
        "crash" => std::process::exit(1),
        _ => {}
    }
}

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    let mut fault = "none".to_owned();
    let mut fail_every = 1usize;
    let mut calls_file = PathBuf::new();
    let mut ignore_eof = false;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            eprintln!("ar-e2e-faulty: not JSON: {line}");
            continue;
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let result = match request["method"].as_str().unwrap_or("") {
            "initialize" => {
                let params = &request["params"];
                let config = &params["config"];
                let state_dir = PathBuf::from(params["state_dir"].as_str().unwrap_or("."));
                let started = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let id = format!("{}-{started}", std::process::id());
                let launch = append_line(&state_dir.join("pids"), &id) + 1;
                calls_file = state_dir.join("calls");
                fault = config["fault"].as_str().unwrap_or("none").to_owned();
                fail_every = config["fail_every"].as_u64().unwrap_or(1).max(1) as usize;
                if fault == "ignore_sigterm" {
                    ignore_eof = true;
                    // SAFETY: installs SIG_IGN for SIGTERM; no handler code runs.
                    unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
                }
                if config["exit_in_initialize_from_launch"]
                    .as_u64()
                    .is_some_and(|from| launch as u64 >= from)
                {
                    std::process::exit(3);
                }
                let hook = config["hook"].as_str().unwrap_or("faulty");
                json!({"protocol_version": 1, "name": "ar-e2e-faulty", "version": "0",
                       "hooks": [{"family": "spawn_hook", "name": hook}]})
            }
            "spawn_hook/before_spawn" => {
                let proceed = json!({"action": "proceed", "defer_s": 0, "reason": ""});
                let call = append_line(&calls_file, "call") + 1;
                if call % fail_every == 1 % fail_every {
                    let answer = json!({"jsonrpc": "2.0", "id": id, "result": proceed});
                    fail(&fault, &answer.to_string(), &mut out);
                }
                proceed
            }
            "shutdown" => Value::Null,
            other => {
                let _ = raw_reply::method_not_found(&mut out, &id, other);
                continue;
            }
        };
        if raw_reply::send(&mut out, &id, Ok(result)).is_err() {
            break;
        }
    }
    if ignore_eof {
        eprintln!("ar-e2e-faulty: stdin closed; ignoring it");
        sleep_forever();
    }
}
