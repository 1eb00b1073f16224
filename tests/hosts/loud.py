#!/usr/bin/env python3
"""A host whose words try to drive the operator's terminal, and whose post-round hook asks
for a back-off until 2099, for the hostile suite (tests/tests/suite/confinement/hostile.rs, issue 24).
Test-only; protocol v1 by hand, standard library only.

Hooks: spawn hook `noisy` fails every call with an error message full of escape
sequences (clear screen, retitle, bell, a bidi override); post-round hook `long_wait`
answers `back_off` until 2099-01-01T00:00:00Z.
"""
import json
import sys

NOISE = "boom\x1b[2J\x1b]0;pwned\x07\u202eevil\x1b[31m"


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        method = msg.get("method")
        if method == "initialize":
            reply["result"] = {
                "protocol_version": 1,
                "name": "py-loud",
                "version": "0.1.0",
                "hooks": [
                    {"family": "spawn_hook", "name": "noisy"},
                    {"family": "post_round", "name": "long_wait"},
                ],
            }
        elif method == "spawn_hook/before_spawn":
            reply["error"] = {"code": -32000, "message": NOISE}
        elif method == "post_round/after_round":
            reply["result"] = {
                "action": "back_off",
                "kind": "usage_limit",
                "message": "wait for me " + NOISE,
                "until": "2099-01-01T00:00:00Z",
            }
        elif method == "shutdown":
            reply["result"] = None
        else:
            reply["error"] = {"code": -32601, "message": "method not found"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
