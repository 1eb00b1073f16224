#!/usr/bin/env bash
# demo-agent: a stand-in coding agent for the agent-runner demo and tests.
#
# It reads its prompt (first argument, or stdin when none is given), then edits the working
# tree the way a coding agent would: it appends to a journal and writes a source file.
# Even rounds commit their own work; odd rounds leave the tree dirty, for the supervisor's
# dirty handlers. Environment knobs (for tests): DEMO_AGENT_SLEEP (seconds to work),
# DEMO_AGENT_EXIT (exit status to return), DEMO_AGENT_ENDPOINT (host:port of a "model
# server" it connects to first, as a CLI does; it says whether it got through).
set -euo pipefail

if [ "$#" -gt 0 ]; then prompt="$1"; else prompt="$(cat)"; fi
round="${AGENT_RUNNER_ROUND_NUM:-0}"
echo "demo-agent: round ${round}; prompt: $(printf '%s' "$prompt" | head -c 60 | tr '\n' ' ')"

if [ -n "${DEMO_AGENT_ENDPOINT:-}" ]; then
  if err=$( (exec 3<>"/dev/tcp/${DEMO_AGENT_ENDPOINT%:*}/${DEMO_AGENT_ENDPOINT##*:}") 2>&1 ); then
    echo "demo-agent: reached the model server at ${DEMO_AGENT_ENDPOINT}"
  else
    echo "demo-agent: cannot reach the model server at ${DEMO_AGENT_ENDPOINT}: ${err##*: }"
  fi
fi

sleep "${DEMO_AGENT_SLEEP:-0}"
mkdir -p notes src
printf -- '- round %s: worked on "%s"\n' "$round" "$(printf '%s' "$prompt" | head -n 1 | head -c 40)" >> notes/journal.md
printf 'pub fn round_%s() -> u32 {\n    %s\n}\n' "$round" "$round" > "src/round_${round}.rs"

if [ $((round % 2)) -eq 0 ]; then
  git add -A -- notes src
  git -c user.name=demo-agent -c user.email=demo-agent@localhost commit -q -m "demo-agent: round ${round}"
  echo "demo-agent: committed my own work"
else
  echo "demo-agent: left my changes uncommitted"
fi
exit "${DEMO_AGENT_EXIT:-0}"
