#!/usr/bin/env bash
# Builds {{NAME}}.pyz: one file holding src/ (your host and the SDK module) with its
# bytecode, and prints its pin. Pin that file: a confined host can read only its own
# executable, so the SDK must be inside it. build_pyz.py says what the #! line is and how
# to change it (third-party packages).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python3 "$here/build_pyz.py" "$here/src" "$here/{{NAME}}.pyz" --name "{{NAME}}"
