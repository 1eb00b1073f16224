#!/usr/bin/env bash
# What the agent's confinement costs per round: `agent-runner round` with a trivial agent
# (`true`) in a fresh git repo, `[agent.sandbox] mode = "off"` against `"require"`
# (Landlock ruleset built from the policy, seccomp program, PID namespace and init, caps
# dropped: docs/security.md "The agent's confinement"). Medians of a `date +%s%N` loop;
# the difference is the confinement's share of a round.
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
printf '/logs/\n/off.toml\n/require.toml\n' > .gitignore
for mode in off require; do
  cat > "$mode.toml" <<TOML
schema_version = 1
[agent]
command = ["true"]
prompt_arg_template = ["{prompt}"]
[agent.sandbox]
mode = "$mode"
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

median_ms() {
  local times=()
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

off=$(median_ms "$AR_BIN" --config off.toml round)
require=$(median_ms "$AR_BIN" --config require.toml round)
echo "round, agent unconfined (mode = off):     ${off} ms (median of $runs)"
echo "round, agent confined (mode = require):   ${require} ms"
awk -v a="$off" -v b="$require" 'BEGIN {printf "confinement per round:                    %.1f ms\n", b - a}'
