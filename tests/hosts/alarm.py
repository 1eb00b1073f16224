#!/usr/bin/env python3
"""A detector host that raises a critical alert asking serve to stop after every round,
for the auto_stop_on test in tests/tests/suite/functional/families.rs. Test-only; protocol v1 by hand.

Config: `hook` (its detector hook's name, e.g. a built-in detector's `oauth_fail`).
"""
import json
import sys


def main():
    hook = "alarm"
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        method = msg.get("method")
        if method == "initialize":
            hook = msg["params"]["config"]["hook"]
            reply["result"] = {
                "protocol_version": 1,
                "name": "py-alarm",
                "version": "0.1.0",
                "hooks": [{"family": "detector", "name": hook}],
            }
        elif method == "detector/detect":
            reply["result"] = {
                "alert": {
                    "severity": "critical",
                    "message": f"{hook} after round {msg['params']['ctx']['round_num']}",
                    "stop_service": True,
                }
            }
        elif method == "shutdown":
            reply["result"] = None
        else:
            reply["error"] = {"code": -32601, "message": "method not found"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
