#!/usr/bin/env bash
# A long unattended run of a real agent CLI (docs/performance.md, "Long runs"): does round
# time and the CLI's own disk use stay flat? `agent-runner serve` on the config
# `init --preset CLI` writes (confined, `mode = "require"`, the default session bounds
# unless told otherwise; rounds 1 s apart, each round's change committed) against the
# fake model server of the tests (tests/agent-clis/fake_model.py, on 127.0.0.1 only: no
# provider is reached), which bills a fixed usage per model request (claude 120 input and
# 30 output tokens, codex 200 and 40). The pinned CLIs come from target/agent-clis
# (tests/setup.d/30-agent-clis.sh). After MINUTES, a graceful stop (SIGTERM: the running
# round finishes).
#
# Recorded per round (rounds.tsv in the kept work dir): its wall time (`round_start` to
# `round_end` in the record) and the agent's (`agent_exit.duration_s`), the model requests
# it made and the largest one's body (bytes, as the fake server received it), and, at its
# `round_end` (after the shadow home's prune), the disk use (`du`, bytes) of the shadow CLI
# home (`<state_dir>/agent-home/<cli>`), its transcripts' bytes and count (`*.jsonl`), the
# agent's TMPDIR and the log dir. Prints the first quarter's medians against the last
# quarter's, the largest disk use, the session renewals and prunes, and the usage the
# record holds against what the server billed (they must match).
#
# Usage: bench/soak_sessions.sh CLI MINUTES [unbounded]
#   CLI: claude or codex; `unbounded`: `[agent] session_max_rounds` set past any run
#   (1000000; the bound takes no 0), the control that shows the growth.
# Env: AR_BIN (default target/debug/agent-runner: `cargo build -p agent-runner --bins`
#   first; it runs target/debug/plugin-host beside it), KEEP=1 keeps the work dir (its
#   path is printed either way; rounds.tsv and summary.txt are copied to OUT when set).
# Not part of CI: it runs for MINUTES and its round times depend on the machine's load
# (printed at start and end), so compare its quarters within one run, not runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
cli="${1:?usage: bench/soak_sessions.sh CLI MINUTES [unbounded]}"
minutes="${2:?usage: bench/soak_sessions.sh CLI MINUTES [unbounded]}"
bound="${3:-default}"
case $cli in
  claude) billed_in=120 billed_out=30 ;;
  codex) billed_in=200 billed_out=40 ;;
  *) echo "soak_sessions.sh: CLI is claude or codex" >&2; exit 2 ;;
esac
bin="${AR_BIN:-$root/target/debug/agent-runner}"
[ -x "$bin" ] || { echo "soak_sessions.sh: $bin is missing (cargo build -p agent-runner --bins)" >&2; exit 2; }
clis="$root/tests/agent-clis/agent-clis.sh"
cli_bin="$(bash "$clis" bin "$cli")"
[ -x "$cli_bin" ] || { echo "soak_sessions.sh: $cli_bin is missing (tests/setup.sh)" >&2; exit 2; }

work="$(mktemp -d /tmp/soak-sessions-XXXXXX)"
project="$work/project" home="$work/home"
mkdir -p "$project/prompts" "$home"
server_pid="" serve_pid="" watch_pid=""
cleanup() {
  for p in $serve_pid $watch_pid $server_pid; do kill "$p" 2>/dev/null || true; done
  if [ "${KEEP:-0}" != 1 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# The project: a git repo with a prompt; the record in ./logs (state under $HOME).
cd "$project"
git init -q -b main . && git config user.email soak@bench.invalid && git config user.name soak
echo "Append a line to agent-was-here.txt." > prompts/main.md
printf '/logs/\n/.agent-runner-pause\n' > .gitignore
git add -A && git commit -qm init

# The fake model server, its requests logged (ts, bytes, turns).
requests="$work/requests.jsonl"
python3 "$root/tests/agent-clis/fake_model.py" --mode normal --host 127.0.0.1 --log "$requests" \
  > "$work/server.out" 2> "$work/server.err" &
server_pid=$!
for _ in $(seq 100); do grep -q '^port ' "$work/server.out" 2>/dev/null && break; sleep 0.1; done
port="$(sed -n 's/^port //p' "$work/server.out")"
[ -n "$port" ] || { echo "soak_sessions.sh: the fake model server did not start" >&2; exit 1; }

# init's config: confined as required, the fake server's port granted, rounds 1 s apart.
HOME="$home" "$bin" init --preset "$cli" --endpoint "http://127.0.0.1:$port" --force > /dev/null
sed -i -e 's|^log_dir = .*|log_dir = "logs"|' \
  -e 's|^restart_delay_s = 3$|restart_delay_s = 1|' \
  -e 's|^dirty_action = "stash"$|dirty_action = "auto_commit"|' \
  -e '0,/^mode = "prefer"$/s//mode = "require"/' agent-runner.toml
grep -q '^mode = "require"$' agent-runner.toml || { echo "soak_sessions.sh: no mode to require in init's config" >&2; exit 1; }
if [ "$bound" = unbounded ]; then
  sed -i '0,/^\[agent\]$/s//[agent]\nsession_max_rounds = 1000000/' agent-runner.toml
fi
git add -A && git commit -qm config

# The CLI's environment (its config under $HOME, pointing at the fake server).
env_args=()
while IFS= read -r line; do env_args+=("$line"); done < <(bash "$clis" env "$cli" "$home" "$port")
load_start="$(uptime)"
started="$(date +%s)"
env "${env_args[@]}" PATH="$(dirname "$cli_bin"):$PATH" \
  "$bin" --config "$project/agent-runner.toml" serve > "$work/serve.out" 2> "$work/serve.err" &
serve_pid=$!

# The state dir appears with the record; then, at each round_end, the disk use.
state=""
for _ in $(seq 600); do
  state="$(ls -d "$home"/.local/state/agent-runner/projects/project-* 2>/dev/null | head -1 || true)"
  [ -n "$state" ] && ls "$state"/events-*.jsonl > /dev/null 2>&1 && break
  sleep 0.1
done
[ -n "$state" ] || { echo "soak_sessions.sh: serve wrote no record; see $work/serve.err" >&2; KEEP=1; exit 1; }
events="$(ls "$state"/events-*.jsonl | head -1)"
shadow="$state/agent-home/$cli"
disk="$work/disk.tsv"
du_b() { local b; b="$(du -s -B1 "$1" 2>/dev/null | cut -f1)"; echo "${b:-0}"; }
(
  set +e +o pipefail
  tail -n +1 -F "$events" 2>/dev/null | while IFS= read -r line; do
    case $line in
      *'"event":"round_end"'*)
        n="$(printf '%s' "$line" | sed -n 's/.*"round_num":\([0-9]*\).*/\1/p')"
        tx="$(find "$shadow" -name '*.jsonl' -type f -printf '%s\n' 2>/dev/null | awk '{s+=$1; c++} END {print s+0 "\t" c+0}')"
        printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$(du_b "$shadow")" "$tx" "$(du_b "$state/agent-tmp")" "$(du_b "$project/logs")" >> "$disk"
        ;;
    esac
  done
) &
watch_pid=$!

deadline=$((started + minutes * 60))
while [ "$(date +%s)" -lt "$deadline" ] && kill -0 "$serve_pid" 2>/dev/null; do sleep 2; done
kill -TERM "$serve_pid" 2>/dev/null || echo "serve stopped by itself before $minutes minutes: see $work/serve.err"
wait "$serve_pid" || echo "serve exited $?"
serve_pid=""
sleep 1
pkill -P "$watch_pid" 2>/dev/null || true
kill "$watch_pid" 2>/dev/null || true
watch_pid=""
load_end="$(uptime)"

python3 - "$events" "$requests" "$disk" "$work" "$billed_in" "$billed_out" <<'PY' | tee "$work/summary.txt"
import json, statistics, sys
from datetime import datetime
events_path, requests_path, disk_path, work, billed_in, billed_out = sys.argv[1:]
billed_in, billed_out = int(billed_in), int(billed_out)
ts = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
rounds, renewals, pruned, usage = {}, [], [], []
for line in open(events_path):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    n, kind = e.get("round_num"), e.get("event")
    if kind == "round_start":
        rounds[n] = {"start": ts(e["ts"])}
    elif kind == "agent_exit" and n in rounds:
        rounds[n]["agent_s"] = e["duration_s"]
    elif kind == "round_end" and n in rounds:
        rounds[n]["end"] = ts(e["ts"])
    elif kind == "session_renewed":
        renewals.append(n)
    elif kind == "agent_home_pruned":
        pruned.append(e)
    elif kind == "agent_usage_recorded":
        usage.append(e)
reqs = [json.loads(l) for l in open(requests_path)]
model = [r for r in reqs if r.get("turns") is not None]
disk = {}
for l in open(disk_path):
    f = l.rstrip("\n").split("\t")
    if f[0]:
        disk[int(f[0])] = [int(x) for x in f[1:]]
rows = []
for n in sorted(rounds):
    r = rounds[n]
    if "end" not in r:
        continue
    mine = [q for q in model if r["start"] <= q["ts"] <= r["end"]]
    d = disk.get(n, [0, 0, 0, 0, 0])
    rows.append([n, round(r["end"] - r["start"], 3), r.get("agent_s", 0), len(mine),
                 max((q["bytes"] for q in mine), default=0), max((q["turns"] for q in mine), default=0)] + d)
with open(f"{work}/rounds.tsv", "w") as out:
    out.write("round\twall_s\tagent_s\trequests\tmax_request_bytes\tmax_turns\tshadow_bytes\ttranscript_bytes\ttranscripts\tagent_tmp_bytes\tlog_dir_bytes\n")
    for row in rows:
        out.write("\t".join(map(str, row)) + "\n")
q = max(1, len(rows) // 4)
first, last = rows[:q], rows[-q:]
med = lambda rs, i: statistics.median(r[i] for r in rs)
print(f"rounds: {len(rows)} ({len(model)} model requests); quarters of {q} rounds")
for name, i, fmt in [("round wall s", 1, "{:.2f}"), ("agent s", 2, "{:.2f}"),
                     ("largest request bytes", 4, "{:.0f}"), ("largest request entries", 5, "{:.0f}"),
                     ("shadow home bytes", 6, "{:.0f}"), ("transcript bytes", 7, "{:.0f}"),
                     ("log dir bytes", 10, "{:.0f}")]:
    print(f"  {name}: first quarter median {fmt.format(med(first, i))}, last quarter {fmt.format(med(last, i))}")
print(f"max shadow home bytes {max(r[6] for r in rows)} (round {max(rows, key=lambda r: r[6])[0]}); "
      f"max transcripts {max(r[8] for r in rows)}; max agent TMPDIR bytes {max(r[9] for r in rows)}; "
      f"largest request {max(r[4] for r in rows)} bytes, {max(r[5] for r in rows)} entries")
print(f"session renewals: {len(renewals)} (rounds {renewals[:3]}…); prunes: {len(pruned)}, "
      f"{sum(p['removed'] for p in pruned)} entries, {sum(p['bytes'] for p in pruned)} bytes; "
      f"refused: {sum(1 for p in pruned if p.get('refused'))}")
got_in = sum(u.get("input_tokens") or 0 for u in usage)
got_out = sum(u.get("output_tokens") or 0 for u in usage)
cost = sum(u.get("cost_usd") or 0 for u in usage)
ok = got_in == len(model) * billed_in and got_out == len(model) * billed_out
print(f"usage recorded: {got_in} input, {got_out} output tokens, ${cost:.4f} over {len(usage)} rounds; "
      f"billed: {len(model) * billed_in} input, {len(model) * billed_out} output: {'match' if ok else 'MISMATCH'}")
PY
echo "load at start: $load_start" | tee -a "$work/summary.txt"
echo "load at end:   $load_end" | tee -a "$work/summary.txt"
echo "wall: $(( $(date +%s) - started )) s; work dir: $work"
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$work/rounds.tsv" "$work/summary.txt" "$OUT/"; fi
