#!/usr/bin/env bash
# Version managers an agent CLI is often installed through, for tests/tests/suite/confinement/agent_shims.rs
# (docs/security.md, "Shims"): pipx from Debian, uv from PyPI and mise from npm, each at a
# pinned version, uv and mise into target/version-managers/<name>. Idempotent: what is
# already at its version is left alone. Small: pipx is one Debian package, uv and mise one
# static executable each (about 40 MB together).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="${AR_VERSION_MANAGERS_DIR:-$root/target/version-managers}"
UV_VERSION=0.13.8
MISE_VERSION=2026.9.15
mkdir -p "$dest"

if ! command -v pipx >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends pipx >/dev/null
fi

have=$("$dest/uv/bin/uv" --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$UV_VERSION" ]; then
  rm -rf "$dest/uv"
  /usr/bin/python3 -m venv "$dest/uv"
  "$dest/uv/bin/pip" install -q --disable-pip-version-check "uv==$UV_VERSION"
fi

have=$(node -p "require('$dest/mise/node_modules/@jdxcode/mise/package.json').version" 2>/dev/null || true)
if [ "$have" != "$MISE_VERSION" ] || ! "$dest/mise/node_modules/.bin/mise" --version >/dev/null 2>&1; then
  rm -rf "$dest/mise"
  mkdir -p "$dest/mise"
  npm install --prefix "$dest/mise" --no-audit --no-fund --loglevel=error "@jdxcode/mise@$MISE_VERSION" >/dev/null
fi

# One small pure-Python program installed through each Python manager, as a CLI is
# (`pipx install aider-chat`, `uv tool install kimi-cli`): the agent the tests start.
TOOL=cowsay TOOL_VERSION=6.1
if ! "$dest/pipx/bin/$TOOL" -t ok >/dev/null 2>&1; then
  rm -rf "$dest/pipx"
  PIPX_HOME="$dest/pipx" PIPX_BIN_DIR="$dest/pipx/bin" PIPX_MAN_DIR="$dest/pipx/man" \
    pipx install --python /usr/bin/python3 "$TOOL==$TOOL_VERSION" >/dev/null
fi
if ! "$dest/uv-tools/bin/$TOOL" -t ok >/dev/null 2>&1; then
  rm -rf "$dest/uv-tools"
  UV_TOOL_DIR="$dest/uv-tools/tools" UV_TOOL_BIN_DIR="$dest/uv-tools/bin" \
    UV_PYTHON_DOWNLOADS=never "$dest/uv/bin/uv" tool install --quiet --python /usr/bin/python3 "$TOOL==$TOOL_VERSION"
fi
