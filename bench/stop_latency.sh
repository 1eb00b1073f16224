#!/usr/bin/env bash
# Stop latency: `agent-runner stop` while `serve` waits out a 60 s defer from the example
# pause-file spawn hook; prints the time from issuing `stop` to the serve process's exit
# (the goal: ≤ 1 s; the reference system takes up to 30 s). Usage: bench/stop_latency.sh [RUNS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-5}"
cargo build --release --quiet -p agent-runner -p example-spawn-pause-file
bin="$PWD/target/release/agent-runner"
host="$PWD/target/release/spawn-pause-file"
work="$(mktemp -d)"
state="$(mktemp -d)" # the record, out of the tree (docs/operations.md, "State dir")
trap 'rm -rf "$work" "$state"' EXIT
cd "$work"
git init -q . && git config user.email b@b && git config user.name bench
mkdir prompts && echo "Do nothing." > prompts/main.md
printf '/logs/\n/.pause\n' > .gitignore
cat > agent-runner.toml <<TOML
schema_version = 1
[agent]
command = ["true"]
[runtime]
log_dir = "./logs"
state_dir = "$state"
[prompt]
file = "./prompts/main.md"

# Rounds must not wait on how full the bench machine's disk is.
[monitor.host_health.disk]
critical_pct = 100
[plugins]
spawn_override_allow = ["pause_file"]
[plugins.hosts.pause]
command = ["$host"]
provides = ["spawn_hook"]
config = { file = ".pause", defer_s = 60, reason = "bench" }
TOML
git add -A && git commit -qm init
touch .pause
for i in $(seq "$runs"); do
  rm -rf logs "$state"
  "$bin" serve >/dev/null 2>&1 &
  pid=$!
  until grep -qs round_deferred "$state"/events-*.jsonl; do sleep 0.05; done
  t0=$(date +%s%N)
  "$bin" stop >/dev/null
  wait "$pid" || true
  t1=$(date +%s%N)
  echo "run $i: stop → exit $(( (t1 - t0) / 1000000 )) ms"
done
