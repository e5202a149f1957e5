"""A real Ray cluster for the tests of the Ray backend (the batch's and the evals'): the
module-scoped fixture `cluster` runs `ray start --head --block` on 127.0.0.1 (2 CPUs, no
dashboard, no usage stats, token auth with a token of this test run) and stops its process
group at the end of the module."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).parent / "ray"


def python_path() -> str:
    """The workers' `PYTHONPATH`: the repository (for `tests.*` factories) before the
    caller's own (a worktree's `src` ahead of an installed copy)."""
    given = os.environ.get("PYTHONPATH")
    return os.pathsep.join([str(ROOT), given] if given else [str(ROOT)])


CLUSTER_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    # Ray resolves 127.0.0.1 to the machine's public address unless told it is one machine
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    # token auth with a token of this test run only (not ~/.ray/auth_token)
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN": secrets.token_hex(32),
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_port(port: int, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, "ray start exited"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError("the Ray head did not start in time")


@contextlib.contextmanager
def ray_head(env: dict[str, str], cwd: Path) -> Iterator[str]:
    """`ray start --head --block` on 127.0.0.1 (2 CPUs) with exactly `env`; yields its
    address and stops its process group after."""
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="yray")  # short: Ray's socket paths have a length limit
    head = subprocess.Popen(
        [
            str(RAY),
            "start",
            "--head",
            "--block",
            "--node-ip-address",
            "127.0.0.1",
            "--port",
            str(port),
            "--num-cpus",
            "2",
            "--include-dashboard=false",
            "--disable-usage-stats",
            "--temp-dir",
            temp,
        ],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_port(port, head, 120)
        time.sleep(2)  # the raylet registers after the GCS listens
        yield f"127.0.0.1:{port}"
    finally:
        with_group = os.getpgid(head.pid)
        head.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(with_group, signal.SIGKILL)  # what --block's cleanup left behind
        head.wait(30)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """The address of a 2-CPU Ray cluster on 127.0.0.1, stopped (its process group) after."""
    saved = {key: os.environ.get(key) for key in CLUSTER_ENV}
    os.environ.update(CLUSTER_ENV)  # the driver (this process) must agree on 127.0.0.1
    try:
        with ray_head({**os.environ, **CLUSTER_ENV, "PYTHONPATH": python_path()}, ROOT) as address:
            yield address
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
