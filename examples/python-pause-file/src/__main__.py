"""python-pause-file: the Python twin of examples/spawn-pause-file. Its spawn hook,
`pause_file`, defers every agent spawn while a pause file exists.

Config keys ([plugins.hosts.<name>.config]): `file` (default ".agent-runner-pause",
relative to the work dir), `defer_s` (default 60, 0..=86400), `reason` (default
"paused: pause file present").
"""

import os
import sys

from agent_runner_host import MAX_DEFER_S, HookError, Host, defer, proceed

host = Host("python-pause-file", "0.1.0")
settings = {}


@host.setup
def configure(init):
    config = init["config"]
    unknown = sorted(set(config) - {"file", "defer_s", "reason"})
    if unknown:
        raise HookError("config: unknown key `%s` (known: file, defer_s, reason)" % unknown[0])
    file = config.get("file", ".agent-runner-pause")
    defer_s = config.get("defer_s", 60)
    reason = config.get("reason", "paused: pause file present")
    if not isinstance(file, str) or not file:
        raise HookError("config: `file` must be a non-empty string")
    if isinstance(defer_s, bool) or not isinstance(defer_s, int) or not 0 <= defer_s <= MAX_DEFER_S:
        raise HookError("config: `defer_s` must be an integer in 0..=%d" % MAX_DEFER_S)
    if not isinstance(reason, str):
        raise HookError("config: `reason` must be a string")
    settings.update(file=file, defer_s=defer_s, reason=reason)


@host.spawn_hook("pause_file")
def pause_file(params):
    path = os.path.join(params["ctx"]["work_dir"], settings["file"])
    try:
        os.stat(path)
    except FileNotFoundError:
        return proceed()
    except OSError as err:
        raise HookError("cannot check %s: %s" % (path, err))
    return defer(settings["defer_s"], settings["reason"])


sys.exit(host.run())
