#!/usr/bin/env python3
"""A context-enricher host that answers only once its peer host is being asked too, for
the concurrency test in tests/tests/suite/functional/families.rs. Test-only; protocol v1 by hand.

Config: `hook` (its hook's name) and `peer` (the other host's name). In `enrich` it marks
its arrival in its own state directory (`<log_dir>/plugins/<host>/arrived`), then waits up
to 60 s for the peer's mark (every host may read `log_dir`, docs/protocol.md §8) and
answers `{"context": {"met": <peer>}}`. Asked one after the other, the first host to be
asked waits past its call timeout; asked together, both answer.
"""
import json
import os
import sys
import time


def main():
    config = {}
    state_dir = ""
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        method = msg.get("method")
        if method == "initialize":
            config = msg["params"]["config"]
            state_dir = msg["params"]["state_dir"]
            reply["result"] = {
                "protocol_version": 1,
                "name": "py-rendezvous",
                "version": "0.1.0",
                "hooks": [{"family": "context_enricher", "name": config["hook"]}],
            }
        elif method == "context_enricher/enrich":
            with open(os.path.join(state_dir, "arrived"), "w") as f:
                f.write("here\n")
            peer = config["peer"]
            mark = os.path.join(msg["params"]["ctx"]["log_dir"], "plugins", peer, "arrived")
            deadline = time.monotonic() + 60
            while not os.path.exists(mark) and time.monotonic() < deadline:
                time.sleep(0.02)
            reply["result"] = {"context": {"met": peer}}
        elif method == "shutdown":
            reply["result"] = None
        else:
            reply["error"] = {"code": -32601, "message": "method not found"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
