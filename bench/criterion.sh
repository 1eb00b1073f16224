#!/usr/bin/env bash
# Criterion benchmarks, short run: protocol encode/decode (protocol/benches/codec.rs) and
# hooks through real confined hosts (supervisor/benches/hooks.rs: warm before_spawn call,
# host cold start, one round's spawn consultation with 1, 4, 16 hosts;
# supervisor/benches/families.rs: the per-round cost of one warm host per family).
#
#   bash bench/criterion.sh                 # 3 s measurement, 1 s warm-up per benchmark
#   CRITERION_ARGS="--measurement-time 10" bash bench/criterion.sh
#
# Prints criterion's summary (time: [low median high]) per benchmark. For p50/p99 of the
# warm call and the cold start, run bench/host_call.sh. Not part of CI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
args="${CRITERION_ARGS:---measurement-time 3 --warm-up-time 1}"
cargo build --release --quiet -p example-spawn-pause-file -p example-no-commit-detector
# shellcheck disable=SC2086 # $args is a list of criterion flags
cargo bench --quiet -p agent-runner-protocol --bench codec -- $args
# shellcheck disable=SC2086
cargo bench --quiet -p agent-runner --bench hooks -- $args
# shellcheck disable=SC2086
cargo bench --quiet -p agent-runner --bench families -- $args
