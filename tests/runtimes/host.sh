#!/bin/sh
# The runtime matrix's host in POSIX sh (tests/tests/suite/functional/runtimes.rs): spawn hook `gate`
# (defer 1 s the first time it is asked, then proceed) and dirty handler `wip` (commit everything, "wip <runtime>: round N").
# Protocol: docs/protocol.md. A confined host cannot start other programs, so requests are
# parsed with parameter expansion only (ids and round numbers are integers, methods have
# no quotes inside).
RT=sh
field() { # field KEY: the raw value after "KEY": in $line, up to the next , or }
  rest=${line#*\"$1\":}
  rest=${rest#\"}
  rest=${rest%%[\",\}]*}
}
while IFS= read -r line; do
  field id; id=$rest
  field method; method=$rest
  case "$method" in
    initialize)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocol_version":1,"name":"runtime-%s","version":"0.1.0","hooks":[{"family":"spawn_hook","name":"gate"},{"family":"dirty_handler","name":"wip","priority":10}]}}\n' "$id" "$RT" ;;
    spawn_hook/before_spawn)
      if [ -z "$asked" ]; then
        asked=1
        printf '{"jsonrpc":"2.0","id":%s,"result":{"action":"defer","defer_s":1,"reason":"%s"}}\n' "$id" "$RT"
      else
        printf '{"jsonrpc":"2.0","id":%s,"result":{"action":"proceed"}}\n' "$id"
      fi ;;
    dirty_handler/handle_dirty)
      field round_num; round=$rest
      printf '{"jsonrpc":"2.0","id":%s,"result":{"action":"commit","message":"wip %s: round %s"}}\n' "$id" "$RT" "$round" ;;
    shutdown)
      printf '{"jsonrpc":"2.0","id":%s,"result":null}\n' "$id" ;;
    *)
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found: %s"}}\n' "$id" "$method" ;;
  esac
done
