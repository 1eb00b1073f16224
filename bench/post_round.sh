#!/usr/bin/env bash
# Post-round detection cost per round (supervisor/benches/post_round.rs), against the goal
# of <= 1 ms warm: every built-in detector over a 64 KiB round log, in process; and one
# round's post_round consultation through the confined built-in detector host.
#
#   bash bench/post_round.sh
#   CRITERION_ARGS="--measurement-time 10" bash bench/post_round.sh
#
# Not part of CI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
args="${CRITERION_ARGS:---measurement-time 3 --warm-up-time 1}"
cargo build --release --quiet -p agent-runner -p example-spawn-pause-file
# shellcheck disable=SC2086 # $args is a list of criterion flags
cargo bench --quiet -p agent-runner --bench post_round -- $args
