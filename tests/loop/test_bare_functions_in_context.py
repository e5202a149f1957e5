"""`AgentContext.tools` takes what every other place that takes tools takes: an `AgentTool`
or a typed function, made a tool as `@tool` makes it (`to_agent_tool`). The loop's entry
points convert them before the run starts; a bad item raises `ConfigError` there."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import (
    AgentContext,
    AgentLoopConfig,
    ConfigError,
    TurnContext,
    TurnUpdate,
    agent_loop,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import ToolResultMessage, text_of


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def shout(text: str) -> str:
    """Say `text` loudly."""
    return text.upper()


async def test_a_bare_function_in_the_context_is_offered_and_run() -> None:
    fm = FauxModel([faux_message(faux_tool_call("add", {"a": 2, "b": 40}, id="c1")), "42"])
    context = AgentContext("s", [], [add, shout])  # type: ignore[list-item]
    stream = agent_loop("sum", context, AgentLoopConfig(model=fm.model), stream_fn=fm.stream_fn)
    new = await stream.result()
    result = next(m for m in new if isinstance(m, ToolResultMessage))
    assert not result.is_error, text_of(result.content)
    assert text_of(result.content) == "42"
    offered = fm.contexts[0].tools
    assert [t.name for t in offered] == ["add", "shout"]
    assert offered[0].input_schema["required"] == ["a", "b"]
    assert [t.name for t in context.tools] == ["add", "shout"]


async def test_something_that_is_no_tool_raises_before_the_run() -> None:
    fm = FauxModel(["never"])
    context = AgentContext("s", [], ["add"])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="tools holds str 'add', not a tool"):
        agent_loop("sum", context, AgentLoopConfig(model=fm.model), stream_fn=fm.stream_fn)
    with pytest.raises(ConfigError, match="not a tool"):
        await run_agent_loop("sum", context, AgentLoopConfig(model=fm.model), print)
    assert fm.contexts == [] and context.messages == []


async def test_a_context_given_between_turns_may_hold_bare_functions() -> None:
    """`prepare_next_turn` replaces the context with one whose tools are bare functions:
    the next turn is offered them, and they run."""
    fm = FauxModel(
        [
            faux_message(faux_tool_call("add", {"a": 1, "b": 1}, id="c1")),
            faux_message(faux_tool_call("shout", {"text": "hi"}, id="c2")),
            "done",
        ]
    )

    def swap(turn: TurnContext) -> TurnUpdate:
        tools: list[Any] = [shout]
        return TurnUpdate(context=AgentContext("s", turn.context.messages, tools))

    config = AgentLoopConfig(model=fm.model, prepare_next_turn=swap)
    stream = agent_loop("go", AgentContext("s", [], [add]), config, stream_fn=fm.stream_fn)  # type: ignore[list-item]
    new = await stream.result()
    results = [m for m in new if isinstance(m, ToolResultMessage)]
    assert [(r.tool_name, r.is_error, text_of(r.content)) for r in results] == [
        ("add", False, "2"),
        ("shout", False, "HI"),
    ]
    assert [t.name for t in fm.contexts[1].tools] == ["shout"]
