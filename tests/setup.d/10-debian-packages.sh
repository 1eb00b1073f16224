#!/usr/bin/env bash
# Debian packages the tests need, installed together when missing: the runtime matrix
# (tests/tests/suite/functional/runtimes.rs) runs a host in node, perl, ruby and a venv; the live page's
# browser test needs headless Chromium and the ssh relay's test a local sshd; the
# unprivileged test user (tests/src/unprivileged.rs) is made with useradd; the unit
# `install` writes is checked with systemd-analyze (tests/tests/suite/functional/operator_install.rs); the
# hostile suite's filesystem-wide attacks run on a loop-mounted ext4 image (mkfs.ext4, mount).
set -euo pipefail
missing=()
command -v git >/dev/null || missing+=(git)
command -v node >/dev/null || missing+=(nodejs)
command -v perl >/dev/null || missing+=(perl)
command -v ruby >/dev/null || missing+=(ruby)
/usr/bin/python3 -m venv --help >/dev/null 2>&1 || missing+=(python3-venv)
command -v chromium >/dev/null || missing+=(chromium)
command -v sshd >/dev/null || [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh >/dev/null || missing+=(openssh-client)
command -v useradd >/dev/null || missing+=(passwd)
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v mkfs.ext4 >/dev/null || [ -x /usr/sbin/mkfs.ext4 ] || missing+=(e2fsprogs)
command -v mount >/dev/null || missing+=(mount)
command -v strace >/dev/null || missing+=(strace)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "tests/setup.d: missing Debian packages: ${missing[*]} (run as root, or apt-get install them)" >&2
    exit 1
  fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
