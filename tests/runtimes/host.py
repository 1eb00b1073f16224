#!/usr/bin/env python3
"""The runtime matrix's host in Python (tests/tests/suite/functional/runtimes.rs): spawn hook `gate`
(defer 1 s the first time it is asked, then proceed) and dirty handler `wip` (commit everything, "wip python: round N"), by hand over
newline-delimited JSON-RPC 2.0 on stdio (docs/protocol.md). Standard library only."""
import json
import sys

ASKED = []


def answer(req):
    method, params = req.get("method"), req.get("params") or {}
    if method == "initialize":
        return {"protocol_version": 1, "name": "runtime-python", "version": "0.1.0",
                "hooks": [{"family": "spawn_hook", "name": "gate"},
                          {"family": "dirty_handler", "name": "wip", "priority": 10}]}
    if method == "spawn_hook/before_spawn":
        if not ASKED:
            ASKED.append(True)
            return {"action": "defer", "defer_s": 1, "reason": "python"}
        return {"action": "proceed"}
    if method == "dirty_handler/handle_dirty":
        return {"action": "commit",
                "message": "wip python: round %d" % params["ctx"]["round_num"]}
    if method == "shutdown":
        return None
    raise LookupError(method)


for line in sys.stdin:
    req = json.loads(line)
    try:
        reply = {"jsonrpc": "2.0", "id": req["id"], "result": answer(req)}
    except LookupError as e:
        reply = {"jsonrpc": "2.0", "id": req["id"],
                 "error": {"code": -32601, "message": "method not found: %s" % e}}
    sys.stdout.write(json.dumps(reply, separators=(",", ":")) + "\n")
    sys.stdout.flush()
