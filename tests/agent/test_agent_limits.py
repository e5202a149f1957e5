"""`Agent(tool_timeout_s=, stream_idle_timeout_s=, max_parallel_tools=)` reach the loop
(DESIGN R-4.5, R-4.9, R-5.8; issue 12 item 3): before, only `AgentLoopConfig` took them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from yiemagent import Agent, AgentRunError, AgentTool, ConfigError, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_stall, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def test_tool_timeout_s_bounds_a_tool_without_its_own() -> None:
    async def slow(*_: Any) -> str:
        await asyncio.sleep(30)
        return "never"

    fm = FauxModel([faux_message(faux_tool_call("slow", {})), "after"])
    tool = AgentTool("slow", "slow", "slow", SCHEMA, slow)
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool], tool_timeout_s=0.2)
    started = time.monotonic()
    assert (await agent.prompt("go")).text == "after"
    assert time.monotonic() - started < 10
    result = agent.state.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert text_of(result.content) == "Tool slow timed out after 0.2 s"


async def test_stream_idle_timeout_s_ends_a_silent_stream() -> None:
    fm = FauxModel([faux_stall(1)])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, stream_idle_timeout_s=0.2)
    started = time.monotonic()
    with pytest.raises(AgentRunError) as caught:  # a run ending in error raises
        await agent.prompt("go")
    assert caught.value.message.error_message == "The model stream sent nothing for 0.2 s"
    assert time.monotonic() - started < 10


async def test_max_parallel_tools_caps_the_batch() -> None:
    running = 0
    most = 0

    async def busy(*_: Any) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.05)
        running -= 1
        return "ok"

    calls = [faux_tool_call("busy", {}) for _ in range(6)]
    fm = FauxModel([faux_message(*calls), "done"])
    tool = AgentTool("busy", "busy", "busy", SCHEMA, busy, parallel=True)
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool], max_parallel_tools=2)
    assert (await agent.prompt("go")).text == "done"
    assert most == 2


@pytest.mark.parametrize(
    "kwargs",
    [{"tool_timeout_s": 0}, {"stream_idle_timeout_s": -1}, {"max_parallel_tools": 0}],
)
def test_invalid_limits_raise_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        Agent(llm_call=lambda f: {}, **kwargs)
