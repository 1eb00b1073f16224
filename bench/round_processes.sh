#!/usr/bin/env bash
# What one trivial `agent-runner round` starts and waits on, counted under `strace -f`: the
# programs executed (the supervisor, git, the plugin-host launcher, the agent and what it
# runs), the git processes among them (each with what it was asked), whether the launcher
# was run to learn its build (`--build-id`: it should not be, docs/security.md "The
# launcher"), and the fsync calls (docs/performance.md, "Processes of one round").
# The project is bench/compare.sh's base project (a trivial agent, `dirty_action = "stash"`,
# the default `[agent.sandbox]`); the first round of a project is shown apart, as it lists
# the repository's config once more (no record kept yet in the state dir).
#
#   bash bench/round_processes.sh                  # target/release/agent-runner
#   AR_BIN=target/debug/agent-runner bash bench/round_processes.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
bin="$(realpath "${AR_BIN:-$root/target/release/agent-runner}")"
[ -x "$bin" ] || { echo "no $bin: build it first (or set AR_BIN)" >&2; exit 1; }
command -v strace >/dev/null || { echo "strace is needed" >&2; exit 1; }
work="$(mktemp -d)"
export XDG_STATE_HOME="$work/state"
trap 'rm -rf "$work"' EXIT
cat > "$work/trivial-agent.sh" <<'AGENT'
#!/bin/sh
echo "trivial agent: $(printf '%s' "$1" | head -c 40)"
AGENT
chmod +x "$work/trivial-agent.sh"
p="$work/project"
mkdir -p "$p/prompts"
git -C "$p" init -q -b main .
git -C "$p" config user.name bench
git -C "$p" config user.email bench@localhost
python3 -c "print('Keep a journal in notes/journal.md and improve the code. ' * 12)" > "$p/prompts/main.md"
printf '/logs/\n' > "$p/.gitignore"
cat > "$p/agent-runner.toml" <<TOML
schema_version = 1

[agent]
name = "trivial"
command = ["$work/trivial-agent.sh"]
prompt_arg_template = ["{prompt}"]
prompt_delivery = "argv"

[runtime]
work_dir = "."
log_dir = "./logs"

[prompt]
file = "./prompts/main.md"

[monitor.host_health.disk]
critical_pct = 100

[vcs]
dirty_action = "stash"
TOML
git -C "$p" add -A
git -C "$p" commit -q -m "bench project"

# count LABEL: one traced round, summed up.
count() {
  local trace="$work/trace"
  (cd "$p" && strace -f -qq -z -e signal=none -e trace=execve,execveat,fsync -o "$trace" \
    "$bin" round >/dev/null 2>&1) || echo "(the round failed)"
  local execs git launcher_asked fsyncs
  execs=$(grep -c 'execve' "$trace" || true)
  git=$(grep -c '/git", \["git"' "$trace" || true)
  launcher_asked=$(grep -c '"--build-id"' "$trace" || true)
  fsyncs=$(grep -c 'fsync(' "$trace" || true)
  echo "$1: $execs programs executed, $git git processes, launcher run for its build: $launcher_asked, fsync: $fsyncs"
  grep '/git", \["git"' "$trace" | sed -E 's/.*\["git", //; s/"-c", "[^"]*", //g; s/\], .*//; s/", "/ /g; s/"//g; s/^/    git /'
}
count "first round of the project"
count "next round"
