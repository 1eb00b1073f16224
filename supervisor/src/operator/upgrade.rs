//! `upgrade --binary PATH [--no-restart] [--timeout S]`: replace the installed agent-runner
//! binary (the one running this command) with a new build, restart the project's service
//! on it, and put the old one back by itself when the new one does not come up
//! (docs/operations.md, "upgrade").
//!
//! Steps: the new binary is copied beside the installed one and checked there (its
//! `--version` says `agent-runner <version>`; its `doctor` on this project's config exits
//! 0); the installed file is kept as `<name>.previous` and the copy renamed over it
//! ([`super::binary_swap`]); the service is restarted (the systemd unit `install` wrote,
//! when it is installed and active; else a `serve` holding the project lock is stopped
//! gracefully, as `restart` does, and started again from the installed path); the new
//! `serve` must take the project lock, answer `status` on its control socket and still
//! hold the lock [`SETTLE`] later, all within `--timeout`. When it does not, `.previous`
//! is renamed back and the service restarted once more.
//!
//! Exit codes: 0 upgraded (or swapped only: `--no-restart`, or no service running);
//! [`exit::UPGRADE_REFUSED`] (3) refused before the swap, nothing changed; 1 rolled back,
//! the old binary runs again (the reference system's code); [`exit::ROLLBACK_FAILED`] (4)
//! the rollback did not bring a `serve` up either; 78 the config does not load.
//! Events: `service_upgraded`, `package_upgraded` (swap without restart),
//! `service_upgrade_rolled_back`, `service_upgrade_rollback_failed` (the reference's names
//! and fields).

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::binary_swap::{self, SwapError};
use super::control::{self, StatusDoc};
use super::install::{self, Scope};
use crate::config::Config;
use crate::exit::{self, CliError};
use crate::record::events::{Event, EventLog};
use crate::record::state::lock_holder;
use crate::record::stop::StopLevel;

/// How long a new `serve` must keep the project lock after it first answered `status`.
pub(crate) const SETTLE: Duration = Duration::from_secs(3);

/// How long the new binary's `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the new binary's `doctor` may take (it hashes every pinned host).
const DOCTOR_TIMEOUT: Duration = Duration::from_secs(120);

/// The verb's options.
#[derive(Debug)]
pub(crate) struct UpgradeOptions {
    /// The new binary (a symbolic link is followed).
    pub binary: PathBuf,
    /// Swap only; the running service keeps the old binary until its next start.
    pub no_restart: bool,
    /// Bound on the new `serve` coming up once the old one has ended.
    pub timeout: Duration,
}

/// What `upgrade --json` prints.
#[derive(Debug, Serialize)]
pub(crate) struct UpgradeReport {
    /// `upgraded`, `swapped`, `refused`, `rolled_back` or `rollback_failed`.
    pub outcome: &'static str,
    /// The installed binary (the path replaced).
    pub binary: PathBuf,
    /// Where the old binary is kept (absent when refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<PathBuf>,
    /// The version of the binary running this command.
    pub from_version: String,
    /// The new binary's version, once checked.
    pub to_version: Option<String>,
    /// `systemd-user`, `systemd-system`, `serve` or `none`.
    pub service: &'static str,
    /// The `serve` running at the end, when one was restarted.
    pub pid: Option<u32>,
    /// Why it was refused or rolled back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Seconds the whole upgrade took.
    pub duration_s: f64,
}

/// The service to restart on the new binary.
#[derive(Debug)]
enum Service {
    /// The project's systemd unit (`install`), active.
    Unit { scope: Scope, name: String },
    /// A `serve` holding the project lock, started by `start`, by hand or by a unit
    /// systemd does not manage here.
    Serve,
    /// Nothing runs: the swap is all there is to do.
    None,
}

impl Service {
    fn label(&self) -> &'static str {
        match self {
            Service::Unit {
                scope: Scope::User, ..
            } => "systemd-user",
            Service::Unit { .. } => "systemd-system",
            Service::Serve => "serve",
            Service::None => "none",
        }
    }
}

/// Why a step of `upgrade` failed, in the words the report's `reason` and the events'
/// `failure_reason` carry (one line; the step that failed says the rest).
#[derive(Debug, thiserror::Error)]
enum UpgradeError {
    /// The project's active unit runs another binary than the installed one.
    #[error(
        "the unit {} does not run {} (see its ExecStart=): upgrade the binary it runs",
        template.display(),
        installed.display()
    )]
    UnitRunsOther {
        /// The unit template `install` wrote.
        template: PathBuf,
        /// The binary this command runs from.
        installed: PathBuf,
    },
    /// `/proc/<pid>/exe` of the `serve` holding the lock cannot be read.
    #[error("cannot tell which binary serve (pid {pid}) runs: {source}")]
    ServeExeUnknown {
        /// The lock holder.
        pid: u32,
        /// Why the link cannot be read.
        source: std::io::Error,
    },
    /// The `serve` holding the lock runs another binary than the installed one.
    #[error("serve (pid {pid}) runs {exe}, not {}: run that binary's upgrade", installed.display())]
    ServeRunsOther {
        /// The lock holder.
        pid: u32,
        /// The binary it runs.
        exe: String,
        /// The binary this command runs from.
        installed: PathBuf,
    },
    /// The new binary could not be started.
    #[error("cannot run it: {0}")]
    CannotRun(std::io::Error),
    /// Waiting for the new binary's output failed.
    #[error("{0}")]
    Wait(std::io::Error),
    /// The new binary did not answer within its bound.
    #[error("no answer within {} s", .0.as_secs())]
    NoAnswer(Duration),
    /// The new binary exited unsuccessfully; the last line it wrote.
    #[error("{status} ({tail})")]
    Failed {
        /// How it exited.
        status: std::process::ExitStatus,
        /// The last line of its stderr (of its stdout when stderr is empty, for `doctor`).
        tail: String,
    },
    /// `--version` printed something else than `agent-runner <version>`.
    #[error("printed {0:?}, not \"agent-runner <version>\"")]
    NotAVersion(String),
    /// `systemctl restart` could not be run.
    #[error("systemctl restart {name}: {source}")]
    SystemctlUnrun {
        /// The unit.
        name: String,
        /// Why it could not be run.
        source: std::io::Error,
    },
    /// `systemctl restart` failed.
    #[error("systemctl restart {name}: {status}")]
    SystemctlFailed {
        /// The unit.
        name: String,
        /// How `systemctl` exited.
        status: std::process::ExitStatus,
    },
    /// The unit restarted but no new `serve` took the project lock in time.
    #[error("{name} did not bring up a new serve within {} s", timeout.as_secs())]
    UnitNotUp {
        /// The unit.
        name: String,
        /// `--timeout`.
        timeout: Duration,
    },
    /// The new `serve` could not be started (the message of `control::spawn_serve`).
    #[error("{0}")]
    Spawn(String),
    /// The running `serve` did not let go of the lock in time.
    #[error("the running serve (pid {pid}) did not end within {} s", wait.as_secs())]
    OldNotEnded {
        /// The `serve` asked to stop.
        pid: u32,
        /// How long it was given.
        wait: Duration,
    },
    /// The new `serve` let go of the lock (it ended) while starting.
    #[error("the new serve (pid {0}) ended during start-up")]
    NewEnded(u32),
    /// The new `serve` never answered `status` as running.
    #[error("the new serve (pid {0}) did not answer on its control socket in time")]
    NewSilent(u32),
}

/// `upgrade`: see the module doc. Prints the report (one JSON object with `json`).
///
/// Errors: 78 when the config does not load; every other failure is a report with its
/// exit code.
pub(crate) async fn run(
    config_path: &Path,
    options: UpgradeOptions,
    json: bool,
) -> Result<u8, CliError> {
    let config = crate::config::load(config_path)?;
    let started = Instant::now();
    let mut report = UpgradeReport {
        outcome: "refused",
        binary: PathBuf::new(),
        previous: None,
        from_version: env!("CARGO_PKG_VERSION").to_owned(),
        to_version: None,
        service: "none",
        pid: None,
        reason: None,
        duration_s: 0.0,
    };
    let code = upgrade(&config, &options, &mut report).await;
    report.duration_s = started.elapsed().as_secs_f64();
    record_outcome(&config, &report);
    if json {
        println!("{}", serde_json::to_string(&report).unwrap_or_default());
    } else {
        print!("{}", render(&report));
    }
    Ok(code)
}

/// The steps; fills `report` and returns the exit code.
async fn upgrade(config: &Config, options: &UpgradeOptions, report: &mut UpgradeReport) -> u8 {
    let refuse = |report: &mut UpgradeReport, reason: String| {
        report.outcome = "refused";
        report.reason = Some(reason);
        exit::UPGRADE_REFUSED
    };
    // The path this binary was started from, resolved now: once renamed over,
    // /proc/self/exe reads "<path> (deleted)".
    let installed = match std::env::current_exe().and_then(|p| p.canonicalize()) {
        Ok(path) => path,
        Err(e) => return refuse(report, format!("cannot tell which binary runs: {e}")),
    };
    report.binary = installed.clone();
    let service = match detect_service(config, &installed) {
        Ok(service) => service,
        Err(reason) => return refuse(report, reason.to_string()),
    };
    report.service = service.label();
    let dir = installed.parent().unwrap_or(Path::new("/"));
    let _lock = match binary_swap::lock(dir) {
        Ok(lock) => lock,
        Err(SwapError(reason)) => return refuse(report, reason),
    };
    let staged = match binary_swap::stage(&options.binary, &installed) {
        Ok(staged) => staged,
        Err(SwapError(reason)) => return refuse(report, reason),
    };
    match check_version(&staged.path).await {
        Ok(version) => report.to_version = Some(version),
        Err(reason) => return refuse(report, format!("the new binary's --version: {reason}")),
    }
    if let Err(reason) = check_doctor(&staged.path, &config.path).await {
        return refuse(report, format!("the new binary's doctor: {reason}"));
    }
    if let Err(SwapError(reason)) = binary_swap::swap(staged, &installed) {
        return refuse(report, reason);
    }
    report.previous = Some(binary_swap::previous_path(&installed));
    if options.no_restart || matches!(service, Service::None) {
        report.outcome = "swapped";
        return exit::OK;
    }
    match restart(
        config,
        &service,
        &installed,
        options.timeout,
        StopLevel::Graceful,
    )
    .await
    {
        Ok(pid) => {
            report.outcome = "upgraded";
            report.pid = Some(pid);
            exit::OK
        }
        Err(reason) => {
            report.reason = Some(reason.to_string());
            report.outcome = "rollback_failed";
            if let Err(SwapError(e)) = binary_swap::restore(&installed) {
                report.reason = Some(format!(
                    "{}; restoring the old binary: {e}",
                    reason_of(report)
                ));
                return exit::ROLLBACK_FAILED;
            }
            match restart(
                config,
                &service,
                &installed,
                options.timeout,
                StopLevel::Immediate,
            )
            .await
            {
                Ok(pid) => {
                    report.outcome = "rolled_back";
                    report.pid = Some(pid);
                    exit::FAILURE
                }
                Err(e) => {
                    report.reason = Some(format!("{}; after the rollback: {e}", reason_of(report)));
                    exit::ROLLBACK_FAILED
                }
            }
        }
    }
}

fn reason_of(report: &UpgradeReport) -> String {
    report.reason.clone().unwrap_or_default()
}

/// Which service runs this project, refusing when it runs another binary than `installed`
/// (restarting it would change which binary it runs, not upgrade it).
fn detect_service(config: &Config, installed: &Path) -> Result<Service, UpgradeError> {
    if install::systemd_running() {
        for scope in [Scope::User, Scope::System] {
            if !install::project_file(config, scope).exists() {
                continue;
            }
            let name = install::unit_name(config);
            if !unit_active(scope, &name) {
                continue;
            }
            let template = scope.unit_dir().join(install::TEMPLATE);
            let text = std::fs::read_to_string(&template).unwrap_or_default();
            let exec = format!(
                "ExecStart={} ",
                install::quote(&installed.display().to_string())
            );
            if !text.contains(&exec) {
                return Err(UpgradeError::UnitRunsOther {
                    template,
                    installed: installed.to_owned(),
                });
            }
            return Ok(Service::Unit { scope, name });
        }
    }
    let Some(pid) = lock_holder(&config.runtime.state_dir) else {
        return Ok(Service::None);
    };
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .map_err(|source| UpgradeError::ServeExeUnknown { pid, source })?;
    let exe = exe.to_string_lossy();
    let exe = exe.strip_suffix(" (deleted)").unwrap_or(&exe);
    if Path::new(exe) != installed {
        return Err(UpgradeError::ServeRunsOther {
            pid,
            exe: exe.to_owned(),
            installed: installed.to_owned(),
        });
    }
    Ok(Service::Serve)
}

/// `systemctl [--user] is-active NAME` says `active`.
fn unit_active(scope: Scope, name: &str) -> bool {
    std::process::Command::new("systemctl")
        .args(scope.systemctl_args())
        .args(["is-active", "--quiet", name])
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `exe ARGS…` with stdin closed, its output captured, killed after `timeout`.
async fn run_checked(
    exe: &Path,
    args: &[&std::ffi::OsStr],
    timeout: Duration,
) -> Result<std::process::Output, UpgradeError> {
    let child = tokio::process::Command::new(exe)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(UpgradeError::CannotRun)?;
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(e)) => Err(UpgradeError::Wait(e)),
        Err(_) => Err(UpgradeError::NoAnswer(timeout)),
    }
}

/// The last line of `bytes`, trimmed, at most 300 characters.
fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line = text.trim().lines().last().unwrap_or("").trim();
    line.chars().take(300).collect()
}

/// `exe --version` exits 0 printing `agent-runner <version>`; returns the version.
async fn check_version(exe: &Path) -> Result<String, UpgradeError> {
    let output = run_checked(exe, &["--version".as_ref()], VERSION_TIMEOUT).await?;
    if !output.status.success() {
        return Err(UpgradeError::Failed {
            status: output.status,
            tail: tail(&output.stderr),
        });
    }
    let text = String::from_utf8_lossy(&output.stdout);
    match text.trim().split_once(' ') {
        Some(("agent-runner", version)) if !version.trim().is_empty() => {
            Ok(version.trim().to_owned())
        }
        _ => Err(UpgradeError::NotAVersion(
            text.trim().chars().take(100).collect(),
        )),
    }
}

/// `exe --config CONFIG doctor` exits 0 (1: a check fails; 78: serve would refuse to boot).
async fn check_doctor(exe: &Path, config: &Path) -> Result<(), UpgradeError> {
    let args = ["--config".as_ref(), config.as_os_str(), "doctor".as_ref()];
    let output = run_checked(exe, &args, DOCTOR_TIMEOUT).await?;
    if output.status.success() {
        return Ok(());
    }
    let mut why = tail(&output.stderr);
    if why.is_empty() {
        why = tail(&output.stdout);
    }
    Err(UpgradeError::Failed {
        status: output.status,
        tail: why,
    })
}

/// Restarts `service` on the binary now at `installed` and waits for it to come up; returns
/// the new `serve`'s pid. `level`: how the running `serve` is stopped (graceful for the
/// upgrade, as `restart` does; immediate for the rollback, when what runs is the failed
/// new binary).
///
/// Errors: in words, why it is not up (the old one did not end, the new one exited or did
/// not answer within `timeout`).
async fn restart(
    config: &Config,
    service: &Service,
    installed: &Path,
    timeout: Duration,
    level: StopLevel,
) -> Result<u32, UpgradeError> {
    let state_dir = &config.runtime.state_dir;
    let old = lock_holder(state_dir);
    match service {
        Service::Unit { scope, name } => {
            let status = std::process::Command::new("systemctl")
                .args(scope.systemctl_args())
                .args(["restart", name])
                .status()
                .map_err(|source| UpgradeError::SystemctlUnrun {
                    name: name.clone(),
                    source,
                })?;
            if !status.success() {
                return Err(UpgradeError::SystemctlFailed {
                    name: name.clone(),
                    status,
                });
            }
            let deadline = Instant::now() + timeout;
            loop {
                if let Some(pid) = unit_main_pid(*scope, name).filter(|p| Some(*p) != old) {
                    if lock_holder(state_dir) == Some(pid) {
                        return wait_up(state_dir, pid, deadline).await;
                    }
                }
                if Instant::now() >= deadline {
                    return Err(UpgradeError::UnitNotUp {
                        name: name.clone(),
                        timeout,
                    });
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Service::Serve | Service::None => {
            if old.is_some() {
                stop_running(config, level).await?;
            }
            let pid = control::spawn_serve(config, installed)
                .await
                .map_err(|e| UpgradeError::Spawn(e.message))?;
            wait_up(state_dir, pid, Instant::now() + timeout).await
        }
    }
}

/// Stops the `serve` holding the project lock and waits until it has let go: at most the
/// round budget (graceful), the agent's grace and a minute, as `restart` does.
async fn stop_running(config: &Config, level: StopLevel) -> Result<(), UpgradeError> {
    let state_dir = &config.runtime.state_dir;
    let Ok(reply) = control::ask_stop(state_dir, level).await else {
        return Ok(());
    };
    let wait = control::restart_wait(config, level == StopLevel::Immediate);
    let deadline = Instant::now() + wait;
    while lock_holder(state_dir).is_some() {
        if Instant::now() >= deadline {
            return Err(UpgradeError::OldNotEnded {
                pid: reply.pid,
                wait,
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// `systemctl show -p MainPID --value NAME`, when not 0.
fn unit_main_pid(scope: Scope, name: &str) -> Option<u32> {
    let out = std::process::Command::new("systemctl")
        .args(scope.systemctl_args())
        .args(["show", "-p", "MainPID", "--value", name])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .ok()
        .filter(|pid| *pid != 0)
}

/// Waits until `pid` holds the project lock, answers `status` on the control socket as
/// running, and still holds the lock [`SETTLE`] later; by `deadline`.
async fn wait_up(state_dir: &Path, pid: u32, deadline: Instant) -> Result<u32, UpgradeError> {
    loop {
        if lock_holder(state_dir) != Some(pid) {
            return Err(UpgradeError::NewEnded(pid));
        }
        let answered = control::request::<StatusDoc>(state_dir, "status").await;
        if answered.is_some_and(|s| s.running && s.pid == Some(pid)) {
            break;
        }
        if Instant::now() >= deadline {
            return Err(UpgradeError::NewSilent(pid));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(SETTLE).await;
    if lock_holder(state_dir) != Some(pid) {
        return Err(UpgradeError::NewEnded(pid));
    }
    Ok(pid)
}

/// Records the outcome's event (none when refused: nothing changed).
fn record_outcome(config: &Config, report: &UpgradeReport) {
    let to_version = report.to_version.clone().unwrap_or_default();
    let event = match report.outcome {
        "upgraded" => Event::ServiceUpgraded {
            from_version: report.from_version.clone(),
            to_version,
            duration_s: report.duration_s,
            binary: report.binary.clone(),
            pid: report.pid,
        },
        "swapped" => Event::PackageUpgraded {
            from_version: report.from_version.clone(),
            to_version,
            restart_deferred: true,
            binary: report.binary.clone(),
        },
        "rolled_back" => Event::ServiceUpgradeRolledBack {
            attempted_version: to_version,
            restored_version: report.from_version.clone(),
            failure_reason: cap(&reason_of(report)),
            duration_s: report.duration_s,
            binary: report.binary.clone(),
            pid: report.pid,
        },
        "rollback_failed" => Event::ServiceUpgradeRollbackFailed {
            attempted_version: to_version,
            restore_target_version: report.from_version.clone(),
            failure_reason: cap(&reason_of(report)),
            binary: report.binary.clone(),
        },
        _ => return,
    };
    EventLog::new(&config.runtime.state_dir)
        .linked_in(crate::record::agent_changes::held_log_dir(config))
        .emit(event);
}

/// The first 200 characters (the reference's cap on `failure_reason`).
fn cap(text: &str) -> String {
    text.chars().take(200).collect()
}

/// The human form of the report.
fn render(report: &UpgradeReport) -> String {
    let to = report.to_version.as_deref().unwrap_or("?");
    let reason = report.reason.as_deref().unwrap_or("");
    let previous = report
        .previous
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    match report.outcome {
        "upgraded" => format!(
            "upgraded {} {} → {to}; serve runs it (pid {}); the old binary is kept as {previous}\n",
            report.binary.display(),
            report.from_version,
            report.pid.unwrap_or(0)
        ),
        "swapped" => format!(
            "installed {to} at {} (old binary kept as {previous}); {} restarted: the new binary runs from the next start\n",
            report.binary.display(),
            if report.service == "none" { "nothing was running, nothing" } else { "not" }
        ),
        "rolled_back" => format!(
            "the new binary ({to}) did not come up: {reason}\nrolled back: {} is the old binary again and serve runs it (pid {})\n",
            report.binary.display(),
            report.pid.unwrap_or(0)
        ),
        "rollback_failed" => format!(
            "the new binary ({to}) did not come up, and the rollback did not either: {reason}\nthe old binary is at {} (and {previous}); nothing is running: look at the state dir's serve.out\n",
            report.binary.display()
        ),
        _ => format!("upgrade refused, nothing changed: {reason}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn the_errors_say_what_the_strings_said() {
        let status = std::process::ExitStatus::from_raw(256);
        let io = || std::io::Error::from_raw_os_error(libc::ENOENT);
        for (error, said) in [
            (
                UpgradeError::UnitRunsOther {
                    template: "/etc/systemd/system/agent-runner@.service".into(),
                    installed: "/usr/bin/agent-runner".into(),
                },
                "the unit /etc/systemd/system/agent-runner@.service does not run /usr/bin/agent-runner (see its ExecStart=): upgrade the binary it runs",
            ),
            (
                UpgradeError::ServeExeUnknown { pid: 7, source: io() },
                "cannot tell which binary serve (pid 7) runs: No such file or directory (os error 2)",
            ),
            (
                UpgradeError::ServeRunsOther {
                    pid: 7,
                    exe: "/opt/agent-runner".into(),
                    installed: "/usr/bin/agent-runner".into(),
                },
                "serve (pid 7) runs /opt/agent-runner, not /usr/bin/agent-runner: run that binary's upgrade",
            ),
            (
                UpgradeError::CannotRun(io()),
                "cannot run it: No such file or directory (os error 2)",
            ),
            (UpgradeError::Wait(io()), "No such file or directory (os error 2)"),
            (
                UpgradeError::NoAnswer(Duration::from_secs(10)),
                "no answer within 10 s",
            ),
            (
                UpgradeError::Failed {
                    status,
                    tail: "bad".into(),
                },
                "exit status: 1 (bad)",
            ),
            (
                UpgradeError::NotAVersion("agent-runer 1".into()),
                "printed \"agent-runer 1\", not \"agent-runner <version>\"",
            ),
            (
                UpgradeError::SystemctlUnrun {
                    name: "u".into(),
                    source: io(),
                },
                "systemctl restart u: No such file or directory (os error 2)",
            ),
            (
                UpgradeError::SystemctlFailed {
                    name: "u".into(),
                    status,
                },
                "systemctl restart u: exit status: 1",
            ),
            (
                UpgradeError::UnitNotUp {
                    name: "u".into(),
                    timeout: Duration::from_secs(60),
                },
                "u did not bring up a new serve within 60 s",
            ),
            (UpgradeError::Spawn("cannot start serve".into()), "cannot start serve"),
            (
                UpgradeError::OldNotEnded {
                    pid: 7,
                    wait: Duration::from_secs(90),
                },
                "the running serve (pid 7) did not end within 90 s",
            ),
            (
                UpgradeError::NewEnded(8),
                "the new serve (pid 8) ended during start-up",
            ),
            (
                UpgradeError::NewSilent(8),
                "the new serve (pid 8) did not answer on its control socket in time",
            ),
        ] {
            assert_eq!(error.to_string(), said);
        }
    }
}
