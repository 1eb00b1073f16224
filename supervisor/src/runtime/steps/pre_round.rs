//! Before a round's context is written (docs/protocol.md §5.3, §5.4): every pre-round hook
//! (`pre_round/before_round`) and every context enricher (`context_enricher/enrich`) is
//! asked in one concurrent batch, since no answer depends on another. Order where it
//! matters: a skip wins over the enrichments (they are dropped); enrichments are merged in
//! hook-name order, each under its hook's name.
//!
//! A `skip` is honoured only for hooks listed in `[plugins] spawn_override_allow` (the
//! same gate as spawn overrides); otherwise it is recorded as
//! `plugin_round_override_ignored` and the round runs. A failed call counts as `proceed`
//! (pre-round) or adds nothing (enricher).
//!
//! `[runtime] disable_pre_round_hooks` (or the round's phase's) leaves the pre-round hooks
//! out of the batch; enrichers are still asked (docs/configuration.md, `[runtime]`).

use agent_runner_protocol::redact::redact_and_cap;
use agent_runner_protocol::{
    decode_enrichment, decode_round_decision, BeforeRoundParams, Context, EnrichParams, Family,
    HookName, RoundAction,
};
use serde_json::{Map, Value};

use crate::hosts::{HookRef, HostManager};
use crate::record::events::{Event, EventLog};
use crate::record::stop::StopWatch;
use crate::runtime::agent::round_context::RoundContext;

/// What the pre-round hooks and enrichers came to.
#[derive(Debug, Default)]
pub struct PreRound {
    /// The first honoured skip, in hook order: `(hook, reason)`.
    pub skip: Option<(HookName, String)>,
    /// Each enricher's object, in hook-name order.
    pub enrichments: Vec<(HookName, Map<String, Value>)>,
    /// The host serving each enricher of `enrichments`, by hook name.
    pub enricher_hosts: std::collections::BTreeMap<String, String>,
}

/// Asks every context enricher, and every pre-round hook unless `pre_round_disabled`,
/// about the round described by `ctx`. `None` when a graceful stop arrived during the
/// calls (hosts in flight are killed).
pub async fn consult(
    hosts: &mut HostManager,
    allow: &[HookName],
    events: &EventLog,
    ctx: &Context,
    pre_round_disabled: bool,
    stop: &mut StopWatch,
) -> Option<PreRound> {
    let mut calls: Vec<(HookRef, Value)> = Vec::new();
    let pre_round = if pre_round_disabled {
        Vec::new()
    } else {
        hosts.hooks(Family::PreRound)
    };
    for hook in pre_round {
        let params = BeforeRoundParams {
            hook: hook.name.clone(),
            ctx: ctx.clone(),
        };
        calls.push((
            hook,
            serde_json::to_value(params).expect("params serialize"),
        ));
    }
    for hook in hosts.hooks(Family::ContextEnricher) {
        let params = EnrichParams {
            hook: hook.name.clone(),
            ctx: ctx.clone(),
        };
        calls.push((
            hook,
            serde_json::to_value(params).expect("params serialize"),
        ));
    }
    if calls.is_empty() {
        return Some(PreRound::default());
    }
    let hooks: Vec<HookRef> = calls.iter().map(|(h, _)| h.clone()).collect();
    let answers = hosts.call_all(calls, stop).await?;
    let mut out = PreRound::default();
    for (hook, answer) in hooks.iter().zip(answers) {
        let Ok(Some(value)) = answer else { continue };
        match hook.family {
            Family::PreRound => {
                let decision = match decode_round_decision(value) {
                    Ok(decision) => decision,
                    Err(err) => {
                        hosts.invalid_result(hook, format!("before_round result {err}"));
                        continue;
                    }
                };
                if !hosts.record_host_events(hook, decision.events)
                    || decision.action == RoundAction::Proceed
                {
                    continue;
                }
                let reason = redact_and_cap(&decision.reason);
                if !allow.contains(&hook.name) {
                    events.emit(Event::PluginRoundOverrideIgnored {
                        hook: hook.name.to_string(),
                        action: decision.action.as_str().to_owned(),
                        reason,
                        round_num: ctx.round_num,
                    });
                    continue;
                }
                events.emit(Event::RoundSkipped {
                    hook: hook.name.to_string(),
                    reason: reason.clone(),
                    round_num: ctx.round_num,
                });
                out.skip.get_or_insert((hook.name.clone(), reason));
            }
            Family::ContextEnricher => match decode_enrichment(value) {
                Ok(enrichment) => {
                    if hosts.record_host_events(hook, enrichment.events) {
                        out.enricher_hosts
                            .insert(hook.name.to_string(), hosts.host_name(hook).to_owned());
                        out.enrichments
                            .push((hook.name.clone(), enrichment.context));
                    }
                }
                Err(err) => hosts.invalid_result(hook, format!("enrich result {err}")),
            },
            _ => unreachable!("only pre-round hooks and enrichers are in the batch"),
        }
    }
    out.enrichments.sort_by(|a, b| a.0.cmp(&b.0));
    Some(out)
}

/// Puts each enrichment into the round context `ctx` under its hook's name (enricher
/// names never equal the context's own keys: the host is refused at registration).
pub(crate) fn merge(ctx: &mut RoundContext, pre: PreRound) {
    for (hook, object) in pre.enrichments {
        ctx.enrichments.insert(hook.to_string(), object);
    }
    ctx.enricher_hosts = pre.enricher_hosts;
}
