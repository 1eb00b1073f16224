#!/usr/bin/env ruby
# The runtime matrix's host in Ruby (tests/tests/suite/functional/runtimes.rs): spawn hook `gate` (defer 1 s the
# first time it is asked, then proceed)
# and dirty handler `wip` (commit everything, "wip ruby: round N"), by hand over
# newline-delimited JSON-RPC 2.0 on stdio (docs/protocol.md). Standard library only.
require "json"

$stdout.sync = true
$asked = false
def answer(req)
  case req["method"]
  when "initialize"
    { protocol_version: 1, name: "runtime-ruby", version: "0.1.0",
      hooks: [{ family: "spawn_hook", name: "gate" },
              { family: "dirty_handler", name: "wip", priority: 10 }] }
  when "spawn_hook/before_spawn"
    if $asked
      { action: "proceed" }
    else
      $asked = true
      { action: "defer", defer_s: 1, reason: "ruby" }
    end
  when "dirty_handler/handle_dirty"
    { action: "commit", message: "wip ruby: round #{req['params']['ctx']['round_num']}" }
  when "shutdown" then nil
  else raise KeyError, req["method"].to_s
  end
end

$stdin.each_line do |line|
  req = JSON.parse(line)
  reply = begin
    { jsonrpc: "2.0", id: req["id"], result: answer(req) }
  rescue KeyError => e
    { jsonrpc: "2.0", id: req["id"], error: { code: -32601, message: "method not found: #{e.message}" } }
  end
  $stdout.write(JSON.generate(reply) + "\n")
end
