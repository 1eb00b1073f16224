//! Spawn hooks: asked before every agent spawn, by `serve` and `round` alike
//! (`docs/design-notes.md`, "One round", step 3; the reference system's collapse rules in
//! `docs/reference-system.md`, "Spawn hooks").
//!
//! A non-proceed verdict from a hook not listed in `[plugins] spawn_override_allow` is
//! downgraded to proceed (`plugin_spawn_override_ignored`). Collapse: any skip wins (the
//! first in call order); else the largest `defer_s`; else proceed. A failed call counts as
//! proceed (`docs/protocol.md` §2).

use agent_runner_protocol::redact::redact_and_cap;
use agent_runner_protocol::{
    decode_spawn_decision, BeforeSpawnParams, Context, Family, HookName, SpawnAction, SpawnView,
};

use crate::hosts::HostManager;
use crate::record::events::{Event, EventLog};
use crate::record::stop::{StopLevel, StopWatch};

/// The collapsed verdict of all spawn hooks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Start the agent.
    Proceed,
    /// Wait `defer_s` seconds and ask again; the round number does not advance.
    Defer {
        /// The hook whose defer won.
        hook: HookName,
        /// Seconds to wait (0..=86400).
        defer_s: u64,
        /// Its reason (redacted, at most 256 characters).
        reason: String,
    },
    /// Do not run now; idle briefly and ask again.
    Skip {
        /// The first hook that skipped.
        hook: HookName,
        /// Its reason (redacted, capped).
        reason: String,
    },
}

/// Asks every spawn hook about the spawn described by `ctx` and `spawn`, records each
/// honoured non-proceed answer (`plugin_spawn_decision`) and each ignored one
/// (`plugin_spawn_override_ignored`), and returns the collapsed verdict. A graceful stop
/// abandons a call in flight (the host is killed) and ends the consultation: the caller
/// checks the stop before spawning.
pub async fn consult(
    hosts: &mut HostManager,
    allow: &[HookName],
    events: &EventLog,
    ctx: &Context,
    spawn: &SpawnView,
    stop: &mut StopWatch,
) -> Verdict {
    let mut verdict = Verdict::Proceed;
    for hook in hosts.hooks(Family::SpawnHook) {
        let params = BeforeSpawnParams {
            hook: hook.name.clone(),
            ctx: ctx.clone(),
            spawn: spawn.clone(),
        };
        let params = serde_json::to_value(params).expect("params serialize");
        let value = match hosts
            .call_unless_stopped(&hook, params, stop, StopLevel::Graceful)
            .await
        {
            None => break,
            Some(Ok(Some(value))) => value,
            Some(Ok(None) | Err(_)) => continue,
        };
        let decision = match decode_spawn_decision(value) {
            Ok(decision) => decision,
            Err(err) => {
                hosts.invalid_result(&hook, format!("before_spawn result {err}"));
                continue;
            }
        };
        if decision.action == SpawnAction::Proceed {
            continue;
        }
        if !allow.contains(&hook.name) {
            events.emit(Event::PluginSpawnOverrideIgnored {
                hook: hook.name.to_string(),
                action: decision.action.as_str().to_owned(),
                round_num: ctx.round_num,
                reason: "hook not listed in [plugins] spawn_override_allow".to_owned(),
            });
            continue;
        }
        let reason = redact_and_cap(&decision.reason);
        let defer_s = if decision.action == SpawnAction::Defer {
            decision.defer_s
        } else {
            0
        };
        events.emit(Event::PluginSpawnDecision {
            hook: hook.name.to_string(),
            action: decision.action.as_str().to_owned(),
            defer_s,
            reason: reason.clone(),
            round_num: ctx.round_num,
        });
        verdict = match (verdict, decision.action) {
            (skip @ Verdict::Skip { .. }, _) => skip,
            (_, SpawnAction::Skip) => Verdict::Skip {
                hook: hook.name.clone(),
                reason,
            },
            (
                Verdict::Defer {
                    hook: h,
                    defer_s: d,
                    reason: r,
                },
                _,
            ) if d >= defer_s => Verdict::Defer {
                hook: h,
                defer_s: d,
                reason: r,
            },
            _ => Verdict::Defer {
                hook: hook.name.clone(),
                defer_s,
                reason,
            },
        };
    }
    verdict
}
