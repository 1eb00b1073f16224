#!/usr/bin/env bash
# Cost against history size: agent-runner (this repo, release build) and the reference
# system cli-agent-runner 0.3.2 (Python, from PyPI) on records of 10^3, 10^5 and 10^6
# events, side by side.
#
#   bash bench/scale.sh                   # RUNS=5 runs per cell, interleaved
#   RUNS=3 SIZES="1000 100000" bash bench/scale.sh
#
# For each size it writes one record (monthly files `events-YYYY-MM.jsonl` spanning the 90
# days before now: rounds of round_start, agent_spawn, agent_exit, round_end and, every
# 50th round, a hook_failed; ~140 bytes a line, like a real loop's) and copies it into two
# identical projects (the reference's read-only verbs append to the record, so the two
# never share files). Then it measures, whole process, wall time by the clock, CPU time
# by the kernel's accounting (wait4) and peak RSS by /usr/bin/time %M: `peek --json`, `events --kind round_end --window 5`,
# `events --kind round_end --since <a week ago>` and one `round` with a trivial agent.
# Medians go to docs/performance.md, between the scale.sh markers (bench/compare.sh keeps
# that part when it rewrites the rest).
#
# The reference is installed into a throwaway virtualenv outside the repository
# (PEER_VENV, default $TMPDIR/agent-runner-peer-venv). Its runs are bounded: each run gets
# PEER_TIMEOUT seconds (default 120) and at 10^6 events it runs PEER_RUNS_BIG times
# (default 1); a cell that hit the bound says so. Not part of CI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
runs="${RUNS:-5}"
sizes="${SIZES:-1000 100000 1000000}"
venv="${PEER_VENV:-${TMPDIR:-/tmp}/agent-runner-peer-venv}"

if [ ! -x "$venv/bin/agent-runner" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "cli-agent-runner[sandbox]==0.3.2"
fi
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
cargo build --release --quiet -p agent-runner

work="$root/target/scale"
rm -rf "$work"
mkdir -p "$work"
cat > "$work/trivial-agent.sh" <<'AGENT'
#!/bin/sh
echo "trivial agent: $(printf '%s' "$1" | head -c 40)"
AGENT
chmod +x "$work/trivial-agent.sh"

# new_project DIR [STATE_DIR]: a git repo with a 700-byte prompt (the reference refuses
# prompts under 500 bytes) and one config both systems accept; with STATE_DIR (ours only),
# `[runtime] state_dir` keeps the record there, out of the tree (docs/operations.md, "State
# dir"), instead of under the user's ~/.local/state.
new_project() {
  local p=$1 state=${2:-}
  mkdir -p "$p/prompts" "$p/logs"
  git -C "$p" init -q -b main .
  git -C "$p" config user.name bench
  git -C "$p" config user.email bench@localhost
  python3 -c "print('Keep a journal in notes/journal.md and improve the code. ' * 12)" > "$p/prompts/main.md"
  printf '/logs/\n' > "$p/.gitignore"
  cat > "$p/agent-runner.toml" <<TOML
schema_version = 1

[agent]
name = "trivial"
command = ["$work/trivial-agent.sh"]
prompt_arg_template = ["{prompt}"]
prompt_delivery = "argv"

[runtime]
work_dir = "."
log_dir = "./logs"
${state:+state_dir = \"$state\"}
round_budget_s = 60
restart_delay_s = 1

[prompt]
file = "./prompts/main.md"

[vcs]
dirty_action = "stash"
TOML
  git -C "$p" add -A
  git -C "$p" commit -q -m "bench project"
}

for n in $sizes; do
  python3 - "$n" "$work/record-$n" <<'PY'
import datetime, os, sys

n, out = int(sys.argv[1]), sys.argv[2]
os.makedirs(out)
now = datetime.datetime.now(datetime.timezone.utc)
span = datetime.timedelta(days=90)
per_round = 4.02  # 4 events a round, a hook_failed every 50th
rounds = max(1, int(n / per_round))
step = span / rounds
files, written, r = {}, 0, 0
def emit(t, body):
    global written
    ts = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
    f = files.get(ts[:7])
    if f is None:
        f = files[ts[:7]] = open(os.path.join(out, f"events-{ts[:7]}.jsonl"), "w")
    f.write(f'{{"ts":"{ts}","event":{body}}}\n')
    written += 1
while written < n:
    r += 1
    t = now - span + step * r - datetime.timedelta(seconds=1)
    ms = datetime.timedelta(milliseconds=1)
    emit(t, f'"round_start","round_num":{r},"phase":null')
    emit(t + ms, f'"agent_spawn","round_num":{r},"timeout_s":60,"log_path":"/srv/project/logs/rounds/R{r}-{t:%Y%m%dT%H%M%S}.log"')
    emit(t + 900 * ms, f'"agent_exit","round_num":{r},"exit_code":0,"signal":null,"duration_s":0.9,"timed_out":false,"exit_cause":"exited"')
    if r % 50 == 0:
        emit(t + 910 * ms, f'"hook_failed","round_num":{r},"hook":"dirty_handler","host":"commit","error":"call timed out after 5 s"')
    emit(t + 920 * ms, f'"round_end","round_num":{r},"exit_code":0,"exit_cause":"exited","dirty_outcome":null')
for f in files.values():
    f.close()
PY
  new_project "$work/ours-$n" "$work/ours-$n-state"
  mkdir -p "$work/ours-$n-state"
  cp "$work/record-$n"/events-*.jsonl "$work/ours-$n-state/"
  new_project "$work/peer-$n"
  cp "$work/record-$n"/events-*.jsonl "$work/peer-$n/logs/"
  rm -rf "$work/record-$n"
done

RUNS="$runs" SIZES="$sizes" WORK="$work" OURS="$root/target/release/agent-runner" \
PEER="$venv/bin/agent-runner" OUT="$root/docs/performance.md" \
PEER_TIMEOUT="${PEER_TIMEOUT:-120}" PEER_RUNS_BIG="${PEER_RUNS_BIG:-1}" \
python3 - <<'PY'
import datetime, os, platform, statistics, subprocess, tempfile, threading, time

runs = int(os.environ["RUNS"])
sizes = [int(s) for s in os.environ["SIZES"].split()]
work = os.environ["WORK"]
sides = {"ours": os.environ["OURS"], "peer": os.environ["PEER"]}
peer_timeout = float(os.environ["PEER_TIMEOUT"])
peer_runs_big = int(os.environ["PEER_RUNS_BIG"])
week_ago = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=7)).strftime(
    "%Y-%m-%dT%H:%M:%SZ")
rows = [
    ("`peek --json`", ["peek", "--json"]),
    ("`events --kind round_end --window 5`", ["events", "--kind", "round_end", "--window", "5"]),
    ("`events --kind round_end --since <a week ago>`", ["events", "--kind", "round_end", "--since", week_ago]),
    ("one `round` (trivial agent)", ["round"]),
]

def measure(exe, argv, cwd, timeout):
    """(wall s, CPU s, peak RSS KiB, exit code, lines out); exit code None when the bound
    hit. Peak RSS is /usr/bin/time's %M (the command's largest process); CPU (user +
    system, microsecond resolution) is the kernel's accounting of /usr/bin/time and the
    processes it waited for (wait4), so a loaded machine inflates wall time, not CPU."""
    with tempfile.NamedTemporaryFile("r") as t, tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", t.name, exe, *argv],
                                cwd=cwd, stdout=out, stderr=subprocess.DEVNULL)
        bound_hit = threading.Event()
        def bound():
            bound_hit.set()
            proc.kill()
        timer = threading.Timer(timeout, bound)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if bound_hit.is_set():
            return timeout, None, None, None, 0
        rss = int(t.read().strip().splitlines()[-1])
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, rss, proc.returncode, sum(1 for _ in out)

# What /usr/bin/time and an empty command cost in CPU, subtracted from every cell.
overhead = statistics.median(measure("/bin/true", [], work, 60)[1] for _ in range(max(runs, 5)))
samples, codes, bounded, lines_out = {}, {}, {}, {}
for n in sizes:
    for run in range(runs):
        order = ["ours", "peer"] if run % 2 == 0 else ["peer", "ours"]
        for i, (_, argv) in enumerate(rows):
            for side in order:
                if side == "peer" and n >= 1_000_000 and run >= peer_runs_big:
                    continue
                if side == "peer" and bounded.get((side, n, i)):
                    continue
                timeout = peer_timeout if side == "peer" else 600
                wall, cpu, rss, code, out = measure(sides[side], argv, os.path.join(work, f"{side}-{n}"), timeout)
                if code is None:
                    bounded[(side, n, i)] = True
                    continue
                samples.setdefault((side, n, i), []).append((wall, cpu, rss))
                codes.setdefault((side, n, i), set()).add(code)
                lines_out[(side, n, i)] = out
        print(f"size {n}: run {run + 1}/{runs} done", flush=True)

def fmt_ms(ms):
    return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"

def cell(side, n, i):
    s = samples.get((side, n, i))
    if not s:
        return f"> {peer_timeout:.0f} s (bounded)" if bounded.get((side, n, i)) else "n/a"
    wall = statistics.median(w for w, _, _ in s) * 1000
    cpu = max(0.0, statistics.median(c for _, c, _ in s) - overhead) * 1000
    rss = statistics.median(r for _, _, r in s) / 1024
    bad = sorted(c for c in codes[(side, n, i)] if c != 0)
    note = f" (exit {','.join(map(str, bad))})" if bad else ""
    if len(s) < runs:
        note += f" ({len(s)} run{'s' if len(s) > 1 else ''})"
    return f"{fmt_ms(wall)} / {fmt_ms(cpu)} / {rss:.1f} MiB{note}"

def fmt_n(n):
    exp = len(str(n)) - 1
    return f"10^{exp}" if n == 10 ** exp else str(n)

lines = ["<!-- bench/scale.sh: begin -->", "## Cost against history size\n",
         "Produced by `bash bench/scale.sh` (do not edit by hand). Each record spans the 90 days "
         "before the run in monthly files (rounds of `round_start`, `agent_spawn`, "
         "`agent_exit`, `round_end`, a `hook_failed` every 50th round; about 140 bytes a "
         "line). Cells: median wall time / median CPU time (user + system, the kernel's "
         f"accounting by wait4, less the {overhead * 1000:.1f} ms that `/usr/bin/time true` "
         "takes; `round` includes its git processes and the agent) / median "
         "peak RSS (`/usr/bin/time -f %M`, the largest process), "
         f"{runs} runs alternating the two systems (the reference at 10^6 events: "
         f"{peer_runs_big} run{'s' if peer_runs_big > 1 else ''}, each bounded at "
         f"{peer_timeout:.0f} s). `--since` asks for the last 7 days.\n"]
uname = platform.uname()
lines.append(f"Machine: {os.cpu_count()} CPUs (nproc), Linux {uname.release} {uname.machine}; "
             f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. Other "
             "builds may have shared the machine (wall time then waits for a CPU; CPU time "
             "does not): compare ratios, not absolute times.\n")
lines.append("| events in the record | what | ours | reference |")
lines.append("|---|---|---|---|")
for n in sizes:
    for i, (label, _) in enumerate(rows):
        lines.append(f"| {fmt_n(n)} | {label} | {cell('ours', n, i)} | {cell('peer', n, i)} |")
since_i = 2
counts = ", ".join(f"{fmt_n(n)}: {lines_out.get(('ours', n, since_i), 0)}" for n in sizes)
lines.append("")
lines.append(f"Lines printed by our `--since` query, by size: {counts} (the output grows with "
             "the record's rate; the reading before the first printed line does not).")
lines.append("<!-- bench/scale.sh: end -->")
section = "\n".join(lines) + "\n"

out = os.environ["OUT"]
text = open(out).read() if os.path.exists(out) else ""
begin, end = "<!-- bench/scale.sh: begin -->", "<!-- bench/scale.sh: end -->"
if begin in text and end in text:
    text = text[:text.index(begin)] + section + text[text.index(end) + len(end) + 1:]
else:
    text = text.rstrip("\n") + "\n\n" + section
with open(out, "w") as f:
    f.write(text)
print(section)
PY
