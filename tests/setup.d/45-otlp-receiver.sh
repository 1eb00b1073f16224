#!/usr/bin/env bash
# The OTLP receiver of tests/tests/suite/functional/telemetry.rs decodes the spans agent-runner exports with
# OpenTelemetry's own protobuf definitions: PyPI's opentelemetry-proto (with protobuf), in
# a venv of its own under target/otlp-receiver. Idempotent: left alone at the pinned version.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OTLP_PROTO_VERSION=1.45.2
dest="${AR_OTLP_RECEIVER_DIR:-$root/target/otlp-receiver}"
have=$("$dest/bin/python" -c 'import importlib.metadata as m; print(m.version("opentelemetry-proto"))' 2>/dev/null || true)
if [ "$have" = "$OTLP_PROTO_VERSION" ]; then
  exit 0
fi
rm -rf "$dest"
/usr/bin/python3 -m venv "$dest"
"$dest/bin/pip" install -q --disable-pip-version-check "opentelemetry-proto==$OTLP_PROTO_VERSION"
# The test runs the receiver as whoever runs the test (root or the unprivileged user).
chmod -R a+rX "$dest"
