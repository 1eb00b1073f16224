"""{{NAME}}: an agent-runner plugin host with one post-round hook, `{{HOOK}}`.

Edit `judge` below, then rebuild and re-check:
    bash build.sh && agent-runner plugin check -- ./{{NAME}}.pyz
The contract: docs/protocol.md of agent-runner. Log with print() once agent_runner_host
is imported (keep that import first): print() then goes to stderr. Before it, stdout is
the protocol and a print breaks it.
"""

import sys

from agent_runner_host import HookError, Host, back_off

host = Host("{{NAME}}", "0.1.0")


@host.setup
def configure(init):
    # init["config"] is your [plugins.hosts.<name>.config] table; refuse what you do not know.
    for key in init["config"]:
        raise HookError("config: unknown key `%s`" % key)


@host.post_round("{{HOOK}}")
def judge(params):
    # params["outcome"]: exit_code, signal, exit_cause, duration_s, timed_out;
    # params["log_tail"]: the end of the round log (untrusted text the agent wrote).
    # Return None, back_off(kind, back_off_s=.. or until=.., message=..), stop(kind, message)
    # or carry_on(message, usage).
    if params["outcome"]["exit_code"] != 0 and "429" in params["log_tail"]:
        return back_off("rate_limit", back_off_s=60, message="HTTP 429 in the round log")
    return None


sys.exit(host.run())
