"""Agents called as tools at their edges (DESIGN §17, docs/teams.md "Agents as tools"): a
member that is itself a team, one agent in two teams running at once, a member's typed
output reaching the parent (and one with no JSON form), steering while a member works, and
limits a member shares with its parent."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
from typing import Any

from yiemagent import (
    Agent,
    AgentEvent,
    AgentTool,
    NestedAgentEvent,
    ToolResultMessage,
    UsageLimitExceeded,
    UsageLimits,
)
from yiemagent.types import Usage, text_of, transcript_usage

from ..approvals._kit import recording_tool, transcript_problems
from ._kit import SCHEMA, answer, calls, scripted


def used(tokens: int) -> Usage:
    return Usage(input=tokens, output=0, total_tokens=tokens)


def results(agent: Agent[Any]) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


def record(agent: Agent[Any]) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    agent.subscribe(lambda event, signal: events.append(event))
    return events


async def test_a_member_that_is_a_team_nests_its_events_and_usage_once() -> None:
    leaf, _ = scripted("leaf", [answer("leaf: 42", used(1))])
    mid, _ = scripted(
        "mid",
        [calls(("leaf", {"input": "q"}), usage=used(10)), answer("mid: 42", used(100))],
        tools=[leaf.as_tool()],
    )
    lead, _ = scripted(
        "lead",
        [calls(("mid", {"input": "q"}), usage=used(1000)), answer("lead: 42", used(10000))],
        tools=[mid.as_tool()],
    )
    events = record(lead)

    reply = await lead.prompt("go")

    assert reply.text == "lead: 42"
    nested = [e for e in events if isinstance(e, NestedAgentEvent)]
    assert {e.agent_path for e in nested} == {("lead", "mid"), ("lead", "mid", "leaf")}
    assert not any(isinstance(e.event, NestedAgentEvent) for e in nested)  # never wrapped twice
    [mid_call] = [e.tool_call_id for e in nested if e.agent_path == ("lead", "mid")][:1]
    leaf_calls = {e.tool_call_id for e in nested if e.agent_path == ("lead", "mid", "leaf")}
    assert mid_call == results(lead)[0].tool_call_id  # the call one level up runs it
    assert leaf_calls != {mid_call} and len(leaf_calls) == 1
    [result] = results(lead)
    assert result.details == {"agent": "mid", "agent_path": ["lead", "mid"]}
    assert result.usage is not None and result.usage.total_tokens == 111  # mid's and leaf's
    assert transcript_usage(lead.state.messages).total_tokens == 11111  # each level once


async def test_one_agent_in_two_teams_at_once_shares_nothing() -> None:
    def echo(context: Any) -> str:
        return "heard " + text_of(context.messages[-1].content)

    researcher, _ = scripted("researcher", [echo, echo])
    one, _ = scripted(
        "one",
        [calls(("researcher", {"input": "from one"})), "one done"],
        tools=[researcher.as_tool()],
    )
    two, _ = scripted(
        "two",
        [calls(("researcher", {"input": "from two"})), "two done"],
        tools=[researcher.as_tool()],
    )
    events_one, events_two = record(one), record(two)

    await asyncio.gather(one.prompt("a"), two.prompt("b"))

    assert text_of(results(one)[0].content) == "heard from one"
    assert text_of(results(two)[0].content) == "heard from two"
    assert {e.agent_path for e in events_one if isinstance(e, NestedAgentEvent)} == {
        ("one", "researcher")
    }
    assert {e.agent_path for e in events_two if isinstance(e, NestedAgentEvent)} == {
        ("two", "researcher")
    }
    assert researcher.state.messages == []  # each call ran a fresh copy


@dataclasses.dataclass
class Flight:
    day: datetime.date
    seats: set[str]


async def test_a_members_typed_output_reaches_the_parent_as_json() -> None:
    sub, _ = scripted(
        "booker",
        [calls(("final_result", {"day": "2026-01-02", "seats": ["1A"]}))],
        output_type=Flight,
    )
    lead, lead_fm = scripted(
        "lead",
        [calls(("booker", {"input": "book"})), "booked"],
        tools=[sub.as_tool(output="output")],
    )

    await lead.prompt("go")

    [result] = results(lead)
    assert not result.is_error
    assert json.loads(text_of(result.content)) == {"day": "2026-01-02", "seats": ["1A"]}
    assert text_of(lead_fm.contexts[1].messages[-1].content) == text_of(result.content)


class Ticket:
    """No JSON form: pydantic cannot serialise it."""


def issue(row: int) -> Ticket:
    """Issue a ticket for a row."""
    return Ticket()


async def test_a_typed_output_with_no_json_form_is_an_error_naming_the_agent() -> None:
    """An output function's value pydantic cannot serialise raised out of the call: the
    error result said "Unable to serialize unknown type" without the agent's name, and
    carried none of what the sub-run spent, so the parent's totals missed it."""
    sub, _ = scripted(
        "booker", [calls(("final_result", {"row": 3}), usage=used(7))], output_type=issue
    )
    lead, _ = scripted(
        "lead",
        [calls(("booker", {"input": "book"})), "it failed"],
        tools=[sub.as_tool(output="output")],
    )

    reply = await lead.prompt("go")

    assert reply.text == "it failed"  # the parent goes on
    [result] = results(lead)
    assert result.is_error
    assert text_of(result.content).startswith(
        "agent 'booker' answered with an output that has no JSON form: Unable to serialize"
    )
    assert result.usage is not None and result.usage.total_tokens == 7
    assert result.details == {"agent": "booker", "agent_path": ["lead", "booker"]}


async def test_steering_while_a_member_works_reaches_the_parents_next_turn() -> None:
    working = asyncio.Event()

    async def slow(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        working.set()
        await asyncio.sleep(0.3)
        return "slow done"

    helper, helper_fm = scripted(
        "helper",
        [calls(("slow", {"n": 1})), "helped"],
        tools=[AgentTool("slow", "slow", "a slow tool", SCHEMA, slow)],
    )
    lead, lead_fm = scripted(
        "lead", [calls(("helper", {"input": "go"})), "done"], tools=[helper.as_tool()]
    )
    running = asyncio.create_task(lead.prompt("start"))
    await asyncio.wait_for(working.wait(), 30)

    lead.steer("hurry up")

    assert (await running).text == "done"
    seen = [text_of(m.content) for m in lead_fm.contexts[1].messages]
    assert seen[-2:] == ["helped", "hurry up"]  # after the member's result, before the answer
    assert all("hurry up" not in text_of(m.content) for c in helper_fm.contexts for m in c.messages)


async def test_a_member_stopped_by_the_parents_tool_call_limit_says_so() -> None:
    """The parent's `max_tool_calls` counts its member's calls live: the member's call past
    it is refused, the member's run ends "usage_limit" and its error result names the
    limit; the parent reads it and answers."""
    ran: list[str] = []
    helper, _ = scripted(
        "helper",
        [calls(("t", {"n": 1}), ("t", {"n": 2})), "never"],
        tools=[recording_tool("t", ran)],
    )
    lead, _ = scripted(
        "lead",
        [calls(("helper", {"input": "go"})), "answered anyway"],
        tools=[helper.as_tool()],
        usage_limits=UsageLimits(max_tool_calls=2),
    )
    events = record(lead)

    reply = await lead.prompt("go")

    assert reply.text == "answered anyway" and len(ran) == 1
    [result] = results(lead)
    assert result.is_error and text_of(result.content) == (
        "agent 'helper' failed: usage limit reached: max_tool_calls=2 (used 2 tool calls)"
    )
    ends = [
        (e.agent_path, e.event.reason)
        for e in events
        if isinstance(e, NestedAgentEvent) and e.event.type == "agent_end"
    ]
    assert ends == [(("lead", "helper"), "usage_limit")]
    assert transcript_problems(lead.state.messages) == []  # type: ignore[arg-type]


async def test_a_members_spending_stops_the_parent_after_the_batch() -> None:
    """A member's answer is never refused (it passed the parent's token budget in its one
    call); the parent counts it after the batch and is the one that stops."""
    sub, _ = scripted("sub", [answer("s", used(90))])
    lead, _ = scripted(
        "lead",
        [calls(("sub", {"input": "q"}), usage=used(20)), "unreached"],
        tools=[sub.as_tool()],
        usage_limits=UsageLimits(max_total_tokens=100),
    )
    try:
        await lead.prompt("go")
    except UsageLimitExceeded as exc:
        stopped = str(exc)
    else:
        raise AssertionError("the parent answered past its budget")
    assert stopped == "usage limit reached: max_total_tokens=100 (used 110 tokens)"
    [result] = results(lead)
    assert not result.is_error and text_of(result.content) == "s"


async def test_a_members_turns_count_against_its_own_max_turns_not_the_parents() -> None:
    ran: list[str] = []
    helper, _ = scripted(
        "helper",
        [*(calls(("t", {"n": i})) for i in range(4)), "helped"],
        tools=[recording_tool("t", ran)],
    )
    lead, _ = scripted(
        "lead", [calls(("helper", {"input": "go"})), "done"], tools=[helper.as_tool()], max_turns=2
    )

    reply = await lead.prompt("go")

    assert reply.text == "done" and len(ran) == 4  # five model calls of the member's own
    assert text_of(results(lead)[0].content) == "helped"


async def test_one_agent_held_in_two_teams_at_once_is_decided_in_each() -> None:
    ran: list[str] = []

    def charge_what_asked(context: Any) -> Any:
        last = context.messages[-1]
        if last.role == "toolResult":
            return "charged: " + text_of(last.content)
        return calls(("charge", {"n": int(text_of(last.content))}))

    researcher, _ = scripted(
        "researcher",
        [charge_what_asked] * 4,
        tools=[recording_tool("charge", ran, requires_approval=True)],
    )
    one, _ = scripted(
        "one", [calls(("researcher", {"input": "1"})), "one done"], tools=[researcher.as_tool()]
    )
    two, _ = scripted(
        "two", [calls(("researcher", {"input": "2"})), "two done"], tools=[researcher.as_tool()]
    )
    await asyncio.gather(one.prompt("a"), two.prompt("b"))
    [held_one], [held_two] = one.pending_approvals, two.pending_approvals
    assert (held_one.arguments, held_one.agent_path) == ({"n": 1}, ("one", "researcher"))
    assert (held_two.arguments, held_two.agent_path) == ({"n": 2}, ("two", "researcher"))

    one.approve(held_one.tool_call_id)
    two.reject(held_two.tool_call_id, "no")
    await asyncio.gather(one.resume(), two.resume())

    assert len(ran) == 1  # one's charge, once; two's never
    assert text_of(results(one)[0].content) == "charged: charge ran with {'n': 1}"
    assert text_of(results(two)[0].content) == "charged: Tool call rejected by the user: no"
