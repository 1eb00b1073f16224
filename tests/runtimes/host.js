#!/usr/bin/env node
// The runtime matrix's host in Node (tests/tests/suite/functional/runtimes.rs): spawn hook `gate` (defer 1 s
// the first time it is asked, then proceed)
// and dirty handler `wip` (commit everything, "wip node: round N"), by hand over
// newline-delimited JSON-RPC 2.0 on stdio (docs/protocol.md). No dependencies.
"use strict";
const readline = require("readline");
let asked = false;

function answer(req) {
  const params = req.params || {};
  switch (req.method) {
    case "initialize":
      return { protocol_version: 1, name: "runtime-node", version: "0.1.0",
        hooks: [{ family: "spawn_hook", name: "gate" },
          { family: "dirty_handler", name: "wip", priority: 10 }] };
    case "spawn_hook/before_spawn":
      if (!asked) {
        asked = true;
        return { action: "defer", defer_s: 1, reason: "node" };
      }
      return { action: "proceed" };
    case "dirty_handler/handle_dirty":
      return { action: "commit", message: `wip node: round ${params.ctx.round_num}` };
    case "shutdown":
      return null;
    default:
      throw new Error(req.method);
  }
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const req = JSON.parse(line);
  let reply;
  try {
    reply = { jsonrpc: "2.0", id: req.id, result: answer(req) };
  } catch (e) {
    reply = { jsonrpc: "2.0", id: req.id,
      error: { code: -32601, message: `method not found: ${e.message}` } };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
