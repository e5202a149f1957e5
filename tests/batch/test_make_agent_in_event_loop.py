"""`make_agent` runs inside the batch's event loop (DESIGN §16): a factory whose setup is
async (connecting an MCP server with `add_server`) is an `async def` and works; a plain
one that calls `asyncio.run` fails its task with an error that says to make it an
`async def`, where it said only "asyncio.run() cannot be called from a running event
loop"."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.batch import BatchTask, read_results, run_batch_async
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.types import text_of

pytestmark = pytest.mark.timeout(120)

WEATHER = Path(__file__).parents[2] / "examples" / "mcp" / "weather_server.py"

_models: list[FauxModel] = []  # held while their runs use them


def _agent() -> Agent[Any]:
    call = faux_message(faux_tool_call("forecast", {"city": "Oslo"}))
    fm = FauxModel([call, lambda context: "said: " + text_of(context.messages[-1].content)])
    _models.append(fm)
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    return agent


async def async_make_agent(task: BatchTask) -> Agent[Any]:
    agent = _agent()
    await add_server(agent, MCPServerStdio(sys.executable, [str(WEATHER)]))
    return agent


def sync_make_agent(task: BatchTask) -> Agent[Any]:
    agent = _agent()
    asyncio.run(add_server(agent, MCPServerStdio(sys.executable, [str(WEATHER)])))
    return agent


async def test_an_async_make_agent_connects_an_mcp_server(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    await run_batch_async(
        [BatchTask("oslo", "weather?")], async_make_agent, results=results, progress=False
    )
    (result,) = read_results(results)
    assert result.status == "ok", result.error
    assert "snow" in (result.text or "")


@pytest.mark.filterwarnings("ignore:coroutine 'add_server' was never awaited")
async def test_asyncio_run_in_make_agent_says_to_make_it_async(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    await run_batch_async(
        [BatchTask("oslo", "weather?")],
        sync_make_agent,
        results=results,
        retries=0,
        progress=False,
    )
    (result,) = read_results(results)
    assert result.status == "error"
    error = result.error or ""
    assert "asyncio.run() cannot be called from a running event loop" in error
    assert "make_agent runs in the batch's event loop: make it an async def" in error
