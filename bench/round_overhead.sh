#!/usr/bin/env bash
# Supervisor overhead of one round: `agent-runner round` (whole process: boot, lock, spawn
# gate, agent, dirty check, events) with a trivial agent (`true`) in a fresh git repo,
# compared with running `true` alone: the difference is the supervisor's own share (the
# target is at most 10 ms), of which the four git processes it runs (the work tree's
# discovery and its config's listing at boot, the status before and after the agent;
# counted through a `git` on PATH that logs its calls) are shown apart. The reference
# system measures 409 ms for the same round. Medians of a `date +%s%N` loop.
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

# Rounds must not wait on how full the bench machine's disk is.
[monitor.host_health.disk]
critical_pct = 100
[vcs]
dirty_action = "ignore"
TOML
git add -A && git commit -qm init
"$bin" round >/dev/null 2>&1   # warm the page cache, create the log dir

# median_us CMD...: the median wall time of RUNS runs of CMD, in microseconds.
median_us() {
  local times=()
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
ms() { awk -v us="$1" 'BEGIN {printf "%.1f ms", us / 1000}'; }
round_us=$(median_us "$bin" round)
agent_us=$(median_us true)
git_us=$(median_us sh -c 'g="git -c core.hooksPath=/dev/null"; $g rev-parse --is-inside-work-tree --show-prefix --show-toplevel --absolute-git-dir --git-common-dir; $g config --list --show-scope --show-origin -z; s="--no-optional-locks status --porcelain=v2 --branch -z --untracked-files=all --ignore-submodules=dirty -- ."; $g $s; $g $s')
# The git processes of one round, counted by a `git` that logs each call.
wrap="$(mktemp -d)"
printf '#!/bin/sh\necho "$*" >> "%s/calls"\nexec %s "$@"\n' "$wrap" "$(command -v git)" > "$wrap/git"
chmod +x "$wrap/git"
PATH="$wrap:$PATH" "$bin" round >/dev/null 2>&1
git_processes=$(wc -l < "$wrap/calls")
rm -rf "$wrap"
sh_us=$(median_us sh -c ':')
echo "agent-runner round: median $(ms "$round_us") over $runs runs"
echo "the agent alone (true): median $(ms "$agent_us")"
echo "supervisor overhead (round - agent): $(ms $((round_us - agent_us)))"
echo "git processes of one round (boot included): $git_processes"
echo "of which its four git processes (rev-parse and config --list at boot, status before and after the agent; measured in sh, minus sh): $(ms $((git_us - sh_us)))"
echo "the supervisor's own share (overhead - git): $(ms $((round_us - agent_us - git_us + sh_us)))"
