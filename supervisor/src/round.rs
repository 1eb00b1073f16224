//! One round (design.md "One round, as data flows", steps 2–6): prompt and argv, spawn
//! hooks, the agent under its budget, the dirty tree, and the events of each step:
//! `round_start`, `agent_spawn`, `agent_exit`, `dirty_detected` and the dirty outcome,
//! `round_end`.

use agent_runner_protocol::{Context, SpawnView, VcsContext};
use serde_json::json;
use std::collections::BTreeSet;
use std::fs::File;
use std::time::SystemTime;

use crate::agent::{self, AgentExit, AgentSpec};
use crate::config::{Config, PromptDelivery};
use crate::dirty::{self, DirtyRound, Outcome};
use crate::events::{timestamp, EventLog};
use crate::exit::CliError;
use crate::git::Repo;
use crate::hosts::HostManager;
use crate::prompt::{agent_argv, read_prompt};
use crate::spawn_gate::{self, Verdict};
use crate::state;
use crate::stop::StopWatch;

/// What an attempt at a round came to.
#[derive(Debug)]
pub enum Attempt {
    /// The agent ran.
    Ran {
        /// The round's number.
        round_num: u64,
        /// How the agent ended.
        exit: AgentExit,
        /// What happened to a dirty tree (`None`: clean, or the agent did not exit cleanly).
        dirty: Option<Outcome>,
    },
    /// Spawn hooks deferred or skipped the round; no agent started.
    NotStarted(Verdict),
}

/// Runs rounds of one project: the loaded config, its hosts and its event log.
pub struct Runner {
    /// The configuration (read once).
    pub config: Config,
    /// The operator's record.
    pub events: EventLog,
    /// Third-party hosts.
    pub hosts: HostManager,
    repo: Repo,
}

impl Runner {
    /// A runner over `config` with `hosts` already booted.
    pub fn new(config: Config, events: EventLog, hosts: HostManager) -> Self {
        let repo = Repo::new(&config.runtime.work_dir, &config.runtime.log_dir);
        Runner {
            config,
            events,
            hosts,
            repo,
        }
    }

    fn context(&self, round_num: u64, log_path: Option<String>) -> Context {
        let cfg = &self.config;
        Context {
            work_dir: cfg.runtime.work_dir.display().to_string(),
            log_dir: cfg.runtime.log_dir.display().to_string(),
            project: cfg.project.clone(),
            round_num,
            phase: None,
            agent_name: cfg.agent.name.clone(),
            agent_binary: Some(cfg.agent.command[0].clone()),
            agent_log_path: log_path,
            dry_run: false,
            vcs: Some(VcsContext {
                dirty_action: cfg.vcs.dirty_action.as_str().to_owned(),
                stash_idempotency_s: cfg.vcs.stash_idempotency.as_secs(),
            }),
        }
    }

    /// The variables the agent gets on top of the supervisor's environment.
    fn agent_env(&self, round_num: u64) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = self
            .config
            .agent
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push((
            "AGENT_RUNNER_LOG_DIR".into(),
            self.config.runtime.log_dir.display().to_string(),
        ));
        env.push(("AGENT_RUNNER_ROUND_NUM".into(), round_num.to_string()));
        env.push(("AGENT_RUNNER_PHASE".into(), String::new()));
        env
    }

    /// Attempts one round: asks the spawn hooks and, if they let it, runs the agent and
    /// handles the tree it left.
    ///
    /// Errors: the prompt cannot be read, the round log cannot be created, or the agent
    /// cannot be started (all reported to the operator; `serve` keeps going).
    pub async fn attempt(&mut self, stop: &mut StopWatch) -> Result<Attempt, CliError> {
        let log_dir = self.config.runtime.log_dir.clone();
        let next = state::peek_next_round(&log_dir).map_err(|e| {
            CliError::failure(format!(
                "cannot read round state in {}: {e}",
                log_dir.display()
            ))
        })?;
        let prompt = read_prompt(&self.config.prompt_file).map_err(|e| {
            CliError::failure(format!(
                "cannot read prompt {}: {e}",
                self.config.prompt_file.display()
            ))
        })?;
        let argv = agent_argv(&self.config.agent, &prompt);
        let env = self.agent_env(next);
        let env_names: BTreeSet<String> = std::env::vars_os()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .chain(env.iter().map(|(k, _)| k.clone()))
            .collect();
        let spawn = SpawnView {
            argv: argv.clone(),
            env_names: env_names.into_iter().collect(),
        };
        let ctx = self.context(next, None);
        let verdict = spawn_gate::consult(
            &mut self.hosts,
            &self.config.plugins.spawn_override_allow,
            &self.events,
            &ctx,
            &spawn,
        )
        .await;
        if verdict != Verdict::Proceed {
            return Ok(Attempt::NotStarted(verdict));
        }

        let round_num = state::next_round(&log_dir).map_err(|e| {
            CliError::failure(format!(
                "cannot record round state in {}: {e}",
                log_dir.display()
            ))
        })?;
        self.events.emit(
            "round_start",
            json!({"round_num": round_num, "phase": null}),
        );
        let started = timestamp(SystemTime::now());
        let stamp: String = started[..19]
            .chars()
            .filter(|c| *c != '-' && *c != ':')
            .collect();
        let rounds_dir = log_dir.join("rounds");
        let log_path = rounds_dir.join(format!("R{round_num}-{stamp}.log"));
        let log = std::fs::create_dir_all(&rounds_dir)
            .and_then(|_| File::create(&log_path))
            .map_err(|e| {
                CliError::failure(format!(
                    "cannot create round log {}: {e}",
                    log_path.display()
                ))
            })?;
        let spec = AgentSpec {
            argv,
            env,
            work_dir: self.config.runtime.work_dir.clone(),
            log,
            stdin_prompt: (self.config.agent.delivery == PromptDelivery::Stdin).then_some(prompt),
            budget: self.config.runtime.round_budget,
        };
        self.events.emit(
            "agent_spawn",
            json!({"round_num": round_num, "timeout_s": self.config.runtime.round_budget.as_secs(),
                   "log_path": log_path}),
        );
        let exit = match agent::run(spec, stop).await {
            Ok(exit) => exit,
            Err(err) => {
                let message = format!(
                    "cannot start agent {:?}: {err}",
                    self.config.agent.command[0]
                );
                self.events.emit(
                    "agent_spawn_failed",
                    json!({"round_num": round_num, "error": message}),
                );
                self.events.emit(
                    "round_end",
                    json!({"round_num": round_num, "outcome": "spawn_failed"}),
                );
                return Err(CliError::failure(message));
            }
        };
        self.events.emit(
            "agent_exit",
            json!({"round_num": round_num, "exit_code": exit.exit_code, "signal": exit.signal,
                   "duration_s": (exit.duration.as_secs_f64() * 1000.0).round() / 1000.0,
                   "timed_out": exit.cause == agent::ExitCause::Timeout,
                   "exit_cause": exit.cause.as_str()}),
        );

        let mut dirty = None;
        if exit.is_clean() {
            match self.repo.dirty_files().await {
                Ok(files) if files.is_empty() => {}
                Ok(files) => {
                    let ctx = self.context(round_num, Some(log_path.display().to_string()));
                    let round = DirtyRound {
                        config: &self.config,
                        repo: &self.repo,
                        events: &self.events,
                        ctx: &ctx,
                    };
                    dirty = Some(dirty::handle(&round, &mut self.hosts, &files).await);
                }
                Err(err) => {
                    self.events.emit(
                        "dirty_check_failed",
                        json!({"round_num": round_num, "error": err.to_string()}),
                    );
                }
            }
        }
        self.events.emit(
            "round_end",
            json!({"round_num": round_num, "exit_code": exit.exit_code, "exit_cause": exit.cause.as_str(),
                   "dirty_outcome": dirty.as_ref().map(Outcome::as_str)}),
        );
        Ok(Attempt::Ran {
            round_num,
            exit,
            dirty,
        })
    }
}
