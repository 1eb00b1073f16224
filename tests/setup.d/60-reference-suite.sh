#!/usr/bin/env bash
# The reference compatibility suite (tests/tests/suite/reference/reference_suite.rs) runs the reference
# system's own end-to-end tests (cli-agent-runner 0.3.2 and 0.3.14, docs/reference-system.md,
# "The compatibility suite") against our binary and against the reference itself. For each
# version this makes, under target/reference/<version>/ (never committed):
#   venv/     pytest and the reference, from PyPI at pinned versions
#   sdist/    the reference's source distribution, fetched with pip download
#   tests/e2e the end-to-end tests unpacked from it
# A version already prepared (its `ready` file) is left alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PYTEST=pytest==8.3.4
for version in 0.3.2 0.3.14; do
  dest=target/reference/$version
  [ -f "$dest/ready" ] && continue
  rm -rf "$dest"
  mkdir -p "$dest"
  /usr/bin/python3 -m venv "$dest/venv"
  pip=("$dest/venv/bin/pip" -q --disable-pip-version-check)
  "${pip[@]}" install "$PYTEST" "cli-agent-runner==$version"
  "${pip[@]}" download --no-binary cli-agent-runner --no-deps -d "$dest/sdist" "cli-agent-runner==$version"
  tar -xzf "$dest/sdist/cli_agent_runner-$version.tar.gz" -C "$dest" --strip-components=1 \
    "cli_agent_runner-$version/tests/e2e"
  touch "$dest/ready"
done
