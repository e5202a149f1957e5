"""R-5.6 bounded: a model that keeps hitting its output token limit in the middle of a tool
call is asked again a few times, not forever (also with `max_turns=None`); then the run
ends in error with a message that says why and what to change."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import (
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentRunError,
    AgentTool,
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_truncated_tool_call

from ..agent._kit import faux_agent
from ..approvals._kit import transcript_problems

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
TOOL = AgentTool("count", "count", "counts", SCHEMA, lambda *args: "counted")


def cut_off() -> AssistantMessage:
    return faux_truncated_tool_call("count", {"n": 123456789})


async def test_the_loop_stops_asking_a_model_that_is_always_cut_off() -> None:
    fm = FauxModel([cut_off() for _ in range(50)] + ["never reached"])
    context = AgentContext("sys", [], [TOOL])
    events: list[AgentEvent] = []
    config = AgentLoopConfig(model=fm.model, max_turns=None)
    await run_agent_loop([UserMessage("go")], context, config, events.append, None, fm.stream_fn)

    assert fm.call_count == 3
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "error"
    last = context.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
    assert last.error_message is not None
    assert "output token limit" in last.error_message and "3 times" in last.error_message
    assert "max_tokens" in last.error_message
    results = [m for m in context.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 3 and all(r.is_error for r in results)
    assert transcript_problems(context.messages) == []


async def test_a_complete_answer_between_cut_offs_starts_the_count_again() -> None:
    calls: list[Any] = []

    def count(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        calls.append(args)
        return "counted"

    tool = AgentTool("count", "count", "counts", SCHEMA, count)
    from yiemagent.ai.providers.faux import faux_message, faux_tool_call

    whole = faux_message(faux_tool_call("count", {"n": 1}))
    fm = FauxModel([cut_off(), cut_off(), whole, cut_off(), cut_off(), "done"])
    agent = faux_agent(fm, tools=[tool])

    assert (await agent.prompt("go")).text == "done"
    assert fm.call_count == 6 and calls == [{"n": 1}]


async def test_an_agent_run_cut_off_every_time_raises_saying_so() -> None:
    fm = FauxModel([cut_off() for _ in range(50)])
    agent = faux_agent(fm, tools=[TOOL])
    with pytest.raises(AgentRunError, match="output token limit"):
        await agent.prompt("go")
    assert fm.call_count == 3
    assert (await faux_agent(FauxModel(["fine"])).prompt("hi")).text == "fine"
