"""A stdio MCP server bounds a call's silence with `timeout_s`, as an HTTP one does
(DESIGN §12, docs/mcp.md): a tool stuck for good fails the call once the server has said
nothing about it for `timeout_s`, the server is told the call is cancelled, and the same
process serves the next call. Progress notifications count as the server speaking, so a
long call that reports progress goes on."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import stdio_server, wait_for_file
from yiemagent.errors import ConfigError
from yiemagent.mcp import MCPServerHTTP, MCPServerStdio, add_server
from yiemagent.tools import ToolStore
from yiemagent.types import AgentEvent, ToolExecutionUpdateEvent

pytestmark = pytest.mark.timeout(120)

HEARTBEAT = str(Path(__file__).resolve().parent / "mcp_heartbeat_server.py")
TIMEOUT_S = 2.0


async def test_a_tool_that_never_answers_fails_as_silent_and_is_cancelled(
    tmp_path: Path,
) -> None:
    """`sleep` waits an hour: without a bound the call, and the run, waited with it."""
    server = stdio_server(tmp_path, connect_timeout_s=30, timeout_s=TIMEOUT_S)
    async with server:
        store = ToolStore("stuck")
        await add_server(store, server)
        [stuck] = await run_calls(store, ("sleep", {"tag": "stuck"}))
        assert stuck.is_error
        assert text(stuck) == (
            'MCP server "test" went silent while "sleep" was running: nothing came for '
            "2 s (its timeout_s); it neither answered nor closed the connection"
        )
        await wait_for_file(tmp_path / "stuck.cancelled")
        [after] = await run_calls(store, ("echo", {"text": "still here"}))
        assert (text(after), after.is_error) == ("still here", False)
        assert server.connected


async def test_progress_more_often_than_the_timeout_keeps_a_stdio_call_going() -> None:
    server = MCPServerStdio(sys.executable, [HEARTBEAT], name="heartbeat", timeout_s=TIMEOUT_S)
    events: list[AgentEvent] = []
    async with server:
        store = ToolStore("heartbeat")
        await add_server(store, server)
        arguments = {"steps": 6, "every": TIMEOUT_S / 2}
        [done] = await run_calls(store, ("slow_progress", arguments), events=events)
        assert (text(done), done.is_error) == ("done", False)
        assert len([e for e in events if isinstance(e, ToolExecutionUpdateEvent)]) == 6
        arguments = {"steps": 1, "every": 0.1, "then_wait": TIMEOUT_S * 3}
        [silent] = await run_calls(store, ("slow_progress", arguments))
        assert silent.is_error and "went silent" in text(silent)


@pytest.mark.parametrize(
    "make",
    [
        lambda timeout_s: MCPServerStdio("python server.py", timeout_s=timeout_s),
        # it was taken, and every request then timed out at once, read as a server that
        # does not answer
        lambda timeout_s: MCPServerHTTP("http://127.0.0.1:9/mcp", timeout_s=timeout_s),
    ],
    ids=["stdio", "http"],
)
@given(timeout_s=st.floats(max_value=0) | st.just(float("nan")))
def test_a_timeout_that_is_not_positive_is_refused(
    make: Callable[[float], object], timeout_s: float
) -> None:
    with pytest.raises(ConfigError, match=r"^timeout_s must be > 0 seconds, not "):
        make(timeout_s)


@pytest.mark.parametrize(
    "make",
    [
        lambda **options: MCPServerStdio("python server.py", **options),
        lambda **options: MCPServerHTTP("http://127.0.0.1:9/mcp", **options),
    ],
    ids=["stdio", "http"],
)
@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("timeout_s", "30", "timeout_s must be > 0 seconds, not '30'"),
        ("timeout_s", None, "timeout_s must be > 0 seconds, not None"),
        ("timeout_s", True, "timeout_s must be > 0 seconds, not True"),
        ("connect_timeout_s", "30", "connect_timeout_s must be > 0 seconds, not '30'"),
        ("connect_timeout_s", [30], "connect_timeout_s must be > 0 seconds, not [30]"),
        ("max_message_bytes", "1000", "max_message_bytes must be a whole number >= 1, not '1000'"),
        ("max_message_bytes", 1.5, "max_message_bytes must be a whole number >= 1, not 1.5"),
    ],
)
def test_an_option_that_is_no_number_is_refused_with_one_message(
    make: Callable[..., object], option: str, value: object, message: str
) -> None:
    # as an agent file or a settings dict may give them: a text "30" was a bare TypeError
    # ("'>' not supported between instances of 'str' and 'int'") naming no option
    with pytest.raises(ConfigError) as refused:
        make(**{option: value})
    assert str(refused.value) == message
