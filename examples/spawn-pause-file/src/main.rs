//! `spawn-pause-file`: a spawn hook, `pause_file`, that defers every agent spawn while a
//! pause file exists (see README.md for its config keys).

use agent_runner_sdk::protocol::limits::MAX_DEFER_S;
use agent_runner_sdk::{
    defer, proceed, BeforeSpawnParams, ConfigTable, HookError, Hooks, Host, SpawnDecision,
    SpawnHook,
};
use std::path::Path;
use std::process::ExitCode;

/// The `pause_file` hook, configured at `initialize`.
struct PauseFile {
    /// The pause file; a relative path is resolved against `ctx.work_dir` at each call.
    file: String,
    /// Seconds to defer while the file exists (0..=86400).
    defer_s: u64,
    /// The `reason` sent with a defer.
    reason: String,
}

impl SpawnHook for PauseFile {
    fn before_spawn(&self, params: &BeforeSpawnParams) -> Result<SpawnDecision, HookError> {
        let path = Path::new(&params.ctx.work_dir).join(&self.file);
        match path.try_exists() {
            Ok(true) => Ok(defer(self.defer_s, self.reason.clone())),
            Ok(false) => Ok(proceed()),
            Err(err) => Err(HookError::new(format!(
                "cannot check {}: {err}",
                path.display()
            ))),
        }
    }
}

fn main() -> ExitCode {
    Host::new("spawn-pause-file", env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            let config = ConfigTable::new(&init.config);
            config.expect_only(&["file", "defer_s", "reason", "hook"])?;
            let hook = PauseFile {
                file: config.string_or("file", ".agent-runner-pause")?,
                defer_s: config.u64_or("defer_s", 60, MAX_DEFER_S)?,
                reason: config.string_or("reason", "paused: pause file present")?,
            };
            if hook.file.is_empty() {
                return Err(HookError::new("config: `file` must not be empty"));
            }
            // Several copies of this host can run side by side under distinct hook names
            // (hook names are unique across hosts); the supervisor checks the name.
            let name = config.string_or("hook", "pause_file")?;
            Ok(Hooks::new().spawn_hook(name, hook))
        })
        .run()
}
