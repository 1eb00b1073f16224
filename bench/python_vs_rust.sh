#!/usr/bin/env bash
# Hook cost of the same spawn hook (`pause_file`) written in Rust (examples/spawn-pause-file)
# and in Python (examples/python-pause-file, a zipapp), both through a real host fully
# confined (Landlock + seccomp): cold start and warm before_spawn p50/p99 for each.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --quiet -p example-spawn-pause-file
pyz="$(pwd)/target/release/python-pause-file.pyz"
bash examples/python-pause-file/build.sh "$pyz" >/dev/null
echo "== Rust host"
AR_BENCH_HOST="$(pwd)/target/release/spawn-pause-file" cargo bench --quiet -p agent-runner --bench host_call
echo "== Python host ($(python3 --version))"
AR_BENCH_HOST="$pyz" cargo bench --quiet -p agent-runner --bench host_call
