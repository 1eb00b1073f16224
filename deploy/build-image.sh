#!/usr/bin/env bash
# Builds the agent-runner image (deploy/Containerfile) from executables cargo built.
#
# Usage: deploy/build-image.sh [TAG]      (default TAG: localhost/agent-runner:latest)
# Env:   PROFILE   cargo profile whose executables go in (default release; build them first:
#                  cargo build --release -p agent-runner -p example-spawn-pause-file
#                  -p example-dirty-commit -p example-no-commit-detector)
#        BASE      the base image; default: built from Debian's packages by
#                  deploy/base/build.sh. With a registry: BASE=docker.io/library/debian:bookworm-slim
#        BIN_DIR   where those executables are (default target/PROFILE)
#        CACHE_DIR where the base tarball and the build context go (default target/container)
#        ENGINE    podman (default), buildah-compatible docker also works; ENGINE_OPTS
#                  extra global options (word-split), BUILD_OPTS extra build options
#                  (for example "--build-arg AGENT_NPM=@anthropic-ai/claude-code@2.0.0")
# Prints the tag on stdout.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tag="${1:-localhost/agent-runner:latest}"
profile="${PROFILE:-release}"
engine="${ENGINE:-podman}"
read -r -a engine_opts <<<"${ENGINE_OPTS:-}"
read -r -a build_opts <<<"${BUILD_OPTS:-}"
bin_dir="${BIN_DIR:-$repo/target/$profile}"
cache="${CACHE_DIR:-$repo/target/container}"
base="${BASE:-$("$repo/deploy/base/build.sh" "$cache")}"
context="$cache/context-$profile"
rm -rf "$context"
mkdir -p "$context/bin"
for exe in agent-runner plugin-host spawn-pause-file dirty-commit no-commit-detector; do
  src="$bin_dir/$exe"
  [ -x "$src" ] || { echo "deploy/build-image.sh: $src is missing: cargo build --profile $profile the workspace's binaries first" >&2; exit 1; }
  cp -l "$src" "$context/bin/$exe" 2>/dev/null || cp "$src" "$context/bin/$exe"
done
"$engine" "${engine_opts[@]}" build --quiet --file "$repo/deploy/Containerfile" \
  --build-arg "BASE=$base" "${build_opts[@]}" --tag "$tag" "$context" >&2
echo "$tag"
