#!/usr/bin/env bash
# The real agent CLIs at the versions pinned in tests/agent-clis/versions.env, from the npm
# registry and PyPI, into target/agent-clis/<name> (one prefix each, so one bump reinstalls
# one CLI). Idempotent: a CLI already at its pinned version is left alone. The tests in
# tests/tests/suite/real_clis/real_clis.rs run them against the fake model server (tests/agent-clis/fake_model.py).
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
# python3.12 on PATH, or pyenv's newest (on 3.12.1 every kimi round dies at start-up with
# "TypeError: super(type, obj)", a CPython bug with frozen slotted generic dataclasses). The venv must run as the unprivileged test
# user too (tests/tests/suite/real_clis/real_clis.rs), so an interpreter whose tree that user cannot reach
# (pyenv's under /root, mode 0700) is first copied here and its library path made relative.

# Whether every directory from / down to $1 lets other users through (o+x).
others_reach() {
  local d=$1
  while [ "$d" != / ]; do
    [ $((0$(stat -c %a "$d") & 1)) -eq 1 ] || return 1
    d=$(dirname "$d")
  done
}

# Sets py to a Python >= 3.12 whose tree others reach. Copies an unreachable one's
# tree (sys.base_prefix) to $dest/python-X.Y.Z, with its executables' RUNPATH (pyenv's
# names /root/.pyenv/versions/X.Y.Z/lib, where libpython is) set to $ORIGIN/../lib.
reachable_python() {
  local cand prefix ver copy elf
  py=
  for cand in python3.13 python3.12 $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV); do
    if "$cand" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
      py=$cand
      break
    fi
  done
  if [ -z "$py" ]; then
    echo "tests/setup.d/30-agent-clis.sh: kimi-cli $KIMI_CLI_VERSION needs Python >= 3.12 with venv (python3.12 or python3.13 on PATH, or under pyenv); install one and re-run tests/setup.sh" >&2
    return 1
  fi
  prefix=$("$py" -c 'import sys; print(sys.base_prefix)')
  others_reach "$prefix" && return 0
  ver=$("$py" -c 'import platform; print(platform.python_version())')
  copy="$dest/python-$ver"
  if ! [ -x "$copy/bin/python3" ]; then
    if ! command -v patchelf >/dev/null; then
      if [ "$(id -u)" -ne 0 ]; then
        echo "tests/setup.d/30-agent-clis.sh: Python $ver at $prefix is closed to other users and patchelf (to copy it out) is missing: apt-get install patchelf, or install a Python >= 3.12 others can run, and re-run tests/setup.sh" >&2
        return 1
      fi
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patchelf >/dev/null
    fi
    rm -rf "$copy.partial"
    cp -a "$prefix" "$copy.partial"
    chmod -R go+rX,go-w "$copy.partial"
    # shellcheck disable=SC2016 # $ORIGIN is for the dynamic linker, not the shell
    # shellcheck disable=SC2016 # $ORIGIN is the dynamic linker's, not the shell's
    for elf in "$copy.partial"/bin/python3.*; do
      [ -L "$elf" ] || ! patchelf --print-rpath "$elf" >/dev/null 2>&1 \
        || patchelf --set-rpath '$ORIGIN/../lib' "$elf"
    done
    mv "$copy.partial" "$copy"
  fi
  if ! "$copy/bin/python3" -c 'import sys, venv, ssl; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 \
    || ldd "$copy/bin/python3" | grep -qF "$prefix/"; then
    echo "tests/setup.d/30-agent-clis.sh: the copy of Python $ver at $copy does not run; remove it and re-run tests/setup.sh" >&2
    return 1
  fi
  py="$copy/bin/python3"
}

have=$("$dest/kimi/bin/python" -c 'import importlib.metadata as m, sys; print(m.version("kimi-cli"), sys.base_prefix)' 2>/dev/null || true)
base=${have#* }
if [ "${have%% *}" != "$KIMI_CLI_VERSION" ] || { [[ $base != "$dest"/python-* ]] && ! others_reach "$base"; }; then
  reachable_python
  rm -rf "$dest/kimi"
  "$py" -m venv "$dest/kimi"
  "$dest/kimi/bin/pip" install -q --disable-pip-version-check "kimi-cli==$KIMI_CLI_VERSION"
fi
