//! `install [--system] [--force] [--dry-run] [--monitor]` / `uninstall [--system]`: a
//! systemd unit that runs `serve` for one project, and with `--monitor` (the reference
//! system's flag) its monitor sidekick, `agent-runner-monitor@<project>.service`, running
//! `monitor` (its anomaly detectors, which stop `serve` on the alerts in
//! `[monitor] auto_stop_on`) from a second template, `agent-runner-monitor@.service`,
//! with the same kind of drop-in.
//!
//! One template, `agent-runner@.service`, serves every project of the machine; each project
//! is an instance, `agent-runner@<project>.service`, whose drop-in `project.conf` names its
//! config (`AGENT_RUNNER_CONFIG`), work dir and stop timeout. The template bakes in the
//! absolute binary path, restarts `serve` on failure but not on the exits that mean "stay
//! stopped" ([`exit::STAY_STOPPED`]: 2, 70, 75, 77, 78, 79, 80; a memory loop, 71, and an
//! environmental failure, 76, do restart), with a start limit (5 starts in 10 minutes). It stops the whole control group (agent and hosts included) on `systemctl stop`. User units go to
//! `$XDG_CONFIG_HOME/systemd/user` (default `~/.config/systemd/user`), `--system` units to
//! `/etc/systemd/system`.
//!
//! Where systemd is not running (no `/run/systemd/system`, as in most containers),
//! `install` still writes the unit, says clearly that systemd is not running and that
//! nothing was enabled, and exits 0; `uninstall` removes the file the same way.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::Config;
use crate::exit::{self, CliError};

/// Where the unit goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The invoking user's systemd instance (`systemctl --user`).
    User,
    /// The system instance (`/etc/systemd/system`).
    System,
}

impl Scope {
    /// `systemctl` arguments selecting the instance.
    pub(crate) fn systemctl_args(self) -> &'static [&'static str] {
        match self {
            Scope::User => &["--user"],
            Scope::System => &[],
        }
    }

    /// The unit directory of this scope.
    pub(crate) fn unit_dir(self) -> PathBuf {
        match self {
            Scope::System => PathBuf::from("/etc/systemd/system"),
            Scope::User => std::env::var_os("XDG_CONFIG_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")))
                .unwrap_or_else(|| PathBuf::from(".config"))
                .join("systemd/user"),
        }
    }
}

/// The template unit every project shares: `agent-runner@.service`.
pub(crate) const TEMPLATE: &str = "agent-runner@.service";

/// The monitor sidekick's template: `agent-runner-monitor@.service`.
pub(crate) const MONITOR_TEMPLATE: &str = "agent-runner-monitor@.service";

/// The monitor sidekick's instance: `agent-runner-monitor@<project>.service`.
fn monitor_unit_name(config: &Config) -> String {
    unit_name(config).replacen("agent-runner@", "agent-runner-monitor@", 1)
}

/// The monitor sidekick instance's drop-in (as [`project_file`]).
fn monitor_project_file(config: &Config, scope: Scope) -> PathBuf {
    scope
        .unit_dir()
        .join(format!("{}.d", monitor_unit_name(config)))
        .join("project.conf")
}

/// The monitor sidekick template's text: `monitor` of the config named by the instance's
/// drop-in, after and alongside the project's `serve`, restarted always (it only reads
/// and alerts; the reference system's sidekick does the same).
fn render_monitor_template(binary: &Path, scope: Scope) -> String {
    let wanted_by = match scope {
        Scope::User => "default.target",
        Scope::System => "multi-user.target",
    };
    format!(
        "# Written by `agent-runner install --monitor`: the monitor sidekick of\n\
         # agent-runner@<project>.service, configured by its drop-in project.conf.\n\
         [Unit]\n\
         Description=agent-runner monitor for %i\n\
         After=agent-runner@%i.service\n\
         \n\
         [Service]\n\
         Type=exec\n\
         ExecStart={binary} --config ${{AGENT_RUNNER_CONFIG}} monitor\n\
         Restart=always\n\
         RestartSec={restart_s}\n\
         \n\
         [Install]\n\
         WantedBy={wanted_by}\n",
        binary = quote(&binary.display().to_string()),
        restart_s = RESTART_DELAY_S,
    )
}

/// The project's instance of the template: `agent-runner@<project>.service`, the project
/// name reduced to `[A-Za-z0-9_-]` (other characters become `-`).
pub(crate) fn unit_name(config: &Config) -> String {
    let project: String = config
        .project
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("agent-runner@{project}.service")
}

/// The instance's drop-in, which names the project's config (systemd.unit(5),
/// "drop-in"): `<unit dir>/agent-runner@<project>.service.d/project.conf`.
pub(crate) fn project_file(config: &Config, scope: Scope) -> PathBuf {
    scope
        .unit_dir()
        .join(format!("{}.d", unit_name(config)))
        .join("project.conf")
}

/// The instance's unit file where a script looks for it (the reference system writes a
/// whole unit there, docs/reference-system.md, "Deviations", 1): `<unit dir>/<instance>`,
/// a symbolic link to the template (`agent-runner@.service`), which systemd loads as the
/// template's instance, drop-ins included (systemd.unit(5), "Aliases"). The template stays
/// the one place of the binary path and the restart policy.
fn instance_link(scope: Scope, instance: &str) -> PathBuf {
    scope.unit_dir().join(instance)
}

/// Links `instance` to its `template` in `scope`'s unit dir ([`instance_link`]); returns
/// the link when it made one. A link to `template` already there is kept; anything else
/// there (a reference system's whole unit file, which `install` refuses to replace without
/// `--force` before writing anything) is replaced.
///
/// Errors: exit 1 when the file there cannot be removed or the link cannot be made.
fn link_instance(
    scope: Scope,
    instance: &str,
    template: &str,
) -> Result<Option<PathBuf>, CliError> {
    let link = instance_link(scope, instance);
    if std::fs::read_link(&link).is_ok_and(|t| t == Path::new(template)) {
        return Ok(None);
    }
    if link.symlink_metadata().is_ok() {
        std::fs::remove_file(&link)
            .map_err(|e| CliError::failure(format!("cannot remove {}: {e}", link.display())))?;
    }
    std::os::unix::fs::symlink(template, &link).map_err(|e| {
        CliError::failure(format!("cannot link {} to {template}: {e}", link.display()))
    })?;
    Ok(Some(link))
}

/// Removes `instance`'s link ([`instance_link`]) when it is ours (a symbolic link); a
/// whole unit file there is not ours and stays (`doctor` names it).
fn unlink_instance(scope: Scope, instance: &str) -> Option<PathBuf> {
    let link = instance_link(scope, instance);
    let ours = std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink());
    (ours && std::fs::remove_file(&link).is_ok()).then_some(link)
}

/// Whether systemd manages this machine (`/run/systemd/system` exists: sd_booted(3)).
pub(crate) fn systemd_running() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// A word for a systemd command line: double-quoted, `\` and `"` escaped, `%` doubled
/// (systemd.service(5) "Command lines", systemd.unit(5) "Specifiers").
pub(crate) fn quote(word: &str) -> String {
    let escaped = word.replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"{}\"", specifiers_escaped(&escaped))
}

/// A value taken verbatim by systemd (a path setting such as `WorkingDirectory=`, a
/// description): `%` doubled, no quotes — quotes would be part of the path, which systemd
/// then rejects as not absolute (systemd.unit(5) "Specifiers").
fn specifiers_escaped(text: &str) -> String {
    text.replace('%', "%%")
}

/// Seconds systemd waits before restarting a failed `serve` (`RestartSec=`).
pub(crate) const RESTART_DELAY_S: u64 = 10;
/// The start limit's window in seconds (`StartLimitIntervalSec=`): with
/// [`START_LIMIT_BURST`], a `serve` that fails 5 times within 10 minutes stays failed.
pub(crate) const START_LIMIT_INTERVAL_S: u64 = 600;
/// Starts allowed within [`START_LIMIT_INTERVAL_S`] (`StartLimitBurst=`).
pub(crate) const START_LIMIT_BURST: u32 = 5;

/// The template's text: `serve` of the config named by the instance's drop-in
/// (`AGENT_RUNNER_CONFIG`), run by `binary` (absolute).
pub(crate) fn render_template(binary: &Path, scope: Scope) -> String {
    let wanted_by = match scope {
        Scope::User => "default.target",
        Scope::System => "multi-user.target",
    };
    format!(
        "# Written by `agent-runner install`: one instance per project,\n\
         # agent-runner@<project>.service, configured by its drop-in project.conf.\n\
         [Unit]\n\
         Description=agent-runner serve for %i\n\
         After=network-online.target\n\
         Wants=network-online.target\n\
         # At most {burst} starts in {interval} s, then the unit stays failed until\n\
         # `systemctl reset-failed` (a serve that keeps failing is not retried for ever).\n\
         StartLimitIntervalSec={interval}\n\
         StartLimitBurst={burst}\n\
         \n\
         [Service]\n\
         Type=exec\n\
         ExecStart={binary} --config ${{AGENT_RUNNER_CONFIG}} serve\n\
         Restart=on-failure\n\
         RestartSec={restart_s}\n\
         # Exits that mean \"stay stopped\" (docs/operations.md, Leaving it unattended): 75 a\n\
         # deliberate stop (crash loop, stalled, transient_error_action = \"stop\", auto-stop),\n\
         # 70 a memory loop that restarts did not cure, 77 a login failure, 78 a permanent\n\
         # config error, 2 bad usage. Restarting cannot help until someone acts; the unit\n\
         # shows failed with the code. 71 (a memory loop) and 76 (the state dir or disk\n\
         # failed) restart: a new start may find the host healed.\n\
         RestartPreventExitStatus={stay_stopped}\n\
         KillMode=control-group\n\
         # The unit's cgroup is the supervisor's to divide: each round runs in a child\n\
         # cgroup (memory accounted, OOM kills named; docs/operations.md, Round cgroups).\n\
         Delegate=yes\n\
         KillSignal=SIGTERM\n\
         \n\
         [Install]\n\
         WantedBy={wanted_by}\n",
        binary = quote(&binary.display().to_string()),
        stay_stopped = exit::STAY_STOPPED.map(|c| c.to_string()).join(" "),
        interval = START_LIMIT_INTERVAL_S,
        burst = START_LIMIT_BURST,
        restart_s = RESTART_DELAY_S,
    )
}

/// The instance drop-in of `config`: its config path, work dir and stop timeout.
///
/// `TimeoutStopSec` is the round budget plus 60 s, so a stop lets the running round
/// finish as `serve` promises before systemd escalates to SIGKILL.
pub(crate) fn render_project(config: &Config) -> String {
    format!(
        "# Written by `agent-runner install` for {project}; remove with `agent-runner uninstall`.\n\
         [Service]\n\
         Environment={env}\n\
         WorkingDirectory={work_dir}\n\
         TimeoutStopSec={stop_s}\n",
        project = config.project,
        env = quote(&format!("AGENT_RUNNER_CONFIG={}", config.path.display())),
        work_dir = specifiers_escaped(&config.runtime.work_dir.display().to_string()),
        stop_s = config.runtime.round_budget.as_secs() + 60,
    )
}

/// What `install` was asked to do.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InstallOptions {
    /// Where the unit goes.
    pub scope: Scope,
    /// Overwrite an existing unit.
    pub force: bool,
    /// Print the unit, write nothing.
    pub dry_run: bool,
    /// Also the monitor sidekick (`--monitor`).
    pub monitor: bool,
}

/// Installs (or, with `dry_run`, prints) the template and the project's drop-in; returns
/// the lines to print. The template is shared: it is rewritten when it differs (another
/// binary) only with `--force`; an existing drop-in for this project also needs `--force`.
///
/// Errors: exit 1 when a file exists (without `--force`), cannot be written, or
/// `systemctl` fails.
pub(crate) fn install(config: &Config, options: InstallOptions) -> Result<Vec<String>, CliError> {
    let binary = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| CliError::failure(format!("cannot find the agent-runner binary: {e}")))?;
    let template = render_template(&binary, options.scope);
    let template_path = options.scope.unit_dir().join(TEMPLATE);
    let project = render_project(config);
    let project_path = project_file(config, options.scope);
    // (template path, template text, drop-in path, drop-in text) per unit.
    let mut units = vec![(template_path, template, project_path, project.clone())];
    if options.monitor {
        units.push((
            options.scope.unit_dir().join(MONITOR_TEMPLATE),
            render_monitor_template(&binary, options.scope),
            monitor_project_file(config, options.scope),
            project,
        ));
    }
    let mut instances = vec![(unit_name(config), TEMPLATE)];
    if options.monitor {
        instances.push((monitor_unit_name(config), MONITOR_TEMPLATE));
    }
    if options.dry_run {
        let links = instances.iter().map(|(instance, template)| {
            format!(
                "# {} -> {template}",
                instance_link(options.scope, instance).display()
            )
        });
        return Ok(units
            .into_iter()
            .flat_map(|(tp, t, pp, p)| {
                [
                    format!("# {}", tp.display()),
                    t,
                    format!("# {}", pp.display()),
                    p,
                ]
            })
            .chain(links)
            .collect());
    }
    for (template_path, template, project_path, _) in &units {
        let same_template = std::fs::read_to_string(template_path).is_ok_and(|t| t == *template);
        for (path, exists) in [
            (template_path, template_path.exists() && !same_template),
            (project_path, project_path.exists()),
        ] {
            if exists && !options.force {
                return Err(CliError::failure(format!(
                    "{} already exists; pass --force to overwrite it",
                    path.display()
                )));
            }
        }
    }
    for (instance, template) in &instances {
        let link = instance_link(options.scope, instance);
        let ours = std::fs::read_link(&link).is_ok_and(|t| t == Path::new(template));
        if link.symlink_metadata().is_ok() && !ours && !options.force {
            return Err(CliError::failure(format!(
                "{} already exists (a reference system's unit file?); pass --force to replace it with a link to {template}",
                link.display()
            )));
        }
    }
    let mut lines = Vec::new();
    let files = units.iter().flat_map(|(tp, t, pp, p)| [(tp, t), (pp, p)]);
    for (path, text) in files {
        let parent = path.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(parent)
            .and_then(|_| std::fs::write(path, text))
            .map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))?;
        lines.push(format!("wrote {}", path.display()));
    }
    for (instance, template) in &instances {
        if let Some(link) = link_instance(options.scope, instance, template)? {
            lines.push(format!("linked {} to {template}", link.display()));
        }
    }
    let names: Vec<String> = instances.into_iter().map(|(name, _)| name).collect();
    let name = names.join(" ");
    if !systemd_running() {
        lines.push(format!(
            "systemd is not running on this machine (no /run/systemd/system): the unit was written but not enabled or started. Where systemd runs: `systemctl {}daemon-reload && systemctl {}enable --now {name}`; here, run `agent-runner serve` yourself.",
            flag(options.scope), flag(options.scope)
        ));
        return Ok(lines);
    }
    systemctl(options.scope, &["daemon-reload"])?;
    for unit in &names {
        systemctl(options.scope, &["enable", "--now", unit])?;
        lines.push(format!("enabled and started {unit}"));
    }
    Ok(lines)
}

/// Stops and disables the project's instance and removes its drop-in; the template stays
/// (other projects may use it). Returns the lines to print. A project that is not
/// installed is not an error (nothing to do).
///
/// Errors: exit 1 when the file cannot be removed or `systemctl` fails.
pub(crate) fn uninstall(config: &Config, scope: Scope) -> Result<Vec<String>, CliError> {
    let name = unit_name(config);
    let path = project_file(config, scope);
    if !path.exists() {
        return Ok(vec![format!(
            "{name} is not installed ({} does not exist); nothing to do",
            path.display()
        )]);
    }
    let mut lines = Vec::new();
    if systemd_running() {
        systemctl(scope, &["disable", "--now", &name])?;
        lines.push(format!("stopped and disabled {name}"));
    } else {
        lines.push("systemd is not running on this machine: nothing to stop or disable".into());
    }
    std::fs::remove_file(&path)
        .map_err(|e| CliError::failure(format!("cannot remove {}: {e}", path.display())))?;
    if let Some(dir) = path.parent() {
        let _ = std::fs::remove_dir(dir);
    }
    lines.push(format!("removed {}", path.display()));
    if let Some(link) = unlink_instance(scope, &name) {
        lines.push(format!("removed {}", link.display()));
    }
    let monitor = monitor_project_file(config, scope);
    if monitor.exists() {
        if systemd_running() {
            systemctl(scope, &["disable", "--now", &monitor_unit_name(config)])?;
        }
        std::fs::remove_file(&monitor)
            .map_err(|e| CliError::failure(format!("cannot remove {}: {e}", monitor.display())))?;
        if let Some(dir) = monitor.parent() {
            let _ = std::fs::remove_dir(dir);
        }
        lines.push(format!("removed {}", monitor.display()));
        if let Some(link) = unlink_instance(scope, &monitor_unit_name(config)) {
            lines.push(format!("removed {}", link.display()));
        }
    }
    if systemd_running() {
        systemctl(scope, &["daemon-reload"])?;
    }
    Ok(lines)
}

fn flag(scope: Scope) -> &'static str {
    match scope {
        Scope::User => "--user ",
        Scope::System => "",
    }
}

fn systemctl(scope: Scope, args: &[&str]) -> Result<(), CliError> {
    let status = Command::new("systemctl")
        .args(scope.systemctl_args())
        .args(args)
        .status()
        .map_err(|e| CliError::failure(format!("cannot run systemctl: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(CliError {
            code: exit::FAILURE,
            message: format!(
                "systemctl {}{} failed ({status})",
                flag(scope),
                args.join(" ")
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_what_systemd_interprets() {
        assert_eq!(quote("/a b/c"), "\"/a b/c\"");
        assert_eq!(quote("50%\"x\\"), "\"50%%\\\"x\\\\\"");
    }
}
