//! Post-round hooks: asked after every round the agent ran, by `serve` and `round` alike
//! (docs/protocol.md §5 `post_round/after_round`, docs/detectors.md).
//!
//! Every post-round hook gets the round's outcome and the end of its log; the built-in
//! detectors are asked only about their own CLI's rounds. Verdicts combine as: any honoured
//! stop wins (the first in call order); else the back-off that ends latest; else continue.
//! A `stop` is honoured per `[monitor] auto_stop_on` (`oauth_fail` for an `auth`
//! diagnosis, or the hook's own name; the default list covers the built-in detectors only,
//! a third-party host's stop needs a list the operator wrote:
//! [`MonitorConfig::stops_on`]); an unhonoured one is recorded
//! (`plugin_post_round_override_ignored`) and counts as continue. A failed call counts as
//! `null`. A back-off longer than the hook's call timeout is honoured only for a built-in
//! detector or a hook listed in `[plugins] spawn_override_allow`, capped to the timeout and
//! recorded otherwise ([`BackOffLimits`]). Side records: `agent_usage_recorded` for reported token usage
//! (when the key broker read what the provider billed for the round, that is recorded in
//! the first report's place, `source` `broker`, the CLI's own figures beside it:
//! [`Billing`]),
//! `agent_auth_error_detected` for every `auth` diagnosis, and one
//! `plugin_post_round_decision` for the combined verdict unless it is plain continue.

use agent_runner_protocol::redact::redact_and_cap;
use agent_runner_protocol::{
    decode_post_round_result, AfterRoundParams, Context, ErrorKind, Family, HookName,
    PostRoundAction, PostRoundVerdict, RoundOutcome,
};
use std::time::{Duration, SystemTime};

use crate::config::{auto_stop_names, MonitorConfig};
use crate::hosts::{HookRef, HostManager};
use crate::record::events::{Event, EventLog};
use crate::record::stop::{StopLevel, StopWatch};
use crate::runtime::agent::session_usage::{RoundUsage, SessionUsage};
use crate::runtime::agent::sessions::Resume;

/// When a back-off ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// After this long (1..=86400 s), grown exponentially on repeats.
    For(Duration),
    /// At this instant (a printed reset time).
    Until(SystemTime),
}

impl Wait {
    /// The instant the wait ends if it starts at `now`.
    pub(crate) fn deadline(self, now: SystemTime) -> SystemTime {
        match self {
            Wait::For(d) => now + d,
            Wait::Until(t) => t,
        }
    }
}

/// The combined verdict of the post-round hooks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Go on as usual.
    Continue,
    /// Wait before the next round.
    BackOff {
        /// The hook whose back-off won.
        hook: HookName,
        /// Its diagnosis.
        kind: ErrorKind,
        /// Its message (redacted, at most 256 characters).
        message: String,
        /// How long.
        wait: Wait,
    },
    /// Stop serving (an honoured stop).
    Stop {
        /// The hook that asked.
        hook: HookName,
        /// Its diagnosis.
        kind: ErrorKind,
        /// Its message (redacted, capped).
        message: String,
    },
}

/// `agent_usage_recorded.usage_scope`: every count and cost recorded is the round's own,
/// never a session's running total (docs/operations.md).
pub(crate) const USAGE_SCOPE: &str = "round";

/// The round being judged.
pub struct Judged<'a> {
    /// The context (with `agent_log_path`).
    pub ctx: &'a Context,
    /// How the agent ended.
    pub outcome: &'a RoundOutcome,
    /// The protocol `log_tail`.
    pub log_tail: &'a str,
    /// The round's agent CLI ([`crate::config::AgentConfig::cli`]); `None`: none
    /// agent-runner knows, so no built-in detector is asked.
    pub cli: Option<&'a str>,
    /// The agent session the round started or resumed (`serve`'s session resume), whose
    /// running totals its usage is told from ([`SessionUsage`]).
    pub session: Option<&'a Resume>,
    /// What the key broker read the provider billing in the round's answers, priced
    /// (`Default`: no broker, or no answer's usage read).
    pub billed: BrokerBill,
}

/// What the key broker read the provider billing in a round's answers, priced; the
/// default: nothing read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BrokerBill(pub(crate) Option<crate::budget::billed::Priced>);

/// How much lower than the provider's bill a CLI's report may be before it is called
/// under-reported: 5 %, and $0.0001 (a CLI prices with its own table and rounds).
pub(crate) const UNDERREPORT_SHARE: f64 = 0.05;
/// The absolute part of the tolerance, US dollars.
pub(crate) const UNDERREPORT_USD: f64 = 0.0001;

/// A round's usage as `agent_usage_recorded` carries it: its counts and cost, where they
/// come from, and with `source` `broker` the CLI's own report beside them.
struct Billing<'a> {
    usage: RoundUsage,
    source: &'static str,
    reported: Option<&'a agent_runner_protocol::TokenUsage>,
}

impl Billing<'_> {
    /// The round's usage the broker read: its counts and priced cost, its model.
    fn broker(priced: &crate::budget::billed::Priced) -> RoundUsage {
        RoundUsage {
            usage: agent_runner_protocol::TokenUsage {
                input_tokens: priced.tokens.input,
                output_tokens: priced.tokens.output,
                cache_read_tokens: Some(priced.tokens.cache_read),
                cache_write_tokens: Some(priced.tokens.cache_write),
                cost_usd: Some(priced.usd),
                model: Some(priced.model.clone()),
            },
            from_session_totals: Vec::new(),
        }
    }

    /// Whether the CLI's report is below the broker's figure by more than the tolerance
    /// ([`UNDERREPORT_SHARE`], [`UNDERREPORT_USD`]): its cost when it reported one, else
    /// its tokens; no report is not an under-report (nothing was claimed).
    fn underreported(&self) -> bool {
        let (Some(reported), "broker") = (self.reported, self.source) else {
            return false;
        };
        let billed = &self.usage.usage;
        match (reported.cost_usd.filter(|c| c.is_finite()), billed.cost_usd) {
            (Some(said), Some(bill)) => said < bill * (1.0 - UNDERREPORT_SHARE) - UNDERREPORT_USD,
            _ => {
                let said = tokens_of(reported) as f64;
                said < tokens_of(billed) as f64 * (1.0 - UNDERREPORT_SHARE)
            }
        }
    }
}

/// Every token of `u`, all kinds.
fn tokens_of(u: &agent_runner_protocol::TokenUsage) -> u64 {
    [
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens.unwrap_or(0),
        u.cache_write_tokens.unwrap_or(0),
    ]
    .iter()
    .fold(0u64, |sum, n| sum.saturating_add(*n))
}

/// Whether `hook` is asked about a round of the CLI `cli`: a built-in detector only about
/// its own CLI, any other hook always.
fn applies(hook: &HookRef, cli: Option<&str>) -> bool {
    crate::detectors::DIALECTS
        .iter()
        .find(|d| d.detector == hook.name.as_str())
        .is_none_or(|d| Some(d.binary) == cli)
}

/// What the post-round hooks made of a round.
#[derive(Clone, Debug, PartialEq)]
pub struct Consulted {
    /// Their combined decision.
    pub decision: Decision,
    /// Whether one of them reported the round's token usage (`agent_usage_recorded`).
    pub usage_reported: bool,
    /// The round's own tokens (input, output, cache read and cache write) as the first
    /// usage report counted them, after [`SessionUsage`]: what `session_max_tokens`
    /// adds up.
    pub tokens: Option<u64>,
    /// The round's own usage as the first hook that reported it was recorded
    /// (`agent_usage_recorded`; its model already redacted), for the round's trace.
    pub usage: Option<agent_runner_protocol::TokenUsage>,
    /// Whether the built-in detector of a preset's CLI (`crate::detectors::DIALECTS`) was
    /// asked: the round ran a known coding-agent CLI, which `stalled_no_progress` judges
    /// (docs/operations.md, "The crash-loop breaker").
    pub preset_cli: bool,
}

/// Asks every applicable post-round hook about `round`, records what they said, and
/// returns the combined [`Decision`] and whether usage was reported. A graceful stop
/// abandons a third-party hook's call in flight, an immediate stop a built-in one's too.
pub async fn consult(
    hosts: &mut HostManager,
    session_usage: &mut SessionUsage,
    monitor: &MonitorConfig,
    allow: &[HookName],
    events: &EventLog,
    round: &Judged<'_>,
    stop: &mut StopWatch,
) -> Consulted {
    // The agent as `agent_usage_recorded` names it: its CLI, else `command[0]`'s file name.
    let binary = round.ctx.agent_binary.as_deref().unwrap_or("");
    let agent = round
        .cli
        .unwrap_or_else(|| binary.rsplit('/').next().unwrap_or(binary));
    let round_num = round.ctx.round_num;
    let now = SystemTime::now();
    let mut decision = Decision::Continue;
    let mut usage_reported = false;
    let mut tokens = None;
    let mut first_usage = None;
    let mut preset_cli = false;
    let mut billed = round.billed.0.clone();
    for hook in hosts.hooks(Family::PostRound) {
        if !applies(&hook, round.cli) {
            continue;
        }
        preset_cli |= hosts.is_builtin(&hook)
            && crate::detectors::DIALECTS
                .iter()
                .any(|d| d.detector == hook.name.as_str());
        let params = AfterRoundParams {
            hook: hook.name.clone(),
            ctx: round.ctx.clone(),
            outcome: round.outcome.clone(),
            log_tail: round.log_tail.to_owned(),
        };
        let params = serde_json::to_value(params).expect("params serialize");
        // A graceful stop lets the running round finish, its usage recorded too: the
        // built-in detectors are abandoned only by an immediate stop.
        let level = if hosts.is_builtin(&hook) {
            StopLevel::Immediate
        } else {
            StopLevel::Graceful
        };
        let value = match hosts.call_unless_stopped(&hook, params, stop, level).await {
            None => break,
            Some(Ok(Some(value))) => value,
            Some(Ok(None) | Err(_)) => continue,
        };
        let verdict = match decode_post_round_result(value) {
            Ok(Some(verdict)) => verdict,
            Ok(None) => continue,
            Err(err) => {
                hosts.invalid_result(&hook, format!("after_round result {err}"));
                continue;
            }
        };
        let builtin = hosts.is_builtin(&hook);
        // A built-in detector's CLI may report its session's running totals.
        let totals = crate::detectors::DIALECTS
            .iter()
            .find(|d| builtin && d.detector == hook.name.as_str())
            .map(|d| d.session_totals)
            .unwrap_or_default();
        let own = verdict
            .usage
            .clone()
            .map(|reported| session_usage.round(round.session, totals, reported));
        // The first report's place goes to what the provider billed, when the broker read it.
        let (usage, reported) = match (own, billed.take()) {
            (Some(own), Some(priced)) => (Some(Billing::broker(&priced)), Some(own.usage)),
            (own, priced) => {
                billed = priced;
                (own, None)
            }
        };
        if let Some(u) = usage.as_ref().filter(|_| tokens.is_none()) {
            tokens = Some(tokens_of(&u.usage));
        }
        if first_usage.is_none() {
            first_usage = usage.as_ref().map(|u| {
                let mut own = u.usage.clone();
                own.model = own
                    .model
                    .as_deref()
                    .map(redact_and_cap)
                    .filter(|m| !m.is_empty());
                own
            });
        }
        let source = if reported.is_some() { "broker" } else { "cli" };
        record(
            events,
            monitor,
            (&hook.name, builtin),
            (agent, round_num),
            &verdict,
            usage.map(|usage| Billing {
                usage,
                source,
                reported: reported.as_ref(),
            }),
        );
        usage_reported |= verdict.usage.is_some();
        let message = redact_and_cap(&verdict.message);
        let kind = verdict.kind.unwrap_or(ErrorKind::Other);
        let candidate = match verdict.action {
            PostRoundAction::Continue => continue,
            PostRoundAction::Stop
                if monitor.stops_on(
                    &auto_stop_names(hook.name.as_str(), verdict.kind),
                    hosts.is_builtin(&hook),
                ) =>
            {
                Decision::Stop {
                    hook: hook.name.clone(),
                    kind,
                    message,
                }
            }
            PostRoundAction::Stop => {
                events.emit(Event::PluginPostRoundOverrideIgnored {
                    hook: hook.name.to_string(),
                    action: "stop".into(),
                    kind: kind.as_str().into(),
                    round_num,
                    reason: "neither the hook nor its kind (auth: oauth_fail) is listed in [monitor] auto_stop_on (a third-party host's stop needs a list written in the file)".into(),
                });
                continue;
            }
            PostRoundAction::BackOff => {
                let limits = BackOffLimits {
                    allowed: builtin || allow.contains(&hook.name),
                    call_timeout: hosts.call_timeout(&hook),
                };
                let wait =
                    limits.bound(events, &hook.name, kind, round_num, wait_of(&verdict), now);
                Decision::BackOff {
                    hook: hook.name.clone(),
                    kind,
                    message,
                    wait,
                }
            }
        };
        decision = combine(decision, candidate, now);
    }
    // No hook reported the round's usage (the CLI printed none, or no detector reads it):
    // what the provider billed is recorded alone.
    if let Some(priced) = billed {
        let usage = Billing::broker(&priced);
        tokens = tokens.or(Some(tokens_of(&usage.usage)));
        first_usage = first_usage.or_else(|| Some(usage.usage.clone()));
        usage_reported = true;
        emit_usage(
            events,
            crate::budget::billed::BROKER_HOOK,
            (agent, round_num),
            Billing {
                usage,
                source: "broker",
                reported: None,
            },
        );
    }
    if let Some(event) = decision_event(&decision, round_num) {
        events.emit(event);
    }
    Consulted {
        decision,
        usage_reported,
        tokens,
        usage: first_usage,
        preset_cli,
    }
}

/// stop > the back-off that ends latest > continue; on a tie the earlier verdict stays.
pub(crate) fn combine(current: Decision, candidate: Decision, now: SystemTime) -> Decision {
    match (&current, &candidate) {
        (Decision::Stop { .. }, _) => current,
        (_, Decision::Stop { .. }) => candidate,
        (Decision::BackOff { wait: a, .. }, Decision::BackOff { wait: b, .. })
            if a.deadline(now) >= b.deadline(now) =>
        {
            current
        }
        (_, Decision::Continue) => current,
        _ => candidate,
    }
}

/// The one rule for a post-round back-off's length: one longer than the hook's call
/// timeout is honoured only for a built-in detector or a hook listed in `[plugins]
/// spawn_override_allow` (as spawn defers are); otherwise it is capped to the call timeout
/// and recorded (`plugin_post_round_override_ignored`), so a third-party host cannot park
/// `serve` for hours with a far reset time.
struct BackOffLimits {
    /// Built-in, or listed in `spawn_override_allow`.
    allowed: bool,
    /// `timeout_s` of the hook's host (or its family's default).
    call_timeout: Duration,
}

impl BackOffLimits {
    fn bound(
        &self,
        events: &EventLog,
        hook: &HookName,
        kind: ErrorKind,
        round_num: u64,
        wait: Wait,
        now: SystemTime,
    ) -> Wait {
        let asked = wait
            .deadline(now)
            .duration_since(now)
            .unwrap_or(Duration::ZERO);
        if self.allowed || asked <= self.call_timeout {
            return wait;
        }
        let cap = self.call_timeout.as_secs();
        events.emit(Event::PluginPostRoundOverrideIgnored {
            hook: hook.to_string(),
            action: "back_off".into(),
            kind: kind.as_str().into(),
            round_num,
            reason: format!(
                "a back-off of {} s is longer than the hook's call timeout ({cap} s) and the hook is not listed in [plugins] spawn_override_allow: capped to {cap} s",
                asked.as_secs()
            ),
        });
        Wait::For(self.call_timeout)
    }
}

fn wait_of(verdict: &PostRoundVerdict) -> Wait {
    match (&verdict.until, verdict.back_off_s) {
        (Some(until), _) => humantime::parse_rfc3339_weak(until)
            .map(Wait::Until)
            // decode_post_round_result checked the format; a parse failure cannot happen.
            .unwrap_or(Wait::For(Duration::from_secs(1))),
        (None, secs) => Wait::For(Duration::from_secs(secs.unwrap_or(1))),
    }
}

/// `agent_usage_recorded` (the round's own `usage`) and `agent_auth_error_detected` for
/// one verdict about round `round_num` of `agent` (its CLI, else `command[0]`'s file
/// name).
fn record(
    events: &EventLog,
    monitor: &MonitorConfig,
    (hook, builtin): (&HookName, bool),
    (agent, round_num): (&str, u64),
    verdict: &PostRoundVerdict,
    billing: Option<Billing<'_>>,
) {
    if let Some(billing) = billing {
        emit_usage(events, hook.as_str(), (agent, round_num), billing);
    }
    if verdict.kind == Some(ErrorKind::Auth) {
        events.emit(Event::AgentAuthErrorDetected {
            round_num,
            hook: hook.to_string(),
            message: redact_and_cap(&verdict.message),
            hint: monitor.auth_fail_hint.clone(),
            auto_stop: monitor.stops_on(&auto_stop_names(hook.as_str(), verdict.kind), builtin),
        });
    }
}

/// `agent_usage_recorded` of one round's usage.
fn emit_usage(events: &EventLog, hook: &str, (agent, round_num): (&str, u64), billing: Billing) {
    let underreported = billing.underreported();
    let Billing {
        usage: RoundUsage {
            usage,
            from_session_totals,
        },
        source,
        reported,
    } = billing;
    if underreported {
        tracing::warn!(
            round_num,
            "the agent's CLI reported less than the provider billed (the broker's figure is counted)"
        );
    }
    let model = usage
        .model
        .as_deref()
        .map(redact_and_cap)
        .filter(|m| !m.is_empty());
    events.emit(Event::AgentUsageRecorded {
        round_num,
        hook: hook.to_owned(),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_tokens,
        cache_write_tokens: usage.cache_write_tokens,
        cost_usd: usage.cost_usd,
        agent: agent.to_owned(),
        model: model.unwrap_or_else(|| "unknown".to_owned()),
        cached_tokens: usage.cache_read_tokens.unwrap_or(0),
        usage_scope: USAGE_SCOPE.to_owned(),
        from_session_totals: from_session_totals
            .iter()
            .map(|f| (*f).to_owned())
            .collect(),
        source: source.to_owned(),
        reported_cost_usd: reported.and_then(|r| r.cost_usd),
        reported_tokens: reported.map(tokens_of),
        underreported,
    });
}

/// `plugin_post_round_decision` for a decision other than continue.
fn decision_event(decision: &Decision, round_num: u64) -> Option<Event> {
    let (hook, action, kind, message, wait) = match decision {
        Decision::Continue => return None,
        Decision::Stop {
            hook,
            kind,
            message,
        } => (hook, "stop", kind, message, None),
        Decision::BackOff {
            hook,
            kind,
            message,
            wait,
        } => (hook, "back_off", kind, message, Some(wait)),
    };
    let (back_off_s, until) = match wait {
        Some(Wait::For(d)) => (Some(d.as_secs()), None),
        Some(Wait::Until(t)) => (None, Some(crate::record::events::timestamp(*t))),
        None => (None, None),
    };
    Some(Event::PluginPostRoundDecision {
        round_num,
        hook: hook.to_string(),
        action: action.into(),
        kind: kind.as_str().into(),
        message: message.clone(),
        back_off_s,
        until,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn back_off(hook: &str, wait: Wait) -> Decision {
        Decision::BackOff {
            hook: hook.parse().unwrap(),
            kind: ErrorKind::RateLimit,
            message: String::new(),
            wait,
        }
    }

    #[test]
    fn stop_beats_the_longest_back_off_which_beats_continue() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let short = back_off("a", Wait::For(Duration::from_secs(30)));
        let long = back_off("b", Wait::Until(now + Duration::from_secs(120)));
        let stop = Decision::Stop {
            hook: "c".parse().unwrap(),
            kind: ErrorKind::Auth,
            message: String::new(),
        };
        assert_eq!(combine(Decision::Continue, short.clone(), now), short);
        assert_eq!(combine(short.clone(), long.clone(), now), long);
        assert_eq!(combine(long.clone(), short.clone(), now), long);
        assert_eq!(combine(long.clone(), Decision::Continue, now), long);
        assert_eq!(combine(long.clone(), stop.clone(), now), stop);
        assert_eq!(combine(stop.clone(), long, now), stop);
        // A tie keeps the earlier verdict.
        let twin = back_off("z", Wait::For(Duration::from_secs(30)));
        assert_eq!(combine(short.clone(), twin, now), short);
    }
}
