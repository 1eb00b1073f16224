#!/usr/bin/env bash
# Hook cost through a real confined host: cold start and warm before_spawn p50/p99.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --quiet -p example-spawn-pause-file
cargo bench --quiet -p agent-runner --bench host_call
