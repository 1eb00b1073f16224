#!/usr/bin/env bash
# Builds test-report.pyz: a zipapp holding src/__main__.py and the SDK module with their
# bytecode, so the host is ONE file, the file you pin (docs/protocol.md "Python hosts";
# sdk/python/build_pyz.py).
# Usage: bash build.sh [OUT]   (default: ./test-report.pyz)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/test-report.pyz}"
python3 "$here/../../sdk/python/build_pyz.py" "$here/src" "$out"
