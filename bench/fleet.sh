#!/usr/bin/env bash
# Fleet cost: N supervisors side by side on this machine (N = 1, 10, 50 by default), each
# `serve` in a project of its own with a trivial agent (`true`) and no hosts, measured
# idle (between rounds: restart_delay_s = 1800 after the first round) and running rounds
# back to back (restart_delay_s = 1). Per supervisor: RSS (serve's own, from
# /proc/PID/status VmRSS, median and max), PSS (/proc/PID/smaps_rollup: the executable's
# pages shared among the N divided between them; its total is the fleet's real memory
# cost) and CPU over a window (serve's own utime+stime,
# and with its reaped children: the agent and git), as % of one core; and the rounds run.
#   bench/fleet.sh [N...]          (default: 1 10 50)
# Env: BIN (default target/release/agent-runner, built when missing), WINDOW_S (20).
# Prints one table row per N and state (docs/performance.md "Fleet").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
counts=("$@")
[ "${#counts[@]}" -gt 0 ] || counts=(1 10 50)
bin="${BIN:-$PWD/target/release/agent-runner}"
if [ -z "${BIN:-}" ] && [ ! -x "$bin" ]; then
  cargo build --release --quiet -p agent-runner
fi
window="${WINDOW_S:-20}"
root="$(mktemp -d)"
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
  done
  pids=()
}
trap 'stop_all; rm -rf "$root"' EXIT

# make_project DIR DELAY: a git repo whose agent is `true`, the record out of the tree.
make_project() {
  local dir="$1" delay="$2"
  mkdir -p "$dir/tree/prompts" "$dir/state"
  (
    cd "$dir/tree"
    git init -q . && git config user.email b@b && git config user.name bench
    echo "Do nothing." > prompts/main.md
    git add -A && git commit -qm init
    cat > agent-runner.toml <<TOML
schema_version = 1
[agent]
command = ["true"]
[runtime]
log_dir = "../state/logs"
state_dir = "../state/state"
restart_delay_s = $delay
round_budget_s = 60
[prompt]
file = "prompts/main.md"
[monitor.host_health.disk]
warning_pct = 100
critical_pct = 100
TOML
  )
}

rounds_of() { cat "$1"/state/state/events-*.jsonl 2>/dev/null | grep -c '"event":"round_end"' || true; }

# measure STATE N: starts N serves, waits for every first round, samples for WINDOW_S.
measure() {
  local state="$1" n="$2" delay
  [ "$state" = idle ] && delay=1800 || delay=1
  rm -rf "$root/p"
  for i in $(seq 1 "$n"); do make_project "$root/p/$i" "$delay"; done
  for i in $(seq 1 "$n"); do
    (cd "$root/p/$i/tree" && exec "$bin" serve >/dev/null 2>"$root/p/$i/serve.err") &
    pids+=("$!")
  done
  for i in $(seq 1 "$n"); do
    local deadline=$((SECONDS + 120))
    until [ "$(rounds_of "$root/p/$i")" -ge 1 ]; do
      [ "$SECONDS" -lt "$deadline" ] || { echo "project $i ran no round in 120 s:" >&2; cat "$root/p/$i/serve.err" >&2; exit 1; }
      sleep 0.2
    done
  done
  sleep 2
  local before after r0=0 r1=0 t0 t1 t2 t3
  t0="$(date +%s.%N)"
  for i in $(seq 1 "$n"); do r0=$((r0 + $(rounds_of "$root/p/$i"))); done
  t1="$(date +%s.%N)"
  before="$(for p in "${pids[@]}"; do cut -d' ' -f14-17 "/proc/$p/stat"; done)"
  sleep "$window"
  after="$(for p in "${pids[@]}"; do cut -d' ' -f14-17 "/proc/$p/stat"; done)"
  t2="$(date +%s.%N)"
  for i in $(seq 1 "$n"); do r1=$((r1 + $(rounds_of "$root/p/$i"))); done
  t3="$(date +%s.%N)"
  local rss pss
  rss="$(for p in "${pids[@]}"; do awk '/^VmRSS:/ {print $2}' "/proc/$p/status"; done)"
  pss="$(for p in "${pids[@]}"; do awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup"; done)"
  python3 - "$state" "$n" "$(awk "BEGIN {print $t2 - $t1}")" "$((r1 - r0))" "$(getconf CLK_TCK)" "$(awk "BEGIN {print ($t2 + $t3 - $t0 - $t1) / 2}")" <<PY
import statistics, sys
state, n, window, rounds, hz, round_window = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
before = [list(map(int, l.split())) for l in """$before""".split("\n") if l.strip()]
after = [list(map(int, l.split())) for l in """$after""".split("\n") if l.strip()]
rss = [int(l) / 1024 for l in """$rss""".split("\n") if l.strip()]
pss = [int(l) / 1024 for l in """$pss""".split("\n") if l.strip()]
own = [((a[0] + a[1]) - (b[0] + b[1])) / hz / window * 100 for a, b in zip(after, before)]
total = [(sum(a) - sum(b)) / hz / window * 100 for a, b in zip(after, before)]
print(f"| {n} | {state} | {statistics.median(rss):.1f} | {max(rss):.1f} | {statistics.median(pss):.1f} | {sum(pss):.0f} | "
      f"{statistics.mean(own):.2f} | {statistics.mean(total):.2f} | {rounds / n / round_window * 60:.1f} |")
PY
  stop_all
}

echo "binary: $bin; window ${window} s; $(nproc) cores"
echo "| N | state | RSS median MiB | RSS max MiB | PSS median MiB | PSS total MiB | CPU serve % | CPU with agent and git % | rounds/min each |"
echo "|---|---|---|---|---|---|---|---|---|"
for n in "${counts[@]}"; do
  measure idle "$n"
  measure running "$n"
done
