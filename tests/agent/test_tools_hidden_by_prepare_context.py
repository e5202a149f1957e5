"""A tool `prepare_context` leaves out of a model call, in the cases pydantic-ai's
`test_dynamic_tools_agent_wide` / `prepare_tools` and openai-agents' `is_enabled` check.

A call of a tool that model call was not offered (a model guessing, or reading an older
turn) is answered as an unknown tool: the same error result, listing the tools it was
offered, and nothing sees it as runnable (no approval hold, no `before_tool_call`). This
holds on both model paths, for handoff targets and for agents run as tools (docs/agent.md,
"Construction")."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings, strategies as st

from yiemagent import (
    Agent,
    AgentContext,
    AgentTool,
    BeforeToolCallResult,
    ToolExecutionEndEvent,
    ToolResultMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import AgentMessage, text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def tools(ran: list[str], *names: str, **options: Any) -> list[AgentTool]:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(call_id)
        return "done"

    return [AgentTool(name, name, f"the {name} tool", SCHEMA, execute, **options) for name in names]


def hiding(*hidden: str) -> Any:
    """A `prepare_context` that leaves the tools named `hidden` out of every model call."""

    def prepare_context(state: Any) -> AgentContext:
        offered = [t for t in state.tools if t.name not in hidden]
        return AgentContext(state.system_prompt, state.messages, offered)

    return prepare_context


def results(messages: list[AgentMessage]) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]


async def test_a_call_of_a_hidden_tool_is_answered_as_an_unknown_tool() -> None:
    ran: list[str] = []
    asked: list[str] = []
    ends: list[ToolExecutionEndEvent] = []

    def before(ctx: Any) -> None:
        asked.append(ctx.tool_call.name)

    both = faux_message(faux_tool_call("delete", {}, id="d1"), faux_tool_call("nope", {}, id="n1"))
    fm = FauxModel([both, "ok"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=tools(ran, "delete", "read"),
        prepare_context=hiding("delete"),
        before_tool_call=before,
    )
    agent.subscribe(lambda e, s: ends.append(e) if isinstance(e, ToolExecutionEndEvent) else None)
    await agent.prompt("go")

    assert [t.name for t in fm.contexts[0].tools] == ["read"]
    hidden, unknown = results(agent.state.messages)
    assert ran == [] and asked == []
    assert hidden.is_error and unknown.is_error
    assert text_of(hidden.content) == 'Tool "delete" not found. Available tools: read'
    assert text_of(unknown.content) == 'Tool "nope" not found. Available tools: read'
    assert [(e.tool_name, e.is_error) for e in ends] == [("delete", True), ("nope", True)]


async def test_on_the_llm_call_path_too() -> None:
    ran: list[str] = []
    replies = iter(
        [
            {"role": "assistant", "tool_calls": [
                {"id": "d1", "function": {"name": "delete", "arguments": "{}"}},
                {"id": "r1", "function": {"name": "read", "arguments": "{}"}},
            ]},
            {"role": "assistant", "content": "ok"},
        ]
    )  # fmt: skip
    offered: list[list[str]] = []

    def llm_call(formatted: dict[str, Any]) -> Any:
        offered.append([t["function"]["name"] for t in formatted.get("tools") or []])
        return next(replies)

    agent = Agent(
        llm_call=llm_call, tools=tools(ran, "delete", "read"), prepare_context=hiding("delete")
    )
    await agent.prompt("go")

    assert offered[0] == ["read"] and ran == ["r1"]
    hidden, read = results(agent.state.messages)
    assert text_of(hidden.content) == 'Tool "delete" not found. Available tools: read'
    assert hidden.is_error and not read.is_error


async def test_the_rule_is_per_model_call() -> None:
    ran: list[str] = []
    model_calls = 0

    def hide_after_first(state: Any) -> AgentContext:
        nonlocal model_calls
        model_calls += 1
        return hiding("delete")(state) if model_calls > 1 else hiding()(state)

    fm = FauxModel(
        [
            faux_message(faux_tool_call("delete", {}, id="d1")),
            faux_message(faux_tool_call("delete", {}, id="d2")),
            "ok",
        ]
    )
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=tools(ran, "delete", "read"),
        prepare_context=hide_after_first,
    )
    await agent.prompt("go")

    # offered in the first call, it ran; the second call's model saw it in the transcript
    assert ran == ["d1"]
    first, second = results(agent.state.messages)
    assert not first.is_error and second.is_error
    assert text_of(second.content) == 'Tool "delete" not found. Available tools: read'


async def test_a_hidden_tool_that_needs_approval_is_not_held() -> None:
    ran: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("delete", {}, id="d1")), "ok"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=tools(ran, "delete", requires_approval=True) + tools(ran, "read"),
        prepare_context=hiding("delete"),
    )
    reply = await agent.prompt("go")

    assert reply.text == "ok" and agent.pending_approvals == []
    [result] = results(agent.state.messages)
    assert ran == [] and result.is_error and "not found" in text_of(result.content)


async def test_a_hidden_handoff_target_is_not_handed_to() -> None:
    billing_fm = FauxModel(["billing here"])
    billing = Agent("billing", billing_fm.model, stream_fn=billing_fm.stream_fn, name="billing")
    router_fm = FauxModel([faux_message(faux_tool_call("transfer_to_billing", {})), "router here"])
    router = Agent(
        "router",
        router_fm.model,
        stream_fn=router_fm.stream_fn,
        name="router",
        handoffs=[billing],
        prepare_context=hiding("transfer_to_billing"),
    )
    reply = await router.prompt("help")

    assert reply.text == "router here" and router.state.active_agent == "router"
    assert billing_fm.call_count == 0
    [result] = results(router.state.messages)
    assert result.is_error
    assert text_of(result.content) == 'Tool "transfer_to_billing" not found. Available tools: none'


async def test_a_hidden_agent_tool_does_not_run_the_agent() -> None:
    helper_fm = FauxModel(["helped"])
    helper = Agent("helper", helper_fm.model, stream_fn=helper_fm.stream_fn, name="helper")
    lead_fm = FauxModel([faux_message(faux_tool_call("helper", {"input": "x"})), "done"])
    lead = Agent(
        "lead",
        lead_fm.model,
        stream_fn=lead_fm.stream_fn,
        name="lead",
        tools=[helper.as_tool()],
        prepare_context=hiding("helper"),
    )
    await lead.prompt("go")

    assert helper_fm.call_count == 0
    [result] = results(lead.state.messages)
    assert result.is_error and text_of(result.content).startswith('Tool "helper" not found')


async def test_before_tool_call_still_refuses_an_offered_tool() -> None:
    ran: list[str] = []

    def refuse(ctx: Any) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True, reason=f"{ctx.tool_call.name} is not allowed")

    fm = FauxModel([faux_message(faux_tool_call("read", {}, id="r1")), "ok"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=tools(ran, "delete", "read"),
        prepare_context=hiding("delete"),
        before_tool_call=refuse,
    )
    await agent.prompt("go")

    [result] = results(agent.state.messages)
    assert ran == [] and result.is_error and text_of(result.content) == "read is not allowed"


NAMES = ["a", "b", "c", "d", "e"]


@settings(max_examples=30, deadline=None)
@given(
    offered=st.sets(st.sampled_from(NAMES)),
    called=st.lists(st.sampled_from(NAMES), min_size=1, max_size=6),
    parallel=st.booleans(),
)
def test_property_exactly_the_offered_tools_run(
    offered: set[str], called: list[str], parallel: bool
) -> None:
    ran: list[str] = []
    hidden = [name for name in NAMES if name not in offered]
    calls = [faux_tool_call(name, {}, id=f"{name}{i}") for i, name in enumerate(called)]
    fm = FauxModel([faux_message(*calls), "ok"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=tools(ran, *NAMES, parallel=parallel),
        prepare_context=hiding(*hidden),
    )
    asyncio.run(agent.prompt("go"))

    expected = [f"{name}{i}" for i, name in enumerate(called) if name in offered]
    assert sorted(ran) == sorted(expected)
    answered = results(agent.state.messages)
    assert [r.tool_call_id for r in answered] == [call.id for call in calls]
    for result in answered:
        assert result.is_error == (result.tool_name not in offered)
