#!/usr/bin/env bash
# The live page's cost: latency of GET /api/state and GET /metrics (median and p95 over
# N requests each, curl's time_total on a kept-alive-free connection) and the idle RSS of
# `monitor --mode http` over a project with ROUNDS rounds of history (each with its usage,
# under a [budget]: the page's chart and the budget series), and the size of each answer.
# Goals: ≤ 10 ms per request, ≤ 10 MiB idle. Usage: bench/monitor.sh [N] [ROUNDS];
# AR_BIN=path measures that binary instead of building the release one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n="${1:-200}"
rounds="${2:-200}"
if [ -n "${AR_BIN:-}" ]; then
  bin="$(realpath "$AR_BIN")"
else
  cargo build --release --quiet -p agent-runner
  bin="$PWD/target/release/agent-runner"
fi
work="$(mktemp -d)"
mon=""
trap '[ -n "$mon" ] && kill "$mon" 2>/dev/null; rm -rf "$work" "$work.state"' EXIT
cd "$work"
git init -q . && git config user.email b@b && git config user.name bench
mkdir prompts && echo "Do nothing." > prompts/main.md
printf '/logs/\n' > .gitignore
cat > agent-runner.toml <<TOML
schema_version = 1
[agent]
command = ["true"]
[runtime]
log_dir = "./logs"
# The record where the history below is written (by default it lives out of the tree).
state_dir = "$work.state"
restart_delay_s = 1
[prompt]
file = "./prompts/main.md"

[budget]
total_usd = 1000.0
round_usd = 0.3
daily_tokens = 10000000

# Rounds must not wait on how full the bench machine's disk is.
[monitor.host_health.disk]
critical_pct = 100
TOML
git add -A && git commit -qm init
# History without waiting rounds out: the record of $rounds rounds, as serve writes it.
mkdir -p logs "$work.state"
python3 - "$rounds" > "$work.state/events-2026-11.jsonl" <<'PY'
import json, sys
for r in range(1, int(sys.argv[1]) + 1):
    t = f"2026-11-29T{10 + r // 3600 % 10:02d}:{r // 60 % 60:02d}:{r % 60:02d}"
    for kind, fields in [("round_start", {"round_num": r, "phase": None}),
                         ("agent_spawn", {"round_num": r, "timeout_s": 1800, "log_path": f"/x/R{r}.log"}),
                         ("agent_exit", {"round_num": r, "exit_code": 0, "signal": None, "duration_s": 1.5, "timed_out": False, "exit_cause": "exited"}),
                         ("agent_usage_recorded", {"round_num": r, "hook": "claude_error_detector", "input_tokens": 1000, "output_tokens": 100, "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": 0.4, "agent": "claude", "model": "claude-opus-4-5", "cached_tokens": 0, "usage_scope": "round", "from_session_totals": []}),
                         ("round_end", {"round_num": r, "exit_code": 0, "exit_cause": "exited", "dirty_outcome": None})]:
        print(json.dumps({"ts": t + ".000Z", "event": kind, **fields}))
PY
"$bin" monitor --mode http --port 0 > monitor.out 2>/dev/null &
mon=$!
until [ -s monitor.out ]; do sleep 0.05; done
url="$(head -1 monitor.out)"
sleep 1
measure() {
  for _ in $(seq 10); do curl -s -o /dev/null "$url$1"; done
  for _ in $(seq "$n"); do curl -s -o /dev/null -w '%{time_total}\n' "$url$1"; done |
    sort -n | awk -v path="$1" '{ v[NR] = $1 * 1000 } END {
      printf "GET /%-10s median %6.2f ms  p95 %6.2f ms  (n=%d)\n", path, v[int(NR / 2) + 1], v[int(NR * 0.95)], NR }'
}
measure api/state
measure metrics
for path in "" app.js style.css api/state metrics; do
  printf 'GET /%-10s %6d bytes\n' "$path" "$(curl -s "$url$path" | wc -c)"
done
sleep 2
awk '/VmRSS/ { printf "monitor --mode http idle RSS: %.1f MiB\n", $2 / 1024 }' "/proc/$mon/status"
