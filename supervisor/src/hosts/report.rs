//! The hosts as the record reports them: `service.json`'s hosts and hook call durations
//! ([`ServiceHosts`]), and the hosts of `status` ([`StatusHosts`]).

use std::collections::BTreeMap;

use crate::hosts::HostManager;
use crate::record::service::{CallHistogram, ServiceHost, ServiceHosts};
use crate::record::status::{StatusHost, StatusHosts};

impl ServiceHosts for HostManager {
    fn service_hosts(&self) -> Vec<ServiceHost> {
        self.status()
            .into_iter()
            .map(|h| ServiceHost {
                families: h.hook_families.iter().fold(
                    BTreeMap::new(),
                    |mut acc: BTreeMap<String, Vec<String>>, (family, hook)| {
                        acc.entry(family.as_str().to_owned())
                            .or_default()
                            .push(hook.clone());
                        acc
                    },
                ),
                event_kinds: h
                    .declared
                    .event_kinds
                    .iter()
                    .map(|k| format!("{}.{k}", h.name))
                    .collect(),
                owned_paths: h.declared.owned_paths.clone(),
                call_latency_p50_ms: h.stats.latency_p50_ms(),
                name: h.name,
                state: h.state.as_str().to_owned(),
                pid: h.pid,
                hooks: h.hooks,
                calls: h.stats.calls,
                failures: h.stats.failures,
                last_error: h.stats.last_error,
            })
            .collect()
    }

    fn hook_call_durations(&self) -> BTreeMap<String, CallHistogram> {
        self.call_durations()
            .iter()
            .map(|(family, h)| (family.as_str().to_owned(), h.clone()))
            .collect()
    }
}

impl StatusHosts for HostManager {
    fn status_hosts(&self) -> Vec<StatusHost> {
        self.states()
            .into_iter()
            .map(|(name, state, pid)| StatusHost {
                name,
                state: state.as_str().to_owned(),
                pid,
            })
            .collect()
    }
}
