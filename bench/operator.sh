#!/usr/bin/env bash
# Wall time and peak RSS of the read-only operator verbs, whole process, median of RUNS
# runs (default 15): `peek --json` and `doctor --json` on a project that has run three
# rounds with one pinned, confined spawn-hook host. Needs /usr/bin/time (Debian: `time`).
#
# Optional: PEER_BIN=/path/to/peer-venv/bin/agent-runner also measures the reference
# system (cli-agent-runner 0.3.2) on its own project with the same agent.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=${RUNS:-15}
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
cargo build --release --quiet -p agent-runner -p example-spawn-pause-file
AR=$PWD/target/release/agent-runner
HOST=$PWD/target/release/spawn-pause-file
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The record of a ./logs project goes to $XDG_STATE_HOME (docs/operations.md, "State dir"):
# keep it in the scratch dir, not in the user's home.
export XDG_STATE_HOME="$WORK/.xdg-state"

new_project() { # dir
    mkdir -p "$1/prompts"
    cd "$1"
    git init -q -b main .
    git config user.email bench@example.invalid
    git config user.name bench
    printf 'Do the work.\n' > prompts/main.md
    printf '/logs/\n' > .gitignore
}

# median of column $1 over lines of "<wall ms> <rss KiB>"
median() { sort -g -k"$1" | awk -v c="$1" '{v[NR]=$c} END {print v[int((NR+1)/2)]}'; }

measure() { # label, command...
    local label=$1; shift
    local out="$WORK/$label.times" rss="$WORK/rss"
    "$@" > /dev/null || { echo "$label: command failed" >&2; exit 1; }
    : > "$out"
    for _ in $(seq "$RUNS"); do
        local start=$EPOCHREALTIME
        /usr/bin/time -f "%M" -o "$rss" "$@" > /dev/null 2>&1 || true
        local end=$EPOCHREALTIME
        echo "$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", (b - a) * 1000}') $(cat "$rss")" >> "$out"
    done
    printf '%-22s wall %6.1f ms   peak RSS %6.1f MiB   (median of %s)\n' "$label" \
        "$(median 1 < "$out" | awk '{print $1}')" \
        "$(median 2 < "$out" | awk '{print $1/1024}')" "$RUNS"
}

new_project "$WORK/ours"
cat > agent-runner.toml <<TOML
schema_version = 1
[agent]
command = ["/bin/sh", "-c", "cat > /dev/null; date > work.txt; git add -A; git commit -qm work"]
prompt_arg_template = []
prompt_delivery = "stdin"
[runtime]
work_dir = "."
log_dir = "./logs"
restart_delay_s = 1
[prompt]
file = "./prompts/main.md"

# Rounds must not wait on how full the bench machine's disk is.
[monitor.host_health.disk]
critical_pct = 100
[plugins]
sandbox = "require"
spawn_override_allow = ["pause_file"]
[plugins.pin]
pause = "sha256:$(sha256sum "$HOST" | cut -d' ' -f1)"
[plugins.hosts.pause]
command = ["$HOST"]
provides = ["spawn_hook"]
TOML
git add -A && git commit -qm setup
"$AR" serve --max-rounds 3 > /dev/null 2>&1
measure "peek --json" "$AR" peek --json
measure "doctor --json" "$AR" doctor --json
measure "--version" "$AR" --version

if [ -n "${PEER_BIN:-}" ]; then
    new_project "$WORK/peer"
    "$PEER_BIN" init --preset claude > /dev/null 2>&1
    python3 - <<'PY'
import re
p = "agent-runner.toml"
t = open(p).read()
t = re.sub(r'command = \[.*?\]\n', 'command = ["/bin/sh", "-c", "cat > /dev/null; date > work.txt; git add -A; git commit -qm work"]\n', t, count=1, flags=re.S)
t = re.sub(r'log_dir = ".*"', 'log_dir = "./logs"', t)
t = re.sub(r'prompt_arg_template = \[.*?\]', 'prompt_arg_template = []', t)
open(p, "w").write(t)
PY
    git add -A && git commit -qm setup
    "$PEER_BIN" serve --max-rounds 3 > /dev/null 2>&1 || true
    measure "peer peek --json" "$PEER_BIN" peek --json
    measure "peer doctor --json" "$PEER_BIN" doctor --json
fi
