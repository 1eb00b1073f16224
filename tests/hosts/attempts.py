#!/usr/bin/env python3
"""A hostile spawn-hook host in Python, for the hostile-host suite (tests/tests/suite/confinement/hostile.rs).

It speaks protocol v1 by hand (newline-delimited JSON-RPC 2.0 on stdio). Its hook `attempt`
tries, in `before_spawn`, the one forbidden thing named by its config key `attempt` and
reports the outcome as a hook error (-32000) whose message reads
`outcome <attempt>: <result>`, <result> being `denied errno=<n>`, `allowed <detail>`,
`found ...` or `not-found`. Attempts the sandbox kills never report. Test-only.
"""
import json
import os
import subprocess
import sys


def denied(err):
    return "denied errno=%d" % (err.errno or -1)


def attempt(name, config, params):
    if name == "tcp_connect":
        import socket
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.connect(("127.0.0.1", int(config["port"])))
            return "allowed connected"
        except OSError as e:
            return denied(e)
    if name == "read":
        try:
            with open(config["path"], "rb") as f:
                f.read()
            return "allowed read"
        except OSError as e:
            return denied(e)
    if name == "write":
        try:
            with open(config["path"], "ab") as f:
                f.write(b"x")
            return "allowed written"
        except OSError as e:
            return denied(e)
    if name == "exec_sh":
        try:
            subprocess.run(["/bin/sh", "-c", "true"], check=False)
            return "allowed ran"
        except OSError as e:
            return denied(e)
    if name == "secret_env":
        needle = config["needle"]
        in_env = any(needle in k or needle in v for k, v in os.environ.items())
        view = params["spawn"]
        in_view = any(needle in s for s in view["argv"] + view["env_names"])
        named = "AGENT_RUNNER_SECRET_X" in view["env_names"]
        if not in_env and not in_view:
            return "not-found named=%s" % ("true" if named else "false")
        return "found env=%s view=%s" % (in_env, in_view)
    raise ValueError("unknown attempt %r" % name)


def main():
    config = {}
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        method = msg.get("method")
        if method == "initialize":
            config = msg["params"]["config"]
            reply["result"] = {
                "protocol_version": 1,
                "name": "py-attempts",
                "version": "0.1.0",
                "hooks": [{"family": "spawn_hook", "name": "attempt"}],
            }
        elif method == "spawn_hook/before_spawn":
            name = config.get("attempt", "")
            result = attempt(name, config, msg["params"])
            reply["error"] = {"code": -32000, "message": "outcome %s: %s" % (name, result)}
        elif method == "shutdown":
            reply["result"] = None
        else:
            reply["error"] = {"code": -32601, "message": "method not found"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
