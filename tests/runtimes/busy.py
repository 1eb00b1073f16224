# The busy prologue of the runtime matrix's `python_busy` row (tests/tests/suite/functional/runtimes.rs),
# run before the host answers anything: ordinary standard-library work a host may do,
# under the seccomp allow-list (docs/security.md "The seccomp allow-list"): SQLite, files
# and directories in TMPDIR, a thread pool, asyncio with a subprocess, subprocess, random.
import asyncio
import concurrent.futures
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time


def busy():
    d = tempfile.mkdtemp()
    db = sqlite3.connect(os.path.join(d, "state.db"))
    if os.geteuid() == 0:
        # As root SQLite fchown()s its journal to the database's owner, a metadata call
        # the sandbox kills (docs/protocol.md "Runtimes"): keep the journal in memory.
        db.execute("pragma journal_mode=memory")
    db.execute("create table t (x)")
    db.executemany("insert into t values (?)", [(i,) for i in range(100)])
    db.commit()
    assert db.execute("select count(*) from t").fetchone() == (100,)
    db.close()
    os.makedirs(os.path.join(d, "a", "b"))
    os.rename(os.path.join(d, "a"), os.path.join(d, "c"))
    with open(os.path.join(d, "c", "f"), "w") as f:
        f.write("x")
        f.flush()
        os.fsync(f.fileno())
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        list(ex.map(lambda i: hashlib.sha256(b"x" * i).hexdigest(), range(50)))
    t = threading.Thread(target=time.sleep, args=(0.01,))
    t.start()
    t.join()

    async def child():
        await asyncio.sleep(0.01)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "print(1)", stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        assert out.strip() == b"1", out

    asyncio.run(child())
    out = subprocess.run([sys.executable, "-c", "print(2)"], capture_output=True, check=True)
    assert out.stdout.strip() == b"2", out
    os.urandom(64)
    os.cpu_count()
    shutil.rmtree(d)


busy()
