"""`yiem serve` while the embedded model loads answers every request 503; a client that went
away before its answer was written (it reset the connection: a health check given up, a
browser tab closed) made the server print socketserver's "Exception occurred during
processing of request" and a ConnectionResetError or BrokenPipeError traceback on stderr,
once per such client. Now such a client is nothing to report; the server goes on answering."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import pytest

from tests._slow_load import slow_load_script
from tests.serve.test_cli import free_port

pytestmark = pytest.mark.timeout(120)


def _reset_after_asking(port: int) -> None:
    """Send a request on a new connection, then reset it at once (SO_LINGER 0)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_clients_gone_while_the_model_loads_print_no_traceback(tmp_path: Path) -> None:
    script = slow_load_script(tmp_path, resolving="yiemagent.cli.serve", announce=True)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), "serve", "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stderr is not None
        while (line := proc.stderr.readline()) and line.strip() != "loading":
            pass
        assert line.strip() == "loading"
        for _ in range(20):
            _reset_after_asking(port)
        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30)
        assert health.status_code == 503, health.text
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert err.strip() == "yiem: terminated", err
