#!/usr/bin/env bash
# Builds python-pause-file.pyz: a zipapp holding src/__main__.py and the SDK module, so
# the host is ONE file, the file you pin (docs/protocol.md "Python hosts").
# Usage: bash build.sh [OUT]   (default: ./python-pause-file.pyz)
# Prints OUT, then its pin in the form [plugins.pin] accepts: pause = "sha256:<hex>".
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/python-pause-file.pyz}"
python3 -m zipapp "$here/src" -p "/usr/bin/env python3" -o "$out"
chmod 755 "$out"
echo "$out"
sum="$(sha256sum "$out")"
echo "pause = \"sha256:${sum%% *}\""
