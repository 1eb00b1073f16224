"""Write an agent-runner plugin host in Python (protocol v1; see docs/protocol.md).

A single, standard-library-only module (Python >= 3.9). Copy it next to your host and
ship both as one file (a zipapp, see docs/protocol.md "Python hosts"), or paste it into a
single-file script. Usage::

    from agent_runner_host import Host, HookError, proceed, defer

    host = Host("quiet-hours", "1.0.0")

    @host.setup
    def configure(init):
        # init: the `initialize` params (dict); init["config"] is the host's config table.
        # Raise HookError to refuse a bad config; the supervisor records the message.
        ...

    @host.spawn_hook("quiet_hours")
    def quiet_hours(params):
        # params: {"hook", "ctx", "spawn"}; return proceed() / defer(s, why) / skip(why)
        return proceed()

    @host.dirty_handler("wip_commit", priority=100)
    def wip(params):
        # params: {"hook", "ctx", "dirty_files"}; return commit(msg) / stash() / ignore() / None
        return None

    # The other families (docs/protocol.md §5.3-§5.6):
    #   @host.pre_round(name)        params {"hook", "ctx"} -> run_round() / skip_round(why)
    #   @host.context_enricher(name) params {"hook", "ctx"} -> enrichment({...})
    #   @host.serve_startup(name)    params {"hook", "project", "work_dir", "log_dir",
    #                                "config"} -> started(); raise HookError to stop serve
    #   @host.detector(name)         params {"hook", "ctx", "state"} -> no_alert() /
    #                                alert(severity, message, stop_service=False)
    # host.event_kinds(["stalled"]) declares kinds a result may carry in "events"
    # (with_events(result, [event("stalled", {...})])); host.owned_paths(["reports/"])
    # keeps paths out of dirty detection, stash and commit.

    if __name__ == "__main__":
        host.run()

What this module does for you (the mistakes that break hosts, docs/protocol.md):
- as soon as it is imported, keeps a private copy of the real stdout for protocol lines
  and points fd 1 and `sys.stdout` at stderr, so `print()` (after the import) and child
  output never corrupt the protocol; import it before anything that may print;
- writes nothing before `initialize`; writes each response as one line and flushes it;
- answers -32700 / -32600 / -32601 / -32602 / -32001 / -32000 / -32603 like the Rust SDK;
- validates what your hooks return before sending it (a bad result becomes -32603 with a
  message naming the field, instead of a silent `invalid_result` on the supervisor side);
- returns (exit status 0) when stdin reaches end-of-file.
"""

import os
import sys

# JSON goes through `_json`, the C accelerator `json` itself uses: importing `json` pulls
# in `re`, `enum`, `functools` and `collections`, about 8 ms of a host's cold start
# (docs/protocol.md "Python hosts: cold start"). `json` is the fallback where `_json` is
# missing or its constructors differ (another implementation or version).
try:
    import _json

    _ENCODE = _json.make_encoder(
        {}, None, _json.encode_basestring, None, ":", ",", False, False, True)

    class _ScanContext:
        """The attributes `_json.make_scanner` reads (those of `json.JSONDecoder()`)."""
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        memo = None

        @staticmethod
        def parse_constant(name):
            raise ValueError("%s is not JSON" % name)

    _SCAN = _json.make_scanner(_ScanContext())
except (ImportError, AttributeError, TypeError):
    _ENCODE = _SCAN = None


def _dumps(value):
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"))`."""
    if _ENCODE is None:
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return "".join(_ENCODE(value, 0))


def _loads(text):
    """`json.loads(text)` for one value; raises ValueError when `text` is not JSON."""
    if _SCAN is None:
        import json

        return json.loads(text)
    text = text.strip(" \t\n\r")
    try:
        value, end = _SCAN(text, 0)
    except StopIteration as err:
        raise ValueError("expecting a value at character %d" % err.value) from None
    if end != len(text):
        raise ValueError("extra data at character %d" % end)
    return value


__all__ = [
    "Host",
    "HookError",
    "proceed",
    "defer",
    "skip",
    "commit",
    "stash",
    "ignore",
    "run_round",
    "skip_round",
    "enrichment",
    "started",
    "no_alert",
    "alert",
    "event",
    "with_events",
    "PROTOCOL_VERSION",
]

#: The protocol version this module speaks.
PROTOCOL_VERSION = 1
#: Longest protocol line in bytes, newline included (protocol/src/limits.rs).
MAX_LINE_BYTES = 65536
#: Largest `defer_s` (seconds).
MAX_DEFER_S = 86400
#: Longest commit message, in characters.
MAX_COMMIT_MESSAGE_CHARS = 4096
#: Largest context enricher object, in bytes of compact JSON.
MAX_ENRICHMENT_BYTES = 16384
#: Most events one result may carry; largest `fields` of one, in bytes of compact JSON.
MAX_HOST_EVENTS_PER_RESULT = 8
MAX_HOST_EVENT_BYTES = 4096

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HOOK_FAILED = -32000
UNSUPPORTED_PROTOCOL_VERSION = -32001

INITIALIZE = "initialize"
BEFORE_SPAWN = "spawn_hook/before_spawn"
HANDLE_DIRTY = "dirty_handler/handle_dirty"
BEFORE_ROUND = "pre_round/before_round"
ENRICH = "context_enricher/enrich"
ON_START = "serve_startup/on_start"
DETECT = "detector/detect"
AFTER_ROUND = "post_round/after_round"
OBSERVE = "output_watch/observe"
SHUTDOWN = "shutdown"

_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_DIGITS = frozenset("0123456789")
_HOOK_NAME_PATTERN = "^[a-z0-9][a-z0-9_-]{0,63}$"
_EVENT_KIND_PATTERN = "^[a-z][a-z0-9_]{0,47}$"


def _is_hook_name(name):
    """Whether `name` matches `_HOOK_NAME_PATTERN` (docs/protocol.md §7)."""
    return (isinstance(name, str) and 0 < len(name) <= 64 and name[0] in _LOWER | _DIGITS
            and all(c in _LOWER or c in _DIGITS or c in "_-" for c in name))


def _is_event_kind(kind):
    """Whether `kind` matches `_EVENT_KIND_PATTERN` (docs/protocol.md §7)."""
    return (isinstance(kind, str) and 0 < len(kind) <= 48 and kind[0] in _LOWER
            and all(c in _LOWER or c in _DIGITS or c == "_" for c in kind))


_INIT_KEYS = {"protocol_version", "supervisor", "host", "project", "work_dir", "log_dir",
              "state_dir", "config", "sandbox"}
_CTX_KEYS = {"work_dir", "log_dir", "project", "round_num", "phase", "agent_name",
             "agent_binary", "agent_log_path", "dry_run", "vcs"}


class HookError(Exception):
    """A hook (or setup) failed: answered as error -32000 with `message` and `data`."""

    def __init__(self, message, data=None):
        super().__init__(message)
        self.message = str(message)
        self.data = data


class _RpcError(Exception):
    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def proceed(reason=""):
    """Spawn decision: start the agent now."""
    return {"action": "proceed", "defer_s": 0, "reason": reason}


def defer(defer_s, reason=""):
    """Spawn decision: wait `defer_s` seconds (0..=86400), then ask again."""
    return {"action": "defer", "defer_s": defer_s, "reason": reason}


def skip(reason=""):
    """Spawn decision: do not start this round; the supervisor idles briefly, then asks again."""
    return {"action": "skip", "defer_s": 0, "reason": reason}


def commit(message, paths=None):
    """Dirty action: the supervisor stages `paths` (default: every dirty file) and commits."""
    action = {"action": "commit", "message": message}
    if paths is not None:
        action["paths"] = list(paths)
    return action


def stash(message=None):
    """Dirty action: the supervisor stashes the tree (its SHA-locked, idempotent stash)."""
    action = {"action": "stash"}
    if message is not None:
        action["message"] = message
    return action


def ignore():
    """Dirty action: leave the tree dirty for the next round."""
    return {"action": "ignore"}


#: The diagnoses a post-round verdict may carry.
ERROR_KINDS = ("usage_limit", "rate_limit", "overloaded", "network", "auth", "other")


def back_off(kind, back_off_s=None, until=None, message=""):
    """Post-round verdict: wait `back_off_s` seconds (1..=86400) or until `until` (RFC 3339
    UTC, e.g. "2026-11-30T05:00:00Z") before the next round; give exactly one."""
    verdict = {"action": "back_off", "kind": kind, "message": message}
    if back_off_s is not None:
        verdict["back_off_s"] = back_off_s
    if until is not None:
        verdict["until"] = until
    return verdict


def stop(kind, message=""):
    """Post-round verdict: stop serving (honoured per [monitor] auto_stop_on)."""
    return {"action": "stop", "kind": kind, "message": message}


def carry_on(message="", usage=None):
    """Post-round verdict: continue as usual, optionally reporting token `usage`
    ({"input_tokens": n, "output_tokens": n, ...})."""
    verdict = {"action": "continue", "message": message}
    if usage is not None:
        verdict["usage"] = usage
    return verdict


def _is_rfc3339_utc(text):
    """Whether `text` is `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z` (ASCII digits only)."""
    if not isinstance(text, str) or len(text) < 20 or text[-1] != "Z":
        return False
    digits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
    if any(text[i] not in _DIGITS for i in digits):
        return False
    if [text[i] for i in (4, 7, 10, 13, 16)] != ["-", "-", "T", ":", ":"]:
        return False
    fraction = text[19:-1]
    return fraction == "" or (fraction[0] == "." and 2 <= len(fraction) <= 10
                              and all(c in _DIGITS for c in fraction[1:]))


_USAGE_KEYS = {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
               "cost_usd"}


def _check_post_round_verdict(value):
    """Returns None if `value` is None or a valid post-round verdict, else what is wrong."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return "`.`: expected null or an object (use back_off(), stop(), carry_on() or None)"
    unknown = set(value) - {"action", "kind", "message", "back_off_s", "until", "usage"}
    if unknown:
        return "`%s`: unknown field" % sorted(unknown)[0]
    action = value.get("action")
    if action not in ("continue", "back_off", "stop"):
        return "`action`: must be continue, back_off or stop, got %r" % (action,)
    kind = value.get("kind")
    if kind is not None and kind not in ERROR_KINDS:
        return "`kind`: must be one of %s, got %r" % (", ".join(ERROR_KINDS), kind)
    if action != "continue" and kind is None:
        return "`kind`: %s needs a kind" % action
    if not isinstance(value.get("message", ""), str):
        return "`message`: must be a string"
    secs, until = value.get("back_off_s"), value.get("until")
    if action == "back_off":
        if (secs is None) == (until is None):
            return "`back_off_s`: back_off needs exactly one of back_off_s and until"
        if secs is not None and (not _is_int(secs) or not 1 <= secs <= MAX_DEFER_S):
            return "`back_off_s`: must be an integer in 1..=%d, got %r" % (MAX_DEFER_S, secs)
        if until is not None and not _is_rfc3339_utc(until):
            return "`until`: must be an RFC 3339 UTC time like 2026-11-30T05:00:00Z"
    elif secs is not None or until is not None:
        return "`back_off_s`: only back_off takes back_off_s or until"
    usage = value.get("usage")
    if usage is not None:
        if not isinstance(usage, dict) or set(usage) - _USAGE_KEYS or not {
                "input_tokens", "output_tokens"} <= set(usage):
            return "`usage`: needs input_tokens and output_tokens, and only %s" % (
                ", ".join(sorted(_USAGE_KEYS)))
    return None


def run_round():
    """Pre-round answer: run this round."""
    return {"action": "proceed"}


def skip_round(reason=""):
    """Pre-round answer: skip this round (honoured only for hooks listed in
    [plugins] spawn_override_allow)."""
    return {"action": "skip", "reason": reason}


def enrichment(context):
    """Context enricher answer: `context` (a dict) goes into the round context under the
    hook's name."""
    return {"context": context}


def started():
    """Serve-startup answer: the project may run."""
    return {}


def no_alert():
    """Detector answer: nothing to report."""
    return {"alert": None}


def alert(severity, message, stop_service=False):
    """Detector answer: an alert (`severity` info, warning or critical); `stop_service`
    stops serve only when [monitor] auto_stop_on names the hook."""
    return {"alert": {"severity": severity, "message": message,
                      "stop_service": bool(stop_service)}}


def event(kind, fields=None):
    """An event of a declared kind, recorded by the supervisor as `<host>.<kind>`."""
    return {"kind": kind, "fields": dict(fields or {})}


def with_events(result, events):
    """`result` (of a pre-round hook, enricher, serve-startup hook or detector) carrying
    `events`."""
    result = dict(result)
    result["events"] = list(events)
    return result


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_object(value, field, required, allowed):
    """Strict shape of a params object: every required key, no unknown key."""
    if not isinstance(value, dict):
        raise _RpcError(INVALID_PARAMS, "invalid params: `%s` must be an object" % field,
                        {"field": field})
    for key in sorted(required):
        if key not in value:
            raise _RpcError(INVALID_PARAMS, "invalid params: missing field `%s`" % key,
                            {"field": field + "." + key if field != "." else key})
    for key in value:
        if key not in allowed:
            raise _RpcError(INVALID_PARAMS, "invalid params: unknown field `%s`" % key,
                            {"field": field + "." + key if field != "." else key})


def _check_spawn_decision(value):
    """Returns None if `value` is a valid spawn decision, else what is wrong."""
    if not isinstance(value, dict):
        return "`.`: expected an object (use proceed(), defer() or skip())"
    unknown = set(value) - {"action", "defer_s", "reason"}
    if unknown:
        return "`%s`: unknown field" % sorted(unknown)[0]
    if value.get("action") not in ("proceed", "defer", "skip"):
        return "`action`: must be proceed, defer or skip, got %r" % (value.get("action"),)
    defer_s = value.get("defer_s", 0)
    if not _is_int(defer_s) or not 0 <= defer_s <= MAX_DEFER_S:
        return "`defer_s`: must be an integer in 0..=%d, got %r" % (MAX_DEFER_S, defer_s)
    if not isinstance(value.get("reason", ""), str):
        return "`reason`: must be a string"
    return None


def _check_dirty_action(value, dirty_files):
    """Returns None if `value` is None or a valid dirty action, else what is wrong."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return "`.`: expected null or an object (use commit(), stash(), ignore() or None)"
    action = value.get("action")
    allowed = {"commit": {"action", "message", "paths"}, "stash": {"action", "message"},
               "ignore": {"action"}}.get(action)
    if allowed is None:
        return "`action`: must be commit, stash or ignore, got %r" % (action,)
    unknown = set(value) - allowed
    if unknown:
        return "`%s`: unknown field for %s" % (sorted(unknown)[0], action)
    message = value.get("message")
    if action == "commit":
        if not isinstance(message, str) or not 1 <= len(message) <= MAX_COMMIT_MESSAGE_CHARS:
            return "`message`: a commit message is a string of 1..=%d characters" % (
                MAX_COMMIT_MESSAGE_CHARS)
        if "\0" in message:
            return "`message`: commit message contains NUL"
        paths = value.get("paths")
        if paths is not None:
            if not isinstance(paths, list):
                return "`paths`: must be a list of dirty files"
            for i, path in enumerate(paths):
                if path not in dirty_files:
                    return "`paths[%d]`: %r is not one of the dirty files" % (i, path)
    elif action == "stash" and message is not None and not isinstance(message, str):
        return "`message`: must be a string"
    return None


def _compact_size(value):
    return len(_dumps(value).encode("utf-8"))


def _check_events(value, declared):
    events = value.get("events", [])
    if not isinstance(events, list):
        return "`events`: must be a list"
    if len(events) > MAX_HOST_EVENTS_PER_RESULT:
        return "`events`: at most %d per result" % MAX_HOST_EVENTS_PER_RESULT
    for i, ev in enumerate(events):
        if not isinstance(ev, dict) or set(ev) - {"kind", "fields"} or "kind" not in ev:
            return "`events[%d]`: expected {\"kind\", \"fields\"}" % i
        if ev["kind"] not in declared:
            return "`events[%d].kind`: %r is not a declared event kind" % (i, ev["kind"])
        fields = ev.get("fields", {})
        if not isinstance(fields, dict):
            return "`events[%d].fields`: must be an object" % i
        for key in ("ts", "event", "host", "hook"):
            if key in fields:
                return "`events[%d].fields.%s`: is set by the supervisor" % (i, key)
        if _compact_size(fields) > MAX_HOST_EVENT_BYTES:
            return "`events[%d].fields`: at most %d bytes of JSON" % (i, MAX_HOST_EVENT_BYTES)
    return None


def _check_shape(value, allowed, what):
    if not isinstance(value, dict):
        return "`.`: expected an object (use %s)" % what
    unknown = set(value) - allowed
    if unknown:
        return "`%s`: unknown field" % sorted(unknown)[0]
    return None


def _check_round_decision(value, declared):
    problem = _check_shape(value, {"action", "reason", "events"}, "run_round() or skip_round()")
    if problem:
        return problem
    if value.get("action") not in ("proceed", "skip"):
        return "`action`: must be proceed or skip, got %r" % (value.get("action"),)
    if not isinstance(value.get("reason", ""), str):
        return "`reason`: must be a string"
    return _check_events(value, declared)


def _check_enrichment(value, declared):
    problem = _check_shape(value, {"context", "events"}, "enrichment({...})")
    if problem:
        return problem
    if not isinstance(value.get("context"), dict):
        return "`context`: must be an object"
    if _compact_size(value["context"]) > MAX_ENRICHMENT_BYTES:
        return "`context`: at most %d bytes of JSON" % MAX_ENRICHMENT_BYTES
    return _check_events(value, declared)


def _check_startup(value, declared):
    if value is None:
        return None
    return _check_shape(value, {"events"}, "started()") or _check_events(value, declared)


def _check_detection(value, declared):
    if value is None:
        return None
    problem = _check_shape(value, {"alert", "events"}, "no_alert() or alert(...)")
    if problem:
        return problem
    found = value.get("alert")
    if found is not None:
        if not isinstance(found, dict) or set(found) - {"severity", "message", "stop_service"}:
            return "`alert`: expected {\"severity\", \"message\", \"stop_service\"}"
        if found.get("severity") not in ("info", "warning", "critical"):
            return "`alert.severity`: must be info, warning or critical"
        if not isinstance(found.get("message"), str):
            return "`alert.message`: must be a string"
        if not isinstance(found.get("stop_service", False), bool):
            return "`alert.stop_service`: must be a boolean"
    return _check_events(value, declared)


def _check_observation(value, _kinds):
    """Returns None if `value` is None or a valid output watch answer, else what is wrong."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"usage"}:
        return "`.`: expected null or {\"usage\": [...]}"
    calls = value.get("usage", [])
    if not isinstance(calls, list) or len(calls) > 64:
        return "`usage`: expected a list of at most 64 calls"
    for call in calls:
        if not isinstance(call, dict) or set(call) - (_USAGE_KEYS | {"model"}):
            return "`usage`: each call is an object of %s and model" % ", ".join(sorted(_USAGE_KEYS))
        for key in ("input_tokens", "output_tokens"):
            if not isinstance(call.get(key), int) or call[key] < 0:
                return "`usage.%s`: expected an integer >= 0" % key
        cost = call.get("cost_usd")
        if cost is not None and (not isinstance(cost, (int, float)) or cost < 0):
            return "`usage.cost_usd`: expected US dollars >= 0"
    return None


#: Per family: its method's params keys and the checker of its result.
_FAMILIES = {
    "spawn_hook": ({"hook", "ctx", "spawn"}, None),
    "dirty_handler": ({"hook", "ctx", "dirty_files"}, None),
    "pre_round": ({"hook", "ctx"}, _check_round_decision),
    "context_enricher": ({"hook", "ctx"}, _check_enrichment),
    "serve_startup": ({"hook", "project", "work_dir", "log_dir", "config"}, _check_startup),
    "detector": ({"hook", "ctx", "state"}, _check_detection),
    "post_round": ({"hook", "ctx", "outcome", "log_tail"},
                   lambda result, _kinds: _check_post_round_verdict(result)),
    "output_watch": ({"hook", "ctx", "chunk"}, _check_observation),
}
_METHODS = {BEFORE_SPAWN: "spawn_hook", HANDLE_DIRTY: "dirty_handler",
            BEFORE_ROUND: "pre_round", ENRICH: "context_enricher", ON_START: "serve_startup",
            DETECT: "detector", AFTER_ROUND: "post_round", OBSERVE: "output_watch"}


class Host:
    """A plugin host: its hooks, its setup, and the serve loop (`run`)."""

    def __init__(self, name, version):
        self.name = name
        self.version = version
        #: The `initialize` params once initialized (dict), else None.
        self.init = None
        #: `init["config"]`: the host's config table (dict), once initialized.
        self.config = {}
        self._setup = None
        self._hooks = []  # (family, name, priority, fn)
        self._event_kinds = []
        self._owned_paths = []

    def event_kinds(self, kinds):
        """Declares event kinds (`^[a-z][a-z0-9_]{0,47}$`) results may carry; recorded by
        the supervisor as `<host>.<kind>`."""
        for kind in kinds:
            if not _is_event_kind(kind):
                raise ValueError("event kind %r must match %s" % (kind, _EVENT_KIND_PATTERN))
        self._event_kinds = list(kinds)

    def owned_paths(self, paths):
        """Declares paths (relative to work_dir) this host owns: the supervisor leaves them
        out of dirty detection, stash and commit."""
        self._owned_paths = list(paths)

    def pre_round(self, name):
        """Decorator: `fn(params)` answers `pre_round/before_round` for hook `name`."""
        return self._register("pre_round", name, None)

    def context_enricher(self, name):
        """Decorator: `fn(params)` answers `context_enricher/enrich` for hook `name`."""
        return self._register("context_enricher", name, None)

    def serve_startup(self, name):
        """Decorator: `fn(params)` answers `serve_startup/on_start` for hook `name`."""
        return self._register("serve_startup", name, None)

    def detector(self, name):
        """Decorator: `fn(params)` answers `detector/detect` for hook `name`."""
        return self._register("detector", name, None)

    def setup(self, fn):
        """Decorator: `fn(init)` runs at `initialize`; raise HookError to refuse the config."""
        self._setup = fn
        return fn

    def spawn_hook(self, name):
        """Decorator: `fn(params)` answers `spawn_hook/before_spawn` for hook `name`."""
        return self._register("spawn_hook", name, None)

    def dirty_handler(self, name, priority=None):
        """Decorator: `fn(params)` answers `dirty_handler/handle_dirty` for hook `name`
        (`priority`: lower runs first; the built-in handler has 1000)."""
        return self._register("dirty_handler", name, priority)

    def post_round(self, name):
        """Decorator: `fn(params)` answers `post_round/after_round` for hook `name`:
        return None, back_off(...), stop(...) or carry_on(...)."""
        return self._register("post_round", name, None)

    def output_watch(self, name):
        """Decorator: `fn(params)` answers `output_watch/observe` for hook `name`: shown
        `params["chunk"]` (`offset`, `skipped_bytes`, `text`) of the running round's log,
        return None or {"usage": [...]}, one entry per model call the chunk completed."""
        return self._register("output_watch", name, None)

    def _register(self, family, name, priority):
        if not _is_hook_name(name):
            raise ValueError("hook name %r must match %s" % (name, _HOOK_NAME_PATTERN))
        if any(h[1] == name for h in self._hooks):
            raise ValueError("hook %r declared twice" % name)
        if priority is not None and not _is_int(priority):
            raise ValueError("priority of %r must be an integer" % name)

        def decorate(fn):
            self._hooks.append((family, name, priority, fn))
            return fn

        return decorate

    # ---- the serve loop -------------------------------------------------------------

    def run(self):
        """Serves requests on stdin until end-of-file; returns the exit status (0).

        Call as `sys.exit(host.run())`.
        """
        out = _PROTOCOL_OUT
        inp = sys.stdin.buffer
        while True:
            line = inp.readline(MAX_LINE_BYTES)
            if not line:
                return 0
            if not line.endswith(b"\n") and len(line) >= MAX_LINE_BYTES:
                _discard_rest_of_line(inp)
                reply = _error(None, INVALID_REQUEST,
                               "line longer than %d bytes" % MAX_LINE_BYTES)
            else:
                reply = self._handle_line(line.rstrip(b"\n"))
            if reply is not None:
                out.write(reply.encode("utf-8") + b"\n")
                out.flush()

    def _handle_line(self, raw):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return _error(None, PARSE_ERROR, "parse error: line is not UTF-8")
        if not text.strip():
            return None
        try:
            request = _loads(text)
        except ValueError as err:
            return _error(None, PARSE_ERROR, "parse error: %s" % err)
        if isinstance(request, list):
            return _error(None, INVALID_REQUEST, "invalid request: batches are not supported")
        if not isinstance(request, dict):
            return _error(None, INVALID_REQUEST, "invalid request: not an object")
        rid = request.get("id")
        if "method" in request and "id" not in request:
            return None  # a notification: never answered; protocol v1 has none
        if not (_is_int(rid) or isinstance(rid, str)):
            rid = None
        method = request.get("method")
        if request.get("jsonrpc") != "2.0" or not isinstance(method, str) or rid is None:
            return _error(rid, INVALID_REQUEST,
                          "invalid request: need jsonrpc \"2.0\", a string method and an id")
        params = request.get("params")
        try:
            result = self._dispatch(method, params)
        except _RpcError as err:
            return _error(rid, err.code, err.message, err.data)
        reply = _dumps({"jsonrpc": "2.0", "result": result, "id": rid})
        if len(reply.encode("utf-8")) + 1 > MAX_LINE_BYTES:
            return _error(rid, INTERNAL_ERROR,
                          "response exceeds the %d-byte line limit" % MAX_LINE_BYTES)
        return reply

    def _dispatch(self, method, params):
        if method == INITIALIZE:
            return self._initialize(params)
        if method == SHUTDOWN:
            if params not in (None, {}, []):
                raise _RpcError(INVALID_PARAMS, "invalid params: `shutdown` takes no params",
                                {"field": "."})
            return None
        family = _METHODS.get(method)
        if family is not None:
            return self._call(family, params, _FAMILIES[family][0])
        raise _RpcError(METHOD_NOT_FOUND, "method not found: %s" % method)

    def _initialize(self, params):
        if isinstance(params, dict) and "protocol_version" in params:
            version = params["protocol_version"]
            if version != PROTOCOL_VERSION or not _is_int(version):
                raise _RpcError(
                    UNSUPPORTED_PROTOCOL_VERSION,
                    "unsupported protocol version %s; this host speaks %d"
                    % (_dumps(version), PROTOCOL_VERSION),
                    {"supported": [PROTOCOL_VERSION]})
        _check_object(params, ".", _INIT_KEYS, _INIT_KEYS)
        if not isinstance(params["config"], dict):
            raise _RpcError(INVALID_PARAMS, "invalid params: `config` must be an object",
                            {"field": "config"})
        if self.init is not None:
            raise _RpcError(INVALID_REQUEST, "invalid request: already initialized")
        self.config = params["config"]
        if self._setup is not None:
            _guarded("setup", self._setup, params)
        self.init = params
        hooks = []
        for family, name, priority, _ in self._hooks:
            decl = {"family": family, "name": name}
            if priority is not None:
                decl["priority"] = priority
            hooks.append(decl)
        result = {"protocol_version": PROTOCOL_VERSION, "name": self.name,
                  "version": self.version, "hooks": hooks}
        if self._event_kinds:
            result["event_kinds"] = self._event_kinds
        if self._owned_paths:
            result["owned_paths"] = self._owned_paths
        return result

    def _call(self, family, params, keys):
        if self.init is None:
            raise _RpcError(INVALID_REQUEST,
                            "invalid request: `initialize` has not succeeded yet")
        _check_object(params, ".", keys, keys)
        if "ctx" in keys:
            _check_object(params["ctx"], "ctx", _CTX_KEYS, _CTX_KEYS)
        name = params["hook"]
        mine = [h for h in self._hooks if h[0] == family]
        fn = next((h[3] for h in mine if h[1] == name), None)
        if fn is None:
            raise _RpcError(
                INVALID_PARAMS,
                "invalid params: `hook`: this host has no %s named %s (its %ss: %s)"
                % (family, _dumps(name), family,
                   ", ".join(sorted(h[1] for h in mine)) or "none"),
                {"field": "hook"})
        what = "%s `%s`" % (family.replace("_", " "), name)
        result = _guarded(what, fn, params)
        if family == "spawn_hook":
            problem = _check_spawn_decision(result)
        elif family == "dirty_handler":
            problem = _check_dirty_action(result, params["dirty_files"])
        else:
            problem = _FAMILIES[family][1](result, self._event_kinds)
        if problem is not None:
            raise _RpcError(INTERNAL_ERROR, "%s returned an invalid result: %s" % (what, problem))
        return result


def _guarded(what, fn, params):
    """Runs host code: HookError becomes -32000 with its message; any other exception
    -32000 naming it (the traceback goes to stderr)."""
    try:
        return fn(params)
    except HookError as err:
        raise _RpcError(HOOK_FAILED, err.message, err.data)
    except Exception as err:  # noqa: BLE001 - a host must answer, never die of its bug
        import traceback  # only on this path: it costs a cold start ~2 ms

        traceback.print_exc(file=sys.stderr)
        raise _RpcError(HOOK_FAILED, "%s raised %s: %s" % (what, type(err).__name__, err))


def _error(rid, code, message, data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return _dumps({"jsonrpc": "2.0", "error": error, "id": rid})


def _discard_rest_of_line(inp):
    while True:
        chunk = inp.readline(MAX_LINE_BYTES)
        if not chunk or chunk.endswith(b"\n"):
            return


def _protect_stdout():
    """Keeps the real stdout on a private, non-inheritable descriptor (returned, unbuffered)
    and points fd 1 and `sys.stdout` at stderr: only the serve loop writes protocol lines."""
    sys.stdout.flush()
    private = os.dup(1)  # os.dup descriptors are non-inheritable (close-on-exec)
    try:
        os.dup2(2, 1)
    except OSError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    sys.stdout = sys.stderr
    return os.fdopen(private, "wb", buffering=0)


#: The real stdout, private to the serve loop (taken at import: see the module doc).
_PROTOCOL_OUT = _protect_stdout()
