"""Our stand-in for the reference system's tests/e2e/conftest.py (docs/reference-system.md,
"The compatibility suite").

The reference's end-to-end tests drive its CLI on a remote machine through `ssh` and `scp`.
This file gives them the same fixtures and helpers, but the "remote machine" is this one:
`_ssh(cmd)` runs `cmd` in a local bash with HOME set to a private directory, and the binary
under test is the one named by AR_COMPAT_BIN (our build or a reference venv's
`agent-runner`). Each test's outcome is written, as JSON, to AR_COMPAT_RESULTS so the Rust
test (tests/tests/suite/reference/reference_suite.rs) can compare it to the list of expected failures.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

BIN = os.environ["AR_COMPAT_BIN"]
RESULTS = os.environ["AR_COMPAT_RESULTS"]
HOME = tempfile.mkdtemp(prefix="ar-compat-home-")
# The reference's test machine runs a user systemd; this one need not. A `systemctl` that
# answers "running" and logs its arguments stands in for it (the install test checks only
# the unit files written under ~/.config/systemd/user), and real systemd is never touched.
SHIM_DIR = Path(HOME) / "bin"
SHIM_DIR.mkdir()
(SHIM_DIR / "systemctl").write_text(
    '#!/bin/sh\necho "$*" >> "$HOME/systemctl.log"\n'
    'case "$*" in *is-system-running*) echo running ;; *is-active*) echo inactive; exit 3 ;; esac\n'
)
(SHIM_DIR / "systemctl").chmod(0o755)
(Path(HOME) / "run").mkdir(mode=0o700)
_outcomes: dict[str, str] = {}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["HOME"] = HOME
    env["PATH"] = f"{SHIM_DIR}:{env.get('PATH', '/usr/bin:/bin')}"
    env["XDG_RUNTIME_DIR"] = f"{HOME}/run"
    for key in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        env.pop(key, None)
    env.pop("AR_COMPAT_RESULTS", None)
    return env


def _run_cmd(argv: list[str], *, check: bool = True, timeout: int = 120):
    return subprocess.run(
        argv, capture_output=True, text=True, check=check, timeout=timeout, env=_env()
    )


def _ssh(cmd: str, check: bool = True, timeout: int = 120) -> subprocess.CompletedProcess:
    """What `ssh pi CMD` did: CMD in a shell on the test machine (here: this one)."""
    return _run_cmd(["bash", "-c", cmd], check=check, timeout=timeout)


def _local_sh(cmd: str, check: bool = True, timeout: int = 120) -> subprocess.CompletedProcess:
    return _run_cmd(["sh", "-c", cmd], check=check, timeout=timeout)


def _scp(src: str, dst: str) -> None:
    shutil.copy(src, dst)


def _b64(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def _write(path: str, text: str) -> None:
    Path(path).write_text(text)


@pytest.fixture(scope="session")
def pi_session() -> Iterator[None]:
    yield
    shutil.rmtree(HOME, ignore_errors=True)


@pytest.fixture
def pi_workdir(pi_session) -> Iterator[str]:
    """A fresh git repository with one commit, under /tmp, removed afterwards."""
    workdir = f"/tmp/agent-runner-e2e-{uuid.uuid4().hex[:8]}"
    _ssh(
        f"mkdir -p {workdir} && cd {workdir} && git init -q -b main && "
        "git config user.email t@t.com && git config user.name t && "
        "git config commit.gpgsign false && echo init > README.md && "
        "git add . && git commit -q -m init"
    )
    try:
        yield workdir
    finally:
        # A test that leaves a supervisor running (a killed wrapper) must not leak it.
        _ssh(f"pkill -TERM -f -- '--config {workdir}/' ; sleep 0.2; rm -rf {workdir}", check=False)


@pytest.fixture
def pi_fake_agent(pi_workdir: str) -> str:
    """The fake agent the reference's tests expect: FAKE_AGENT_BEHAVIOR = succeed | dirty |
    hang | crash."""
    path = f"{pi_workdir}/fake-agent.sh"
    _write(
        path,
        "#!/usr/bin/env bash\n"
        'echo "fake agent" >&2\n'
        'case "${FAKE_AGENT_BEHAVIOR:-succeed}" in\n'
        "  succeed) exit 0 ;;\n"
        '  dirty) echo x > "$WORK_DIR/dirty.txt"; exit 0 ;;\n'
        "  hang) sleep 9999 ;;\n"
        "  crash) exit 137 ;;\n"
        "esac\n",
    )
    os.chmod(path, 0o755)
    return path


@pytest.fixture(scope="session")
def _pi_install_pkg_dir(pi_session) -> str:
    """The directory whose .venv/bin holds the binary under test (a reference venv); for our
    binary, its directory's parent stands in."""
    return str(Path(BIN).resolve().parent.parent.parent)


@pytest.fixture
def pi_install_agent_runner(_pi_install_pkg_dir: str) -> str:
    return BIN


@pytest.fixture
def pi_config(pi_workdir: str, pi_fake_agent: str) -> str:
    """agent-runner.toml pointing at the fake agent, as the reference's fixture writes it
    (a 900-byte prompt, a 10 s round budget, logs/ ignored by git), plus `schema_version = 1`:
    the reference's own fixture predates the schema gate its 0.3.0 added, so without it every
    test fails with exit 78 against the reference itself."""
    cfg = f"{pi_workdir}/agent-runner.toml"
    prompt = f"{pi_workdir}/p.md"
    _write(prompt, "Test prompt body. " * 50)
    _write(
        cfg,
        "schema_version = 1\n"
        "[agent]\n"
        f'command = ["{pi_fake_agent}"]\n'
        'prompt_arg_template = ["{prompt}"]\n'
        "[runtime]\n"
        f'work_dir = "{pi_workdir}"\n'
        f'log_dir = "{pi_workdir}/logs"\n'
        "round_budget_s = 10\n"
        "[prompt]\n"
        f'file = "{prompt}"\n',
    )
    _write(f"{pi_workdir}/.gitignore", "logs/\n")
    _ssh(f"cd {pi_workdir} && git add . && git -c commit.gpgsign=false commit -q -m fixture")
    return cfg


def pytest_runtest_logreport(report) -> None:
    """Keeps each test's outcome: failed if any phase failed, else skipped or passed."""
    prev = _outcomes.get(report.nodeid)
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif report.skipped and prev != "failed":
        _outcomes[report.nodeid] = "skipped"
    elif report.when == "call" and report.passed and prev is None:
        _outcomes[report.nodeid] = "passed"


def pytest_sessionfinish(session, exitstatus) -> None:
    Path(RESULTS).write_text(json.dumps(_outcomes, indent=1, sort_keys=True))
