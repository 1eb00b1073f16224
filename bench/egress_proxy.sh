#!/usr/bin/env bash
# The cost of egress by host name (docs/security.md, "Egress by host name"):
#  1. per round: `agent-runner round` with a trivial agent (`true`) with and without
#     `[agent.sandbox] allow_hosts` (the network namespace, the forwarder, the proxy's
#     thread), medians of RUNS rounds;
#  2. per connection: one agent process opening CONNS connections one after another to a
#     small HTTP server on 127.0.0.2, each with one request and its answer read to the end:
#     through the proxy (CONNECT, then the request) inside the namespace, and directly
#     without `allow_hosts`; the median per connection.
# Traffic stays on this machine (127.0.0.2). Uses the release build unless AR_BIN names a
# binary. Usage: bench/egress_proxy.sh [RUNS] [CONNS]   (default 30 500)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-30}"
conns="${2:-500}"
if [ -z "${AR_BIN:-}" ]; then
  cargo build --release --quiet -p agent-runner
  AR_BIN="$PWD/target/release/agent-runner"
fi
work="$(mktemp -d)"
XDG_STATE_HOME="$(mktemp -d)"
export XDG_STATE_HOME
upstream_pid=
trap 'kill $upstream_pid 2>/dev/null || true; rm -rf "$work" "$XDG_STATE_HOME"' EXIT

# The upstream: answers every request with 2 bytes and closes.
python3 - "$work/port" <<'PY' &
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a): pass
s = ThreadingHTTPServer(("127.0.0.2", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
upstream_pid=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")

# The agent of part 2: CONNS connections, the median per connection in microseconds.
cat > "$work/conns.py" <<'PY'
import os, socket, statistics, time
n, up = int(os.environ["CONNS"]), int(os.environ["UP"])
proxied = bool(os.environ.get("HTTP_PROXY"))
def read_to(s, end):
    buf = b""
    while end not in buf:
        chunk = s.recv(4096)
        if not chunk: break
        buf += chunk
    return buf
def one():
    if proxied:
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(b"CONNECT 127.0.0.2:%d HTTP/1.1\r\n\r\n" % up)
        assert b" 200 " in read_to(s, b"\r\n\r\n")
    else:
        s = socket.create_connection(("127.0.0.2", up))
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    assert read_to(s, b"\n\r\nok").endswith(b"ok")
    s.close()
times = []
for _ in range(n):
    t0 = time.perf_counter_ns(); one(); times.append(time.perf_counter_ns() - t0)
print("per_connection_us", int(statistics.median(times) // 1000))
PY

cd "$work"
git init -q . && git config user.email b@b && git config user.name bench
mkdir prompts && echo "Do nothing." > prompts/main.md
printf '/logs/\n' > .gitignore
config() { # COMMAND-TOML-LIST EGRESS(0/1)
  cat <<TOML
schema_version = 1
[agent]
command = $1
prompt_arg_template = ["{prompt}"]
[agent.env]
CONNS = "$conns"
UP = "$port"
TOML
  [ "$2" = 1 ] && printf '[agent.sandbox]\nallow_hosts = ["127.0.0.2:%s"]\n' "$port"
  cat <<TOML
[runtime]
log_dir = "./logs"
[prompt]
file = "./prompts/main.md"
[monitor.host_health.disk]
critical_pct = 100
[vcs]
dirty_action = "ignore"
TOML
}
git add -A && git commit -qm init

median_us() {
  local times=()
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
ms() { awk -v us="$1" 'BEGIN {printf "%.1f ms", us / 1000}'; }

config '["true"]' 0 > agent-runner.toml
"$AR_BIN" round >/dev/null 2>&1
plain=$(median_us "$AR_BIN" round)
config '["true"]' 1 > agent-runner.toml
"$AR_BIN" round >/dev/null 2>&1
egress=$(median_us "$AR_BIN" round)
echo "round, trivial agent: $(ms "$plain") without allow_hosts, $(ms "$egress") with (+$(ms $((egress - plain)))), medians of $runs"

last_log() { ls -t logs/rounds/*.log | head -1; }
config "[\"python3\", \"$work/conns.py\"]" 0 > agent-runner.toml
"$AR_BIN" round >/dev/null 2>&1
direct=$(awk '/per_connection_us/ {print $2}' "$(last_log)")
config "[\"python3\", \"$work/conns.py\"]" 1 > agent-runner.toml
"$AR_BIN" round >/dev/null 2>&1
proxied=$(awk '/per_connection_us/ {print $2}' "$(last_log)")
echo "connection + one request, median of $conns: ${direct} us direct, ${proxied} us through the proxy (+$((proxied - direct)) us)"
