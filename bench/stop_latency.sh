#!/usr/bin/env bash
# Stop latency: `agent-runner stop` while `serve` waits; prints the time from issuing `stop`
# to the serve process's exit (the goal: ≤ 1 s; the reference system takes up to 30 s).
#   bench/stop_latency.sh [RUNS] [defer|backoff|pause]
# defer (default): a 60 s defer from the example pause-file spawn hook; backoff: a usage
# limit whose reset is 10 minutes away (a fake `claude` replaying its failure, diagnosed by
# the confined built-in detector); pause: a [schedule] that is closed all day.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-5}"
mode="${2:-defer}"
fixtures="$PWD/supervisor/tests/fixtures/agent-output"
fake="$PWD/tests/fixtures/fake-cli-agent.sh"
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
case "$mode" in
  defer)
    wait_for=round_deferred
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
    touch .pause ;;
  backoff)
    wait_for=transient_error_detected
    mkdir -p "$work/bin" && cp "$fake" "$work/bin/claude"
    cat > agent-runner.toml <<TOML
schema_version = 1
[agent]
command = ["$work/bin/claude"]
[agent.env]
AR_FIXTURE = "$fixtures/claude/usage_limit-epoch.jsonl"
AR_STATE = "$work/reset-state"
AR_RESET_IN = "600"
[runtime]
log_dir = "./logs"
state_dir = "$state"
[prompt]
file = "./prompts/main.md"

# Rounds must not wait on how full the bench machine's disk is.
[monitor.host_health.disk]
critical_pct = 100
TOML
    ;;
  pause)
    wait_for=schedule_paused
    cat > agent-runner.toml <<TOML
schema_version = 1
[agent]
command = ["true"]
[runtime]
log_dir = "./logs"
state_dir = "$state"
[prompt]
file = "./prompts/main.md"
[schedule]
pause_windows = ["00:00-24:00"]
TOML
    ;;
  *) echo "mode: defer, backoff or pause" >&2; exit 2 ;;
esac
git add agent-runner.toml prompts .gitignore && git commit -qm init
for i in $(seq "$runs"); do
  rm -rf logs "$state" "$work/reset-state"
  "$bin" serve >/dev/null 2>&1 &
  pid=$!
  until grep -qs "$wait_for" "$state"/events-*.jsonl; do sleep 0.05; done
  sleep 0.3
  t0=$(date +%s%N)
  "$bin" stop >/dev/null
  wait "$pid" || true
  t1=$(date +%s%N)
  echo "$mode run $i: stop → exit $(( (t1 - t0) / 1000000 )) ms"
done
