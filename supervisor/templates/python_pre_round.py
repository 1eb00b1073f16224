"""{{NAME}}: an agent-runner plugin host with one pre-round hook, `{{HOOK}}`.

Edit `answer` below, then rebuild and re-check:
    bash build.sh && agent-runner plugin check -- ./{{NAME}}.pyz
The contract: docs/protocol.md of agent-runner. Log with print() once agent_runner_host
is imported (keep that import first): print() then goes to stderr. Before it, stdout is
the protocol and a print breaks it.
"""

import sys

from agent_runner_host import HookError, Host, run_round

host = Host("{{NAME}}", "0.1.0")


@host.setup
def configure(init):
    # init["config"] is your [plugins.hosts.<name>.config] table; refuse what you do not know.
    for key in init["config"]:
        raise HookError("config: unknown key `%s`" % key)


@host.pre_round("{{HOOK}}")
def answer(params):
    # params["ctx"]: the round about to start (round_num, phase, work_dir, ...).
    # Return run_round() or skip_round(reason) (a skip is honoured only for hooks listed
    # in [plugins] spawn_override_allow).
    return run_round()


sys.exit(host.run())
