//! Following a re-read config (docs/configuration.md, "Config follows the file"): which
//! hosts keep running, which are admitted anew, which are shut down.

use super::builtin;
use super::{HookRef, HostManager, ManagedHost, Reconciled};
use crate::config::Config;
use crate::hosts::sandbox::SandboxGate;

impl HostManager {
    /// Follows a re-read config (docs/configuration.md, "Config follows the file"): a host
    /// whose `[plugins.hosts.<name>]` entry and pin are unchanged keeps running with its
    /// hooks; a host whose entry or pin changed is shut down and admitted again (resolve,
    /// hash, pin check, launch, `initialize`), a new host is admitted, a removed or newly
    /// disabled one is shut down. The built-in detector host is restarted when its table
    /// ([`builtin::host_table`]: enabled detectors, `auth_fail_patterns`) changed, and shut
    /// down when every detector is disabled. Returns the names of the hosts (re)started and
    /// stopped.
    pub(crate) async fn reconcile(&mut self, config: &Config, gate: &SandboxGate) -> Reconciled {
        let mut old: Vec<Option<ManagedHost>> = std::mem::take(&mut self.hosts)
            .into_iter()
            .map(Some)
            .collect();
        let old_hooks = std::mem::take(&mut self.hooks);
        let mut done = Reconciled::default();
        let keep = |i: usize, host: ManagedHost, manager: &mut HostManager| {
            let now = manager.hosts.len();
            manager.hosts.push(host);
            manager.hooks.extend(
                old_hooks
                    .iter()
                    .filter(|h| h.host == i)
                    .cloned()
                    .map(|h| HookRef { host: now, ..h }),
            );
        };
        // The built-in detector host follows its table ([`builtin::host_table`]).
        let table = builtin::host_table(config, &self.detectors);
        let was_builtin = old
            .iter()
            .position(|h| h.as_ref().is_some_and(|h| h.builtin));
        match (was_builtin, &table) {
            (Some(i), Some(table)) if old[i].as_ref().is_some_and(|h| h.cfg.config == *table) => {
                if let Some(host) = old[i].take() {
                    keep(i, host, self);
                }
            }
            (was, table) => {
                if let Some(host) = was.and_then(|i| old[i].take()) {
                    if let Some(running) = host.running {
                        running.shutdown().await;
                    }
                    if table.is_none() {
                        done.stopped.push(host.cfg.name.clone());
                    }
                }
                if table.is_some() {
                    self.add_builtin(config, gate).await;
                    done.started
                        .push(crate::detectors::host::HOST_NAME.to_owned());
                }
            }
        }
        for cfg in &config.plugins.hosts {
            if config.plugins.disable.contains(&cfg.name) {
                continue;
            }
            let pin = config.plugins.pins.get(&cfg.name).copied();
            let same = old
                .iter()
                .position(|h| h.as_ref().is_some_and(|h| h.cfg == *cfg && h.pin == pin));
            match same.and_then(|i| old[i].take().map(|h| (i, h))) {
                Some((was, host)) => keep(was, host, self),
                None => {
                    if let Some(i) = old
                        .iter()
                        .position(|h| h.as_ref().is_some_and(|h| h.cfg.name == cfg.name))
                    {
                        if let Some(running) = old[i].take().and_then(|h| h.running) {
                            running.shutdown().await;
                        }
                    }
                    self.add(config, gate, cfg).await;
                    done.started.push(cfg.name.clone());
                }
            }
        }
        for host in old.into_iter().flatten() {
            done.stopped.push(host.cfg.name.clone());
            if let Some(running) = host.running {
                running.shutdown().await;
            }
        }
        self.sort_hooks();
        done
    }
}
