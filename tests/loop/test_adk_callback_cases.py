"""The tool-callback cases google/adk-python checks (tests/unittests/flows/llm_flows/
test_tool_callbacks.py, test_async_tool_callbacks.py), on `before_tool_call` and
`after_tool_call` (R-4.4, R-4.6) through an Agent.

Where ours differs by choice (docs/agent.md, "Construction", hooks): `before_tool_call` answers a
call only by blocking it, an error result with its reason, and a blocked call is not
finalized; ADK's before callback may return the tool's result in its place (for a cache or
a mock, wrap the tool's `execute` here). Each hook is one function; ADK chains a list
(first answer wins), here a list is refused when the agent is made."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import (
    AfterToolCallResult,
    Agent,
    AgentTool,
    BeforeToolCallResult,
    ConfigError,
    TextContent,
    ToolCall,
    ToolResultMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"input_str": {"type": "string"}}}


def simple_function(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return f"result: {args.get('input_str')}"


def agent_with(fm: FauxModel, **hooks: Any) -> Agent[Any]:
    tool = AgentTool("simple_function", "Simple", "echoes", SCHEMA, simple_function)
    return Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool], **hooks)


def script(args: dict[str, Any]) -> FauxModel:
    return FauxModel([faux_message(faux_tool_call("simple_function", args)), "response1"])


def results(agent: Agent[Any]) -> list[tuple[bool, str]]:
    return [
        (m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


async def test_hooks_that_return_nothing_leave_the_call_as_it_was() -> None:
    seen: list[str] = []

    def before(ctx: Any, signal: Any) -> None:
        seen.append("before")

    async def after(ctx: Any, signal: Any) -> None:
        seen.append("after")

    fm = script({"input_str": "simple_function_call"})
    agent = agent_with(fm, before_tool_call=before, after_tool_call=after)
    reply = await agent.prompt("test")

    assert seen == ["before", "after"]
    assert results(agent) == [(False, "result: simple_function_call")]
    assert reply.text == "response1"


async def test_a_before_hook_changes_the_arguments_the_tool_gets_not_the_transcripts() -> None:
    def before(ctx: Any, signal: Any) -> None:
        ctx.args["input_str"] = "modified_input"

    fm = script({})
    agent = agent_with(fm, before_tool_call=before)
    await agent.prompt("test")

    assert results(agent) == [(False, "result: modified_input")]
    sent_call = fm.contexts[1].messages[1].content[0]
    assert isinstance(sent_call, ToolCall) and sent_call.arguments == {}


async def test_a_blocked_call_is_its_reason_and_is_not_finalized() -> None:
    finalized: list[str] = []

    def before(ctx: Any, signal: Any) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True, reason="before_tool_callback said no")

    fm = script({"input_str": "x"})
    agent = agent_with(
        fm, before_tool_call=before, after_tool_call=lambda ctx, s: finalized.append("after")
    )
    reply = await agent.prompt("test")

    assert results(agent) == [(True, "before_tool_callback said no")]
    assert finalized == []
    assert reply.text == "response1"


async def test_an_after_hook_replaces_the_result() -> None:
    def after(ctx: Any, signal: Any) -> AfterToolCallResult:
        return AfterToolCallResult(content=[TextContent("after_tool_callback")])

    fm = script({"input_str": "x"})
    agent = agent_with(fm, after_tool_call=after)
    await agent.prompt("test")
    assert results(agent) == [(False, "after_tool_callback")]


async def test_an_after_hook_may_edit_the_result_in_place() -> None:
    def after(ctx: Any, signal: Any) -> None:
        ctx.result.content[0].text = "modified_output"

    fm = script({"input_str": "x"})
    agent = agent_with(fm, after_tool_call=after)
    await agent.prompt("test")
    assert results(agent) == [(False, "modified_output")]


async def test_an_after_hook_sees_the_arguments_the_tool_ran_with() -> None:
    seen: list[Any] = []

    def before(ctx: Any, signal: Any) -> None:
        ctx.args["input_str"] = "modified_input"

    def after(ctx: Any, signal: Any) -> None:
        seen.append(dict(ctx.args))

    fm = script({"input_str": "original"})
    agent = agent_with(fm, before_tool_call=before, after_tool_call=after)
    await agent.prompt("test")
    assert seen == [{"input_str": "modified_input"}]


@pytest.mark.parametrize("hook", ["before_tool_call", "after_tool_call"])
def test_a_list_of_hooks_is_refused_when_the_agent_is_made(hook: str) -> None:
    fm = FauxModel([])
    with pytest.raises(ConfigError, match=f"{hook} must be a function"):
        agent_with(fm, **{hook: [lambda ctx, s: None, lambda ctx, s: None]})
