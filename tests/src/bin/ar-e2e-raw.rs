//! `ar-e2e-raw`: a spawn-hook host that does not use the SDK, so it can break the protocol
//! in ways the SDK prevents. It reads one JSON-RPC request per line from stdin and answers
//! on its real stdout:
//!
//! * `initialize`: a valid result declaring one spawn hook (config `hook`, default `raw`);
//! * `spawn_hook/before_spawn`: with config `before_spawn = "garbage"` it prints `hello`
//!   (not JSON) on stdout; with `"proceed"` (default) it answers proceed;
//! * `shutdown`: `null`.
//!
//! On stdin end-of-file it exits, unless config `on_eof = "linger"`: then it sleeps forever
//! (so only the supervisor's kill, or `PR_SET_PDEATHSIG`, ends it). Test-only.

use agent_runner_e2e::raw_reply;
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::time::Duration;

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    let mut before_spawn = "proceed".to_owned();
    let mut linger = false;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            eprintln!("ar-e2e-raw: not JSON: {line}");
            continue;
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request["method"].as_str().unwrap_or("");
        let result = match method {
            "initialize" => {
                let config = &request["params"]["config"];
                let hook = config["hook"].as_str().unwrap_or("raw").to_owned();
                if let Some(mode) = config["before_spawn"].as_str() {
                    before_spawn = mode.to_owned();
                }
                linger = config["on_eof"].as_str() == Some("linger");
                json!({"protocol_version": 1, "name": "ar-e2e-raw", "version": "0",
                       "hooks": [{"family": "spawn_hook", "name": hook}]})
            }
            "spawn_hook/before_spawn" if before_spawn == "garbage" => {
                let _ = out.write_all(b"hello\n");
                let _ = out.flush();
                continue;
            }
            "spawn_hook/before_spawn" => json!({"action": "proceed", "defer_s": 0, "reason": ""}),
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
    if linger {
        eprintln!("ar-e2e-raw: stdin closed; lingering");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}
