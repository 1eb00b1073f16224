//! `doctor`: what would happen on `serve`, without starting anything (it hashes files only,
//! writes nothing, starts no host). Checks with name / ok / reason / how to fix, the sandbox
//! probe, and every configured host's executable, `sha256:<64 hex>` and pin status; the
//! human form prints ready-to-paste `[plugins.pin]` lines.
//!
//! Exit status: 78 when `serve` would refuse to boot (bad config, unmet `require`), 1 when
//! another check fails (e.g. a mismatching or, under `require`, unpinned host), else 0.

use agent_runner_plugin_host::probe::{probe, Capabilities, Tier};
use agent_runner_plugin_host::resolve::resolve_executable;
use agent_runner_protocol::Family;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::path::Path;

use crate::config::{self, Config};
use crate::exit;
use crate::hosts::sandbox::SandboxGate;
use crate::hosts::{check_pin, PinStatus};
use crate::runtime::git::Repo;

/// One check of the report.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// Short name (`config`, `work_dir`, `agent`, `sandbox`, `host:<name>`).
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// What was found.
    pub reason: String,
    /// What to do when it failed (empty when ok).
    pub how_to_fix: String,
}

fn check(
    name: impl Into<String>,
    ok: bool,
    reason: impl Into<String>,
    fix: impl Into<String>,
) -> Check {
    Check {
        name: name.into(),
        ok,
        reason: reason.into(),
        how_to_fix: if ok { String::new() } else { fix.into() },
    }
}

/// The full report and the exit status it implies.
pub struct Report {
    /// The JSON document (`checks`, `sandbox`, `hosts`).
    pub json: Value,
    /// The exit status ([`exit::OK`], [`exit::FAILURE`] or [`exit::CONFIG`]).
    pub code: u8,
}

/// Runs every check for the config at `config_path`; `rounds` is how many upcoming rounds
/// the phase plan covers.
pub async fn run(config_path: &Path, rounds: u64) -> Report {
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
                json: json!({"schema_version": 1, "ok": false, "checks": checks,
                             "sandbox": sandbox_json(None, &caps, None, Map::new(), Vec::new()), "hosts": []}),
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
        Err(message) => {
            refuse_boot = true;
            checks.push(check(
                "sandbox",
                false,
                message,
                "enable Landlock and seccomp in the kernel, or set [plugins] sandbox = \"prefer\"",
            ));
            None
        }
    };
    let repo = Repo::new(&config.runtime.work_dir, &config.runtime.log_dir);
    let is_repo = repo.is_repo().await;
    checks.push(check(
        "work_dir",
        is_repo,
        format!(
            "{} {}",
            config.runtime.work_dir.display(),
            if is_repo {
                "is a git working tree"
            } else {
                "is not a git working tree"
            }
        ),
        "run `git init` in the work dir, or point [runtime] work_dir at one",
    ));
    refuse_boot |= !is_repo;
    checks.push(log_dir_check(&config.runtime.log_dir));
    checks.push(prompt_check(&config.prompt.files[0]));
    let agent = &config.agent.command[0];
    let base = config.path.parent().unwrap_or(Path::new("/"));
    match resolve_executable(agent, base, std::env::var_os("PATH").as_deref()) {
        Ok(path) => checks.push(check(
            "agent",
            true,
            format!("{agent} resolves to {}", path.display()),
            "",
        )),
        Err(err) => checks.push(check(
            "agent",
            false,
            err.to_string(),
            "install the agent CLI or fix [agent] command",
        )),
    }
    let (hosts, hashes) = host_checks(&config, gate.as_ref(), &mut checks);
    let code = if refuse_boot {
        exit::CONFIG
    } else if checks.iter().any(|c| !c.ok) {
        exit::FAILURE
    } else {
        exit::OK
    };
    let next = crate::runtime::state::peek_next_round(&config.runtime.log_dir).unwrap_or(1);
    Report {
        json: json!({"schema_version": 1, "ok": code == exit::OK, "config": config.path, "checks": checks,
                     "sandbox": sandbox_json(Some(&config), &caps, gate.as_ref(), hashes, covered_families(&hosts, gate.as_ref())), "hosts": hosts,
                     "phase_plan": phase_plan(&config, next, rounds)}),
        code,
    }
}

/// `log_dir`: an existing writable directory, or creatable (its nearest existing ancestor
/// is a writable directory). Checked with `access(2)`; nothing is created.
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
                if crate::runtime::prompt::strip_front_matter(&text)
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
) -> (Vec<Value>, Map<String, Value>) {
    let require = config.plugins.sandbox == config::SandboxMode::Require;
    let mut hosts = Vec::new();
    let mut hashes = Map::new();
    for cfg in &config.plugins.hosts {
        let disabled = config.plugins.disable.contains(&cfg.name);
        let name = format!("host:{}", cfg.name);
        match check_pin(config, cfg) {
            Ok(checked) => {
                let sha = checked.actual.to_string();
                hashes.insert(cfg.name.clone(), Value::String(sha.clone()));
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
                hosts.push(json!({
                    "name": cfg.name, "executable": checked.path, "sha256": sha,
                    "pin_status": checked.status.as_str(), "disabled": disabled,
                    "interpreter": interpreter,
                    "interpreter_pin": interpreter.as_ref().map(|_| "not pinned"),
                    "provides": cfg.provides.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
                    "confined_as": gate.map(|g| g.applied.as_str()),
                }));
            }
            Err(message) => {
                if !disabled {
                    checks.push(check(
                        &name,
                        false,
                        message.clone(),
                        "fix the host's command in [plugins.hosts]",
                    ));
                }
                hosts.push(
                    json!({"name": cfg.name, "executable": null, "sha256": null, "pin_status": null,
                                  "disabled": disabled, "error": message}),
                );
            }
        }
    }
    (hosts, hashes)
}

/// The hook families really confined: those of the hosts that would be launched (enabled,
/// and admitted by the pin rules: verified, or unpinned when pins are not required), when the
/// gate applies a tier other than `unconfined`, in the reference system's spelling
/// ([`Family::registry_key`]: `spawn_hooks`, `dirty_handlers`, …). Sorted, without
/// duplicates.
///
/// `hosts` are host entries with `disabled`, `pin_status` and `provides` (doctor's and
/// peek's `hosts` blocks).
pub fn covered_families(hosts: &[Value], gate: Option<&SandboxGate>) -> Vec<String> {
    let Some(gate) = gate.filter(|g| g.applied != Tier::Unconfined) else {
        return Vec::new();
    };
    let mut families: Vec<String> = hosts
        .iter()
        .filter(|h| h["disabled"] == false)
        .filter(|h| {
            h["pin_status"] == PinStatus::Verified.as_str()
                || (h["pin_status"] == PinStatus::Unpinned.as_str() && !gate.pins_required())
        })
        .flat_map(|h| h["provides"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f.as_str().and_then(Family::parse))
        .map(|f| f.registry_key().to_owned())
        .collect();
    families.sort_unstable();
    families.dedup();
    families
}

fn sandbox_json(
    config: Option<&Config>,
    caps: &Capabilities,
    gate: Option<&SandboxGate>,
    hashes: Map<String, Value>,
    covers: Vec<String>,
) -> Value {
    let mut block = sandbox_block(config, caps, gate, covers);
    block.insert("libseccomp_present".into(), Value::Bool(false));
    block.insert("third_party_plugin_hashes".into(), Value::Object(hashes));
    Value::Object(block)
}

/// The sandbox block shared by `doctor` and `peek` (`plugins.sandbox`): `requested`,
/// `achieved_tier` (what hosts run at; `unconfined` when the gate refuses to boot),
/// `available_tier` (what the kernel offers), `landlock_abi`, `seccomp`,
/// `unconfined_reason`, `covers` (from [`covered_families`]).
pub fn sandbox_block(
    config: Option<&Config>,
    caps: &Capabilities,
    gate: Option<&SandboxGate>,
    covers: Vec<String>,
) -> Map<String, Value> {
    let applied = gate.map(|g| g.applied).unwrap_or(Tier::Unconfined);
    let mut block = Map::new();
    let mut put = |key: &str, value: Value| {
        block.insert(key.to_owned(), value);
    };
    put(
        "requested",
        json!(config.map(|c| c.plugins.sandbox.as_str())),
    );
    put("achieved_tier", json!(applied.as_str()));
    put("available_tier", json!(caps.tier().as_str()));
    put("landlock_abi", json!(caps.landlock_abi));
    put("seccomp", json!(caps.seccomp));
    put("unconfined_reason", json!(caps.unconfined_reason));
    put("covers", json!(covers));
    block
}

/// The phase plan of `count` rounds from round `first`: `{phases, rounds: [{round_num,
/// phase}]}` (the rotation rule is [`Config::phase_for_round`]).
fn phase_plan(config: &Config, first: u64, count: u64) -> Value {
    let rounds: Vec<Value> = (first..first.saturating_add(count))
        .map(|n| json!({"round_num": n, "phase": config.phase_for_round(n)}))
        .collect();
    json!({"phases": config.phases.list, "rounds": rounds})
}

/// The human form of a report.
pub fn render(json: &Value) -> String {
    let mut out = String::new();
    for c in json["checks"].as_array().into_iter().flatten() {
        let ok = c["ok"].as_bool().unwrap_or(false);
        out.push_str(&format!(
            "{} {}: {}\n",
            if ok { "  ok  " } else { "  FAIL" },
            c["name"].as_str().unwrap_or(""),
            c["reason"].as_str().unwrap_or("")
        ));
        if !ok {
            out.push_str(&format!(
                "         fix: {}\n",
                c["how_to_fix"].as_str().unwrap_or("")
            ));
        }
    }
    if let Some(plan) = json["phase_plan"]["rounds"]
        .as_array()
        .filter(|p| !p.is_empty())
    {
        let rounds: Vec<String> = plan
            .iter()
            .map(|r| {
                format!(
                    "R{} {}",
                    r["round_num"],
                    r["phase"].as_str().unwrap_or("(no phase)")
                )
            })
            .collect();
        if json["phase_plan"]["phases"]
            .as_array()
            .is_some_and(|p| p.is_empty())
        {
            out.push_str(
                "\nnext rounds: no [phases] configured; every round runs the same prompt\n",
            );
        } else {
            out.push_str(&format!("\nnext rounds: {}\n", rounds.join(", ")));
        }
    }
    let s = &json["sandbox"];
    out.push_str(&format!(
        "\nsandbox: requested={} achieved_tier={} landlock_abi={} seccomp={}{}\n",
        s["requested"].as_str().unwrap_or("?"),
        s["achieved_tier"].as_str().unwrap_or("?"),
        s["landlock_abi"],
        s["seccomp"],
        s["unconfined_reason"]
            .as_str()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    ));
    let hosts = json["hosts"].as_array().cloned().unwrap_or_default();
    if !hosts.is_empty() {
        out.push_str("\nhosts:\n");
        for h in &hosts {
            out.push_str(&format!(
                "  {:<20} {:<9} {}\n",
                h["name"].as_str().unwrap_or(""),
                h["pin_status"].as_str().unwrap_or("error"),
                h["executable"]
                    .as_str()
                    .or(h["error"].as_str())
                    .unwrap_or("")
            ));
            if let Some(interp) = h["interpreter"].as_str() {
                out.push_str(&format!("  {:<20} interpreter {interp} (not pinned)\n", ""));
            }
        }
        out.push_str("\n# ready to paste into agent-runner.toml\n[plugins.pin]\n");
        for h in &hosts {
            if let Some(sha) = h["sha256"].as_str() {
                out.push_str(&format!(
                    "{} = \"{sha}\"\n",
                    h["name"].as_str().unwrap_or("")
                ));
            }
        }
    }
    out
}
