//! How serve (and `plugin check`) launch a host: the `initialize` params, the host's
//! private state directory and its [`LaunchSpec`].

use agent_runner_plugin_host::host::launch::LaunchSpec;
use agent_runner_protocol::limits::{fit_text, MAX_CONTEXT_TEXT_BYTES};
use agent_runner_protocol::{InitializeParams, SupervisorInfo, PROTOCOL_VERSION};
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::config::HostConfig;
use crate::hosts::sandbox::SandboxGate;

/// The `initialize` params common to every host of a run (`host`, `state_dir` and
/// `config` are filled per host by [`host_initialize_params`]).
pub(crate) fn initialize_params(
    project: &str,
    work_dir: &Path,
    log_dir: &Path,
    gate: &SandboxGate,
) -> InitializeParams {
    InitializeParams {
        protocol_version: PROTOCOL_VERSION,
        supervisor: SupervisorInfo {
            name: "agent-runner".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        host: String::new(),
        project: fit_text(project, MAX_CONTEXT_TEXT_BYTES),
        work_dir: fit_text(&work_dir.display().to_string(), MAX_CONTEXT_TEXT_BYTES),
        log_dir: fit_text(&log_dir.display().to_string(), MAX_CONTEXT_TEXT_BYTES),
        state_dir: String::new(),
        config: Default::default(),
        sandbox: gate.info(),
    }
}

/// The `initialize` params one host receives, as JSON.
pub(crate) fn host_initialize_params(
    common: &InitializeParams,
    cfg: &HostConfig,
    spec: &LaunchSpec,
) -> Value {
    let mut params = common.clone();
    params.host = cfg.name.clone();
    params.state_dir = fit_text(
        &spec.state_dir.display().to_string(),
        MAX_CONTEXT_TEXT_BYTES,
    );
    params.config = cfg.config.clone();
    serde_json::to_value(params).expect("initialize params serialize")
}

/// Host `name`'s private state directory: `<log_dir>/plugins/<name>`.
pub(crate) fn state_dir(log_dir: &Path, name: &str) -> PathBuf {
    log_dir.join("plugins").join(name)
}

/// How serve launches host `cfg` from its verified executable: cwd `work_dir`, state in
/// `<log_dir>/plugins/<name>`, `TMPDIR` in `<log_dir>/plugins/.tmp/<name>`, confined at
/// the gate's tier, its memory limit. `plugin check` launches through the same function.
pub(crate) fn launch_spec(
    cfg: &HostConfig,
    exe: agent_runner_plugin_host::host::pin::VerifiedExecutable,
    work_dir: &Path,
    log_dir: &Path,
    gate: &SandboxGate,
) -> LaunchSpec {
    let mut spec = LaunchSpec::new(
        cfg.name.clone(),
        exe,
        work_dir,
        log_dir,
        state_dir(log_dir, &cfg.name),
        log_dir.join("plugins").join(".tmp").join(&cfg.name),
    );
    spec.args = cfg.command[1..].iter().map(OsString::from).collect();
    spec.confine = gate.applied;
    spec.memory_max_mb = cfg.memory_max_mb;
    spec.read_paths = cfg.read_paths.clone();
    spec.file_max_mb = cfg.writes.file_max_mb;
    spec.tmp_max_mb = cfg.writes.tmp_max_mb;
    spec
}
