#!/usr/bin/env bash
# The README's test command: install what the tests need (tests/setup.sh), then run the
# workspace's tests. Run as root on a fresh Debian machine with Rust, git and python3: the
# setup installs Debian packages, and the suites also run as the unprivileged user `ar-e2e`.
#
# The end-to-end tests are one test binary (tests/tests/all.rs) whose kinds run in turn:
# first every other test of the workspace with the functional and confinement kinds, then
# the real CLIs, then the reference system's suite, each kind on its own so that neither
# heavy one (node CLIs; two pytest runs at once) slows the other's timed rounds. Every
# pass runs even when one before it failed; the exit status says whether all passed.
#
# Extra arguments replace the passes with one `cargo test` of them, for example
# `bash tests/run.sh -p agent-runner-e2e --test all suite::confinement::hostile`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash tests/setup.sh
if [ "$#" -gt 0 ]; then
  exec cargo test "$@"
fi
failed=0
cargo test --workspace -- --skip suite::real_clis:: --skip suite::reference:: || failed=1
# `--workspace --test all`, not `-p agent-runner-e2e`: the same features as the first pass,
# so its build is reused (with `-p` cargo unifies fewer features and rebuilds dependencies).
cargo test --workspace --test all -- suite::real_clis:: || failed=1
cargo test --workspace --test all -- suite::reference:: || failed=1
exit "$failed"
