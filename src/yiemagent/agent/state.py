"""The `Agent`'s state, the reducer over a run's events, and a run's answer (DESIGN R-6.2, R-6.3).

`AgentStateView` is an `AgentState` whose `messages` copy on assignment and whose `tools`
mirror the agent's `ToolStore`; `reduce_event` folds events into it; `RunRecorder` and
`final_message` build a run's answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from yiemagent.agent.inputs import to_messages, to_tool_list
from yiemagent.types import (
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentState,
    AgentTool,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    TextContent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
)

if TYPE_CHECKING:
    from yiemagent.tools import ToolStore

__all__ = [
    "AgentStateView",
    "RunRecorder",
    "final_message",
    "placeholder_model",
    "reduce_event",
    "reducer_for",
]


class AgentStateView(AgentState):
    """An `Agent`'s state (R-6.2): assigning `messages` stores a copy of the list; `tools` is
    the tool store's tools in registration order, and assigning it replaces them."""

    __slots__ = ("_lent", "_messages", "_pending", "_store", "on_assign")

    def __init__(self, store: ToolStore) -> None:  # no super().__init__: it would set `tools`
        self._store = store
        self._messages: list[AgentMessage] = []
        self.on_assign: Callable[[list[AgentMessage]], None] | None = None
        """Called with the new list before an assignment to `messages` takes effect (the
        agent's session rewrites the stored transcript); if it raises, nothing changes."""
        self.system_prompt = ""
        self.model = None
        self.active_run = False
        self.streaming_message = None
        self._pending: set[str] = set()
        self._lent = False
        """Whether `_pending` was handed out (then the next change makes a new set)."""
        self.error_message = None
        self.active_agent = None

    @property
    def pending_tool_calls(self) -> set[str]:
        """The ids of the calls between their `tool_execution_start` and `_end`. A set once
        read never changes under its reader: the next start or end makes a new one (and only
        then, so a run nobody watches copies none, DESIGN §9). Read it on the agent's event
        loop thread (listeners do), like `messages`, which the agent appends to in place."""
        self._lent = True
        return self._pending

    @pending_tool_calls.setter
    def pending_tool_calls(self, value: set[str]) -> None:
        self._pending = value
        self._lent = True  # the caller holds it

    @property
    def messages(self) -> list[AgentMessage]:
        """The transcript (the agent appends each message at its `message_end`)."""
        return self._messages

    @messages.setter
    def messages(self, value: Iterable[AgentMessage]) -> None:
        messages = to_messages(value, what="state.messages")
        if self.on_assign is not None:
            self.on_assign(messages)
        self._messages = messages

    @property
    def tools(self) -> list[AgentTool]:
        """The tools offered on the next turn (a new list each time)."""
        return list(self._store.tools.values())

    @tools.setter
    def tools(self, value: Any) -> None:
        new = to_tool_list(value)
        self._store.clear()
        for tool in new:
            self._store.register(tool)

    def clear(self) -> None:
        """Empty the transcript (through `on_assign`: the stored session too) and the run's
        fields: no streaming message, no pending tool calls, no error (`Agent.reset`)."""
        self.messages = []
        self.streaming_message = None
        self.pending_tool_calls = set()
        self.error_message = None

    def __repr__(self) -> str:
        return (
            f"AgentState(model={self.model!r}, messages={len(self._messages)}, "
            f"tools={[t.name for t in self.tools]}, active_run={self.active_run}, "
            f"error_message={self.error_message!r})"
        )


def _message_end(state: AgentState, event: MessageEndEvent) -> None:
    message = event.message
    state.messages.append(message)
    if isinstance(message, AssistantMessage):
        state.streaming_message = None
        if message.stop_reason == "error" or message.stop_reason == "aborted":
            state.error_message = message.error_message or message.stop_reason


def _pending_to_change(state: AgentState) -> set[str]:
    """The pending-call set to change in place: never one a reader holds, which stays as
    it was. An `AgentStateView` copies only a set someone has read; a plain `AgentState`
    gets a new set each time."""
    if isinstance(state, AgentStateView):
        if state._lent:
            state._pending, state._lent = set(state._pending), False
        return state._pending
    pending = state.pending_tool_calls = set(state.pending_tool_calls)
    return pending


def _tool_start(state: AgentState, event: ToolExecutionStartEvent) -> None:
    _pending_to_change(state).add(event.tool_call_id)


def _tool_end(state: AgentState, event: ToolExecutionEndEvent) -> None:
    _pending_to_change(state).discard(event.tool_call_id)


def _streaming(state: AgentState, event: MessageStartEvent | MessageUpdateEvent) -> None:
    if isinstance(event.message, AssistantMessage):
        state.streaming_message = event.message


def _agent_end(state: AgentState, event: AgentEndEvent) -> None:
    state.active_run = False
    state.streaming_message = None


_REDUCERS: dict[type[Any], Callable[[AgentState, Any], None]] = {
    MessageEndEvent: _message_end,
    ToolExecutionStartEvent: _tool_start,
    ToolExecutionEndEvent: _tool_end,
    MessageStartEvent: _streaming,
    MessageUpdateEvent: _streaming,
    AgentEndEvent: _agent_end,
}


def _no_change(state: AgentState, event: Any) -> None:
    return None


def reduce_event(state: AgentState, event: AgentEvent) -> None:
    """Fold one event into the state (R-6.2; pi's `Agent.processEvents`). It runs for every
    event (DESIGN §9): one dict lookup by the event's class finds what it changes."""
    reducer = _REDUCERS.get(type(event))
    if reducer is None:
        reducer = reducer_for(type(event))
    reducer(state, event)


def reducer_for(kind: type[Any]) -> Callable[[AgentState, Any], None]:
    """The function `reduce_event` applies to an event of class `kind`: `(state, event)`.
    An event of a subclass is folded like its base class (looked up once, remembered);
    events that change nothing (turn_start, tool_execution_update, ...) get a no-op."""
    reducer = _REDUCERS.get(kind)
    if reducer is not None:
        return reducer
    for base, candidate in list(_REDUCERS.items()):
        if base is not kind and issubclass(kind, base) and candidate is not _no_change:
            reducer = candidate
            break
    else:
        reducer = _no_change
    _REDUCERS[kind] = reducer
    return reducer


class RunRecorder:
    """What the Agent needs from a run's events to build its answer."""

    __slots__ = ("end", "last_turn")

    def __init__(self) -> None:
        self.end: AgentEndEvent | None = None
        self.last_turn: TurnEndEvent | None = None

    def record(self, event: AgentEvent) -> None:
        """Keep the run's last `turn_end` and its `agent_end`; other events pass."""
        if isinstance(event, TurnEndEvent):
            self.last_turn = event
        elif isinstance(event, AgentEndEvent):
            self.end = event


def final_message(
    new: Sequence[AgentMessage], recorder: RunRecorder, model: Model, aborted: bool
) -> AssistantMessage:
    """A run's answer (R-6.3): after a terminating batch the "tool_use_terminated" summary of
    its results (seed 000 §10), else the run's last assistant message; a run aborted after
    that message answers with a new, empty "aborted" message (not in the history)."""
    turn = recorder.last_turn
    if recorder.end is not None and recorder.end.reason == "terminate" and turn is not None:
        content: list[Any] = [TextContent("Tool execution completed.")]
        for result in turn.tool_results:
            content.extend(b for b in result.content if isinstance(b, TextContent))
        failed = any(result.is_error for result in turn.tool_results)
        return AssistantMessage(
            content=content,
            api=turn.message.api,
            provider=turn.message.provider,
            model=turn.message.model,
            usage=turn.message.usage,
            stop_reason="tool_use_terminated",
            error_message="One or more tool calls failed" if failed else None,
        )
    last = next((m for m in reversed(new) if isinstance(m, AssistantMessage)), None)
    ended_by_abort = recorder.end is not None and recorder.end.reason == "aborted"
    if last is not None and (last.stop_reason == "aborted" or not ended_by_abort):
        return last
    if last is not None:  # aborted between turns (e.g. during the tools): say so
        return AssistantMessage(
            api=last.api,
            provider=last.provider,
            model=last.model,
            stop_reason="aborted",
            error_message="The run was aborted",
        )
    return AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason="aborted" if aborted else "error",
        error_message="The run ended before the model answered",
    )


def placeholder_model(kind: str) -> Model:
    """The `Model` of a run through `llm_call` or a custom `stream_fn` given no model."""
    return Model(id=kind, provider=kind, api=kind, name=kind)
