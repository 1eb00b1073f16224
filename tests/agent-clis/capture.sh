#!/usr/bin/env bash
# Re-captures the transcript corpus (tests/agent-clis/transcripts/<cli>/<mode>.log and
# .json): each pinned CLI (tests/agent-clis/versions.env, installed by
# tests/setup.d/30-agent-clis.sh) run once per fake-server mode, with its preset's flags,
# in a fresh git repo and a fresh HOME, against tests/agent-clis/fake_model.py on 127.0.0.1.
# No real provider is reached: every base URL points at the fake server, every key is fake.
#
#   bash tests/agent-clis/capture.sh [cli ...]     # default: claude codex gemini aider pi kimi
#
# CAPTURE_MODES (default: all six) picks the modes; gemini also has `auth_method` (the
# server answers normally, but no login method is chosen in its settings: exit 41). aider's own retries take minutes (60 s
# of its back-off plus its client's): CAPTURE_TIMEOUT_S=300 lets them end. gemini's
# `rate_limit_budget` is its `rate_limit` mode cut by CAPTURE_TIMEOUT_S=5 during its own
# retries (renamed by hand): the round the budget ends before gemini gives up.
# The .json beside each log records how the CLI ended (exit_code, timed_out after
# CAPTURE_TIMEOUT_S, default 60) and the CLI's version; supervisor/tests/real_transcripts.rs
# asserts the detectors' decision on every log.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$here/agent-clis.sh"
timeout_s="${CAPTURE_TIMEOUT_S:-60}"
PROMPT="Write the marker file agent-was-here.txt."
modes=(${CAPTURE_MODES:-normal rate_limit overloaded auth retry_once refused})
clis=("$@")
[ "${#clis[@]}" -gt 0 ] || clis=(claude codex gemini aider pi kimi)

capture_one() { # cli mode
  local cli=$1 mode=$2 scratch port pid=
  scratch=$(mktemp -d)
  mkdir -p "$scratch/home" "$scratch/proj"
  git -C "$scratch/proj" init -q
  git -C "$scratch/proj" -c user.name=t -c user.email=t@t commit -q --allow-empty -m init
  local server_mode=$mode
  [ "$mode" = auth_method ] && server_mode=normal
  if [ "$mode" = refused ]; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  else
    python3 "$here/fake_model.py" --mode "$server_mode" >"$scratch/port" &
    pid=$!
    for _ in $(seq 50); do [ -s "$scratch/port" ] && break; sleep 0.1; done
    port=$(awk '{print $2}' "$scratch/port")
  fi
  local start end code=0 timed_out=false env=() stdin=/dev/null
  mapfile -t env < <(agent_cli_env "$cli" "$scratch/home" "$port")
  [ "$mode" = auth_method ] && agent_cli_unselect_auth "$cli" "$scratch/home"
  local cmd=("$(agent_cli_bin "$cli")")
  read -r -a args <<<"$(agent_cli_args "$cli")"
  cmd+=("${args[@]}")
  # claude reads the prompt on stdin (its preset's prompt_delivery); the others in argv.
  if [ "$cli" = claude ]; then stdin="$scratch/prompt"; else cmd+=("$PROMPT"); fi
  printf '%s\n' "$PROMPT" >"$scratch/prompt"
  start=$(date +%s.%N)
  (cd "$scratch/proj" && env "${env[@]}" timeout -k 5 "$timeout_s" "${cmd[@]}" \
     <"$stdin" >"$scratch/out" 2>&1) || code=$?
  end=$(date +%s.%N)
  [ "$code" = 124 ] && timed_out=true
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  local dest="$here/transcripts/$cli"
  mkdir -p "$dest"
  # The scratch paths and the ephemeral port vary per run; the corpus names them stably.
  sed -e "s#$scratch#/SCRATCH#g" -e "s#$AGENT_CLIS_DIR#/AGENT_CLIS#g" -e "s#127.0.0.1:$port#127.0.0.1:PORT#g" "$scratch/out" >"$dest/$mode.log"
  local changed=false
  [ -e "$scratch/proj/agent-was-here.txt" ] && changed=true
  printf '{"cli": "%s", "version": "%s", "mode": "%s", "exit_code": %s, "timed_out": %s, "duration_s": %.1f, "tree_changed": %s}\n' \
    "$cli" "$(agent_cli_version "$cli")" "$mode" "$([ "$timed_out" = true ] && echo null || echo "$code")" \
    "$timed_out" "$(python3 -c "print($end - $start)")" "$changed" >"$dest/$mode.json"
  echo "$cli $mode: $(cat "$dest/$mode.json")"
  rm -rf "$scratch"
}

for cli in "${clis[@]}"; do
  for mode in "${modes[@]}"; do
    capture_one "$cli" "$mode" &
  done
done
wait
