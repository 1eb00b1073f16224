#!/usr/bin/env bash
# Builds python-pause-file.pyz: a zipapp holding src/__main__.py and the SDK module with
# their bytecode, so the host is ONE file, the file you pin (docs/protocol.md "Python
# hosts"; sdk/python/build_pyz.py).
# Usage: bash build.sh [OUT]   (default: ./python-pause-file.pyz)
# Prints OUT, then its pin in the form [plugins.pin] accepts: pause = "sha256:<hex>".
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/python-pause-file.pyz}"
python3 "$here/../../sdk/python/build_pyz.py" "$here/src" "$out" --name pause
