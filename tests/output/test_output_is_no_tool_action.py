"""A typed run's output tool is its answer, not an action the tool hooks decide on (DESIGN
§14), as openai-agents' `test_structured_output_*_agent_hooks` (no `on_tool_start` for the
output) and pydantic-ai's separate output-tool events have it: a `before_tool_call` that
blocks or holds every call it does not know, or an `after_tool_call` that rewrites every
result, leaves the answer alone. The output call still has its events and its result."""

from __future__ import annotations

from typing import Any

from yiemagent import (
    AfterToolCallResult,
    AgentEndEvent,
    AgentTool,
    BeforeToolCallResult,
    ToolResultMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import OutputMessage, text_of

from ._kit import Person
from .test_output_type_faux import agent_for

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def search_tool() -> AgentTool:
    return AgentTool("search", "search", "Search.", SCHEMA, lambda *_: "Ann is 31")


def search_then_answer() -> FauxModel:
    return FauxModel(
        [
            faux_message(faux_tool_call("search", {})),
            faux_message(faux_tool_call("final_result", {"name": "Ann", "age": 31})),
        ]
    )


async def test_a_hook_that_blocks_unknown_calls_leaves_the_answer_alone() -> None:
    asked: list[str] = []

    def allow_search_only(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
        asked.append(ctx.tool_call.name)
        if ctx.tool_call.name != "search":
            return BeforeToolCallResult(block=True, reason="not allowed")
        return None

    fm = search_then_answer()
    agent = agent_for(
        fm, tools=[search_tool()], output_type=Person, before_tool_call=allow_search_only
    )
    reply = await agent.prompt("who is Ann?")
    assert isinstance(reply, OutputMessage) and reply.output == Person(name="Ann", age=31)
    assert asked == ["search"] and fm.call_count == 2


async def test_a_hook_that_holds_every_call_holds_the_tools_not_the_answer() -> None:
    def hold_all(ctx: Any, signal: Any) -> BeforeToolCallResult:
        return BeforeToolCallResult(defer=True)

    fm = search_then_answer()
    agent = agent_for(fm, tools=[search_tool()], output_type=Person, before_tool_call=hold_all)
    held = await agent.prompt("who is Ann?")
    assert [p.tool_name for p in agent.pending_approvals] == ["search"]
    assert isinstance(held, OutputMessage) and held.output is None

    agent.approve(agent.pending_approvals[0].tool_call_id)
    reply = await agent.resume()  # the answer is not held for a person in turn
    assert agent.pending_approvals == []
    assert isinstance(reply, OutputMessage) and reply.output == Person(name="Ann", age=31)
    assert agent.ends[-1].reason == "stop"  # type: ignore[attr-defined]


async def test_a_hook_that_rewrites_every_result_leaves_the_answers_result() -> None:
    seen: list[str] = []

    def redact(ctx: Any, signal: Any) -> AfterToolCallResult:
        seen.append(ctx.tool_call.name)
        return AfterToolCallResult(content="[redacted]", terminate=True)

    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("search", {}),
                faux_tool_call("final_result", {"name": "Ann", "age": 31}),
            )
        ]
    )
    agent = agent_for(fm, tools=[search_tool()], output_type=Person, after_tool_call=redact)
    events: list[Any] = []
    agent.subscribe(lambda e, _s: events.append(e))
    reply = await agent.prompt("who is Ann?")
    assert isinstance(reply, OutputMessage) and reply.output == Person(name="Ann", age=31)
    assert seen == ["search"]
    results = {m.tool_name: m for m in agent.state.messages if isinstance(m, ToolResultMessage)}
    assert text_of(results["search"].content) == "[redacted]"
    assert text_of(results["final_result"].content) == "Final result accepted."
    # the answer's call is still shown as it happens and paired with its result
    ended = [e.tool_name for e in events if e.type == "tool_execution_end"]
    assert sorted(ended) == ["final_result", "search"]
    assert [e for e in events if isinstance(e, AgentEndEvent)][-1].output == reply.output
