"""Follow-ups queued during a run that reaches `max_turns` (R-5.4, R-5.5): each one opens
a round of its own with a fresh budget of model calls, so none waits for a later run or is
stuck when every run reaches the limit; each is delivered exactly once."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from yiemagent import Agent, AgentToolResult, AssistantMessage, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

from ._kit import EventWaiter, faux_agent, make_tool, user_texts


def lookup(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult(content="found it")


def calling() -> AssistantMessage:
    return faux_message(faux_tool_call("lookup", {}))


def queue_then(agent: list[Agent], texts: list[str], response: AssistantMessage | str) -> Any:
    """A faux response that queues `texts` as follow-ups while the model call runs."""

    def respond(context: Context) -> AssistantMessage | str:
        for text in texts:
            agent[0].follow_up(text)
        return response

    return respond


async def test_a_follow_up_queued_during_the_only_allowed_turn_runs_in_the_same_run() -> None:
    holder: list[Agent] = []
    fm = FauxModel([queue_then(holder, ["and b?"], "a is 1"), "b is 2"])
    agent = faux_agent(fm, max_turns=1)
    holder.append(agent)
    waiter = EventWaiter(agent)

    reply = await agent.prompt("what is a?")

    assert reply.text == "b is 2" and fm.call_count == 2
    assert user_texts(agent.state.messages) == ["what is a?", "and b?"]
    assert not agent.has_queued_messages()
    ends = [e for e in waiter.events if e.type == "agent_end"]
    assert len(ends) == 1 and ends[0].reason == "stop"


async def test_a_follow_up_opens_a_round_after_a_run_cut_off_by_max_turns() -> None:
    holder: list[Agent] = []
    fm = FauxModel([queue_then(holder, ["stop looking, answer"], calling()), "it is here"])
    agent = faux_agent(fm, tools=[make_tool("lookup", lookup)], max_turns=1)
    holder.append(agent)

    reply = await agent.prompt("find it")

    assert reply.text == "it is here"
    roles = [m.role for m in fm.contexts[1].messages]
    assert roles == ["user", "assistant", "toolResult", "user"]
    assert not agent.has_queued_messages()


async def test_a_round_without_follow_ups_still_ends_at_max_turns() -> None:
    fm = FauxModel([calling(), calling(), "late"])
    agent = faux_agent(fm, tools=[make_tool("lookup", lookup)], max_turns=2)
    waiter = EventWaiter(agent)

    reply = await agent.prompt("find it")

    assert reply.stop_reason == "toolUse" and fm.call_count == 2
    assert [e.reason for e in waiter.events if e.type == "agent_end"] == ["max_turns"]


@settings(max_examples=40)
@given(
    max_turns=st.integers(1, 3),
    plan=st.lists(
        st.tuples(st.booleans(), st.integers(0, 2)),  # (calls a tool, follow-ups it queues)
        min_size=1,
        max_size=8,
    ),
)
def test_every_follow_up_is_delivered_exactly_once(
    max_turns: int, plan: list[tuple[bool, int]]
) -> None:
    holder: list[Agent] = []
    queued: list[str] = []

    def respond(context: Context) -> AssistantMessage | str:
        step = len(fm.contexts) - 1
        tool, count = plan[step] if step < len(plan) else (False, 0)
        for _ in range(count):
            text = f"follow-up {len(queued)}"
            queued.append(text)
            holder[0].follow_up(text)
        return calling() if tool else f"answer {step}"

    # enough calls for every round to use its whole budget
    fm = FauxModel([respond] * ((2 * len(plan) + 1) * max_turns + len(plan)))
    agent = faux_agent(fm, tools=[make_tool("lookup", lookup)], max_turns=max_turns)
    holder.append(agent)

    agent.prompt_sync("start")

    assert user_texts(agent.state.messages) == ["start", *queued]
    assert not agent.has_queued_messages()
