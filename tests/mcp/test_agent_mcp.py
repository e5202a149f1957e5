"""DESIGN §12 through the `Agent`: the faux model (and, marked `local_model`, the embedded
model) calls MCP tools end to end; the Agent owns the connection and `close()` closes it;
`prompt_sync` works because the connection is not tied to a run's event loop; a
tool added by the server is offered on the next turn; and every call of a parallel batch is
answered exactly once when the server process is killed mid-batch."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal as os_signal
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.mcp._kit import text
from tests.mcp.conftest import SERVE_TOOLS, stdio_server, wait_for_file
from yiemagent import Agent, ToolExecutionEndEvent, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.mcp import MCPServerStdio, add_server

pytestmark = pytest.mark.timeout(180)


def _results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


def test_the_faux_model_calls_an_mcp_tool_through_prompt_sync(markers: Path) -> None:
    fm = FauxModel([faux_message(faux_tool_call("add", {"a": 2, "b": 3})), "The sum is 5."])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    server = stdio_server(markers)
    names = asyncio.run(add_server(agent, server))  # this loop ends; the connection stays
    assert "add" in names and "add" in agent.tool_store
    reply = agent.prompt_sync("What is 2 + 3?")
    assert reply.text == "The sum is 5."
    [result] = _results(agent)
    assert result.details == {"sum": 5} and not result.is_error
    offered = [t.name for t in fm.contexts[0].tools or []]
    assert offered[: len(names)] == names  # name, description, schema as the server gave
    fm.add(faux_message(faux_tool_call("echo", {"text": "second loop"})), "ok")
    assert agent.prompt_sync("again").text == "ok"  # a new event loop, the same connection
    assert text(_results(agent)[-1]) == "second loop"
    asyncio.run(agent.close())
    assert not server.connected  # the Agent owned it


async def test_a_tool_the_server_adds_is_offered_on_the_next_turn(markers: Path) -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("add_tool", {"name": "fresh"})),
            faux_message(faux_tool_call("fresh", {"text": "hi"})),
            "done",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    await add_server(agent, stdio_server(markers))
    try:
        reply = await agent.prompt("add a tool and use it")
        assert reply.text == "done"
        first, second = (ctx.tools or [] for ctx in fm.contexts[:2])
        assert "fresh" not in [t.name for t in first]
        assert "fresh" in [t.name for t in second]
        assert text(_results(agent)[-1]) == "added tool says hi"
    finally:
        await agent.close()


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kinds=st.lists(st.sampled_from(["sleep", "echo"]), min_size=2, max_size=6).filter(
        lambda k: "sleep" in k
    ),
    kill_after_s=st.sampled_from([0.0, 0.05, 0.3]),
)
def test_r4_1_a_parallel_mcp_batch_is_answered_once_when_the_server_is_killed(
    kinds: list[str], kill_after_s: float
) -> None:
    markers = Path(tempfile.mkdtemp(prefix="mcp-kill-"))
    calls = [
        faux_tool_call("sleep", {"tag": f"s{i}"})
        if kind == "sleep"
        else faux_tool_call("echo", {"text": f"e{i}"})
        for i, kind in enumerate(kinds)
    ]
    fm = FauxModel([faux_message(*calls), "after the crash"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    server = stdio_server(markers)

    echo_ids = {c.id for c, kind in zip(calls, kinds, strict=True) if kind == "echo"}
    ended: set[str] = set()
    echoes_done = asyncio.Event()

    def on_event(event: object, _signal: object) -> None:
        if isinstance(event, ToolExecutionEndEvent):
            ended.add(event.tool_call_id)
            if echo_ids <= ended:
                echoes_done.set()

    agent.subscribe(on_event)

    async def scenario() -> None:
        await add_server(agent, server)
        run = asyncio.ensure_future(agent.prompt("run them all"))
        for i, kind in enumerate(kinds):
            if kind == "sleep":
                await wait_for_file(markers / f"s{i}.started")
        if echo_ids:  # the quick calls are done; the sleeps are in flight
            await asyncio.wait_for(echoes_done.wait(), 30)
        await asyncio.sleep(kill_after_s)
        os.kill(int((markers / "pid").read_text()), os_signal.SIGKILL)
        reply = await asyncio.wait_for(run, 60)
        assert reply.text == "after the crash"
        await agent.close()

    asyncio.run(scenario())
    results = _results(agent)
    assert [r.tool_call_id for r in results] == [c.id for c in calls]  # once each, in order
    for kind, result in zip(kinds, results, strict=True):
        if kind == "sleep":
            assert result.is_error
            assert "closed the connection while" in text(result)
        else:
            assert not result.is_error and text(result).startswith("e")


def _embedded_model_installed() -> bool:
    if importlib.util.find_spec("xllamacpp") is None:
        return False
    from yiemagent.ai.providers.local.weights import is_installed, local_spec

    return is_installed(local_spec("qwen2.5-coder-0.5b"))


@pytest.mark.local_model
@pytest.mark.slow
@pytest.mark.skipif(not _embedded_model_installed(), reason="the local extra is not installed")
@pytest.mark.timeout(300)
def test_the_embedded_model_calls_a_tool_served_by_yiem_mcp_serve() -> None:
    # yiemagent on both ends: `yiem mcp serve` offers tool files; the Agent uses them.
    server = MCPServerStdio(
        sys.executable, ["-m", "yiemagent.cli.main", "mcp", "serve", "--tools", SERVE_TOOLS]
    )
    agent = Agent()
    asyncio.run(add_server(agent, server))
    agent.tool_store.unregister("wait")
    agent.tool_store.unregister("steps")
    reply = agent.prompt_sync("What is 1234 + 4321? Use the add tool.")
    asyncio.run(agent.close())
    assert reply.stop_reason == "stop", reply.error_message
    [result] = [r for r in _results(agent) if r.tool_name == "add"]
    assert text(result) == "5555"
    assert "5555" in reply.text.replace(",", "")
