"""{{NAME}}: an agent-runner plugin host with one dirty handler, `{{HOOK}}`.

Edit `decide` below, then rebuild and re-check:
    bash build.sh && agent-runner plugin check -- ./{{NAME}}.pyz
The contract: docs/protocol.md of agent-runner. Log with print() once agent_runner_host
is imported (keep that import first): print() then goes to stderr. Before it, stdout is
the protocol and a print breaks it.
"""

import sys

from agent_runner_host import HookError, Host

host = Host("{{NAME}}", "0.1.0")


@host.setup
def configure(init):
    # init["config"] is your [plugins.hosts.<name>.config] table; refuse what you do not know.
    for key in init["config"]:
        raise HookError("config: unknown key `%s`" % key)


@host.dirty_handler("{{HOOK}}", priority=100)
def decide(params):
    # params["dirty_files"]: paths relative to the work dir. Return commit(message),
    # stash(), ignore() or None (pass to the next handler). The supervisor acts, not you.
    return None


sys.exit(host.run())
