#!/usr/bin/env bash
# Supervisor overhead of one round: `agent-runner round` (whole process: boot, lock, spawn
# gate, agent, dirty check, events) with a trivial agent (`true`) in a fresh git repo,
# compared with running `true` alone. The reference system measures 409 ms for the same
# (shared/peer-facts.md). Uses hyperfine when installed, else a `date +%s%N` loop.
# Usage: bench/round_overhead.sh [RUNS]   (default 50)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-50}"
cargo build --release --quiet -p agent-runner
bin="$PWD/target/release/agent-runner"
work="$(mktemp -d)"
# The record of a ./logs project goes to $XDG_STATE_HOME (docs/operations.md, "State dir"):
# keep it in a scratch dir of its own, not in the user's home.
XDG_STATE_HOME="$(mktemp -d)"
export XDG_STATE_HOME
trap 'rm -rf "$work" "$XDG_STATE_HOME"' EXIT
cd "$work"
git init -q . && git config user.email b@b && git config user.name bench
mkdir prompts && echo "Do nothing." > prompts/main.md
printf '/logs/\n' > .gitignore
cat > agent-runner.toml <<TOML
schema_version = 1
[agent]
command = ["true"]
prompt_arg_template = ["{prompt}"]
[runtime]
log_dir = "./logs"
[prompt]
file = "./prompts/main.md"
[vcs]
dirty_action = "ignore"
TOML
git add -A && git commit -qm init
"$bin" round >/dev/null 2>&1   # warm the page cache, create the log dir

if command -v hyperfine >/dev/null; then
  hyperfine --warmup 3 --runs "$runs" -N --export-json "$work/h.json" "$bin round" "true"
  python3 -c "import json,sys; [print(f\"{r['command']}: median {r['median']*1000:.1f} ms\") for r in json.load(open(sys.argv[1]))['results']]" "$work/h.json"
else
  for cmd in "$bin round" "true"; do
    times=()
    for _ in $(seq "$runs"); do
      t0=$(date +%s%N); $cmd >/dev/null 2>&1; t1=$(date +%s%N)
      times+=($(( (t1 - t0) / 1000 )))
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "$cmd: median $((median / 1000)).$(( (median % 1000) / 100 )) ms over $runs runs"
  done
fi
