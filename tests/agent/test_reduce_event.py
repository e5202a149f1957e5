"""DESIGN R-6.2: `reduce_event` folds each event into the agent's state. It finds what an
event changes by the event's class (DESIGN §9); an event of a subclass is folded like its
base class, and events that change nothing leave the state as it was."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, strategies as st

from yiemagent.agent.state import reduce_event
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
