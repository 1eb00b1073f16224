//! `install [--system] [--force] [--dry-run]` / `uninstall [--system]`: a systemd unit that
//! runs `serve` for one project.
//!
//! The unit bakes in the absolute binary and config paths, restarts `serve` on failure but
//! not on exit 78 (a permanent config error: restarting cannot help), and stops the whole
//! control group (agent and hosts included) on `systemctl stop`. User units go to
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
pub enum Scope {
    /// The invoking user's systemd instance (`systemctl --user`).
    User,
    /// The system instance (`/etc/systemd/system`).
    System,
}

impl Scope {
    /// `systemctl` arguments selecting the instance.
    fn systemctl_args(self) -> &'static [&'static str] {
        match self {
            Scope::User => &["--user"],
            Scope::System => &[],
        }
    }

    /// The unit directory of this scope.
    pub fn unit_dir(self) -> PathBuf {
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

/// The unit's file name: `agent-runner-<project>.service`, the project name reduced to
/// `[A-Za-z0-9_-]` (other characters become `-`).
pub fn unit_name(config: &Config) -> String {
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
    format!("agent-runner-{project}.service")
}

/// Whether systemd manages this machine (`/run/systemd/system` exists: sd_booted(3)).
pub fn systemd_running() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// A word for a systemd command line: double-quoted, `\` and `"` escaped, `%` doubled
/// (systemd.service(5) "Command lines", systemd.unit(5) "Specifiers").
fn quote(word: &str) -> String {
    let escaped = word.replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"{}\"", specifiers_escaped(&escaped))
}

/// A value taken verbatim by systemd (a path setting such as `WorkingDirectory=`, a
/// description): `%` doubled, no quotes — quotes would be part of the path, which systemd
/// then rejects as not absolute (systemd.unit(5) "Specifiers").
fn specifiers_escaped(text: &str) -> String {
    text.replace('%', "%%")
}

/// The unit text for `serve` of `config` run by `binary` (both absolute).
///
/// `TimeoutStopSec` is the round budget plus 60 s, so a stop lets the running round
/// finish as `serve` promises before systemd escalates to SIGKILL.
pub fn render_unit(config: &Config, binary: &Path, scope: Scope) -> String {
    let wanted_by = match scope {
        Scope::User => "default.target",
        Scope::System => "multi-user.target",
    };
    format!(
        "# Written by `agent-runner install`; remove with `agent-runner uninstall`.\n\
         [Unit]\n\
         Description=agent-runner serve for {project} ({config})\n\
         After=network-online.target\n\
         Wants=network-online.target\n\
         \n\
         [Service]\n\
         Type=exec\n\
         ExecStart={binary} --config {config_q} serve\n\
         WorkingDirectory={work_dir}\n\
         Restart=on-failure\n\
         RestartSec=10\n\
         # 78: permanent config error (bad config, sandbox=\"require\" unmet): do not restart.\n\
         RestartPreventExitStatus=78\n\
         KillMode=control-group\n\
         KillSignal=SIGTERM\n\
         TimeoutStopSec={stop_s}\n\
         \n\
         [Install]\n\
         WantedBy={wanted_by}\n",
        project = specifiers_escaped(&config.project),
        config = specifiers_escaped(&config.path.display().to_string()),
        binary = quote(&binary.display().to_string()),
        config_q = quote(&config.path.display().to_string()),
        work_dir = specifiers_escaped(&config.runtime.work_dir.display().to_string()),
        stop_s = config.runtime.round_budget.as_secs() + 60,
    )
}

/// What `install` was asked to do.
#[derive(Clone, Copy, Debug)]
pub struct InstallOptions {
    /// Where the unit goes.
    pub scope: Scope,
    /// Overwrite an existing unit.
    pub force: bool,
    /// Print the unit, write nothing.
    pub dry_run: bool,
}

/// Installs (or, with `dry_run`, prints) the unit; returns the lines to print.
///
/// Errors: exit 1 when the unit exists (without `--force`), cannot be written, or
/// `systemctl` fails.
pub fn install(config: &Config, options: InstallOptions) -> Result<Vec<String>, CliError> {
    let binary = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| CliError::failure(format!("cannot find the agent-runner binary: {e}")))?;
    let text = render_unit(config, &binary, options.scope);
    let path = options.scope.unit_dir().join(unit_name(config));
    if options.dry_run {
        return Ok(vec![format!("# {}", path.display()), text]);
    }
    if path.exists() && !options.force {
        return Err(CliError::failure(format!(
            "{} already exists; pass --force to overwrite it",
            path.display()
        )));
    }
    let parent = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent)
        .and_then(|_| std::fs::write(&path, &text))
        .map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))?;
    let mut lines = vec![format!("wrote {}", path.display())];
    let name = unit_name(config);
    if !systemd_running() {
        lines.push(format!(
            "systemd is not running on this machine (no /run/systemd/system): the unit was written but not enabled or started. Where systemd runs: `systemctl {}daemon-reload && systemctl {}enable --now {name}`; here, run `agent-runner serve` yourself.",
            flag(options.scope), flag(options.scope)
        ));
        return Ok(lines);
    }
    systemctl(options.scope, &["daemon-reload"])?;
    systemctl(options.scope, &["enable", "--now", &name])?;
    lines.push(format!("enabled and started {name}"));
    Ok(lines)
}

/// Stops, disables and removes the unit; returns the lines to print. A unit that is not
/// there is not an error (nothing to do).
///
/// Errors: exit 1 when the file cannot be removed or `systemctl` fails.
pub fn uninstall(config: &Config, scope: Scope) -> Result<Vec<String>, CliError> {
    let name = unit_name(config);
    let path = scope.unit_dir().join(&name);
    if !path.exists() {
        return Ok(vec![format!(
            "{} is not installed; nothing to do",
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
    lines.push(format!("removed {}", path.display()));
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
