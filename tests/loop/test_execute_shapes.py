"""The shapes of `AgentTool.execute` and of a hook that other frameworks' suites run
(pydantic-ai's `test_tool_sync_function_returning_coroutine`, openai-agents'
`test_async_callable_object_works_as_bare_function_tool` and
`test_sync_function_preserves_awaitable_result`): a plain function that returns a
coroutine, an object with an async `__call__`, a `functools.partial` of an async function,
and a plain hook returning a coroutine are each awaited, never handed on as an object."""

from __future__ import annotations

import asyncio
import functools
import warnings
from typing import Any

from yiemagent import Agent, AgentTool, AgentToolResult, BeforeToolCallResult, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def _answer(text: str) -> AgentToolResult:
    await asyncio.sleep(0.01)
    return AgentToolResult(content=text)


def plain_returning_a_coroutine(call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
    return _answer("from a coroutine")


class AsyncCall:
    async def __call__(self, call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return "from an async __call__"


async def bound_first(extra: str, call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return f"from a partial of {extra}"


def results(agent: Agent) -> list[tuple[str, bool, str]]:
    return [
        (m.tool_name, m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


async def test_each_shape_of_execute_is_awaited() -> None:
    tools = [
        AgentTool("coro", "coro", "d", SCHEMA, plain_returning_a_coroutine),
        AgentTool("obj", "obj", "d", SCHEMA, AsyncCall()),
        AgentTool("part", "part", "d", SCHEMA, functools.partial(bound_first, "x")),
    ]
    calls = [faux_tool_call(t.name, {}) for t in tools]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine never awaited would warn
        await agent.prompt("go")

    assert results(agent) == [
        ("coro", False, "from a coroutine"),
        ("obj", False, "from an async __call__"),
        ("part", False, "from a partial of x"),
    ]


async def test_a_plain_hook_returning_a_coroutine_is_awaited() -> None:
    ran: list[str] = []

    async def block() -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True, reason="blocked by a coroutine")

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(call_id)
        return "ran"

    fm = FauxModel([faux_message(faux_tool_call("t", {})), "done"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[AgentTool("t", "t", "d", SCHEMA, execute)],
        before_tool_call=lambda ctx, signal: block(),
    )
    await agent.prompt("go")

    assert ran == [] and results(agent) == [("t", True, "blocked by a coroutine")]
