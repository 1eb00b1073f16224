#!/usr/bin/env bash
# The README's test command: install what the tests need (tests/setup.sh), then run the
# workspace's tests. Extra arguments go to `cargo test` (for example `-p agent-runner-e2e
# --test hostile`). Run as root on a fresh Debian machine with Rust, git and python3: the
# setup installs Debian packages, and the suites also run as the unprivileged user `ar-e2e`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash tests/setup.sh
cargo test --workspace "$@"
