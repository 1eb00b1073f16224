//! `round_start.config_digest`: a label of what a round ran with, computed as the
//! reference system's 0.3.14 does (docs/reference-system.md, "Later releases"), so the same
//! config gives the same digest in both. It is a label only: nothing stops, kills or
//! backs off because of it.
//!
//! The digest is the sha256 (hex) of the compact JSON (keys sorted, `,` and `:` without
//! spaces, non-ASCII characters as themselves) of
//! `{"agent_env": [[name, value], …] (sorted), "checks": [{"cmd": […], "name": …}, …],
//! "prompt_delivery": "argv"|"stdin", "prompt_file_sha256": [hex or null, …],
//! "prompt_files": [absolute path, …], "vcs_dirty_action": …}` for the round's phase
//! (its agent and prompt files). `config_changed` says whether it differs from the last
//! `round_start` of the record; when it does, `round_start` also names the prompt files,
//! the check names, the dirty action and the prompt delivery (paths and names only, never
//! prompt text or environment values).

use serde::Serialize;
use std::path::Path;

use crate::config::Config;
use crate::record::events::read::Backwards;
use crate::tree_file::{regular_file_sha256, Symlink};

/// The fields serialized, in sorted key order (the struct's order is the JSON's).
#[derive(Serialize)]
struct Payload<'a> {
    agent_env: Vec<(&'a str, &'a str)>,
    checks: Vec<Check<'a>>,
    prompt_delivery: &'a str,
    prompt_file_sha256: Vec<Option<String>>,
    prompt_files: Vec<String>,
    vcs_dirty_action: &'a str,
}

#[derive(Serialize)]
struct Check<'a> {
    cmd: &'a [String],
    name: &'a str,
}

/// What `round_start` carries about the config.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ConfigLabel {
    /// sha256 hex of the payload.
    pub digest: String,
    /// It differs from the last `round_start`'s (or there is none).
    pub changed: bool,
    /// When changed: the prompt files, check names, dirty action and prompt delivery.
    pub snapshot: Option<Snapshot>,
}

/// Names only: what changed can be told without the prompt's text or env values.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Snapshot {
    /// The prompt files' absolute paths.
    pub prompt_files: Vec<String>,
    /// The `[[goal.checks]]` names.
    pub check_names: Vec<String>,
    /// `[vcs] dirty_action`.
    pub vcs_dirty_action: String,
    /// `[agent] prompt_delivery`.
    pub prompt_delivery: String,
}

/// The digest of `config` for a round of `phase`.
pub(crate) fn digest(config: &Config, phase: Option<&str>) -> (String, Snapshot) {
    use sha2::{Digest, Sha256};
    let profile = config.profile(phase);
    let files: Vec<String> = profile
        .prompt_files
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let checks: Vec<Check<'_>> = config
        .goal
        .iter()
        .flat_map(|g| &g.checks)
        .map(|c| Check {
            cmd: &c.cmd,
            name: &c.name,
        })
        .collect();
    let payload = Payload {
        agent_env: profile
            .agent
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
        prompt_delivery: profile.agent.delivery.as_str(),
        prompt_file_sha256: profile
            .prompt_files
            .iter()
            .map(|p| regular_file_sha256(p, Symlink::Follow).map(hex))
            .collect(),
        prompt_files: files.clone(),
        vcs_dirty_action: config.vcs.dirty_action.as_str(),
        checks,
    };
    let json = serde_json::to_vec(&payload).expect("plain data serializes");
    let snapshot = Snapshot {
        prompt_files: files,
        check_names: payload.checks.iter().map(|c| c.name.to_owned()).collect(),
        vcs_dirty_action: payload.vcs_dirty_action.to_owned(),
        prompt_delivery: payload.prompt_delivery.to_owned(),
    };
    (hex(Sha256::digest(&json).into()), snapshot)
}

/// The label of the next round of `phase`: its digest, compared with the last
/// `round_start` in the record of `state_dir` (none, or one without a digest: changed).
pub(crate) fn label(config: &Config, phase: Option<&str>, state_dir: &Path) -> ConfigLabel {
    let (digest, snapshot) = self::digest(config, phase);
    let changed = last_digest(state_dir).as_deref() != Some(digest.as_str());
    ConfigLabel {
        digest,
        changed,
        snapshot: changed.then_some(snapshot),
    }
}

/// `config_digest` of the newest `round_start` of the record.
fn last_digest(state_dir: &Path) -> Option<String> {
    let mut back = Backwards::open(state_dir).ok()?;
    while let Ok(Some(found)) = back.next_event() {
        if found.head.event == "round_start" {
            let value: serde_json::Value = serde_json::from_slice(found.line).ok()?;
            return value["config_digest"].as_str().map(str::to_owned);
        }
    }
    None
}

/// Lowercase hex of `bytes`.
fn hex(bytes: [u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_is_compact_sorted_json() {
        let cmd = ["make".to_owned(), "test".to_owned()];
        let payload = Payload {
            agent_env: vec![("A", "é\"1")],
            checks: vec![Check {
                cmd: &cmd,
                name: "tests",
            }],
            prompt_delivery: "argv",
            prompt_file_sha256: vec![None],
            prompt_files: vec!["/p/prompts/main.md".to_owned()],
            vcs_dirty_action: "stash",
        };
        assert_eq!(
            String::from_utf8(serde_json::to_vec(&payload).unwrap()).unwrap(),
            r#"{"agent_env":[["A","é\"1"]],"checks":[{"cmd":["make","test"],"name":"tests"}],"prompt_delivery":"argv","prompt_file_sha256":[null],"prompt_files":["/p/prompts/main.md"],"vcs_dirty_action":"stash"}"#
        );
    }
}
