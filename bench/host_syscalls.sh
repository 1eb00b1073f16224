#!/usr/bin/env bash
# The system calls confined hosts really make (docs/security.md "File metadata"): runs the
# runtime matrix's `as_root` rows (tests/tests/suite/functional/runtimes.rs) with the supervisor under
# `strace -f`, then lists, per host runtime, every distinct call a host made from its
# `execveat` on (threads and children included). The measurement behind the hosts'
# seccomp allow-list (`SECCOMP_ALLOW` in plugin-host/src/policy.rs, whose test
# `every_measured_call_is_allowed` holds the calls found here).
#
#   bash bench/host_syscalls.sh            # needs strace (apt-get install strace), root
#
# The supervisor binary (target/debug/agent-runner) is replaced by a wrapper for the run
# and put back afterwards; traces go to $TMPDIR/ar-host-syscalls.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v strace >/dev/null || { echo "strace is missing: apt-get install strace" >&2; exit 1; }
out="${TMPDIR:-/tmp}/ar-host-syscalls"
rm -rf "$out" && mkdir -p "$out"
cargo build -q -p agent-runner
bin=target/debug/agent-runner
cp "$bin" "$out/agent-runner.real"
printf '#!/bin/sh\nexec strace -f -qq -s 64 -o %s/run.$$ %s/agent-runner.real "$@"\n' "$out" "$out" > "$out/wrapper"
chmod 755 "$out/wrapper"
trap 'cp "$out/agent-runner.real" "$bin"' EXIT
cp "$out/wrapper" "$bin"
cargo test -q -p agent-runner-e2e --test all -- suite::functional::runtimes:: --skip as_unprivileged_user >/dev/null
python3 - "$out"/run.* <<'PY'
import collections, os, re, sys

calls = collections.defaultdict(set)
for path in sys.argv[1:]:
    lines = []
    for raw in open(path, errors="replace"):
        m = re.match(r"^(\d+) +(.*)$", raw.rstrip("\n"))
        if not m:
            continue
        pid, rest = int(m.group(1)), m.group(2)
        resumed = re.match(r"^<\.\.\. (\w+) resumed>", rest)
        call = re.match(r"^(\w+)\(", rest)
        if resumed or call:
            lines.append((pid, (resumed or call).group(1), rest, bool(resumed)))
    start, children, argv0 = {}, [], {}
    for i, (pid, name, rest, resumed) in enumerate(lines):
        if name == "execveat" and not resumed:
            found = re.search(r'\["([^"]*)"', rest)
            argv0[pid] = os.path.basename(found.group(1)) if found else "?"
        if name == "execveat" and rest.rstrip().endswith("= 0"):
            start[pid] = (i, argv0.get(pid, "?"))
        if name in ("clone", "clone3", "fork", "vfork"):
            ret = re.search(r"= (\d+)\s*$", rest)
            if ret:
                children.append((pid, int(ret.group(1)), i))
    grown = True
    while grown:
        grown = False
        for parent, child, i in children:
            if parent in start and start[parent][0] <= i and child not in start:
                start[child] = (-1, start[parent][1])
                grown = True
    for i, (pid, name, _, resumed) in enumerate(lines):
        if pid in start and i >= start[pid][0] and not resumed:
            calls[start[pid][1]].add(name)
for runtime, names in sorted(calls.items()):
    print(f"{runtime} ({len(names)}): {' '.join(sorted(names))}")
PY
