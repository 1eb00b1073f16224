#!/usr/bin/env bash
# Cold start per runtime (hash + confine + initialize), p50/p99, for the runtime matrix's
# hosts and the Python SDK's zipapp under sandbox = "require" (supervisor/benches/cold_start.rs).
# Script hosts run the interpreter their #! line names on this PATH (printed per row): run
# with PATH=/usr/bin:/bin to measure the system's interpreters. Not part of CI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --quiet -p agent-runner-e2e --bin ar-e2e-runtime
bash examples/python-pause-file/build.sh "$(pwd)/target/release/python-pause-file.pyz" >/dev/null
cargo bench --quiet -p agent-runner --bench cold_start
