//! The built-in detector host: what the supervisor's executable does when started with
//! [`HOST_ARG`] (by [`crate::hosts::builtin`], confined). It serves the protocol through the
//! Rust SDK like any third-party host, declaring one `post_round` hook per enabled
//! detector, and one `output_watch` per enabled detector whose CLI reports each model
//! call in its stream ([`super::watch`]).
//!
//! Its config table (`initialize.config`, written by the supervisor):
//! `{"detectors": ["claude_error_detector", …], "auth_fail_patterns": ["regex", …],
//! "local_time_zone": "Europe/Berlin"}` (the zone of clock times printed without one).

use agent_runner_sdk::{
    AfterRoundParams, ConfigTable, HookError, Hooks, Host, Observation, ObserveParams, OutputWatch,
    PostRound, PostRoundVerdict,
};
use jiff::tz::TimeZone;
use jiff::Timestamp;
use regex::Regex;
use std::process::ExitCode;
use std::sync::Arc;

use super::{detect, Dialect, Round, DIALECTS};

/// The hidden first argument that starts the executable as the detector host.
pub(crate) const HOST_ARG: &str = "__builtin-detector-host";

/// The host's name: in events, `[plugins] disable` (turning every detector off) and
/// `initialize`; reserved (no `[plugins.hosts]` table may use it).
pub(crate) const HOST_NAME: &str = "builtin-detectors";

/// Whether `[plugins] disable` may name `name` for the built-in detectors: [`HOST_NAME`]
/// (all of them) or one detector's name (docs/configuration.md, `[plugins]`).
pub(crate) fn is_disable_name(name: &str) -> bool {
    name == HOST_NAME || crate::detectors::names().any(|n| n == name)
}

struct Detector {
    dialect: Dialect,
    auth_patterns: Arc<Vec<Regex>>,
    local: TimeZone,
}

impl PostRound for Detector {
    fn after_round(
        &self,
        params: &AfterRoundParams,
    ) -> Result<Option<PostRoundVerdict>, HookError> {
        // The supervisor asks a detector only about rounds of its own CLI, which it knows
        // better than `ctx.agent_binary` does (`npx`, a wrapper: docs/agent-clis.md, "Which
        // CLI a command is").
        Ok(detect(
            &self.dialect,
            &Round {
                outcome: &params.outcome,
                agent_binary: self.dialect.binary,
                tail: &params.log_tail,
                now: Timestamp::now(),
                local: &self.local,
                auth_patterns: &self.auth_patterns,
            },
        ))
    }
}

impl OutputWatch for super::watch::CallWatch {
    fn observe(&self, params: &ObserveParams) -> Result<Option<Observation>, HookError> {
        Ok(super::watch::CallWatch::observe(self, params))
    }
}

/// Serves stdin/stdout as the detector host until end-of-file (see [`agent_runner_sdk::run`]).
pub(crate) fn run() -> ExitCode {
    Host::new(HOST_NAME, env!("CARGO_PKG_VERSION"))
        .setup(|init| {
            let config = ConfigTable::new(&init.config);
            config.expect_only(&["detectors", "auth_fail_patterns", "local_time_zone"])?;
            let names = config.string_list_or("detectors", &[])?;
            let patterns = config
                .string_list_or("auth_fail_patterns", &[])?
                .iter()
                .map(|p| {
                    Regex::new(p).map_err(|e| {
                        HookError::new(format!("config: auth_fail_patterns: {p:?}: {e}"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let patterns = Arc::new(patterns);
            // The supervisor's zone, by name: the confined host may not read /etc/localtime.
            let zone = config.string_or("local_time_zone", "UTC")?;
            let local = TimeZone::get(&zone).unwrap_or(TimeZone::UTC);
            let mut hooks = Hooks::new();
            for name in names {
                let dialect = DIALECTS
                    .iter()
                    .find(|d| d.detector == name)
                    .ok_or_else(|| {
                        HookError::new(format!("config: detectors: unknown detector {name:?}"))
                    })?;
                hooks = hooks.post_round(
                    name,
                    Detector {
                        dialect: *dialect,
                        auth_patterns: patterns.clone(),
                        local: local.clone(),
                    },
                );
                if let Some(watch) = super::watch::CallWatch::of(*dialect) {
                    hooks = hooks.output_watch(super::watch::watch_name(dialect), watch);
                }
            }
            Ok(hooks)
        })
        .run()
}
