//! The command line (clap): global `--config PATH` and `--json`, accepted before or after
//! the verb, and the verbs. Each verb maps its result onto the exit codes of
//! [`crate::exit`].

use clap::{CommandFactory, Parser, Subcommand};
use std::io::stdout;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::DEFAULT_CONFIG_FILE;
use crate::exit::{self, CliError};
use crate::operator::control;
use crate::operator::peek::{self, PeekOptions, PeekOutput};
use crate::record::stop::{self, StopLevel};
use crate::runtime::cycle::round::{Attempt, Ran};
use crate::runtime::cycle::serve::{self, ServeOptions};
use crate::runtime::steps::post_round::Decision as PostRound;
use crate::runtime::steps::spawn_gate::Verdict;

/// Restart-on-exit supervisor for coding-agent CLIs, with pinned, confined plugin hosts.
#[derive(Debug, Parser)]
#[command(name = "agent-runner", version, about)]
pub(crate) struct Cli {
    /// The config file.
    #[arg(long, global = true, value_name = "PATH", default_value = DEFAULT_CONFIG_FILE)]
    pub config: PathBuf,
    /// Machine-readable JSON output.
    #[arg(long, global = true)]
    pub json: bool,
    /// The verb.
    #[command(subcommand)]
    pub command: Command,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Write agent-runner.toml and prompts/main.md for an agent CLI.
    Init {
        /// Which agent CLI: claude, aider, gemini, codewhale, kimi, pi, codex.
        #[arg(long, default_value = "claude")]
        preset: String,
        /// Overwrite existing files.
        #[arg(long)]
        force: bool,
        /// Do not commit the new files.
        #[arg(long)]
        no_commit: bool,
        /// The agent's model endpoint (e.g. http://127.0.0.1:4010): its port is written to
        /// [agent.sandbox] connect_ports (so are those of the base-URL and proxy variables
        /// init sees).
        #[arg(long, value_name = "URL")]
        endpoint: Option<String>,
    },
    /// Run one round, then exit: 0 clean or ended by its budget, 1 agent failure, 75 deferred or skipped,
    /// 77 a login failure stopped it ([monitor] auto_stop_on), 78 config error.
    Round {
        /// Run this phase instead of the rotation's (`[phases] list`).
        #[arg(long, value_name = "NAME")]
        phase: Option<String>,
    },
    /// Run rounds back to back until stopped (SIGTERM/SIGINT: finish the round, then exit;
    /// SIGHUP: re-read the config).
    Serve {
        /// Stop after N completed rounds.
        #[arg(long, value_name = "N")]
        max_rounds: Option<u64>,
        /// Stop after one completed round.
        #[arg(long)]
        once: bool,
        /// Start rounds whatever [schedule] says (testing, catching up).
        #[arg(long)]
        ignore_schedule: bool,
        /// Run as a Kubernetes Job: exit 0 only when [goal] stop_when = "all_satisfied" is
        /// met; 143 when drained by a stop, 79 when a bound or a stop file ends it first.
        #[arg(long)]
        job: bool,
    },
    /// Check the config, the sandbox and every host's pin; exit non-zero when serve would
    /// refuse to boot (78) or a check fails (1). Read-only.
    Doctor {
        /// Show the phase plan of the next N rounds.
        #[arg(long, value_name = "N", default_value_t = 5)]
        rounds: u64,
    },
    /// One look at the project: service, rounds, orphan stash, hosts, sandbox. Read-only.
    Peek {
        /// Also show round N (or `latest`) with the end of its log.
        #[arg(long, value_name = "N|latest")]
        round: Option<crate::operator::peek::RoundSel>,
        /// Print the log of --round (default: the latest round) and nothing else.
        #[arg(long)]
        log: bool,
        /// Show (human form) or include (--json) the N most recent events.
        #[arg(long, value_name = "N")]
        events: Option<usize>,
        /// Print only the value at this dotted path, e.g. plugins.sandbox.achieved_tier.
        #[arg(long, value_name = "A.B.C")]
        select: Option<String>,
    },
    /// Peek, redrawn in place until Ctrl-C. Read-only.
    Watch {
        /// Seconds between redraws.
        #[arg(long, value_name = "S", default_value_t = crate::operator::watch::DEFAULT_INTERVAL_S)]
        interval: f64,
    },
    /// The event record as JSON Lines, filtered by kind. Read-only. Exit 2 on bad
    /// arguments, 1 when a file cannot be read.
    Events {
        /// Event kinds, comma-separated (e.g. round_start,round_end).
        #[arg(long, value_name = "K[,K2]")]
        kind: String,
        /// The last N matching events (default 10).
        #[arg(long, value_name = "N")]
        window: Option<usize>,
        /// Follow the record until Ctrl-C.
        #[arg(long)]
        tail: bool,
        /// Every matching event with ts >= TS (RFC 3339, or a date).
        #[arg(long, value_name = "TS")]
        since: Option<String>,
    },
    /// Watch the project: detectors (anomaly), the record live (events, narrate; `--host`
    /// relays another machine's over ssh), or the live page with /api/state and /metrics
    /// (http).
    Monitor(MonitorArgs),
    /// Install a systemd unit running `serve` for this project (user unit by default).
    Install {
        /// A system unit in /etc/systemd/system instead of a user unit.
        #[arg(long)]
        system: bool,
        /// Overwrite an existing unit.
        #[arg(long)]
        force: bool,
        /// Print the unit and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Also install the monitor sidekick (`agent-runner-monitor@<project>.service`,
        /// running `monitor`: auto-stop on critical alerts), as the reference system does.
        #[arg(long)]
        monitor: bool,
    },
    /// Stop, disable and remove the systemd unit of this project.
    Uninstall {
        /// The system unit instead of the user unit.
        #[arg(long)]
        system: bool,
    },
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff).
    Man,
    /// Is a supervisor running (pid, current round, uptime, hosts)? Exit 0 yes, 1 no.
    Status,
    /// Stop the running supervisor gracefully: no new round; the current one finishes.
    Stop,
    /// Terminate the running supervisor now: the agent's group is killed, hosts shut down.
    Kill,
    /// Start `serve` detached; refused while a supervisor runs.
    Start,
    /// Stop the running supervisor (gracefully: the current round finishes; `--force`:
    /// as `kill`), wait for it to end, then `start`.
    Restart {
        /// Terminate the agent now instead of letting the round finish.
        #[arg(long)]
        force: bool,
    },
    /// Rewrite a config written for the reference system (0.3.2 – 0.3.14) into one this
    /// build loads; exit 0 nothing left, 1 a change by hand remains, 2 not TOML.
    Migrate {
        /// Say what would change; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Replace this binary with a new build: check it (--version, doctor), keep the old one
    /// as <binary>.previous, swap atomically, restart the service and roll back by itself
    /// when the new one does not come up. Exit 0 done, 3 refused (nothing changed), 1 rolled
    /// back, 4 the rollback failed too.
    Upgrade {
        /// The new agent-runner binary.
        #[arg(long, value_name = "PATH")]
        binary: PathBuf,
        /// Swap only; the running service keeps the old binary until its next start.
        #[arg(long)]
        no_restart: bool,
        /// Seconds the new serve has to come up (once the old one has ended).
        #[arg(long, value_name = "S", default_value_t = 60)]
        timeout: u64,
    },
    /// `[budget]`: start counting the spend of `total_usd` / `total_tokens` (and today's)
    /// afresh.
    Budget {
        /// What to do.
        #[command(subcommand)]
        command: BudgetCommand,
    },
    /// Plugin hosts: check one against the protocol, or scaffold a new one.
    Plugin {
        /// What to do.
        #[command(subcommand)]
        command: PluginCommand,
    },
}

/// `agent-runner budget …`.
#[derive(Debug, Subcommand)]
pub enum BudgetCommand {
    /// Record `budget_reset`: the `total_*` caps and today's spend count from now (a
    /// running serve reads it before its next round). Exit 0, 78 bad config.
    Reset,
}

/// `agent-runner plugin …`.
#[derive(Debug, Subcommand)]
pub(crate) enum PluginCommand {
    /// Run a host through the protocol contract rule by rule: `plugin check NAME` (a host of
    /// the config, launched as serve would) or `plugin check -- COMMAND [ARGS…]`. Exit 0
    /// only if every rule passes.
    Check {
        /// The host's name in `[plugins.hosts]`.
        #[arg(conflicts_with = "command")]
        name: Option<String>,
        /// With `-- COMMAND`: the families the host may declare (default: both).
        #[arg(long, value_parser = parse_family, value_delimiter = ',')]
        provides: Vec<agent_runner_protocol::Family>,
        /// The host's command line, after `--`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Scaffold a host that passes `plugin check` as generated.
    New {
        /// The language.
        #[arg(long, value_enum)]
        lang: crate::author::plugin_new::Lang,
        /// The host's name (also its directory).
        name: String,
        /// The family of its hook.
        #[arg(long, value_parser = parse_family, default_value = "spawn_hook")]
        family: agent_runner_protocol::Family,
        /// Where to create the `NAME/` directory.
        #[arg(long, value_name = "DIR", default_value = ".")]
        dir: PathBuf,
        /// Rust only: depend on the SDK at this path, a checkout of agent-runner (default: a
        /// copy of the SDK written into the scaffold's `vendor/`).
        #[arg(long, value_name = "PATH")]
        sdk_path: Option<PathBuf>,
    },
}

/// A family name that names none ([`parse_family`]); clap prints it after the flag.
#[derive(Debug, thiserror::Error)]
#[error(
    "{text:?}: expected {}",
    agent_runner_protocol::Family::spelled("", " or ")
)]
struct UnknownFamily {
    /// The value given.
    text: String,
}

/// `--family`'s value parser.
///
/// Errors: [`UnknownFamily`].
fn parse_family(text: &str) -> Result<agent_runner_protocol::Family, UnknownFamily> {
    agent_runner_protocol::Family::parse(text).ok_or_else(|| UnknownFamily {
        text: text.to_owned(),
    })
}

/// The flags of `monitor`.
#[derive(Debug, clap::Args)]
pub(crate) struct MonitorArgs {
    /// What to do.
    #[arg(long, value_enum, default_value = "anomaly")]
    mode: crate::operator::monitor::Mode,
    /// Relay this ssh alias's record (`--mode events` only).
    #[arg(long, value_name = "SSH-ALIAS")]
    host: Option<String>,
    /// Seconds between detector runs (anomaly; default 30).
    #[arg(long, value_name = "SECONDS")]
    interval: Option<u64>,
    /// Event kinds to relay (`--host` only; default every kind).
    #[arg(long, value_name = "K[,K2]")]
    kind: Option<String>,
    /// The config path on the remote (`--host` only).
    #[arg(long, value_name = "PATH")]
    remote_config: Option<String>,
    /// Address of the page (http). Any address but loopback needs a token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// Port of the page (http; 0: any free port, printed on start).
    #[arg(long, value_name = "PORT", default_value_t = 8765)]
    port: u16,
    /// Another project's config to show on the page (http; repeatable).
    #[arg(long = "project", value_name = "CONFIG")]
    projects: Vec<PathBuf>,
    /// A file holding the page's token (http; else AGENT_RUNNER_MONITOR_TOKEN).
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
}

/// `serve --json`: what it did.
#[derive(serde::Serialize)]
struct ServeSummary {
    rounds_completed: u64,
    exit_code: u8,
}

/// `round --json`: how the round went, or why it did not start.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum RoundSummary {
    /// The agent ran.
    Ran {
        round_num: u64,
        exit_code: Option<i32>,
        exit_cause: &'static str,
        duration_s: f64,
        dirty_outcome: Option<&'static str>,
        /// What the agent's sandbox refused, one sentence each with its fix
        /// (`agent_egress_refused`); absent when nothing was.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        egress_refused: Vec<String>,
    },
    /// A spawn hook deferred or skipped it, or a stop came first (`action`).
    NotStarted {
        started: bool,
        action: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        hook: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        defer_s: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// `From<E> for CliError` with exit code `$code` and `E`'s message, for each error type of
/// the runtime and operator modules that ends a command: the one place where they meet
/// exit codes (the modules return their own `thiserror` types).
macro_rules! exit_with {
    ($code:expr => $($error:ty),+) => {
        $(impl From<$error> for CliError {
            fn from(err: $error) -> Self {
                CliError {
                    code: $code,
                    message: err.to_string(),
                }
            }
        })+
    };
}

exit_with!(exit::CONFIG =>
    crate::config::ConfigError,
    crate::hosts::sandbox::SandboxRefused,
    crate::runtime::agent::sandbox::AgentSandboxRefused
);
exit_with!(exit::FAILURE =>
    crate::runtime::cycle::round::RoundError,
    crate::operator::interrupt::NoInterrupt,
    crate::operator::control::NotRunning
);

impl From<crate::runtime::cycle::serve::BootError> for CliError {
    fn from(err: crate::runtime::cycle::serve::BootError) -> Self {
        use crate::runtime::cycle::serve::BootError;
        match err {
            BootError::Config(err) => err.into(),
            BootError::Sandbox(err) => err.into(),
            BootError::AgentSandbox(err) => err.into(),
            err @ BootError::Launcher(_) => CliError::config(err.to_string()),
            BootError::TreeLock(
                err @ crate::runtime::cycle::tree_lock::TreeLockError::OtherTree { .. },
            ) => CliError::config(err.to_string()),
            err if err.is_environmental() => CliError {
                code: exit::ENVIRONMENT,
                message: err.to_string(),
            },
            err @ (BootError::Hangup(_) | BootError::Lock(_) | BootError::TreeLock(_)) => {
                CliError::failure(err.to_string())
            }
        }
    }
}

/// Parses the command line, runs the verb, returns the exit code. Started with
/// [`crate::detectors::host::HOST_ARG`] as its only argument, the executable is the
/// built-in detector host instead (launched confined by the supervisor; not a verb).
pub fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    if let (Some(first), None) = (args.next(), args.next()) {
        if first == crate::detectors::host::HOST_ARG {
            return crate::detectors::host::run();
        }
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return exit::code(if err.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    init_tracing(&cli.command);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("agent-runner: cannot start the runtime: {err}");
            return exit::code(exit::FAILURE);
        }
    };
    // One thread: hosts are spawned from it, so their PR_SET_PDEATHSIG (tied to the
    // spawning thread) fires only when the supervisor itself exits (`docs/design-notes.md`, "Implementation notes").
    match runtime.block_on(run(cli)) {
        Ok(code) => exit::code(code),
        Err(err) => {
            eprintln!("agent-runner: {err}");
            exit::code(err.code)
        }
    }
}

fn init_tracing(command: &Command) {
    let default = match command {
        Command::Round { .. } | Command::Serve { .. } => "info",
        _ => "warn",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENT_RUNNER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour only on a terminal, and never under NO_COLOR (https://no-color.org): a log
    // file or journal gets plain text.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

async fn run(cli: Cli) -> Result<u8, CliError> {
    let (config, json) = (cli.config, cli.json);
    match cli.command {
        Command::Init {
            preset,
            force,
            no_commit,
            endpoint,
        } => init(config, json, preset, force, no_commit, endpoint).await,
        Command::Doctor { rounds } => Ok(doctor(&config, json, rounds).await),
        Command::Round { phase } => round(&config, json, phase.as_deref()).await,
        Command::Serve {
            max_rounds,
            once,
            ignore_schedule,
            job,
        } => {
            let options = ServeOptions {
                max_rounds,
                once,
                ignore_schedule,
                job,
            };
            run_serve(&config, json, options).await
        }
        Command::Plugin { command } => plugin(command, config, json).await,
        Command::Budget {
            command: BudgetCommand::Reset,
        } => crate::operator::budget::reset(&config, json),
        Command::Peek {
            round,
            log,
            events,
            select,
        } => peek(&config, json, PeekOptions { round, events }, log, select),
        Command::Watch { interval } => crate::operator::watch::run(&config, interval).await,
        Command::Events {
            kind,
            window,
            tail,
            since,
        } => events(&config, &kind, window, tail, since.as_deref()).await,
        Command::Install {
            system,
            force,
            dry_run,
            monitor,
        } => install(&config, system, force, dry_run, monitor),
        Command::Uninstall { system } => {
            let config = crate::config::load(&config)?;
            print_lines(crate::operator::install::uninstall(&config, scope(system))?)
        }
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "agent-runner", &mut stdout());
            Ok(exit::OK)
        }
        Command::Man => man(),
        Command::Monitor(args) => monitor(config, json, args).await,
        Command::Status => control::status(&config, json).await,
        Command::Stop => control::stop(&config, StopLevel::Graceful, json).await,
        Command::Kill => control::stop(&config, StopLevel::Immediate, json).await,
        Command::Start => control::start(&config, json).await,
        Command::Restart { force } => control::restart(&config, force, json).await,
        Command::Upgrade {
            binary,
            no_restart,
            timeout,
        } => {
            let options = crate::operator::upgrade::UpgradeOptions {
                binary,
                no_restart,
                timeout: std::time::Duration::from_secs(timeout),
            };
            crate::operator::upgrade::run(&config, options, json).await
        }
        Command::Migrate { dry_run } => {
            let (code, report) = crate::operator::migrate::run(&config, dry_run);
            if json {
                println!("{}", serde_json::to_string(&report).unwrap_or_default());
            } else {
                print!("{}", crate::operator::migrate::render(&report, dry_run));
            }
            Ok(code)
        }
    }
}

/// `init`: writes the config and prompt of `preset`, prints what it did.
async fn init(
    config_path: PathBuf,
    json: bool,
    preset: String,
    force: bool,
    no_commit: bool,
    endpoint: Option<String>,
) -> Result<u8, CliError> {
    let outcome = crate::operator::init::run(&crate::operator::init::InitOptions {
        config_path,
        preset,
        force,
        no_commit,
        endpoint,
    })
    .await?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&outcome.doc).unwrap_or_default()
        );
        return Ok(exit::OK);
    }
    print_lines(outcome.lines)
}

/// `doctor`: the report (human or `--json`) and its exit code.
async fn doctor(config: &std::path::Path, json: bool, rounds: u64) -> u8 {
    let report = crate::operator::doctor::run(config, rounds).await;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report.doc).unwrap_or_default()
        );
    } else {
        print!("{}", crate::operator::doctor::render(&report.doc));
    }
    report.code
}

/// `events`: the record's events of `kind` as JSON Lines.
async fn events(
    config: &std::path::Path,
    kind: &str,
    window: Option<usize>,
    tail: bool,
    since: Option<&str>,
) -> Result<u8, CliError> {
    let query = crate::operator::event_query::Query::new(kind, window, tail, since)?;
    let config = crate::config::load(config)?;
    crate::operator::event_query::run(&config.runtime.state_dir, &query).await
}

/// `install`: the systemd unit of `serve`.
fn install(
    config: &std::path::Path,
    system: bool,
    force: bool,
    dry_run: bool,
    monitor: bool,
) -> Result<u8, CliError> {
    let config = crate::config::load(config)?;
    let options = crate::operator::install::InstallOptions {
        scope: scope(system),
        force,
        dry_run,
        monitor,
    };
    print_lines(crate::operator::install::install(&config, options)?)
}

/// `man`: the man page on stdout, with the `[agent.sandbox]` keys
/// ([`crate::config::man_section`]) as its closing section.
fn man() -> Result<u8, CliError> {
    clap_mangen::Man::new(Cli::command().after_long_help(crate::config::man_section()))
        .render(&mut stdout())
        .map_err(|e| CliError::failure(format!("cannot write the man page: {e}")))?;
    Ok(exit::OK)
}

/// `monitor` with its flags.
async fn monitor(config: PathBuf, json: bool, args: MonitorArgs) -> Result<u8, CliError> {
    let MonitorArgs {
        mode,
        host,
        interval,
        kind,
        remote_config,
        bind,
        port,
        projects,
        token_file,
    } = args;
    crate::operator::monitor::run(crate::operator::monitor::Options {
        config,
        json,
        mode,
        host,
        kind,
        remote_config,
        interval,
        bind,
        port,
        projects,
        token_file,
    })
    .await
}

/// `peek`, human or `--json`, whole or `--log` or `--select`ed.
fn peek(
    config: &std::path::Path,
    json: bool,
    options: PeekOptions,
    log: bool,
    select: Option<String>,
) -> Result<u8, CliError> {
    let output = PeekOutput {
        options,
        json,
        log,
        select,
    };
    peek::run(config, &output)
}

/// `serve`: boot, the control socket, the loop, shutdown, the summary.
async fn run_serve(
    config: &std::path::Path,
    json: bool,
    options: ServeOptions,
) -> Result<u8, CliError> {
    let (sender, mut stop) = stop::install().map_err(|e| CliError::failure(e.to_string()))?;
    let mut booted = serve::boot_serve(config, options.job).await?;
    let pid_file = crate::runtime::cycle::log_views::serve_pid(booted.runner.log_dir());
    let state_dir = booted.runner.config.runtime.state_dir.clone();
    let control = crate::operator::control::listen(&state_dir, sender, booted.status.subscribe())
        .map_err(|e| {
            tracing::warn!(
                "control socket unavailable ({e}); stop/status fall back on the lock pid"
            )
        })
        .ok();
    let end = serve::serve(&mut booted, options, &mut stop).await;
    drop(control);
    serve::shutdown(booted).await;
    drop(pid_file);
    let completed = end.completed;
    if json {
        let summary = ServeSummary {
            rounds_completed: completed,
            exit_code: end.code,
        };
        println!("{}", serde_json::to_string(&summary).unwrap_or_default());
    } else {
        eprintln!("agent-runner: serve stopped after {completed} completed round(s)");
    }
    Ok(end.code)
}

async fn plugin(command: PluginCommand, config: PathBuf, json: bool) -> Result<u8, CliError> {
    match command {
        PluginCommand::Check {
            name,
            provides,
            command,
        } => {
            let target = match name {
                Some(name) => crate::author::plugin_check::Target::Configured { config, name },
                None => crate::author::plugin_check::Target::Command { command, provides },
            };
            let report = crate::author::plugin_check::run(&target).await?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string(&report.to_doc()).unwrap_or_default()
                );
            } else {
                print!("{}", report.render());
            }
            Ok(if report.passed() {
                exit::OK
            } else {
                exit::FAILURE
            })
        }
        PluginCommand::New {
            lang,
            name,
            family,
            dir,
            sdk_path,
        } => {
            let lines = crate::author::plugin_new::run(&crate::author::plugin_new::NewOptions {
                lang,
                name,
                family,
                dir,
                sdk_path,
            })?;
            for line in lines {
                println!("{line}");
            }
            Ok(exit::OK)
        }
    }
}

fn scope(system: bool) -> crate::operator::install::Scope {
    if system {
        crate::operator::install::Scope::System
    } else {
        crate::operator::install::Scope::User
    }
}

fn print_lines(lines: Vec<String>) -> Result<u8, CliError> {
    for line in lines {
        println!("{line}");
    }
    Ok(exit::OK)
}

/// Lines of the round log `round` prints when the agent failed.
const ROUND_TAIL_LINES: usize = 20;
/// At most this many characters of them.
const ROUND_TAIL_CHARS: usize = 4000;

async fn round(config: &std::path::Path, json: bool, phase: Option<&str>) -> Result<u8, CliError> {
    let mut stop = stop::install_signal_handlers().map_err(|e| CliError::failure(e.to_string()))?;
    let mut booted = serve::boot(config, false).await?;
    if let Some(name) = phase {
        let list = &booted.runner.config.phases.list;
        if !list.iter().any(|p| p == name) {
            let message = format!("--phase {name:?} is not in [phases] list {list:?}");
            serve::shutdown(booted).await;
            return Err(CliError {
                code: exit::USAGE,
                message,
            });
        }
    }
    let result = booted.runner.attempt(&mut stop, phase).await;
    let hint = booted.runner.config.monitor.auth_fail_hint.clone();
    serve::shutdown(booted).await;
    let (code, summary) = match result? {
        Attempt::Ran(ran) => round_ran(&ran, hint),
        Attempt::NotStarted(verdict) => (exit::TEMPFAIL, round_not_started(verdict)),
        Attempt::Unhealthy(pressure) => {
            eprintln!(
                "agent-runner: round deferred: host health {}: {}",
                pressure.signal, pressure.message
            );
            (
                exit::TEMPFAIL,
                RoundSummary::NotStarted {
                    started: false,
                    action: "defer",
                    hook: None,
                    defer_s: None,
                    reason: Some(format!(
                        "host health {}: {}",
                        pressure.signal, pressure.message
                    )),
                },
            )
        }
        Attempt::Stopped => {
            eprintln!("agent-runner: stopped before the agent started");
            (
                exit::INTERRUPTED,
                RoundSummary::NotStarted {
                    started: false,
                    action: "stopped",
                    hook: None,
                    defer_s: None,
                    reason: None,
                },
            )
        }
    };
    if json {
        println!("{}", serde_json::to_string(&summary).unwrap_or_default());
    }
    Ok(code)
}

/// `round` after the agent ran: the exit code (1 when the agent failed, 77 on a post-round
/// stop), what it prints on stderr and its `--json` summary.
fn round_ran(ran: &Ran, hint: Option<String>) -> (u8, RoundSummary) {
    let agent_exit = &ran.exit;
    // Exit 1 only for an agent that failed by itself; a round ended by its budget exits 0,
    // as in the reference system (docs/reference-system.md, "CLI"): the round ran and was
    // recorded (`round_timeout_kill`), and the reason is still printed below.
    let timed_out = agent_exit.cause == crate::runtime::agent::process::ExitCause::Timeout;
    let mut code = if agent_exit.is_clean() || timed_out {
        exit::OK
    } else {
        exit::FAILURE
    };
    if !agent_exit.is_clean() {
        // The reason is usually in the agent's last words (docs/operations.md,
        // "Agent preconditions"). They go to the operator's terminal with their escapes
        // shown, not obeyed (`printable`); the log file keeps the agent's bytes.
        let tail = crate::runtime::cycle::round::log_tail(
            &ran.log_path,
            ROUND_TAIL_LINES,
            ROUND_TAIL_CHARS,
        );
        eprintln!(
            "agent-runner: round {}: the agent ended {} after {:.1} s; the end of {}:\n{}",
            ran.round_num,
            match (agent_exit.exit_code, agent_exit.signal) {
                (Some(code), _) => format!("with exit code {code}"),
                (None, Some(signal)) => format!("by signal {signal}"),
                _ => agent_exit.cause.as_str().to_owned(),
            },
            agent_exit.duration.as_secs_f64(),
            ran.log_path.display(),
            agent_runner_protocol::printable::printable(&tail, true)
        );
    }
    for (refusal, count) in &ran.egress_refused {
        let times = if *count > 1 {
            format!(" ({count} times)")
        } else {
            String::new()
        };
        eprintln!(
            "agent-runner: round {}: {}{times}",
            ran.round_num,
            refusal.sentence()
        );
    }
    for sentence in &ran.endpoints_refused {
        eprintln!("agent-runner: round {}: {sentence}", ran.round_num);
    }
    let sandboxed = crate::runtime::cycle::serve::sandbox_failure(ran).is_some();
    match &ran.post_round {
        PostRound::BackOff { .. } if sandboxed => {
            eprintln!("agent-runner: the round failed on the agent sandbox, not the provider's network; serve would not back off");
        }
        PostRound::Stop { hook, message, .. } => {
            let hint = hint.map(|h| format!("; {h}")).unwrap_or_default();
            eprintln!("agent-runner: {message} (post-round hook {hook}){hint}");
            code = exit::NOPERM;
        }
        PostRound::BackOff { kind, message, .. } => {
            eprintln!(
                "agent-runner: {message} ({}); serve would back off before the next round",
                kind.as_str()
            );
        }
        PostRound::Continue => {}
    }
    let summary = RoundSummary::Ran {
        round_num: ran.round_num,
        exit_code: agent_exit.exit_code,
        exit_cause: agent_exit.cause.as_str(),
        duration_s: agent_exit.duration.as_secs_f64(),
        dirty_outcome: ran.dirty.as_ref().map(|d| d.as_str()),
        egress_refused: ran
            .egress_refused
            .iter()
            .map(|(r, _)| r.sentence())
            .collect(),
    };
    (code, summary)
}

/// `round` when a spawn hook deferred or skipped it: what it prints and its summary.
fn round_not_started(verdict: Verdict) -> RoundSummary {
    match verdict {
        Verdict::Defer {
            hook,
            defer_s,
            reason,
        } => {
            eprintln!("agent-runner: round deferred by hook {hook} for {defer_s} s: {reason}");
            RoundSummary::NotStarted {
                started: false,
                action: "defer",
                hook: Some(hook.to_string()),
                defer_s: Some(defer_s),
                reason: Some(reason),
            }
        }
        Verdict::Skip { hook, reason } => {
            eprintln!("agent-runner: round skipped by hook {hook}: {reason}");
            RoundSummary::NotStarted {
                started: false,
                action: "skip",
                hook: Some(hook.to_string()),
                defer_s: None,
                reason: Some(reason),
            }
        }
        Verdict::Proceed => unreachable!("proceed always runs the agent"),
    }
}
