#!/usr/bin/env bash
# Builds {{NAME}}.pyz: one file holding src/ (your host and the SDK module). Pin that file:
# a confined host can read only its own executable, so the SDK must be inside it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python3 -m zipapp "$here/src" -p "/usr/bin/env python3" -o "$here/{{NAME}}.pyz"
chmod 755 "$here/{{NAME}}.pyz"
sum="$(sha256sum "$here/{{NAME}}.pyz")"
echo "built $here/{{NAME}}.pyz; its pin, ready to paste under [plugins.pin]:"
echo "{{NAME}} = \"sha256:${sum%% *}\""
