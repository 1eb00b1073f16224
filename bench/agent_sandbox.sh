#!/usr/bin/env bash
# What the agent's confinement costs per round: `agent-runner round` with a trivial agent
# (`true`) in a fresh git repo, `[agent.sandbox] mode = "off"` against `"require"`
# (Landlock ruleset built from the policy, seccomp program, PID namespace and init, caps
# dropped: docs/security.md "The agent's confinement"), and `"require"` with
# `host_network = true` (no network namespace, no forwarder, no proxy thread: docs/security.md
# "The agent's network"). Medians of a `date +%s%N` loop; the differences are the
# confinement's and the network namespace's share of a round.
# Usage: bench/agent_sandbox.sh [RUNS]   (default 30; AR_BIN=path to use a built binary)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-30}"
if [ -z "${AR_BIN:-}" ]; then
  cargo build --release --quiet -p agent-runner
  AR_BIN="$PWD/target/release/agent-runner"
fi
work="$(mktemp -d)"
XDG_STATE_HOME="$(mktemp -d)"
export XDG_STATE_HOME
trap 'rm -rf "$work" "$XDG_STATE_HOME"' EXIT
cd "$work"
git init -q . && git config user.email b@b && git config user.name bench
mkdir prompts && echo "Do nothing." > prompts/main.md
printf '/logs/\n/*.toml\n' > .gitignore
for mode in off require host; do
  word=$mode; extra=""
  [ "$mode" = host ] && word=require && extra="host_network = true"
  cat > "$mode.toml" <<TOML
schema_version = 1
[agent]
command = ["true"]
prompt_arg_template = ["{prompt}"]
[agent.sandbox]
mode = "$word"
$extra
[runtime]
log_dir = "./logs"
[prompt]
file = "./prompts/main.md"
[monitor.host_health.disk]
critical_pct = 100
[vcs]
dirty_action = "ignore"
TOML
done
git add -A && git commit -qm init
"$AR_BIN" --config off.toml round >/dev/null 2>&1
"$AR_BIN" --config require.toml round >/dev/null 2>&1 || {
  echo "require refused here: $("$AR_BIN" --config require.toml round 2>&1 | tail -1)" >&2
  exit 1
}

# The three configs in turn, run after run, so a neighbour's load falls on each alike.
declare -A times
for _ in $(seq "$runs"); do
  for mode in off require host; do
    t0=$(date +%s%N); "$AR_BIN" --config "$mode.toml" round >/dev/null 2>&1; t1=$(date +%s%N)
    times[$mode]+="$(( (t1 - t0) / 1000 )) "
  done
done
median_ms() {
  printf '%s\n' ${times[$1]} | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

off=$(median_ms off)
require=$(median_ms require)
host=$(median_ms host)
echo "round, agent unconfined (mode = off):     ${off} ms (median of $runs)"
echo "round, agent confined (mode = require):   ${require} ms"
echo "round, require with host_network = true:  ${host} ms"
awk -v a="$off" -v b="$require" 'BEGIN {printf "confinement per round:                    %.1f ms\n", b - a}'
awk -v a="$host" -v b="$require" 'BEGIN {printf "network namespace per round:              %.1f ms\n", b - a}'
