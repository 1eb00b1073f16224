#!/usr/bin/env bash
# The real agent CLIs at the versions pinned in tests/agent-clis/versions.env, from the npm
# registry and PyPI, into target/agent-clis/<name> (one prefix each, so one bump reinstalls
# one CLI). Idempotent: a CLI already at its pinned version is left alone. The tests in
# tests/tests/real_clis.rs run them against the fake model server (tests/agent-clis/fake_model.py).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../agent-clis/versions.env
. "$root/tests/agent-clis/versions.env"
dest="${AR_AGENT_CLIS_DIR:-$root/target/agent-clis}"
mkdir -p "$dest"
# Gemini CLI needs node >= 20 (Claude Code's wrapper runs its native binary under 20 too).
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ] || ! command -v npm >/dev/null; then
  echo "tests/setup.d/30-agent-clis.sh: needs node >= 20 with npm (found node major $node_major); install them (e.g. NodeSource's nodejs 20) and re-run tests/setup.sh" >&2
  exit 1
fi

npm_cli() { # name package version
  local name=$1 pkg=$2 ver=$3 have
  have=$(node -p "require('$dest/$name/node_modules/$pkg/package.json').version" 2>/dev/null || true)
  [ "$have" = "$ver" ] && return 0
  rm -rf "$dest/$name"
  mkdir -p "$dest/$name"
  npm install --prefix "$dest/$name" --no-audit --no-fund --loglevel=error "$pkg@$ver" >/dev/null
}

npm_cli codex @openai/codex "$CODEX_VERSION"
npm_cli claude @anthropic-ai/claude-code "$CLAUDE_CODE_VERSION"
npm_cli gemini @google/gemini-cli "$GEMINI_CLI_VERSION"
npm_cli pi @mariozechner/pi-coding-agent "$PI_CODING_AGENT_VERSION"

have=$("$dest/aider/bin/python" -c 'import importlib.metadata as m; print(m.version("aider-chat"))' 2>/dev/null || true)
if [ "$have" != "$AIDER_CHAT_VERSION" ]; then
  rm -rf "$dest/aider"
  /usr/bin/python3 -m venv "$dest/aider"
  "$dest/aider/bin/pip" install -q --disable-pip-version-check "aider-chat==$AIDER_CHAT_VERSION"
fi

# kimi-cli needs Python >= 3.12 (Debian 12's is 3.11): the first found of python3.13 and
# python3.12 on PATH or under pyenv's versions.
have=$("$dest/kimi/bin/python" -c 'import importlib.metadata as m; print(m.version("kimi-cli"))' 2>/dev/null || true)
if [ "$have" != "$KIMI_CLI_VERSION" ]; then
  py=
  for cand in python3.13 python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    if "$cand" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
      py=$cand
      break
    fi
  done
  if [ -z "$py" ]; then
    echo "tests/setup.d/30-agent-clis.sh: kimi-cli $KIMI_CLI_VERSION needs Python >= 3.12 with venv (python3.12 or python3.13 on PATH, or under pyenv); install one and re-run tests/setup.sh" >&2
    exit 1
  fi
  rm -rf "$dest/kimi"
  "$py" -m venv "$dest/kimi"
  "$dest/kimi/bin/pip" install -q --disable-pip-version-check "kimi-cli==$KIMI_CLI_VERSION"
fi
