#!/usr/bin/env python3
"""A pre-round host that declares otherwise after a restart, for the test in
tests/tests/suite/functional/families.rs. Test-only; protocol v1 by hand.

Its first process declares the hook `gate`, the event kind `first` and the owned path
`first.txt`, and crashes at its first `before_round`. Started again (a marker in its
state dir says so), it declares the hooks `gate` and `gate_two`, the event kind `second`
and the owned path `second.txt`; each `before_round` then answers `proceed` with one event
of its own: `first` in round 2, `second` after.
"""
import json
import os
import sys


def main():
    restarted = False
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        method = msg.get("method")
        if method == "initialize":
            marker = os.path.join(msg["params"]["state_dir"], "started")
            restarted = os.path.exists(marker)
            if not restarted:
                with open(marker, "w") as f:
                    f.write("1\n")
                declared = (["gate"], ["first"], ["first.txt"])
            else:
                declared = (["gate", "gate_two"], ["second"], ["second.txt"])
            reply["result"] = {
                "protocol_version": 1,
                "name": "redeclare",
                "version": "0.1.0",
                "hooks": [{"family": "pre_round", "name": h} for h in declared[0]],
                "event_kinds": declared[1],
                "owned_paths": declared[2],
            }
        elif method == "pre_round/before_round":
            if not restarted:
                os._exit(3)
            kind = "first" if msg["params"]["ctx"]["round_num"] == 2 else "second"
            reply["result"] = {
                "action": "proceed",
                "events": [{"kind": kind, "fields": {"round": msg["params"]["ctx"]["round_num"]}}],
            }
        elif method == "shutdown":
            reply["result"] = None
        else:
            reply["error"] = {"code": -32601, "message": "method not found"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
