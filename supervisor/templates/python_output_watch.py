"""{{NAME}}: an agent-runner plugin host with one output watch, `{{HOOK}}`.

Edit `observe` below, then rebuild and re-check:
    bash build.sh && agent-runner plugin check -- ./{{NAME}}.pyz
The contract: docs/protocol.md of agent-runner (§5.10). Log with print() once
agent_runner_host is imported (keep that import first): print() then goes to stderr.
"""

import json
import sys

from agent_runner_host import HookError, Host

host = Host("{{NAME}}", "0.1.0")
carry = {"round": None, "text": ""}


@host.setup
def configure(init):
    for key in init["config"]:
        raise HookError("config: unknown key `%s`" % key)


@host.output_watch("{{HOOK}}")
def observe(params):
    # params["chunk"]: offset (0 starts a round), skipped_bytes, text (untrusted: the agent
    # wrote it). Answer the usage of each model call the chunk completed, or None.
    chunk = params["chunk"]
    if chunk["offset"] == 0 or carry["round"] != params["ctx"]["round_num"]:
        carry.update(round=params["ctx"]["round_num"], text="")
    text = carry["text"] + chunk["text"]
    lines = text.split("\n")
    carry["text"] = lines.pop()[-65536:]
    calls = []
    for line in lines:
        if not line.startswith("{") or '"usage"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        usage = record.get("usage") if isinstance(record, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("input_tokens"), int):
            calls.append({"input_tokens": usage["input_tokens"],
                          "output_tokens": int(usage.get("output_tokens", 0))})
    return {"usage": calls[:64]} if calls else None


sys.exit(host.run())
