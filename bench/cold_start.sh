#!/usr/bin/env bash
# Cold start per runtime (hash + confine + initialize), p50/p99, for the runtime matrix's
# hosts and the Python SDK's zipapp under sandbox = "require" (supervisor/benches/cold_start.rs).
# Script hosts run the interpreter their #! line names on PATH (printed per row), so it
# runs twice: with the caller's PATH (here: pyenv's python3 first) and with the system's
# interpreters (PATH=/usr/bin:/bin). Writes both tables to docs/performance.md between the
# cold_start.sh markers (at the end of the file, which bench/compare.sh and
# bench/scale.sh keep). Not part of CI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --quiet -p agent-runner-e2e --bin ar-e2e-runtime
bash examples/python-pause-file/build.sh "$(pwd)/target/release/python-pause-file.pyz" >/dev/null
cargo bench --quiet -p agent-runner --bench cold_start --no-run
caller="$(cargo bench --quiet -p agent-runner --bench cold_start)"
system="$(PATH="$(dirname "$(command -v cargo)"):/usr/bin:/bin" cargo bench --quiet -p agent-runner --bench cold_start)"
printf '%s\n\n%s\n' "$caller" "$system"
CALLER="$caller" SYSTEM="$system" OUT="docs/performance.md" python3 - <<'PY'
import os, platform, re, time

def table(text):
    rows = ["| host | p50 | p99 | interpreter |", "|---|---|---|---|"]
    for line in text.splitlines():
        m = re.match(r"\s+(\S+)\s+p50\s+([\d.]+) ms\s+p99\s+([\d.]+) ms\s*(.*)", line)
        if m:
            name, p50, p99, interp = m.groups()
            rows.append("| %s | %s ms | %s ms | %s |" % (name, p50, p99, interp or "(a binary)"))
        elif line.strip() and not line.startswith("cold start"):
            rows.append("| %s | | | |" % line.strip())
    return "\n".join(rows)

cpus = os.cpu_count()
date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
section = "\n".join([
    "<!-- bench/cold_start.sh: begin -->",
    "## Host cold start per runtime\n",
    "Produced by `bash bench/cold_start.sh` (do not edit by hand): resolve + hash + pin + "
    "confined launch (Landlock + seccomp, `sandbox = \"require\"`) + `initialize`, 30 starts "
    "per host, in the supervisor's own code (`supervisor/benches/cold_start.rs`). Hosts: "
    "`tests/runtimes/` (the runtime matrix: one spawn hook and one dirty handler each, "
    "written by hand against the protocol), `rust` = `ar-e2e-runtime` (the Rust SDK), "
    "`pyz-sdk` = `examples/python-pause-file` built by `sdk/python/build_pyz.py`. "
    "Goals: Rust ≤ 5 ms, Python ≤ 30 ms.\n",
    "Machine: %d CPUs, %s %s; date %s.\n" % (cpus, platform.system(), platform.release(), date),
    "With the caller's PATH (`#!/usr/bin/env` finds what a developer's shell finds):\n",
    table(os.environ["CALLER"]) + "\n",
    "With the system's interpreters (`PATH=/usr/bin:/bin`):\n",
    table(os.environ["SYSTEM"]) + "\n",
    "<!-- bench/cold_start.sh: end -->",
]) + "\n"
out = os.environ["OUT"]
text = open(out).read()
begin, end = "<!-- bench/cold_start.sh: begin -->", "<!-- bench/cold_start.sh: end -->"
if begin in text and end in text:
    text = text[:text.index(begin)] + section + text[text.index(end) + len(end) + 1:]
else:
    text = text.rstrip("\n") + "\n\n" + section
open(out, "w").write(text)
PY
