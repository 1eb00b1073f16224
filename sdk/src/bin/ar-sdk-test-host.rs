//! A host built on the SDK for the SDK's own integration tests (`tests/host_process.rs`).
//! Not a product binary.
//!
//! * spawn hook `gate`: prints a stray line with `println!`, then by `ctx.round_num`:
//!   13 → error "unlucky round", 14 → panics, 15 → an out-of-range `defer_s`,
//!   even → defer 30 s, odd → proceed.
//! * dirty handler `park` (priority 5): no files → pass, `secret.txt` among them → ignore,
//!   else stash.
//! * post-round hook `judge`: exit code 0 → `None`; `"429"` in the log tail → back off
//!   60 s (rate limit); exit code 2 → an invalid verdict (back off without a wait); else
//!   stop (auth).
//! * config `{"fail_setup": true}` makes `initialize` fail; `{"extra_hook": "<name>"}`
//!   declares one more spawn hook with that name (to test name checks); logs the confinement
//!   self-check to stderr at setup.

use agent_runner_sdk::{
    back_off, confinement_self_check, defer, proceed, stop, AfterRoundParams, BeforeSpawnParams,
    ConfigTable, DirtyAction, ErrorKind, HandleDirtyParams, HookError, Hooks, Host,
    PostRoundVerdict,
};
use std::process::ExitCode;

fn gate(params: &BeforeSpawnParams) -> Result<agent_runner_sdk::SpawnDecision, HookError> {
    println!("stray println from gate");
    match params.ctx.round_num {
        13 => Err(HookError::new("unlucky round")
            .with_data(agent_runner_sdk::serde_json::json!({"round": 13}))),
        14 => panic!("gate exploded"),
        15 => Ok(defer(100_000, "too long")),
        n if n % 2 == 0 => Ok(defer(30, format!("even round {n}"))),
        _ => Ok(proceed()),
    }
}

fn park(params: &HandleDirtyParams) -> Result<Option<DirtyAction>, HookError> {
    if params.dirty_files.is_empty() {
        Ok(None)
    } else if params.dirty_files.iter().any(|f| f == "secret.txt") {
        Ok(Some(DirtyAction::Ignore))
    } else {
        Ok(Some(DirtyAction::Stash {
            message: Some(format!("parked {} files", params.dirty_files.len())),
        }))
    }
}

fn judge(params: &AfterRoundParams) -> Result<Option<PostRoundVerdict>, HookError> {
    match params.outcome.exit_code {
        Some(0) => Ok(None),
        _ if params.log_tail.contains("429") => {
            Ok(Some(back_off(ErrorKind::RateLimit, 60, "HTTP 429")))
        }
        Some(2) => Ok(Some(PostRoundVerdict {
            back_off_s: None,
            ..back_off(ErrorKind::Network, 1, "no wait given")
        })),
        _ => Ok(Some(stop(ErrorKind::Auth, "not logged in"))),
    }
}

fn main() -> ExitCode {
    Host::new("ar-sdk-test-host", "9.9.9")
        .setup(|init| {
            eprintln!("ar-sdk-test-host: {}", confinement_self_check());
            let config = ConfigTable::new(&init.config);
            config.expect_only(&["fail_setup", "extra_hook"])?;
            if config.bool_or("fail_setup", false)? {
                return Err(HookError::new("setup refused: fail_setup is set"));
            }
            let hooks = Hooks::new()
                .spawn_hook("gate", gate)
                .dirty_handler("park", 5, park)
                .post_round("judge", judge);
            match config.get("extra_hook").and_then(|v| v.as_str()) {
                Some(name) => Ok(hooks.spawn_hook(name, |_: &BeforeSpawnParams| Ok(proceed()))),
                None => Ok(hooks),
            }
        })
        .run()
}
