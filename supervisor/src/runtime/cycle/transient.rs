//! What `serve` does with the post-round hooks' combined verdict
//! (docs/configuration.md `transient_error_action`, `[monitor]`): a stop ends serve with
//! the operator's hint; a diagnosed transient failure starts or extends an *episode* —
//! backed off, skipped or stopping per `[runtime] transient_error_action` — that ends with
//! `transient_error_recovered` at the first clean round after it.
//!
//! Events: `transient_error_detected` (each diagnosed round), `transient_error_backoff_capped`
//! (a cap shortened the wait), `agent_network_blip` (a network diagnosis),
//! `transient_error_recovered`. Diagnosed rounds count toward the crash-loop breaker (the
//! caller's rule, [`Step::diagnosed`]).

use agent_runner_protocol::ErrorKind;
use std::time::{Instant, SystemTime};

use crate::config::{Config, TransientAction};
use crate::record::events::{timestamp, Event, EventLog};
use crate::runtime::cycle::backoff::{self, Plan, Policy};
use crate::runtime::steps::post_round::Decision;

/// `serve_stopping.reason` of a stop under `transient_error_action = "stop"`.
pub(crate) const STOP_REASON: &str = "transient_error";

/// What `serve` does next.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Step {
    /// The usual restart delay.
    Continue,
    /// A diagnosed failure whose action is `skip`: the usual restart delay, not counted
    /// as a crash.
    Skip,
    /// Wait out `plan` (diagnosis `kind`), then go on.
    BackOff {
        /// The planned wait.
        plan: Plan,
        /// The diagnosis.
        kind: ErrorKind,
        /// The first round of the episode.
        since_round: u64,
    },
    /// Stop serving with exit `code`; `message` for stderr.
    Stop {
        /// `serve_stopping.reason`: the diagnosis (`auth`, …) or `transient_error`.
        reason: &'static str,
        /// The post-round hook whose verdict it was (`serve_stopping.hook`).
        hook: String,
        /// The exit code.
        code: u8,
        /// What happened and what to do.
        message: String,
    },
}

impl Step {
    /// Whether a post-round hook diagnosed the round as failed (it counts toward the
    /// crash-loop breaker).
    pub(crate) fn diagnosed(&self) -> bool {
        !matches!(self, Step::Continue)
    }

    /// The diagnosis in a line (`diagnosed rate_limit by claude_error_detector`), if any.
    pub(crate) fn diagnosis(&self) -> Option<String> {
        match self {
            Step::Continue => None,
            Step::Skip => Some("diagnosed by a post-round hook (skipped)".to_owned()),
            Step::BackOff { kind, .. } => Some(format!("diagnosed {}", kind.as_str())),
            Step::Stop { reason, hook, .. } => Some(format!("diagnosed {reason} by {hook}")),
        }
    }
}

struct Episode {
    kind: ErrorKind,
    since_round: u64,
    consecutive: u32,
    since: Instant,
}

/// The transient-failure state of one `serve` run.
pub(crate) struct Transients {
    policy: Policy,
    action: TransientAction,
    hint: Option<String>,
    episode: Option<Episode>,
}

impl Transients {
    /// The state for a `serve` of `config`, no episode under way.
    pub(crate) fn new(config: &Config) -> Self {
        Transients {
            policy: Policy {
                base: config.runtime.restart_delay,
                cap: config.runtime.transient_backoff_cap,
            },
            action: config.runtime.transient_error_action,
            hint: config.monitor.auth_fail_hint.clone(),
            episode: None,
        }
    }

    /// Takes the settings of a re-read `config` (docs/configuration.md, "Config follows the
    /// file": base delay, cap, action, hint) and keeps the episode under way, so a back-off
    /// keeps growing from where it was and recovery is still reported once.
    pub(crate) fn follow(&mut self, config: &Config) {
        let episode = self.episode.take();
        *self = Transients {
            episode,
            ..Transients::new(config)
        };
    }

    /// Decides the step after round `round_num` whose agent exited `clean`ly (or not),
    /// given the hooks' `decision`, recording the events of this module.
    pub(crate) fn after_round(
        &mut self,
        events: &EventLog,
        decision: &Decision,
        round_num: u64,
        clean: bool,
    ) -> Step {
        match decision {
            Decision::Continue => {
                if clean {
                    if let Some(episode) = self.episode.take() {
                        events.emit(Event::TransientErrorRecovered {
                            round_num,
                            kind: episode.kind.as_str().into(),
                            consecutive: episode.consecutive,
                            episode_s: episode.since.elapsed().as_secs(),
                        });
                    }
                }
                Step::Continue
            }
            Decision::Stop {
                hook,
                kind,
                message,
            } => {
                let hint = self
                    .hint
                    .as_deref()
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                Step::Stop {
                    reason: kind.as_str(),
                    hook: hook.to_string(),
                    code: crate::exit::NOPERM,
                    message: format!("{message} (post-round hook {hook}){hint}; stopping"),
                }
            }
            Decision::BackOff {
                hook,
                kind,
                message,
                wait,
            } => {
                let episode = self.episode.get_or_insert(Episode {
                    kind: *kind,
                    since_round: round_num,
                    consecutive: 0,
                    since: Instant::now(),
                });
                episode.consecutive += 1;
                episode.kind = *kind;
                let consecutive = episode.consecutive;
                let since_round = episode.since_round;
                let now = SystemTime::now();
                let plan = backoff::plan(
                    self.policy,
                    *wait,
                    consecutive,
                    now,
                    backoff::jitter_fraction(),
                );
                let reset_at = match wait {
                    crate::runtime::steps::post_round::Wait::Until(at) => Some(timestamp(*at)),
                    crate::runtime::steps::post_round::Wait::For(_) => None,
                };
                let backing_off = self.action == TransientAction::BackOff;
                events.emit(Event::TransientErrorDetected {
                    round_num,
                    kind: kind.as_str().into(),
                    hook: hook.to_string(),
                    message: message.clone(),
                    reset_at,
                    consecutive,
                    action: self.action.as_str().into(),
                    back_off_s: backing_off.then_some(plan.applied.as_secs()),
                    until: backing_off.then(|| timestamp(plan.until)),
                });
                if *kind == ErrorKind::Network {
                    events.emit(Event::AgentNetworkBlip {
                        round_num,
                        hook: hook.to_string(),
                        message: message.clone(),
                        consecutive,
                    });
                }
                match self.action {
                    TransientAction::Skip => Step::Skip,
                    TransientAction::Stop => {
                        Step::Stop {
                            reason: STOP_REASON,
                            hook: hook.to_string(),
                            code: crate::exit::TEMPFAIL,
                            message: format!("{message} (post-round hook {hook}); transient_error_action = \"stop\"; stopping"),
                        }
                    }
                    TransientAction::BackOff => {
                        if plan.capped {
                            events.emit(Event::TransientErrorBackoffCapped {
                                round_num,
                                kind: kind.as_str().into(),
                                requested_s: plan.requested.as_secs(),
                                applied_s: plan.applied.as_secs(),
                                cap_s: plan.cap.as_secs(),
                                consecutive,
                            });
                        }
                        Step::BackOff {
                            plan,
                            kind: *kind,
                            since_round,
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::steps::post_round::Wait;
    use std::time::Duration;

    fn config(dir: &std::path::Path, runtime: &str) -> Config {
        std::fs::write(dir.join("prompt.md"), "work\n").unwrap();
        let text = format!(
            "schema_version = 1\n[agent]\ncommand = [\"true\"]\n[prompt]\nfile = \"prompt.md\"\n[runtime]\nlog_dir = \"logs\"\n{runtime}\n"
        );
        crate::config::parse_str(&dir.join("agent-runner.toml"), &text).unwrap()
    }

    fn limit() -> Decision {
        Decision::BackOff {
            hook: "claude_code".parse().unwrap(),
            kind: ErrorKind::RateLimit,
            message: "rate limited".to_owned(),
            wait: Wait::For(Duration::from_secs(1)),
        }
    }

    #[test]
    fn a_reread_config_applies_its_cap_and_keeps_the_episode() {
        let dir = tempfile::tempdir().unwrap();
        let events = EventLog::new(&dir.path().join("state"));
        let first = config(
            dir.path(),
            "restart_delay_s = 100\ntransient_backoff_cap_s = 3600",
        );
        let mut transients = Transients::new(&first);
        let Step::BackOff {
            plan, since_round, ..
        } = transients.after_round(&events, &limit(), 4, false)
        else {
            panic!("a rate limit backs off");
        };
        assert_eq!((plan.applied, since_round), (Duration::from_secs(100), 4));

        transients.follow(&config(
            dir.path(),
            "restart_delay_s = 100\ntransient_backoff_cap_s = 150",
        ));
        let Step::BackOff {
            plan, since_round, ..
        } = transients.after_round(&events, &limit(), 5, false)
        else {
            panic!("still backing off");
        };
        // Second in a row: 2 × 100 s, cut to the new cap; still the episode of round 4.
        assert_eq!(plan.requested, Duration::from_secs(200));
        assert_eq!(plan.applied, Duration::from_secs(150));
        assert_eq!(since_round, 4);

        transients.follow(&config(dir.path(), "transient_error_action = \"skip\""));
        assert_eq!(
            transients.after_round(&events, &limit(), 6, false),
            Step::Skip
        );
        assert_eq!(
            transients.after_round(&events, &Decision::Continue, 7, true),
            Step::Continue
        );
        let recorded = std::fs::read_to_string(
            std::fs::read_dir(dir.path().join("state"))
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path(),
        )
        .unwrap();
        let recovered: Vec<&str> = recorded
            .lines()
            .filter(|l| l.contains("\"transient_error_recovered\""))
            .collect();
        assert_eq!(recovered.len(), 1, "{recorded}");
        assert!(
            recovered[0].contains("\"consecutive\":3"),
            "{}",
            recovered[0]
        );
    }
}
