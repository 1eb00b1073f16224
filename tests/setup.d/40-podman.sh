#!/usr/bin/env bash
# The container engine of tests/tests/suite/confinement/container.rs: podman (rootful) with runc (crun
# refuses hybrid cgroup hierarchies), mmdebstrap to build the image's base from Debian's
# packages (deploy/base/build.sh; no image registry), uidmap and catatonit for podman, and
# gVisor's runsc (the image under gVisor: docs/operations.md, "On agent-sandbox").
set -euo pipefail
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
[ -x /usr/bin/runsc ] || missing+=(runsc)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v newuidmap >/dev/null || missing+=(uidmap)
[ -x /usr/libexec/podman/catatonit ] || command -v catatonit >/dev/null || missing+=(catatonit)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "tests/setup.d: missing Debian packages: ${missing[*]} (run as root, or apt-get install them)" >&2
    exit 1
  fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
