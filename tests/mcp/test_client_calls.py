"""DESIGN §12, client side: progress becomes `on_update`, an abort sends
`notifications/cancelled` and answers "aborted", a timeout applies as to any tool,
`tools/list_changed` refreshes the store, and names are prefixed, valid and never
clash silently. Real subprocess servers, stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import wait_for_file
from yiemagent import ConfigError, tool
from yiemagent.mcp import MCPServer, MCPServerStdio, add_server, local_tool_name
from yiemagent.tools import ToolStore
from yiemagent.types import TOOL_NAME_PATTERN, AbortSignal, AgentEvent, ToolExecutionUpdateEvent

pytestmark = pytest.mark.timeout(120)


async def _store(server: MCPServer, prefix: str | None = None) -> ToolStore:
    store = ToolStore("calls")
    await add_server(store, server, prefix)
    return store


async def test_progress_notifications_become_updates(server: MCPServer) -> None:
    store = await _store(server)
    events: list[AgentEvent] = []
    [result] = await run_calls(store, ("progress", {"steps": 3}), events=events)
    assert text(result) == "done"
    updates = [e for e in events if isinstance(e, ToolExecutionUpdateEvent)]
    assert [text_of(u) for u in updates] == [f"step {i} of 3" for i in (1, 2, 3)]
    assert updates[-1].partial_result.details == {
        "progress": 3.0,
        "total": 3.0,
        "message": "step 3 of 3",
    }


async def _until(check: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """The refresh after list_changed is a tools/list round trip of its own; over HTTP the
    notification rides the standalone stream, so it may land after the call's result (a
    bound, wide for a loaded 2-core machine: the server is a Python subprocess)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not check():
        assert loop.time() < deadline, "the store was not refreshed in time"
        await asyncio.sleep(0.02)


def text_of(event: ToolExecutionUpdateEvent) -> str:
    return " ".join(getattr(b, "text", "") for b in event.partial_result.content)


async def test_abort_sends_cancelled_and_answers_aborted(server: MCPServer, markers: Path) -> None:
    store = await _store(server)
    signal = AbortSignal()
    batch = asyncio.ensure_future(run_calls(store, ("sleep", {"tag": "abort"}), signal=signal))
    await wait_for_file(markers / "abort.started")
    signal.abort("user pressed stop")
    [result] = await asyncio.wait_for(batch, 10)
    assert result.is_error
    assert text(result).startswith("Operation aborted")
    assert "notifications/cancelled" in text(result)
    await wait_for_file(markers / "abort.cancelled")  # the server saw the cancellation
    [after] = await run_calls(store, ("echo", {"text": "still fine"}))
    assert text(after) == "still fine"


async def test_a_timeout_applies_as_for_any_tool_and_cancels_on_the_server(
    server: MCPServer, markers: Path
) -> None:
    store = await _store(server)
    [result] = await run_calls(store, ("sleep", {"tag": "slow"}), tool_timeout_s=1.0)
    assert result.is_error
    assert text(result) == "Tool sleep timed out after 1 s"
    await wait_for_file(markers / "slow.cancelled")


async def test_the_tools_own_timeout_wins(server: MCPServer, markers: Path) -> None:
    store = ToolStore("own-timeout")
    await add_server(store, server, timeout_s=0.5)
    [result] = await run_calls(store, ("sleep", {"tag": "own"}), tool_timeout_s=30.0)
    assert text(result) == "Tool sleep timed out after 0.5 s"


async def test_list_changed_adds_and_removes_tools(server: MCPServer) -> None:
    store = await _store(server)
    stale = list(store.tools.values())
    [added] = await run_calls(store, ("add_tool", {"name": "fresh"}))
    assert text(added) == "added fresh"
    await _until(lambda: "fresh" in store)  # stdio: before the call returned; HTTP: soon
    assert store.tools["fresh"].description == "A tool added at run time: fresh"
    [fresh] = await run_calls(store, ("fresh", {"text": "hi"}))
    assert text(fresh) == "added tool says hi"
    old_fresh = store.tools["fresh"]
    [removed] = await run_calls(store, ("remove_tool", {"name": "fresh"}))
    assert text(removed) == "removed fresh"
    await _until(lambda: "fresh" not in store)
    # A call already on its way (the model saw the old list) answers "not found".
    message_tools = [*stale, old_fresh]
    results = await _run_with_tools(message_tools, "fresh")
    assert results.is_error
    assert text(results).startswith('Tool "fresh" not found')


async def test_many_changes_announced_at_once_are_not_listed_once_each(
    server: MCPServer,
) -> None:
    """A server that announces 200 changes in a row gets the refresh under way and one more
    `tools/list` for all that came meanwhile, not 200 concurrent ones."""
    store = await _store(server)
    listings: list[int] = []
    remove = server.add_tools_listener(lambda tools: listings.append(len(tools)))
    try:
        [result] = await run_calls(store, ("announce", {"times": 200}))
        assert text(result) == "announced 200 times"
        await _until(lambda: len(listings) >= 1)
        await asyncio.sleep(1.0)  # any listing still to come
        assert 1 <= len(listings) < 100, len(listings)
    finally:
        remove()


async def _run_with_tools(tools: list, name: str):  # type: ignore[no-untyped-def, type-arg]
    from tests.mcp._kit import MODEL
    from yiemagent.ai.providers.faux import faux_message, faux_tool_call
    from yiemagent.loop import execute_tool_calls
    from yiemagent.types import AgentContext, AgentLoopConfig

    message = faux_message(faux_tool_call(name, {"text": "x"}))

    async def emit(event: AgentEvent) -> None:
        return None

    batch = await execute_tool_calls(
        AgentContext(tools=tools), message, AgentLoopConfig(model=MODEL), AbortSignal(), emit
    )
    return batch.messages[0]


async def test_a_prefix_keeps_two_servers_apart(server: MCPServer) -> None:
    store = await _store(server)
    names = await add_server(store, server, prefix="again")
    assert "again_echo" in names and "echo" in store
    [result] = await run_calls(store, ("again_echo", {"text": "twice"}))
    assert text(result) == "twice"


async def test_a_clash_is_a_clear_error_naming_both_sources(server: MCPServer) -> None:
    @tool
    def echo(text: str) -> str:
        """A local echo."""
        return text

    store = ToolStore("clash")
    store.register(echo)
    with pytest.raises(ConfigError) as info:
        await add_server(store, server)
    message = str(info.value)
    assert "'echo'" in message and server.label in message
    assert __file__ in message  # where the existing tool came from
    assert list(store.tools) == ["echo"]  # nothing registered
    names = await add_server(store, server, prefix="srv")
    with pytest.raises(ConfigError, match=r"already registered from MCP server") as again:
        await add_server(store, server, prefix="srv")
    # every tool of the server clashes: the first few named, the rest counted, one line
    message = str(again.value)
    assert len(names) > 4 and "\n" not in message
    assert message.count("is already registered from") == 3, message
    assert f"and {len(names) - 3} more of its tools" in message, message


async def test_tool_names_alike_once_made_valid_stay_apart() -> None:
    """openai-agents' test_mcp_util.py (..._non_ascii_tool_names_safely,
    ..._normalized_tool_collisions_stably): `搜索` and `读取` both became `__`, and
    `search.v1` became the `search_v1` the server also lists; the second of each pair was
    left out with a warning, so a server whose tools are named in Chinese offered one
    tool. Names alike once made valid now end with a hash of the server's name (the same
    whatever the order); the others are kept as they were."""
    server_script = str(Path(__file__).parent / "mcp_names_server.py")
    async with MCPServerStdio(sys.executable, [server_script], name="names") as server:
        store = ToolStore("names")
        names = await add_server(store, server)
        assert len(names) == len(set(names)) == 5
        assert names[-1] == "echo"
        assert all(TOOL_NAME_PATTERN.fullmatch(name) for name in names)
        search_dot, search_underscore, first, second = names[:4]
        assert search_dot.startswith("search_v1_") and search_underscore.startswith("search_v1_")
        assert first.startswith("___") and second.startswith("___")
        results = await run_calls(store, *((name, {}) for name in names))
    remote = ["search.v1", "search_v1", "搜索", "读取", "echo"]
    assert [text(r) for r in results] == [f"called:{name}" for name in remote]


@given(
    st.text(min_size=1, max_size=200),
    st.none() | st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True),
)
def test_local_names_are_always_valid_tool_names(name: str, prefix: str | None) -> None:
    local = local_tool_name(name, prefix)
    assert TOOL_NAME_PATTERN.fullmatch(local)
    assert local == local_tool_name(name, prefix)


@given(st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True))
def test_valid_names_are_kept_as_given(name: str) -> None:
    assert local_tool_name(name, None) == name


CHATTY_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("chatty", log_level="WARNING")


@server.tool(description="Log `kib` KiB on stderr, then answer.")
def chatty(kib: int) -> str:
    sys.stderr.write(("x" * 1023 + "\\n") * kib)
    sys.stderr.flush()
    return "said it"


server.run()
"""


async def test_a_server_that_floods_its_stderr_still_answers(tmp_path: Path) -> None:
    """A stdio server blocks on a write to a stderr pipe nobody reads (64 KiB fill one),
    and then answers nothing: its stderr is read all along, and reaches `stderr`."""
    log_path = tmp_path / "server-stderr.log"
    with log_path.open("w") as log:
        chatty = MCPServerStdio(sys.executable, ["-c", CHATTY_SERVER], name="c", stderr=log)
        async with chatty:
            store = ToolStore("c")
            await add_server(store, chatty)
            first, second = await run_calls(
                store, ("chatty", {"kib": 1024}), ("chatty", {"kib": 1024}), tool_timeout_s=60
            )
    assert [text(first), text(second)] == ["said it", "said it"]
    assert not first.is_error and not second.is_error
    # the copy of the last pipe-full may still be on its way
    for _ in range(200):
        if log_path.stat().st_size >= 2 * 1024 * 1024:
            break
        await asyncio.sleep(0.05)
    assert log_path.stat().st_size == 2 * 1024 * 1024


async def test_null_for_an_optional_parameter_reaches_the_server_as_left_out(
    server: MCPServer, markers: Path
) -> None:
    """Models (and strict schemas' clients) send `null` for an optional parameter they do
    not set; a server whose schema does not allow null for it refuses the whole call. The
    parameter is left out instead, so the server takes its default."""
    store = ToolStore("t")
    await add_server(store, server)
    [result] = await run_calls(store, ("sleep", {"seconds": "0.01", "tag": None}))
    assert not result.is_error, text(result)
    assert text(result) == "slept 0.01 s"
    assert (markers / "sleep.started").exists()  # the default tag, as no tag was sent
