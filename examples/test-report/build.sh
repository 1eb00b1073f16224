#!/usr/bin/env bash
# Builds test-report.pyz: a zipapp holding src/__main__.py and the SDK module, so the host
# is ONE file, the file you pin (docs/protocol.md "Python hosts").
# Usage: bash build.sh [OUT]   (default: ./test-report.pyz)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/test-report.pyz}"
python3 -m zipapp "$here/src" -p "/usr/bin/env python3" -o "$out"
chmod 755 "$out"
echo "$out"
