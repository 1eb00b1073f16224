#!/usr/bin/env bash
# Seconds of the supervisor's git work in one round on a large tree (issue 27 item 6): a
# repository of FILES committed files, one `agent-runner round` per case, the agent's own
# time (measured by the agent itself) taken off the round's wall time. Cases:
#   stash_new        the agent writes FILES new files, [vcs] dirty_action = "stash"
#   stash_new_op     the same with one file of the operator's dirty before the round
#                    (the stash must leave it: exclusion pathspecs)
#   commit_new       the agent writes FILES new files, dirty_action = "auto_commit"
#   commit_edit_one  the agent edits one tracked file, dirty_action = "auto_commit"
# each on a plain repository and on one with the settings a big repository often has
# (feature.manyFiles: index v4 and the untracked cache) plus a
# core.fsmonitor program the agent wrote in .git/config (it must never run: the
# supervisor's git turns fsmonitor off; the line says so if it ran).
# The outcome column is the round's dirty event (orphan_stashed, dirty_auto_committed, or
# the failure event and git's message).
# Paths are ~40 bytes (generated/module_12/component_345.ts), as in a real project: 60,000 of
# them are more than one argument list holds (2 MB), so a build that passes paths as
# arguments fails there with "Argument list too long". [vcs] git_timeout_s is the default.
# Usage: bench/large_tree.sh [BIN] [FILES]
#   BIN: the agent-runner binary to measure (default: a release build of this tree), so
#   two builds can be compared on the same machine. FILES: default 60000.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin="${1:-}"
files="${2:-60000}"
if [[ -z "$bin" ]]; then
  cargo build --release --quiet -p agent-runner
  bin="$PWD/target/release/agent-runner"
fi
scratch="$(mktemp -d)"
XDG_STATE_HOME="$scratch/state"
export XDG_STATE_HOME
trap 'rm -rf "$scratch"' EXIT
work="$scratch/work"
mkdir -p "$work"

# The agent: writes $files new files, or edits one tracked file; records its own time.
cat > "$scratch/agent.sh" <<'SH'
#!/usr/bin/env bash
t0=$(date +%s%N)
case "$BENCH_CASE" in
  *_new*)
    for ((d = 0; d < BENCH_FILES / 1000 + 1; d++)); do
      mkdir -p "generated/module_$d"
      for ((f = 0; f < 1000 && d * 1000 + f < BENCH_FILES; f++)); do
        echo "agent $d $f" > "generated/module_$d/component_$f.ts"
      done
    done ;;
  *) echo "edited" >> "src/module_0/component_0.ts" ;;
esac
t1=$(date +%s%N)
echo $((t1 - t0)) > "$BENCH_AGENT_NS"
SH
chmod +x "$scratch/agent.sh"

cd "$work"
git init -q . && git config user.email b@b && git config user.name bench
mkdir prompts && echo "Write files." > prompts/main.md
printf '/logs/\n' > .gitignore
for ((d = 0; d < files / 1000 + 1; d++)); do
  mkdir -p "src/module_$d"
  for ((f = 0; f < 1000 && d * 1000 + f < files; f++)); do
    echo "base $d $f" > "src/module_$d/component_$f.ts"
  done
done
git add -A && git commit -qm base
git tag start

config() {
  cat > agent-runner.toml <<TOML
schema_version = 1
[agent]
command = ["$scratch/agent.sh"]
prompt_arg_template = ["{prompt}"]
[agent.env]
BENCH_CASE = "$1"
BENCH_FILES = "$files"
BENCH_AGENT_NS = "$scratch/agent_ns"
[runtime]
log_dir = "./logs"
[prompt]
file = "./prompts/main.md"
[monitor.host_health.disk]
critical_pct = 100
[vcs]
dirty_action = "$2"
TOML
}

# The fsmonitor program the agent "wrote": it leaves a mark if anything runs it.
cat > "$scratch/fsmonitor.sh" <<SH
#!/bin/sh
touch "$scratch/fsmonitor-ran"
exit 1
SH
chmod +x "$scratch/fsmonitor.sh"

tune() {
  git config feature.manyFiles true
  git config core.untrackedCache true
  git update-index --untracked-cache >/dev/null
  git status -uall >/dev/null  # fills the untracked cache
  git config core.fsmonitor "$scratch/fsmonitor.sh"
}

# The bench's own git never runs the fsmonitor program.
git() { command git -c core.fsmonitor=false "$@"; }

reset_tree() {
  rm -f "$scratch/fsmonitor-ran" .git/index.lock  # a git killed by git_timeout_s leaves its lock
  git stash clear
  git reset -q --hard start
  git clean -fdq
  rm -rf logs "$XDG_STATE_HOME"
}

printf '%-9s %-16s %9s %9s %9s  %s\n' repo case round_s agent_s git_s outcome
for repo in plain tuned; do
  if [[ $repo == tuned ]]; then
    tune
  fi
  for case in stash_new stash_new_op commit_new commit_edit_one; do
    reset_tree
    action=stash
    [[ $case == commit_* ]] && action=auto_commit
    config "$case" "$action"
    git add agent-runner.toml && git commit -qm config
    [[ $case == stash_new_op ]] && echo "operator's notes" > notes.txt
    t0=$(date +%s%N)
    "$bin" round >"$scratch/round.out" 2>&1 || true
    t1=$(date +%s%N)
    agent_ns=$(cat "$scratch/agent_ns" 2>/dev/null || echo 0)
    outcome=$(find "$XDG_STATE_HOME" logs -name "events-*.jsonl" -exec cat {} + 2>/dev/null |
      grep -oE '"event":"(orphan_stashed|orphan_stash_failed|dirty_auto_committed|dirty_commit_failed|dirty_check_failed)"([^}]*"error":"[^"]{0,90})?' |
      sed -E 's/"event":"([a-z_]+)"/\1/; s/,.*"error":"/: /' | sort -u | tr '\n' ' ' || true)
    [[ -e $scratch/fsmonitor-ran ]] && outcome="$outcome (fsmonitor RAN)"
    if [[ $case == stash_new_op && -e notes.txt ]]; then outcome="$outcome (operator file kept)"; fi
    awk -v r="$((t1 - t0))" -v a="$agent_ns" -v repo="$repo" -v c="$case" -v o="${outcome:-no dirty event}" \
      'BEGIN {printf "%-9s %-16s %9.2f %9.2f %9.2f  %s\n", repo, c, r / 1e9, a / 1e9, (r - a) / 1e9, o}'
    git reset -q --soft HEAD~1
  done
done
