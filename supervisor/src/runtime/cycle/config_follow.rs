//! Config follows the file (docs/configuration.md, "Config follows the file"): `serve`
//! re-reads `agent-runner.toml` before every round, and at once on SIGHUP while it waits
//! between rounds (during a round, SIGHUP takes effect before the next one; it never ends
//! the process).
//!
//! - Same bytes (sha256): nothing happens.
//! - A valid new config replaces the running one (`config_reloaded`, with the new file's
//!   `digest`); hosts whose entry or pin changed are restarted and re-checked, the others
//!   keep running ([`crate::hosts::HostManager::reconcile`]).
//! - An invalid one (or one that changes a key defined `Reload::Restart` in
//!   `crate::config::keys`: `work_dir`, `log_dir`, `state_dir`, `[plugins] sandbox`) is
//!   recorded once as `config_broken` with the one-line error naming file and key; the last
//!   good config keeps running.
//! - A change the agent could have made is never applied
//!   ([`crate::runtime::cycle::config_path::agent_could_have`];
//!   docs/security.md, "The supervisor is not the agent's deputy"): when the config's path
//!   reaches into the work tree (the file, a link or a directory on its path, as given or
//!   resolved) and, while the last agent ran, an entry of its path that is not what it was
//!   at the last look was made (its `ctime`, which no process can set), or the file was
//!   written in place where it was not read-only to the agent (`[agent.sandbox] mode =
//!   "off"`, or no mount namespace), the file is untrusted: recorded as `config_untrusted`,
//!   not applied. An edit in place during a round applies where the file was read-only to
//!   the agent (only the operator could make it). The operator's
//!   own edits between rounds — in place, by an editor that renames a new file over the
//!   old, or a link swapped outside the tree (a Kubernetes ConfigMap's `..data`) — apply;
//!   an untrusted file applies once it is saved again after the round.

use sha2::{Digest, Sha256};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

use crate::config::keys::Reload;
use crate::config::{self, Config, ConfigError};
use crate::hosts::sandbox::SandboxGate;
use crate::record::events::Event;
use crate::runtime::cycle::config_path::{agent_could_have, file_ctime, path_entries, Entry};
use crate::runtime::cycle::round::Runner;

/// What asked for the re-read (`config_reloaded.trigger`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// The check before every round.
    Round,
    /// SIGHUP.
    Hangup,
}

impl Trigger {
    /// The event spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Trigger::Round => "round",
            Trigger::Hangup => "sighup",
        }
    }
}

/// Watches the config file of a running supervisor.
pub(crate) struct ConfigFollower {
    digest: String,
    hangups: watch::Receiver<u64>,
    /// The config's path as last looked at ([`path_entries`]).
    entries: Vec<Entry>,
    /// The `ctime` of an untrusted file, recorded once; saved again, it is looked at anew.
    untrusted: Option<(i64, i64)>,
}

impl ConfigFollower {
    /// Follows the file `config` was loaded from, and installs the SIGHUP handler (from
    /// now on SIGHUP never terminates the process).
    ///
    /// Errors: the signal handler cannot be installed.
    pub(crate) fn new(config: &Config) -> std::io::Result<Self> {
        let (tx, hangups) = watch::channel(0u64);
        let mut hup = signal(SignalKind::hangup())?;
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                tracing::info!("SIGHUP: re-reading the config");
                tx.send_modify(|n| *n += 1);
            }
        });
        Ok(ConfigFollower {
            digest: crate::tree_file::read_regular(&config.path)
                .map(|b| digest(&b))
                .unwrap_or_default(),
            hangups,
            entries: path_entries(&config.path),
            untrusted: None,
        })
    }

    /// Waits for the next SIGHUP (forever when the handler is gone).
    pub(crate) async fn hangup(&mut self) {
        if self.hangups.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Re-reads the config file and applies it to `runner` if it changed (module docs).
    pub(crate) async fn refresh(
        &mut self,
        runner: &mut Runner,
        gate: &SandboxGate,
        trigger: Trigger,
    ) {
        self.hangups.borrow_and_update();
        let path = runner.config.path.clone();
        let bytes = match crate::tree_file::read_regular(&path) {
            Ok(bytes) => bytes,
            Err(e) => {
                let error = format!(
                    "config error: cannot read {}: {e}; the last good config keeps running",
                    path.display()
                );
                if self.digest != "unreadable" {
                    self.digest = "unreadable".into();
                    broken(runner, &error, None, trigger);
                }
                return;
            }
        };
        let new_digest = digest(&bytes);
        let resaved = self
            .untrusted
            .is_some_and(|ctime| file_ctime(&path) != Some(ctime));
        if new_digest == self.digest && !resaved {
            return;
        }
        let before = std::mem::replace(&mut self.entries, path_entries(&path));
        if let Some(why) = agent_could_have(
            &path,
            &runner.config.runtime.work_dir,
            &before,
            runner.agent_ran,
        ) {
            if self.untrusted.is_none() || resaved {
                runner.events.emit(Event::ConfigUntrusted {
                    path: path.clone(),
                    reason: format!("{why}: the agent could have made this change, so it is not applied; the last good config keeps running (save the file again after the round to apply it)"),
                    digest: new_digest.clone(),
                    trigger: trigger.as_str().to_owned(),
                });
            }
            self.untrusted = file_ctime(&path);
            self.digest = new_digest;
            return;
        }
        self.untrusted = None;
        let previous = std::mem::replace(&mut self.digest, new_digest.clone());
        let text = String::from_utf8_lossy(&bytes);
        let config = match config::parse_str(&path, &text) {
            Ok(config) => config,
            Err(e) => return broken(runner, &e.to_string(), Some(&new_digest), trigger),
        };
        if let Err(e) = fixed_keys_unchanged(&runner.config, &config) {
            return broken(runner, &e.to_string(), Some(&new_digest), trigger);
        }
        // The webhooks follow the file; one whose URL cannot be read keeps the last good
        // config running (`serve` has no other environment than the one it started with).
        let targets = match crate::runtime::outward::notify::resolve_here(&config) {
            Ok(targets) => targets,
            Err(e) => return broken(runner, &e.to_string(), Some(&new_digest), trigger),
        };
        if let Some(notifier) = &mut runner.notifier {
            notifier.follow(&config, targets);
        }
        let hosts = runner.hosts.reconcile(&config, gate).await;
        runner.replace_config(config);
        tracing::info!("config reloaded ({new_digest})");
        runner.events.emit(Event::ConfigReloaded {
            path,
            digest: new_digest,
            previous_digest: previous,
            trigger: trigger.as_str().to_owned(),
            hosts_restarted: hosts.started,
            hosts_stopped: hosts.stopped,
        });
    }
}

fn broken(runner: &Runner, error: &str, digest: Option<&str>, trigger: Trigger) {
    let error = error.replace('\n', " ");
    eprintln!("agent-runner: {error}; keeping the last good config");
    runner.events.emit(Event::ConfigBroken {
        path: runner.config.path.clone(),
        error,
        digest: digest.map(str::to_owned),
        trigger: trigger.as_str().to_owned(),
    });
}

/// What only a restart can change: the keys defined with [`Reload::Restart`] (the tree,
/// where the record and logs live, the lock being held there, and the sandbox gate
/// evaluated at boot).
///
/// Errors: [`ConfigError::Key`] naming the first such key that `new` changes.
fn fixed_keys_unchanged(old: &Config, new: &Config) -> Result<(), ConfigError> {
    let changed = restart_keys().find(|key| resolved(old, key) != resolved(new, key));
    match changed {
        Some(key) => Err(ConfigError::Key {
            path: new.path.clone(),
            key: key.to_owned(),
            message: "cannot change while serve runs; restart serve to apply it".to_owned(),
        }),
        None => Ok(()),
    }
}

/// The names of the keys a reload may not change.
fn restart_keys() -> impl Iterator<Item = &'static str> {
    config::TABLES
        .iter()
        .flat_map(|t| t.keys)
        .filter(|k| k.reload == Reload::Restart)
        .map(|k| k.name)
}

/// The resolved value of restart-only `key` in `config`, to compare two configs by.
/// A key defined [`Reload::Restart`] without an arm here panics: the test
/// `every_restart_key_is_compared` finds it first.
fn resolved(config: &Config, key: &str) -> String {
    match key {
        "runtime.work_dir" => format!("{:?}", config.runtime.work_dir),
        "runtime.log_dir" => format!("{:?}", config.runtime.log_dir),
        "runtime.state_dir" => format!("{:?}", config.runtime.state_dir),
        "plugins.sandbox" => config.plugins.sandbox.as_str().to_owned(),
        // The agent may write a config kept in its tree: a re-read must not loosen its own
        // confinement (docs/security.md "The agent's confinement").
        "agent.sandbox.mode" => config.agent_sandbox.mode.as_str().to_owned(),
        "agent.sandbox.write_paths" => format!("{:?}", config.agent_sandbox.write_paths),
        "agent.sandbox.read_paths" => format!("{:?}", config.agent_sandbox.read_paths),
        "agent.sandbox.connect_ports" => format!("{:?}", config.agent_sandbox.connect_ports),
        "agent.sandbox.unix_sockets" => config.agent_sandbox.unix_sockets.to_string(),
        "agent.sandbox.user_namespaces" => config.agent_sandbox.user_namespaces.to_string(),
        "agent.sandbox.host_network" => config.agent_sandbox.host_network.to_string(),
        "agent.sandbox.pass_env" => format!("{:?}", config.agent_sandbox.pass_env),
        "agent.sandbox.broker" => format!("{:?}", config.agent_sandbox.broker),
        other => panic!("restart-only config key {other} has no comparison in config_follow"),
    }
}

/// `sha256:<hex>` of the config file's bytes.
pub(crate) fn digest(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_restart_key_is_compared() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("prompts")).unwrap();
        std::fs::write(dir.path().join("prompts/main.md"), "x").unwrap();
        let path = dir.path().join("agent-runner.toml");
        let text = "schema_version = 1\n[agent]\ncommand = [\"x\"]\n";
        let config = config::parse_str(&path, text).unwrap();
        let keys: Vec<&str> = restart_keys().collect();
        assert_eq!(
            keys,
            [
                "agent.sandbox.mode",
                "agent.sandbox.write_paths",
                "agent.sandbox.read_paths",
                "agent.sandbox.connect_ports",
                "agent.sandbox.unix_sockets",
                "agent.sandbox.user_namespaces",
                "agent.sandbox.host_network",
                "agent.sandbox.pass_env",
                "agent.sandbox.broker",
                "runtime.work_dir",
                "runtime.log_dir",
                "runtime.state_dir",
                "plugins.sandbox"
            ]
        );
        for key in keys {
            assert!(!resolved(&config, key).is_empty(), "{key}");
        }
        let moved =
            config::parse_str(&path, &format!("{text}[plugins]\nsandbox = \"off\"\n")).unwrap();
        match fixed_keys_unchanged(&config, &moved) {
            Err(ConfigError::Key { key, .. }) => assert_eq!(key, "plugins.sandbox"),
            other => panic!("{other:?}"),
        }
        let paced =
            config::parse_str(&path, &format!("{text}[runtime]\nrestart_delay_s = 9\n")).unwrap();
        assert!(fixed_keys_unchanged(&config, &paced).is_ok());
    }
}
