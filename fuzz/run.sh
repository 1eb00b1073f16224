#!/usr/bin/env bash
# Runs every cargo-fuzz target for a bounded time and fails on any crash.
#
#   bash fuzz/run.sh                 # each target for FUZZ_SECONDS (default 60)
#   FUZZ_SECONDS=600 bash fuzz/run.sh protocol_decode
#
# Targets (fuzz/fuzz_targets/): protocol_decode (every result decoder and params type of
# protocol v1) and config_parse (agent-runner.toml through config::parse_str). Seeds are in
# fuzz/corpus/<target>/ (committed, small); the working corpus grows in
# target/fuzz-corpus/<target>/ so the committed seeds stay as they are. A crash leaves its
# input in fuzz/artifacts/<target>/ and makes this script exit non-zero.
#
# cargo-fuzz needs nightly-only compiler flags (-Z sanitizer=address). With only a stable
# toolchain installed, RUSTC_BOOTSTRAP=1 lets stable rustc accept them; this script sets it
# unless a nightly toolchain is selected (RUSTUP_TOOLCHAIN=nightly). Not part of .ci/run
# (too slow): run it by hand.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${FUZZ_SECONDS:-60}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
case "${RUSTUP_TOOLCHAIN:-}" in
  nightly*) ;;
  *) export RUSTC_BOOTSTRAP=1 ;;
esac

targets=("$@")
[ "${#targets[@]}" -gt 0 ] || mapfile -t targets < <(cargo fuzz list)

for target in "${targets[@]}"; do
  corpus="target/fuzz-corpus/$target"
  mkdir -p "$corpus"
  echo "== $target: ${seconds}s"
  cargo fuzz run "$target" "$corpus" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
done
echo "fuzz: no crash in ${targets[*]} (${seconds}s each)"
