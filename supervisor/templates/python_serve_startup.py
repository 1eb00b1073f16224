"""{{NAME}}: an agent-runner plugin host with one serve-startup hook, `{{HOOK}}`.

Edit `answer` below, then rebuild and re-check:
    bash build.sh && agent-runner plugin check -- ./{{NAME}}.pyz
The contract: docs/protocol.md of agent-runner. Log with print() once agent_runner_host
is imported (keep that import first): print() then goes to stderr. Before it, stdout is
the protocol and a print breaks it.
"""

import sys

from agent_runner_host import HookError, Host, started

host = Host("{{NAME}}", "0.1.0")


@host.setup
def configure(init):
    # init["config"] is your [plugins.hosts.<name>.config] table; refuse what you do not know.
    for key in init["config"]:
        raise HookError("config: unknown key `%s`" % key)


@host.serve_startup("{{HOOK}}")
def answer(params):
    # Called once when serve boots. Raise HookError(message) to stop serve (exit 78).
    return started()


sys.exit(host.run())
