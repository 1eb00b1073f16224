#!/usr/bin/env bash
# Cold start per runtime (hash + confine + initialize), p50/p99, for the runtime matrix's
# hosts under sandbox = "require" (supervisor/benches/cold_start.rs). Not part of CI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --quiet -p agent-runner-e2e --bin ar-e2e-runtime
cargo bench --quiet -p agent-runner --bench cold_start
