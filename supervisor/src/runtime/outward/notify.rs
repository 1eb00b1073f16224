//! `serve`'s notifications (docs/operations.md, "Notifications"): the events that need a
//! person, POSTed to each `[[notify.webhooks]]` entry that asks for their kind. Sent by the
//! supervisor alone (never the agent, never a host), from a thread of its own: the record's
//! [`Tap`] only queues, so a slow or dead receiver never delays a round.
//!
//! - The queue holds at most [`QUEUE_CAPACITY`] deliveries; when full, the oldest is
//!   dropped and recorded (`notify_failed`, `queue_full`). At most [`IN_FLIGHT`] are sent
//!   at once.
//! - Each delivery: one attempt, then retries after [`RETRY_AFTER`] (1 s, 4 s, 15 s), each
//!   attempt bounded by [`ATTEMPT_TIMEOUT`]. A `2xx` answer delivers; a connection failure,
//!   a timeout, `408`, `429` or `5xx` is retried; any other answer is final.
//!   Every failure ends as one `notify_failed` (`failed`).
//! - At exit, [`Notifier::finish`] waits up to `[notify] flush_s` for what is queued or
//!   under way ("serve stopped" is the last event and the one that must get out), then
//!   records each delivery it gives up on (`exit_flush`).
//! - The URL is never written anywhere: events, logs and messages name the entry (its
//!   `name` or index) and its `url_env`; an error's text is scrubbed of the URL's parts
//!   ([`scrub`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::config::notify::{parse_url, ParsedUrl, UrlSource};
use crate::config::{Config, ConfigError, NotifyFormat, Webhook};
use crate::record::events::{Event, EventLog, Tap, BUILTIN_KINDS};
use crate::runtime::agent::environment::AllowList;
use crate::runtime::outward::notify_http::{Client, ATTEMPT_TIMEOUT};

/// The kinds a webhook without `events` is sent: `serve` stopped for any reason but
/// `max_rounds` (which the operator asked for), a login needed, the budget, a crash loop,
/// the goal reached.
pub(crate) const DEFAULT_EVENTS: &[&str] = &[
    "serve_stopping",
    "stop_file_detected",
    "agent_self_terminated",
    "stalled_no_progress",
    "crash_loop",
    "mem_loop",
    "mem_loop_persistent",
    "environment_unusable",
    "max_duration_reached",
    "agent_auth_error_detected",
    "budget_exhausted",
    "budget_paused",
    "goal_reached",
];

/// Deliveries waiting to be sent, at most.
pub(crate) const QUEUE_CAPACITY: usize = 64;

/// Deliveries sent at once, at most.
pub(crate) const IN_FLIGHT: usize = 4;

/// The waits before the retries of a failed attempt: four attempts in all.
pub(crate) const RETRY_AFTER: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(4),
    Duration::from_secs(15),
];

/// One webhook, ready to send to.
#[derive(Debug)]
pub(crate) struct Target {
    /// What events and messages call it ([`crate::config::Webhook::label`]).
    pub label: String,
    /// Its `url_env`.
    pub url_env: Option<String>,
    /// Its URL, taken apart (never shown).
    pub url: ParsedUrl,
    /// The kinds it is sent.
    pub kinds: BTreeSet<String>,
    /// Its body.
    pub format: NotifyFormat,
}

/// The webhooks of `config`, their URLs read (`url_env` through `var`, `serve`'s
/// environment), each checked: its kinds are the record's (and not `notify_failed`), its
/// variable is set, holds a usable URL, and is not one the confined agent inherits.
///
/// Errors: [`ConfigError::Key`] naming the entry's key (exit 78 at `serve`'s start;
/// `config_broken` at a re-read); never the URL or the variable's value.
pub(crate) fn resolve(
    config: &Config,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Vec<Target>, ConfigError> {
    config
        .notify
        .webhooks
        .iter()
        .map(|hook| resolve_one(config, hook, &var))
        .collect()
}

/// One webhook of `config`, as [`resolve`] checks it (`doctor` reports each apart).
///
/// Errors: as [`resolve`].
pub(crate) fn resolve_one(
    config: &Config,
    hook: &Webhook,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Target, ConfigError> {
    let bad = |key: String, message: String| ConfigError::Key {
        path: config.path.clone(),
        key,
        message,
    };
    let key = |k: &str| format!("notify.webhooks[{}].{k}", hook.index);
    // First: whatever else is wrong with the entry, this is the one that hands the URL to
    // the agent.
    if let UrlSource::Env(name) = &hook.url {
        if let Some(who) = inheriting_agent(config, name) {
            return Err(bad(
                key("url_env"),
                format!("{who} inherits {name}, so it could read the webhook's URL; name a variable no agent's allow-list or [agent.sandbox] pass_env passes (docs/security.md, \"Notifications\")"),
            ));
        }
    }
    let kinds: BTreeSet<String> = match &hook.events {
        Some(kinds) => kinds.iter().cloned().collect(),
        None => DEFAULT_EVENTS.iter().map(|k| (*k).to_owned()).collect(),
    };
    for kind in &kinds {
        if kind == "notify_failed" {
            return Err(bad(
                key("events"),
                "\"notify_failed\" cannot be sent (a failing webhook would feed itself); it is in the record".into(),
            ));
        }
        if !BUILTIN_KINDS.contains(&kind.as_str()) {
            let near = BUILTIN_KINDS
                .iter()
                .max_by(|a, b| {
                    strsim::jaro_winkler(a, kind).total_cmp(&strsim::jaro_winkler(b, kind))
                })
                .filter(|k| strsim::jaro_winkler(k, kind) > 0.8)
                .map(|k| format!("; did you mean {k:?}?"))
                .unwrap_or_default();
            return Err(bad(
                key("events"),
                format!("{kind:?} is not an event kind of the record (docs/operations.md, \"Event kinds\"){near}"),
            ));
        }
    }
    let url = match &hook.url {
        UrlSource::Literal(url) => parse_url(url).map_err(|why| {
            bad(
                key("url"),
                format!("not a usable webhook URL: {why} (the value is not shown)"),
            )
        })?,
        UrlSource::Env(name) => {
            let value = var(name).filter(|v| !v.trim().is_empty()).ok_or_else(|| {
                bad(
                    key("url_env"),
                    format!("{name} is not set in serve's environment; set it where serve starts (systemd: Environment= or EnvironmentFile= in a drop-in), or remove the entry"),
                )
            })?;
            parse_url(value.trim()).map_err(|why| {
                bad(
                    key("url_env"),
                    format!(
                        "{name} does not hold a usable webhook URL: {why} (its value is not shown)"
                    ),
                )
            })?
        }
    };
    Ok(Target {
        label: hook.label(),
        url_env: hook.url_env().map(str::to_owned),
        url,
        kinds,
        format: hook.format,
    })
}

/// Which confined agent of `config` would inherit the variable `name`, in words with the
/// allow-list's reason: `[agent]`'s, or a phase's own `[phases.<name>.agent]` (another CLI
/// passes other provider variables: `OPENAI_*` for codex); `None` when none does, and
/// under `mode = "off"` (the whole environment is inherited: `doctor` warns instead).
fn inheriting_agent(config: &Config, name: &str) -> Option<String> {
    let phases = config
        .phases
        .overrides
        .iter()
        .filter_map(|(phase, o)| o.agent.as_ref().map(|a| (Some(phase.as_str()), a)));
    for (phase, agent) in std::iter::once((None, &config.agent)).chain(phases) {
        let list = AllowList::of(config, agent.cli.name)?;
        if let Some(why) = list.why(std::ffi::OsStr::new(name)) {
            let who = match phase {
                Some(phase) => format!("the confined agent of phase {phase:?}"),
                None => "the confined agent".to_owned(),
            };
            return Some(format!("{who} ({why})"));
        }
    }
    None
}

/// [`resolve`] over `serve`'s own environment.
///
/// Errors: as [`resolve`].
pub(crate) fn resolve_here(config: &Config) -> Result<Vec<Target>, ConfigError> {
    resolve(config, |name| std::env::var(name).ok())
}

/// One event on its way to one webhook.
struct Delivery {
    id: u64,
    target: Arc<Target>,
    kind: String,
    body: Vec<u8>,
}

/// A delivery being sent: what a `notify_failed` about it says.
struct Sending {
    target: Arc<Target>,
    kind: String,
    attempts: u32,
    error: String,
}

/// What the tap, the sending thread and the exit share.
#[derive(Default)]
struct State {
    targets: Vec<Arc<Target>>,
    queue: VecDeque<Delivery>,
    sending: BTreeMap<u64, Sending>,
    next_id: u64,
    /// The sending thread runs.
    started: bool,
    /// The exit gave up on what is left: nothing more is queued or recorded.
    abandoned: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a delivery ends (the exit's wait).
    ended: Condvar,
    /// Wakes the sending thread.
    wake: tokio::sync::Notify,
    /// Where `notify_failed` is written (without the tap).
    events: EventLog,
    /// `<project> on <host>`, for chat sentences.
    whence: String,
}

/// `serve`'s notifier: its [`Tap`] queues, its thread sends, [`Notifier::finish`] flushes.
/// Dropped without `finish` (a boot that failed), it flushes with the default bound.
pub(crate) struct Notifier {
    shared: Arc<Shared>,
    /// `[notify] flush_s`, as the config last applied says.
    flush: Duration,
    finished: bool,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notifier")
    }
}

impl Notifier {
    /// A notifier for `targets` ([`resolve`]), recording its failures in `events`; the
    /// thread starts with the first delivery.
    pub(crate) fn new(config: &Config, targets: Vec<Target>, events: &EventLog) -> Notifier {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_default();
        let whence = if host.is_empty() {
            config.project.clone()
        } else {
            format!("{} on {host}", config.project)
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                targets: targets.into_iter().map(Arc::new).collect(),
                ..State::default()
            }),
            ended: Condvar::new(),
            wake: tokio::sync::Notify::new(),
            events: events.untapped(),
            whence,
        });
        Notifier {
            shared,
            flush: config.notify.flush,
            finished: false,
        }
    }

    /// The record's tap that queues each event some webhook asks for.
    pub(crate) fn tap(&self) -> Tap {
        let shared = Arc::clone(&self.shared);
        Tap(Arc::new(move |event, line| enqueue(&shared, event, line)))
    }

    /// Follows a re-read config: its webhooks from now on (what is queued goes out as it
    /// was), its `flush_s` at exit.
    pub(crate) fn follow(&mut self, config: &Config, targets: Vec<Target>) {
        self.flush = config.notify.flush;
        lock(&self.shared).targets = targets.into_iter().map(Arc::new).collect();
    }

    /// Waits up to `flush_s` for every delivery queued or under way to end, then records
    /// each one left (`notify_failed`, `exit_flush`); nothing is queued after.
    pub(crate) fn finish(&mut self) {
        self.finished = true;
        let shared = &self.shared;
        let state = lock(shared);
        let (mut state, _) = shared
            .ended
            .wait_timeout_while(state, self.flush, |s| {
                !(s.queue.is_empty() && s.sending.is_empty())
            })
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        state.abandoned = true;
        let mut left: Vec<Sending> = state.sending.values().map(Sending::copy).collect();
        left.extend(state.queue.drain(..).map(|d| Sending {
            target: d.target,
            kind: d.kind,
            attempts: 0,
            error: String::new(),
        }));
        drop(state);
        let flush_s = self.flush.as_secs();
        for s in left {
            let error = if s.error.is_empty() {
                format!("not delivered within flush_s ({flush_s} s) at exit")
            } else {
                format!(
                    "not delivered within flush_s ({flush_s} s) at exit; last attempt: {}",
                    s.error
                )
            };
            record_failure(&shared.events, &s, "exit_flush", &error);
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        if !self.finished {
            self.finish();
        }
    }
}

impl Sending {
    fn copy(&self) -> Sending {
        Sending {
            target: Arc::clone(&self.target),
            kind: self.kind.clone(),
            attempts: self.attempts,
            error: self.error.clone(),
        }
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, State> {
    shared
        .state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn record_failure(events: &EventLog, s: &Sending, reason: &str, error: &str) {
    tracing::warn!(
        webhook = %s.target.label,
        event_kind = %s.kind,
        "notification not delivered ({reason}): {error}"
    );
    events.emit(Event::NotifyFailed {
        webhook: s.target.label.clone(),
        url_env: s.target.url_env.clone(),
        event_kind: s.kind.clone(),
        reason: reason.to_owned(),
        attempts: s.attempts,
        error: error.to_owned(),
    });
}

/// The tap: one delivery per webhook that asks for the event's kind; a full queue drops
/// its oldest (recorded after the lock is let go).
fn enqueue(shared: &Arc<Shared>, event: &Event, line: &str) {
    let mut state = lock(shared);
    if state.abandoned || state.targets.is_empty() {
        return;
    }
    let Some(kind) = line_kind(line) else { return };
    let targets: Vec<Arc<Target>> = state
        .targets
        .iter()
        .filter(|t| t.kinds.contains(&kind))
        .cloned()
        .collect();
    if targets.is_empty() {
        return;
    }
    let mut dropped = Vec::new();
    for target in targets {
        let body = match target.format {
            NotifyFormat::Event => line.as_bytes().to_vec(),
            NotifyFormat::Chat => {
                crate::runtime::outward::notify_text::chat_body(&shared.whence, event)
            }
        };
        state.next_id += 1;
        let id = state.next_id;
        state.queue.push_back(Delivery {
            id,
            target,
            kind: kind.clone(),
            body,
        });
        if state.queue.len() > QUEUE_CAPACITY {
            dropped.extend(state.queue.pop_front());
        }
    }
    if !state.started {
        state.started = start_thread(Arc::clone(shared));
    }
    drop(state);
    shared.wake.notify_one();
    for d in dropped {
        let s = Sending {
            target: d.target,
            kind: d.kind,
            attempts: 0,
            error: String::new(),
        };
        record_failure(
            &shared.events,
            &s,
            "queue_full",
            &format!("the queue held {QUEUE_CAPACITY} deliveries; the oldest was dropped"),
        );
    }
}

/// The `event` of a line as written.
fn line_kind(line: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Kind {
        event: String,
    }
    serde_json::from_str::<Kind>(line).ok().map(|k| k.event)
}

/// Starts the sending thread (its own single-threaded runtime: nothing of the loop's runs
/// on it, nothing of its runs on the loop's). `false` when it cannot start (logged; the
/// next event tries again).
fn start_thread(shared: Arc<Shared>) -> bool {
    let started = std::thread::Builder::new()
        .name("notify".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    tracing::error!("notifications: cannot start their runtime: {e}");
                    return;
                }
            };
            runtime.block_on(send_all(shared));
        });
    match started {
        Ok(_) => true,
        Err(e) => {
            tracing::error!("notifications: cannot start their thread: {e}");
            false
        }
    }
}

/// The sending thread: takes deliveries in order, at most [`IN_FLIGHT`] at once.
async fn send_all(shared: Arc<Shared>) {
    let client = Arc::new(Client::from_environment());
    let slots = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let delivery = loop {
            let woken = shared.wake.notified();
            if let Some(d) = take(&shared) {
                break d;
            }
            woken.await;
        };
        let (shared, client) = (Arc::clone(&shared), Arc::clone(&client));
        tokio::spawn(async move {
            deliver(&shared, &client, delivery).await;
            drop(slot);
        });
    }
}

/// The oldest queued delivery, now under way.
fn take(shared: &Shared) -> Option<Delivery> {
    let mut state = lock(shared);
    let d = state.queue.pop_front()?;
    state.sending.insert(
        d.id,
        Sending {
            target: Arc::clone(&d.target),
            kind: d.kind.clone(),
            attempts: 0,
            error: String::new(),
        },
    );
    Some(d)
}

/// How one attempt ended.
enum Attempt {
    Delivered,
    Retry(String),
    Final(String),
}

/// Sends one delivery: attempts and retries (module docs), then its end recorded.
async fn deliver(shared: &Shared, client: &Client, d: Delivery) {
    let mut outcome = String::new();
    let mut delivered = false;
    let waits = std::iter::once(Duration::ZERO).chain(RETRY_AFTER);
    for (attempt, wait) in waits.enumerate() {
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let started = std::time::Instant::now();
        let result =
            tokio::time::timeout(ATTEMPT_TIMEOUT, client.post(&d.target.url, d.body.clone())).await;
        let step = match result {
            Err(_) => Attempt::Retry(format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs())),
            Ok(Err(e)) => Attempt::Retry(scrub(&e, &d.target.url)),
            Ok(Ok(status)) if (200..300).contains(&status) => Attempt::Delivered,
            Ok(Ok(status)) if status == 408 || status == 429 || status >= 500 => {
                Attempt::Retry(format!("HTTP {status}"))
            }
            Ok(Ok(status)) => Attempt::Final(format!("HTTP {status} (not retried)")),
        };
        let last = attempt == RETRY_AFTER.len();
        let (error, again) = match step {
            Attempt::Delivered => {
                tracing::debug!(
                    webhook = %d.target.label,
                    "notification delivered in {:?}",
                    started.elapsed()
                );
                delivered = true;
                (String::new(), false)
            }
            Attempt::Retry(e) => (e, !last),
            Attempt::Final(e) => (e, false),
        };
        {
            let mut state = lock(shared);
            if let Some(s) = state.sending.get_mut(&d.id) {
                s.attempts = attempt as u32 + 1;
                s.error = error.clone();
            }
        }
        outcome = error;
        if !again {
            break;
        }
    }
    let mut state = lock(shared);
    let ended = state.sending.remove(&d.id);
    let abandoned = state.abandoned;
    drop(state);
    shared.ended.notify_all();
    if let (false, false, Some(s)) = (delivered, abandoned, ended) {
        record_failure(&shared.events, &s, "failed", &outcome);
    }
}

/// `message` with every part of `url` that could be secret replaced by `<url>`: the host,
/// the path and its pieces, the query (an error from a TLS or HTTP library may quote the
/// name it connected to).
pub(crate) fn scrub(message: &str, url: &ParsedUrl) -> String {
    let mut parts: Vec<&str> = vec![url.path.as_str(), url.host.as_str()];
    parts.extend(
        url.path
            .split(['/', '?', '&', '='])
            .filter(|p| p.len() >= 4),
    );
    parts.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let mut out = message.to_owned();
    for part in parts.into_iter().filter(|p| p.len() > 1) {
        out = out.replace(part, "<url>");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_scrubbed_of_every_part_of_the_url() {
        let url =
            parse_url("https://hooks.example.org/services/T0AAA/B0BBB/tok3n?key=s3cret").unwrap();
        let e = scrub(
            "invalid peer certificate: not valid for hooks.example.org; POST /services/T0AAA/B0BBB/tok3n?key=s3cret; tok3n s3cret",
            &url,
        );
        for part in ["hooks.example.org", "T0AAA", "tok3n", "s3cret"] {
            assert!(!e.contains(part), "{e}");
        }
    }

    #[test]
    fn the_default_kinds_are_the_records() {
        for kind in DEFAULT_EVENTS {
            assert!(BUILTIN_KINDS.contains(kind), "{kind}");
        }
        assert!(!DEFAULT_EVENTS.contains(&"max_rounds_reached"));
    }

    fn config(text: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("prompts")).unwrap();
        std::fs::write(dir.path().join("prompts/main.md"), "x").unwrap();
        let path = dir.path().join("agent-runner.toml");
        let text = format!("schema_version = 1\n[agent]\ncommand = [\"x\"]\n{text}");
        let config = crate::config::parse_str(&path, &text).unwrap();
        std::mem::forget(dir);
        config
    }

    fn message(config: &Config, var: &[(&str, &str)]) -> (String, String) {
        match resolve(config, |n| {
            var.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| (*v).to_owned())
        }) {
            Err(ConfigError::Key { key, message, .. }) => (key, message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_webhooks_are_named_by_key_without_their_url() {
        let c = config("[[notify.webhooks]]\nurl_env = \"HOOK\"\nevents = [\"crash_lop\"]\n");
        let (key, m) = message(&c, &[("HOOK", "http://127.0.0.1:1/s3cret")]);
        assert_eq!(key, "notify.webhooks[0].events");
        assert!(m.contains("did you mean \"crash_loop\""), "{m}");
        let c = config("[[notify.webhooks]]\nurl_env = \"HOOK\"\nevents = [\"notify_failed\"]\n");
        assert_eq!(
            message(&c, &[("HOOK", "http://h/")]).0,
            "notify.webhooks[0].events"
        );
        let c = config(
            "[[notify.webhooks]]\nurl = \"http://h/\"\n[[notify.webhooks]]\nurl_env = \"HOOK\"\n",
        );
        let (key, m) = message(&c, &[]);
        assert_eq!(key, "notify.webhooks[1].url_env");
        assert!(m.contains("HOOK is not set"), "{m}");
        let (_, m) = message(&c, &[("HOOK", "ftp://h/s3cret")]);
        assert!(
            m.contains("HOOK does not hold") && !m.contains("s3cret"),
            "{m}"
        );
        // A variable the confined agent inherits would hand it the URL.
        let c = config("[agent.sandbox]\nmode = \"prefer\"\npass_env = [\"HOOK\"]\n[[notify.webhooks]]\nurl_env = \"HOOK\"\n");
        let (key, m) = message(&c, &[("HOOK", "http://h/")]);
        assert_eq!(key, "notify.webhooks[0].url_env");
        assert!(m.contains("inherits HOOK"), "{m}");
        // So would an allowed prefix, before any other fault of the entry is looked at…
        let c = config("[agent.sandbox]\nmode = \"require\"\n[[notify.webhooks]]\nurl_env = \"OTEL_HOOK_URL\"\nevents = [\"crash_lop\"]\n");
        let (key, m) = message(&c, &[]);
        assert_eq!(key, "notify.webhooks[0].url_env");
        assert!(m.contains("inherits OTEL_HOOK_URL"), "{m}");
        // …and a phase's agent of another CLI, with that CLI's provider variables.
        let c = config("[agent.sandbox]\nmode = \"prefer\"\n[phases]\nlist = [\"a\", \"review\"]\n[phases.review.agent]\ncommand = [\"codex\", \"exec\"]\n[[notify.webhooks]]\nurl_env = \"OPENAI_HOOK_URL\"\n");
        let (key, m) = message(&c, &[("OPENAI_HOOK_URL", "http://h/")]);
        assert_eq!(key, "notify.webhooks[0].url_env");
        assert!(
            m.contains("phase \"review\"") && m.contains("inherits OPENAI_HOOK_URL"),
            "{m}"
        );
        // Not under `off` (doctor warns of the whole environment instead).
        let c = config(
            "[agent.sandbox]\nmode = \"off\"\n[[notify.webhooks]]\nurl_env = \"OTEL_HOOK_URL\"\n",
        );
        assert!(resolve(&c, |_| Some("http://h/".into())).is_ok());
        let c =
            config("[[notify.webhooks]]\nname = \"ops\"\nurl_env = \"HOOK\"\nformat = \"chat\"\n");
        let targets = resolve(&c, |_| Some("https://h/x".into())).unwrap();
        assert_eq!(targets[0].label, "ops");
        assert!(targets[0].kinds.contains("crash_loop"));
        assert_eq!(targets[0].format, NotifyFormat::Chat);
    }
}
