#!/usr/bin/env bash
# Moves the pinned agent CLIs (tests/agent-clis/versions.env) to the registries' latest
# versions, installs them (tests/setup.d/30-agent-clis.sh) and re-captures the transcript
# corpus (capture.sh; aider's failure modes with the long timeout they need). Then review
# `git diff tests/agent-clis`, run `cargo test -p agent-runner --test real_transcripts`
# and update the "verified with" column of docs/agent-clis.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
latest_npm() { npm view "$1" version; }
latest_pypi() { python3 -m pip index versions "$1" 2>/dev/null | sed -n 's/^[^ ]* (\(.*\))$/\1/p'; }
codex=$(latest_npm @openai/codex)
claude=$(latest_npm @anthropic-ai/claude-code)
gemini=$(latest_npm @google/gemini-cli)
aider=$(latest_pypi aider-chat)
pi=$(latest_npm @mariozechner/pi-coding-agent)
# kimi-cli stays at its last working release (versions.env says why).
for v in "$codex" "$claude" "$gemini" "$aider" "$pi"; do
  [ -n "$v" ] || { echo "bump.sh: a registry did not answer" >&2; exit 1; }
done
sed -i -e "s/^CODEX_VERSION=.*/CODEX_VERSION=$codex/" \
  -e "s/^CLAUDE_CODE_VERSION=.*/CLAUDE_CODE_VERSION=$claude/" \
  -e "s/^GEMINI_CLI_VERSION=.*/GEMINI_CLI_VERSION=$gemini/" \
  -e "s/^AIDER_CHAT_VERSION=.*/AIDER_CHAT_VERSION=$aider/" \
  -e "s/^PI_CODING_AGENT_VERSION=.*/PI_CODING_AGENT_VERSION=$pi/" "$here/versions.env"
cat "$here/versions.env"
bash "$root/tests/setup.d/30-agent-clis.sh"
bash "$here/capture.sh" claude codex gemini pi kimi
CAPTURE_MODES=auth_method bash "$here/capture.sh" gemini
CAPTURE_MODES="normal auth retry_once" bash "$here/capture.sh" aider
CAPTURE_TIMEOUT_S=300 CAPTURE_MODES="rate_limit overloaded refused" bash "$here/capture.sh" aider
