"""DESIGN R-6.2: `reduce_event` folds each event into the agent's state. It finds what an
event changes by the event's class; an event of a subclass is folded like its
base class, and events that change nothing leave the state as it was."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from yiemagent import Agent, AgentTool
from yiemagent.agent._run import AgentStateView, reduce_event
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.tools import ToolStore
from yiemagent.types import (
    AgentEndEvent,
    AgentStartEvent,
    AgentState,
    AgentToolResult,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    TextContent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnStartEvent,
    UserMessage,
)


class MyToolStart(ToolExecutionStartEvent):
    """A subclass, as an application might make."""


class MyTurnStart(TurnStartEvent):
    pass


def _events(ids: list[str], subclass: bool) -> list[object]:
    result = AgentToolResult([TextContent("ok")])
    start = MyToolStart if subclass else ToolExecutionStartEvent
    events: list[object] = [AgentStartEvent(), MyTurnStart() if subclass else TurnStartEvent()]
    for i in ids:
        events.append(start(i, "t", {}))
        events.append(ToolExecutionUpdateEvent(i, "t", {}, result))
    for i in ids:
        events.append(ToolExecutionEndEvent(i, "t", result, False))
    return events


@given(st.lists(st.text(min_size=1, max_size=3), unique=True, max_size=6), st.booleans())
def test_pending_tool_calls_follow_start_and_end_and_are_new_sets(
    ids: list[str], subclass: bool
) -> None:
    state = AgentState()
    held: list[tuple[set[str], set[str]]] = []
    for event in _events(ids, subclass):
        before = state.pending_tool_calls
        copy = set(before)
        reduce_event(state, event)  # type: ignore[arg-type]
        held.append((before, copy))
        if isinstance(event, ToolExecutionStartEvent):
            assert state.pending_tool_calls == copy | {event.tool_call_id}
        elif isinstance(event, ToolExecutionEndEvent):
            assert state.pending_tool_calls == copy - {event.tool_call_id}
        else:
            assert state.pending_tool_calls == copy
    assert state.pending_tool_calls == set()
    for before, copy in held:  # a set a listener held on to never changed under it
        assert before == copy


def test_messages_streaming_and_the_end_of_a_run() -> None:
    state = AgentState(active_run=True)
    answer = AssistantMessage([TextContent("hi")], stop_reason="stop")
    failed = replace(answer, stop_reason="error", error_message="boom")
    user = UserMessage("go")
    reduce_event(state, MessageStartEvent(user))
    assert state.streaming_message is None
    reduce_event(state, MessageEndEvent(user))
    reduce_event(state, MessageStartEvent(answer))
    assert state.streaming_message is answer
    reduce_event(state, MessageUpdateEvent(answer, None))
    assert state.streaming_message is answer
    reduce_event(state, MessageEndEvent(answer))
    assert state.messages == [user, answer] and state.streaming_message is None
    assert state.error_message is None

    class MyEnd(MessageEndEvent):
        pass

    reduce_event(state, MyEnd(failed))
    assert state.messages == [user, answer, failed] and state.error_message == "boom"
    reduce_event(state, AgentEndEvent([], "stop"))
    assert not state.active_run and state.streaming_message is None


def _view() -> AgentStateView:
    return AgentStateView(ToolStore())


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # no timing here
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 5), st.booleans()), max_size=30))
def test_an_agents_pending_tool_calls_are_copied_only_once_read_and_never_change_when_held(
    steps: list[tuple[bool, int, bool]],
) -> None:
    """The Agent's state changes its set in place while nobody has read it; a
    set once read (by a listener, say) stays as it was read."""
    state = _view()
    want: set[str] = set()
    held: list[tuple[set[str], set[str]]] = []
    result = AgentToolResult([TextContent("ok")])
    for start, n, read in steps:
        tool_call_id = f"c{n}"
        if start:
            reduce_event(state, ToolExecutionStartEvent(tool_call_id, "t", {}))
            want.add(tool_call_id)
        else:
            reduce_event(state, ToolExecutionEndEvent(tool_call_id, "t", result, False))
            want.discard(tool_call_id)
        if read:
            got = state.pending_tool_calls
            assert got == want
            held.append((got, set(got)))
    assert state.pending_tool_calls == want
    for got, copy in held:
        assert got == copy


async def test_a_listener_holding_pending_tool_calls_during_a_parallel_batch_sees_no_change() -> (
    None
):
    async def noop(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await asyncio.sleep(0.001 * int(tool_call_id[1:]))
        return "ok"

    calls = [faux_tool_call("noop", {}, id=f"c{i}") for i in range(6)]
    fm = FauxModel([faux_message(*calls), "done"])
    tool = AgentTool("noop", "noop", "does nothing", {"type": "object"}, noop, parallel=True)
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool])
    held: list[tuple[str, set[str], set[str]]] = []

    def listener(event: Any, signal: Any) -> None:
        if event.type.startswith("tool_execution"):
            pending = agent.state.pending_tool_calls
            held.append((event.type, pending, set(pending)))

    agent.subscribe(listener)
    await agent.prompt("go")
    assert [len(copy) for _, _, copy in held] == [1, 2, 3, 4, 5, 6, 5, 4, 3, 2, 1, 0]
    for _, pending, copy in held:
        assert pending == copy
    assert agent.state.pending_tool_calls == set()
