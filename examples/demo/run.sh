#!/usr/bin/env bash
# The agent-runner demo: builds everything, makes a fresh example project (a git repo with
# the demo agent), pins both example hosts on the spot, and supervises three real rounds
# under sandbox = "require": the first spawn is deferred while a pause file exists, rounds
# that leave the tree dirty get a commit decided by the dirty-handler host. The agent runs
# confined ([agent.sandbox] mode = "prefer", as init writes): it cannot reach a local
# "model server" on a port other than 443 until connect_ports names it, which the demo
# shows and then fixes with one round more.
#
# Usage: bash examples/demo/run.sh            (project in target/demo/project)
#        DEMO_DIR=/tmp/x bash examples/demo/run.sh
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
demo="${DEMO_DIR:-$repo/target/demo}"
project="$demo/project"
bin="$repo/target/release"

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
  say() { printf '\n== %s\n' "$*"; }
fi

say "Building the workspace (release)"
(cd "$repo" && cargo build --release --workspace --bins --quiet)

say "Creating a fresh example project in $project"
rm -rf "$demo"
mkdir -p "$project/prompts"
cd "$project"
git init -q -b main .
git config user.name "demo operator"
git config user.email "operator@demo.invalid"
printf '# Demo project\n\nA project worked on by demo-agent under agent-runner.\n' > README.md
printf -- '---\ntitle: demo prompt\n---\nKeep a journal of your work in notes/journal.md and add one source file per round.\n' > prompts/main.md
printf '/logs/\n/.agent-runner-pause\n' > .gitignore
cp "$repo/examples/agent/demo-agent.sh" "$demo/demo-agent.sh"

# A local "model server" (as a local model or a proxy would be) on a port other than 443.
mkdir -p "$demo/endpoint"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$demo/endpoint" >/dev/null 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done

pin() { echo "sha256:$(sha256sum "$1" | cut -d' ' -f1)"; }
cat > agent-runner.toml <<TOML
schema_version = 1

[agent]
name = "demo-agent"
command = ["$demo/demo-agent.sh"]
prompt_arg_template = ["{prompt}"]
prompt_delivery = "argv"

[agent.env]
DEMO_AGENT_ENDPOINT = "127.0.0.1:$port"

# The agent runs confined: the work tree, its own state, a private TMPDIR and the system;
# TCP only to 443 unless connect_ports names more (docs/security.md, "The agent's
# confinement"; every key: agent-runner man, docs/configuration.md).
[agent.sandbox]
mode = "prefer"

[runtime]
work_dir = "."
log_dir = "./logs"
# The record (lock, events, state) out of the agent's reach; the default would be
# ~/.local/state/agent-runner/projects/… (docs/operations.md, "State dir").
state_dir = "../state"
round_budget_s = 60
restart_delay_s = 1

[prompt]
file = "./prompts/main.md"

[vcs]
dirty_action = "stash"

# Rounds wait while the log dir's disk is at least this full (default 95%). Build machines
# often run near full; the demo should run there too.
[monitor.host_health.disk]
critical_pct = 100

[plugins]
sandbox = "require"
spawn_override_allow = ["pause_file"]

[plugins.pin]
pause = "$(pin "$bin/spawn-pause-file")"
wip = "$(pin "$bin/dirty-commit")"

[plugins.hosts.pause]
command = ["$bin/spawn-pause-file"]
provides = ["spawn_hook"]
config = { file = ".agent-runner-pause", defer_s = 2, reason = "paused by the operator (pause file present)" }

[plugins.hosts.wip]
command = ["$bin/dirty-commit"]
provides = ["dirty_handler"]
config = { prefix = "wip: " }
TOML
git add -A && git commit -q -m "demo project"

say "agent-runner doctor"
"$bin/agent-runner" doctor

say "Serving 3 rounds (the pause file defers the first spawn until it is removed)"
touch .agent-runner-pause
AGENT_RUNNER_LOG=warn "$bin/agent-runner" serve --max-rounds 3 &
serve_pid=$!
for _ in $(seq 1 100); do
  if grep -qs '"round_deferred"' ../state/events-*.jsonl; then break; fi
  sleep 0.1
done
echo "deferred while the pause file exists; removing it"
sleep 1
rm -f .agent-runner-pause
wait "$serve_pid"

say "What happened"
python3 - "$project" <<'PY'
import glob, json, sys
project = sys.argv[1]
events = [json.loads(l) for f in sorted(glob.glob(f"{project}/../state/events-*.jsonl")) for l in open(f)]
kinds = [e["event"] for e in events]
print(f"rounds run: {kinds.count('round_end')}, deferrals: {kinds.count('round_deferred')}, "
      f"hook commits: {kinds.count('dirty_auto_committed')}, stashes: {kinds.count('orphan_stashed')}, "
      f"hook failures: {kinds.count('hook_failed')}")
for e in events:
    detail = {k: v for k, v in e.items() if k not in ("ts", "event")}
    print(f"  {e['ts']}  {e['event']:<28} {json.dumps(detail)[:110]}")
PY

say "The agent's sandbox refused the model server (round logs)"
grep -h "model server" logs/rounds/* | sort | uniq -c
say "The fix: [agent.sandbox] connect_ports = [$port], then one round more"
python3 - agent-runner.toml "$port" <<'PY'
import sys
path, port = sys.argv[1], sys.argv[2]
text = open(path).read().replace('mode = "prefer"\n', f'mode = "prefer"\nconnect_ports = [{port}]\n', 1)
open(path, "w").write(text)
PY
git commit -q -am "demo: the agent may reach the local model server"
grep -A2 '^\[agent.sandbox\]' agent-runner.toml
AGENT_RUNNER_LOG=warn "$bin/agent-runner" round
last_log=$(ls -t logs/rounds/* | head -n 1)
grep -h "model server" "$last_log"
grep -qs "reached the model server" "$last_log"

echo
echo "git log of the project:"
git --no-pager log --oneline
echo
echo "events:      $demo/state/events-*.jsonl"
echo "round logs:  $project/logs/rounds/"
