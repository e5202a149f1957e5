"""What listeners see of a message guardrails check (DESIGN §17: a tripped answer is never
shown): an agent with guardrails streams nothing of a message before its guardrails passed
it; then its events arrive, in order, before its `message_end`. A tripped message is only a
`message_start` and `message_end` of the emptied error message, at every level (a
sub-agent's events nested in its parent's too)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from yiemagent import AgentEvent, GuardrailContext, GuardrailTripped, NestedAgentEvent

from ._kit import calls, scripted

SECRET = "the launch code is 0000, streamed in many small pieces " * 3


def record(agent: Any) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    agent.subscribe(lambda event, signal: events.append(event))
    return events


def texts(events: list[AgentEvent]) -> str:
    """Everything the events carry, as one text (deltas, partial and whole messages)."""
    return repr(events)


async def test_an_answer_an_output_guardrail_trips_is_never_streamed() -> None:
    agent, _ = scripted("a", [SECRET], output_guardrails=[lambda c: "launch code" in c.text])
    events = record(agent)
    with pytest.raises(GuardrailTripped):
        await agent.prompt("the code?")

    assert "launch code" not in texts(events)
    assert [e.type for e in events][-4:] == [
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert "message_update" not in [e.type for e in events]
    end = [e for e in events if e.type == "message_end"][-1]
    assert end.message.stop_reason == "error"  # type: ignore[union-attr]
    assert end.message.error_message.startswith("output guardrail")  # type: ignore[union-attr]


async def test_an_answer_that_passes_streams_whole_before_its_end() -> None:
    agent, _ = scripted("a", [SECRET], output_guardrails=[lambda c: False])
    events = record(agent)
    reply = await agent.prompt("the code?")

    assistant = [
        e for e in events if e.type.startswith("message_") and e.message.role == "assistant"
    ]  # type: ignore[union-attr]
    kinds = [e.type for e in assistant]
    assert kinds[0] == "message_start" and kinds[-1] == "message_end"
    assert set(kinds[1:-1]) == {"message_update"}
    deltas = [
        e.assistant_message_event.delta  # type: ignore[union-attr]
        for e in assistant
        if e.type == "message_update" and e.assistant_message_event.type == "text_delta"  # type: ignore[union-attr]
    ]
    assert "".join(deltas) == reply.text == SECRET


async def test_a_prompt_an_input_guardrail_trips_streams_nothing_of_the_answer() -> None:
    async def no_launch_codes(context: GuardrailContext) -> bool:
        await asyncio.sleep(0.2)
        return "launch" in context.input

    agent, fm = scripted("a", [SECRET], input_guardrails=[no_launch_codes])
    fm.delay_s = 0.01  # streaming while the guardrail checks
    events = record(agent)
    with pytest.raises(GuardrailTripped):
        await agent.prompt("the launch code?")

    assert "launch code is" not in texts(events)
    assert "message_update" not in [e.type for e in events]


async def test_a_sub_agents_tripped_answer_never_reaches_the_parents_listeners() -> None:
    strict, _ = scripted("strict", [SECRET], output_guardrails=[lambda c: True])
    lead, _ = scripted(
        "lead", [calls(("strict", {"input": "x"})), "I could not get it."],
        tools=[strict.as_tool()],
    )  # fmt: skip
    events = record(lead)
    assert (await lead.prompt("go")).text == "I could not get it."

    nested = [e.event for e in events if isinstance(e, NestedAgentEvent)]
    assert nested and nested[-1].type == "agent_end"
    assert "launch code" not in texts(nested)
