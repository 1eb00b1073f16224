#!/usr/bin/env bash
# Builds the image's base from Debian's packages, with no image registry: a minimal Debian
# root made by mmdebstrap (bookworm, the `apt` variant, the packages of deploy/base/packages,
# documentation and locales left out), written as a tarball and imported into the engine as
# localhost/agent-runner-base:<key>. <key> is the first 16 hex digits of the sha256 of the
# suite and the package list, so a second run with the same list reuses the tarball (and
# the image, when the engine still has it) and takes a second or two.
#
# Usage: deploy/base/build.sh [CACHE_DIR]   (default: target/container, from the repo root)
# Env:   ENGINE (default podman; extra engine options in ENGINE_OPTS, word-split),
#        SUITE (default bookworm), MIRROR (default: mmdebstrap's, deb.debian.org).
# Prints the image name on stdout. Needs root (or mmdebstrap's unshare mode) and
# mmdebstrap (Debian package mmdebstrap).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${1:-$here/../../target/container}"
engine="${ENGINE:-podman}"
suite="${SUITE:-bookworm}"
read -r -a engine_opts <<<"${ENGINE_OPTS:-}"
packages="$(grep -v '^\s*#' "$here/packages" | xargs | tr ' ' ',')"
key="$(printf '%s\n%s\n' "$suite" "$packages" | sha256sum | cut -c1-16)"
image="localhost/agent-runner-base:$key"
tarball="$cache/base-$key.tar"
mkdir -p "$cache"
if ! "$engine" "${engine_opts[@]}" image exists "$image" 2>/dev/null; then
  if [ ! -s "$tarball" ]; then
    command -v mmdebstrap >/dev/null || { echo "deploy/base/build.sh: mmdebstrap is missing (apt-get install mmdebstrap, or run tests/setup.sh)" >&2; exit 1; }
    mmdebstrap --quiet --variant=apt --format=tar --include="$packages" \
      --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/doc/*' \
      --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/locale/*' \
      --dpkgopt='path-exclude=/usr/share/info/*' \
      "$suite" "$tarball.part" ${MIRROR:+"$MIRROR"} >&2
    mv "$tarball.part" "$tarball"
  fi
  "$engine" "${engine_opts[@]}" import --quiet "$tarball" "$image" >/dev/null
fi
echo "$image"
