"""Fixtures for the MCP tests (DESIGN §12): the SDK test server as a real subprocess, over
stdio and over streamable HTTP on 127.0.0.1. No protocol mocks."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from yiemagent.mcp import MCPServer, MCPServerHTTP, MCPServerStdio

HERE = Path(__file__).resolve().parent
SERVER = str(HERE / "mcp_test_server.py")
SERVE_TOOLS = str(HERE / "serve_tools")


def stdio_server(markers: Path | None = None, **kwargs: object) -> MCPServerStdio:
    """The test server over stdio; `markers` collects the files it writes."""
    env = {"MCP_TEST_MARKERS": str(markers)} if markers is not None else {}
    env.update(kwargs.pop("env", {}))  # type: ignore[call-overload]
    return MCPServerStdio(sys.executable, [SERVER], env=env, name="test", **kwargs)  # type: ignore[arg-type]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    # 60 s: the SDK server imports for seconds, longer beside CPU hogs (a bound, not a budget)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


class HttpTestServer:
    """The test server as a streamable-HTTP subprocess that a test can kill and restart."""

    def __init__(self, markers: Path) -> None:
        self.port = free_port()
        self.markers = markers
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "MCP_TEST_MARKERS": str(self.markers)}
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, "--http", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.proc)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def client(self, **kwargs: object) -> MCPServerHTTP:
        return MCPServerHTTP(self.url, name="test-http", **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


@pytest.fixture
def http_server(markers: Path) -> Iterator[HttpTestServer]:
    server = HttpTestServer(markers)
    server.start()
    try:
        yield server
    finally:
        server.kill()


def open_test_server(transport: str, markers: Path) -> tuple[MCPServer, HttpTestServer | None]:
    """The test server as a client of `transport` ("stdio" or "http"), not yet connected,
    with the HTTP subprocess it talks to (started and listening; blocks up to 60 s), or
    None for stdio, whose subprocess the client starts itself on connecting."""
    if transport == "stdio":
        return stdio_server(markers), None
    http = HttpTestServer(markers)
    http.start()
    return http.client(), http


@pytest.fixture(params=["stdio", "http"])
async def server(request: pytest.FixtureRequest, markers: Path) -> AsyncIterator[MCPServer]:
    """The test server connected over stdio, then over streamable HTTP; closed, and its HTTP
    subprocess killed, after the test."""
    srv, http = await asyncio.to_thread(open_test_server, str(request.param), markers)
    try:
        async with srv:
            yield srv
    finally:
        if http is not None:
            http.kill()


def read_if_exists(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


async def wait_for_file(path: Path, timeout_s: float = 20.0) -> str:
    """The file's text once it exists (the server writes it); fails after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while (found := read_if_exists(path)) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} was not written within {timeout_s} s")
        await asyncio.sleep(0.02)
    return found
