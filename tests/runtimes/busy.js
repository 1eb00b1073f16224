// The busy prologue of the runtime matrix's `node_busy` row (tests/tests/suite/functional/runtimes.rs), run
// before the host answers anything: ordinary work a Node host may do under the seccomp
// allow-list (docs/security.md "The seccomp allow-list"): files and directories in TMPDIR,
// zlib, crypto, a child process, then asynchronous file I/O (libuv's thread pool) and a
// timer; an asynchronous failure ends the host with status 70. (No worker thread: a V8
// isolate needs more than the default memory_max_mb of address space, see
// docs/protocol.md "Runtimes".)
(() => {
  const fs = require("fs");
  const os = require("os");
  const path = require("path");
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "busy-"));
  fs.mkdirSync(path.join(d, "a", "b"), { recursive: true });
  fs.renameSync(path.join(d, "a"), path.join(d, "c"));
  fs.writeFileSync(path.join(d, "c", "f"), "x");
  const fd = fs.openSync(path.join(d, "c", "f"), "r+");
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  require("zlib").gzipSync(Buffer.alloc(1 << 16));
  require("crypto").randomBytes(64);
  const child = require("child_process").spawnSync(process.execPath, ["-e", "console.log(3)"]);
  if (String(child.stdout).trim() !== "3") {
    throw new Error("child: " + JSON.stringify(child));
  }
  const file = path.join(d, "p");
  fs.promises.writeFile(file, "y")
    .then(() => fs.promises.readFile(file, "utf8"))
    .then((y) => new Promise((ok) => setTimeout(() => ok(y), 10)))
    .then((y) => {
      if (y !== "y") throw new Error("read back " + y);
      return fs.promises.rm(d, { recursive: true });
    })
    .catch((e) => {
      process.stderr.write("busy: " + e + "\n");
      process.exit(70);
    });
})();
