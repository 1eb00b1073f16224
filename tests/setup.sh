#!/usr/bin/env bash
# Installs what the test suites need, once: each tests/setup.d/*.sh in name order. A part
# installs only what is missing, so a second run costs a few seconds. Parts install from
# Debian's packages, PyPI and the npm registry only; nothing they fetch is committed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for part in tests/setup.d/*.sh; do
  bash "$part"
done
