#!/usr/bin/env bash
# The manifest validator of tests/tests/suite/functional/kube_manifests.rs: PyPI's kubernetes-validate (the
# schemas of a Kubernetes release, checked with --strict), pinned, in a venv of its own
# under target/kubernetes-validate/ (never committed). PyYAML comes with it; kube_manifests.rs
# and job_exits.rs also read the manifests with it. A venv already prepared (its `ready`
# file names the version) is left alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VERSION=1.37.0
dest=target/kubernetes-validate
[ -f "$dest/ready" ] && grep -qx "$VERSION" "$dest/ready" && exit 0
rm -rf "$dest"
/usr/bin/python3 -m venv "$dest/venv"
"$dest/venv/bin/pip" -q --disable-pip-version-check install "kubernetes-validate==$VERSION"
echo "$VERSION" >"$dest/ready"
