#!/usr/bin/env bash
# The upstream (corporate) proxy the egress proxy is tested through (tests/tests/suite/confinement/agent_egress.rs,
# "through an upstream proxy"): Debian's tinyproxy. Each test starts its own instance on a port
# of its own with a config it writes; the package's system service is not used. Idempotent.
set -euo pipefail
if command -v tinyproxy >/dev/null || [ -x /usr/bin/tinyproxy ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "tests/setup.d: missing Debian package: tinyproxy (run as root, or apt-get install it)" >&2
  exit 1
fi
apt-get update -qq
# policy-rc.d 101: the package's service is not started (the tests run their own instance).
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made_policy=1
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tinyproxy || status=$?
[ -n "$made_policy" ] && rm -f "$policy"
exit "${status:-0}"
