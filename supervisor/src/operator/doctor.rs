//! `doctor`: what would happen on `serve`, without starting anything (it hashes files only,
//! writes nothing, starts no host). Checks with name / ok / reason / how to fix, the sandbox
//! probe, and every configured host's executable, `sha256:<64 hex>` and pin status; the
//! human form prints ready-to-paste `[plugins.pin]` lines.
//!
//! Exit status: 78 when `serve` would refuse to boot (bad config, unmet `require`), 1 when
//! another check fails (e.g. a mismatching or, under `require`, unpinned host), else 0.

use agent_runner_plugin_host::common::probe::{probe, Capabilities, Tier};
use agent_runner_plugin_host::host::resolve::resolve_executable;
use agent_runner_protocol::Family;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::agent_cli::Identified;
use crate::config::vocabulary::Vocabulary;
use crate::config::{self, Config, ConfigError, DirtyAction};
use crate::exit;
use crate::hosts::sandbox::SandboxGate;
use crate::hosts::{check_pin, PinStatus};
pub(crate) use crate::operator::doctor_check::{check, Check};
use crate::runtime::agent::sandbox::AgentSandboxGate;
use crate::runtime::git::repo::Repo;
use crate::runtime::machine::host_health::{self, Reading};
use crate::runtime::machine::round_cgroup;

/// `doctor --json` (schema: `docs/schema/doctor.schema.json`). The reference system's
/// `checks` and `sandbox`, plus ours: `hosts`, `config` and `phase_plan` (absent when the
/// config cannot be loaded).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct DoctorDoc {
    /// The document's version, 1.
    pub schema_version: u32,
    /// Whether every check passed.
    pub ok: bool,
    /// The config file checked (absent when it cannot be loaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<PathBuf>,
    /// Every check, in the order run.
    pub checks: Vec<Check>,
    /// What works but will hurt (same shape as a failed check; they do not change `ok`):
    /// a log or state dir inside the work tree (docs/operations.md, "State dir").
    pub warnings: Vec<Check>,
    /// The sandbox probe and the hosts' hashes.
    pub sandbox: DoctorSandbox,
    /// Every configured host.
    pub hosts: Vec<DoctorHost>,
    /// The upcoming rounds and their phases (absent when the config cannot be loaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_plan: Option<PhasePlan>,
    /// How `[agent]`'s agent is stopped (the reference system's key; absent when the
    /// config cannot be loaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sigterm_grace: Option<SigtermGrace>,
    /// The agent's own confinement, `[agent.sandbox] mode` (absent when the config cannot be
    /// loaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_sandbox: Option<AgentSandboxBlock>,
    /// What of the environment the agent inherits (absent when the config cannot be
    /// loaded): docs/security.md, "The agent's environment".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_env: Option<AgentEnvView>,
}

/// `doctor`'s `agent_env`: the variables of doctor's own environment a confined agent
/// would not inherit ([`crate::runtime::agent::environment`]). Names only, never values.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct AgentEnvView {
    /// Whether the agent inherits only the allow-list (`prefer`, `require`); `false`: the
    /// whole environment (`off`).
    pub filtered: bool,
    /// The names of doctor's environment the allow-list drops, sorted; empty under `off`.
    pub dropped: Vec<String>,
    /// The names of doctor's environment it passes, sorted, each with the list's reason;
    /// empty under `off`.
    pub inherited: Vec<InheritedVar>,
    /// The key that passes one by name.
    pub pass_with: String,
}

/// One variable a confined agent inherits, and why.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct InheritedVar {
    /// Its name.
    pub name: String,
    /// The allow-list entry's reason.
    pub why: String,
}

/// The key that passes a dropped variable.
const PASS_ENV_KEY: &str = "[agent.sandbox] pass_env";

/// `agent_env` of `config` in this process's environment, and its check (passing: the
/// names are information, not a fault).
fn agent_env_view(config: &Config) -> (AgentEnvView, Check) {
    let list = crate::runtime::agent::environment::AllowList::of(config, config.agent.cli.name);
    let names: Vec<std::ffi::OsString> = std::env::vars_os().map(|(k, _)| k).collect();
    let dropped = list.as_ref().map(|l| l.dropped(&names)).unwrap_or_default();
    let mut inherited: Vec<InheritedVar> = list
        .as_ref()
        .map(|l| {
            names
                .iter()
                .filter_map(|n| {
                    l.why(n).map(|why| InheritedVar {
                        name: n.to_string_lossy().into_owned(),
                        why: why.to_owned(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    inherited.sort_by(|a, b| a.name.cmp(&b.name));
    let reason = match (&list, dropped.is_empty()) {
        (None, _) => "[agent.sandbox] mode = \"off\": the agent inherits the whole environment".to_owned(),
        (Some(_), true) => "the agent inherits an allow-list of the environment; nothing here is dropped".to_owned(),
        (Some(_), false) => format!(
            "the agent inherits an allow-list of the environment; dropped here: {}; pass one with {PASS_ENV_KEY} = [\"NAME\"]",
            dropped.join(", ")
        ),
    };
    let view = AgentEnvView {
        filtered: list.is_some(),
        dropped,
        inherited,
        pass_with: PASS_ENV_KEY.to_owned(),
    };
    (view, check("agent_env", true, reason, ""))
}

/// The agent's sandbox block shared by `doctor` (`agent_sandbox`) and `peek`
/// (`agent_sandbox`): docs/security.md "The agent's confinement".
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct AgentSandboxBlock {
    /// `[agent.sandbox] mode`: `off`, `prefer` or `require`.
    #[schemars(extend("enum" = ["off", "prefer", "require"]))]
    pub requested: String,
    /// The Landlock and seccomp tier the agent runs at; `unconfined` under `off` or when
    /// the gate refuses to boot.
    #[schemars(extend("enum" = ["landlock+seccomp", "landlock", "seccomp", "unconfined"]))]
    pub achieved_tier: String,
    /// Why `require` cannot be honoured here (serve and round refuse to start); `null`
    /// otherwise.
    pub refused: Option<String>,
    /// Each layer the agent gets, on or off with the reason.
    pub layers: Vec<LayerView>,
    /// When the agent runs confined by us and its CLI has a sandbox of its own that cannot
    /// be built inside ours (codex): what of `[agent] command` is replaced and why
    /// (docs/security.md, "A CLI's own sandbox under ours"); `null` otherwise.
    pub own_sandbox_replaced: Option<String>,
}

/// The agent's sandbox block of `config` on this machine (`caps` probed).
pub(crate) fn agent_sandbox_block(config: &Config, caps: &Capabilities) -> AgentSandboxBlock {
    let requested = config.agent_sandbox.mode.as_str().to_owned();
    match AgentSandboxGate::evaluate(&config.agent_sandbox, caps) {
        Ok(gate) => AgentSandboxBlock {
            requested,
            achieved_tier: gate.applied.as_str().to_owned(),
            refused: None,
            layers: gate
                .layers(&config.agent_sandbox)
                .into_iter()
                .map(LayerView::from)
                .collect(),
            own_sandbox_replaced: gate
                .own_sandbox_replaced(&config.agent)
                .map(|(_, replaced)| replaced.describe()),
        },
        Err(refused) => AgentSandboxBlock {
            requested,
            achieved_tier: Tier::Unconfined.as_str().to_owned(),
            refused: Some(refused.to_string()),
            layers: Vec::new(),
            own_sandbox_replaced: None,
        },
    }
}

impl From<agent_runner_plugin_host::common::layers::Layer> for LayerView {
    fn from(l: agent_runner_plugin_host::common::layers::Layer) -> Self {
        LayerView {
            name: l.name.to_owned(),
            on: l.on,
            detail: l.detail,
        }
    }
}

/// `doctor`'s `sigterm_grace`: the stop signal and grace of `[agent]`'s agent
/// ([`crate::runtime::agent::cooperative`]).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SigtermGrace {
    /// The agent's CLI (`[agent] cli`, or what the command runs; `command[0]`'s file name
    /// for none agent-runner knows).
    pub agent: String,
    /// Whether the CLI finishes its turn on a signal.
    pub cooperative: bool,
    /// That signal (`SIGINT`, `SIGTERM`); `null` when not cooperative (it gets SIGTERM).
    pub signal: Option<String>,
    /// Seconds between the signal and SIGKILL.
    pub resolved_s: u64,
}

impl SigtermGrace {
    fn of(agent: &crate::config::AgentConfig) -> Self {
        let stop = crate::runtime::agent::cooperative::stop_signal(agent);
        SigtermGrace {
            agent: agent.cli.name.map(str::to_owned).unwrap_or_else(|| {
                let first = &agent.command[0];
                first.rsplit('/').next().unwrap_or(first).to_owned()
            }),
            cooperative: stop.cooperative,
            signal: stop.cooperative.then(|| stop.signal.as_str().to_owned()),
            resolved_s: stop.grace.as_secs(),
        }
    }
}

/// The sandbox block shared by `doctor` and `peek` (`plugins.sandbox`).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct SandboxBlock {
    /// `[plugins] sandbox` (`null` when the config cannot be loaded).
    pub requested: Option<String>,
    /// What hosts run at; `unconfined` when the gate refuses to boot.
    #[schemars(extend("enum" = ["landlock+seccomp", "landlock", "seccomp", "unconfined"]))]
    pub achieved_tier: String,
    /// What the kernel offers.
    #[schemars(extend("enum" = ["landlock+seccomp", "landlock", "seccomp", "unconfined"]))]
    pub available_tier: String,
    /// The kernel's Landlock ABI version, if Landlock is available.
    pub landlock_abi: Option<u32>,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Why one or both layers are missing.
    pub unconfined_reason: Option<String>,
    /// The hook families really confined: those of enabled hosts that would be launched,
    /// when hosts run at a tier other than `unconfined`, in the reference system's
    /// spelling (`spawn_hooks`, `dirty_handlers`, `pre_round_hooks`, …).
    pub covers: Vec<String>,
    /// Each confinement layer, on or off with the reason (docs/security.md "Layers").
    pub layers: Vec<LayerView>,
}

/// One confinement layer (see `agent_runner_plugin_host::host::layers`).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct LayerView {
    /// `landlock`, `seccomp`, `pid_namespace`, `process_bound`, `memory_bound`,
    /// `unix_socket_rule` or `write_limits`.
    pub name: String,
    /// Whether hosts launched now get it.
    pub on: bool,
    /// What it covers, or why it is off.
    pub detail: String,
}

/// A host's write limits (MiB) and what its state directory holds now (docs/security.md
/// "Write limits"; TMPDIR lives in the host's own mount namespace, its use is not visible
/// from the supervisor).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct HostWriteLimits {
    /// Largest single file.
    pub file_max_mb: u64,
    /// Size of the private TMPDIR.
    pub tmp_max_mb: u64,
    /// Total of the state directory.
    pub state_max_mb: u64,
    /// Bytes the state directory holds now (allocated blocks).
    pub state_used_bytes: u64,
}

impl HostWriteLimits {
    /// The limits of host `cfg` and the current use of its state directory.
    pub(crate) fn of(config: &Config, cfg: &crate::config::HostConfig) -> Self {
        let state = crate::hosts::state_dir(&config.runtime.log_dir, &cfg.name);
        HostWriteLimits {
            file_max_mb: cfg.writes.file_max_mb,
            tmp_max_mb: cfg.writes.tmp_max_mb,
            state_max_mb: cfg.writes.state_max_mb,
            state_used_bytes: agent_runner_plugin_host::common::write_limits::disk_usage(&state),
        }
    }
}

/// `doctor`'s `sandbox`: the shared block plus the reference system's
/// `libseccomp_present` and `third_party_plugin_hashes`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub(crate) struct DoctorSandbox {
    /// The shared fields.
    #[serde(flatten)]
    pub block: SandboxBlock,
    /// Always `false`: the seccomp filter is built without libseccomp.
    pub libseccomp_present: bool,
    /// Each resolvable host's `sha256:<64 hex>`, by name.
    pub third_party_plugin_hashes: BTreeMap<String, String>,
}

/// One host in `doctor`'s `hosts`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum DoctorHost {
    /// Its executable resolved and was hashed.
    #[schemars(transform = crate::record::schema_fields::every_field_required)]
    Checked {
        /// The host's name.
        name: String,
        /// The resolved executable.
        executable: PathBuf,
        /// `sha256:<64 hex>`.
        sha256: String,
        /// `verified`, `mismatch` or `unpinned`.
        pin_status: String,
        /// Listed in `[plugins] disable`.
        disabled: bool,
        /// The interpreter of a `#!` script, if any.
        interpreter: Option<String>,
        /// `not pinned` when there is an interpreter.
        interpreter_pin: Option<String>,
        /// Its `provides`.
        provides: Vec<Family>,
        /// The tier it would run at (`null` when serve would refuse to boot).
        confined_as: Option<String>,
        /// Its extra read-only grants (`[plugins.hosts.<name>] read_paths`), canonical
        /// paths; empty when none.
        read_paths: Vec<PathBuf>,
        /// Its write limits and the state directory's current use.
        write_limits: HostWriteLimits,
        /// What doctor warns about without failing a check (a host inside the work tree),
        /// one sentence each; empty when none.
        warnings: Vec<String>,
    },
    /// Its executable could not be resolved or read.
    #[schemars(transform = crate::record::schema_fields::every_field_required)]
    Unresolvable {
        /// The host's name.
        name: String,
        /// Always `null`.
        executable: Option<PathBuf>,
        /// Always `null`.
        sha256: Option<String>,
        /// Always `null`.
        pin_status: Option<String>,
        /// Listed in `[plugins] disable`.
        disabled: bool,
        /// Why.
        error: String,
    },
}

/// The phase plan: `[phases] list` and the next rounds with their phase.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct PhasePlan {
    /// `[phases] list` (empty without phases).
    pub phases: Vec<String>,
    /// The upcoming rounds.
    pub rounds: Vec<PlannedRound>,
}

/// One upcoming round.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = crate::record::schema_fields::every_field_required)]
pub(crate) struct PlannedRound {
    /// Its number.
    pub round_num: u64,
    /// Its phase (`null` without phases).
    pub phase: Option<String>,
}

/// The full report and the exit status it implies.
pub(crate) struct Report {
    /// The document.
    pub doc: DoctorDoc,
    /// The exit status ([`exit::OK`], [`exit::FAILURE`] or [`exit::CONFIG`]).
    pub code: u8,
}

/// Runs every check for the config at `config_path`; `rounds` is how many upcoming rounds
/// the phase plan covers.
pub(crate) async fn run(config_path: &Path, rounds: u64) -> Report {
    let caps = probe();
    let mut checks = Vec::new();
    let config = match config::load(config_path) {
        Ok(config) => {
            checks.push(check(
                "config",
                true,
                format!("{} is valid", config.path.display()),
                "",
            ));
            config
        }
        Err(err) => {
            checks.push(check(
                "config",
                false,
                err.to_string(),
                "fix the key named above; `agent-runner init` writes a valid file",
            ));
            return Report {
                doc: DoctorDoc {
                    schema_version: 1,
                    ok: false,
                    config: None,
                    checks,
                    warnings: Vec::new(),
                    sandbox: doctor_sandbox(None, &caps, None, BTreeMap::new(), Vec::new()),
                    hosts: Vec::new(),
                    phase_plan: None,
                    sigterm_grace: None,
                    agent_sandbox: None,
                    agent_env: None,
                },
                code: exit::CONFIG,
            };
        }
    };
    let mut refuse_boot = false;
    let gate = match SandboxGate::evaluate(config.plugins.sandbox, caps.clone()) {
        Ok(gate) => {
            let reason = format!(
                "requested `{}`, hosts run at `{}`",
                gate.requested.as_str(),
                gate.applied.as_str()
            );
            checks.push(check("sandbox", true, reason, ""));
            Some(gate)
        }
        Err(refused) => {
            refuse_boot = true;
            checks.push(check(
                "sandbox",
                false,
                refused.to_string(),
                "enable Landlock and seccomp in the kernel, or set [plugins] sandbox = \"prefer\"",
            ));
            None
        }
    };
    let agent_sandbox = agent_sandbox_block(&config, &caps);
    match &agent_sandbox.refused {
        None => checks.push(check(
            "agent_sandbox",
            true,
            format!(
                "requested `{}`, the agent runs at `{}`",
                agent_sandbox.requested, agent_sandbox.achieved_tier
            ),
            "",
        )),
        Some(refused) => {
            refuse_boot = true;
            checks.push(check(
                "agent_sandbox",
                false,
                refused.clone(),
                "enable Landlock, seccomp and user namespaces, run as root, or set [agent.sandbox] mode = \"prefer\"",
            ));
        }
    }
    let (agent_env, agent_env_check) = agent_env_view(&config);
    checks.push(agent_env_check);
    let observer_warning = withheld_scan_warning(&config);
    let (endpoint_checks, endpoint_warnings) =
        endpoint_findings(&config, &agent_sandbox.achieved_tier, caps.landlock_abi);
    checks.extend(endpoint_checks);
    checks.extend(key_broker_checks(&config));
    let (telemetry_checks, telemetry_warnings) =
        telemetry_findings(&config, &agent_sandbox.achieved_tier, caps.landlock_abi);
    checks.extend(telemetry_checks);
    let launcher = launcher_check();
    refuse_boot |= !launcher.ok;
    checks.push(launcher);
    let repo = Repo::new(
        &config.runtime.work_dir,
        crate::runtime::git::attribution::OwnFiles::default(),
    );
    let mut without_git = None;
    let work_dir_check = match repo.not_a_work_tree().await {
        None => check(
            "work_dir",
            true,
            format!(
                "{} is a git working tree",
                config.runtime.work_dir.display()
            ),
            "",
        ),
        // Rounds run there without git (docs/operations.md, "Without git"): a warning,
        // unless the config asks for git work no round can do (`serve` exits 78 for it).
        Some(outside) if outside.outside_git => {
            let vcs = &config.vcs;
            let needs_git = vcs.dirty_action_written && vcs.dirty_action != DirtyAction::Ignore;
            refuse_boot |= needs_git;
            if needs_git {
                check(
                    "work_dir",
                    false,
                    format!(
                        "{}; [vcs] dirty_action = \"{}\" needs git",
                        outside.reason,
                        vcs.dirty_action.as_str()
                    ),
                    format!("{}, or write dirty_action = \"ignore\"", outside.fix),
                )
            } else {
                without_git = Some(check("work_dir", false, outside.reason, outside.fix));
                check(
                    "work_dir",
                    true,
                    format!(
                        "{} runs without git (see warnings)",
                        config.runtime.work_dir.display()
                    ),
                    "",
                )
            }
        }
        Some(refusal) => {
            refuse_boot = true;
            check("work_dir", false, refusal.reason, refusal.fix)
        }
    };
    let is_work_tree = work_dir_check.ok && without_git.is_none();
    checks.push(work_dir_check);
    if is_work_tree {
        checks.push(watched_check(&config, &repo).await);
    }
    checks.push(log_dir_check(&config.runtime.log_dir));
    checks.push(host_health_check(&config));
    checks.push(round_cgroup_check(&config));
    checks.push(pidfd_check());
    checks.push(prompt_check(&config.prompt.files[0]));
    checks.push(budget_check(&config));
    checks.push(sessions_check(&config));
    checks.push(agent_changes_check(&config.runtime.state_dir));
    let (notify_checks, notify_warnings) = notify_findings(&config);
    checks.extend(notify_checks);
    let agent = &config.agent.command[0];
    let base = config.path.parent().unwrap_or(Path::new("/"));
    let mut version_warning = None;
    match resolve_executable(agent, base, std::env::var_os("PATH").as_deref()) {
        Ok(path) => {
            checks.push(check(
                "agent",
                true,
                format!("{agent} resolves to {}", path.display()),
                "",
            ));
            checks.push(check(
                "agent_cli",
                true,
                format!("the agent is {}", config.agent.cli.describe()),
                "",
            ));
            if let Some(shim) = config
                .agent_sandbox
                .mode
                .ne(&config::SandboxMode::Off)
                .then(|| crate::runtime::agent::sandbox::agent_shim(&config))
                .flatten()
            {
                checks.push(check("agent_shim", true, shim.describe(), ""));
            }
            // `<program> --version` is the CLI's own only when the program is the CLI or its
            // wrapper (a launcher would print its own version).
            let cli = config.agent.cli.name.filter(|_| {
                matches!(
                    config.agent.cli.how,
                    Identified::FileName | Identified::Wrapper(_)
                )
            });
            match cli.and_then(|cli| crate::operator::agent_version::check(&path, cli)) {
                Some((true, reason, _)) => checks.push(check("agent_version", true, reason, "")),
                Some((false, reason, fix)) => {
                    version_warning = Some(check("agent_version", false, reason, fix))
                }
                None => {}
            }
        }
        Err(err) => checks.push(check(
            "agent",
            false,
            err.to_string(),
            "install the agent CLI or fix [agent] command",
        )),
    }
    let (found, mut warnings) = agent_findings(&config);
    checks.extend(found);
    // `serve` and `round` refuse such a prompt at boot (exit 78): doctor says the same.
    let prompt = crate::runtime::agent::prompt::undeliverable_now(&config);
    refuse_boot |= !prompt.is_empty();
    if prompt.is_empty() {
        checks.push(check(
            "prompt_delivery",
            true,
            "the prompt of every phase can be delivered to its agent",
            "",
        ));
    }
    checks.extend(
        prompt
            .into_iter()
            .map(|(reason, fix)| check("prompt_delivery", false, reason, fix)),
    );
    warnings.extend(version_warning);
    warnings.extend(endpoint_warnings);
    warnings.extend(telemetry_warnings);
    warnings.extend(observer_warning);
    warnings.extend(without_git);
    warnings.extend(layout_warnings(&config));
    warnings.extend(goal_check_warnings(&config));
    warnings.extend(notify_warnings);
    warnings.extend(crate::operator::deviations::warnings(&config));
    let (hosts, hashes) = host_checks(&config, gate.as_ref(), &mut checks);
    let code = if refuse_boot {
        exit::CONFIG
    } else if checks.iter().any(|c| !c.ok) {
        exit::FAILURE
    } else {
        exit::OK
    };
    let next = crate::record::state::peek_next_round(&config.runtime.state_dir).unwrap_or(1);
    let covers = covered_families(hosts.iter().filter_map(DoctorHost::cover), gate.as_ref());
    Report {
        doc: DoctorDoc {
            schema_version: 1,
            ok: code == exit::OK,
            config: Some(config.path.clone()),
            checks,
            warnings,
            sandbox: doctor_sandbox(Some(&config), &caps, gate.as_ref(), hashes, covers),
            hosts,
            phase_plan: Some(phase_plan(&config, next, rounds)),
            sigterm_grace: Some(SigtermGrace::of(&config.agent)),
            agent_sandbox: Some(agent_sandbox),
            agent_env: Some(agent_env),
        },
        code,
    }
}

/// `agent_endpoint`: each endpoint of the agent agent-runner can read
/// ([`crate::runtime::agent::endpoint`]) its sandbox would refuse, named with the port and
/// the key that opens it — a failed check for a variable (`[agent.env]`, the environment),
/// a warning for a CLI config file (one provider of possibly several); one passing check
/// otherwise.
fn endpoint_findings(
    config: &Config,
    tier: &str,
    landlock_abi: Option<u32>,
) -> (Vec<Check>, Vec<Check>) {
    use crate::runtime::agent::endpoint::{connect_rule_applies, endpoints, refusal};
    let rule = connect_rule_applies(config, tier, landlock_abi);
    let found = endpoints(config);
    let (mut failed, mut warned, mut reached) = (Vec::new(), Vec::new(), Vec::new());
    for e in &found {
        let Some(r) = refusal(config, e, rule) else {
            reached.push(format!("{}:{} ({})", e.host, e.port, e.source));
            continue;
        };
        {
            let reason = format!(
                "{} names {}:{}; the agent sandbox would refuse it ({}: {})",
                e.source,
                e.host,
                e.port,
                r.key(),
                r.sentence()
            );
            let c = check("agent_endpoint", false, reason, r.fix());
            if e.certain {
                failed.push(c);
            } else {
                warned.push(c);
            }
        }
    }
    if failed.is_empty() {
        let reason = if found.is_empty() {
            "no base URL or proxy of the agent found in [agent.env], the environment or its CLI's config files: its provider's default (port 443)".to_owned()
        } else if reached.is_empty() {
            "only the CLI config files' endpoints are in question (warnings below)".to_owned()
        } else {
            format!(
                "the agent sandbox lets the agent reach {}",
                reached.join(", ")
            )
        };
        failed.push(check("agent_endpoint", true, reason, ""));
    }
    (failed, warned)
}

/// `key_broker`: what the key broker does for the agent ([`crate::runtime::egress::key_broker`]),
/// one line per provider brokered (the key variable, never its value, and where requests
/// go) and one per key or CLI left as it is, with why (docs/security.md, "The key broker").
/// Informational: a key the agent holds is the operator's choice, not an error.
fn key_broker_checks(config: &Config) -> Vec<Check> {
    let plan = crate::runtime::egress::key_broker::plan(config, &config.agent);
    let mut out: Vec<Check> = plan
        .routes
        .iter()
        .map(|r| {
            let keys: Vec<&str> = r.keys.iter().map(|(k, _)| k.name).collect();
            check(
                "key_broker",
                true,
                format!(
                    "{}: {} stays with the supervisor; the agent gets a placeholder and {} on the supervisor's loopback, forwarded with the key to {} ({}) and nowhere else",
                    r.provider.name,
                    keys.join(", "),
                    r.provider.base_vars.join(", "),
                    r.upstream.url(),
                    r.upstream_source
                ),
                "",
            )
        })
        .collect();
    out.extend(
        plan.left
            .into_iter()
            .map(|why| check("key_broker", true, why, "")),
    );
    out
}

/// `telemetry`, when a collector is set (docs/operations.md "Traces"): where each round's
/// trace goes and from which setting; and a warning for each collector the agent's CLI
/// would export its own telemetry to (ours, and an `OTEL_EXPORTER_OTLP_*ENDPOINT` of
/// `[agent.env]`) that the agent sandbox refuses, judged as `agent_endpoint` judges.
fn telemetry_findings(
    config: &Config,
    tier: &str,
    landlock_abi: Option<u32>,
) -> (Vec<Check>, Vec<Check>) {
    use crate::config::telemetry::{ENDPOINT_VAR, TRACES_ENDPOINT_VAR};
    use crate::runtime::agent::endpoint::{connect_rule_applies, host_port, refusal, Endpoint};
    let Some(ours) = &config.telemetry.endpoint else {
        return (Vec::new(), Vec::new());
    };
    let told = check(
        "telemetry",
        true,
        format!(
            "each round's trace goes to {} (OTLP/HTTP, from {}; service.name {:?})",
            ours.traces_url, ours.source, config.telemetry.service_name
        ),
        "",
    );
    let mut collectors = vec![Endpoint {
        source: ours.source.clone(),
        host: ours.host.clone(),
        port: ours.port,
        proxy: false,
        certain: true,
    }];
    for var in [TRACES_ENDPOINT_VAR, ENDPOINT_VAR] {
        if let Some((host, port)) = config.agent.env.get(var).and_then(|v| host_port(v)) {
            collectors.push(Endpoint {
                source: format!("[agent.env] {var}"),
                host,
                port,
                proxy: false,
                certain: true,
            });
        }
    }
    let rule = connect_rule_applies(config, tier, landlock_abi);
    let warned = collectors
        .iter()
        .filter_map(|e| {
            let r = refusal(config, e, rule)?;
            Some(check(
                "telemetry",
                false,
                format!(
                    "the agent's CLI exporting its own telemetry to the collector {}:{} ({}) would be refused by the agent sandbox ({}: {}); the round's trace is sent by agent-runner and is not affected",
                    e.host,
                    e.port,
                    e.source,
                    r.key(),
                    r.sentence()
                ),
                r.fix(),
            ))
        })
        .collect();
    (vec![told], warned)
}

/// `launcher`: the `plugin-host` launcher beside this binary (docs/security.md "The
/// launcher"), its sha256, and that it is this build's; `serve` and `round` refuse to start
/// without it (exit 78), as every host, agent and goal check starts through it.
fn launcher_check() -> Check {
    use agent_runner_plugin_host::Launcher;
    let path = Launcher::default_path();
    match Launcher::open(&path) {
        Ok(launcher) => check(
            "launcher",
            true,
            format!(
                "{} (sha256 {}, build {})",
                launcher.path().display(),
                launcher.sha256().unwrap_or_else(|e| format!("unreadable: {e}")),
                agent_runner_plugin_host::common::plan::BUILD_ID
            ),
            "",
        ),
        Err(err) => check(
            "launcher",
            false,
            err.to_string(),
            "install agent-runner and plugin-host together (`cargo install --path supervisor` installs both), or copy the plugin-host built with this agent-runner beside it",
        ),
    }
}

/// The agent CLI's preconditions on this machine ([`crate::runtime::agent::preconditions`]), for the
/// agent of every phase: failed checks and warnings named `agent_preconditions`.
fn agent_findings(config: &Config) -> (Vec<Check>, Vec<Check>) {
    let (failures, warnings) = crate::runtime::agent::preconditions::on_this_machine(config);
    let mut failed: Vec<Check> = failures
        .into_iter()
        .map(|(reason, fix)| check("agent_preconditions", false, reason, fix))
        .collect();
    let warned: Vec<Check> = warnings
        .into_iter()
        .map(|(reason, fix)| check("agent_preconditions", false, reason, fix))
        .collect();
    if failed.is_empty() {
        failed.push(check(
            "agent_preconditions",
            true,
            "no known precondition of the agent CLI is unmet on this machine",
            "",
        ));
    }
    (failed, warned)
}

/// What the agent's tree operations can reach (docs/operations.md, "State dir"): a
/// `log_dir` inside the work tree loses its round logs to `git clean -fdx`; a `state_dir`
/// inside it can lose the lock and the round counter. Warnings, not failures: the
/// supervisor runs either way.
/// `goal_check` warnings (docs/security.md "Goal checks"): a check whose command or
/// argument file lies where the agent can write (a round can change what it runs), and,
/// with the agent sandbox on, a check with no `connect_ports` (it runs without TCP; one
/// that used the network loses it).
fn goal_check_warnings(config: &Config) -> Vec<Check> {
    let Some(goal) = &config.goal else {
        return Vec::new();
    };
    let sandboxed = config.agent_sandbox.mode != crate::config::SandboxMode::Off;
    let writable: Vec<&Path> = std::iter::once(config.runtime.work_dir.as_path())
        .chain(
            config
                .agent_sandbox
                .write_paths
                .iter()
                .map(PathBuf::as_path),
        )
        .collect();
    let mut warnings = Vec::new();
    for check_cfg in &goal.checks {
        let files = crate::runtime::steps::goal::check_files(check_cfg);
        let exposed: Vec<String> = files
            .iter()
            .filter(|f| writable.iter().any(|w| f.starts_with(w)))
            .map(|f| f.display().to_string())
            .collect();
        if !exposed.is_empty() {
            warnings.push(check(
                "goal_check",
                false,
                format!(
                    "goal check `{}` runs {} where the agent can write: a round can change what it runs (a changed file is recorded as goal_check_tampered and does not count that round; a module it imports is not caught)",
                    check_cfg.name,
                    exposed.join(", ")
                ),
                "keep check scripts outside the work tree, or treat the check's verdict as the agent's word",
            ));
        }
        if sandboxed && check_cfg.connect_ports.is_empty() {
            warnings.push(check(
                "goal_check",
                false,
                format!(
                    "goal check `{}` runs confined by the agent sandbox with no TCP: if it needs the network (a test database, a registry), it fails",
                    check_cfg.name
                ),
                "list the ports it needs in its [[goal.checks]] connect_ports",
            ));
        }
    }
    warnings
}

/// `agent_observer`: a warning when the credential stores the confined agent never reads
/// hold more entries than the observer walks before each round
/// ([`agent_runner_plugin_host::agent::withheld_files::MAX_WITHHELD_FILES`]): a read of
/// one past the cap is refused by Landlock but not recorded (each round records
/// `agent_scan_truncated`). `None` under `off` or when the walk covers them all.
fn withheld_scan_warning(config: &Config) -> Option<Check> {
    use agent_runner_plugin_host::agent::withheld_files::{WithheldFiles, MAX_WITHHELD_FILES};
    if config.agent_sandbox.mode == crate::config::SandboxMode::Off {
        return None;
    }
    let home = config
        .agent
        .env
        .get("HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(PathBuf::from))?;
    let cli = config.agent.cli.name.unwrap_or("");
    let roots = agent_runner_plugin_host::agent::policy::withheld_paths_of(Some(&home), cli);
    let granted = agent_runner_plugin_host::agent::policy::granted_in_stores(
        &config.agent_sandbox.read_paths,
        &config.agent_sandbox.write_paths,
    );
    WithheldFiles::walk(roots, &granted).truncated().then(|| {
        check(
            "agent_observer",
            false,
            format!("the credential stores the agent never reads hold more than {MAX_WITHHELD_FILES} entries: a read of one past them is refused but not recorded as agent_sandbox_denied (each round records agent_scan_truncated)"),
            "move what is not a credential out of those stores (a large cloud SDK cache under ~/.config/gcloud, ~/.aws/cli/cache), so the walk covers every file",
        )
    })
}

fn layout_warnings(config: &Config) -> Vec<Check> {
    use crate::config::state_dir::in_tree;
    let rt = &config.runtime;
    let mut warnings = Vec::new();
    if in_tree(&rt.work_dir, &rt.state_dir) {
        warnings.push(check(
            "state_dir",
            false,
            format!(
                "{} lies inside the work tree: an agent running `git clean -fdx` deletes the lock, events and round counter, and a second supervisor can start",
                rt.state_dir.display()
            ),
            "remove [runtime] state_dir (the default is outside the tree) or point it outside the work tree",
        ));
    } else if in_tree(&rt.work_dir, &rt.log_dir) {
        warnings.push(check(
            "log_dir",
            false,
            format!(
                "{} lies inside the work tree: an agent running `git clean -fdx` deletes the round logs (the lock, events and state are safe in {})",
                rt.log_dir.display(),
                rt.state_dir.display()
            ),
            "point [runtime] log_dir outside the work tree, e.g. \"~/.agent-runner/{project}/logs\"",
        ));
    }
    warnings
}

/// `host_health`: fails when a round would be deferred now (a critical reading against
/// `[monitor.host_health]`, docs/operations.md "Host health"); a warning passes, named.
fn host_health_check(config: &Config) -> Check {
    let cfg = &config.monitor.host_health;
    match host_health::assess(cfg, &Reading::take(&config.runtime.log_dir)) {
        Some(p) if p.severity == "critical" => check(
            "host_health",
            false,
            format!("rounds would be deferred now ({}): {}", p.signal, p.message),
            "free space on the log dir's filesystem or memory on the host, or adjust [monitor.host_health]",
        ),
        Some(p) => check("host_health", true, format!("warning ({}): {}", p.signal, p.message), ""),
        None => check("host_health", true, "disk, memory and memory pressure below their thresholds", ""),
    }
}

/// `pidfd`: whether `pidfd_open(2)` works here. Every host launch and every agent start
/// opens a pidfd of the supervisor ([`agent_runner_plugin_host::common::pid_namespace::own_pidfd`]),
/// so without it no host and no agent starts: a runtime that lacks the call (gVisor
/// before it implemented pidfds, docs/operations.md "On agent-sandbox") fails here.
fn pidfd_check() -> Check {
    match agent_runner_plugin_host::common::pid_namespace::own_pidfd() {
        Ok(_) => check("pidfd", true, "pidfd_open(2) works", ""),
        Err(e) => check(
            "pidfd",
            false,
            format!("pidfd_open(2) fails ({e}): no host can launch and no agent can start"),
            "run on Linux 5.3 or later, or a runtime that implements pidfd_open (a current gVisor)",
        ),
    }
}

/// `round_cgroup`: whether the supervisor's memory cgroup is delegated, so rounds run in
/// cgroups of their own (docs/operations.md, "Round cgroups"); without delegation, how to
/// get it. Informational: rounds run either way, so it always passes.
fn round_cgroup_check(config: &Config) -> Check {
    let cfg = &config.monitor.host_health;
    let reason = match round_cgroup::delegation(cfg.memory.round_cgroup) {
        Ok(d) => format!(
            "delegated: each round runs in its own child of {} (cgroup {} memory)",
            d.dir.display(),
            d.layout.as_str()
        ),
        Err(why) => format!(
            "not delegated ({why}): rounds run in the supervisor's cgroup{}; to get one \
             per round, run serve under systemd with Delegate=yes (the unit of \
             `agent-runner install` sets it), or, on cgroup v1, chown the supervisor's \
             memory cgroup directory to its user; root on a machine whose cgroups it \
             manages sets [monitor.host_health] memory.round_cgroup = \"on\"",
            if cfg.memory.round_high_mb.is_some() || cfg.memory.round_max_mb.is_some() {
                " and memory.round_high_mb / round_max_mb are not applied"
            } else {
                ""
            }
        ),
    };
    check("round_cgroup", true, reason, "")
}

/// `watched` (informational, always passes): what the watched tier does after each round
/// (docs/security.md, "What runs later: the watched tier") and the watched keys the
/// repository's config sets now, which a round leaves alone as the operator's.
async fn watched_check(config: &Config, repo: &crate::runtime::git::repo::Repo) -> Check {
    use crate::runtime::git::config_watch::ConfigBefore;
    let now = ConfigBefore::record(repo, &ConfigBefore::default()).await;
    let present = match now.map(|c| c.watched_keys()) {
        Ok(keys) if keys.is_empty() => "none set now".to_owned(),
        Ok(keys) => format!("set now, kept as the operator's: {}", keys.join(", ")),
        Err(err) => format!("cannot list them now: {err}"),
    };
    let surface = if config.vcs.commit_exec_surface {
        "committed with the rest ([vcs] commit_exec_surface = true)"
    } else {
        "left uncommitted for you ([vcs] commit_exec_surface = false)"
    };
    check(
        "watched",
        true,
        format!(
            "after each round, the git config keys that run a program the round added are reverted ({present}); changes to CI and editor files are told (exec_surface_changed) and {surface}"
        ),
        "",
    )
}

/// `log_dir`: an existing writable directory, or creatable (its nearest existing ancestor
/// is a writable directory). Checked with `access(2)`; nothing is created.
/// `budget`: the `[budget]` caps set and where a round's spend comes from for the agent's
/// CLI: `broker` when the key broker would broker its key (what the provider bills, read
/// in its answers: [`crate::budget::billed`]), else its `CLI report` or the `table`
/// ([`crate::budget::source_of`]); fails when caps are set and neither the broker nor the
/// CLI reports usage, so they would never count a round.
fn budget_check(config: &config::Config) -> Check {
    let budget = &config.budget;
    let (reported, cli_words) = crate::budget::source_of(config.agent.cli.name, budget);
    let plan = crate::runtime::egress::key_broker::plan(config, &config.agent);
    let brokered: Vec<&str> = plan.routes.iter().map(|r| r.provider.name).collect();
    let counted = reported || !brokered.is_empty();
    let source = if brokered.is_empty() {
        let from = if reported {
            "from the CLI's report or the price table"
        } else {
            "nowhere: no source counts it"
        };
        format!(
            "{from}, the key not being brokered (what the agent's output says is what counts): {cli_words}"
        )
    } else {
        format!(
            "from the broker: what {} bills, read by the key broker in the answers it relays and priced by the table, counted first (the CLI's own report kept beside it, an under-report recorded); when no answer's usage is read: {cli_words}",
            brokered.join(" and ")
        )
    };
    let mut caps: Vec<String> = [
        ("round_usd", budget.round_usd),
        ("daily_usd", budget.daily_usd),
        ("total_usd", budget.total_usd),
    ]
    .iter()
    .filter_map(|(k, v)| v.map(|v| format!("{k} ${v}")))
    .collect();
    caps.extend(
        [
            ("daily_tokens", budget.daily_tokens),
            ("total_tokens", budget.total_tokens),
        ]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k} {v}"))),
    );
    if caps.is_empty() {
        return check(
            "budget",
            true,
            format!("no caps ([budget]); spend: {source}"),
            "",
        );
    }
    check(
        "budget",
        counted,
        format!(
            "caps: {} (day in {}); spend: {source}",
            caps.join(", "),
            budget.zone().1
        ),
        "run an agent CLI that reports its usage (docs/detectors.md, \"Usage\") or a post-round host that reports it: otherwise the caps never count a round",
    )
}

/// `sessions` (informational, always passes): whether `serve` resumes the agent's session
/// from round to round, and the bounds after which it starts one afresh (`[agent]
/// session_max_rounds`, `session_max_tokens`, `session_max_hours`), the base config's and
/// each phase's that differs (docs/agent-clis.md, "Session resume").
fn sessions_check(config: &Config) -> Check {
    let one = |agent: &config::AgentConfig| {
        let b = &agent.session_bounds;
        let bounds = format!(
            "session_max_rounds {}, session_max_tokens {}, session_max_hours {}",
            b.max_rounds,
            b.max_tokens,
            b.max_age.as_secs() / 3600
        );
        let cli = agent.cli.name;
        let resumed = agent.session_resume && crate::config::session_resume::form_of(cli).is_some();
        if resumed {
            format!(
                "{} sessions resumed, started afresh past {bounds}",
                cli.unwrap_or("the agent's")
            )
        } else if !agent.session_resume {
            format!("no session resume (session_resume = false); bounds {bounds}")
        } else {
            format!(
                "no session resume ({} cannot resume a session); bounds {bounds}",
                cli.unwrap_or("the agent")
            )
        }
    };
    let base = one(&config.agent);
    let mut words = base.clone();
    for (name, over) in &config.phases.overrides {
        if let Some(agent) = &over.agent {
            let phase = one(agent);
            if phase != base {
                words.push_str(&format!("; phase {name}: {phase}"));
            }
        }
    }
    check("sessions", true, words, "")
}

/// `agent_changes`: what agents changed that the supervisor still refuses — the entries of
/// `agent-changes.json` in `state_dir` whose path is still as the agent left it
/// (docs/security.md, "What an agent changed, held across boots"). Fails when one is: the
/// next round meets its refusal (a prompt or the log dir refused, a check that never
/// counts). A held config file is told by the `config` check (it is not loaded).
fn agent_changes_check(state_dir: &Path) -> Check {
    use crate::record::agent_changes::{AgentChanges, FILE};
    let changes = AgentChanges::load(state_dir);
    let held: Vec<String> = changes
        .still_held()
        .map(|c| {
            format!(
                "{} {} (round {})",
                c.kind.as_str(),
                c.path.display(),
                c.round_num
            )
        })
        .collect();
    if held.is_empty() {
        return check(
            "agent_changes",
            true,
            "nothing an agent changed is held",
            "",
        );
    }
    check(
        "agent_changes",
        false,
        format!(
            "refused while they stay as an agent left them: {}",
            held.join("; ")
        ),
        format!(
            "look at each; to take one as it is, save the file again or make the link anew (or remove its entry from {})",
            state_dir.join(FILE).display()
        ),
    )
}

/// `notify`: the `[[notify.webhooks]]` entries, one check each (`notify:<name>`): where
/// its URL comes from (`url_env`, read from this environment — `serve` reads its own at
/// start — or a literal `url`), its format and kinds, checked as `serve` checks them
/// ([`crate::runtime::outward::notify::resolve_one`]); never the URL. Warnings: a literal `url`
/// (the config is readable by the agent), `url_env` while the agent inherits the whole
/// environment (`[agent.sandbox] mode = "off"`).
fn notify_findings(config: &Config) -> (Vec<Check>, Vec<Check>) {
    use crate::runtime::outward::notify::{resolve_one, DEFAULT_EVENTS};
    let hooks = &config.notify.webhooks;
    if hooks.is_empty() {
        return (
            vec![check("notify", true, "no webhooks ([notify])", "")],
            Vec::new(),
        );
    }
    let mut checks = Vec::new();
    let mut warnings = Vec::new();
    let var = |name: &str| std::env::var(name).ok();
    for hook in hooks {
        let name = format!("notify:{}", hook.label());
        let kinds = match &hook.events {
            None => format!("the default kinds ({})", DEFAULT_EVENTS.join(", ")),
            Some(kinds) => kinds.join(", "),
        };
        let source = match hook.url_env() {
            Some(env) => {
                format!("url_env {env} (set in this environment; serve reads its own at start)")
            }
            None => "url written in the config".to_owned(),
        };
        match resolve_one(config, hook, &var) {
            Ok(target) => {
                let scheme = if target.url.tls { "https" } else { "http" };
                checks.push(check(
                    &name,
                    true,
                    format!(
                        "{source}; {scheme}; format {:?}; sends {kinds}; the URL is not shown",
                        hook.format.word()
                    ),
                    "",
                ));
            }
            Err(ConfigError::Key { key, message, .. }) => checks.push(check(
                &name,
                false,
                format!("{key}: {message}"),
                "fix the entry, or set its variable where serve starts (docs/operations.md, \"Notifications\")",
            )),
            Err(other) => checks.push(check(&name, false, other.to_string(), "")),
        }
        if hook.url_env().is_none() {
            warnings.push(check(
                &name,
                false,
                "the webhook's URL is written in the config, which the agent can read",
                "use url_env for a URL that holds a secret (a chat webhook's path is its key); url is for URLs that hold none",
            ));
        } else if config.agent_sandbox.mode == crate::config::SandboxMode::Off {
            warnings.push(check(
                &name,
                false,
                "[agent.sandbox] mode = \"off\": the agent inherits serve's whole environment, the webhook's variable included",
                "confine the agent (mode = \"prefer\" or \"require\"), whose environment is an allow-list",
            ));
        }
    }
    (checks, warnings)
}

fn log_dir_check(log_dir: &Path) -> Check {
    use nix::unistd::{access, AccessFlags};
    let writable = |p: &Path| access(p, AccessFlags::W_OK | AccessFlags::X_OK).is_ok();
    let fix = format!(
        "make {} writable for this user, or point [runtime] log_dir somewhere writable",
        log_dir.display()
    );
    if log_dir.exists() {
        let ok = log_dir.is_dir() && writable(log_dir);
        let reason = if !log_dir.is_dir() {
            format!("{} exists and is not a directory", log_dir.display())
        } else if ok {
            format!("{} is writable", log_dir.display())
        } else {
            format!("{} is not writable", log_dir.display())
        };
        return check("log_dir", ok, reason, fix);
    }
    match log_dir.ancestors().skip(1).find(|p| p.exists()) {
        Some(ancestor) if ancestor.is_dir() && writable(ancestor) => check(
            "log_dir",
            true,
            format!(
                "{} does not exist yet; serve creates it (under writable {})",
                log_dir.display(),
                ancestor.display()
            ),
            "",
        ),
        Some(ancestor) => check(
            "log_dir",
            false,
            format!(
                "{} does not exist and cannot be created: {} is not a writable directory",
                log_dir.display(),
                ancestor.display()
            ),
            fix,
        ),
        None => check(
            "log_dir",
            false,
            format!("{} has no existing ancestor", log_dir.display()),
            fix,
        ),
    }
}

/// The prompt file: present, valid UTF-8, and not empty once its front matter is
/// stripped (an empty or cut prompt would burn rounds doing nothing).
fn prompt_check(path: &Path) -> Check {
    let fix = "write the prompt to this file, or fix [prompt] file";
    let (ok, reason) = match std::fs::read(path) {
        Err(e) => (false, format!("cannot read {}: {e}", path.display())),
        Ok(bytes) => match String::from_utf8(bytes) {
            Err(e) => (
                false,
                format!(
                    "{} is not valid UTF-8 after byte {} (truncated or binary?)",
                    path.display(),
                    e.utf8_error().valid_up_to()
                ),
            ),
            Ok(text)
                if crate::runtime::agent::prompt::strip_front_matter(&text)
                    .trim()
                    .is_empty() =>
            {
                (
                    false,
                    format!("{} is empty (front matter aside)", path.display()),
                )
            }
            Ok(text) => (true, format!("{} ({} bytes)", path.display(), text.len())),
        },
    };
    check("prompt", ok, reason, fix)
}

fn host_checks(
    config: &Config,
    gate: Option<&SandboxGate>,
    checks: &mut Vec<Check>,
) -> (Vec<DoctorHost>, BTreeMap<String, String>) {
    let require = config.plugins.sandbox == config::SandboxMode::Require;
    let mut hosts = Vec::new();
    let mut hashes = BTreeMap::new();
    for cfg in &config.plugins.hosts {
        let disabled = config.plugins.disable.contains(&cfg.name);
        let name = format!("host:{}", cfg.name);
        match check_pin(config, cfg) {
            Ok(checked) => {
                let sha = checked.actual.to_string();
                hashes.insert(cfg.name.clone(), sha.clone());
                let interpreter = checked
                    .exe
                    .interpreter
                    .as_ref()
                    .map(|i| i.path.display().to_string());
                let (ok, reason, fix) = match &checked.status {
                    PinStatus::Verified => (true, "pin verified".to_owned(), String::new()),
                    PinStatus::Mismatch { expected } => (
                        false,
                        format!("pin mismatch: [plugins.pin] says {expected}, the file hashes to {sha}; serve refuses this host"),
                        "if the new binary is trusted, update its [plugins.pin] line; otherwise restore the pinned file".to_owned(),
                    ),
                    PinStatus::Unpinned if require => (
                        false,
                        "not pinned; serve refuses unpinned hosts under sandbox = \"require\"".to_owned(),
                        format!("add `{} = \"{sha}\"` to [plugins.pin]", cfg.name),
                    ),
                    PinStatus::Unpinned => (true, "not pinned (allowed under sandbox = \"prefer\"/\"off\")".to_owned(), String::new()),
                };
                if !disabled {
                    checks.push(check(&name, ok, reason, fix));
                }
                let warnings = host_warnings(config, &checked.path);
                hosts.push(DoctorHost::Checked {
                    name: cfg.name.clone(),
                    executable: checked.path,
                    sha256: sha,
                    pin_status: checked.status.as_str().to_owned(),
                    disabled,
                    interpreter_pin: interpreter.as_ref().map(|_| "not pinned".to_owned()),
                    interpreter,
                    provides: cfg.provides.iter().copied().collect(),
                    confined_as: gate.map(|g| g.applied.as_str().to_owned()),
                    read_paths: cfg.read_paths.clone(),
                    write_limits: HostWriteLimits::of(config, cfg),
                    warnings,
                });
            }
            Err(err) => {
                let message = err.to_string();
                if !disabled {
                    checks.push(check(
                        &name,
                        false,
                        message.clone(),
                        "fix the host's command in [plugins.hosts]",
                    ));
                }
                hosts.push(DoctorHost::Unresolvable {
                    name: cfg.name.clone(),
                    executable: None,
                    sha256: None,
                    pin_status: None,
                    disabled,
                    error: message,
                });
            }
        }
    }
    (hosts, hashes)
}

/// What `doctor` warns about a host at `exe` (canonical) without failing a check: a host
/// inside the work tree reads its sibling files (confined hosts may read `work_dir`),
/// which its pin does not cover and the agent can write (docs/security.md).
fn host_warnings(config: &Config, exe: &Path) -> Vec<String> {
    let work_dir = config
        .runtime
        .work_dir
        .canonicalize()
        .unwrap_or_else(|_| config.runtime.work_dir.clone());
    let mut warnings = Vec::new();
    if exe.starts_with(&work_dir) {
        warnings.push(format!(
            "{} lives inside the work tree {}: the files beside it are readable to it, not \
             covered by its pin, and writable by the agent; install the host outside the work tree",
            exe.display(),
            work_dir.display()
        ));
    }
    warnings
}

/// What [`covered_families`] needs to know of one host (doctor's and peek's `hosts`).
pub(crate) struct HostCover<'a> {
    /// Listed in `[plugins] disable`.
    pub disabled: bool,
    /// Its pin status (`verified`, `unpinned`, …).
    pub pin_status: &'a str,
    /// Its `provides`.
    pub provides: &'a [Family],
}

impl DoctorHost {
    /// The host as [`covered_families`] sees it; `None` when it cannot be resolved.
    pub(crate) fn cover(&self) -> Option<HostCover<'_>> {
        match self {
            DoctorHost::Checked {
                disabled,
                pin_status,
                provides,
                ..
            } => Some(HostCover {
                disabled: *disabled,
                pin_status,
                provides,
            }),
            DoctorHost::Unresolvable { .. } => None,
        }
    }
}

/// The hook families really confined: those of the hosts that would be launched (enabled,
/// and admitted by the pin rules: verified, or unpinned when pins are not required), when the
/// gate applies a tier other than `unconfined`, in the reference system's spelling
/// ([`Family::registry_key`]: `spawn_hooks`, `dirty_handlers`, …). Sorted, without
/// duplicates.
pub(crate) fn covered_families<'a>(
    hosts: impl IntoIterator<Item = HostCover<'a>>,
    gate: Option<&SandboxGate>,
) -> Vec<String> {
    let Some(gate) = gate.filter(|g| g.applied != Tier::Unconfined) else {
        return Vec::new();
    };
    let mut families: Vec<String> = hosts
        .into_iter()
        .filter(|h| !h.disabled)
        .filter(|h| {
            h.pin_status == PinStatus::Verified.as_str()
                || (h.pin_status == PinStatus::Unpinned.as_str() && !gate.pins_required())
        })
        .flat_map(|h| h.provides.iter().map(|f| f.registry_key().to_owned()))
        .collect();
    families.sort_unstable();
    families.dedup();
    families
}

fn doctor_sandbox(
    config: Option<&Config>,
    caps: &Capabilities,
    gate: Option<&SandboxGate>,
    hashes: BTreeMap<String, String>,
    covers: Vec<String>,
) -> DoctorSandbox {
    DoctorSandbox {
        block: sandbox_block(config, caps, gate, covers),
        libseccomp_present: false,
        third_party_plugin_hashes: hashes,
    }
}

/// The sandbox block shared by `doctor` and `peek` (`plugins.sandbox`); `covers` comes from
/// [`covered_families`].
pub(crate) fn sandbox_block(
    config: Option<&Config>,
    caps: &Capabilities,
    gate: Option<&SandboxGate>,
    covers: Vec<String>,
) -> SandboxBlock {
    SandboxBlock {
        requested: config.map(|c| c.plugins.sandbox.as_str().to_owned()),
        achieved_tier: gate
            .map(|g| g.applied)
            .unwrap_or(Tier::Unconfined)
            .as_str()
            .to_owned(),
        available_tier: caps.tier().as_str().to_owned(),
        landlock_abi: caps.landlock_abi,
        seccomp: caps.seccomp,
        unconfined_reason: caps.unconfined_reason.clone(),
        covers,
        layers: agent_runner_plugin_host::host::layers::layers(
            gate.map(|g| g.applied).unwrap_or(Tier::Unconfined),
            caps.landlock_abi.unwrap_or(0),
        )
        .into_iter()
        .map(LayerView::from)
        .collect(),
    }
}

/// The phase plan of `count` rounds from round `first` (the rotation rule is
/// [`Config::phase_for_round`]).
fn phase_plan(config: &Config, first: u64, count: u64) -> PhasePlan {
    PhasePlan {
        phases: config.phases.list.clone(),
        rounds: (first..first.saturating_add(count))
            .map(|n| PlannedRound {
                round_num: n,
                phase: config.phase_for_round(n).map(str::to_owned),
            })
            .collect(),
    }
}

/// The human form of a report.
pub(crate) fn render(doc: &DoctorDoc) -> String {
    let mut out = String::new();
    for c in &doc.checks {
        out.push_str(&format!(
            "{} {}: {}\n",
            if c.ok { "  ok  " } else { "  FAIL" },
            c.name,
            c.reason
        ));
        if !c.ok {
            out.push_str(&format!("         fix: {}\n", c.how_to_fix));
        }
    }
    for w in &doc.warnings {
        out.push_str(&format!(
            "  warn {}: {}\n         fix: {}\n",
            w.name, w.reason, w.how_to_fix
        ));
    }
    if let Some(plan) = doc.phase_plan.as_ref().filter(|p| !p.rounds.is_empty()) {
        if plan.phases.is_empty() {
            out.push_str(
                "\nnext rounds: no [phases] configured; every round runs the same prompt\n",
            );
        } else {
            let rounds: Vec<String> = plan
                .rounds
                .iter()
                .map(|r| {
                    format!(
                        "R{} {}",
                        r.round_num,
                        r.phase.as_deref().unwrap_or("(no phase)")
                    )
                })
                .collect();
            out.push_str(&format!("\nnext rounds: {}\n", rounds.join(", ")));
        }
    }
    if let Some(sg) = &doc.sigterm_grace {
        let presets: Vec<String> = crate::runtime::agent::cooperative::COOPERATIVE
            .iter()
            .map(|(name, signal)| format!("{name} ({})", signal.as_str()))
            .collect();
        out.push_str(&format!(
            "\ncooperative presets: {}\nsigterm grace: {}s ({}{}, agent={})\n",
            presets.join(", "),
            sg.resolved_s,
            if sg.cooperative {
                "cooperative"
            } else {
                "non-cooperative"
            },
            sg.signal
                .as_deref()
                .map(|s| format!(", signal={s}"))
                .unwrap_or_default(),
            sg.agent
        ));
    }
    let s = &doc.sandbox.block;
    out.push_str(&format!(
        "\nsandbox: requested={} achieved_tier={} landlock_abi={} seccomp={}{}\n",
        s.requested.as_deref().unwrap_or("?"),
        s.achieved_tier,
        s.landlock_abi
            .map_or_else(|| "null".to_owned(), |abi| abi.to_string()),
        s.seccomp,
        s.unconfined_reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    ));
    for l in &s.layers {
        out.push_str(&format!(
            "  {:<17} {:<3} {}\n",
            l.name,
            if l.on { "on" } else { "off" },
            l.detail
        ));
    }
    if let Some(a) = &doc.agent_sandbox {
        out.push_str(&format!(
            "\nagent sandbox: requested={} achieved_tier={}{}\n",
            a.requested,
            a.achieved_tier,
            a.refused
                .as_deref()
                .map(|r| format!(" (refused: {r})"))
                .unwrap_or_default()
        ));
        for l in &a.layers {
            out.push_str(&format!(
                "  {:<17} {:<3} {}\n",
                l.name,
                if l.on { "on" } else { "off" },
                l.detail
            ));
        }
        if let Some(replaced) = &a.own_sandbox_replaced {
            out.push_str(&format!("  {replaced}\n"));
        }
    }
    if !doc.hosts.is_empty() {
        out.push_str("\nhosts:\n");
        for h in &doc.hosts {
            let (name, status, where_) = match h {
                DoctorHost::Checked {
                    name,
                    pin_status,
                    executable,
                    ..
                } => (name, pin_status.as_str(), executable.display().to_string()),
                DoctorHost::Unresolvable { name, error, .. } => (name, "error", error.clone()),
            };
            out.push_str(&format!("  {name:<20} {status:<9} {where_}\n"));
            if let DoctorHost::Checked {
                interpreter: Some(interp),
                ..
            } = h
            {
                out.push_str(&format!("  {:<20} interpreter {interp} (not pinned)\n", ""));
            }
            if let DoctorHost::Checked {
                read_paths,
                write_limits: w,
                warnings,
                ..
            } = h
            {
                for path in read_paths {
                    out.push_str(&format!(
                        "  {:<20} reads {} (read_paths)\n",
                        "",
                        path.display()
                    ));
                }
                out.push_str(&format!(
                    "  {:<20} writes: {} MiB per file, TMPDIR {} MiB, state {:.1} of {} MiB used\n",
                    "",
                    w.file_max_mb,
                    w.tmp_max_mb,
                    w.state_used_bytes as f64 / 1048576.0,
                    w.state_max_mb
                ));
                for warning in warnings {
                    out.push_str(&format!("  {:<20} warning: {warning}\n", ""));
                }
            }
        }
        out.push_str("\n# ready to paste into agent-runner.toml\n[plugins.pin]\n");
        for h in &doc.hosts {
            if let DoctorHost::Checked { name, sha256, .. } = h {
                out.push_str(&format!("{name} = \"{sha256}\"\n"));
            }
        }
    }
    out
}
