//! The rules of `plugin check`, run in [`super::RULES`] order against one live host.

use agent_runner_protocol::limits::EXIT_AFTER_EOF_S;
use agent_runner_protocol::redact::quote;
use agent_runner_protocol::{
    check_host_events, decode_detection, decode_dirty_result, decode_enrichment,
    decode_initialize_result, decode_observation, decode_post_round_result, decode_round_decision,
    decode_spawn_decision, decode_startup_result, error_codes, methods, Family, HookDecl,
    InvalidMessage,
};
use serde_json::{json, Value};
use std::time::Duration;

use super::prepare::Prepared;
use super::report::{Outcome, Report, Status, RULES};
use super::wire::{HostWire, NoReply, Reply};
use crate::hosts::{declaration_problems, host_initialize_params, EXIT_GRACE};

/// How long a host must stay silent after it starts (before `initialize`).
pub(super) const SILENCE_WINDOW: Duration = Duration::from_millis(300);
/// How long `shutdown` may take to be answered: what serve waits ([`EXIT_GRACE`]).
const SHUTDOWN_TIMEOUT: Duration = EXIT_GRACE;
/// The method no host provides, for the `unknown_method` rule.
const UNKNOWN_METHOD: &str = "agent_runner/no_such_method";

struct Run {
    outcomes: Vec<Outcome>,
}

impl Run {
    fn pass(&mut self, rule: &'static str) {
        self.push(rule, Status::Pass, String::new());
    }

    fn fail(&mut self, rule: &'static str, detail: String) {
        self.push(rule, Status::Fail, detail);
    }

    fn push(&mut self, rule: &'static str, status: Status, detail: String) {
        self.outcomes.push(Outcome {
            rule,
            status,
            detail,
        });
    }

    /// Records `rule` as passed, or failed with the `Err` text as its detail; returns
    /// whether it passed. (`String`, not a type: the detail is free text written for the
    /// report's `detail` field, one sentence per finding with its fix.)
    fn judge(&mut self, rule: &'static str, result: Result<(), String>) -> bool {
        match result {
            Ok(()) => {
                self.pass(rule);
                true
            }
            Err(detail) => {
                self.fail(rule, detail);
                false
            }
        }
    }

    /// Marks every rule not judged yet as skipped.
    fn skip_rest(&mut self, why: &str) {
        for (rule, _) in RULES {
            if !self.outcomes.iter().any(|o| o.rule == *rule) {
                self.push(rule, Status::Skip, why.to_owned());
            }
        }
    }
}

/// Runs every rule against the host of `prepared`.
pub(super) async fn check(prepared: Prepared) -> Report {
    let mut run = Run {
        outcomes: Vec::new(),
    };
    let mut stderr = Vec::new();
    match &prepared.spec {
        Err(why) => {
            run.fail("launch", why.to_string());
            run.skip_rest("the host was not launched");
        }
        Ok(spec) => {
            match HostWire::start(spec) {
                Err(why) => {
                    run.fail("launch", format!("{why}; check that the file is executable and its #! interpreter exists"));
                    run.skip_rest("the host was not launched");
                }
                Ok(mut wire) => {
                    run.pass("launch");
                    let params = host_initialize_params(&prepared.init, &prepared.cfg, spec);
                    converse(&mut run, &mut wire, &prepared, params).await;
                    wire.kill().await;
                    stderr = wire.stderr_tail();
                }
            }
        }
    }
    run.outcomes
        .sort_by_key(|o| RULES.iter().position(|(r, _)| *r == o.rule));
    Report {
        host: prepared.cfg.name.clone(),
        path: prepared.path.as_ref().map(|p| p.display().to_string()),
        tier: prepared.tier,
        pin: prepared.pin,
        outcomes: run.outcomes,
        stderr,
    }
}

/// Why a request got no reply, for a rule's detail.
async fn no_reply(wire: &mut HostWire, what: &str, err: NoReply, timeout: Duration) -> String {
    match err {
        NoReply::Timeout => format!(
            "no answer to {what} within {} s; a hook that needs longer raises its host's \
             `timeout_s` ([plugins.hosts.<name>]); otherwise check that every request gets \
             one line on stdout, flushed (stdout is block-buffered when it is a pipe; the \
             SDKs flush)",
            timeout.as_secs_f32()
        ),
        NoReply::Rejected(seen) => format!(
            "the answer to {what} is not a valid response: {seen}; serve records this as a protocol_violation and kills the host"
        ),
        NoReply::Closed | NoReply::Write(_) => {
            let pipe = match &err {
                NoReply::Write(e) => format!(" (writing the request failed: {e})"),
                _ => String::new(),
            };
            wire.exited_within(Duration::from_millis(500)).await;
            let stderr = if wire.settled_stderr_tail().await.is_empty() {
                "it wrote nothing on stderr"
            } else {
                "its stderr (below) may say why"
            };
            format!(
                "instead of answering {what}{pipe}, the host {}; {stderr}",
                wire.how_it_ended()
            )
        }
    }
}

async fn converse(run: &mut Run, wire: &mut HostWire, prepared: &Prepared, params: Value) {
    // silent_before_initialize: nothing in the first moments, and nothing but the
    // response while initialize is pending (the first line a host writes is that response).
    let early = wire.first_output_within(SILENCE_WINDOW).await;
    let declared = initialize(run, wire, prepared, params).await;
    let early = early.into_iter().chain(wire.stray.drain(..)).next();
    run.judge(
        "silent_before_initialize",
        match early {
            None => Ok(()),
            Some(seen) => Err(format!(
                "wrote {seen} before answering initialize; write nothing until the first request arrives, and answer it first (log to stderr)"
            )),
        },
    );
    let Some((decls, event_kinds)) = declared else {
        run.skip_rest("needs a successful initialize");
        return;
    };
    check_declarations(run, prepared, &decls, &event_kinds);

    // hook_calls
    let calls = call_hooks(wire, prepared, &decls, &event_kinds).await;
    let alive = !matches!(calls, Err((_, true)));
    run.judge("hook_calls", calls.map_err(|(detail, _)| detail));
    if !alive {
        run.skip_rest("the host ended during a hook call");
        return;
    }
    let result = ask_unknown_method(wire).await;
    run.judge("unknown_method", result);
    let result = ask_shutdown(wire).await;
    run.judge("shutdown", result);
    // Children still running when the host has answered `shutdown`: under serve they die
    // with the host's PID namespace, but a host must end what it started itself (and
    // without a namespace, e.g. unprivileged, they would outlive it).
    let at_shutdown = wire.group_members();
    check_ending(run, wire, at_shutdown).await;
}

/// The `initialize` rule (and `hook_names` when a declared name is bad): the host's
/// declared hooks and event kinds, or `None` when it failed.
async fn initialize(
    run: &mut Run,
    wire: &mut HostWire,
    prepared: &Prepared,
    params: Value,
) -> Option<(Vec<HookDecl>, Vec<String>)> {
    let timeout = prepared.cfg.init_timeout;
    let reply = match wire
        .request(methods::INITIALIZE, Some(params), timeout)
        .await
    {
        Ok(reply) => reply,
        Err(err) => {
            let detail = no_reply(wire, "initialize", err, timeout).await;
            run.fail("initialize", detail);
            return None;
        }
    };
    let value = match reply {
        Reply::Error(code, message)
            if code == i64::from(error_codes::UNSUPPORTED_PROTOCOL_VERSION) =>
        {
            run.fail(
                "initialize",
                format!(
                    "refused protocol version {}: {message}; a host must speak version 1",
                    agent_runner_protocol::PROTOCOL_VERSION
                ),
            );
            return None;
        }
        Reply::Error(code, message) => {
            run.fail("initialize", format!("answered error {code}: {message}; fix the cause (often the host's config table), or answer with the result"));
            return None;
        }
        Reply::Result(value) => value,
    };
    match decode_initialize_result(value) {
        Ok(result) => {
            run.pass("initialize");
            Some((result.hooks, result.event_kinds))
        }
        Err(err) if err.field.starts_with("hooks[") && err.field.ends_with(".name") => {
            run.pass("initialize");
            run.fail("hook_names", format!("{err}; names match ^[a-z0-9][a-z0-9_-]{{0,63}}$ and are unique within the host"));
            None
        }
        Err(err) => {
            run.fail(
                "initialize",
                format!("invalid result: {err}; see docs/schema/initialize.result.json"),
            );
            None
        }
    }
}

/// `families_in_provides` and `hook_names`: the rules serve refuses a host by.
fn check_declarations(
    run: &mut Run,
    prepared: &Prepared,
    decls: &[HookDecl],
    event_kinds: &[String],
) {
    let problems = declaration_problems(decls, event_kinds, &prepared.cfg.provides, &[]);
    let provides: Vec<&str> = prepared.cfg.provides.iter().map(|f| f.as_str()).collect();
    for rule in ["families_in_provides", "hook_names"] {
        let seen: Vec<String> = problems
            .iter()
            .filter(|p| p.rule() == rule)
            .map(|p| p.to_string())
            .collect();
        run.judge(
            rule,
            if seen.is_empty() {
                Ok(())
            } else if rule == "families_in_provides" {
                Err(format!(
                    "{} (provides is {provides:?}); serve would refuse the host: add the family to `provides` of [plugins.hosts.{}] or drop the hook",
                    seen.join("; "),
                    prepared.cfg.name
                ))
            } else {
                Err(format!("{}; serve would refuse the host", seen.join("; ")))
            },
        );
    }
}

/// `unknown_method`: a method no host provides must be answered with -32601. `Err`: the
/// finding, report text for [`Run::judge`].
async fn ask_unknown_method(wire: &mut HostWire) -> Result<(), String> {
    let timeout = Duration::from_secs(agent_runner_protocol::limits::DEFAULT_SPAWN_HOOK_TIMEOUT_S);
    match wire.request(UNKNOWN_METHOD, Some(json!({})), timeout).await {
        Ok(Reply::Error(code, _)) if code == i64::from(error_codes::METHOD_NOT_FOUND) => Ok(()),
        Ok(Reply::Error(code, message)) => Err(format!(
            "answered {UNKNOWN_METHOD} with error {code} ({message}); answer methods you do not know with -32601"
        )),
        Ok(Reply::Result(value)) => Err(format!(
            "answered {UNKNOWN_METHOD} with a result ({}); answer methods you do not know with error -32601",
            quote(value.to_string().as_bytes())
        )),
        Err(err) => Err(no_reply(wire, UNKNOWN_METHOD, err, timeout).await),
    }
}

/// `shutdown`: answered with `null` within [`SHUTDOWN_TIMEOUT`]. `Err`: the finding,
/// report text for [`Run::judge`].
async fn ask_shutdown(wire: &mut HostWire) -> Result<(), String> {
    match wire
        .request(methods::SHUTDOWN, None, SHUTDOWN_TIMEOUT)
        .await
    {
        Ok(Reply::Result(Value::Null)) => Ok(()),
        Ok(Reply::Result(value)) => Err(format!(
            "answered shutdown with {}; the result must be null",
            quote(value.to_string().as_bytes())
        )),
        Ok(Reply::Error(code, message)) => Err(format!(
            "answered shutdown with error {code} ({message}); answer null (no params are sent)"
        )),
        Err(err) => Err(no_reply(wire, "shutdown", err, SHUTDOWN_TIMEOUT).await),
    }
}

/// After `shutdown`: `exit_on_eof`, `stdout_protocol_only` and `no_process_left`
/// (`at_shutdown`: the host's group when it answered `shutdown`).
async fn check_ending(run: &mut Run, wire: &mut HostWire, at_shutdown: Vec<(u32, String)>) {
    wire.close_stdin();
    let exited = wire
        .exited_within(Duration::from_secs(EXIT_AFTER_EOF_S))
        .await;
    run.judge(
        "exit_on_eof",
        if exited {
            Ok(())
        } else {
            Err(format!(
                "still running {EXIT_AFTER_EOF_S} s after its stdin reached end-of-file; exit when a read of stdin returns end-of-file (serve kills a host that does not)"
            ))
        },
    );
    run.judge(
        "stdout_protocol_only",
        match wire.stray.first() {
            None => Ok(()),
            Some(first) => Err(format!(
                "{} non-protocol line(s) on stdout, first {first}; stdout is reserved for protocol messages; log to stderr",
                wire.stray.len()
            )),
        },
    );
    let mut left = at_shutdown;
    left.extend(wire.group_members());
    left.sort();
    left.dedup();
    run.judge(
        "no_process_left",
        if left.is_empty() {
            Ok(())
        } else {
            let list: Vec<String> = left.iter().map(|(pid, comm)| format!("{pid} ({comm})")).collect();
            Err(format!(
                "process(es) of the host's group still running after it answered shutdown: {}; end (or wait for) every process you start before answering shutdown",
                list.join(", ")
            ))
        },
    );
}

/// The contexts each hook is called with: (round, phase, dry_run, vcs).
fn contexts(prepared: &Prepared) -> Vec<Value> {
    let init = &prepared.init;
    [
        (1, Value::Null, false, json!({"dirty_action": "stash", "stash_idempotency_s": 5})),
        (7, json!("dev"), true, Value::Null),
        (42, json!("review"), false, json!({"dirty_action": "auto_commit", "stash_idempotency_s": 0})),
    ]
    .into_iter()
    .map(|(round, phase, dry_run, vcs)| {
        json!({
            "work_dir": init.work_dir, "log_dir": init.log_dir, "project": init.project,
            "round_num": round, "phase": phase, "agent_name": if round == 1 { Value::Null } else { json!("claude") },
            "agent_binary": "claude",
            "agent_log_path": if round == 1 { Value::Null } else { json!(format!("{}/round-{round}.log", init.log_dir)) },
            "dry_run": dry_run, "vcs": vcs,
        })
    })
    .collect()
}

/// Calls every declared hook with each context; `Err((detail, conversation_over))` on the
/// first failure (`true` when the host hung or ended). Results must carry only events of
/// the declared `event_kinds`.
async fn call_hooks(
    wire: &mut HostWire,
    prepared: &Prepared,
    decls: &[HookDecl],
    event_kinds: &[String],
) -> Result<(), (String, bool)> {
    let dirty_sets: [&[&str]; 3] = [
        &["src/main.rs"],
        &["notes.md", "src/lib.rs"],
        &["docs/a b.md"],
    ];
    // Hooks outside `provides` are never called by serve (the host is refused).
    for decl in decls
        .iter()
        .filter(|d| prepared.cfg.provides.contains(&d.family))
    {
        let timeout = prepared.cfg.call_timeout(decl.family);
        let method = decl.family.method();
        for (i, ctx) in contexts(prepared).into_iter().enumerate() {
            let round = ctx["round_num"].clone();
            let files: Vec<String> = dirty_sets[i].iter().map(|s| s.to_string()).collect();
            let params = call_params(prepared, decl, ctx, &files, i);
            let what = format!("{method} for `{}` (round {round})", decl.name);
            let checked = match wire.request(method, Some(params), timeout).await {
                // No answer (hung or gone): the conversation cannot go on.
                Err(err) => return Err((no_reply(wire, &what, err, timeout).await, true)),
                // A serve-startup hook refuses a project with -32000 by design (§5.5); the
                // temporary project of `plugin check` may well be one it refuses.
                Ok(Reply::Error(code, _))
                    if decl.family == Family::ServeStartup && code == i64::from(error_codes::HOOK_FAILED) =>
                {
                    Ok(())
                }
                Ok(Reply::Error(code, message)) => Err(format!(
                    "{what} answered error {code}: {message}; a hook should decide on ordinary contexts (an error counts as a failed call)"
                )),
                Ok(Reply::Result(value)) => check_result(decl.family, value, &files, event_kinds)
                    .map_err(|err| {
                        format!(
                            "{what} returned an invalid result: {err}; see docs/schema/{}.result.json",
                            decl.family.spec().verb()
                        )
                    }),
            };
            checked.map_err(|detail| (detail, false))?;
        }
    }
    Ok(())
}

/// The params of one representative call of `decl` (context number `i`).
fn call_params(
    prepared: &Prepared,
    decl: &HookDecl,
    ctx: Value,
    dirty_files: &[String],
    i: usize,
) -> Value {
    match decl.family {
        Family::SpawnHook => json!({"hook": decl.name, "ctx": ctx,
            "spawn": {"argv": ["claude", "-p", "Continue the work."], "env_names": ["HOME", "PATH", "ANTHROPIC_API_KEY"]}}),
        Family::DirtyHandler => json!({"hook": decl.name, "ctx": ctx, "dirty_files": dirty_files}),
        Family::PreRound | Family::ContextEnricher => json!({"hook": decl.name, "ctx": ctx}),
        Family::ServeStartup => json!({"hook": decl.name, "project": ctx["project"],
            "work_dir": ctx["work_dir"], "log_dir": ctx["log_dir"], "config": prepared.cfg.config}),
        Family::Detector => {
            let last = (i > 0).then(|| json!({"round_num": ctx["round_num"], "exit_code": if i == 1 { json!(0) } else { json!(1) },
                "exit_cause": "exited", "duration_s": 12.5, "dirty_outcome": if i == 1 { json!("committed") } else { Value::Null }}));
            json!({"hook": decl.name, "ctx": ctx, "state": {"rounds_completed": i, "last_round": last}})
        }
        Family::PostRound => {
            let (outcome, log_tail) = round_outcome(i);
            json!({"hook": decl.name, "ctx": ctx, "outcome": outcome, "log_tail": log_tail})
        }
        Family::OutputWatch => {
            // A round's first chunk, the next one, and one after skipped bytes.
            let (offset, skipped, text) = match i {
                0 => (0, 0, "{\"type\":\"system\",\"subtype\":\"init\"}\n"),
                1 => (37, 0, "{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":1200,\"output_tokens\":80}}}\n"),
                _ => (90_000, 4_096, "tail of a long line\nplain text the agent printed\n"),
            };
            json!({"hook": decl.name, "ctx": ctx, "chunk": {"offset": offset, "skipped_bytes": skipped, "text": text}})
        }
    }
}

/// The `i`-th sample round a post-round hook is told about: a clean round, a usage-limit
/// failure, a budget timeout.
fn round_outcome(i: usize) -> (Value, &'static str) {
    match i {
        0 => (
            json!({"round_num": 1, "phase": null, "exit_code": 0, "signal": null,
                   "exit_cause": "exited", "duration_s": 41.2, "timed_out": false}),
            "Done: tests pass.\n",
        ),
        1 => (
            json!({"round_num": 2, "phase": "dev", "exit_code": 1, "signal": null,
                   "exit_cause": "exited", "duration_s": 0.8, "timed_out": false}),
            "{\"type\":\"result\",\"is_error\":true,\"result\":\"usage limit reached\"}\n",
        ),
        _ => (
            json!({"round_num": 3, "phase": "dev", "exit_code": null, "signal": 15,
                   "exit_cause": "timeout", "duration_s": 1800.0, "timed_out": true}),
            "",
        ),
    }
}

/// Checks one result of a hook of `family` as the supervisor will.
fn check_result(
    family: Family,
    value: Value,
    dirty_files: &[String],
    event_kinds: &[String],
) -> Result<(), InvalidMessage> {
    let events = match family {
        Family::SpawnHook => return decode_spawn_decision(value).map(drop),
        Family::DirtyHandler => return decode_dirty_result(value, dirty_files).map(drop),
        Family::PreRound => decode_round_decision(value)?.events,
        Family::ContextEnricher => decode_enrichment(value)?.events,
        Family::ServeStartup => decode_startup_result(value)?.events,
        Family::Detector => decode_detection(value)?.events,
        Family::PostRound => return decode_post_round_result(value).map(drop),
        Family::OutputWatch => return decode_observation(value).map(drop),
    };
    check_host_events(&events, event_kinds)
}
