"""DESIGN §12: failures never hang. A server process that dies or an HTTP server that goes
away gives every call in flight an error result; the next call reconnects once, then fails
clearly; a server that never answers `initialize` fails `add_server` with a timeout.
Real subprocesses, killed for real."""

from __future__ import annotations

import asyncio
import os
import signal as os_signal
import sys
import time
from pathlib import Path

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import SERVER, HttpTestServer, stdio_server, wait_for_file
from yiemagent import ConfigError
from yiemagent.errors import MCPConnectionError
from yiemagent.mcp import MCPServerHTTP, MCPServerStdio, add_server
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(120)


async def test_a_crash_answers_the_calls_in_flight_and_the_next_call_reconnects(
    markers: Path,
) -> None:
    async with stdio_server(markers) as server:
        store = ToolStore("crash")
        await add_server(store, server)
        first_pid = (markers / "pid").read_text()
        started = time.monotonic()
        sleeping, crashing = await run_calls(
            store, ("sleep", {"tag": "victim"}), ("crash_later", {"seconds": 0.5})
        )
        assert time.monotonic() - started < 15
        for result in (sleeping, crashing):
            assert result.is_error
            assert "closed the connection while" in text(result)
            assert "server process exited" in text(result)
        assert not server.connected
        [again] = await run_calls(store, ("echo", {"text": "back"}))
        assert text(again) == "back"
        assert server.connected
        assert (markers / "pid").read_text() != first_pid  # a new process


async def test_when_reconnecting_fails_the_call_says_so(markers: Path, tmp_path: Path) -> None:
    once = tmp_path / "started-once"
    server = stdio_server(markers, env={"MCP_TEST_START_ONCE": str(once)})
    async with server:
        store = ToolStore("once")
        await add_server(store, server)
        [crashed] = await run_calls(store, ("crash", {}))
        assert crashed.is_error
        started = time.monotonic()
        [refused] = await run_calls(store, ("echo", {"text": "x"}))
        assert time.monotonic() - started < 30
        assert refused.is_error
        message = text(refused)
        assert "is unavailable: it closed the connection" in message
        assert "reconnecting failed" in message


async def test_a_server_that_never_answers_initialize_times_out() -> None:
    server = MCPServerStdio(
        sys.executable, [SERVER, "--never-answer"], name="mute", connect_timeout_s=1.5
    )
    store = ToolStore("mute")
    started = time.monotonic()
    with pytest.raises(MCPConnectionError, match=r"did not answer initialize .* within 1.5 s"):
        await add_server(store, server)
    assert time.monotonic() - started < 20  # the SDK's bounded shutdown included
    assert len(store) == 0
    await server.close()


async def test_close_does_not_wait_out_a_connect_that_hangs() -> None:
    """A user who gives up on a server that never answers (closing the agent, Ctrl-D in
    the chat) is not held for the whole connect timeout."""
    server = MCPServerStdio(
        sys.executable, [SERVER, "--never-answer"], name="mute", connect_timeout_s=60
    )
    connecting = asyncio.ensure_future(add_server(ToolStore("mute"), server))
    await asyncio.sleep(1.0)
    started = time.monotonic()
    await asyncio.wait_for(server.close(), 30)
    assert time.monotonic() - started < 10
    with pytest.raises(MCPConnectionError, match=r'MCP server "mute" was closed while connecting'):
        await asyncio.wait_for(connecting, 10)


async def test_a_command_that_does_not_exist_is_a_clear_error() -> None:
    server = MCPServerStdio("/nonexistent/mcp-server", name="ghost")
    with pytest.raises(MCPConnectionError, match=r'MCP server "ghost": cannot start'):
        await add_server(ToolStore("ghost"), server)
    await server.close()


async def test_an_http_server_that_is_not_there_is_a_clear_error() -> None:
    from tests.mcp.conftest import free_port

    port = free_port()
    server = MCPServerHTTP(f"http://127.0.0.1:{port}/mcp", connect_timeout_s=10)
    with pytest.raises(MCPConnectionError) as raised:
        await add_server(ToolStore("nobody"), server)
    await server.close()
    # as a provider says it (docs/providers.md), not "ConnectError: All connection attempts
    # failed", which does not say that nothing listens there
    assert str(raised.value) == (
        f'MCP server "127.0.0.1:{port}": connection refused, nothing listens at 127.0.0.1:{port}'
    )


async def test_a_password_in_the_url_is_in_no_name_or_error() -> None:
    """openai-agents' tests/mcp/test_server_errors.py: a URL's credentials stay out of
    what the client says. The server's default name was the URL's whole `user:pw@host`,
    so every error, log line and repr about it showed the password."""
    import traceback

    from tests.mcp.conftest import free_port

    port = free_port()
    server = MCPServerHTTP(f"http://user:s3cr3t_pw@127.0.0.1:{port}/mcp", connect_timeout_s=10)
    assert server.name == f"127.0.0.1:{port}"
    with pytest.raises(MCPConnectionError) as raised:
        await add_server(ToolStore("nobody"), server)
    await server.close()
    said = "".join(traceback.format_exception(raised.value)) + repr(server)
    assert "connection refused" in said and "s3cr3t_pw" not in said


async def test_python_in_a_command_is_the_python_running_us(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The README's `MCPServerStdio("python my_server.py")` from a venv that is not
    # activated: the `python` on PATH lacks the MCP SDK. Here it cannot even start.
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'not this python' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    server = MCPServerStdio(f"python {SERVER}", name="test")
    assert server.command == sys.executable
    store = ToolStore("py")
    await add_server(store, server)
    try:
        assert store.get("echo") is not None
    finally:
        await server.close()


def test_bad_configuration_is_refused_at_construction() -> None:
    with pytest.raises(ConfigError, match="needs a command"):
        MCPServerStdio("  ")
    with pytest.raises(ConfigError, match="must be http"):
        MCPServerHTTP("ftp://example.org/mcp")
    with pytest.raises(ConfigError, match="connect_timeout_s"):
        MCPServerStdio("python", connect_timeout_s=0)
    with pytest.raises(ConfigError, match=r"cannot split the command .*No closing quotation"):
        MCPServerStdio('"python server.py')
    with pytest.raises(ConfigError, match="max_message_bytes"):
        MCPServerHTTP("http://127.0.0.1:1/mcp", max_message_bytes=0)


async def test_a_closed_server_answers_calls_with_an_error(markers: Path) -> None:
    server = stdio_server(markers)
    store = ToolStore("closed")
    async with server:
        await add_server(store, server)
    [result] = await run_calls(store, ("echo", {"text": "x"}))
    assert result.is_error and "is not connected" in text(result)


async def test_close_answers_a_call_in_flight(markers: Path) -> None:
    server = stdio_server(markers)
    store = ToolStore("closing")
    await add_server(store, server)
    batch = asyncio.ensure_future(run_calls(store, ("sleep", {"tag": "closing"})))
    await wait_for_file(markers / "closing.started")
    await server.close()
    [result] = await asyncio.wait_for(batch, 15)
    assert result.is_error and "was closed while" in text(result)


async def test_http_server_gone_mid_call_then_back(http_server: HttpTestServer) -> None:
    server = http_server.client(connect_timeout_s=15)
    async with server:
        store = ToolStore("http")
        await add_server(store, server)
        batch = asyncio.ensure_future(run_calls(store, ("sleep", {"tag": "http"})))
        await wait_for_file(http_server.markers / "http.started")
        await asyncio.to_thread(http_server.kill)
        [in_flight] = await asyncio.wait_for(batch, 30)
        assert in_flight.is_error and "closed the connection while" in text(in_flight)
        [gone] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "x"})), 60)
        assert gone.is_error
        assert "reconnecting failed" in text(gone)
        await asyncio.to_thread(http_server.start)  # same port
        [back] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "back"})), 60)
        assert text(back) == "back"


async def test_killing_the_process_from_outside_is_noticed_while_idle(markers: Path) -> None:
    async with stdio_server(markers) as server:
        store = ToolStore("idle")
        await add_server(store, server)
        os.kill(int((markers / "pid").read_text()), os_signal.SIGKILL)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 15
        while server.connected:
            assert loop.time() < deadline
            await asyncio.sleep(0.02)
        [result] = await run_calls(store, ("echo", {"text": "reconnected"}))
        assert text(result) == "reconnected"


async def test_a_frozen_http_server_fails_the_call_within_timeout_s_as_silent(
    http_server: HttpTestServer,
) -> None:
    """SIGSTOP the server mid-call: it neither answers nor closes. The call fails once the
    server has been silent for the client's `timeout_s`, saying it went silent (not that
    it closed the connection); after SIGCONT the next call works."""
    server = http_server.client(connect_timeout_s=15, timeout_s=2.0)
    assert http_server.proc is not None
    async with server:
        store = ToolStore("frozen")
        await add_server(store, server)
        batch = asyncio.ensure_future(run_calls(store, ("sleep", {"seconds": 1, "tag": "frozen"})))
        await wait_for_file(http_server.markers / "frozen.started")
        http_server.proc.send_signal(os_signal.SIGSTOP)
        try:
            started = time.monotonic()
            [frozen] = await asyncio.wait_for(batch, 60)
            waited = time.monotonic() - started
        finally:
            http_server.proc.send_signal(os_signal.SIGCONT)
        assert frozen.is_error
        assert waited < 30  # 2 s of silence, with a wide margin for a loaded machine
        assert "silent" in text(frozen) and "2 s" in text(frozen), text(frozen)
        assert "closed the connection while" not in text(frozen)
        [back] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "back"})), 60)
        assert text(back) == "back"


@pytest.mark.parametrize(
    ("status", "reason", "challenge"),
    [
        (401, "Unauthorized", 'Bearer error="invalid_token", error_description="expired"'),
        (403, "Forbidden", None),
    ],
)
async def test_a_refused_token_says_the_http_status(
    status: int, reason: str, challenge: str | None
) -> None:
    """A gateway in front of an MCP server refuses the token: the error says so (the
    status, and the server's challenge), not only that the server answered an error."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Refuse(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = b'{"error": "invalid_token"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if challenge:
                self.send_header("WWW-Authenticate", challenge)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_DELETE = do_POST

    gateway = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=gateway.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{gateway.server_address[1]}/mcp"
        server = MCPServerHTTP(url, headers={"Authorization": "Bearer old"}, connect_timeout_s=10)
        with pytest.raises(MCPConnectionError) as raised:
            await add_server(ToolStore("refused"), server)
        await server.close()
    finally:
        gateway.shutdown()
        gateway.server_close()
    said = str(raised.value)
    assert f"HTTP {status} {reason}" in said, said
    assert challenge is None or 'error="invalid_token"' in said
    assert "Bearer old" not in said
