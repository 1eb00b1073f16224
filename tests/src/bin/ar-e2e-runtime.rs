//! The runtime matrix's Rust row (tests/tests/suite/functional/runtimes.rs), written with the SDK: spawn hook
//! `gate` (defer 1 s, reason `rust`, the first time it is asked, then proceed) and dirty handler `wip` (priority 10: commit everything,
//! "wip rust: round N"), the same hooks as the script hosts in `tests/runtimes/`.

use agent_runner_sdk::defer;
use agent_runner_sdk::{
    proceed, BeforeSpawnParams, DirtyAction, DirtyHandler, HandleDirtyParams, HookError, Hooks,
    Host, SpawnDecision, SpawnHook,
};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

struct Gate {
    asked: AtomicBool,
}

impl SpawnHook for Gate {
    fn before_spawn(&self, _params: &BeforeSpawnParams) -> Result<SpawnDecision, HookError> {
        if self.asked.swap(true, Ordering::SeqCst) {
            Ok(proceed())
        } else {
            Ok(defer(1, "rust"))
        }
    }
}

struct Wip;

impl DirtyHandler for Wip {
    fn handle_dirty(&self, params: &HandleDirtyParams) -> Result<Option<DirtyAction>, HookError> {
        Ok(Some(DirtyAction::Commit {
            message: format!("wip rust: round {}", params.ctx.round_num),
            paths: None,
        }))
    }
}

fn main() -> ExitCode {
    Host::new("runtime-rust", env!("CARGO_PKG_VERSION"))
        .setup(|_| {
            Ok(Hooks::new()
                .spawn_hook(
                    "gate",
                    Gate {
                        asked: AtomicBool::new(false),
                    },
                )
                .dirty_handler("wip", 10, Wip))
        })
        .run()
}
