"""Changing a built `Agent`, as pi-mono's agent.test.ts does ("should update state with
mutators", "forwards sessionId to streamFn options"): what `agent.state` holds changes for
the next run when assigned there; an option the agent was made with reads back as given,
and assigning it on the agent is refused with what to do, never accepted and ignored
(pi's TypeScript keeps those private; in Python `agent.before_tool_call = f` used to set
an attribute no run ever read)."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from yiemagent import (
    Agent,
    AgentTool,
    AgentToolResult,
    BeforeToolCallResult,
    ConfigError,
    UsageLimits,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def hook(*args: Any) -> None:
    """A hook that does nothing, as any of the Agent's hooks."""


GIVEN: dict[str, object] = {
    "stream_fn": hook,
    "llm_call": hook,
    "on_event": hook,
    "prepare_context": hook,
    "format_messages": hook,
    "convert_to_llm": hook,
    "transform_context": hook,
    "before_tool_call": hook,
    "after_tool_call": hook,
    "prepare_next_turn": hook,
    "should_stop_after_turn": hook,
    "tool_timeout_s": 7.0,
    "stream_idle_timeout_s": 8.0,
    "stream_reasoning_timeout_s": 9.0,
    "cache_retention": "long",
    "temperature": 0.3,
    "max_tokens": 40,
    "max_parallel_tools": 3,
    "usage_limits": UsageLimits(max_tool_calls=5),
    "tracer_provider": TracerProvider(),
    "trace_content": True,
    "output_type": int,
}
"""The options a built agent keeps, each with a value an Agent takes that is not its
default."""


def tool(ran: list[str]) -> AgentTool:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        ran.append(call_id)
        return AgentToolResult(content="deleted")

    return AgentTool("delete", "delete", "deletes", SCHEMA, execute)


@pytest.mark.parametrize("name", GIVEN)
def test_an_option_given_when_made_reads_back_and_refuses_assignment(name: str) -> None:
    given = GIVEN[name]
    fm = FauxModel([])
    if name in ("llm_call", "format_messages"):  # format_messages shapes llm_call's input
        calls: dict[str, Any] = {"llm_call": hook}
    else:
        calls = {"stream_fn": fm.stream_fn}
    agent = Agent(model=fm.model, **{**calls, name: given})

    assert getattr(agent, name) is given
    with pytest.raises(ConfigError, match=rf"{name} is given when the Agent is made"):
        setattr(agent, name, None)
    assert getattr(agent, name) is given


async def test_a_refused_hook_assignment_leaves_the_agent_running_as_made() -> None:
    # before the refusal, the assignment "took" and the guard never ran
    ran: list[str] = []

    def guard(ctx: Any) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True, reason="not allowed")

    fm = FauxModel([faux_message(faux_tool_call("delete", {}, id="c1")), "blocked"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool(ran)], before_tool_call=guard)
    with pytest.raises(ConfigError):
        agent.before_tool_call = None
    await agent.prompt("delete it")

    assert ran == []


@pytest.mark.parametrize("name", ["model", "system_prompt", "messages", "tools", "reasoning"])
def test_what_the_state_holds_is_assigned_there(name: str) -> None:
    fm = FauxModel([])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)

    with pytest.raises(ConfigError, match=rf"is agent\.state\.{name}: assign that instead"):
        setattr(agent, name, getattr(agent.state, name))
    assert getattr(agent, name) == getattr(agent.state, name)


async def test_state_assignments_apply_to_the_next_run() -> None:
    # "should update state with mutators": system prompt, tools, messages
    fm = FauxModel(["one", "two"])
    agent = Agent("be brief", model=fm.model, stream_fn=fm.stream_fn)
    await agent.prompt("hi")

    agent.state.system_prompt = "be verbose"
    agent.state.tools = [tool([])]
    agent.state.messages = agent.state.messages[:1]  # drop the answer
    reply = await agent.prompt("again")

    sent = fm.contexts[-1]
    assert text_of(reply.content) == "two"
    assert sent.system_prompt == "be verbose"
    assert [t.name for t in sent.tools] == ["delete"]
    assert [text_of(m.content) for m in sent.messages] == ["hi", "again"]
    assert agent.system_prompt == "be verbose" and agent.model is agent.state.model
