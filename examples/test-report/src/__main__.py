"""test-report: an agent-runner host built on the project's last JUnit XML test report.

Three hooks (docs/hosts/junit-gate.md, docs/hosts/recent-work.md):
- `junit_gate` (pre_round): skips rounds, with the reason, while the report shows more
  failing tests than `max_failures` (a skip is honoured only when the hook is listed in
  [plugins] spawn_override_allow);
- `junit_report_check` (serve_startup): stops serve (exit 78) when the report's directory
  does not exist, i.e. `report` points where no test runner writes;
- `recent_work` (context_enricher): adds the last `commits` commit subjects (from
  .git/logs/HEAD: a confined host cannot run git) and the failing tests' names.

Config: `report` (relative to work_dir, default "reports/junit.xml"), `max_failures`
(default 0), `commits` (default 5), `max_names` (default 20). The report is an owned path:
the supervisor never stashes or commits it, so the gate keeps seeing it.
"""

import os
import sys
import xml.etree.ElementTree as ET

from agent_runner_host import (HookError, Host, enrichment, event, run_round, skip_round,
                               started, with_events)

host = Host("test-report", "0.1.0")
host.event_kinds(["tests_failing"])
settings = {}


def _int(config, key, default, lowest):
    value = config.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < lowest:
        raise HookError("config: `%s` must be an integer >= %d, got %r" % (key, lowest, value))
    return value


@host.setup
def configure(init):
    config = init["config"]
    for key in config:
        if key not in ("report", "max_failures", "commits", "max_names"):
            raise HookError("config: unknown key `%s` (known: report, max_failures, "
                            "commits, max_names)" % key)
    report = config.get("report", "reports/junit.xml")
    parts = report.split("/") if isinstance(report, str) else []
    if not parts or report.startswith("/") or ".." in parts or parts[0] == ".git":
        raise HookError("config: `report` must be a path relative to work_dir, got %r" % report)
    settings.update(report=report, max_failures=_int(config, "max_failures", 0, 0),
                    commits=_int(config, "commits", 5, 0),
                    max_names=_int(config, "max_names", 20, 0),
                    work_dir=init["work_dir"])
    host.owned_paths([report])


def failing_tests(work_dir):
    """(names of failed or errored test cases, total cases), or None without a report."""
    path = os.path.join(work_dir, settings["report"])
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        return None
    except (ET.ParseError, OSError) as err:
        print("test-report: cannot read %s: %s" % (path, err))
        return None
    failing, total = [], 0
    for case in root.iter("testcase"):
        total += 1
        if case.find("failure") is not None or case.find("error") is not None:
            name = case.get("name", "?")
            cls = case.get("classname")
            failing.append("%s.%s" % (cls, name) if cls else name)
    return failing, total


@host.pre_round("junit_gate")
def gate(params):
    found = failing_tests(params["ctx"]["work_dir"])
    if found is None:
        return run_round()
    failing, total = found
    allowed = settings["max_failures"]
    if len(failing) <= allowed:
        return run_round()
    shown = ", ".join(failing[:5]) + (", ..." if len(failing) > 5 else "")
    reason = "%d of %d tests failing in %s (allowed: %d): %s" % (
        len(failing), total, settings["report"], allowed, shown)
    return with_events(skip_round(reason), [event("tests_failing", {
        "failing": len(failing), "total": total, "allowed": allowed,
        "report": settings["report"], "round_num": params["ctx"]["round_num"]})])


@host.serve_startup("junit_report_check")
def check(params):
    directory = os.path.dirname(os.path.join(params["work_dir"], settings["report"]))
    if not os.path.isdir(directory):
        raise HookError("report directory %s does not exist: no test runner writes `%s` "
                        "there; fix `report` in the host's config or create the directory"
                        % (directory, settings["report"]))
    return started()


#: How the supervisor's own commits begin in the reflog (docs/protocol.md §5.2).
SUPERVISOR_REFLOG_PREFIX = "agent-runner dirty handler "


def recent_subjects(work_dir, count):
    """The last `count` commit subjects, newest first, from HEAD's reflog."""
    try:
        with open(os.path.join(work_dir, ".git", "logs", "HEAD"), encoding="utf-8",
                  errors="replace") as log:
            lines = log.readlines()
    except OSError:
        return []
    subjects = []
    for line in reversed(lines):
        _, _, message = line.rstrip("\n").partition("\t")
        kind, _, subject = message.partition(": ")
        # The agent's commits read `commit: <subject>`; the supervisor's, for a dirty
        # handler, `agent-runner dirty handler <hook>: <subject>` (docs/protocol.md §5.2).
        if (kind.startswith("commit") or kind.startswith(SUPERVISOR_REFLOG_PREFIX)) and subject:
            subjects.append(subject)
            if len(subjects) == count:
                break
    return subjects


@host.context_enricher("recent_work")
def recent_work(params):
    work_dir = params["ctx"]["work_dir"]
    context = {"recent_commits": recent_subjects(work_dir, settings["commits"])}
    found = failing_tests(work_dir)
    if found is not None:
        context["failing_tests"] = found[0][:settings["max_names"]]
        context["tests_total"] = found[1]
    return enrichment(context)


sys.exit(host.run())
