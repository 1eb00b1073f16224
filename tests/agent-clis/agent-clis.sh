#!/usr/bin/env bash
# How the tests run each pinned agent CLI against the fake model server: where it is
# installed (target/agent-clis, by tests/setup.d/30-agent-clis.sh), the preset's command
# (as `agent-runner init --preset` writes it, supervisor/src/operator/init.rs), and the
# fake HOME and environment that point it at 127.0.0.1:PORT (or ADDR:PORT) with a fake key.
#
# Sourced by capture.sh; run as a command by the Rust tests:
#   agent-clis.sh env CLI HOME PORT [ADDR]
#                                     writes CLI's config under HOME, prints KEY=VALUE lines
#                                     (ADDR: the fake server's address, 127.0.0.1 by default)
#   agent-clis.sh bin CLI             prints the CLI's executable
#   agent-clis.sh version CLI         prints the pinned version
set -euo pipefail
_ac_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$_ac_root/tests/agent-clis/versions.env"
AGENT_CLIS_DIR="${AR_AGENT_CLIS_DIR:-$_ac_root/target/agent-clis}"

agent_cli_bin() {
  case $1 in
    claude) echo "$AGENT_CLIS_DIR/claude/node_modules/.bin/claude" ;;
    codex) echo "$AGENT_CLIS_DIR/codex/node_modules/.bin/codex" ;;
    gemini) echo "$AGENT_CLIS_DIR/gemini/node_modules/.bin/gemini" ;;
    aider) echo "$AGENT_CLIS_DIR/aider/bin/aider" ;;
    pi) echo "$AGENT_CLIS_DIR/pi/node_modules/.bin/pi" ;;
    kimi) echo "$AGENT_CLIS_DIR/kimi/bin/kimi" ;;
    *) echo "unknown CLI $1" >&2; return 2 ;;
  esac
}

agent_cli_version() {
  case $1 in
    claude) echo "$CLAUDE_CODE_VERSION" ;;
    codex) echo "$CODEX_VERSION" ;;
    gemini) echo "$GEMINI_CLI_VERSION" ;;
    aider) echo "$AIDER_CHAT_VERSION" ;;
    pi) echo "$PI_CODING_AGENT_VERSION" ;;
    kimi) echo "$KIMI_CLI_VERSION" ;;
  esac
}

# The preset's arguments after the executable, prompt delivery included ("-" = stdin).
agent_cli_args() {
  case $1 in
    claude) echo "--model sonnet --dangerously-skip-permissions --verbose --output-format stream-json -p" ;;
    codex) echo "exec --sandbox workspace-write --json" ;;
    gemini) echo "--yolo --skip-trust -o stream-json -p" ;;
    aider) echo "--yes-always --no-stream --analytics-disable --no-gitignore --message" ;;
    pi) echo "-p --mode json" ;;
    kimi) echo "--print --output-format stream-json -p" ;;
  esac
}

# Writes CLI's config under HOME (pointing it at the fake server on PORT) and prints the
# environment it needs, one KEY=VALUE a line.
agent_cli_env() {
  local cli=$1 home=$2 port=$3 addr=${4:-127.0.0.1}
  echo "HOME=$home"
  case $cli in
    claude)
      echo "ANTHROPIC_BASE_URL=http://$addr:$port"
      echo "ANTHROPIC_API_KEY=sk-ant-fake-key"
      echo "DISABLE_AUTOUPDATER=1"
      # No telemetry, error reporting or update checks: nothing but the fake server.
      echo "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"
      echo "IS_SANDBOX=1"
      # Its own retries (10 by default, minutes of back-off) cut to one: the tests want its
      # final answer, not its patience.
      echo "CLAUDE_CODE_MAX_RETRIES=1" ;;
    codex)
      mkdir -p "$home/.codex"
      cat >"$home/.codex/config.toml" <<TOML
model = "fake-model"
model_provider = "fake"
[model_providers.fake]
name = "fake"
base_url = "http://$addr:$port/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
# Its own retries (4 and 5 by default) cut to one, as claude's above.
request_max_retries = 1
stream_max_retries = 1
TOML
      echo "OPENAI_API_KEY=sk-fake-key" ;;
    gemini)
      mkdir -p "$home/.gemini"
      # The API-key login chosen (else: exit 41 "Invalid auth method selected."); its own
      # retries (10 by default) cut to two; its usage statistics (sent to Google by
      # default) off.
      echo '{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"maxAttempts":2},"privacy":{"usageStatisticsEnabled":false}}' >"$home/.gemini/settings.json"
      echo "GEMINI_API_KEY=fake-key"
      # One model, not "auto" routing (whose fallback chain retries ten times).
      echo "GEMINI_MODEL=gemini-2.5-flash"
      echo "GOOGLE_GEMINI_BASE_URL=http://$addr:$port" ;;
    aider)
      echo "OPENAI_API_KEY=sk-fake-key"
      echo "OPENAI_API_BASE=http://$addr:$port/v1"
      echo "AIDER_MODEL=openai/fake-model" ;;
    pi)
      mkdir -p "$home/.pi/agent"
      # A provider of its own speaking OpenAI chat completions to the fake server, chosen
      # as the default; its own retries (3, from 2 s) cut to one.
      cat >"$home/.pi/agent/models.json" <<JSON
{"providers": {"fake": {"baseUrl": "http://$addr:$port/v1", "api": "openai-completions",
  "apiKey": "FAKE_API_KEY", "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
  "models": [{"id": "fake-model"}]}}}
JSON
      echo '{"defaultProvider": "fake", "defaultModel": "fake-model", "enableInstallTelemetry": false, "retry": {"maxRetries": 1, "baseDelayMs": 500}}' >"$home/.pi/agent/settings.json"
      echo "FAKE_API_KEY=sk-fake-key"
      # No update check, no install ping: nothing but the fake server.
      echo "PI_OFFLINE=1" ;;
    kimi)
      mkdir -p "$home/.kimi"
      # Moonshot's provider type ("kimi": OpenAI chat completions) at the fake server, its
      # telemetry off, its own retries per step (3) cut to one.
      cat >"$home/.kimi/config.toml" <<TOML
default_model = "fake"
telemetry = false
[providers.fake]
type = "kimi"
base_url = "http://$addr:$port/v1"
api_key = "sk-fake-key"
[models.fake]
provider = "fake"
model = "fake-model"
max_context_size = 128000
[loop_control]
max_retries_per_step = 1
TOML
      echo "KIMI_CLI_NO_AUTO_UPDATE=1" ;;
  esac
}

# The machine set-up docs/agent-clis.md warns of, undone: gemini's settings without a
# chosen login method (it then exits 41, "Invalid auth method selected.").
agent_cli_unselect_auth() { # cli home
  case $1 in
    gemini) echo '{"general":{"maxAttempts":2},"privacy":{"usageStatisticsEnabled":false}}' >"$2/.gemini/settings.json" ;;
    *) echo "agent_cli_unselect_auth: no such set-up for $1" >&2; return 2 ;;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  case ${1:-} in
    env) agent_cli_env "$2" "$3" "$4" "${5:-127.0.0.1}" ;;
    bin) agent_cli_bin "$2" ;;
    version) agent_cli_version "$2" ;;
    unselect-auth) agent_cli_unselect_auth "$2" "$3" ;;
    args) agent_cli_args "$2" ;;
    *) echo "usage: agent-clis.sh env CLI HOME PORT [ADDR] | bin CLI | version CLI | args CLI | unselect-auth CLI HOME" >&2; exit 2 ;;
  esac
fi
